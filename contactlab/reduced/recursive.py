"""O(n) recursive forward, inverse and hybrid dynamics (REDMAX supplement, Alg. 6).

The articulated-body recursion of Kim and Pollard, written in body frames
(the body inertia is then diagonal) and compiled with numba
(:func:`contactlab.reduced._kernels.hybrid_dynamics`).  It solves the same
equations as the dense path, ``M_r qddot = f_r``, without forming ``M_r``:

- :func:`forward_dynamics_recursive`: torques -> accelerations;
- :func:`inverse_dynamics`: accelerations -> the applied torques that
  produce them (every joint prescribed);
- :func:`hybrid_dynamics`: some joints prescribed, the others free
  (Sueda's notes §2.9).

Torques ``tau`` are the *applied* joint forces; joint springs and dampers
and the scene's force elements and gravity are added here as in
:func:`contactlab.reduced.dynamics.reduced_forces`.
"""

from __future__ import annotations

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.reduced import _kernels
from contactlab.reduced.dynamics import applied_wrenches, joint_forces
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.tree import Array, Tree


def recursion(
    kin: Kinematics,
    wrenches: Array,
    tau: Array,
    prescribed: Array,
    qddot_in: Array,
) -> tuple[Array, Array]:
    """The compiled recursion of Alg. 6 at given kinematics.

    Parameters
    ----------
    kin : kinematics at ``(q, qdot)``.
    wrenches : (nb, 6) body-frame wrenches on the bodies, scene order (gravity included).
    tau : (nq,) total joint forces at the free joints.
    prescribed : (n,) bool per tree joint.
    qddot_in : (nq,) accelerations at the prescribed joints.

    Returns
    -------
    ``(qddot, tau_out)``: accelerations of every joint and the joint forces
    that act at every joint (the required ones at prescribed joints).
    """
    tree = kin.tree
    qddot, tau_out, _ = _kernels.hybrid_dynamics(  # type: ignore[call-arg]
        tree.parent,
        kin.X,
        kin.Sb,
        kin.Sbd,
        tree.ndof,
        tree.dof0,
        kin.qdot,
        kin.V,
        tree.inertia,
        np.ascontiguousarray(wrenches[tree.body]),
        tau,
        prescribed,
        qddot_in,
        tree.per_dof("armature"),
    )
    return qddot, tau_out


def _run(
    kin: Kinematics,
    tau: Array | None,
    prescribed: Array,
    qddot_in: Array,
    wrenches: Array | None,
) -> tuple[Array, Array]:
    tree = kin.tree
    f_ext = applied_wrenches(tree, kin)
    if wrenches is not None:
        f_ext = f_ext + np.asarray(wrenches, dtype=float).reshape(f_ext.shape)
    tau_joint = joint_forces(tree, kin.q, kin.qdot)
    tau_total = tau_joint if tau is None else tau_joint + tree.check_coordinates(tau, "tau")
    qddot, tau_out = recursion(kin, f_ext, tau_total, prescribed, qddot_in)
    return qddot, tau_out - tau_joint


def forward_dynamics_recursive(
    tree: Tree,
    q: Array,
    qdot: Array,
    tau: Array | None = None,
    wrenches: Array | None = None,
) -> Array:
    """``qddot`` (nq,) from applied joint torques ``tau`` (nq,) in O(n).

    ``wrenches`` (nb, 6) are extra body-frame wrenches on the bodies
    (scene order), e.g. contact or constraint forces.
    """
    kin = forward_kinematics(tree, q, qdot)
    none = np.zeros(tree.n, dtype=np.bool_)
    return _run(kin, tau, none, np.zeros(tree.nq), wrenches)[0]


def inverse_dynamics(
    tree: Tree, q: Array, qdot: Array, qddot: Array, wrenches: Array | None = None
) -> Array:
    """Applied joint torques (nq,) that produce ``qddot`` (the prescribed branch of Alg. 6)."""
    kin = forward_kinematics(tree, q, qdot)
    qddot = tree.check_coordinates(qddot, "qddot")
    every = np.ones(tree.n, dtype=np.bool_)
    return _run(kin, None, every, qddot, wrenches)[1]


def hybrid_dynamics(
    tree: Tree,
    q: Array,
    qdot: Array,
    prescribed: list[str],
    qddot_prescribed: Array,
    tau: Array | None = None,
    wrenches: Array | None = None,
) -> tuple[Array, Array]:
    """Mixed forward/inverse dynamics: named joints follow ``qddot_prescribed``.

    Parameters
    ----------
    prescribed : names of the joints whose accelerations are given.
    qddot_prescribed : (nq,) accelerations; read only at prescribed joints.
    tau : (nq,) applied torques; read only at the other joints.

    Returns
    -------
    qddot : (nq,) accelerations of every joint.
    tau : (nq,) applied torques of every joint (the required ones at prescribed joints).
    """
    names = [s.name for s in tree.specs]
    unknown = [p for p in prescribed if p not in names]
    if unknown:
        raise ConfigurationError(f"prescribed joints {unknown} are not tree joints {names}")
    mask = np.array([n in prescribed for n in names], dtype=np.bool_)
    kin = forward_kinematics(tree, q, qdot)
    qin = tree.check_coordinates(qddot_prescribed, "qddot_prescribed")
    return _run(kin, tau, mask, qin, wrenches)


def inverse_mass_times(tree: Tree, q: Array, x: Array) -> Array:
    """``M_r^{-1} x`` in O(n): the recursion without velocity and forces (Sueda's notes §2.13)."""
    kin = forward_kinematics(tree, q)
    none = np.zeros(tree.n, dtype=np.bool_)
    zero_wrenches = np.zeros((tree.scene.n_bodies, 6))
    x = tree.check_coordinates(x, "x")
    return recursion(kin, zero_wrenches, x, none, np.zeros(tree.nq))[0]
