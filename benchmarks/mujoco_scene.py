"""The same robot scene in MuJoCo: a :class:`~contactlab.scene.Scene` built into an ``MjModel``.

:func:`mujoco_model` writes the scene's tree through MuJoCo's model-editing API
(``mujoco.MjSpec``), so both engines step the same numbers: each body's mass and
principal inertia at its centre of mass, the joint frames and axes, the joint
springs and dampers (a PD drive: ``stiffness``, ``springref``, ``damping``), the
collision shapes (a mesh as the same vertex set, whose convex hull MuJoCo
collides, as contactlab does), the excluded pairs, the ground plane, gravity,
the step and the friction coefficient.  :func:`mujoco_state` copies a reduced
state into ``qpos``/``qvel``.  Used by ``benchmarks/bench_robots.py`` (section
``step``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.scene import Scene

Array = NDArray[np.float64]


def _quat(R: Array) -> Array:
    """MuJoCo's (w, x, y, z) quaternion of a rotation matrix."""
    import mujoco

    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(R, dtype=float).reshape(-1))
    return q


def _add_shape(spec: Any, body: Any, shape: Any, name: str, mu: float) -> None:
    import mujoco

    from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Plane, Sphere

    pose = np.asarray(shape.pose)
    common = {"pos": pose[:3, 3], "quat": _quat(pose[:3, :3]), "friction": [mu, 0.0, 0.0]}
    g = mujoco.mjtGeom
    if isinstance(shape, Mesh):
        mesh = spec.add_mesh()
        mesh.name = name
        mesh.uservert = np.asarray(shape.vertices, dtype=float).reshape(-1).tolist()
        body.add_geom(type=g.mjGEOM_MESH, meshname=name, **common)
    elif isinstance(shape, Box):
        body.add_geom(type=g.mjGEOM_BOX, size=shape.half_extents, **common)
    elif isinstance(shape, Sphere):
        body.add_geom(type=g.mjGEOM_SPHERE, size=[shape.radius, 0, 0], **common)
    elif isinstance(shape, (Capsule, Cylinder)):
        kind = g.mjGEOM_CAPSULE if isinstance(shape, Capsule) else g.mjGEOM_CYLINDER
        body.add_geom(type=kind, size=[shape.radius, shape.half_height, 0], **common)
    elif isinstance(shape, Plane):
        body.add_geom(type=g.mjGEOM_PLANE, size=[0, 0, 1], **common)
    else:
        raise TypeError(f"no MuJoCo geom for {type(shape).__name__}")


def mujoco_model(scene: Scene, *, cone: str = "pyramidal") -> tuple[Any, list[str]]:
    """The MuJoCo model of ``scene`` (a tree of revolute, prismatic and free joints) and the
    names of its bodies in the order MuJoCo numbers them (world first excluded)."""
    import mujoco

    spec = mujoco.MjSpec()
    spec.option.timestep = scene.dt
    spec.option.gravity = scene.gravity
    spec.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
    spec.option.cone = (
        mujoco.mjtCone.mjCONE_PYRAMIDAL if cone == "pyramidal" else mujoco.mjtCone.mjCONE_ELLIPTIC
    )
    spec.compiler.autolimits = True
    spec.compiler.degree = False  # springref in radians
    mu = float(scene.contact.mu)
    for k, shape in enumerate(scene.static_shapes):
        _add_shape(spec, spec.worldbody, shape, f"static{k}", mu)
    bodies = {b.name: b for b in scene.bodies}
    made: dict[str | None, Any] = {None: spec.worldbody}
    order: list[str] = []
    pending = list(scene.joints)
    while pending:
        j = next(j for j in pending if j.parent in made)
        pending.remove(j)
        b = bodies[j.child]
        Fp = np.eye(4) if j.frame_parent is None else np.asarray(j.frame_parent)
        Fc = np.eye(4) if j.frame_child is None else np.asarray(j.frame_child)
        rel = Fp @ se3.inverse(Fc)
        body = made[j.parent].add_body(name=b.name, pos=rel[:3, 3], quat=_quat(rel[:3, :3]))
        body.mass = float(b.mass)
        body.inertia = np.asarray(b.inertia, dtype=float)
        body.ipos = np.zeros(3)
        body.iquat = [1.0, 0.0, 0.0, 0.0]
        body.explicitinertial = True
        if j.kind == "free":
            body.add_freejoint(name=j.name)
        elif j.kind in ("revolute", "prismatic"):
            kind = (
                mujoco.mjtJoint.mjJNT_HINGE if j.kind == "revolute" else mujoco.mjtJoint.mjJNT_SLIDE
            )
            rest = 0.0 if j.rest is None else float(np.asarray(j.rest)[0])
            body.add_joint(
                name=j.name, type=kind, pos=Fc[:3, 3], axis=Fc[:3, :3] @ j.axis,
                stiffness=j.stiffness, springref=rest, damping=j.damping,
            )  # fmt: skip
        elif j.kind != "fixed":
            raise ValueError(f"joint {j.name!r}: kind {j.kind!r} has no MuJoCo counterpart here")
        for k, shape in enumerate(b.shapes):
            _add_shape(spec, body, shape, f"{b.name}_{k}", mu)
        made[b.name] = body
        order.append(b.name)
    for first, second in scene.exclude_pairs:
        if first is not None and second is not None:
            spec.add_exclude(bodyname1=first, bodyname2=second)
    return spec.compile(), order


def mujoco_state(scene: Scene, model: Any, data: Any, q: Array, qdot: Array) -> None:
    """Set MuJoCo's ``qpos``/``qvel`` to the reduced state ``(q, qdot)`` of ``scene``."""
    import mujoco

    from contactlab.reduced import Tree, forward_kinematics

    tree = Tree.from_scene(scene)
    kin = forward_kinematics(tree, q, qdot)
    for j in scene.joints:
        if j.kind not in ("free", "revolute", "prismatic"):
            continue  # a fixed joint has no coordinates
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j.name)
        a, v = model.jnt_qposadr[jid], model.jnt_dofadr[jid]
        if j.kind == "free":
            i = scene.body_index(j.child)
            E, phi = kin.E[i], kin.phi[i]
            data.qpos[a : a + 3] = E[:3, 3]
            data.qpos[a + 3 : a + 7] = _quat(E[:3, :3])
            data.qvel[v : v + 3] = E[:3, :3] @ phi[3:]
            data.qvel[v + 3 : v + 6] = phi[:3]
        else:
            s = tree.dofs(j.name)
            data.qpos[a] = q[s][0]
            data.qvel[v] = qdot[s][0]
    mujoco.mj_forward(model, data)
