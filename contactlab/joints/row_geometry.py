"""A joint's constraint rows in maximal coordinates, declared by the joint itself.

A joint kind is described once, by its joint map (:class:`contactlab.joints.maps.Joint`:
``Q(q)``, ``S(q)``, ``Sdot``).  A joint whose configurations ``J_a^{-1} J_b = Q(q)`` are the
zero set of explicit functions of the two joint frames also declares those functions here,
as :data:`Geometry` in its joint frame (:meth:`Joint.constraint_geometry`); the maximal
formulation evaluates them for every joint of a scene
(:mod:`contactlab.joints.joint_constraints`) and the reduced formulation for loop-closing
joints.  A joint without them (spline curves and
surfaces, transform joints) has no maximal equivalent and is refused by the maximal
formulation with its name.

Two primitives, both exact at every configuration (derivation in
:mod:`contactlab.joints.joint_constraints`):

* offset along a parent direction ``u``: ``g = (R_a u) . (o_b - o_a)`` (the *translational*
  rows, directions ``trans``, shape (kt, 3));
* dot products of body-fixed directions: ``g = sum_t C_t (R_a u_t) . (R_b v_t) - c0``
  (the *rotational* rows ``U, V`` (kr, 2, 3), ``C`` (kr, 2), ``c0`` (kr,)).

The building blocks below are the rows of the lower pairs: :func:`lock` (no relative
rotation, 3 rows ``vee(R - R^T)/2``), :func:`align` (rotation about one axis only, 2 rows),
and :func:`basis` (the two directions normal to an axis).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

#: ``(trans (kt, 3), U (kr, 2, 3), V (kr, 2, 3), C (kr, 2), c0 (kr,))`` in the joint frame.
Geometry = tuple[Array, Array, Array, Array, Array]

_EYE = np.eye(3)
_X, _Y, _Z = _EYE

#: the three directions of the joint frame (translational rows fixing the origin)
ORIGIN = _EYE


def basis(a: Array) -> tuple[Array, Array]:
    """Unit ``e1, e2`` with ``(e1, e2, a)`` right-handed orthonormal."""
    e1 = np.cross(a, _X if abs(a[0]) < 0.9 else _Y)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def lock() -> tuple[Array, Array, Array]:
    """Rotational rows ``vee(R - R^T)/2`` of ``R_ij = x_i^a . x_j^b`` (no relative rotation)."""
    U = np.array([[_Z, _Y], [_X, _Z], [_Y, _X]])
    V = np.array([[_Y, _Z], [_Z, _X], [_X, _Y]])
    C = np.tile([0.5, -0.5], (3, 1))
    return U, V, C


def align(a: Array) -> tuple[Array, Array, Array]:
    """Rotational rows ``(e1_a . a_b, e2_a . a_b)``: rotation about ``a`` only."""
    e1, e2 = basis(a)
    U = np.array([[e1, e1], [e2, e2]])
    V = np.array([[a, a], [a, a]])
    C = np.array([[1.0, 0.0], [1.0, 0.0]])
    return U, V, C


def joint_geometry(
    trans: Array, rot: tuple[Array, Array, Array] | None, c0: Array | None = None
) -> Geometry:
    """A joint's :data:`Geometry` from its translational directions (kt, 3).

    ``rot`` is ``(U, V, C)`` of the rotational rows (``None``: no rotational row) and
    ``c0`` their constants (``None``: zero).
    """
    if rot is None:
        rot = (np.zeros((0, 2, 3)), np.zeros((0, 2, 3)), np.zeros((0, 2)))
    U, V, C = rot
    return (
        np.asarray(trans, dtype=float).reshape(-1, 3),
        U,
        V,
        C,
        np.zeros(len(C)) if c0 is None else c0,
    )


def fixes_origin(geo: Geometry) -> bool:
    """The rows keep the joint origins together (three independent translational rows)."""
    return geo[0].shape[0] == 3 and np.linalg.matrix_rank(geo[0]) == 3


def locks_rotation(geo: Geometry) -> bool:
    """The rotational rows are :func:`lock` (no relative rotation)."""
    U, V, C = lock()
    return (
        geo[1].shape == U.shape
        and np.array_equal(geo[1], U)
        and np.array_equal(geo[2], V)
        and np.array_equal(geo[3], C)
        and not np.any(geo[4])
    )


def _complement_is_invariant(normals: Array, rotations: list[Array]) -> bool:
    """Every rotation maps the span of ``normals`` (k, 3) onto itself."""
    if normals.shape[0] in (0, 3):
        return True
    B = np.linalg.qr(normals.T)[0]  # (3, k) orthonormal
    P = np.eye(3) - B @ B.T
    return all(np.abs(P @ R @ B).max() < 1e-12 for R in rotations)


def series_geometry(first: Geometry, second: Geometry, rotations: list[Array]) -> Geometry | None:
    """Rows of two joints in series, ``Q = Q_1 Q_2``, when one translates and the other turns.

    * translation then rotation (``Q_1`` keeps the frames parallel, ``Q_2`` fixes the
      origin): the offset is ``Q_1``'s, in the parent joint frame, and the rotation
      ``Q_2``'s: the rows are ``Q_1``'s translational and ``Q_2``'s rotational rows;
    * rotation then translation: the same rows when the directions ``Q_2`` may not
      move along are carried into themselves by every rotation of ``Q_1``
      (``rotations``: sampled rotation matrices of ``Q_1``), as for a cylindrical joint
      (turn about ``a``, slide along ``a``) or a free joint.

    ``None`` for any other pair (no rows of these primitives describe it).
    """
    if locks_rotation(first) and fixes_origin(second):
        return first[0], second[1], second[2], second[3], second[4]
    if fixes_origin(first) and locks_rotation(second):
        if _complement_is_invariant(second[0], rotations):
            return second[0], first[1], first[2], first[3], first[4]
    return None
