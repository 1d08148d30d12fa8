"""The same kinematic tree as a Pinocchio model (optional peer, ``pip install pin``).

Pinocchio's joint frame ``i`` is contactlab's child-side joint frame
``E_i frame_child``: joint ``i`` is placed in its parent's joint frame at
``frame_child_p^{-1} frame_parent_i`` and its body (centre of mass, principal
axes) at ``frame_child_i^{-1}``.  Joint coordinates, velocities and torques
are then the same numbers in both libraries (Pinocchio orders twists linear
first, contactlab angular first; scalar joint coordinates do not see it).  The
joints' armature is Pinocchio's ``model.armature``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.reduced.tree import Tree


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
