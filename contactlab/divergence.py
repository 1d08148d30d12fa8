"""The divergence guard: stop a run at the first physically absurd state.

A step can succeed numerically (every solver status ``optimal``, every number
finite) and still produce nonsense: a stiff Baumgarte term or a huge step size
pumps energy into the scene, joints fly apart, bodies fall through the floor.
:class:`DivergenceGuard` checks the state after every step against bounds
computed once from the scene and its initial state, and raises
:class:`~contactlab.errors.DivergenceError` (run status ``"diverged"``) at the
first step that breaks one.

Scales (from the initial state)
    ``r_i``
        size of body ``i``: the largest bounding radius of its shapes about its
        frame, or, without shapes, the radius of the solid sphere with its
        largest principal moment, ``sqrt(5 I_max / (2 m))`` (0 for a body
        without shapes, mass or inertia, as model files have).
    ``L``
        length scale of the scene: the diagonal of the box holding every body
        frame, joint anchor and static shape (for a plane, the foot of every
        body on it), or the largest body diameter ``2 r_i``, whichever is larger.
    ``S``
        energy scale [J]: ``K_0 + |g| L sum_i m_i + L sum_i |f_i| + pi sum_i |tau_i|
        + |V_f,0|``: the initial kinetic energy, the gravitational energy of
        lifting every body across the scene, the work of the force elements'
        initial forces ``f_i`` and torques ``tau_i`` across the scene (half a
        turn for torques), and the magnitude of their initial potential
        energy (springs, muscles, point forces).

Bounds (the constants are module attributes, documented in ``docs/reliability.md``)
    energy
        ``E(t) - E(0) <= ENERGY_FACTOR * S``.  A passive scene cannot gain
        energy at all; the factor leaves room for the energy a stabilised
        integrator legitimately adds.
    drift
        ``constraint_error <= max(L, 1)`` [m or rad]: a joint or loop whose
        sides are further apart than the scene is large (or turned by more
        than a radian) is broken.
    joint separation
        for every joint whose two frames coincide when it holds (revolute,
        continuous, spherical, universal, fixed; loop closures included), the
        distance between the frames' origins grows by at most
        ``2 max(r_parent, r_child)`` [m] from its initial value: sides further
        apart than the larger of the two bodies is large are torn, whatever
        the scene's overall size (10-cm links are torn at about 10 cm).
    penetration
        a contact between bodies ``a`` and ``b`` deeper than ``min(r_a, r_b)``
        (the world counts as infinitely large): the smaller body's centre has
        crossed the other's surface, it is more than half way through.
    speed
        ``|v_i| <= sqrt(2 K(t) / m_i)`` and ``|omega_i| <= sqrt(2 K(t) / I_min,i)``
        with ``K(t) = (ENERGY_FACTOR + 1) S + |g| sum_j m_j (v_0 t + |g| t^2 / 2)``:
        the speed a body would reach holding all the kinetic energy the energy
        bound allows plus what a free fall over ``t`` adds (none for a body
        without mass or with a zero moment).

Scenes with active inputs (a force element or constraint whose class sets
``supplies_energy = True``, such as prescribed motion or a speed drive, or
joint torques in ``Scene.joint_torque``) do work that no potential
records.  When every input is a motion of known speed (a prescribed joint
``trajectory(t)``, a prescribed twist ``profile(t)``, a driven attachment's
pose, a speed drive's target speed plus ``bias / gain``), its supply is
bounded by the kinetic energy of every body moving at the fastest driven
speed, ``K_d = 1/2 sum_i m_i (v_d + w_d L)^2 + 1/2 sum_i I_max,i w_d^2``
(``v_d``, ``w_d``: the largest linear and angular drive speeds over the run),
which is added to ``S``; with an input of unknown supply (``joint_torque``,
any other element) the energy and speed bounds are off.  The other bounds
always apply.

A scene whose scales are not finite (a parameter such as ``height=1e300``
overflows them) is refused before the first step: its bounds would be
infinite and the guard silently off.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab import _guard_kernels as GK
from contactlab.errors import ConfigurationError, DivergenceError
from contactlab.scene import Scene

Array = NDArray[np.float64]

#: allowed energy gain as a multiple of the scene's energy scale S
ENERGY_FACTOR = 10.0
#: smallest energy scale [J]: a scene at rest with no gravity and no springs
ENERGY_FLOOR = 1e-9
#: smallest drift bound [m or rad]
DRIFT_FLOOR = 1.0
#: joint kinds whose two frames coincide when the joint holds (separation checked)
COINCIDENT_KINDS = frozenset(
    {"revolute", "continuous", "spherical", "spherical_euler", "universal", "fixed"}
)
#: kinds whose prescribed coordinate is an angle (a drive rate in rad/s)
ROTATIONAL_KINDS = frozenset(
    {"revolute", "continuous", "spherical", "spherical_euler", "universal"}
)
#: samples of a drive's speed over the run
DRIVE_SAMPLES = 257

FIX = (
    "try a smaller --dt, a smaller stabilization gain, or another --solver; "
    "--no-divergence-guard keeps the run going"
)


def body_radii(scene: Scene) -> Array:
    """(nb,) size ``r_i`` of every body [m] (see the module docstring)."""
    radii = np.zeros(scene.n_bodies)
    for i, body in enumerate(scene.bodies):
        r = 0.0
        for shape in body.shapes:
            try:
                reach = float(shape.bounding_radius())
            except NotImplementedError:
                continue
            r = max(r, reach + float(np.linalg.norm(shape.pose[:3, 3])))
        if r <= 0.0 and body.mass > 0 and np.max(body.inertia) > 0:
            r = float(np.sqrt(2.5 * np.max(body.inertia) / body.mass))
        # else no shapes and no mass distribution to measure (a massless link): size 0
        radii[i] = r
    return radii


def has_active_inputs(scene: Scene) -> bool:
    """Whether the scene holds elements that do work no potential records."""
    elements = (*scene.forces, *scene.constraints, *scene.attachments)
    if any(getattr(e, "supplies_energy", False) for e in elements):
        return True
    return scene.joint_torque is not None


def _static_points(scene: Scene, bodies: Array) -> Array:
    """Points of the static geometry: each body's foot on every plane, other shapes' origins."""
    points = []
    for shape in scene.static_shapes:
        R, p = shape.pose[:3, :3], shape.pose[:3, 3]
        normal = getattr(shape, "normal", None)
        if normal is None:
            points.append(p[None, :])
            continue
        n = R @ np.asarray(normal, dtype=float)
        offset = float(getattr(shape, "offset", 0.0)) + float(n @ p)
        points.append(bodies - np.outer(bodies @ n - offset, n))
    return np.vstack(points) if points else np.zeros((0, 3))


def _joint_anchors(scene: Scene, E: Array) -> Array:
    points = []
    for joint in scene.joints:
        for name, frame in ((joint.parent, "frame_parent"), (joint.child, "frame_child")):
            local = getattr(joint, frame, None)
            if local is None:
                continue
            local = np.asarray(local, dtype=float)
            if local.shape != (4, 4):
                continue
            i = scene.body_index(name)
            world = local if i < 0 else E[i] @ local
            points.append(world[:3, 3])
    return np.array(points).reshape(-1, 3)


@dataclass(frozen=True)
class JointFrames:
    """The joints checked for separation: body indices (-1: world) and frame origins."""

    names: tuple[str, ...]
    parent: NDArray[np.int64]
    child: NDArray[np.int64]
    anchor_parent: Array  # (k, 3) in the parent's frame (world for -1)
    anchor_child: Array  # (k, 3) in the child's frame
    initial: Array  # (k,) separation at t = 0 [m]
    bound: Array  # (k,) allowed growth [m]

    def separation(self, E: Array) -> Array:
        """(k,) distance between each joint's two frame origins at body transforms ``E``."""
        k = len(self.names)
        # the world (index -1) is the identity appended after the bodies
        T = np.concatenate([E, _IDENTITY])[self._both]
        world = (T[:, :3, :3] @ self._anchors[:, :, None])[:, :, 0] + T[:, :3, 3]
        gap = world[:k] - world[k:]
        return np.sqrt((gap * gap).sum(axis=1))

    @cached_property
    def _both(self) -> NDArray[np.int64]:
        return np.concatenate([self.parent, self.child])

    @cached_property
    def _anchors(self) -> Array:
        return np.concatenate([self.anchor_parent, self.anchor_child])


_IDENTITY = np.eye(4)[None]
#: the compiled verdict's arguments of a check without joints or contacts
_NO_JOINTS: tuple[Any, ...] = (
    np.zeros(0, dtype=np.int64),
    np.zeros((0, 3)),
    np.zeros(0),
    np.zeros(0),
)
_NO_E = np.zeros((0, 4, 4))


_F64 = np.dtype(np.float64)
_I64 = np.dtype(np.int64)
_NO_FLOAT = np.zeros(0)
_NO_INT = np.zeros(0, dtype=np.int64)


def _flat(values: Any, dtype: np.dtype[Any]) -> Any:
    """``values`` as a contiguous 1-D array of ``dtype`` (itself when it already is one)."""
    if (
        type(values) is np.ndarray
        and values.dtype == dtype
        and values.ndim == 1
        and values.flags.c_contiguous
    ):
        return values
    return np.ascontiguousarray(values, dtype=dtype).reshape(-1)


def _contact_arrays(contacts: Any) -> tuple[Array, NDArray[np.int64], NDArray[np.int64]]:
    """A contact set's distances and body indices as the compiled verdict takes them: empty
    arrays without contacts, the world's index (-1) for a set without body indices."""
    distance = getattr(contacts, "distance", None)
    if distance is None:
        return _NO_FLOAT, _NO_INT, _NO_INT
    distance = _flat(distance, _F64)
    n = distance.size
    if n == 0:
        return _NO_FLOAT, _NO_INT, _NO_INT
    return (
        distance,
        _bodies(getattr(contacts, "body_a", None), n),
        _bodies(getattr(contacts, "body_b", None), n),
    )


def _bodies(index: Any, n: int) -> NDArray[np.int64]:
    """A contact set's body indices as the compiled verdict takes them (the world's, -1,
    when the set has none)."""
    return np.full(n, -1, dtype=np.int64) if index is None else _flat(index, _I64)


def joint_frames(scene: Scene, E: Array, radii: Array) -> JointFrames:
    """The scene's joints of :data:`COINCIDENT_KINDS` at body transforms ``E``."""
    names, parent, child, a_p, a_c, bound = [], [], [], [], [], []
    for joint in scene.joints:
        if getattr(joint, "kind", None) not in COINCIDENT_KINDS:
            continue
        i = -1 if joint.parent is None else scene.body_index(joint.parent)
        k = scene.body_index(joint.child)
        if k < 0:
            continue
        frame_p = np.eye(4) if joint.frame_parent is None else np.asarray(joint.frame_parent)
        frame_c = np.eye(4) if joint.frame_child is None else np.asarray(joint.frame_child)
        names.append(joint.name)
        parent.append(i)
        child.append(k)
        a_p.append(frame_p[:3, 3])
        a_c.append(frame_c[:3, 3])
        bound.append(2.0 * max(radii[k], radii[i] if i >= 0 else 0.0))
    frames = JointFrames(
        tuple(names),
        np.array(parent, dtype=np.int64),
        np.array(child, dtype=np.int64),
        np.array(a_p, dtype=float).reshape(-1, 3),
        np.array(a_c, dtype=float).reshape(-1, 3),
        np.zeros(len(names)),
        np.array(bound, dtype=float),
    )
    initial = frames.separation(E) if names else np.zeros(0)
    return JointFrames(
        frames.names,
        frames.parent,
        frames.child,
        frames.anchor_parent,
        frames.anchor_child,
        initial,
        frames.bound,
    )


def _rates(values: list[Any]) -> Array:
    return np.abs(np.array([np.asarray(v, dtype=float).reshape(-1) for v in values]))


def drive_speeds(scene: Scene, horizon: float) -> tuple[float, float] | None:
    """``(v_d, w_d)``: the largest linear [m/s] and angular [rad/s] speed the inputs drive.

    Sampled over ``[0, horizon]`` s; ``None`` when an input's supply is unknown
    (``Scene.joint_torque``, or an element of no known kind).
    """
    if scene.joint_torque is not None:
        return None
    times = np.linspace(0.0, max(float(horizon), 0.0), DRIVE_SAMPLES)
    kinds = {j.name: j.kind for j in scene.joints}
    v_d = w_d = 0.0
    for e in (*scene.forces, *scene.constraints, *scene.attachments):
        if not getattr(e, "supplies_energy", False):
            continue
        trajectory = getattr(e, "trajectory", None)
        profile = getattr(e, "profile", None)
        if trajectory is not None and hasattr(e, "joint"):
            rate = float(_rates([trajectory(t)[1] for t in times]).max(initial=0.0))
            if kinds.get(e.joint) in ROTATIONAL_KINDS:
                w_d = max(w_d, rate)
            else:
                v_d = max(v_d, rate)
        elif profile is not None and hasattr(e, "components"):
            comps = np.asarray(e.components).reshape(-1)
            rates = _rates([profile(t)[0] for t in times])
            rates = np.broadcast_to(rates, (len(times), comps.size))
            w_d = max(w_d, float(rates[:, comps < 3].max(initial=0.0)))
            v_d = max(v_d, float(rates[:, comps >= 3].max(initial=0.0)))
        elif trajectory is not None and hasattr(e, "body"):  # a driven attachment: its pose
            poses = np.array([np.asarray(trajectory(t), dtype=float) for t in times])
            dt = np.diff(times)
            if dt.size and dt[0] > 0:
                v_d = max(
                    v_d,
                    float((np.linalg.norm(np.diff(poses[:, :3, 3], axis=0), axis=1) / dt).max()),
                )
                turn = np.einsum("kji,kjl->kil", poses[:-1, :3, :3], poses[1:, :3, :3])
                cos = np.clip((np.trace(turn, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
                w_d = max(w_d, float((np.arccos(cos) / dt).max()))
        elif all(hasattr(e, a) for a in ("speed", "bias", "gain")):
            gain = float(e.gain)
            if not gain > 0:
                return None
            v_d = max(v_d, abs(float(e.speed)) + abs(float(e.bias)) / gain)
        else:
            return None
    return v_d, w_d


def drive_supply(scene: Scene, length: float, horizon: float) -> float | None:
    """``K_d`` [J]: the kinetic energy of every body at the fastest driven speed (or ``None``)."""
    speeds = drive_speeds(scene, horizon)
    if speeds is None:
        return None
    v_d, w_d = speeds
    masses = np.array([b.mass for b in scene.bodies], dtype=float)
    inertia = np.array([float(np.max(b.inertia)) for b in scene.bodies])
    return float(0.5 * masses.sum() * (v_d + w_d * length) ** 2 + 0.5 * inertia.sum() * w_d**2)


@dataclass(frozen=True)
class DivergenceBounds:
    """The scales and bounds of one scene (see the module docstring)."""

    names: tuple[str, ...]
    length_scale: float
    energy_scale: float
    energy_bound: float | None
    drift_bound: float
    radii: Array
    masses: Array
    min_inertia: Array
    gravity: float
    initial_speed: float
    active: bool
    joints: JointFrames | None = None


def force_work_scale(scene: Scene, E: Array, phi: Array, length: float) -> float:
    """``L sum_i |f_i| + pi sum_i |tau_i|`` [J] of the force elements' wrenches at ``E, phi``."""
    if not scene.forces:
        return 0.0
    from contactlab.forces.base import total_wrench

    wrench = total_wrench(list(scene.forces), scene, E, phi)
    torque = np.linalg.norm(wrench[:, :3], axis=1).sum()
    force = np.linalg.norm(wrench[:, 3:], axis=1).sum()
    return float(length * force + np.pi * torque)


def scene_bounds(
    scene: Scene,
    E: Array,
    phi: Array,
    initial: dict[str, float],
    force_energy: float,
    horizon: float | None = None,
) -> DivergenceBounds:
    """The bounds of ``scene`` from its initial body state and metrics.

    Parameters
    ----------
    E, phi : (nb, 4, 4) initial body transforms and (nb, 6) twists.
    initial : the formulation's state metrics at t = 0 (``kinetic_energy``).
    force_energy : the force elements' potential energy at t = 0 [J].
    horizon : end time of the run [s] (the scene's duration by default): drive
        speeds are sampled up to it.

    Raises
    ------
    ConfigurationError
        When a scale is not finite (the guard could bound nothing).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        bounds = _scene_bounds(scene, E, phi, initial, force_energy, horizon)
    for what, value in (
        ("length scale [m]", bounds.length_scale),
        ("energy scale [J]", bounds.energy_scale),
    ):
        if not np.isfinite(value):
            raise ConfigurationError(
                f"scene {scene.name!r} is too large to bound: its {what} is {value:g} "
                f"({suspect_parameters(scene)}); choose parameters in range, or pass "
                "--no-divergence-guard to run it unguarded"
            )
    return bounds


#: a parameter this large (or small, but nonzero) is named as the likely cause of a scene
#: whose scales or initial state leave the floating-point range
EXTREME = 1e100


def suspect_parameters(scene: Scene) -> str:
    """The scene's numeric parameters beyond :data:`EXTREME` in magnitude (or below its
    inverse), as ``"height=1e+300"`` text, or a general hint when none is."""
    found = extreme_parameters(scene)
    if found:
        return "the parameter " + ", ".join(found) + " is beyond floating-point range"
    return "a parameter beyond floating-point range?"


def extreme_parameters(scene: Scene) -> list[str]:
    """``key=value`` of the scene's numeric parameters beyond :data:`EXTREME` in magnitude,
    or nonzero below its inverse."""
    found = []
    for key, value in (scene.params or {}).items():
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if isinstance(item, bool) or not isinstance(item, (int, float, np.number)):
                continue
            size = abs(float(item))
            if not np.isfinite(size) or size > EXTREME or 0 < size < 1 / EXTREME:
                found.append(f"{key}={value!r}")
                break
    return found


def _scene_bounds(
    scene: Scene,
    E: Array,
    phi: Array,
    initial: dict[str, float],
    force_energy: float,
    horizon: float | None,
) -> DivergenceBounds:
    radii = body_radii(scene)
    bodies = E[:, :3, 3]
    points = np.vstack([bodies, _joint_anchors(scene, E), _static_points(scene, bodies)])
    extent = float(np.linalg.norm(np.ptp(points, axis=0))) if len(points) else 0.0
    length = max(extent, 2.0 * float(radii.max(initial=0.0)))
    masses = np.array([b.mass for b in scene.bodies], dtype=float)
    g = float(np.linalg.norm(scene.gravity))
    kinetic = float(initial.get("kinetic_energy", 0.0))
    scale = kinetic + g * length * float(masses.sum()) + abs(force_energy)
    scale += force_work_scale(scene, E, phi, length)
    active = has_active_inputs(scene)
    supply = None
    if active:
        supply = drive_supply(scene, length, scene.duration if horizon is None else horizon)
        scale += supply or 0.0
    scale = max(scale, ENERGY_FLOOR)
    speed0 = float(np.linalg.norm(phi[:, 3:], axis=1).max(initial=0.0))
    return DivergenceBounds(
        names=tuple(b.name for b in scene.bodies),
        length_scale=length,
        energy_scale=scale,
        energy_bound=None if active and supply is None else ENERGY_FACTOR * scale,
        drift_bound=max(length, DRIFT_FLOOR),
        radii=radii,
        masses=masses,
        min_inertia=np.array([float(np.min(b.inertia)) for b in scene.bodies]),
        gravity=g,
        initial_speed=speed0,
        active=active,
        joints=joint_frames(scene, E, radii),
    )


class DivergenceGuard:
    """Checks every step's state against :class:`DivergenceBounds`."""

    def __init__(self, bounds: DivergenceBounds, initial_energy: float) -> None:
        self.bounds = bounds
        self.initial_energy = float(initial_energy)
        # per body: the radius (the world, index -1, last and unbounded) and the inverse
        # mass and least moment of inertia (a massless body of a model file: no bound)
        self._radii = np.append(bounds.radii, np.inf)
        self._least_radius = float(self._radii.min())
        with np.errstate(divide="ignore"):
            self._inv_mass = np.where(bounds.masses > 0, 1.0 / bounds.masses, np.inf)
            self._inv_inertia = np.where(bounds.min_inertia > 0, 1.0 / bounds.min_inertia, np.inf)
        # the least of each (inf without bodies): a state whose largest squared speeds are
        # within budget times these is within every body's bound, with no search for one
        self._least_inv_mass = float(self._inv_mass.min(initial=np.inf))
        self._least_inv_inertia = float(self._inv_inertia.min(initial=np.inf))
        # the compiled verdict's flat arrays: the energy bound (inf: none), the checked
        # joints' body indices and frame origins (none without joints)
        self._energy_bound = np.inf if bounds.energy_bound is None else bounds.energy_bound
        joints = bounds.joints
        if joints is not None and joints.names:
            self._joint_args: tuple[Any, ...] = (
                np.ascontiguousarray(joints._both, dtype=np.int64),
                np.ascontiguousarray(joints._anchors, dtype=np.float64),
                np.ascontiguousarray(joints.initial, dtype=np.float64),
                np.ascontiguousarray(joints.bound, dtype=np.float64),
            )
        else:
            self._joint_args = _NO_JOINTS
        self._mass_gravity = bounds.gravity * float(bounds.masses.sum())
        self._drift_bound = bounds.drift_bound
        #: whether the speeds are bounded (not with an input of unknown supply)
        self._speeds = bounds.energy_bound is not None

    def _fail(self, index: int, t: float, quantity: str, value: float, bound: float) -> None:
        raise DivergenceError(
            f"step {index} (t = {t:.6g} s) diverged: {quantity} = {value:.3g} exceeds the "
            f"bound {bound:.3g}; {FIX}",
            step=index,
            quantity=quantity,
            value=value,
            bound=bound,
        )

    def _gain_drift(self, row: dict[str, Any]) -> tuple[float, float]:
        """The energy gain ``E(t) - E(0)`` [J] and the joint/loop drift of a step's metrics."""
        energy = self.initial_energy
        return float(row.get("total_energy", energy)) - energy, float(
            row.get("constraint_error", 0.0)
        )

    def _budget(self, t: float) -> float:
        """``2 K(t)`` [J] at time ``t``: twice the kinetic energy the speed bounds allow."""
        b = self.bounds
        fall = self._mass_gravity * (b.initial_speed * t + 0.5 * b.gravity * t * t)
        return 2.0 * ((ENERGY_FACTOR + 1.0) * b.energy_scale + fall)

    def check(
        self,
        index: int,
        t: float,
        row: dict[str, Any],
        phi: Array,
        contacts: Any,
        E: Array | None = None,
    ) -> None:
        """Raise :class:`DivergenceError` if the state after step ``index`` is absurd.

        ``row`` holds the step's metrics, ``phi`` the (nb, 6) body twists,
        ``contacts`` the step's contact set (or ``None``) and ``E`` the (nb, 4, 4)
        body transforms (the joint separations are checked when given).

        The verdict is the compiled kernel's (:meth:`verdict`); a broken state is checked
        again by :meth:`check_reference`, which raises the error naming the bound.
        """
        if self.verdict(index, t, row, phi, contacts, E) != GK.OK:
            self.check_reference(index, t, row, phi, contacts, E)

    def verdict(
        self,
        index: int,
        t: float,
        row: dict[str, Any],
        phi: Array,
        contacts: Any,
        E: Array | None = None,
    ) -> int:
        """The compiled verdict (:func:`contactlab._guard_kernels.verdict`) on the state
        after step ``index`` (the arguments of :meth:`check`):
        :data:`~contactlab._guard_kernels.OK` or the first bound broken."""
        gain, drift = self._gain_drift(row)
        joints = self._joint_args if E is not None else _NO_JOINTS
        if E is None or joints is _NO_JOINTS:
            E = _NO_E
        elif not (E.dtype == _F64 and E.flags.c_contiguous):
            E = np.ascontiguousarray(E, dtype=np.float64)
        distance, body_a, body_b = _contact_arrays(contacts)
        speeds = self._speeds
        if not (phi.dtype == _F64 and phi.flags.c_contiguous):
            phi = np.ascontiguousarray(phi, dtype=np.float64)
        return int(
            GK.verdict(
                gain, self._energy_bound, drift, self._drift_bound, E, *joints,
                distance, body_a, body_b, self._radii, self._least_radius,
                phi, speeds, self._budget(t) if speeds else 0.0, self._inv_mass,
                self._inv_inertia, self._least_inv_mass, self._least_inv_inertia,
            )
        )  # fmt: skip

    def verdict_of_arrays(
        self,
        t: float,
        total_energy: float,
        drift: float,
        phi: Array,
        distance: Array,
        body_a: NDArray[np.int64],
        body_b: NDArray[np.int64],
    ) -> int:
        """:meth:`verdict` without the joints' separations (``E`` not given) on a step's
        total energy and joint/loop drift (its row's ``total_energy`` and
        ``constraint_error``), twists ``phi`` and contact arrays already in the kernel's
        layout (C-contiguous float64 ``phi`` and ``distance``, int64 body indices): the
        same verdict without the row's and the contact set's conversions."""
        speeds = self._speeds
        return int(
            GK.verdict(
                total_energy - self.initial_energy, self._energy_bound, drift,
                self._drift_bound, _NO_E, *_NO_JOINTS, distance, body_a, body_b,
                self._radii, self._least_radius, phi, speeds,
                self._budget(t) if speeds else 0.0, self._inv_mass, self._inv_inertia,
                self._least_inv_mass, self._least_inv_inertia,
            )
        )  # fmt: skip

    def check_reference(
        self,
        index: int,
        t: float,
        row: dict[str, Any],
        phi: Array,
        contacts: Any,
        E: Array | None = None,
    ) -> None:
        """:meth:`check` in numpy: the reference of the compiled verdict, and the
        message of the error it raises."""
        b = self.bounds
        gain, drift = self._gain_drift(row)
        if b.energy_bound is not None and gain > b.energy_bound:
            self._fail(index, t, "energy gain E(t) - E(0) [J]", gain, b.energy_bound)
        if drift > b.drift_bound:
            self._fail(index, t, "joint/loop drift [m or rad]", drift, b.drift_bound)
        if E is not None and b.joints is not None and b.joints.names:
            self._check_joints(index, t, E, b.joints)
        self._check_penetration(index, t, contacts)
        if b.energy_bound is not None:
            self._check_speed(index, t, phi)

    def _check_joints(self, index: int, t: float, E: Array, joints: JointFrames) -> None:
        growth = joints.separation(E) - joints.initial
        over = growth - joints.bound
        k = int(np.argmax(over))
        if not over[k] <= 0.0:
            quantity = f"separation of joint {joints.names[k]!r} [m]"
            self._fail(index, t, quantity, float(growth[k]), float(joints.bound[k]))

    def _check_penetration(self, index: int, t: float, contacts: Any) -> None:
        distance = getattr(contacts, "distance", None)
        if distance is None or np.size(distance) == 0:
            return
        depth = -np.asarray(distance, dtype=float).reshape(-1)
        if depth.max() <= self._least_radius:  # within every body's bound (NaN: checked)
            return
        radii = self._radii  # index -1: the world
        a = np.asarray(getattr(contacts, "body_a", np.full(depth.size, -1)), dtype=np.int64)
        c = np.asarray(getattr(contacts, "body_b", np.full(depth.size, -1)), dtype=np.int64)
        bound = np.minimum(radii[a], radii[c])
        over = depth - bound
        k = int(np.argmax(over))
        if over[k] > 0.0:
            self._fail(index, t, "penetration depth [m]", float(depth[k]), float(bound[k]))

    def _check_speed(self, index: int, t: float, phi: Array) -> None:
        b = self.bounds
        if phi.shape[0] == 0:  # a scene without bodies moves nothing
            return
        budget = self._budget(t)
        # squared speeds against squared bounds (sqrt(budget / m)): the same test, fewer
        # operations on the per-step path
        linear2 = np.einsum("ij,ij->i", phi[:, 3:], phi[:, 3:])
        angular2 = np.einsum("ij,ij->i", phi[:, :3], phi[:, :3])
        if (
            linear2.max() <= budget * self._least_inv_mass
            and angular2.max() <= budget * self._least_inv_inertia
        ):  # every body within its bound (NaN compares false: searched below)
            return
        for speed2, inverse, what in (
            (linear2, self._inv_mass, "speed of body {} [m/s]"),
            (angular2, self._inv_inertia, "angular speed of body {} [rad/s]"),
        ):
            bound2 = budget * inverse
            over = speed2 - bound2
            k = int(np.argmax(over))
            if over[k] > 0.0:
                quantity = what.format(repr(b.names[k]))
                self._fail(index, t, quantity, float(np.sqrt(speed2[k])), float(np.sqrt(bound2[k])))
