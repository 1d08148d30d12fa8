"""MJCF import: a MuJoCo model becomes a :class:`~contactlab.scene.Scene`.

The XML is compiled by MuJoCo's own model compiler (``mujoco`` from PyPI,
the optional extra ``contactlab[mjcf]``), so defaults classes, includes,
``inertiafromgeom`` and every other MJCF rule are MuJoCo's, not a second
reading of the format.  This module maps the compiled ``MjModel`` arrays to
contactlab's bodies and :class:`~contactlab.scene.JointSpec` entries with the
checks of the URDF path (:mod:`contactlab.reduced.urdf`).

* **Body frames.**  MuJoCo keeps each body's inertial frame (``body_ipos``,
  ``body_iquat``, in the body frame) on the principal axes with the diagonal
  moments ``body_inertia``: it is contactlab's body frame, ``T_bi``.
* **Joints.**  A joint sits at ``jnt_pos`` in its body's frame with axis
  ``jnt_axis`` there, and the body frame is at ``body_pos``, ``body_quat``
  in its parent's frame.  With the joint frame ``J`` (translation
  ``jnt_pos``, no rotation), ``frame_parent = T_bi(parent)^-1 B J`` and
  ``frame_child = T_bi(child)^-1 J``, so that the pose at ``q = 0`` is the
  pose MuJoCo compiles.  Kinds: hinge -> ``revolute``, slide -> ``prismatic``,
  ball -> ``spherical``, free -> ``free``; a body without joints is welded
  (``fixed``).  Joint damping is kept; limited hinge and slide joints become
  :class:`~contactlab.reduced.constraints.JointLimit` constraints on request.
* **Massless bodies** without joints are merged into their parent; a
  massless body that moves is an error (as in URDF).
* **Geoms** plane (world only), sphere, capsule, cylinder and box become
  :mod:`contactlab.shapes` in the body frame (world geoms: static shapes);
  geoms that collide with nothing (``contype = conaffinity = 0``) are
  visual and left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.constraints import JointLimit
from contactlab.scene import Body, JointSpec, Scene
from contactlab.shapes import Box, Capsule, Cylinder, Plane, Shape, Sphere

Array = np.ndarray

#: MuJoCo joint types (mjtJoint) -> (contactlab kind, coordinates)
_JOINTS = {0: ("free", 7), 1: ("spherical", 4), 2: ("prismatic", 1), 3: ("revolute", 1)}
_GEOM_NAMES = {
    0: "plane",
    1: "hfield",
    2: "sphere",
    3: "capsule",
    4: "ellipsoid",
    5: "cylinder",
    6: "box",
    7: "mesh",
    8: "sdf",
}


def _compile(source: str | Path) -> Any:
    try:
        import mujoco
    except ImportError as err:
        raise ConfigurationError(
            "MJCF import needs MuJoCo's compiler: pip install 'contactlab[mjcf]'"
        ) from err
    text = str(source)
    try:
        if text.lstrip().startswith("<"):
            return mujoco.MjModel.from_xml_string(text)
        return mujoco.MjModel.from_xml_path(text)
    except (ValueError, OSError) as err:
        raise ConfigurationError(f"cannot compile MJCF {text[:80]!r}: {err}") from err


def _pose(pos: Array, quat: Array) -> Array:
    return se3.make_transform(se3.quaternion_to_rotation(quat), np.asarray(pos, dtype=float))


@dataclass
class _Node:
    """A contactlab body under construction: its inertial frame in the MuJoCo body frame."""

    name: str
    mass: float
    moments: Array
    inertial: Array
    shapes: list[Shape] = field(default_factory=list)


def _name(view: Any, fallback: str) -> str:
    """The name of a named view (``model.body(i)``, ...), or ``fallback`` when unnamed."""
    return str(view.name) or fallback


def _shape(model: Any, g: int, pose: Array, name: str) -> Shape | None:
    if model.geom_contype[g] == 0 and model.geom_conaffinity[g] == 0:
        return None  # visual only
    kind = int(model.geom_type[g])
    size = np.asarray(model.geom_size[g], dtype=float)
    if kind == 2:
        return Sphere(radius=float(size[0]), pose=pose)
    if kind == 3:
        return Capsule(radius=float(size[0]), half_height=float(size[1]), pose=pose)
    if kind == 5:
        return Cylinder(radius=float(size[0]), half_height=float(size[1]), pose=pose)
    if kind == 6:
        return Box(half_extents=size[:3], pose=pose)
    raise ConfigurationError(
        f"MJCF geom {name!r} has type {_GEOM_NAMES.get(kind, kind)!r}; supported on bodies: "
        "sphere, capsule, cylinder, box (a plane only in the world body); give it "
        'contype="0" conaffinity="0" to keep it visual only'
    )


def load_mjcf(source: str | Path, *, joint_limits: bool = False, name: str | None = None) -> Scene:
    """Build a scene from an MJCF file path or XML text, compiled by MuJoCo.

    Parameters
    ----------
    source : path of an MJCF ``.xml`` file, or the XML itself (text starting with ``<``).
    joint_limits : add :class:`JointLimit` constraints for limited hinge and slide
        joints (the scene then runs in the reduced formulation only).
    name : scene name (default: the model's name).

    Returns
    -------
    Scene with one body per massive MuJoCo body, one joint per body (a welded
    body gets a fixed joint), gravity and step size from ``<option>``, initial
    coordinates zero (the compiled pose).
    """
    model = _compile(source)
    nodes: dict[int, _Node] = {}
    # owner[b] = (contactlab body id or -1 for the world, MuJoCo frame of b in the owner's
    # MuJoCo body frame)
    owner: dict[int, tuple[int, Array]] = {0: (-1, np.eye(4))}
    specs: list[JointSpec] = []
    limits: list[JointLimit] = []
    for b in range(1, model.nbody):
        body_name = _name(model.body(b), f"body{b}")
        parent = int(model.body_parentid[b])
        parent_owner, parent_in_owner = owner[parent]
        in_parent = _pose(model.body_pos[b], model.body_quat[b])
        joints = range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b])
        mass = float(model.body_mass[b])
        moments = np.asarray(model.body_inertia[b], dtype=float)
        if mass <= 0:
            if len(joints):
                raise ConfigurationError(
                    f"MJCF body {body_name!r} has no mass but moves on a joint; give it an "
                    "<inertial> or geoms with mass"
                )
            owner[b] = (parent_owner, parent_in_owner @ in_parent)
            continue
        if np.any(moments <= 0) or not _triangle(moments):
            raise ConfigurationError(
                f"MJCF body {body_name!r}: principal moments {moments} are not positive or "
                "break the triangle inequality; give a physical <inertial>"
            )
        if len(joints) > 1:
            raise ConfigurationError(
                f"MJCF body {body_name!r} has {len(joints)} joints; one joint per body is "
                "supported (split the body into massless-free chains of single joints)"
            )
        inertial = _pose(model.body_ipos[b], model.body_iquat[b])
        nodes[b] = _Node(body_name, mass, moments, inertial)
        owner[b] = (b, np.eye(4))
        parent_inertial_inv = (
            np.eye(4) if parent_owner < 0 else se3.inverse(nodes[parent_owner].inertial)
        )
        placed = parent_inertial_inv @ parent_in_owner @ in_parent  # body frame in parent body
        if len(joints):
            j = joints[0]
            kind, _ = _JOINTS[int(model.jnt_type[j])]
            joint_frame = se3.make_transform(None, np.asarray(model.jnt_pos[j], dtype=float))
            axis = np.asarray(model.jnt_axis[j], dtype=float)
            joint_name = _name(model.joint(j), f"joint{j}")
            dof = int(model.jnt_dofadr[j])
            specs.append(
                JointSpec(
                    joint_name,
                    kind,
                    None if parent_owner < 0 else nodes[parent_owner].name,
                    body_name,
                    frame_parent=placed @ joint_frame,
                    frame_child=se3.inverse(inertial) @ joint_frame,
                    axis=axis if kind in ("revolute", "prismatic") else None,
                    damping=float(model.dof_damping[dof]),
                )
            )
            if joint_limits and kind in ("revolute", "prismatic") and model.jnt_limited[j]:
                lower, upper = (float(v) for v in model.jnt_range[j])
                limits.append(JointLimit(joint_name, lower, upper))
        else:
            specs.append(
                JointSpec(
                    f"{body_name}_weld",
                    "fixed",
                    None if parent_owner < 0 else nodes[parent_owner].name,
                    body_name,
                    frame_parent=placed,
                    frame_child=se3.inverse(inertial),
                )
            )
    static: list[Shape] = []
    for g in range(model.ngeom):
        geom_name = _name(model.geom(g), f"geom{g}")
        b = int(model.geom_bodyid[g])
        body, in_owner = owner[b]
        pose = in_owner @ _pose(model.geom_pos[g], model.geom_quat[g])
        if body < 0:
            if int(model.geom_type[g]) == 0:
                normal = pose[:3, 2]
                static.append(Plane(normal=normal, offset=float(normal @ pose[:3, 3])))
                continue
            shape = _shape(model, g, pose, geom_name)
            if shape is not None:
                static.append(shape)
            continue
        shape = _shape(model, g, se3.inverse(nodes[body].inertial) @ pose, geom_name)
        if shape is not None:
            nodes[body].shapes.append(shape)
    bodies = tuple(Body(n.name, n.mass, n.moments, tuple(n.shapes)) for n in nodes.values())
    model_name = bytes(model.names).split(b"\0", 1)[0].decode() or "mjcf"
    return Scene(
        name or model_name,
        bodies,
        tuple(specs),
        constraints=tuple(limits),
        static_shapes=tuple(static),
        gravity=np.asarray(model.opt.gravity, dtype=float),
        dt=float(model.opt.timestep),
    )


def _triangle(d: Array) -> bool:
    """Principal moments of a rigid body satisfy ``d_i <= d_j + d_k`` (with round-off)."""
    s = float(d.sum())
    return bool(np.all(2.0 * d <= s * (1.0 + 1e-9)))
