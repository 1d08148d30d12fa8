"""Contact and friction scenes: inclines, sliding, pushing, stacks, piles, the sheath.

Every scene has its ground (or incline) as a static :class:`Plane`, places
its bodies through ``initial_E`` / ``initial_phi`` with resting contacts at
distance exactly zero, and sets its contact parameters explicitly:

* ``margin`` 5 mm: contacts are reported below it, so resting contacts
  persist; the sheath widens it to three times the expected
  Anitescu–Hart gap so the hovering contact is still seen.
* ``stabilization`` ``None``: penetration feedback ``0.2 / h`` [1/s]
  (20 % of the depth per step, :mod:`contactlab.contact.rows`), capped at
  ``max_correction`` = 0.5 m/s.
* ``directions`` 4: the friction pyramid's directions are the tangent basis
  ``t1, t2`` and their opposites; on level ground these are the world x and
  y axes, on the inclines (tilted about y) ``t1`` is the slope direction.

Each scene's ``extras`` holds the closed-form prediction the studies compare
against (acceleration, stopping distance, the Anitescu–Hart gap, ...).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.errors import ConfigurationError
from contactlab.forces import Force, PointForce
from contactlab.forces.base import IntArray, body_indices
from contactlab.scenario import scenario
from contactlab.scene import Body, ContactParams, JointSpec, Scene
from contactlab.shapes import Box, Plane, Sphere

Array = NDArray[np.float64]

G = 9.81
MARGIN = 0.005
MAX_CORRECTION = 0.5


def _contact(mu: float, margin: float = MARGIN, directions: int = 4) -> ContactParams:
    if not (np.isfinite(mu) and mu >= 0):
        raise ConfigurationError(f"friction coefficient mu must be >= 0, got {mu}")
    return ContactParams(
        margin=margin,
        stabilization=None,
        max_correction=MAX_CORRECTION,
        mu=mu,
        directions=directions,
    )


def _positive(**values: float) -> None:
    for name, v in values.items():
        if not (np.isfinite(v) and v > 0):
            raise ConfigurationError(f"parameter {name} must be positive, got {v}")


def _box(name: str, half: Array, mass: float) -> Body:
    body, _ = body_from_shape(name, Box(half_extents=half), mass=mass, material="box")
    return body


def _incline(angle_deg: float) -> tuple[Array, Array, Array]:
    """Normal ``n``, downhill unit vector and rotation ``Ry(theta)`` (e_z -> n)."""
    if not (0.0 <= angle_deg < 90.0):
        raise ConfigurationError(f"angle_deg must be in [0, 90), got {angle_deg}")
    th = np.radians(angle_deg)
    n = np.array([np.sin(th), 0.0, np.cos(th)])
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    return n, down, se3.exp_so3([0.0, th, 0.0])


@scenario("box-incline")
def box_incline(
    angle_deg: float = 20.0, mu: float = 0.5, size: float = 0.2, mass: float = 1.0
) -> Scene:
    """A cube released at rest on an incline (a tilted ground plane; gravity stays -z).

    angle_deg : incline angle [deg]; the plane is tilted about y, downhill is +x.
    mu : friction coefficient box-incline.
    size : cube side [m].
    mass : [kg].

    Prediction: at rest when ``tan(theta) <= mu``, otherwise it slides with
    ``a = g (sin theta - mu cos theta)`` along ``extras["downhill"]``.
    """
    _positive(size=size, mass=mass)
    n, down, R = _incline(angle_deg)
    h = 0.5 * size
    E = se3.make_transform(R, h * n)[None]
    th = np.radians(angle_deg)
    slides = np.tan(th) > mu
    a = G * (np.sin(th) - mu * np.cos(th)) if slides else 0.0
    return Scene(
        "box-incline",
        (_box("box", np.full(3, h), mass),),
        static_shapes=(Plane(normal=n),),
        initial_E=E,
        initial_phi=np.zeros((1, 6)),
        contact=_contact(mu),
        dt=5e-3,
        duration=1.0,
        extras={"normal": n, "downhill": down, "slides": bool(slides), "acceleration": a},
    )


@scenario("ball-incline")
def ball_incline(
    angle_deg: float = 20.0, mu: float = 0.5, radius: float = 0.1, mass: float = 1.0
) -> Scene:
    """A solid ball released at rest on an incline (tilted plane, downhill +x).

    angle_deg : incline angle [deg].
    mu : friction coefficient.
    radius : [m].
    mass : [kg].

    Prediction: rolls without slipping with ``a = 5/7 g sin(theta)`` when
    ``mu >= 2/7 tan(theta)``; otherwise slips with ``a = g (sin - mu cos)``.
    """
    _positive(radius=radius, mass=mass)
    n, down, _ = _incline(angle_deg)
    body, _ = body_from_shape("ball", Sphere(radius=radius), mass=mass, material="ball")
    th = np.radians(angle_deg)
    rolls = mu >= 2.0 / 7.0 * np.tan(th)
    a = 5.0 / 7.0 * G * np.sin(th) if rolls else G * (np.sin(th) - mu * np.cos(th))
    return Scene(
        "ball-incline",
        (body,),
        static_shapes=(Plane(normal=n),),
        initial_E=se3.make_transform(None, radius * n)[None],
        initial_phi=np.zeros((1, 6)),
        contact=_contact(mu),
        dt=5e-3,
        duration=1.0,
        extras={"normal": n, "downhill": down, "rolls": bool(rolls), "acceleration": a},
    )


@scenario("ball-drop", formulations=("maximal", "reduced"))
def ball_drop(
    height: float = 1.0,
    restitution: float = 0.5,
    threshold: float = 0.1,
    radius: float = 0.1,
    mass: float = 1.0,
    mu: float = 0.5,
    dt: float = 1e-3,
    duration: float = 1.5,
) -> Scene:
    """A solid ball dropped from rest onto the ground: Newton restitution.

    height : initial gap between the ball's lowest point and the ground [m].
    restitution : coefficient of restitution e in [0, 1].
    threshold : impacts slower than this do not bounce [m/s].
    radius : [m].
    mass : [kg].
    mu : friction coefficient (a vertical drop meets no friction).
    dt : step size h [s].
    duration : [s].

    The ball hangs on a free joint from the world (so the reduced formulation
    can step it too).  Prediction: it hits at ``sqrt(2 g H)``, leaves at
    ``e sqrt(2 g H)`` and rises to ``e^2 H`` (``extras``), up to the ``O(h)``
    errors derived in :mod:`contactlab.contact.rows`.
    """
    _positive(radius=radius, mass=mass, dt=dt, duration=duration)
    if not (np.isfinite(height) and height >= 0):
        raise ConfigurationError(f"height must be >= 0 [m], got {height}")
    if not (np.isfinite(mu) and mu >= 0):
        raise ConfigurationError(f"friction coefficient mu must be >= 0, got {mu}")
    body, _ = body_from_shape("ball", Sphere(radius=radius), mass=mass, material="ball")
    E = se3.make_transform(None, [0.0, 0.0, radius + height])
    joint = JointSpec("free", "free", None, "ball", frame_parent=E, q0=np.zeros(6))
    contact = ContactParams(
        margin=MARGIN,
        stabilization=None,
        max_correction=MAX_CORRECTION,
        mu=mu,
        restitution=float(restitution),
        restitution_threshold=float(threshold),
    )
    v = float(np.sqrt(2.0 * G * height))
    return Scene(
        "ball-drop",
        (body,),
        joints=(joint,),
        static_shapes=(Plane(),),
        initial_E=E[None],
        initial_phi=np.zeros((1, 6)),
        contact=contact,
        dt=dt,
        duration=duration,
        extras={
            "impact_speed": v,
            "rebound_speed": float(restitution) * v,
            "rebound_height": float(restitution) ** 2 * height,
        },
    )


@scenario("box-slide")
def box_slide(
    v0: float = 2.0,
    direction_deg: float = 0.0,
    mu: float = 0.3,
    size: float = 0.2,
    mass: float = 1.0,
) -> Scene:
    """A cube launched along the ground at speed ``v0`` in a horizontal direction.

    v0 : initial speed [m/s].
    direction_deg : direction of the initial velocity from +x [deg]; 0 and 90
        are along the 4-direction pyramid's axes, 45 is its worst case.
    mu : friction coefficient.
    size : cube side [m].
    mass : [kg].

    Prediction (Coulomb cone): it stops after ``v0^2 / (2 mu g)`` along the
    initial direction.  The 4-direction pyramid gives ``mu / sqrt(2)`` of
    friction along the diagonal, hence a stopping distance ``sqrt(2)`` times
    longer at 45 deg.
    """
    _positive(size=size, mass=mass)
    if not (np.isfinite(v0) and v0 >= 0):
        raise ConfigurationError(f"v0 must be >= 0 [m/s], got {v0}")
    az = np.radians(direction_deg)
    u = np.array([np.cos(az), np.sin(az), 0.0])
    h = 0.5 * size
    phi = np.zeros((1, 6))
    phi[0, 3:] = v0 * u  # the body frame is aligned with the world
    stop = v0**2 / (2 * mu * G) if mu > 0 else np.inf
    t_stop = v0 / (mu * G) if mu > 0 else np.inf
    return Scene(
        "box-slide",
        (_box("box", np.full(3, h), mass),),
        static_shapes=(Plane(),),
        initial_E=se3.make_transform(None, [0.0, 0.0, h])[None],
        initial_phi=phi,
        contact=_contact(mu),
        dt=5e-3,
        duration=float(min(max(1.5 * t_stop, 0.5), 10.0)),
        extras={"direction": u, "stopping_distance": stop, "stopping_time": t_stop},
    )


@scenario("box-push")
def box_push(
    force: float = 8.0,
    direction_deg: float = 0.0,
    elevation_deg: float = 0.0,
    mu: float = 0.5,
    size: float = 0.2,
    mass: float = 1.0,
    height: float = 0.0,
) -> Scene:
    """A resting cube pushed by a constant force through a body point.

    force : magnitude [N].
    direction_deg : horizontal direction of the push from +x [deg] (oblique
        pushes: away from the pyramid axes).
    elevation_deg : tilt of the force above the horizontal [deg]; negative
        pushes down into the ground.
    mu : friction coefficient.
    size : cube side [m].
    mass : [kg].
    height : height of the application point above the centre [m].

    Prediction: with ``F_h`` the horizontal and ``F_z`` the vertical force,
    the normal load is ``m g - F_z``; the cube slides with
    ``a = (F_h - mu (m g - F_z)) / m`` along the push when ``F_h`` exceeds
    ``mu (m g - F_z)`` (and does not tip), otherwise it stays.
    """
    _positive(size=size, mass=mass)
    h = 0.5 * size
    if abs(height) > h:
        raise ConfigurationError(f"height must lie within the cube, |height| <= {h}, got {height}")
    az, el = np.radians(direction_deg), np.radians(elevation_deg)
    F = force * np.array([np.cos(el) * np.cos(az), np.cos(el) * np.sin(az), np.sin(el)])
    Fh, load = float(np.hypot(F[0], F[1])), mass * G - F[2]
    if load <= 0:
        raise ConfigurationError("the push lifts the cube off the ground; lower force or elevation")
    a = max(Fh - mu * load, 0.0) / mass
    return Scene(
        "box-push",
        (_box("box", np.full(3, h), mass),),
        static_shapes=(Plane(),),
        forces=(PointForce("box", np.array([0.0, 0.0, height]), F),),
        initial_E=se3.make_transform(None, [0.0, 0.0, h])[None],
        initial_phi=np.zeros((1, 6)),
        contact=_contact(mu),
        dt=5e-3,
        duration=1.0,
        extras={
            "force": F,
            "acceleration": a,
            "direction": F / max(float(np.linalg.norm(F)), 1e-300),
        },
    )


def _stack(name: str, masses: list[float], size: float, mu: float) -> Scene:
    h = 0.5 * size
    bodies = tuple(_box(f"box{k}", np.full(3, h), m) for k, m in enumerate(masses))
    E = np.stack([se3.make_transform(None, [0.0, 0.0, h + k * size]) for k in range(len(masses))])
    return Scene(
        name,
        bodies,
        static_shapes=(Plane(),),
        initial_E=E,
        initial_phi=np.zeros((len(masses), 6)),
        contact=_contact(mu),
        dt=5e-3,
        duration=2.0,
    )


@scenario("box-stack")
def box_stack(n: int = 3, size: float = 0.2, mass: float = 1.0, mu: float = 0.5) -> Scene:
    """``n`` equal cubes stacked face on face on the ground, at rest.

    n : number of cubes.
    size : cube side [m].
    mass : mass of each cube [kg].
    mu : friction coefficient.

    Prediction: it stays at rest (4 contacts per interface).
    """
    _positive(size=size, mass=mass)
    if n < 1:
        raise ConfigurationError(f"box-stack needs n >= 1 cubes, got {n}")
    return _stack("box-stack", [mass] * n, size, mu)


@scenario("mass-ratio-stack")
def mass_ratio_stack(
    ratio: float = 100.0, mass: float = 0.1, size: float = 0.2, mu: float = 0.5
) -> Scene:
    """A heavy cube resting on a light one: the classic ill-conditioned stack.

    ratio : mass of the top cube over the bottom one.
    mass : mass of the bottom (light) cube [kg].
    size : cube side [m].
    mu : friction coefficient.

    Prediction: both stay at rest; the ground carries ``(1 + ratio) m g``.
    """
    _positive(ratio=ratio, mass=mass, size=size)
    return _stack("mass-ratio-stack", [mass, ratio * mass], size, mu)


@scenario("box-pile")
def box_pile(
    n: int = 20, seed: int = 0, size: float = 0.1, mu: float = 0.5, layout: str = "drop"
) -> Scene:
    """``n`` cubes dropped from random, non-overlapping poses above the ground, or stacked at rest.

    n : number of cubes.
    seed : random seed of the poses.
    size : cube side [m]; each cube weighs ``1000 size^3`` kg (water).
    mu : friction coefficient.
    layout : ``"drop"`` (default) or ``"stacked"``.

    ``"drop"``: the cubes sit in the cells of a column of square layers (cell
    side ``1.2 sqrt(3) size``, more than a cube's diameter ``sqrt(3) size``),
    jittered inside their cells and randomly turned, so none overlap.

    ``"stacked"``: a pile already at rest, at exact contact, of about the
    same four layers: a stepped pyramid of square layers of ``s``, ``s - 1``,
    ``s - 2``, ... cubes a side (``s`` the smallest that holds ``n`` in four
    layers, the top one filled in part), pitch ``1.2 size``, each layer
    shifted by half a pitch so that every cube above the ground rests on the
    corners of four cubes below; every cube is turned about the vertical by a
    random angle within ±5 deg (the gap between neighbours stays above
    ``0.11 size``, wider than the contact margin for 10 cm cubes), so the
    contact patches are irregular polygons.  All
    faces in contact are horizontal: the pile is at rest with zero friction,
    and a step that sets it in motion does so by its own error.
    """
    _positive(size=size)
    if n < 1:
        raise ConfigurationError(f"box-pile needs n >= 1 cubes, got {n}")
    if seed < 0:
        raise ConfigurationError(f"box-pile seed must be an integer >= 0, got {seed}")
    rng = np.random.default_rng(seed)
    if layout == "stacked":
        E = _stacked_pile(n, size, rng)
    elif layout == "drop":
        E = _dropped_pile(n, size, rng)
    else:
        raise ConfigurationError(f"box-pile layout must be 'drop' or 'stacked', got {layout!r}")
    mass = 1000.0 * size**3
    bodies = tuple(_box(f"box{j}", np.full(3, 0.5 * size), mass) for j in range(n))
    return Scene(
        "box-pile",
        bodies,
        static_shapes=(Plane(),),
        initial_E=E,
        initial_phi=np.zeros((n, 6)),
        contact=_contact(mu),
        dt=5e-3,
        duration=2.0,
    )


def _dropped_pile(n: int, size: float, rng: np.random.Generator) -> Array:
    """(n, 4, 4) poses of ``box-pile``'s ``"drop"`` layout (its docstring)."""
    diameter = np.sqrt(3.0) * size
    cell = 1.2 * diameter
    side = max(1, int(np.ceil(np.sqrt(n / 4.0))))  # about 4 layers for a square column
    k = np.arange(n)
    ix, iy, iz = k % side, (k // side) % side, k // (side * side)
    slack = 0.5 * (cell - diameter)
    centre = np.stack(
        [
            (ix - 0.5 * (side - 1)) * cell,
            (iy - 0.5 * (side - 1)) * cell,
            0.5 * cell + iz * cell + 0.5 * size,
        ],
        axis=1,
    ) + rng.uniform(-slack, slack, (n, 3))
    return se3.make_transform(se3.random_rotation(rng, n), centre)


def _stacked_pile(n: int, size: float, rng: np.random.Generator) -> Array:
    """(n, 4, 4) poses of ``box-pile``'s ``"stacked"`` layout (its docstring)."""
    side = 1
    while sum(max(side - j, 0) ** 2 for j in range(4)) < n:
        side += 1
    pitch = 1.2 * size
    centres = []
    for layer in range(side):
        m = side - layer
        i, j = np.meshgrid(np.arange(m), np.arange(m), indexing="ij")
        xy = (np.stack([i.ravel(), j.ravel()], axis=1) - 0.5 * (m - 1)) * pitch
        z = np.full((m * m, 1), (layer + 0.5) * size)
        centres.append(np.hstack([xy, z]))
    centre = np.vstack(centres)[:n]
    yaw = rng.uniform(-np.radians(5.0), np.radians(5.0), n)
    R = np.stack([se3.exp_so3([0.0, 0.0, a]) for a in yaw])
    return se3.make_transform(R, centre)


@dataclass(frozen=True)
class SpeedDrive(Force):
    """A drive holding a body point's speed along a world direction (a cruise control).

    The world force at the body point ``point`` is

    .. math::

        f = d\\,(f_0 + c\\,(v - d^T R\\,\\Gamma(r)\\,\\phi))

    with ``d`` the unit ``direction``, ``f_0`` the constant ``bias`` [N], ``c``
    the ``gain`` [N s/m] and ``v`` the target ``speed`` [m/s]: a constant push
    plus a viscous pull toward the target speed.  Its damping matrix is
    ``D = c J^T J`` with ``J = d^T R Gamma(r)`` (so the linearly implicit step
    treats the pull implicitly); the dependence on the rotation is left
    explicit (``K = None``).  It does work, so it stores no energy.

    Parameters
    ----------
    body : body name.
    point : (3,) application point in body coordinates [m].
    direction : (3,) world direction (normalised).
    speed : target speed [m/s].
    bias : constant force [N].
    gain : [N s/m].
    """

    #: the drive does work no potential records (see :mod:`contactlab.divergence`)
    supplies_energy: ClassVar[bool] = True

    body: str
    point: Array
    direction: Array
    speed: float
    bias: float
    gain: float

    def __post_init__(self) -> None:
        d = np.array(self.direction, dtype=float).reshape(-1)
        if d.shape != (3,) or not np.linalg.norm(d) > 0:
            raise ConfigurationError(f"SpeedDrive direction must be a non-zero 3-vector, got {d}")
        object.__setattr__(self, "direction", d / np.linalg.norm(d))
        object.__setattr__(self, "point", np.array(self.point, dtype=float).reshape(3))
        if not (np.isfinite(self.gain) and self.gain >= 0):
            raise ConfigurationError(f"SpeedDrive gain must be >= 0 [N s/m], got {self.gain}")

    def bodies(self, scene: Scene) -> IntArray:
        return body_indices(scene, [self.body])

    def _jacobian(self, scene: Scene, E: Array) -> Array:
        R = E[self.bodies(scene)[0], :3, :3]
        return self.direction @ R @ se3.gamma(self.point)  # (6,)

    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        return 0.0

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        J = self._jacobian(scene, E)
        u = J @ phi[self.bodies(scene)[0]]
        return (J * (self.bias + self.gain * (self.speed - u)))[None, :]

    def local_damping(self, scene: Scene, E: Array, phi: Array) -> Array | None:
        J = self._jacobian(scene, E)
        return self.gain * np.outer(J, J)


#: Gain of the sheath's speed drive per kilogram [N s/(m kg)]: speed errors
#: decay with time constant 1/20 s.
SHEATH_GAIN = 20.0


@scenario("sheath")
def sheath(
    v: float = 1.0,
    mu: float = 0.5,
    dt: float = 0.01,
    mass: float = 1.0,
    half_extents: tuple = (0.2, 0.2, 0.05),
    duration: float = 1.5,
) -> Scene:
    """A flat box held sliding at speed ``v`` along +x: the Anitescu–Hart gap study.

    v : sliding speed [m/s].
    mu : friction coefficient.
    dt : step size h [s].
    mass : [kg].
    half_extents : box half extents [m].
    duration : [s].

    The box starts at rest on the ground.  A :class:`SpeedDrive` at the centre
    of its bottom face pushes along +x with ``mu m g`` (the Coulomb friction of
    a sliding box) plus ``20 m (v - u)`` [N] (``u`` the point's speed), so it
    reaches ``v`` within a few tenths of a second and then slides at ``v`` with
    the drive balancing friction; acting on the friction's line of action, the
    drive adds no pitching moment.  The speed-up is gradual, so no model
    launches the box.

    An exact-complementarity model keeps the box on the ground (gap 0).  The
    Anitescu–Hart relaxation turns sliding complementarity into
    ``n . v_rel = c + mu |v_t|``; with the gap-aware right-hand side
    ``c = -d / h`` its steady state rides at ``d = h mu v``
    (``extras["anitescu_hart_gap"]``).  The contact margin is three times that
    gap (at least 5 mm) so the hovering contacts are still reported.  Sliding is
    along ``t1`` (world x), an exact direction of the 4-direction pyramid.
    """
    _positive(v=v, dt=dt, mass=mass, duration=duration)
    half = np.array(half_extents, dtype=float).reshape(-1)
    if half.shape != (3,) or np.any(half <= 0):
        raise ConfigurationError(f"half_extents must be three positive lengths, got {half_extents}")
    gap = dt * mu * v
    drive = SpeedDrive(
        "box",
        np.array([0.0, 0.0, -half[2]]),
        np.array([1.0, 0.0, 0.0]),
        speed=v,
        bias=mu * mass * G,
        gain=SHEATH_GAIN * mass,
    )
    return Scene(
        "sheath",
        (_box("box", half, mass),),
        static_shapes=(Plane(),),
        forces=(drive,),
        initial_E=se3.make_transform(None, [0.0, 0.0, half[2]])[None],
        initial_phi=np.zeros((1, 6)),
        contact=_contact(mu, margin=max(MARGIN, 3.0 * gap)),
        dt=dt,
        duration=duration,
        extras={"anitescu_hart_gap": gap, "speed": v},
    )


@scenario("chain-floor")
def chain_floor(n_links: int = 3, floor_cm: float = -15.0, mu: float = 0.5) -> Scene:
    """A chain of 10 x 1 x 1 cm links hinged about y at the origin, released
    horizontal, that swings down onto a floor and slides and settles on it.

    n_links : number of links (revolute joints about y).
    floor_cm : floor height [cm] (below -10 n_links the chain hangs free).
    mu : friction coefficient link-floor.

    Joints and contacts together (ArtiSynth notes §0.10): adjacent links do not
    collide with each other, the others and the floor do.
    """
    from scenarios.basic import _chain

    bodies, joints = _chain(n_links, "R", "y", (0.0,))
    return Scene(
        "chain-floor",
        tuple(bodies),
        tuple(joints),
        static_shapes=(Plane(offset=floor_cm / 100.0),),
        contact=_contact(mu, margin=0.002),
        dt=5e-3,
        duration=1.5,
    )


@scenario("chain-fall", formulations=("reduced", "maximal"))
def chain_fall(
    n_links: int = 5,
    length: float = 0.2,
    width: float = 0.04,
    mass: float = 0.5,
    height: float = 0.3,
    angle_deg: float = 30.0,
    mu: float = 0.5,
    dt: float = 1e-2,
    duration: float = 2.0,
) -> Scene:
    """A planar chain of box links on hinges about y, with a planar base, dropped on the ground.

    n_links : number of links (one base link and n_links - 1 hinged ones).
    length : link length along its x axis [m].
    width : side of the links' square cross-section [m].
    mass : mass of each link [kg].
    height : initial height of the base link's centre above the ground [m].
    angle_deg : initial hinge angles, alternating in sign (a zig-zag) [deg].
    mu : friction coefficient link-ground.
    dt : step size h [s].
    duration : [s].

    The base link moves in the x-z plane (a planar joint with normal y followed
    by a hinge about y: x, z and the pitch), every other link hangs on a hinge
    about y from the end of the previous one, so the chain stays in the x-z
    plane.  In reduced coordinates nothing can move along y: the friction rows
    along y have a zero diagonal in the contact problem (no mass answers them).
    The chain falls, lands on several links and comes to rest lying flat on the
    ground with every link's centre at ``width / 2``.
    """
    _positive(length=length, width=width, mass=mass, dt=dt, duration=duration)
    if isinstance(n_links, bool) or not isinstance(n_links, int) or n_links < 1:
        raise ConfigurationError(f"n_links must be a positive integer, got {n_links!r}")
    if not (np.isfinite(height) and height > 0.5 * width):
        raise ConfigurationError(
            f"height must exceed half the link width ({0.5 * width} m), got {height}"
        )
    y = np.array([0.0, 1.0, 0.0])
    half = 0.5 * np.array([length, width, width])
    bodies = tuple(_box(f"link{i}", half, mass) for i in range(n_links))
    base = JointSpec(
        "base",
        "composite",
        None,
        "link0",
        frame_parent=se3.make_transform(None, [0.0, 0.0, height]),
        params={"joints": [{"kind": "planar", "axis": y}, {"kind": "revolute", "axis": y}]},
        q0=np.zeros(3),
    )
    a = np.deg2rad(angle_deg)
    hinges = tuple(
        JointSpec(
            f"hinge{i}",
            "revolute",
            f"link{i - 1}",
            f"link{i}",
            frame_parent=se3.make_transform(None, [0.5 * length, 0.0, 0.0]),
            frame_child=se3.make_transform(None, [-0.5 * length, 0.0, 0.0]),
            axis=y,
            q0=np.array([a if i % 2 else -a]),
        )
        for i in range(1, n_links)
    )
    return Scene(
        "chain-fall",
        bodies,
        (base, *hinges),
        static_shapes=(Plane(),),
        contact=_contact(mu),
        dt=dt,
        duration=duration,
        extras={"rest_height": 0.5 * width},
    )
