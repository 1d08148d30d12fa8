"""MJCF import: a MuJoCo model becomes a :class:`~contactlab.scene.Scene`.

The XML is compiled by MuJoCo's own model compiler (``mujoco`` from PyPI,
the optional extra ``contactlab[mjcf]``), so defaults classes, includes,
``inertiafromgeom`` and every other MJCF rule are MuJoCo's, not a second
reading of the format.  This module maps the compiled ``MjModel`` arrays to
contactlab's bodies and :class:`~contactlab.scene.JointSpec` entries;
:mod:`contactlab.reduced.mjcf_geoms` maps geoms and friction,
:mod:`contactlab.reduced.mjcf_constraints` equality constraints and
:mod:`contactlab.reduced.mjcf_parts` actuators, keyframes and the report of
what is not imported.  The user guide is ``docs/mjcf.md``.

* **Body frames.**  MuJoCo keeps each body's inertial frame (``body_ipos``,
  ``body_iquat``, in the body frame) on the principal axes with the diagonal
  moments ``body_inertia``: it is contactlab's body frame.
* **Joints.**  A MuJoCo body moves relative to its parent by
  ``B exp([xi_1] q_1) ... exp([xi_k] q_k)``: its placement ``B`` (``body_pos``,
  ``body_quat``) and one screw per joint, in the body frame (a hinge turns
  about the line through ``jnt_pos`` along ``jnt_axis``, a slide moves along
  ``jnt_axis``), with ``q = qpos - qpos0``.  A body with one joint gets a joint
  of that kind (hinge -> ``revolute``, slide -> ``prismatic``, ball ->
  ``spherical``, free -> ``free``); a body without joints is welded
  (``fixed``).  Several hinges and slides in one body become one joint, the
  product of their screws (:class:`ScrewChainJoint`), which the reduced
  formulation expands to revolute and prismatic nodes with massless links.
* **Per-coordinate dynamics** (``dof_*`` arrays): ``armature`` (rotor inertia
  on the diagonal of M), ``damping``, ``stiffness`` with ``springref``, and
  ``frictionloss`` as the coordinate's dry friction (``JointSpec.dry_friction``,
  a constant bound, :mod:`contactlab.reduced.dry_friction`) on hinges and slides.
* **Massless bodies** without joints merge into their parent.  MuJoCo compiles
  a massless body on joints when a body with mass is welded to it: the joints
  then move that body (one such body; several are an error), and the massless
  body's other children hang from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.maps import _LinearScrewJoint
from contactlab.reduced import mjcf_parts as parts
from contactlab.reduced.constraints import JointLimit
from contactlab.reduced.mjcf_constraints import equalities
from contactlab.reduced.mjcf_geoms import geoms, material
from contactlab.reduced.mjcf_parts import name_of, pose
from contactlab.scene import Body, ContactParams, JointSpec, Scene
from contactlab.shapes import Shape

Array = np.ndarray

#: MuJoCo joint types (mjtJoint) -> contactlab kind
_KINDS = {0: "free", 1: "spherical", 2: "prismatic", 3: "revolute"}


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


class ScrewChainJoint(_LinearScrewJoint):
    """``Q = exp([xi_1] q_1) ... exp([xi_n] q_n)`` for screws ``xi`` (n, 6) of the joint frame.

    Hinges (``|omega| = 1``, ``omega . v = 0``) and slides (``omega = 0``): the
    reduced model expands it into revolute and prismatic nodes
    (:meth:`screw_chain`).
    """

    def screw_chain(self) -> tuple[list[Array], Array]:
        """No constant factors between the screws (see :meth:`TransformJoint.screw_chain`)."""
        return [np.eye(4)] * (self.ndof + 1), np.asarray(self.screws)


@dataclass
class _Node:
    """A contactlab body under construction: its inertial frame in the MuJoCo body frame."""

    name: str
    mass: float
    moments: Array
    inertial: Array
    shapes: list[Shape] = field(default_factory=list)
    materials: set[float] = field(default_factory=set)


def _screw(model: Any, j: int) -> Array:
    axis = np.asarray(model.jnt_axis[j], dtype=float)
    if int(model.jnt_type[j]) == 2:
        return np.concatenate([np.zeros(3), axis])
    return np.concatenate([axis, np.cross(np.asarray(model.jnt_pos[j], dtype=float), axis)])


def load_mjcf(
    source: str | Path,
    *,
    joint_limits: bool = False,
    name: str | None = None,
    keyframe: str | int | None = None,
    strict: bool = False,
) -> Scene:
    """Build a scene from an MJCF file path or XML text, compiled by MuJoCo.

    Parameters
    ----------
    source : path of an MJCF ``.xml`` file, or the XML itself (text starting with ``<``).
    joint_limits : add :class:`JointLimit` constraints for limited hinge and slide
        joints (the scene then runs in the reduced formulation only).
    name : scene name (default: the model's name).
    keyframe : name or index of a ``<key>`` whose ``qpos``, ``qvel`` and ``ctrl``
        are the initial state and the actuator controls (default: the compiled pose,
        at rest, controls zero).
    strict : refuse a model with any feature that is not imported (default: one
        :class:`~contactlab.reduced.mjcf_parts.MJCFWarning` line per feature).

    Returns
    -------
    Scene with one body per massive MuJoCo body and one joint per body, gravity and
    step size from ``<option>``.  ``extras["mjcf_dofs"]`` holds, per MuJoCo dof, the
    index of its coordinate in ``q`` (tree order).
    """
    model = _compile(source)
    report = parts.Report(strict)
    parts.report_model_features(model, report)
    key = parts.keyframe_state(model, keyframe)
    nodes: dict[int, _Node] = {}
    # owners[b] = (contactlab body index or -1 for the world, MuJoCo frame of body b in
    # the owner's MuJoCo body frame); a massless welded body merges into its parent, a
    # massless body on joints hands its joints to the body with mass welded to it
    owners: dict[int, tuple[int, Array]] = {0: (-1, np.eye(4))}
    carriers = _carriers(model)
    specs: list[JointSpec] = []
    limits: list[JointLimit] = []
    spec_joints: list[list[int]] = []  # MuJoCo joints of each spec, in coordinate order
    for b in range(1, model.nbody):
        if b in nodes:
            continue  # a welded body that carries its massless parent's joints
        owner, in_owner = owners[int(model.body_parentid[b])]
        placed = in_owner @ pose(model.body_pos[b], model.body_quat[b])
        joints = list(range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b]))
        after = np.eye(4)  # the MuJoCo frame of the body with mass in that of body b
        if float(model.body_mass[b]) <= 0:
            if not joints:
                owners[b] = (owner, placed)
                continue
            carrier = carriers[b]
            after = pose(model.body_pos[carrier], model.body_quat[carrier])
            owners[b] = (carrier, se3.inverse(after))
            b = carrier
        node = _node(model, b)
        nodes[b] = node
        owners[b] = (b, np.eye(4))
        parent_name = None if owner < 0 else nodes[owner].name
        before = np.eye(4) if owner < 0 else se3.inverse(nodes[owner].inertial)
        spec = _joint_spec(
            model, node.name, parent_name, before @ placed, joints, after @ node.inertial, report
        )
        specs.append(spec)
        spec_joints.append(joints)
        if joint_limits:
            limits += _limits(model, spec, joints, report)
    nodes = dict(sorted(nodes.items()))
    static, contact = geoms(model, nodes, owners, report)
    dof_index = _dof_index(model, spec_joints)
    specs = parts.apply_keyframe(model, specs, spec_joints, key)
    specs = parts.apply_actuators(model, specs, spec_joints, key)
    torque = parts.actuator_torque(model, spec_joints, key, dof_index, report)
    closures = equalities(model, specs, spec_joints, nodes, owners, dof_index, report)
    report.finish()
    bodies = tuple(
        Body(n.name, n.mass, n.moments, tuple(n.shapes), material=material(n.materials))
        for n in nodes.values()
    )
    model_name = bytes(model.names).split(b"\0", 1)[0].decode() or "mjcf"
    return Scene(
        name or model_name,
        bodies,
        tuple(specs) + tuple(closures.joints),
        constraints=tuple(limits) + tuple(closures.constraints),
        static_shapes=tuple(static),
        gravity=np.asarray(model.opt.gravity, dtype=float),
        dt=float(model.opt.timestep),
        contact=contact if contact is not None else ContactParams(),
        joint_torque=torque,
        extras={"mjcf_dofs": dof_index},
    )


def _node(model: Any, b: int) -> _Node:
    name = name_of(model.body(b), f"body{b}")
    moments = np.asarray(model.body_inertia[b], dtype=float)
    if np.any(moments <= 0) or not _triangle(moments):
        raise ConfigurationError(
            f"MJCF body {name!r}: principal moments {moments} are not positive or "
            "break the triangle inequality; give a physical <inertial>"
        )
    inertial = pose(model.body_ipos[b], model.body_iquat[b])
    return _Node(name, float(model.body_mass[b]), moments, inertial)


def _carriers(model: Any) -> dict[int, int]:
    """For each massless body on joints, the one child with mass welded to it.

    MuJoCo compiles a massless body on joints when bodies with mass are welded to it;
    the joints then move that child, and the body's other children hang from it.
    """
    out = {}
    for b in range(1, model.nbody):
        if model.body_mass[b] > 0 or not model.body_jntnum[b]:
            continue
        welded = [
            c
            for c in range(b + 1, model.nbody)
            if model.body_parentid[c] == b and not model.body_jntnum[c] and model.body_mass[c] > 0
        ]
        if len(welded) != 1:
            names = [name_of(model.body(c), f"body{c}") for c in welded]
            raise ConfigurationError(
                f"MJCF body {name_of(model.body(b), f'body{b}')!r} has no mass and moves on "
                f"joints, with {len(welded)} bodies with mass welded to it {names}; give it "
                "an <inertial> or weld one body with mass to it"
            )
        out[b] = welded[0]
    return out


def _joint_spec(
    model: Any,
    body: str,
    parent: str | None,
    placed: Array,
    joints: list[int],
    inertial: Array,
    report: parts.Report,
) -> JointSpec:
    """The joint of a body: ``E_body = E_parent placed exp([xi_1] q_1) ... inertial``.

    ``inertial``: the body frame in the MuJoCo frame of the body that has the joints.
    """
    if not joints:
        return JointSpec(
            f"{body}_weld",
            "fixed",
            parent,
            body,
            frame_parent=placed,
            frame_child=se3.inverse(inertial),
        )
    types = [int(model.jnt_type[j]) for j in joints]
    names = [name_of(model.joint(j), f"joint{j}") for j in joints]
    dofs = np.concatenate(
        [
            np.arange(model.jnt_dofadr[j], model.jnt_dofadr[j] + _ndof(t))
            for j, t in zip(joints, types)
        ]
    )
    stiffness, rest = parts.spring(model, joints)
    dynamics: dict[str, Any] = {
        "armature": np.asarray(model.dof_armature[dofs], dtype=float),
        "dry_friction": np.asarray(model.dof_frictionloss[dofs], dtype=float),
        "damping": _per_coordinate(np.asarray(model.dof_damping[dofs], dtype=float)),
        "stiffness": stiffness,
        "rest": rest,
    }
    if len(joints) == 1:
        j, kind = joints[0], _KINDS[types[0]]
        if kind in ("free", "spherical") and (
            np.any(dynamics["armature"] > 0) or np.any(np.asarray(dynamics["damping"]) > 0)
        ):
            report.add(
                "armature and damping of ball and free joints",
                repr(names[0]),
                "MuJoCo applies them to angular (and world linear) velocities, contactlab's "
                "coordinates are exponential coordinates",
            )
            dynamics.update(armature=0.0, damping=0.0)
        if kind in ("free", "spherical"):
            dynamics.update(dry_friction=0.0)  # reported by parts.report_model_features
        # a free joint moves the body frame itself; the others act at jnt_pos
        at = se3.make_transform(None, np.asarray(model.jnt_pos[j], dtype=float))
        if kind == "free":
            at = np.eye(4)
        return JointSpec(
            names[0],
            kind,
            parent,
            body,
            frame_parent=placed @ at,
            frame_child=se3.inverse(inertial) @ at,
            axis=np.asarray(model.jnt_axis[j], dtype=float)
            if kind in ("revolute", "prismatic")
            else None,
            **dynamics,
        )
    bad = [n for n, t in zip(names, types) if t not in (2, 3)]
    if bad:
        raise ConfigurationError(
            f"MJCF body {body!r} has joints {names}; {bad} are ball or free joints, which "
            "combine with no other joint in one body: put them in a body of their own"
        )
    return JointSpec(
        "+".join(names),
        "custom",
        parent,
        body,
        frame_parent=placed,
        frame_child=se3.inverse(inertial),
        params={"joint": ScrewChainJoint(np.array([_screw(model, j) for j in joints]))},
        **dynamics,
    )


def _ndof(mj_type: int) -> int:
    return {0: 6, 1: 3, 2: 1, 3: 1}[mj_type]


def _per_coordinate(values: Array) -> Any:
    """One number when every coordinate has it (what every formulation reads), else the array."""
    return float(values[0]) if values.size and np.all(values == values[0]) else values


def _limits(
    model: Any, spec: JointSpec, joints: list[int], report: parts.Report
) -> list[JointLimit]:
    """Joint ranges as a :class:`JointLimit` on the coordinates ``qpos - qpos0``."""
    limited = [j for j in joints if model.jnt_limited[j]]
    if not limited:
        return []
    hinges = all(int(model.jnt_type[j]) in (2, 3) for j in joints)
    if not hinges or len(limited) < len(joints):
        for j in limited:
            report.add(
                "joint range",
                repr(name_of(model.joint(j), f"joint{j}")),
                "limits are imported for hinges and slides whose body's joints are all limited",
            )
        return []
    q0 = np.array([model.qpos0[model.jnt_qposadr[j]] for j in joints])
    lower, upper = (np.array([model.jnt_range[j][k] for j in joints]) - q0 for k in (0, 1))
    return [JointLimit(spec.name, lower, upper)]


def _dof_index(model: Any, spec_joints: list[list[int]]) -> Array:
    """For each MuJoCo dof, the index of its coordinate in contactlab's ``q`` (tree order).

    A free joint's coordinates are (rotation, translation) here and (translation,
    rotation) in MuJoCo; the tree keeps the body order of the MJCF file.
    """
    out = np.full(model.nv, -1, dtype=np.int64)
    offset = 0
    for joints in spec_joints:
        for j in joints:
            adr, t = int(model.jnt_dofadr[j]), int(model.jnt_type[j])
            n = _ndof(t)
            ours = np.arange(offset, offset + n)
            out[adr : adr + n] = np.concatenate([ours[3:], ours[:3]]) if t == 0 else ours
            offset += n
    return out


def _triangle(d: Array) -> bool:
    """Principal moments of a rigid body satisfy ``d_i <= d_j + d_k`` (with round-off)."""
    s = float(d.sum())
    return bool(np.all(2.0 * d <= s * (1.0 + 1e-9)))
