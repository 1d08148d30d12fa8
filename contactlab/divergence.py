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
    penetration
        a contact between bodies ``a`` and ``b`` deeper than ``2 min(r_a, r_b)``
        (the world counts as infinitely large): one body went through the other.
    speed
        ``|v_i| <= sqrt(2 K(t) / m_i)`` and ``|omega_i| <= sqrt(2 K(t) / I_min,i)``
        with ``K(t) = (ENERGY_FACTOR + 1) S + |g| sum_j m_j (v_0 t + |g| t^2 / 2)``:
        the speed a body would reach holding all the kinetic energy the energy
        bound allows plus what a free fall over ``t`` adds (none for a body
        without mass or with a zero moment).

Scenes with active inputs (a force element or constraint whose class sets
``supplies_energy = True``, such as prescribed motion or a speed drive, or
joint torques in ``Scene.joint_torque``) do work that no potential
records, so the energy and speed bounds are off for them; the drift and
penetration bounds still apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import DivergenceError
from contactlab.scene import Scene

Array = NDArray[np.float64]

#: allowed energy gain as a multiple of the scene's energy scale S
ENERGY_FACTOR = 10.0
#: smallest energy scale [J]: a scene at rest with no gravity and no springs
ENERGY_FLOOR = 1e-9
#: smallest drift bound [m or rad]
DRIFT_FLOOR = 1.0

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
    scene: Scene, E: Array, phi: Array, initial: dict[str, float], force_energy: float
) -> DivergenceBounds:
    """The bounds of ``scene`` from its initial body state and metrics.

    Parameters
    ----------
    E, phi : (nb, 4, 4) initial body transforms and (nb, 6) twists.
    initial : the formulation's state metrics at t = 0 (``kinetic_energy``).
    force_energy : the force elements' potential energy at t = 0 [J].
    """
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
    scale = max(scale, ENERGY_FLOOR)
    active = has_active_inputs(scene)
    speed0 = float(np.linalg.norm(phi[:, 3:], axis=1).max(initial=0.0))
    return DivergenceBounds(
        names=tuple(b.name for b in scene.bodies),
        length_scale=length,
        energy_scale=scale,
        energy_bound=None if active else ENERGY_FACTOR * scale,
        drift_bound=max(length, DRIFT_FLOOR),
        radii=radii,
        masses=masses,
        min_inertia=np.array([float(np.min(b.inertia)) for b in scene.bodies]),
        gravity=g,
        initial_speed=speed0,
        active=active,
    )


class DivergenceGuard:
    """Checks every step's state against :class:`DivergenceBounds`."""

    def __init__(self, bounds: DivergenceBounds, initial_energy: float) -> None:
        self.bounds = bounds
        self.initial_energy = float(initial_energy)

    def _fail(self, index: int, t: float, quantity: str, value: float, bound: float) -> None:
        raise DivergenceError(
            f"step {index} (t = {t:.6g} s) diverged: {quantity} = {value:.3g} exceeds the "
            f"bound {bound:.3g}; {FIX}",
            step=index,
            quantity=quantity,
            value=value,
            bound=bound,
        )

    def check(self, index: int, t: float, row: dict[str, Any], phi: Array, contacts: Any) -> None:
        """Raise :class:`DivergenceError` if the state after step ``index`` is absurd.

        ``row`` holds the step's metrics, ``phi`` the (nb, 6) body twists and
        ``contacts`` the step's contact set (or ``None``).
        """
        b = self.bounds
        if b.energy_bound is not None:
            gain = float(row.get("total_energy", self.initial_energy)) - self.initial_energy
            if gain > b.energy_bound:
                self._fail(index, t, "energy gain E(t) - E(0) [J]", gain, b.energy_bound)
        drift = float(row.get("constraint_error", 0.0))
        if drift > b.drift_bound:
            self._fail(index, t, "joint/loop drift [m or rad]", drift, b.drift_bound)
        self._check_penetration(index, t, contacts)
        if b.energy_bound is not None:
            self._check_speed(index, t, phi)

    def _check_penetration(self, index: int, t: float, contacts: Any) -> None:
        distance = getattr(contacts, "distance", None)
        if distance is None or np.size(distance) == 0:
            return
        depth = -np.asarray(distance, dtype=float).reshape(-1)
        radii = np.append(self.bounds.radii, np.inf)  # index -1: the world
        a = np.asarray(getattr(contacts, "body_a", np.full(depth.size, -1)), dtype=np.int64)
        c = np.asarray(getattr(contacts, "body_b", np.full(depth.size, -1)), dtype=np.int64)
        bound = 2.0 * np.minimum(radii[a], radii[c])
        over = depth - bound
        k = int(np.argmax(over))
        if over[k] > 0.0:
            self._fail(index, t, "penetration depth [m]", float(depth[k]), float(bound[k]))

    def _check_speed(self, index: int, t: float, phi: Array) -> None:
        b = self.bounds
        fall = b.gravity * float(b.masses.sum()) * (b.initial_speed * t + 0.5 * b.gravity * t * t)
        budget = 2.0 * ((ENERGY_FACTOR + 1.0) * b.energy_scale + fall)
        linear = np.linalg.norm(phi[:, 3:], axis=1)
        angular = np.linalg.norm(phi[:, :3], axis=1)
        with np.errstate(divide="ignore"):  # massless bodies (model files): no bound
            v_bound = np.sqrt(budget / np.where(b.masses > 0, b.masses, 0.0))
            w_bound = np.sqrt(budget / np.where(b.min_inertia > 0, b.min_inertia, 0.0))
        for speed, bound, what in (
            (linear, v_bound, "speed of body {} [m/s]"),
            (angular, w_bound, "angular speed of body {} [rad/s]"),
        ):
            over = speed - bound
            k = int(np.argmax(over))
            if over[k] > 0.0:
                quantity = what.format(repr(b.names[k]))
                self._fail(index, t, quantity, float(speed[k]), float(bound[k]))
