"""The parts of an MJCF model besides bodies and joints (:mod:`contactlab.reduced.mjcf`).

* **Geoms**: plane (world only), sphere, capsule, cylinder and box become
  :mod:`contactlab.shapes`; a mesh becomes the :class:`~contactlab.shapes.Mesh`
  of its convex hull (what MuJoCo collides).  Geoms with ``contype = conaffinity
  = 0`` are visual and left out.  The sliding friction of the geoms is each
  body's material; a contact gets the larger of the two coefficients
  (MuJoCo's rule).
* **Actuators** on hinge and slide joints, with gain ``fixed`` and bias
  ``none`` or ``affine`` and no activation dynamics (``motor``, ``position``,
  ``velocity`` and ``general`` of that form): joint force
  ``gear (gain ctrl + b_0 + b_1 gear qpos + b_2 gear qvel)``, clipped to the force
  range.  Servos without a force range are linear in ``(q, qdot)``: they join
  the joint's stiffness, damping and rest position (so the implicit step takes
  them); the others are :attr:`Scene.joint_torque`.  Controls are constant: the
  keyframe's ``ctrl`` or zero.
* **Equality constraints**: ``joint`` (linear polynomial) as a
  :class:`~contactlab.reduced.constraints.Coupling`, ``connect`` as a
  loop-closing spherical joint, ``weld`` as a loop-closing fixed joint at the
  compiled relative pose.  MuJoCo's constraints are soft (``solref``,
  ``solimp``); contactlab's are hard.
* **Keyframes** (``keyframe=``): ``qpos``, ``qvel`` as the joints' ``q0`` and
  ``qdot0``.
* Anything else that changes the dynamics is reported by :class:`Report`: one
  :class:`MJCFWarning` line per feature naming the elements, or one error with
  ``strict=True``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.constraints import ConstraintTerms, Coupling, EqualityConstraint
from contactlab.reduced.kinematics import Kinematics
from contactlab.reduced.tree import Tree
from contactlab.scene import ContactParams, JointSpec
from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Plane, Shape, Sphere

Array = np.ndarray

_GEOM_NAMES = {1: "hfield", 4: "ellipsoid", 8: "sdf"}
#: geoms of these types turn into shapes
_SHAPES = {2, 3, 5, 6, 7}
WORLD = "world"


class MJCFWarning(UserWarning):
    """A feature of an MJCF model that the imported scene does not carry."""


@dataclass
class Report:
    """Features not imported, one line each with the elements that use them."""

    strict: bool
    lines: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def add(self, feature: str, element: str, why: str) -> None:
        _, elements = self.lines.setdefault(feature, (why, []))
        if element not in elements:
            elements.append(element)

    def messages(self) -> list[str]:
        out = []
        for feature, (why, elements) in self.lines.items():
            shown = ", ".join(elements[:6]) + (
                f" and {len(elements) - 6} more" if len(elements) > 6 else ""
            )
            out.append(f"MJCF {feature} not imported ({shown}): {why}")
        return out

    def finish(self) -> None:
        """Warn once per feature, or raise them all with ``strict``."""
        lines = self.messages()
        if self.strict and lines:
            raise ConfigurationError(
                "MJCF model has features that are not imported (strict=True):\n" + "\n".join(lines)
            )
        for line in lines:
            warnings.warn(line, MJCFWarning, stacklevel=3)


def _name(view: Any, fallback: str) -> str:
    return str(view.name) or fallback


def _joint(model: Any, j: int) -> str:
    return repr(_name(model.joint(j), f"joint{j}"))


def _geom(model: Any, g: int) -> str:
    """A geom by its name (or type and place in its body), its mesh and its body."""
    b = int(model.geom_bodyid[g])
    name = str(model.geom(g).name)
    what = repr(name) if name else f"{_type(model, g)} {g - int(model.body_geomadr[b])}"
    if int(model.geom_type[g]) == 7 and not name:
        m = int(model.geom_dataid[g])
        what = f"mesh {_name(model.mesh(m), f'mesh{m}')!r}"
    return f"{what} of body {_name(model.body(b), f'body{b}')!r}"


def _type(model: Any, g: int) -> str:
    kinds = {0: "plane", 2: "sphere", 3: "capsule", 5: "cylinder", 6: "box", 7: "mesh"}
    t = int(model.geom_type[g])
    return kinds.get(t) or _GEOM_NAMES.get(t, str(t))


def report_model_features(model: Any, report: Report) -> None:
    """Report what the scene will not carry: joint frictionloss, ball/free springs,
    tendons, fluid forces, gravity compensation, contact pairs and excludes."""
    for j in range(model.njnt):
        adr, t = int(model.jnt_dofadr[j]), int(model.jnt_type[j])
        n = {0: 6, 1: 3}.get(t, 1)
        if np.any(model.dof_frictionloss[adr : adr + n] > 0):
            report.add(
                "joint frictionloss",
                _joint(model, j),
                "MuJoCo bounds the friction torque by a constant; contactlab's joint friction "
                "(JointSpec.friction) bounds it by mu times the joint's load",
            )
        if t in (0, 1) and model.jnt_stiffness[j] > 0:
            report.add(
                "stiffness of ball and free joints", _joint(model, j), "no rotational spring"
            )
    for t in range(model.ntendon):
        name = repr(_name(model.tendon(t), f"tendon{t}"))
        if _tendon_coefficients(model, t) is None:
            report.add("spatial tendons", name, "fixed tendons (of joints) only")
        dynamics = [
            model.tendon_stiffness[t] > 0,
            model.tendon_damping[t] > 0,
            model.tendon_frictionloss[t] > 0,
            model.tendon_limited[t],
            getattr(model, "tendon_armature", np.zeros(model.ntendon))[t] > 0,
        ]
        if any(dynamics):
            report.add(
                "tendon stiffness, damping, frictionloss, armature and limits",
                name,
                "a fixed tendon is imported as the length in equality constraints",
            )
    if model.opt.density > 0 or model.opt.viscosity > 0 or np.any(model.opt.wind != 0):
        report.add("option density/viscosity/wind", "<option>", "no fluid forces")
    for b in np.flatnonzero(np.asarray(model.body_gravcomp) != 0):
        report.add(
            "gravcomp", repr(_name(model.body(int(b)), f"body{b}")), "no gravity compensation"
        )
    if model.npair:
        report.add("contact <pair>", f"{model.npair} pairs", "contacts come from the geoms")
    if model.nexclude:
        report.add("contact <exclude>", f"{model.nexclude} excludes", "no per-pair exclusion")


def keyframe_state(model: Any, keyframe: str | int | None) -> tuple[Array, Array, Array] | None:
    """``(qpos, qvel, ctrl)`` of a ``<key>`` by name or index, or ``None``."""
    if keyframe is None:
        return None
    names = [_name(model.key(k), str(k)) for k in range(model.nkey)]
    if isinstance(keyframe, str):
        if keyframe not in names:
            raise ConfigurationError(
                f"MJCF model has no keyframe {keyframe!r}; keyframes are {names or 'none'}"
            )
        k = names.index(keyframe)
    else:
        k = int(keyframe)
        if not 0 <= k < model.nkey:
            raise ConfigurationError(
                f"MJCF keyframe index {k} is out of range; the model has {model.nkey} keyframes"
            )
    return (
        np.array(model.key_qpos[k], dtype=float),
        np.array(model.key_qvel[k], dtype=float),
        np.array(model.key_ctrl[k], dtype=float),
    )


def spring(model: Any, joints: Sequence[int]) -> tuple[Any, Array | None]:
    """Stiffness and rest coordinates (``springref - qpos0``) of hinges and slides."""
    k, rest = [], []
    for j in joints:
        if int(model.jnt_type[j]) in (0, 1):
            return 0.0, None
        adr = int(model.jnt_qposadr[j])
        k.append(float(model.jnt_stiffness[j]))
        rest.append(float(model.qpos_spring[adr] - model.qpos0[adr]))
    if not any(k):
        return 0.0, None
    return (k[0] if len(k) == 1 else np.array(k)), np.array(rest)


# -- geoms ---------------------------------------------------------------


def geoms(
    model: Any, nodes: dict[int, Any], owners: dict[int, tuple[int, Array]], report: Report
) -> tuple[list[Shape], ContactParams | None]:
    """Shapes into ``nodes[b].shapes`` (body frames) and the static shapes; friction."""
    static: list[Shape] = []
    world_mu: set[float] = set()
    colliding: list[tuple[int, int, int, int]] = []  # (geom, owner, contype, conaffinity)
    for g in range(model.ngeom):
        contype, conaffinity = int(model.geom_contype[g]), int(model.geom_conaffinity[g])
        if contype == 0 and conaffinity == 0:
            continue  # visual only
        b = int(model.geom_bodyid[g])
        owner, in_owner = owners[b]
        kind = int(model.geom_type[g])
        if kind not in _SHAPES and kind != 0:
            report.add(
                f"{_GEOM_NAMES.get(kind, kind)} geoms",
                _geom(model, g),
                "no such collision shape (supported: plane, sphere, capsule, cylinder, box, mesh)",
            )
            continue
        if int(model.geom_condim[g]) > 3:
            report.add(
                "torsional and rolling friction (condim 4, 6)",
                _geom(model, g),
                "the contact models carry sliding friction only",
            )
        if int(model.geom_condim[g]) == 1:
            report.add("frictionless contact (condim 1)", _geom(model, g), "friction is kept")
        placed = in_owner @ _pose(model.geom_pos[g], model.geom_quat[g])
        mu = float(model.geom_friction[g, 0])
        colliding.append((g, owner, contype, conaffinity))
        if owner < 0:
            if kind == 0:
                normal = placed[:3, 2]
                static.append(Plane(normal=normal, offset=float(normal @ placed[:3, 3])))
            else:
                static.append(_shape(model, g, placed))
            world_mu.add(mu)
            continue
        if kind == 0:
            report.add("planes on moving bodies", _geom(model, g), "a plane is static geometry")
            continue
        node = nodes[owner]
        node.shapes.append(_shape(model, g, se3.inverse(node.inertial) @ placed))
        node.materials.add(mu)
    _check_filters(model, colliding, report)
    for node in nodes.values():
        if len(node.materials) > 1:
            report.add(
                "different friction on one body",
                repr(node.name),
                "the body's contacts use the largest coefficient",
            )
    if len(world_mu) > 1:
        report.add(
            "different friction on world geoms", "worldbody", "contacts use the largest coefficient"
        )
    mus = {material(n.materials): max(n.materials) for n in nodes.values() if n.materials}
    if world_mu:
        mus[WORLD] = max(world_mu)
    if not mus:
        return static, None
    pairs = {(a, b): max(mus[a], mus[b]) for a in mus for b in mus}
    return static, ContactParams(mu=max(mus.values()), mu_pairs=pairs)


def material(mus: set[float]) -> str:
    """The material name of a body whose geoms have sliding friction ``mus``."""
    return f"mjcf:mu={max(mus)!r}" if mus else "default"


def _pose(pos: Array, quat: Array) -> Array:
    return se3.make_transform(se3.quaternion_to_rotation(quat), np.asarray(pos, dtype=float))


def _shape(model: Any, g: int, pose: Array) -> Shape:
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
    return _hull(model, g, pose)


def _hull(model: Any, g: int, pose: Array) -> Mesh:
    """The convex hull of a mesh geom (MuJoCo collides meshes as their hulls)."""
    import trimesh

    m = int(model.geom_dataid[g])
    b = int(model.geom_bodyid[g])
    where = (
        f"MJCF body {_name(model.body(b), f'body{b}')!r}, mesh {_name(model.mesh(m), f'mesh{m}')!r}"
    )
    adr, n = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
    vertices = np.asarray(model.mesh_vert[adr : adr + n], dtype=float)
    try:
        hull = trimesh.convex.convex_hull(vertices)
    except Exception as err:  # qhull's errors have no common base class
        raise ConfigurationError(
            f"{where}: no convex hull of its {n} vertices ({err}); give it a solid mesh or "
            'contype="0" conaffinity="0" to keep it visual only'
        ) from err
    if not hull.is_volume or hull.volume <= 0:
        raise ConfigurationError(
            f"{where}: its vertices are flat (no volume); give it a solid mesh or "
            'contype="0" conaffinity="0" to keep it visual only'
        )
    return Mesh(vertices=np.asarray(hull.vertices), faces=np.asarray(hull.faces), pose=pose)


def _check_filters(model: Any, colliding: list[tuple[int, int, int, int]], report: Report) -> None:
    """Report geom pairs that MuJoCo's contype/conaffinity keeps apart but contactlab collides."""
    parent = {int(b): int(model.body_parentid[b]) for b in range(model.nbody)}
    for i, (g1, o1, t1, a1) in enumerate(colliding):
        for g2, o2, t2, a2 in colliding[i + 1 :]:
            if o1 == o2 or (t1 & a2) or (t2 & a1):
                continue
            b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
            if parent[b1] == b2 or parent[b2] == b1:
                continue  # jointed neighbours do not collide in either
            report.add(
                "contype/conaffinity filtering",
                f"{_geom(model, g1)} with {_geom(model, g2)}",
                "contactlab collides every pair of shapes on different bodies",
            )


# -- keyframes -----------------------------------------------------------


def apply_keyframe(
    model: Any,
    specs: list[JointSpec],
    spec_joints: list[list[int]],
    key: tuple[Array, Array, Array] | None,
    report: Report,
) -> list[JointSpec]:
    """The keyframe's ``qpos`` and ``qvel`` as ``q0`` and ``qdot0`` of each joint."""
    if key is None:
        return specs
    qpos, qvel, _ = key
    out = []
    for spec, joints in zip(specs, spec_joints):
        if not joints:
            out.append(spec)
            continue
        t0 = int(model.jnt_type[joints[0]])
        if t0 in (0, 1):
            q, qd = _rotation_state(model, spec, joints[0], qpos, qvel)
        else:
            q = np.array(
                [qpos[model.jnt_qposadr[j]] - model.qpos0[model.jnt_qposadr[j]] for j in joints]
            )
            qd = np.array([qvel[model.jnt_dofadr[j]] for j in joints])
        out.append(replace(spec, q0=q, qdot0=qd))
    return out


def _rotation_state(
    model: Any, spec: JointSpec, j: int, qpos: Array, qvel: Array
) -> tuple[Array, Array]:
    """``q``, ``qdot`` of a ball or free joint from MuJoCo's quaternions and velocities."""
    from contactlab.reduced.registry import joint_from_spec

    joint = joint_from_spec(spec)
    a, d = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
    if int(model.jnt_type[j]) == 1:
        q = se3.log_so3(se3.quaternion_to_rotation(qpos[a : a + 4]))
        omega = np.asarray(qvel[d : d + 3], dtype=float)
        return q, np.linalg.solve(se3.so3_right_jacobian(q), omega)
    # free: qpos is the body frame's world pose, qvel its world velocity and body-frame rate
    target_world = _pose(qpos[a : a + 3], qpos[a + 3 : a + 7])
    target = se3.inverse(spec.frame_parent) @ target_world
    q = joint.chart(target, np.zeros(6))
    _, S, _ = joint.evaluate(q, np.zeros(6))
    twist = np.concatenate([qvel[d + 3 : d + 6], target_world[:3, :3].T @ qvel[d : d + 3]])
    return q, np.linalg.solve(S, twist)


# -- actuators -----------------------------------------------------------


@dataclass(frozen=True)
class _Actuator:
    joint: int
    gear: float
    force0: float  # gain ctrl + b_0
    b1: float
    b2: float
    lo: float
    hi: float

    @property
    def linear(self) -> bool:
        """A servo without a force range whose force is a spring and a damper on the joint:
        ``-K (q - r) - D qdot`` (a velocity servo with a target speed is a constant force
        too, which no spring carries: it is applied as a joint torque)."""
        unlimited = not np.isfinite(self.lo) and not np.isfinite(self.hi)
        return unlimited and (self.b1 != 0 or (self.b2 != 0 and self.force0 == 0))


def _actuators(
    model: Any, key: tuple[Array, Array, Array] | None, report: Report
) -> list[_Actuator]:
    out = []
    for a in range(model.nu):
        name = repr(_name(model.actuator(a), f"actuator{a}"))
        j = int(model.actuator_trnid[a, 0])
        supported = (
            int(model.actuator_trntype[a]) in (0, 1)
            and int(model.actuator_dyntype[a]) == 0
            and int(model.actuator_gaintype[a]) == 0
            and int(model.actuator_biastype[a]) in (0, 1)
            and int(model.jnt_type[j]) in (2, 3)
        )
        if not supported:
            report.add(
                "actuators",
                name,
                "imported: joint transmission on a hinge or slide, fixed gain, affine bias, "
                "no activation dynamics",
            )
            continue
        ctrl = 0.0 if key is None else float(key[2][a])
        if model.actuator_ctrllimited[a]:
            ctrl = float(np.clip(ctrl, *model.actuator_ctrlrange[a]))
        gear = float(model.actuator_gear[a, 0])
        gain = float(model.actuator_gainprm[a, 0])
        b = np.asarray(model.actuator_biasprm[a, :3], dtype=float)
        if int(model.actuator_biastype[a]) == 0:
            b = np.zeros(3)
        lo, hi = -np.inf, np.inf
        if model.actuator_forcelimited[a]:
            lo, hi = (float(v) for v in model.actuator_forcerange[a])
        qpos0 = float(model.qpos0[model.jnt_qposadr[j]])
        # length = gear qpos = gear (q + qpos0): the constant part goes into force0
        force0 = gain * ctrl + b[0] + b[1] * gear * qpos0
        out.append(_Actuator(j, gear, force0, float(b[1]), float(b[2]), lo, hi))
    return out


def apply_actuators(
    model: Any,
    specs: list[JointSpec],
    spec_joints: list[list[int]],
    key: tuple[Array, Array, Array] | None,
    report: Report,
) -> list[JointSpec]:
    """Linear servos as joint stiffness, damping and rest (``tau = -K (q - r) - D qdot``)."""
    linear = [a for a in _actuators(model, key, Report(False)) if a.linear]
    if not linear:
        return specs
    out = []
    for spec, joints in zip(specs, spec_joints):
        mine = [a for a in linear if a.joint in joints]
        if not mine:
            out.append(spec)
            continue
        n = len(joints)
        k = np.broadcast_to(np.asarray(spec.stiffness, dtype=float), (n,)).copy()
        d = np.broadcast_to(np.asarray(spec.damping, dtype=float), (n,)).copy()
        rest = np.zeros(n) if spec.rest is None else spec.rest.copy()
        force = k * rest  # k r + constant force
        for a in mine:
            i = joints.index(a.joint)
            k[i] -= a.gear**2 * a.b1
            d[i] -= a.gear**2 * a.b2
            force[i] += a.gear * a.force0
        if np.any(k < 0) or np.any(d < 0):
            raise ConfigurationError(
                f"MJCF joint {spec.name!r}: its actuators make a negative stiffness or damping "
                f"({k}, {d}); check the signs of kp, kv and biasprm"
            )
        free = k == 0
        rest = np.where(free, 0.0, force / np.where(free, 1.0, k))
        one = n == 1
        out.append(
            replace(
                spec,
                stiffness=float(k[0]) if one else k,
                damping=float(d[0]) if one else d,
                rest=rest,
            )
        )
    return out


@dataclass(frozen=True)
class ActuatorTorque:
    """Joint forces of the actuators that are not linear servos, as ``Scene.joint_torque``.

    ``tau[index] += gear clip(force0 + b1 gear q + b2 gear qdot, lo, hi)`` [N m or N].
    """

    nq: int
    index: Array
    gear: Array
    force0: Array
    b1: Array
    b2: Array
    lo: Array
    hi: Array

    def __call__(self, t: float, q: Array, qdot: Array) -> Array:
        i, g = self.index, self.gear
        force = np.clip(self.force0 + self.b1 * g * q[i] + self.b2 * g * qdot[i], self.lo, self.hi)
        tau = np.zeros(self.nq)
        np.add.at(tau, i, g * force)
        return tau


def actuator_torque(
    model: Any,
    spec_joints: list[list[int]],
    key: tuple[Array, Array, Array] | None,
    dof_index: Array,
    report: Report,
) -> ActuatorTorque | None:
    acts = [a for a in _actuators(model, key, report) if not a.linear]
    if not acts:
        return None
    nq = int(
        sum(sum({0: 6, 1: 3}.get(int(model.jnt_type[j]), 1) for j in js) for js in spec_joints)
    )

    def col(f: Any) -> Array:
        return np.array([f(a) for a in acts], dtype=float)

    return ActuatorTorque(
        nq,
        np.array([dof_index[model.jnt_dofadr[a.joint]] for a in acts], dtype=np.int64),
        col(lambda a: a.gear),
        col(lambda a: a.force0),
        col(lambda a: a.b1),
        col(lambda a: a.b2),
        col(lambda a: a.lo),
        col(lambda a: a.hi),
    )


# -- equality constraints ------------------------------------------------


@dataclass
class Equalities:
    joints: list[JointSpec] = field(default_factory=list)
    constraints: list[Any] = field(default_factory=list)


class LinearEquality(EqualityConstraint):
    """``c . q = offset`` on the coordinates (an MJCF ``tendon`` equality of fixed tendons).

    Parameters
    ----------
    name : the constraint's name.
    coefficients : (nq,) ``c`` [-] in the scene's coordinate order (tree order).
    offset : [rad or m].
    """

    def __init__(self, name: str, coefficients: Array, offset: float) -> None:
        self.name = name
        self.coefficients = np.asarray(coefficients, dtype=float).reshape(1, -1)
        self.offset = float(offset)

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        if self.coefficients.shape[1] != tree.nq:
            raise ConfigurationError(
                f"constraint {self.name!r} has {self.coefficients.shape[1]} coefficients for "
                f"a tree of {tree.nq} coordinates"
            )
        g = self.coefficients @ kin.q - self.offset
        z = np.zeros(1)
        return ConstraintTerms(self.coefficients, z, g, z, z, z)


def _tendon_coefficients(model: Any, t: int) -> list[tuple[int, float]] | None:
    """``(joint, coefficient)`` pairs of a fixed tendon, ``None`` for a spatial one."""
    adr, n = int(model.tendon_adr[t]), int(model.tendon_num[t])
    if np.any(np.asarray(model.wrap_type[adr : adr + n]) != 1):  # mjWRAP_JOINT
        return None
    return [(int(model.wrap_objid[w]), float(model.wrap_prm[w])) for w in range(adr, adr + n)]


def _tendon_row(model: Any, t: int, dof_index: Array, nq: int) -> Array | None:
    """``c`` with ``L(q) - L(qpos0) = c . q`` for a fixed tendon of hinges and slides."""
    pairs = _tendon_coefficients(model, t)
    if pairs is None or any(int(model.jnt_type[j]) not in (2, 3) for j, _ in pairs):
        return None
    row = np.zeros(nq)
    for j, coef in pairs:
        row[dof_index[model.jnt_dofadr[j]]] += coef
    return row


def equalities(
    model: Any,
    specs: list[JointSpec],
    spec_joints: list[list[int]],
    nodes: dict[int, Any],
    owners: dict[int, tuple[int, Array]],
    dof_index: Array,
    report: Report,
) -> Equalities:
    """``joint`` equalities as couplings; ``tendon`` equalities of fixed tendons as linear
    constraints; ``connect`` and ``weld`` as loop-closing joints."""
    out = Equalities()
    if not model.neq:
        return out
    import mujoco

    single = {js[0]: s.name for s, js in zip(specs, spec_joints) if len(js) == 1}
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)  # the compiled pose, qpos0
    for e in range(model.neq):
        name = repr(_name(model.eq(e), f"equality{e}"))
        t, o1, o2 = int(model.eq_type[e]), int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        eq = np.asarray(model.eq_data[e], dtype=float)
        if not model.eq_active0[e]:
            report.add("inactive equality constraints", name, "only active ones are imported")
            continue
        if t == 2:
            ok = o1 in single and o2 in single and int(model.jnt_type[o1]) in (2, 3)
            if not ok or np.any(eq[2:5] != 0):
                report.add(
                    "joint equalities",
                    name,
                    "imported: linear, between two bodies' single hinges or slides",
                )
                continue
            out.constraints.append(Coupling(single[o2], single[o1], eq[1], eq[0]))
            continue
        if t == 3:  # L1 - L1_0 = a0 + a1 (L2 - L2_0)
            nq = len(dof_index)
            rows = [
                _tendon_row(model, o, dof_index, nq) if o >= 0 else np.zeros(nq) for o in (o1, o2)
            ]
            if rows[0] is None or rows[1] is None or np.any(eq[2:5] != 0):
                report.add(
                    "tendon equalities",
                    name,
                    "imported: linear, of fixed tendons of hinges and slides",
                )
                continue
            label = f"tendon:{_name(model.eq(e), str(e))}"
            out.constraints.append(LinearEquality(label, rows[0] - eq[1] * rows[1], eq[0]))
            continue
        if t not in (0, 1) or int(model.eq_objtype[e]) != 1:
            report.add(
                "equality constraints", name, "imported: joint, and connect and weld of bodies"
            )
            continue
        ends = [owners[b][0] for b in (o1, o2)]
        if ends[0] == ends[1]:
            report.add("equality constraints", name, "its two bodies are welded together")
            continue
        frames = [_inertial_world(data, o) for o in ends]
        if t == 0:  # connect: the anchor of body 1 (eq[0:3]) and that of body 2 (eq[3:6])
            points = [
                se3.make_transform(
                    None, data.xpos[b] + data.xmat[b].reshape(3, 3) @ eq[3 * k : 3 * k + 3]
                )
                for k, b in enumerate((o1, o2))
            ]
            kind = "spherical"
        else:  # weld: the relative pose of the two bodies at the compiled pose is kept
            if not _weld_is_compiled_pose(data, o1, o2, eq):
                report.add(
                    "weld relpose", name, "imported: welds that keep the compiled relative pose"
                )
                continue
            points = [frames[1], frames[1]]
            kind = "fixed"
        order = (0, 1) if ends[1] >= 0 else (1, 0)  # the child must be a body
        pa, ch = order
        out.joints.append(
            JointSpec(
                f"equality:{_name(model.eq(e), str(e))}",
                kind,
                None if ends[pa] < 0 else nodes[ends[pa]].name,
                nodes[ends[ch]].name,
                frame_parent=se3.inverse(frames[pa]) @ points[pa],
                frame_child=se3.inverse(frames[ch]) @ points[ch],
                closes_loop=True,
            )
        )
    return out


def _weld_is_compiled_pose(data: Any, b1: int, b2: int, eq: Array) -> bool:
    """Whether a weld's ``relpose`` (eq[3:10]) is body 2's pose in body 1 at ``qpos0``."""
    R1 = data.xmat[b1].reshape(3, 3)
    R2 = data.xmat[b2].reshape(3, 3)
    pos = R1.T @ (data.xpos[b2] - data.xpos[b1])
    rel = R1.T @ R2
    return bool(
        np.allclose(eq[3:6], pos, atol=1e-9)
        and np.allclose(se3.quaternion_to_rotation(eq[6:10]), rel, atol=1e-9)
    )


def _inertial_world(data: Any, owner: int) -> Array:
    """World pose of a contactlab body frame (the inertial frame of its MuJoCo body)."""
    if owner < 0:
        return np.eye(4)
    return se3.make_transform(data.ximat[owner].reshape(3, 3), data.xipos[owner])
