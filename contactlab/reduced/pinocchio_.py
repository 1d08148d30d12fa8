"""The same kinematic tree as a Pinocchio model (optional peer, ``pip install pin``).

:func:`to_pinocchio` builds a Pinocchio model from a tree: Pinocchio's joint
frame ``i`` is contactlab's child-side joint frame ``E_i frame_child``: joint
``i`` is placed in its parent's joint frame at ``frame_child_p^{-1}
frame_parent_i`` and its body (centre of mass, principal axes) at
``frame_child_i^{-1}``.  Joint coordinates, velocities and torques are then
the same numbers in both libraries (Pinocchio orders twists linear first,
contactlab angular first; scalar joint coordinates do not see it).  The
joints' armature is Pinocchio's ``model.armature``.

:class:`PinocchioCoordinates` maps a tree to a Pinocchio model built
independently (by Pinocchio's own URDF parser), and :func:`dynamics_errors`
and :func:`coupled_errors` compare the dynamics of both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.spherical import right_jacobian_dot
from contactlab.reduced.tree import Array, Tree


def to_pinocchio(tree: Tree) -> Any:
    """A ``pinocchio.Model`` of a tree of revolute and prismatic joints."""
    try:
        import pinocchio as pin
    except ImportError as err:
        raise ConfigurationError(
            "Pinocchio is not installed; pip install pin (or contactlab[peers])"
        ) from err
    model = pin.Model()
    model.gravity.linear = tree.scene.gravity
    ids: list[int] = []
    for i, spec in enumerate(tree.specs):
        if spec.kind not in ("revolute", "continuous", "prismatic"):
            raise ConfigurationError(
                f"joint {spec.name!r} is {spec.kind}; only revolute and prismatic joints are "
                "translated to Pinocchio"
            )
        p = int(tree.parent[i])
        placement = (
            tree.frame_parent[i] if p < 0 else tree.frame_child_inv[p] @ tree.frame_parent[i]
        )
        axis = tree.joints[i].axis  # type: ignore[attr-defined]
        joint = (
            pin.JointModelPrismaticUnaligned(*axis)
            if spec.kind == "prismatic"
            else pin.JointModelRevoluteUnaligned(*axis)
        )
        jid = model.addJoint(
            0 if p < 0 else ids[p], joint, pin.SE3(placement[:3, :3], placement[:3, 3]), spec.name
        )
        body, inertia = tree.frame_child_inv[i], tree.inertia[i]
        R = body[:3, :3]
        model.appendBodyToJoint(
            jid,
            pin.Inertia(inertia[3], body[:3, 3], R @ np.diag(inertia[:3]) @ R.T),
            pin.SE3.Identity(),
        )
        ids.append(jid)
    model.armature = np.array(tree.per_dof("armature"))  # rotor inertia, as in contactlab's M
    return model


#: Pinocchio joint models whose coordinate and velocity are contactlab's single coordinate
_SCALAR = {
    "JointModelRX",
    "JointModelRY",
    "JointModelRZ",
    "JointModelRevoluteUnaligned",
    "JointModelPX",
    "JointModelPY",
    "JointModelPZ",
    "JointModelPrismaticUnaligned",
}
#: ... and those with ``(cos q, sin q)`` as coordinates (URDF continuous joints)
_UNBOUNDED = {
    "JointModelRUBX",
    "JointModelRUBY",
    "JointModelRUBZ",
    "JointModelRevoluteUnboundedUnaligned",
}


class PinocchioCoordinates:
    """Coordinates of a contactlab tree in a Pinocchio model of the same robot.

    Joints are matched by name (a floating base: contactlab's root ``free``
    joint and Pinocchio's ``JointModelFreeFlyer``).  Pinocchio's velocity is
    ``v = T(q) qdot``: the identity for revolute and prismatic joints
    (continuous ones have ``(cos q, sin q)`` as Pinocchio coordinates), and
    for a ``free`` joint with ``order="translation_first"`` (position ``p``
    in the world, rotation vector ``r``) the block
    ``(v_lin, omega) = (R^T pdot, J_r(r) rdot)`` (Pinocchio: linear velocity
    first, both in the joint frame).  A Pinocchio model built with
    ``mimic=True`` has no coordinate for a mimic joint: its column of ``T``
    is zero (see :func:`coupled_errors`).  With ``v = T qdot`` and
    ``vdot = T qddot + Tdot qdot``, the same dynamics reads

    .. math::

        M = T^T M_p T, \\quad h = T^T (h_p + M_p \\dot T \\dot q), \\quad
        \\tau = T^T \\tau_p.
    """

    def __init__(self, tree: Tree, model: Any) -> None:
        self.tree, self.model = tree, model
        names = list(model.names)
        self.rows: list[tuple[str, int, int, int, int]] = []  # kind, our dof, idx_q, idx_v, nv
        self.mimic: list[int] = []  # our coordinates of Pinocchio's mimic joints
        for i, spec in enumerate(tree.specs):
            a, k = int(tree.dof0[i]), int(tree.ndof[i])
            if k == 0:
                continue
            if spec.kind == "free" and spec.parent is None:
                jid = 1
            elif spec.name in names:
                jid = names.index(spec.name)
            else:
                raise ConfigurationError(f"joint {spec.name!r} is not in the Pinocchio model")
            joint = model.joints[jid]
            kind = joint.shortname()
            if kind == "JointModelMimic":
                self.mimic.append(a)
                continue
            if kind == "JointModelFreeFlyer" and spec.kind == "free":
                if spec.params.get("order") != "translation_first":
                    raise ConfigurationError(
                        f"joint {spec.name!r}: only free joints with order='translation_first' "
                        "map to Pinocchio's free flyer"
                    )
            elif not (k == 1 and kind in _SCALAR | _UNBOUNDED):
                raise ConfigurationError(
                    f"joint {spec.name!r} ({spec.kind}) has no counterpart in Pinocchio's {kind}"
                )
            self.rows.append((kind, a, joint.idx_q, joint.idx_v, joint.nv))
        self.nv = model.nv
        if sum(r[4] for r in self.rows) + len(self.mimic) != tree.nq:
            raise ConfigurationError(
                f"the Pinocchio model has {self.nv} velocities and {len(self.mimic)} mimic "
                f"joints, the tree {tree.nq} coordinates"
            )

    def configuration(self, q: Array) -> Array:
        """Pinocchio's ``q`` (nq_p,) of contactlab's ``q`` (nq,)."""
        out = np.zeros(self.model.nq)
        for kind, a, iq, _, _ in self.rows:
            if kind == "JointModelFreeFlyer":
                out[iq : iq + 3] = q[a : a + 3]
                w, x, y, z = se3.rotation_to_quaternion(se3.exp_so3(q[a + 3 : a + 6]))
                out[iq + 3 : iq + 7] = x, y, z, w  # Pinocchio's order
            elif kind in _UNBOUNDED:
                out[iq : iq + 2] = np.cos(q[a]), np.sin(q[a])
            else:
                out[iq] = q[a]
        return out

    def velocity_map(self, q: Array, qdot: Array) -> tuple[Array, Array]:
        """``T`` (nv, nq) with ``v = T qdot``, and ``Tdot qdot`` (nv,)."""
        T = np.zeros((self.nv, self.tree.nq))
        Td = np.zeros(self.nv)
        for kind, a, _, iv, _ in self.rows:
            if kind != "JointModelFreeFlyer":
                T[iv, a] = 1.0
                continue
            r, rdot, pdot = q[a + 3 : a + 6], qdot[a + 3 : a + 6], qdot[a : a + 3]
            R, Jr = se3.exp_so3(r), se3.so3_right_jacobian(r)
            T[iv : iv + 3, a : a + 3] = R.T
            T[iv + 3 : iv + 6, a + 3 : a + 6] = Jr
            omega = Jr @ rdot  # d(R^T)/dt = -[omega] R^T
            Td[iv : iv + 3] = -np.cross(omega, R.T @ pdot)
            Td[iv + 3 : iv + 6] = right_jacobian_dot(r, rdot) @ rdot
        return T, Td


def dynamics_errors(
    model: Any, peer: PinocchioCoordinates, q: Array, qdot: Array, tau: Array, qddot: Array
) -> dict[str, float]:
    """Relative differences of ``M``, ``h``, forward and inverse dynamics against Pinocchio.

    ``FD_force`` compares the forward dynamics as a backward error,
    ``max |M (qddot - qddot_p)| / (max |M| max |qddot_p|)``, which ``cond(M)``
    does not magnify.

    ``model`` is a :class:`contactlab.reduced.model.Model` of ``peer.tree``;
    each value is ``max |ours - theirs| / max |theirs|`` at the state
    ``(q, qdot)`` with joint forces ``tau`` and accelerations ``qddot``
    (contactlab's coordinates), Pinocchio's results mapped as in
    :class:`PinocchioCoordinates`.  Pinocchio's ``crba``, ``nonLinearEffects``,
    ``aba`` and ``rnea`` are the references; they leave joint damping out, so
    the damping force ``D qdot`` of the tree's joints is added to theirs.
    """
    import pinocchio as pin

    pm, data = peer.model, peer.model.createData()
    qp = peer.configuration(q)
    T, Td = peer.velocity_map(q, qdot)
    v = T @ qdot
    Mp = pin.crba(pm, data, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    hp = pin.nonLinearEffects(pm, data, qp, v)
    damping = peer.tree.per_dof("damping") * qdot  # Pinocchio's algorithms leave it out
    tau_p = np.linalg.solve(T.T, tau - damping)
    ref = {
        "M": T.T @ Mp @ T,
        "h": T.T @ (hp + Mp @ Td) + damping,
        "FD": np.linalg.solve(T, pin.aba(pm, data, qp, v, tau_p) - Td),
        "ID": T.T @ pin.rnea(pm, data, qp, v, T @ qddot + Td) + damping,
    }
    ours = {
        "M": model.mass_matrix(q),
        "h": model.bias_forces(q, qdot),
        "FD": model.forward_dynamics(q, qdot, tau),
        "ID": model.inverse_dynamics(q, qdot, qddot),
    }
    out = {k: _relative(ours[k], ref[k]) for k in ref}
    # forward dynamics as a backward error, free of the cond(M) that magnifies rounding in
    # the accelerations of ill-conditioned robots
    scale = np.abs(ref["M"]).max(initial=0.0) * np.abs(ref["FD"]).max(initial=0.0)
    diff = ref["M"] @ (ours["FD"] - ref["FD"])
    if not (np.all(np.isfinite(diff)) and np.isfinite(scale)):
        out["FD_force"] = float("nan")
    else:
        out["FD_force"] = float(np.abs(diff).max(initial=0.0)) / scale if scale > 0 else 0.0
    return out


def _relative(a: Array, b: Array) -> float:
    """``max |a - b| / max |b|``; NaN when either holds non-finite numbers (singular M)."""
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("nan")
    scale = float(np.abs(b).max(initial=0.0))
    diff = float(np.abs(np.asarray(a) - b).max(initial=0.0))
    return diff / scale if scale > 0 else diff


def coupled_errors(
    tree: Tree,
    couplings: Sequence[Any],
    peer: PinocchioCoordinates,
    q: Array,
    qdot: Array,
    tau: Array,
) -> dict[str, float]:
    """Relative differences of the coupled (mimic) dynamics against Pinocchio's mimic model.

    ``couplings`` are the tree's bound :class:`~contactlab.reduced.constraints.Coupling`
    rows ``q_b = k q_a + offset``; ``peer`` maps a fixed-base Pinocchio model built
    with ``mimic=True`` (one coordinate per leader).  With ``qdot = P v``
    (``P`` (nq, nv): a leader's column carries ``k`` on each of its mimic
    joints), Pinocchio's ``M_p``, ``h_p`` are ``P^T M P``, ``P^T h``, and its
    accelerations ``M_p^{-1} P^T (tau - h)`` give ``P vdot``, which contactlab
    obtains from the constrained forward dynamics of the full tree
    (:func:`contactlab.reduced.constrained_dynamics.constrained_acceleration`).
    ``(q, qdot)`` must satisfy the couplings.
    """
    import pinocchio as pin

    from contactlab.reduced.constrained_dynamics import constrained_acceleration
    from contactlab.reduced.dynamics import bias_forces, mass_matrix
    from contactlab.reduced.kinematics import forward_kinematics

    T, _ = peer.velocity_map(q, qdot)
    P = T.T.copy()  # scalar joints: T is a selection, so P = T^T off the mimic rows
    for c in couplings:
        P[c.ib] = c.ratio * P[c.ia]
    pm, data = peer.model, peer.model.createData()
    qp, v = peer.configuration(q), T @ qdot
    damping = tree.per_dof("damping") * qdot  # Pinocchio's algorithms leave it out
    Mp = pin.crba(pm, data, qp)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    hp = pin.rnea(pm, data, qp, v, np.zeros(pm.nv)) + P.T @ damping
    M = mass_matrix(forward_kinematics(tree, q))
    qdd, _ = constrained_acceleration(tree, q, qdot, 0.0, couplings, tau)
    return {
        "M": _relative(P.T @ M @ P, Mp),
        "h": _relative(P.T @ bias_forces(tree, q, qdot), hp),
        "FD": _relative(qdd, P @ np.linalg.solve(Mp, P.T @ tau - hp)),
    }
