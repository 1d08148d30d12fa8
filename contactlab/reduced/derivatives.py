"""Analytical partial derivatives of inverse and forward dynamics (Guenter & Rose).

Inverse dynamics ``tau = ID(q, qdot, qddot)`` (applied joint forces, gravity
and joint springs/dampers included):

- ``dtau/dq`` and ``dtau/dqdot`` by the recursive partials of Guenter and
  Rose (Guenter & Rose), re-derived for body twists and every elementary node
  (:mod:`contactlab.reduced._derivative_kernels`), one compiled call; on trees
  without ``OTHER`` nodes (revolute, prismatic, fixed, spherical and free joints)
  in their composite world-frame form, O(1) per matrix entry
  (:func:`~contactlab.reduced._derivative_kernels.composite_derivatives`);
- ``dtau/dqddot = M`` by the composite-rigid-body algorithm.

Forward dynamics ``qddot = FD(q, qdot, tau)`` is the inverse map, so with
``qddot = FD(q, qdot, tau)``

.. math::

    \\frac{\\partial \\ddot q}{\\partial x} = -M^{-1} \\frac{\\partial \\tau}{\\partial x}
    \\; (x = q, \\dot q), \\qquad \\frac{\\partial \\ddot q}{\\partial \\tau} = M^{-1}.

Joints generated from their transform ``Q(q)`` get the derivatives of
their joint maps from their symbolic derivation
(:mod:`contactlab.reduced.generated_derivatives`), so their columns are
analytical too.  Other joints the model evaluates in Python (``OTHER``
nodes: splines, custom joints, generated joints whose product is too large
to differentiate symbolically) have none; the columns of their coordinates
are central differences of the compiled inverse dynamics (step
``1e-6 (1 + |x|)``, error about 1e-9 relative).
"""

from __future__ import annotations

import numpy as np

from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.reduced import _derivative_kernels
from contactlab.reduced.model import Model, _as_vector
from contactlab.reduced.tree import Array

_FD_STEP = 1e-6
_NO_MAPS = np.zeros((0, 6, 6, 8))
_NOT_DEFINITE = (
    "the mass matrix is not positive definite: a joint moves no mass (check massless "
    "chains or degenerate joint axes)"
)


_F64 = np.dtype(np.float64)
_NO_EXT = np.zeros((0, 88))  # the joint maps of a model without OTHER nodes
_NO_WRENCHES = np.zeros((0, 6))
_UNIT = (8,)


def _ready(model: Model, *xs: object) -> bool:
    """Whether the model has no ``OTHER`` joints and every ``x`` is a contiguous float64
    vector (lengths are checked by the compiled call)."""
    if model.has_other_joints:
        return False
    for x in xs:
        if type(x) is not np.ndarray or x.dtype is not _F64 or x.strides != _UNIT:
            return False
    return True


def _fallback_columns(
    model: Model,
    q: Array,
    qdot: Array,
    qddot: Array,
    wrenches: Array | None,
    dq: Array,
    dqd: Array,
    coordinates: Array,
) -> None:
    """Central-difference columns for ``coordinates`` (of ``OTHER`` nodes)."""
    for k in coordinates:
        for x, out in ((q, dq), (qdot, dqd)):
            h = _FD_STEP * (1.0 + abs(x[k]))
            xp, xm = x.copy(), x.copy()
            xp[k] += h
            xm[k] -= h
            if x is q:
                tp = model.inverse_dynamics(xp, qdot, qddot, wrenches)
                tm = model.inverse_dynamics(xm, qdot, qddot, wrenches)
            else:
                tp = model.inverse_dynamics(q, xp, qddot, wrenches)
                tm = model.inverse_dynamics(q, xm, qddot, wrenches)
            out[:, k] = (tp - tm) / (2.0 * h)


def inverse_dynamics_derivatives(
    model: Model,
    q: Array,
    qdot: Array,
    qddot: Array,
    wrenches: Array | None = None,
    composite: bool | None = None,
    generated: str = "analytic",
) -> tuple[Array, Array, Array]:
    """``(dtau/dq, dtau/dqdot, dtau/dqddot = M)``, each (nq, nq), row = torque, column = variable.

    ``wrenches`` (nb, 6) are body-frame wrenches held fixed in the body frames.
    ``composite`` chooses the O(1)-per-entry world-frame form (trees without
    ``OTHER`` nodes: revolute, prismatic, fixed, spherical and free joints and those
    built of them; the default there) or the per-coordinate recursion (any tree; the
    default otherwise).
    ``generated``: "analytic" (default) differentiates the joint maps of joints
    generated from their transform symbolically
    (:mod:`contactlab.reduced.generated_derivatives`); "differences" takes
    their columns by central differences like those of other Python joints.
    """
    if (  # contiguous float64 vectors on a model without OTHER nodes: the checks inline
        composite is not False
        and wrenches is None
        and model._ext_none
        and type(q) is np.ndarray
        and type(qdot) is np.ndarray
        and type(qddot) is np.ndarray
        and q.dtype is _F64
        and qdot.dtype is _F64
        and qddot.dtype is _F64
        and q.strides == _UNIT
        and qdot.strides == _UNIT
        and qddot.strides == _UNIT
    ):
        try:  # contiguous float64 vectors: straight to the compiled call (it checks lengths)
            return _derivative_kernels.composite_derivatives(  # type: ignore[no-any-return]
                model.topo, model.geom, model.dofp, _NO_EXT, q, qdot, qddot, _NO_WRENCHES, False,
            )  # fmt: skip
        except ValueError:
            pass  # converted and checked below
    nq = model.nq
    q = _as_vector(q, nq, "q")
    qdot = _as_vector(qdot, nq, "qdot")
    qddot = _as_vector(qddot, nq, "qddot")
    if composite is None:
        composite = not model.has_other_joints
    if composite and model.has_other_joints:
        raise ConfigurationError(
            "the composite derivative form needs a tree of revolute, prismatic, spherical, free "
            "and fixed joints (and those built of them); this model has joints evaluated "
            "from their maps each call (use composite=False)"
        )
    if generated not in ("analytic", "differences"):
        raise ConfigurationError(
            f"generated must be 'analytic' or 'differences', got {generated!r}"
        )
    args = (
        model.topo,
        model.geom,
        model.dofp,
        model.joint_maps(q, qdot),
        q,
        qdot,
        qddot,
        model.node_wrenches(wrenches),
    )
    if composite:
        return _derivative_kernels.composite_derivatives(*args, False)  # type: ignore[no-any-return]
    left = model.other_coordinates
    dext = _NO_MAPS
    if model.has_other_joints and generated == "analytic":
        from contactlab.reduced.generated_derivatives import joint_map_derivatives

        dext, left = joint_map_derivatives(model, q, qdot)
    dq, dqd = _derivative_kernels.inverse_dynamics_derivatives(*args, dext)
    if left.size:
        _fallback_columns(model, q, qdot, qddot, wrenches, dq, dqd, left)
    return dq, dqd, model.mass_matrix(q)


def forward_dynamics_derivatives(
    model: Model, q: Array, qdot: Array, tau: Array | None = None, wrenches: Array | None = None
) -> tuple[Array, Array, Array]:
    """``(dqddot/dq, dqddot/dqdot, dqddot/dtau = M^{-1})``, each (nq, nq).

    Trees without joints evaluated from their maps each call (the composite form's
    domain) take one compiled call: ``qddot`` from the composite inertias, the
    inverse-dynamics partials at ``qddot`` and ``-M^{-1}`` times them by the same
    Cholesky factor of ``M``.  Other trees: the forward dynamics, the recursive
    partials and a dense factorization.
    """
    if not model.has_other_joints:
        nq = model.nq
        if tau is None:
            tau = np.zeros(nq)
        if not _ready(model, q, qdot, tau):  # converted and checked (lengths: the kernel)
            q = _as_vector(q, nq, "q")
            qdot = _as_vector(qdot, nq, "qdot")
            tau = _as_vector(tau, nq, "tau")
        try:
            out = _derivative_kernels.composite_derivatives(
                model.topo,
                model.geom,
                model.dofp,
                model.joint_maps(q, qdot),
                q,
                qdot,
                tau,
                model.node_wrenches(wrenches),
                True,
            )
        except ValueError:  # a wrong length, named here
            for x, name in ((q, "q"), (qdot, "qdot"), (tau, "tau")):
                _as_vector(x, nq, name)  # type: ignore[arg-type]
            raise
        if nq and not np.isfinite(out[2][0, 0]):
            raise SingularSystemError(_NOT_DEFINITE)
        return out  # type: ignore[no-any-return]
    qddot = model.forward_dynamics(q, qdot, tau, wrenches)
    dq, dqd, M = inverse_dynamics_derivatives(model, q, qdot, qddot, wrenches)
    if model.nq == 0:
        return dq, dqd, M
    try:  # numpy's factorizations: far less call overhead than scipy's on small robots
        np.linalg.cholesky(M)
        Minv = np.linalg.inv(M)
    except np.linalg.LinAlgError as err:
        raise SingularSystemError(_NOT_DEFINITE) from err
    return -Minv @ dq, -Minv @ dqd, Minv
