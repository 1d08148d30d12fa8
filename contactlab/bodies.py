"""Build rigid bodies from shapes: single shapes and composites (Sueda's notes §1.7).

A :class:`~contactlab.scene.Body` has its frame at the centre of mass on the
principal axes, so its spatial inertia is diagonal.  Users describe geometry
in a convenient *construction* frame; the functions here compute the mass
properties, move the frame to the centre of mass, rotate it onto the
principal axes, and re-express every shape in the new body frame.

Composite bodies follow Sueda's notes §1.7.1: the parts' spatial inertias are
brought to an axis-aligned frame at the combined centre of mass with the
adjoint, ``M_c = sum_k Ad_kc^T M_k Ad_kc`` (eq. 1.26), and the rotational
block is diagonalised by a right-handed eigenvector matrix.  Parts are summed,
so overlapping parts count their common volume twice.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.scene import Body
from contactlab.shapes import MassProperties, Shape

Array = NDArray[np.float64]

DEFAULT_DENSITY = 1000.0  # [kg/m^3], water


class CompositeBody(NamedTuple):
    """Result of :func:`composite`.

    body : the body, frame at the centre of mass on the principal axes, with
        its shapes re-expressed in that frame.
    frame : (4, 4) pose of the body frame in the construction frame, i.e.
        ``x_construction = frame @ x_body``.  If the construction frame sits
        at ``E_world`` then the body's world transform is ``E_world @ frame``.
    shapes : the shapes with poses in the body frame (same as ``body.shapes``).
    """

    body: Body
    frame: Array
    shapes: tuple[Shape, ...]


def spatial_inertia(mass: float, com: ArrayLike, inertia: ArrayLike) -> Array:
    """6x6 spatial inertia about a frame's origin, angular block first (ArtiSynth notes §0.1).

    Parameters
    ----------
    mass : [kg].
    com : (3,) centre of mass in the frame [m].
    inertia : (3, 3) inertia about the centre of mass, frame axes [kg m^2].

    Returns
    -------
    ``[[J - m [c]^2, m [c]], [-m [c], m I]]``, so that the kinetic energy of a
    twist ``phi = (omega, nu)`` of the frame is ``phi^T M phi / 2``.
    """
    C = se3.bracket3(np.asarray(com, float))
    M = np.zeros((6, 6))
    M[:3, :3] = np.asarray(inertia, float) - mass * C @ C
    M[:3, 3:] = mass * C
    M[3:, :3] = -mass * C
    M[3:, 3:] = mass * np.eye(3)
    return M


def principal_axes(inertia: ArrayLike) -> tuple[Array, Array]:
    """Principal moments and a right-handed rotation onto the principal axes.

    Parameters
    ----------
    inertia : (3, 3) symmetric inertia tensor [kg m^2].

    Returns
    -------
    moments : (3,) principal moments [kg m^2].
    R : (3, 3) rotation, ``det R = +1``, columns the principal axes, with
        ``R^T inertia R = diag(moments)``.  Among the equivalent choices
        (column order, signs) the one closest to the identity is returned, so
        an already diagonal tensor keeps its axes.
    """
    J = np.asarray(inertia, float)
    J = 0.5 * (J + J.T)
    scale = max(np.abs(J).max(), 1e-300)
    if np.abs(J - np.diag(np.diag(J))).max() <= 1e-13 * scale:
        return np.diag(J).copy(), np.eye(3)
    moments, V = np.linalg.eigh(J)
    # Order the columns to align with the coordinate axes as well as possible,
    # then make the diagonal non-negative, then fix handedness (Sueda's notes
    # §1.7.1: eig may return a left-handed basis).
    best = max(itertools.permutations(range(3)), key=lambda p: np.abs(V[np.arange(3), p]).sum())
    perm = list(best)
    V, moments = V[:, perm], moments[perm]
    V = V * np.where(np.diag(V) < 0.0, -1.0, 1.0)
    if np.linalg.det(V) < 0.0:
        k = int(np.argmin(np.abs(np.diag(V))))
        V[:, k] = -V[:, k]
    return moments, V


def _part_mass_properties(
    shape: Shape, density: float | None, mass: float | None, what: str
) -> MassProperties:
    if not isinstance(shape, Shape):
        raise ConfigurationError(f"{what} must be a contactlab.shapes.Shape, got {type(shape)!r}")
    if density is not None and mass is not None:
        raise ConfigurationError(f"{what}: give density or mass, not both")
    if mass is not None:
        if not (np.isfinite(mass) and mass > 0):
            raise ConfigurationError(f"{what}: mass must be positive [kg], got {mass}")
        unit = shape.mass_properties(1.0)  # mass at unit density = volume [m^3]
        return MassProperties(float(mass), unit.com, unit.inertia * (mass / unit.mass))
    return shape.mass_properties(DEFAULT_DENSITY if density is None else density)


def _per_part(value: float | Sequence[float | None] | None, n: int, what: str) -> list:
    if value is None or np.isscalar(value):
        return [value] * n
    values = list(value)  # type: ignore[arg-type]
    if len(values) != n:
        raise ConfigurationError(f"{what} has {len(values)} entries for {n} shapes")
    return values


def composite(
    name: str,
    shapes: Sequence[Shape],
    densities: float | Sequence[float | None] | None = None,
    masses: float | Sequence[float | None] | None = None,
    material: str = "default",
) -> CompositeBody:
    """One rigid body made of several shapes posed in a construction frame.

    Parameters
    ----------
    name : body name.
    shapes : the parts, each placed in the construction frame by its ``pose``.
    densities : [kg/m^3] one value for all parts or one per part (``None``
        entries fall back to water, 1000 kg/m^3).
    masses : [kg] alternatively the mass of each part (one value for all or
        one per part); a part may have a density or a mass, not both.
    material : contact material name of the body.

    Returns
    -------
    :class:`CompositeBody` (body, frame of the body in the construction frame,
    shapes re-expressed in the body frame).
    """
    shapes = tuple(shapes)
    if not shapes:
        raise ConfigurationError(f"body {name!r}: a composite needs at least one shape")
    dens = _per_part(densities, len(shapes), f"body {name!r}: densities")
    mass = _per_part(masses, len(shapes), f"body {name!r}: masses")
    parts = [
        _part_mass_properties(s, d, m, f"body {name!r} shape {k}")
        for k, (s, d, m) in enumerate(zip(shapes, dens, mass))
    ]
    m_c = sum(p.mass for p in parts)
    p_c = sum(p.mass * p.com for p in parts) / m_c  # Sueda's notes, eq. (1.25)
    # Sueda's notes, eq. (1.26): part k's spatial inertia, in a construction-aligned
    # frame at its own centre of mass, moved to the frame c at p_c by
    # Ad(E_k^-1 E_c), which maps twists of frame c into frame k.
    E_c = se3.make_transform(np.eye(3), p_c)
    M_c = np.zeros((6, 6))
    for p in parts:
        M_k = np.zeros((6, 6))
        M_k[:3, :3] = p.inertia
        M_k[3:, 3:] = p.mass * np.eye(3)
        Ad = se3.adjoint(se3.inverse(se3.make_transform(np.eye(3), p.com)) @ E_c)
        M_c += Ad.T @ M_k @ Ad
    moments, R = principal_axes(M_c[:3, :3])
    frame = se3.make_transform(R, p_c)
    to_body = se3.inverse(frame)
    posed = tuple(replace(s, pose=to_body @ s.pose) for s in shapes)
    body = Body(name=name, mass=m_c, inertia=moments, shapes=posed, material=material)
    return CompositeBody(body, frame, posed)


def body_from_shape(
    name: str,
    shape: Shape,
    density: float | None = None,
    mass: float | None = None,
    material: str = "default",
) -> tuple[Body, Array]:
    """A body made of one shape.

    Parameters
    ----------
    name : body name.
    shape : the solid; its ``pose`` places it in a construction frame.
    density : [kg/m^3] (default 1000) — or give ``mass`` [kg] instead.
    material : contact material name.

    Returns
    -------
    body : frame at the shape's centre of mass on its principal axes, placed
        as close to the construction axes as possible (a primitive with the
        identity pose, whose inertia is diagonal in its own frame, gets the
        shape frame as body frame and ``E_shape_in_body = I``).
    E_shape_in_body : (4, 4) pose of the shape's own frame in the body frame
        (also the pose of ``body.shapes[0]``).
    """
    result = composite(name, [shape], densities=density, masses=mass, material=material)
    return result.body, result.shapes[0].pose
