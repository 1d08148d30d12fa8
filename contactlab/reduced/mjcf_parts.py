"""The parts of an MJCF model besides bodies, joints, geoms and equality constraints.

Part of :mod:`contactlab.reduced.mjcf` (geoms: :mod:`contactlab.reduced.mjcf_geoms`,
equality constraints: :mod:`contactlab.reduced.mjcf_constraints`).

* **Actuators** on hinge and slide joints, with gain ``fixed`` and bias
  ``none`` or ``affine`` and no activation dynamics (``motor``, ``position``,
  ``velocity`` and ``general`` of that form): joint force
  ``gear (gain ctrl + b_0 + b_1 gear qpos + b_2 gear qvel)``, clipped to the force
  range.  Servos without a force range are linear in ``(q, qdot)``: they join
  the joint's stiffness, damping and rest position (so the implicit step takes
  them); the others are :attr:`Scene.joint_torque`.  Controls are constant: the
  keyframe's ``ctrl`` or zero.
* **Keyframes** (``keyframe=``): ``qpos``, ``qvel`` as the joints' ``q0`` and
  ``qdot0``.
* **Joint springs**: ``stiffness`` with the rest position ``springref - qpos0``.
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
from contactlab.scene import JointSpec

Array = np.ndarray

#: geom types without a contactlab shape
GEOM_NAMES = {1: "hfield", 4: "ellipsoid", 8: "sdf"}


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


def name_of(view: Any, fallback: str) -> str:
    """The name of a named view (``model.body(i)``, ...), or ``fallback`` when unnamed."""
    return str(view.name) or fallback


def pose(pos: Array, quat: Array) -> Array:
    """The transform of a MuJoCo position and quaternion ``(w, x, y, z)``."""
    return se3.make_transform(se3.quaternion_to_rotation(quat), np.asarray(pos, dtype=float))


def tendon_coefficients(model: Any, t: int) -> list[tuple[int, float]] | None:
    """``(joint, coefficient)`` pairs of a fixed tendon, ``None`` for a spatial one."""
    adr, n = int(model.tendon_adr[t]), int(model.tendon_num[t])
    if np.any(np.asarray(model.wrap_type[adr : adr + n]) != 1):  # mjWRAP_JOINT
        return None
    return [(int(model.wrap_objid[w]), float(model.wrap_prm[w])) for w in range(adr, adr + n)]


def _joint(model: Any, j: int) -> str:
    return repr(name_of(model.joint(j), f"joint{j}"))


def geom_label(model: Any, g: int) -> str:
    """A geom by its name (or type and place in its body), its mesh and its body."""
    b = int(model.geom_bodyid[g])
    name = str(model.geom(g).name)
    what = repr(name) if name else f"{geom_type(model, g)} {g - int(model.body_geomadr[b])}"
    if int(model.geom_type[g]) == 7 and not name:
        m = int(model.geom_dataid[g])
        what = f"mesh {name_of(model.mesh(m), f'mesh{m}')!r}"
    return f"{what} of body {name_of(model.body(b), f'body{b}')!r}"


def geom_type(model: Any, g: int) -> str:
    kinds = {0: "plane", 2: "sphere", 3: "capsule", 5: "cylinder", 6: "box", 7: "mesh"}
    t = int(model.geom_type[g])
    return kinds.get(t) or GEOM_NAMES.get(t, str(t))


def report_model_features(model: Any, report: Report) -> None:
    """Report what the scene will not carry: ball/free frictionloss and springs,
    tendons, fluid forces, gravity compensation, contact pairs and excludes."""
    for j in range(model.njnt):
        adr, t = int(model.jnt_dofadr[j]), int(model.jnt_type[j])
        n = {0: 6, 1: 3}.get(t, 1)
        if t in (0, 1) and np.any(model.dof_frictionloss[adr : adr + n] > 0):
            report.add(
                "frictionloss of ball and free joints",
                _joint(model, j),
                "MuJoCo bounds the angular (and world linear) velocities' friction, contactlab's "
                "coordinates are exponential coordinates (hinges and slides carry it)",
            )
        if t in (0, 1) and model.jnt_stiffness[j] > 0:
            report.add(
                "stiffness of ball and free joints", _joint(model, j), "no rotational spring"
            )
    for t in range(model.ntendon):
        name = repr(name_of(model.tendon(t), f"tendon{t}"))
        if tendon_coefficients(model, t) is None:
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
            "gravcomp", repr(name_of(model.body(int(b)), f"body{b}")), "no gravity compensation"
        )
    if model.npair:
        report.add("contact <pair>", f"{model.npair} pairs", "contacts come from the geoms")
    if model.nexclude:
        report.add("contact <exclude>", f"{model.nexclude} excludes", "no per-pair exclusion")


def keyframe_state(model: Any, keyframe: str | int | None) -> tuple[Array, Array, Array] | None:
    """``(qpos, qvel, ctrl)`` of a ``<key>`` by name or index, or ``None``."""
    if keyframe is None:
        return None
    names = [name_of(model.key(k), str(k)) for k in range(model.nkey)]
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


# -- keyframes -----------------------------------------------------------


def apply_keyframe(
    model: Any,
    specs: list[JointSpec],
    spec_joints: list[list[int]],
    key: tuple[Array, Array, Array] | None,
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
    from contactlab.joints.kinds import joint_from_spec

    joint = joint_from_spec(spec)
    a, d = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j])
    if int(model.jnt_type[j]) == 1:
        q = se3.log_so3(se3.quaternion_to_rotation(qpos[a : a + 4]))
        omega = np.asarray(qvel[d : d + 3], dtype=float)
        return q, np.linalg.solve(se3.so3_right_jacobian(q), omega)
    # free: qpos is the body frame's world pose, qvel its world velocity and body-frame rate
    target_world = pose(qpos[a : a + 3], qpos[a + 3 : a + 7])
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
        name = repr(name_of(model.actuator(a), f"actuator{a}"))
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
