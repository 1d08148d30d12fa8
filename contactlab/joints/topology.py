"""The tree order of a scene's joints: parents before children, depth first.

Both formulations read joint coordinates in this order: the reduced one stacks
``q`` along it (:class:`contactlab.reduced.tree.Tree`), the maximal one reads
the joint forces of ``Scene.joint_torque`` back from the bodies in it
(:class:`contactlab.maximal.joint_coordinates.JointTorques`).  Joints flagged
``closes_loop`` are not tree edges.
"""

from __future__ import annotations

from contactlab.errors import ConfigurationError
from contactlab.scene import JointSpec, Scene


def tree_order(scene: Scene) -> tuple[tuple[JointSpec, ...], tuple[JointSpec, ...]]:
    """``(tree joints in depth-first order, loop-closing joints)`` of ``scene``.

    Raises
    ------
    ConfigurationError
        If a body is the child of two tree joints, has no joint, or a chain of
        parent links does not reach the world.
    """
    tree_specs = [j for j in scene.joints if not j.closes_loop]
    loops = tuple(j for j in scene.joints if j.closes_loop)
    by_child: dict[str, JointSpec] = {}
    for j in tree_specs:
        if j.child in by_child:
            raise ConfigurationError(
                f"body {j.child!r} is the child of joints {by_child[j.child].name!r} and "
                f"{j.name!r}; mark one of them closes_loop=True to make it a loop closure"
            )
        by_child[j.child] = j
    missing = [b.name for b in scene.bodies if b.name not in by_child]
    if missing:
        raise ConfigurationError(
            f"scene {scene.name!r}: bodies {missing} have no joint; in reduced coordinates "
            "every body needs a joint to its parent (use kind 'free' for a floating body)"
        )
    children: dict[str | None, list[JointSpec]] = {}
    for j in tree_specs:
        children.setdefault(j.parent, []).append(j)
    order: list[JointSpec] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children.get(j.child, [])))
    if len(order) != len(tree_specs):
        cyc = sorted({j.name for j in tree_specs} - {j.name for j in order})
        raise ConfigurationError(
            f"scene {scene.name!r}: joints {cyc} are not connected to the world (a cycle "
            "of parent links); mark the joint that closes the cycle closes_loop=True"
        )
    return tuple(order), loops
