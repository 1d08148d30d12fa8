"""Joint friction scenes: the REDMAX reference scenes 27–33 and a pendulum and chain family.

Units are SI with the reference's proportions: its centimetre lengths are
converted to metres (1 cm = 0.01 m) at density 1000 kg/m^3, as in
:mod:`scenarios.basic`, so a 10 x 1 x 1 cm link is 0.1 x 0.01 x 0.01 m and
0.01 kg.  Joint contact geometry (:class:`contactlab.jointfriction.JointFriction`)
is given in centimetres in the parameters and converted the same way.
Joint friction needs model ``bisp`` (``--formulation reduced``) or
``joint-friction-sp`` (``--formulation maximal``); other models ignore it.

Links lie along their body x axis with the joints at their ends; revolute
joints turn about y, so ``d(theta) = (cos theta, 0, -sin theta)`` is the
direction of a link at absolute angle ``theta`` in the x-z plane.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.jointfriction import JointFriction
from contactlab.reduced.constraints import PrescribedJoint
from contactlab.scenario import scenario
from contactlab.scene import Body, ContactParams, JointSpec, Scene, StabilizationParams
from contactlab.shapes import Plane, Sphere
from scenarios.basic import CM, cuboid
from scenarios.redmax import constant_rate

Array = NDArray[np.float64]
_HINGE = {"loop_rows": "hinge"}


def _T(x: float = 0.0, y: float = 0.0, z: float = 0.0, R: Array | None = None) -> Array:
    """A transform with translation in centimetres."""
    return se3.make_transform(R, np.array([x, y, z]) * CM)


def _Ry(theta: float) -> Array:
    return se3.exp_so3([0.0, theta, 0.0])


def _friction(
    mu: float, radius_cm: float, length_cm: float, width_cm: float = 1.0
) -> JointFriction:
    if not (np.isfinite(mu) and mu >= 0):
        raise ConfigurationError(f"friction coefficient mu must be >= 0, got {mu}")
    return JointFriction(mu=mu, radius=radius_cm * CM, length=length_cm * CM, width=width_cm * CM)


def _bare(bodies: list[Body]) -> tuple[Body, ...]:
    return tuple(replace(b, shapes=()) for b in bodies)


@scenario("jf-pendulum", formulations=("maximal", "reduced"))
def pendulum(
    angle_deg: float = 20.0,
    mu: float = 0.8,
    radius: float = 0.25,
    distance: float = 0.4,
    mass: float = 1.0,
    turn_deg: float = 0.0,
) -> Scene:
    """A body hanging below a hinge with friction (the threshold test's scene).

    angle_deg : release angle from the vertical [deg].
    mu : hinge friction coefficient.
    radius : hinge pin radius r [m].
    distance : hinge-to-centre-of-mass distance d [m].
    mass : [kg].
    turn_deg : hinge frame turned about the axis [deg] (angle psi between the
        load and the joint contact directions).

    It holds when ``sin(theta) < mu r (|cos psi| + |sin psi|) / d`` and swings otherwise.
    """
    psi = np.deg2rad(turn_deg)
    body = Body("bob", mass, mass * np.array([0.02, 0.02, 0.01]))
    hinge = JointSpec(
        "hinge",
        "revolute",
        None,
        "bob",
        frame_parent=se3.make_transform(_Ry(psi)),
        frame_child=se3.make_transform(None, [0.0, 0.0, distance]),
        axis=(0.0, 1.0, 0.0),
        q0=[np.deg2rad(angle_deg) - psi],
        friction=JointFriction(mu=mu, radius=radius, length=0.1),
    )
    return Scene("jf-pendulum", (body,), (hinge,), dt=1e-3, duration=1.0)


@scenario("jf-chain", formulations=("maximal", "reduced"))
def chain(
    n_links: int = 5, mu: float = 0.6, radius_cm: float = 0.5, angle_deg: float = 45.0
) -> Scene:
    """A chain of ``n_links`` 10 x 1 x 1 cm links on revolute joints about y, all with friction.

    n_links : number of links.
    mu : joint friction coefficient.
    radius_cm : pin radius [cm] (height 1 cm).
    angle_deg : initial angle of the root joint [deg]; the others start at 0.
    """
    if n_links < 1:
        raise ConfigurationError(f"n_links must be at least 1, got {n_links}")
    fr = _friction(mu, radius_cm, 1.0)
    bodies, specs = [], []
    for i in range(n_links):
        bodies.append(cuboid(f"link{i}", (10.0, 1.0, 1.0)))
        specs.append(
            JointSpec(
                f"joint{i}",
                "revolute",
                None if i == 0 else f"link{i - 1}",
                f"link{i}",
                frame_parent=np.eye(4) if i == 0 else _T(5),
                frame_child=_T(-5),
                axis=(0.0, 1.0, 0.0),
                q0=[np.deg2rad(angle_deg) if i == 0 else 0.0],
                friction=fr,
            )
        )
    return Scene("jf-chain", _bare(bodies), tuple(specs), dt=1e-2, duration=1.0)


@scenario("jf-revolute", formulations=("maximal", "reduced"))
def revolute(
    mu: float = 0.6, radius_cm: float = 0.5, height_cm: float = 1.0, tilt_deg: float = 45.0
) -> Scene:
    """REDMAX scene 27: two 10 x 1 x 1 cm links on revolute joints whose frames are tilted.

    mu : joint friction coefficient.
    radius_cm, height_cm : joint cylinder radius r and height l [cm].
    tilt_deg : tilt of both joint frames about the link (x) axis [deg]; the
        hinge axes (y in the joint frames) leave the horizontal by this angle.

    Released horizontal at rest; 1 s at h = 1e-2.
    """
    fr = _friction(mu, radius_cm, height_cm)
    tilt = se3.exp_so3([np.deg2rad(tilt_deg), 0.0, 0.0])
    bodies = [cuboid("link0", (10, 1, 1)), cuboid("link1", (10, 1, 1))]
    specs = [
        JointSpec(
            "joint0",
            "revolute",
            None,
            "link0",
            frame_parent=_T(R=tilt),
            frame_child=_T(-5, R=tilt),
            axis=(0, 1, 0),
            friction=fr,
        ),
        JointSpec(
            "joint1",
            "revolute",
            "link0",
            "link1",
            frame_parent=_T(5, R=tilt),
            frame_child=_T(-5, R=tilt),
            axis=(0, 1, 0),
            friction=fr,
        ),
    ]
    return Scene("jf-revolute", _bare(bodies), tuple(specs), dt=1e-2, duration=1.0)


@scenario("jf-spherical", formulations=("maximal", "reduced"))
def spherical(mu: float = 5.0, radius_cm: float = 1.0, angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 28: a double spherical pendulum of 1 x 1 x 10 cm links with joint friction.

    mu : joint friction coefficient.
    radius_cm : joint sphere radius r [cm].
    angle_deg : initial tilt of the joints, the first about x, the second about y [deg].
    """
    fr = _friction(mu, radius_cm, 1.0)
    a = np.deg2rad(angle_deg)
    bodies = [cuboid("link0", (1, 1, 10)), cuboid("link1", (1, 1, 10))]
    specs = [
        JointSpec(
            "ball0", "spherical", None, "link0", frame_child=_T(0, 0, 5), q0=[a, 0, 0], friction=fr
        ),
        JointSpec(
            "ball1",
            "spherical",
            "link0",
            "link1",
            frame_parent=_T(0, 0, -5),
            frame_child=_T(0, 0, 5),
            q0=[0, a, 0],
            friction=fr,
        ),
    ]
    return Scene("jf-spherical", _bare(bodies), tuple(specs), dt=1e-2, duration=1.0)


@scenario("jf-prismatic", formulations=("maximal", "reduced"))
def prismatic(mu: float = 0.8, incline_deg: float = 60.0, sliders: int = 2) -> Scene:
    """REDMAX scene 29: sliders on prismatic joints along an incline.

    mu : joint friction coefficient.
    incline_deg : slope of the rail [deg].
    sliders : 1 or 2; the second slides on the first along the same axis.

    A single slider's acceleration down the rail is ``g (sin a - mu cos a)``
    when ``tan a > mu`` (block on an incline): each slider's centre of mass
    sits at its joint, so its box contacts carry the load ``m g cos a``.
    """
    if sliders not in (1, 2):
        raise ConfigurationError(f"sliders must be 1 or 2, got {sliders}")
    fr = _friction(mu, 0.5, 10.0, 1.0)
    rail = se3.make_transform(_Ry(np.deg2rad(incline_deg)))
    bodies = [cuboid("slider0", (10, 1, 1))]
    specs = [
        JointSpec(
            "rail0", "prismatic", None, "slider0", frame_parent=rail, axis=(1, 0, 0), friction=fr
        )
    ]
    if sliders == 2:
        bodies.append(cuboid("slider1", (10, 1, 1)))
        specs.append(
            JointSpec(
                "rail1",
                "prismatic",
                "slider0",
                "slider1",
                frame_parent=_T(0, 0, 1),
                axis=(1, 0, 0),
                friction=fr,
            )
        )
    return Scene("jf-prismatic", _bare(bodies), tuple(specs), dt=1e-2, duration=1.0)


def _circle_meet(B: Array, D: Array, b: float, c: float) -> Array:
    """The upper point C (x-z plane) with ``|C - B| = b`` and ``|C - D| = c``."""
    dist = np.linalg.norm(D - B)
    if dist > b + c or dist < abs(b - c):
        raise ConfigurationError("the four-bar cannot close at this crank angle")
    a = (b * b - c * c + dist * dist) / (2 * dist)
    h = np.sqrt(max(b * b - a * a, 0.0))
    u = (D - B) / dist
    n = np.array([-u[1], u[0]])
    P = B + a * u
    C1, C2 = P + h * n, P - h * n
    return C1 if C1[1] >= C2[1] else C2


def _angle(v: Array) -> float:
    """Absolute angle theta of direction ``v = (x, z)``, ``v ~ (cos theta, -sin theta)``."""
    return float(np.arctan2(-v[1], v[0]))


def four_bar(
    ground: str | None,
    A: tuple[float, float],
    D: tuple[float, float],
    lengths: tuple[float, float, float],
    crank_deg: float,
    fr: JointFriction | None,
    prefix: str = "",
) -> tuple[list[Body], list[JointSpec]]:
    """Crank (at ``A``), coupler and rocker (at ``D``) on ``ground``, closed by a loop hinge.

    ``A``, ``D`` are pivots in the ground frame's x-z plane [cm]; ``lengths``
    = (crank, coupler, rocker) [cm]; ``crank_deg`` the crank's absolute angle.
    Links are 1 cm square bars; the loop joint joins the coupler's and the
    rocker's far ends with the 2-row hinge closure (Sueda's notes, eq. 2.90–2.91).
    """
    a, b, c = lengths
    A_, D_ = np.array(A, float), np.array(D, float)
    t1 = np.deg2rad(crank_deg)
    B = A_ + a * np.array([np.cos(t1), -np.sin(t1)])
    C = _circle_meet(B, D_, b, c)
    t2, t3 = _angle(C - B), _angle(C - D_)
    p = prefix
    bodies = [
        cuboid(f"{p}crank", (a, 1, 1)),
        cuboid(f"{p}coupler", (b, 1, 1)),
        cuboid(f"{p}rocker", (c, 1, 1)),
    ]
    y = (0.0, 1.0, 0.0)
    specs = [
        JointSpec(
            f"{p}crank_joint",
            "revolute",
            ground,
            f"{p}crank",
            frame_parent=_T(A_[0], 0, A_[1]),
            frame_child=_T(-a / 2),
            axis=y,
            q0=[t1],
            friction=fr,
        ),
        JointSpec(
            f"{p}coupler_joint",
            "revolute",
            f"{p}crank",
            f"{p}coupler",
            frame_parent=_T(a / 2),
            frame_child=_T(-b / 2),
            axis=y,
            q0=[t2 - t1],
            friction=fr,
        ),
        JointSpec(
            f"{p}rocker_joint",
            "revolute",
            ground,
            f"{p}rocker",
            frame_parent=_T(D_[0], 0, D_[1]),
            frame_child=_T(-c / 2),
            axis=y,
            q0=[t3],
            friction=fr,
        ),
        JointSpec(
            f"{p}loop_joint",
            "revolute",
            f"{p}coupler",
            f"{p}rocker",
            frame_parent=_T(b / 2),
            frame_child=_T(c / 2),
            axis=y,
            friction=fr,
            closes_loop=True,
            params=_HINGE,
        ),
    ]
    return bodies, specs


@scenario("jf-fourbar", formulations=("reduced",))
def fourbar(mu: float = 0.3, radius_cm: float = 0.5, crank_deg: float = 60.0) -> Scene:
    """REDMAX scene 30: a Grashof four-bar (ground 10, crank 4, coupler 14, rocker 12 cm).

    mu : friction coefficient of all four joints (the loop joint included).
    radius_cm : joint cylinder radius [cm] (height 1 cm).
    crank_deg : initial crank angle [deg].

    The ground link is the world (pivots 10 cm apart); released at rest
    under gravity; h = 5e-3 with Baumgarte factor 1/h on the loop.
    """
    fr = _friction(mu, radius_cm, 1.0)
    bodies, specs = four_bar(None, (0, 0), (10, 0), (4, 14, 12), crank_deg, fr)
    return Scene(
        "jf-fourbar",
        _bare(bodies),
        tuple(specs),
        dt=5e-3,
        duration=1.0,
        stabilization=StabilizationParams(gamma=None),
    )


@scenario("jf-external", formulations=("maximal", "reduced"))
def external(
    mu_joint: float = 0.1,
    mu_floor: float = 0.2,
    radius_cm: float = 1.0,
    floor_cm: float = -15.0,
    angle_deg: float = 0.0,
) -> Scene:
    """REDMAX scene 31: a 2-link chain whose tip sphere lands on a floor and slides on it.

    mu_joint : joint friction coefficient (joint cylinders r = 0.5, l = 1 cm).
    mu_floor : sphere-floor friction coefficient.
    radius_cm : tip sphere radius [cm] (a massless collision shape on link1).
    floor_cm : floor height [cm].
    angle_deg : initial angle of the root joint below the horizontal [deg]
        (``asin(-(floor_cm + radius_cm) / 20)`` starts the sphere on the floor).

    Released horizontal by default, the chain swings down until the tip
    sphere strikes the floor, then slides on it.  Penetration feedback
    0.1/h; 2 s at h = 1e-2.
    """
    fr = _friction(mu_joint, 0.5, 1.0)
    bodies = [
        replace(cuboid("link0", (10, 1, 1)), shapes=()),
        replace(cuboid("link1", (10, 1, 1)), shapes=(Sphere(radius=radius_cm * CM, pose=_T(5)),)),
    ]
    specs = [
        JointSpec(
            "joint0",
            "revolute",
            None,
            "link0",
            frame_child=_T(-5),
            axis=(0, 1, 0),
            q0=[np.deg2rad(angle_deg)],
            friction=fr,
        ),
        JointSpec(
            "joint1",
            "revolute",
            "link0",
            "link1",
            frame_parent=_T(5),
            frame_child=_T(-5),
            axis=(0, 1, 0),
            friction=fr,
        ),
    ]
    h = 1e-2
    contact = ContactParams(margin=0.002, stabilization=0.1 / h, mu=mu_floor)
    return Scene(
        "jf-external",
        tuple(bodies),
        tuple(specs),
        dt=h,
        duration=2.0,
        static_shapes=(Plane(offset=floor_cm * CM),),
        contact=contact,
    )


@scenario("jf-crank", formulations=("reduced",))
def crank(mu: float = 0.3, rate: float = -4 * np.pi, radius_cm: float = 0.5) -> Scene:
    """REDMAX scene 32: the four-bar of scene 30 on a hinged ground bar, its crank driven.

    mu : friction coefficient of every joint.
    rate : crank speed [rad/s] (prescribed, Sueda's notes §2.9).
    radius_cm : joint cylinder radius [cm].

    The ground bar hangs from a revolute root about y at its centre; the
    crank turns at ``rate`` relative to it, so the bar swings in reaction.
    """
    fr = _friction(mu, radius_cm, 1.0)
    base = cuboid("base", (10, 1, 1))
    root = JointSpec(
        "root", "revolute", None, "base", frame_child=_T(0, 0, 0), axis=(0, 1, 0), friction=fr
    )
    bodies, specs = four_bar("base", (-5, 0), (5, 0), (4, 14, 12), 60.0, fr)
    drive = PrescribedJoint("crank_joint", constant_rate(np.deg2rad(60.0), rate))
    return Scene(
        "jf-crank",
        _bare([base, *bodies]),
        (root, *specs),
        constraints=(drive,),
        dt=5e-3,
        duration=1.0,
    )


#: the walker's coupler point in the coupler frame: along the coupler from its
#: crank end, and normal to it [cm] (a flat-bottomed path below the pivots)
_FOOT = (-5.0, -8.0)


@scenario("walking-fourbar", formulations=("reduced",))
def walking_fourbar(
    mu_joint: float = 0.8,
    mu_ground: float = 0.8,
    rate: float = 4 * np.pi,
    dip_cm: float = 1.0,
    radius_cm: float = 0.5,
) -> Scene:
    """REDMAX scene 33: a free-floating four-bar that walks on a crank-driven foot.

    mu_joint : friction coefficient of the four joints.
    mu_ground : sphere-floor friction coefficient.
    rate : crank speed [rad/s] (prescribed relative to the base).
    dip_cm : how far the foot's lowest point reaches below the base's feet [cm].
    radius_cm : joint cylinder radius [cm].

    The base (30 x 4 x 1 cm, on a free joint) stands on three spheres of
    1 cm radius (two at the back, one at the front) and carries the
    four-bar of scene 30 (pivots 10 cm apart); the coupler carries a fourth
    sphere, the foot, whose closed path dips ``dip_cm`` below the base's
    feet.  While down, the foot moves backward and pushes the walker
    forward (+x); on the way back it is lifted.  Without ground friction no
    horizontal force acts, so the centre of mass cannot move horizontally.
    h = 5e-3.
    """
    fr = _friction(mu_joint, radius_cm, 1.0)
    r = 1.0
    ext, perp = _FOOT
    # lowest point of the foot's path below the pivots, over one crank turn
    low = min(_foot_point(t, ext, perp)[1] for t in np.linspace(0, 2 * np.pi, 361))
    top_t = max(np.linspace(0, 2 * np.pi, 361), key=lambda t: _foot_point(t, ext, perp)[1])
    feet_z = low + dip_cm  # base feet centres, relative to the pivot line [cm]
    sphere = lambda x, y, z: Sphere(radius=r * CM, pose=_T(x, y, z))  # noqa: E731
    base = replace(
        cuboid("base", (30, 4, 1)),
        shapes=(sphere(-15, 2, feet_z), sphere(-15, -2, feet_z), sphere(15, 0, feet_z)),
    )
    bodies, specs = four_bar("base", (-5, 0), (5, 0), (4, 14, 12), np.rad2deg(top_t), fr)
    bodies = [replace(b, shapes=()) for b in bodies]
    b = 14.0
    bodies[1] = replace(bodies[1], shapes=(sphere(-b / 2 + ext, 0, perp),))
    free = JointSpec(
        "free", "free", None, "base", frame_parent=_T(0, 0, -feet_z + r + 0.05), q0=np.zeros(6)
    )
    drive = PrescribedJoint("crank_joint", constant_rate(float(top_t), rate))
    contact = ContactParams(margin=0.002, mu=mu_ground)
    return Scene(
        "walking-fourbar",
        (base, *bodies),
        (free, *specs),
        constraints=(drive,),
        static_shapes=(Plane(),),
        contact=contact,
        dt=5e-3,
        duration=2.0,
        # the base's free joint to the world must not hide its contacts with the floor
        collide_jointed=True,
    )


def _foot_point(t: float, ext: float, perp: float) -> Array:
    """The walker's foot (x, z) [cm] relative to the crank pivot at crank angle ``t``."""
    A, D = np.array([-5.0, 0.0]), np.array([5.0, 0.0])
    B = A + 4.0 * np.array([np.cos(t), -np.sin(t)])
    C = _circle_meet(B, D, 14.0, 12.0)
    u = (C - B) / 14.0
    return B + ext * u + perp * np.array([-u[1], u[0]])
