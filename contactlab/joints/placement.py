"""Initial placement of maximal bodies by forward kinematics of the joints.

With the joint maps of the reduced formulation (``Q(q)``, ``S(q)``,
:mod:`contactlab.joints.kinds`) a child is placed from its parent by

.. math::

    E_b = E_a F_a Q(q_0) F_b^{-1}, \\qquad
    \\phi_b = \\mathrm{Ad}(F_b)\\big(\\mathrm{Ad}(Q^{-1}) \\mathrm{Ad}(F_a^{-1}) \\phi_a
               + S(q_0) \\dot q_0\\big)

(Sueda's notes eq. 1.15 and §2: the child joint frame moves relative to the
parent's with the body twist ``S qdot``).  The walk visits joints in scene
order, repeating until every reachable child is placed; a joint whose child
is already placed (a loop closure) only constrains.  Bodies that no joint
reaches stay at the identity at rest.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.body_constraints import body_index_map
from contactlab.joints.kinds import build_joint
from contactlab.scene import JointSpec, Scene

Array = NDArray[np.float64]


def _joint_map(spec: JointSpec) -> tuple[Array, Array]:
    """``(Q(q0), S(q0) qdot0)`` of one joint, from the reduced formulation's joint maps."""
    joint = build_joint(spec)
    q = np.zeros(joint.ndof) if spec.q0 is None else spec.q0
    qdot = np.zeros(joint.ndof) if spec.qdot0 is None else spec.qdot0
    Q, S, _ = joint.evaluate(np.asarray(q, dtype=float), np.asarray(qdot, dtype=float))
    return Q, S @ qdot


def place_bodies(scene: Scene) -> tuple[Array, Array]:
    """Body transforms (nb, 4, 4) and body twists (nb, 6) from the joints' ``q0``/``qdot0``.

    Raises
    ------
    ConfigurationError
        If a joint kind has no joint map (then give ``Scene.initial_E``).
    """
    nb = scene.n_bodies
    E = np.broadcast_to(np.eye(4), (nb, 4, 4)).copy()
    phi = np.zeros((nb, 6))
    pending = [j for j in scene.joints if not j.closes_loop]
    # roots (bodies that are no joint's child) stay at the identity
    placed = np.ones(nb, dtype=bool)
    index = body_index_map(scene)
    placed[[index[j.child] for j in pending]] = False
    while pending:
        progress = False
        rest = []
        for spec in pending:
            ia, ib = index[spec.parent], index[spec.child]
            if placed[ib]:
                continue  # a second joint to an already placed child closes a loop
            if ia >= 0 and not placed[ia]:
                rest.append(spec)
                continue
            try:
                Q, psi = _joint_map(spec)
            except ConfigurationError as err:
                raise ConfigurationError(
                    f"{err}; cannot place body {spec.child!r} from joint {spec.name!r}: give "
                    "Scene.initial_E and initial_phi instead"
                ) from err
            Ea = np.eye(4) if ia < 0 else E[ia]
            pa = np.zeros(6) if ia < 0 else phi[ia]
            assert spec.frame_parent is not None and spec.frame_child is not None
            Fa, Fb = spec.frame_parent, spec.frame_child
            E[ib] = Ea @ Fa @ Q @ se3.inverse(Fb)
            rel = se3.adjoint(se3.inverse(Q)) @ se3.adjoint(se3.inverse(Fa)) @ pa
            phi[ib] = se3.adjoint(Fb) @ (rel + psi)
            placed[ib] = True
            progress = True
        pending = rest
        if not progress:
            break
    return E, phi
