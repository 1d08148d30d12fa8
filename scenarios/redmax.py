"""The REDMAX reference scenes that need more than a plain chain (catalogue in REDMAX_SCENES.md).

Scenes 0, 1, 2, 23 and 24 live in :mod:`scenarios.basic`, scene 12 (mass-springs)
in :mod:`scenarios.redmax_deformable`; the joint-friction
scenes 27–33 are not here.  Units follow
that module: the reference's centimetre-gram-second values converted
exactly to SI (1 cm = 0.01 m, density 1 g/cm^3 = 1000 kg/m^3, so a
10 x 1 x 1 cm link is 0.1 x 0.01 x 0.01 m of 0.01 kg), gravity 9.81 m/s^2.
Torques convert with 1 g cm^2/s^2 = 1e-7 N m, forces with 1 dyn = 1e-5 N.

Every scene with a maximal equivalent runs in both formulations: joints by
the rows their joint maps declare (composites of a translation and a turn
included), couplings and joint springs of one-coordinate joints through the
coordinates read back from the bodies (:mod:`contactlab.maximal.joint_coordinates`),
prescribed joints and body twists as rows with a target moving in time, joint
limits as unilateral rows.
A loop that the tree already keeps planar closes with the 2-row hinge form
(Sueda's notes, eq. 2.90–2.91; ``params={"loop_rows": "hinge"}``) in both
formulations.  Scenes with spline joints declare ``formulations=("reduced",)``; the
maximal formulation refuses them in one line saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.bodies import body_from_shape, composite
from contactlab.errors import ConfigurationError
from contactlab.forces import BodyDamping, PointForce
from contactlab.reduced.constraints import Coupling, JointLimit, PrescribedJoint, PrescribedTwist
from contactlab.scenario import scenario
from contactlab.scene import Body, JointSpec, Scene, StabilizationParams
from contactlab.shapes import Box, Cylinder, Mesh
from scenarios.basic import _AXES, CM, DENSITY, _chain, _trans, cuboid

Array = np.ndarray
#: the reference's unit of torque, 1 g cm^2/s^2, in N m
TORQUE = 1e-7
#: the reference's unit of force, 1 dyn, in N
DYN = 1e-5
_HINGE = {"loop_rows": "hinge"}


def smooth_step(start: float, end: float, duration: float) -> Callable[[float], tuple]:
    """``p(t)`` from ``start`` to ``end`` over ``duration`` [s] along the quintic smooth step.

    ``s(u) = 10 u^3 - 15 u^4 + 6 u^5`` (zero velocity and acceleration at
    both ends), held at ``end`` afterwards.  Returns position, velocity and
    acceleration.
    """
    if duration <= 0:
        raise ConfigurationError(f"smooth step duration must be positive, got {duration}")

    def p(t: float) -> tuple[float, float, float]:
        u = min(max(t / duration, 0.0), 1.0)
        d = end - start
        s = u**3 * (10 - 15 * u + 6 * u * u)
        ds = 30 * u * u * (1 - u) ** 2 / duration
        dds = 60 * u * (1 - u) * (1 - 2 * u) / duration**2
        return start + d * s, d * ds, d * dds

    return p


def constant_rate(start: float, rate: float) -> Callable[[float], tuple]:
    """``p(t) = start + rate t`` [rad or m]: a joint driven at constant speed."""
    return lambda t: (start + rate * t, rate, 0.0)


def _scene(name: str, bodies: Sequence[Body], specs: Sequence[JointSpec], **kw: Any) -> Scene:
    """A scene whose bodies keep their mass properties but no collision shapes.

    The reference scenes have no contact between links; without shapes the
    simulator runs no collision detection on them.
    """
    bare = tuple(replace(b, shapes=()) for b in bodies)
    return Scene(name, bare, tuple(specs), **kw)


def _hanging(name: str, sides: tuple[float, float, float] = (1.0, 1.0, 10.0)) -> Body:
    return cuboid(name, sides)


def _rev(
    name: str,
    parent: str | None,
    child: str,
    axis: str,
    fp: Array,
    fc: Array,
    q0: float = 0.0,
    qdot0: float = 0.0,
    **kw: Any,
) -> JointSpec:
    """A revolute joint about the axis letter ``axis`` with frames ``fp``, ``fc``."""
    return JointSpec(
        name,
        "revolute",
        parent,
        child,
        frame_parent=fp,
        frame_child=fc,
        axis=_AXES[axis],
        q0=np.array([q0]),
        qdot0=np.array([qdot0]),
        **kw,
    )


@scenario("redmax-spherical", formulations=("maximal", "reduced"))
def spherical(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 3: double spherical pendulum of 1 x 1 x 10 cm links.

    angle_deg : initial tilt of both joints [deg], the first about x, the second about y.

    Exponential-coordinate spherical joints at the links' top ends; the
    first hangs from the world origin.
    """
    a = np.deg2rad(angle_deg)
    bodies = (_hanging("link0"), _hanging("link1"))
    top = _trans(0, 0, 5)
    specs = (
        JointSpec("ball0", "spherical", None, "link0", frame_child=top, q0=np.array([a, 0, 0])),
        JointSpec(
            "ball1",
            "spherical",
            "link0",
            "link1",
            frame_parent=_trans(0, 0, -5),
            frame_child=top,
            q0=np.array([0, a, 0]),
        ),
    )
    return _scene("redmax-spherical", bodies, specs, dt=1e-2, duration=5.0)


def _four_bar(dangle_qdot: float) -> tuple[list[Body], list[JointSpec]]:
    """A fixed 20 cm top bar, two 10 cm legs, a lower bar closing the loop, a dangling link."""
    bodies = [
        cuboid("top", (20, 1, 1)),
        _hanging("leg0"),
        _hanging("leg1"),
        cuboid("bottom", (20, 1, 1)),
        _hanging("dangle"),
    ]
    top_end = _trans(0, 0, 5)
    specs = [
        JointSpec("weld", "fixed", None, "top"),
        _rev("hip0", "top", "leg0", "y", _trans(-10, 0, 0), top_end),
        _rev("knee0", "leg0", "bottom", "y", _trans(0, 0, -5), _trans(-10, 0, 0)),
        _rev("hip1", "top", "leg1", "y", _trans(10, 0, 0), top_end),
        _rev("dangle", "bottom", "dangle", "y", _trans(0, 0, 0), top_end, qdot0=dangle_qdot),
        _rev(
            "close",
            "bottom",
            "leg1",
            "y",
            _trans(10, 0, 0),
            _trans(0, 0, -5),
            closes_loop=True,
            params=_HINGE,
        ),
    ]
    return bodies, specs


@scenario("redmax-loop", formulations=("reduced", "maximal"))
def loop(dangle_qdot: float = 5.0, baumgarte: float = -1.0) -> Scene:
    """REDMAX scene 4: a parallelogram four-bar closed by a loop constraint, a dangling link.

    dangle_qdot : initial rate of the dangling link's hinge [rad/s].
    baumgarte : velocity-level factor gamma [1/s] of the loop rows; negative = default 1/h.

    The loop joint (hinge about y between the lower bar and the second
    leg) uses the 2-row form of Sueda's notes, eq. 2.90–2.91.
    """
    bodies, specs = _four_bar(dangle_qdot)
    stab = StabilizationParams(gamma=None if baumgarte < 0 else baumgarte)
    return _scene(
        "redmax-loop", tuple(bodies), tuple(specs), stabilization=stab, dt=1e-2, duration=5.0
    )


def _piecewise_torque(magnitude: float, switches: tuple[float, float]) -> Callable:
    def tau(t: float, q: Array, qdot: Array) -> Array:
        sign = 1.0 if t < switches[0] else (-1.0 if t < switches[1] else 1.0)
        return np.full(q.shape, sign * magnitude)

    return tau


@scenario("redmax-joint-torque", formulations=("reduced", "maximal"))
def joint_torque(torque: float = 100 * TORQUE) -> Scene:
    """REDMAX scene 5: 3-link chain without gravity driven by piecewise-constant joint torques.

    torque : magnitude of the torque on every joint [N m] (the reference's 100 g cm^2/s^2).

    The torque is +torque before t = 3 s, -torque until t = 6 s, +torque after.
    """
    bodies, specs = _chain(3, "R", "y", (0.0,))
    return _scene(
        "redmax-joint-torque",
        tuple(bodies),
        tuple(specs),
        gravity=np.zeros(3),
        dt=5e-2,
        duration=10.0,
        joint_torque=_piecewise_torque(torque, (3.0, 6.0)),
    )


@scenario("redmax-joint-limits", formulations=("reduced", "maximal"))
def joint_limits(limit_deg: float = 45.0) -> Scene:
    """REDMAX scene 6: 2-link chain whose second hinge is limited to [-limit, limit].

    limit_deg : the limit [deg].

    Solve with a QP backend (e.g. ``--solver osqp``): the limits are inequalities.
    """
    bodies, specs = _chain(2, "R", "y", (0.0,))
    lim = np.deg2rad(limit_deg)
    return _scene(
        "redmax-joint-limits",
        tuple(bodies),
        tuple(specs),
        constraints=(JointLimit("joint1", -lim, lim),),
        dt=1e-2,
        duration=5.0,
    )


@scenario("redmax-coupled", formulations=("reduced", "maximal"))
def coupled(ratio: float = 0.5, root_deg: float = 45.0) -> Scene:
    """REDMAX scene 7: 3-link chain with equality-constrained angles ``q_i = ratio q_(i-1)``.

    ratio : coupling factor [-].
    root_deg : initial angle of the root hinge [deg] (the others start coupled).
    """
    bodies, specs = _chain(3, "R", "y", (root_deg, root_deg * ratio, root_deg * ratio**2))
    cons = (Coupling("joint0", "joint1", ratio, 0.0), Coupling("joint1", "joint2", ratio, 0.0))
    return _scene(
        "redmax-coupled", tuple(bodies), tuple(specs), constraints=cons, dt=2e-2, duration=5.0
    )


@scenario("redmax-coupled-loop", formulations=("reduced", "maximal"))
def coupled_loop(ratio: float = 0.5, last_qdot: float = 10.0) -> Scene:
    """REDMAX scene 8: 7 bodies, a four-bar loop and a coupling on a two-link tail.

    ratio : coupling factor of the tail's second hinge to its first [-].
    last_qdot : initial rate of the last hinge [rad/s].

    The four-bar of ``redmax-loop`` carries a tail of two 10 cm links under
    its lower bar instead of the single dangling link; six revolutes about y.
    """
    bodies, specs = _four_bar(0.0)
    bodies = [b for b in bodies if b.name != "dangle"]
    specs = [s for s in specs if s.name != "dangle"]
    bodies += [_hanging("tail0"), _hanging("tail1")]
    top = _trans(0, 0, 5)
    specs += [
        _rev("tail0", "bottom", "tail0", "y", _trans(0, 0, 0), top),
        _rev("tail1", "tail0", "tail1", "y", _trans(0, 0, -5), top, qdot0=last_qdot),
    ]
    cons = (Coupling("tail0", "hip0", ratio, 0.0),)
    return _scene(
        "redmax-coupled-loop",
        tuple(bodies),
        tuple(specs),
        constraints=cons,
        dt=2e-2,
        duration=5.0,
    )


@scenario("redmax-hybrid", formulations=("reduced", "maximal"))
def hybrid(target_deg: float = 270.0, duration_s: float = 7.0) -> Scene:
    """REDMAX scene 9: 3-link chain without gravity, the root hinge prescribed.

    target_deg : final angle of the root hinge [deg] (the reference's 1.5 pi).
    duration_s : time to reach it along a quintic smooth step [s].
    """
    bodies, specs = _chain(3, "R", "y", (0.0,))
    move = PrescribedJoint("joint0", smooth_step(0.0, np.deg2rad(target_deg), duration_s))
    return _scene(
        "redmax-hybrid",
        tuple(bodies),
        tuple(specs),
        constraints=(move,),
        gravity=np.zeros(3),
        dt=1e-2,
        duration=10.0,
    )


@scenario("redmax-world-force", formulations=("maximal", "reduced"))
def world_force(force: float = 1e3 * DYN, damping: float = 10.0) -> Scene:
    """REDMAX scene 10: 3-link chain without gravity pulled at its tip by a world force.

    force : constant force along +z at the last link's far end [N] (the reference's 1e3 dyn).
    damping : body damping in the reference's units (g/s linear, g cm^2/s angular).
    """
    bodies, specs = _chain(3, "R", "y", (0.0,))
    forces = (
        PointForce("link2", np.array([5 * CM, 0, 0]), np.array([0, 0, force])),
        BodyDamping(angular=damping * 1e-7, linear=damping * 1e-3),
    )
    return _scene(
        "redmax-world-force",
        tuple(bodies),
        tuple(specs),
        forces=forces,
        gravity=np.zeros(3),
        dt=1e-2,
        duration=5.0,
    )


@scenario("redmax-joint-spring", formulations=("reduced", "maximal"))
def joint_spring(stiffness: float = 1e4 * TORQUE, damping: float = 1e3 * TORQUE) -> Scene:
    """REDMAX scene 11: 3-link chain without gravity with joint springs and dampers.

    stiffness : joint stiffness [N m/rad] (the reference's 1e4).
    damping : joint damping [N m s/rad] (the reference's 1e3).

    The root hinge starts at 1 rad/s; rest angles are zero.
    """
    bodies, specs = _chain(3, "R", "y", (0.0,))
    specs = [
        JointSpec(
            s.name,
            s.kind,
            s.parent,
            s.child,
            frame_parent=s.frame_parent,
            frame_child=s.frame_child,
            axis=s.axis,
            q0=s.q0,
            qdot0=np.array([1.0 if i == 0 else 0.0]),
            stiffness=stiffness,
            damping=damping,
        )
        for i, s in enumerate(specs)
    ]
    return _scene(
        "redmax-joint-spring",
        tuple(bodies),
        tuple(specs),
        gravity=np.zeros(3),
        dt=2e-2,
        duration=5.0,
    )


@scenario("redmax-maximal-hybrid", formulations=("reduced", "maximal"))
def maximal_hybrid(spin: float = 2.0) -> Scene:
    """REDMAX scene 13: 4-link chain; three components of the last body's twist prescribed.

    spin : the last link's angular velocity about its y axis [rad/s].

    The last link turns at ``spin`` about y while its centre's velocity is
    held at zero (body-frame twist components omega_y, nu_x, nu_z), so the
    chain keeps one free degree of freedom.  The prescription acts on
    velocities only (no position feedback), so at the reference's
    h = 5e-2 s the centre creeps by centimetres over the run.
    """
    bodies, specs = _chain(4, "R", "y", (30.0, 30.0, -30.0, -30.0))
    twist = PrescribedTwist("link3", (1, 3, 5), lambda t: ((spin, 0.0, 0.0), (0.0, 0.0, 0.0)))
    return _scene(
        "redmax-maximal-hybrid",
        tuple(bodies),
        tuple(specs),
        constraints=(twist,),
        dt=5e-2,
        duration=5.0,
    )


@scenario("redmax-universal", formulations=("maximal", "reduced"))
def universal(angle_deg: float = 22.5) -> Scene:
    """REDMAX scene 14: three 1 x 1 x 10 cm links on universal joints (x then y).

    angle_deg : initial angle [deg]; joints alternate between their first
        and second angle (the reference's pi/8).
    """
    a = np.deg2rad(angle_deg)
    bodies = tuple(_hanging(f"link{i}") for i in range(3))
    specs = tuple(
        JointSpec(
            f"ujoint{i}",
            "universal",
            None if i == 0 else f"link{i - 1}",
            f"link{i}",
            frame_parent=np.eye(4) if i == 0 else _trans(0, 0, -5),
            frame_child=_trans(0, 0, 5),
            q0=np.array([a, 0.0] if i % 2 == 0 else [0.0, a]),
        )
        for i in range(3)
    )
    return _scene("redmax-universal", bodies, specs, dt=1e-2, duration=5.0)


@scenario("redmax-prismatic", formulations=("reduced", "maximal"))
def prismatic(leg_deg: float = 30.0) -> Scene:
    """REDMAX scene 15: fixed base, revolute leg, slider along x, revolute legs, one loop.

    leg_deg : initial angle of the dangling leg [deg].

    A 20 cm base is welded to the world; a leg hangs from its left end; a
    10 cm slider moves along its own x on the leg's foot; a second leg
    stands on the slider's right end and closes the loop at the base's
    right end (2-row hinge closure); a third leg dangles from the slider.
    """
    bodies = (
        cuboid("base", (20, 1, 1)),
        _hanging("leg0"),
        cuboid("slider", (10, 1, 1)),
        _hanging("leg1"),
        _hanging("leg2"),
    )
    top, foot = _trans(0, 0, 5), _trans(0, 0, -5)
    specs = (
        JointSpec("weld", "fixed", None, "base"),
        _rev("hip", "base", "leg0", "y", _trans(-10, 0, 0), top),
        JointSpec(
            "slide",
            "prismatic",
            "leg0",
            "slider",
            frame_parent=foot,
            frame_child=_trans(-5, 0, 0),
            axis=_AXES["x"],
            q0=np.array([10 * CM]),
        ),
        _rev("stand", "slider", "leg1", "y", _trans(5, 0, 0), foot),
        _rev("dangle", "slider", "leg2", "y", _trans(0, 0, 0), top, q0=np.deg2rad(leg_deg)),
        _rev(
            "close",
            "leg1",
            "base",
            "y",
            top,
            _trans(10, 0, 0),
            closes_loop=True,
            params=_HINGE,
        ),
    )
    return _scene("redmax-prismatic", bodies, specs, dt=1e-2, duration=5.0)


@scenario("redmax-planar", formulations=("maximal", "reduced"))
def planar(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 16: a 10 x 10 x 1 cm plate on a planar joint (x-y plane) with two hanging links.

    angle_deg : initial angle of both hanging links [deg].

    The links hang from two corners on hinges about y and x; their swing
    drives the plate around the horizontal plane.
    """
    a = np.deg2rad(angle_deg)
    bodies = (cuboid("plate", (10, 10, 1)), _hanging("link0"), _hanging("link1"))
    top = _trans(0, 0, 5)
    specs = (
        JointSpec("plane", "planar", None, "plate", q0=np.array([0.0, 0.0])),
        _rev("hinge0", "plate", "link0", "y", _trans(5, 5, -0.5), top, q0=a),
        _rev("hinge1", "plate", "link1", "x", _trans(-5, -5, -0.5), top, q0=a),
    )
    return _scene("redmax-planar", bodies, specs, dt=1e-2, duration=5.0)


@scenario("redmax-translational", formulations=("maximal", "reduced"))
def translational(rate0: float = 2.0, rate1: float = 1.0) -> Scene:
    """REDMAX scene 17: a plate on a translational joint with two hinged links, no gravity.

    rate0, rate1 : initial hinge rates of the two links [rad/s].

    No external force acts, so the total linear momentum stays zero.
    """
    bodies = (cuboid("plate", (10, 10, 1)), _hanging("link0"), _hanging("link1"))
    top = _trans(0, 0, 5)
    specs = (
        JointSpec("slide", "translational", None, "plate", q0=np.array([0.0, 0.0, 0.0])),
        _rev("hinge0", "plate", "link0", "y", _trans(5, 5, -0.5), top, qdot0=rate0),
        _rev("hinge1", "plate", "link1", "x", _trans(-5, -5, -0.5), top, qdot0=rate1),
    )
    return _scene("redmax-translational", bodies, specs, gravity=np.zeros(3), dt=1e-2, duration=5.0)


@scenario("redmax-free", formulations=("maximal", "reduced"))
def free(spin: float = 1.0) -> Scene:
    """REDMAX scene 18: a 1 cm cube on a free joint under the reference's weak gravity (1 cm/s^2).

    spin : initial angular velocity about the body's (1, 1, 1) direction [rad/s].
    """
    cube = cuboid("cube", (1, 1, 1))
    w = spin * np.ones(3) / np.sqrt(3)
    specs = (JointSpec("free", "free", None, "cube", q0=np.zeros(6), qdot0=np.r_[w, 0, 0, 0]),)
    return _scene(
        "redmax-free", (cube,), specs, gravity=np.array([0, 0, -1.0 * CM]), dt=1e-2, duration=7.0
    )


@scenario("redmax-cylindrical", formulations=("maximal", "reduced"))
def cylindrical(angle_deg: float = 45.0, slide_rate: float = 0.05) -> Scene:
    """REDMAX scene 19: a 1 x 1 x 10 cm body on a cylindrical joint (revolute + prismatic x).

    angle_deg : initial angle about x [deg].
    slide_rate : initial sliding rate along x [m/s].
    """
    specs = (
        JointSpec(
            "cylinder",
            "cylindrical",
            None,
            "link",
            frame_child=_trans(0, 0, 5),
            axis=_AXES["x"],
            q0=np.array([np.deg2rad(angle_deg), 0.0]),
            qdot0=np.array([0.0, slide_rate]),
        ),
    )
    return _scene("redmax-cylindrical", (_hanging("link"),), specs, dt=2e-2, duration=5.0)


@scenario("redmax-reduced-maximal-hybrid", formulations=("reduced", "maximal"))
def reduced_maximal_hybrid(spin: float = 1.0, rate: float = 1.0) -> Scene:
    """REDMAX scene 20: 5-link chain; last body's twist and the third hinge prescribed.

    spin : angular velocity of the last link about its y axis [rad/s].
    rate : constant rate of the third hinge [rad/s].
    """
    bodies, specs = _chain(5, "R", "y", (30.0, 30.0, 0.0, -30.0, -30.0))
    cons = (
        PrescribedTwist("link4", (1, 3, 5), lambda t: ((spin, 0.0, 0.0), (0.0, 0.0, 0.0))),
        PrescribedJoint("joint2", constant_rate(0.0, rate)),
    )
    return _scene(
        "redmax-reduced-maximal-hybrid",
        tuple(bodies),
        tuple(specs),
        constraints=cons,
        dt=1e-2,
        duration=5.0,
    )


@scenario("redmax-spline-curve", formulations=("reduced",))
def spline_curve(radius_cm: float = 5.0) -> Scene:
    """REDMAX scene 21: revolute link, cyclic cubic B-spline curve joint, revolute link.

    radius_cm : the four control frames sit on a square of this half-size [cm]
        around the first link's end, turned by 90 deg about z from one to the next.
    """
    r = radius_cm * CM
    frames = np.array(
        [
            se3.make_transform(se3.exp_so3([0, 0, k * np.pi / 2]), [r * c, r * s, 0.0])
            for k, (c, s) in enumerate(((1, 0), (0, 1), (-1, 0), (0, -1)))
        ]
    )
    bodies = (_hanging("link0"), cuboid("rider", (2, 2, 2)), _hanging("link1"))
    top = _trans(0, 0, 5)
    specs = (
        _rev("hinge0", None, "link0", "x", np.eye(4), top, q0=0.3),
        JointSpec(
            "curve",
            "spline_curve",
            "link0",
            "rider",
            frame_parent=_trans(0, 0, -5),
            params={"frames": frames, "cyclic": True},
            q0=np.array([0.0]),
            qdot0=np.array([1.0]),
        ),
        _rev("hinge1", "rider", "link1", "y", _trans(0, 0, -1), top, q0=0.3),
    )
    return _scene("redmax-spline-curve", bodies, specs, dt=5e-3, duration=5.0)


@scenario("redmax-spline-surface", formulations=("reduced",))
def spline_surface(curvature: float = 5.0) -> Scene:
    """REDMAX scene 22: revolute link, a bicubic surface joint shaped as a bowl, revolute link.

    curvature : the bowl is ``z = c (x^2 + y^2)`` with ``c`` in 1/m (the
        reference's 0.05 per cm); 4 x 4 control points spaced 5 cm.
    """
    g = (np.arange(4) - 1.5) * 5 * CM
    values = np.zeros((4, 4, 6))
    values[..., 0], values[..., 1] = np.meshgrid(g, g, indexing="ij")
    values[..., 2] = curvature * (values[..., 0] ** 2 + values[..., 1] ** 2)
    bodies = (_hanging("link0"), cuboid("rider", (2, 2, 2)), _hanging("link1"))
    top = _trans(0, 0, 5)
    specs = (
        _rev("hinge0", None, "link0", "x", np.eye(4), top, q0=0.2),
        JointSpec(
            "bowl",
            "spline_surface",
            "link0",
            "rider",
            frame_parent=_trans(0, 0, -5),
            params={"values": values},
            q0=np.array([0.3, 0.6]),
        ),
        _rev("hinge1", "rider", "link1", "y", _trans(0, 0, -1), top, q0=0.3),
    )
    return _scene("redmax-spline-surface", bodies, specs, dt=5e-3, duration=5.0)


@scenario("redmax-composite-body", formulations=("maximal", "reduced"))
def composite_body(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 25: a body made of a 10 x 1 x 1 cm cuboid and a cylinder (r 1 cm, h 10 cm).

    angle_deg : initial hinge angle [deg].

    The cylinder lies along the cuboid's far half, offset by 1.5 cm; the
    body's frame is the composite's principal frame (Sueda's notes §1.7.1), and
    the hinge about y sits at the cuboid's near end.
    """
    parts = [
        Box(half_extents=0.5 * CM * np.array([10.0, 1.0, 1.0])),
        Cylinder(
            radius=1 * CM,
            half_height=5 * CM,
            pose=se3.make_transform(se3.exp_so3([0, np.pi / 2, 0]), [5 * CM, 0, 1.5 * CM]),
        ),
    ]
    result = composite("body", parts, densities=DENSITY)
    hinge_in_body = se3.inverse(result.frame) @ _trans(-5, 0, 0)
    spec = JointSpec(
        "hinge",
        "revolute",
        None,
        "body",
        frame_child=_orthonormal(hinge_in_body),
        axis=_AXES["y"],
        q0=np.array([np.deg2rad(angle_deg)]),
    )
    return _scene("redmax-composite-body", (result.body,), (spec,), dt=1e-2, duration=5.0)


def _orthonormal(E: Array) -> Array:
    """Re-orthonormalise a transform's rotation (SVD) against rounding."""
    U, _, Vt = np.linalg.svd(E[:3, :3])
    out = E.copy()
    out[:3, :3] = U @ Vt
    return out


@scenario("redmax-mesh-body", formulations=("maximal", "reduced"))
def mesh_body(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 26: two links whose inertia comes from a triangle mesh (a 10 x 1 x 1 cm box).

    angle_deg : initial angle of both hinges (about y) [deg].
    """
    import trimesh  # imported here: it takes ~0.6 s and only this scene needs it

    box = trimesh.creation.box(extents=[10 * CM, 1 * CM, 1 * CM])
    bodies, specs = [], []
    for i in range(2):
        body, shape_in_body = body_from_shape(f"link{i}", Mesh.from_trimesh(box), density=DENSITY)
        bodies.append(body)
        end = _orthonormal(shape_in_body @ _trans(-5, 0, 0))
        specs.append(
            JointSpec(
                f"hinge{i}",
                "revolute",
                None if i == 0 else "link0",
                f"link{i}",
                frame_parent=np.eye(4) if i == 0 else _orthonormal(_far_end(shape_in_body)),
                frame_child=end,
                axis=_AXES["y"],
                q0=np.array([np.deg2rad(angle_deg)]),
            )
        )
    return _scene("redmax-mesh-body", tuple(bodies), tuple(specs), dt=1e-2, duration=1.0)


def _far_end(shape_in_body: Array) -> Array:
    """The far end (+5 cm along the mesh's x) of a mesh link, in its body frame."""
    return shape_in_body @ _trans(5, 0, 0)


@scenario("redmax-gears", formulations=("reduced", "maximal"))
def gears(ratio: float = -1.0, rate: float = 2.0) -> Scene:
    """REDMAX scene 34: two axles on hinges about z coupled by ``q_b = ratio q_a``.

    ratio : gear ratio [-] (meshing gears turn opposite ways: -1).
    rate : initial rate of the first axle [rad/s] (the second starts coupled).

    The axles are 1 x 1 x 10 cm links standing along z, 4 cm apart, under
    gravity (which does no work on them).
    """
    bodies = (_hanging("axle0"), _hanging("axle1"))
    specs = (
        _rev("axle0", None, "axle0", "z", _trans(-2, 0, 0), np.eye(4), qdot0=rate),
        _rev("axle1", None, "axle1", "z", _trans(2, 0, 0), np.eye(4), qdot0=ratio * rate),
    )
    return _scene(
        "redmax-gears",
        bodies,
        specs,
        constraints=(Coupling("axle0", "axle1", ratio, 0.0),),
        dt=1e-2,
        duration=5.0,
    )


@scenario("redmax-free2d", formulations=("reduced", "maximal"))
def free2d(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 35: a planar free joint (x-y translation, turn about z) with a hinged child.

    angle_deg : initial angle of the child hinge [deg].

    Gravity is (0, -1 cm/s^2, 0) as in the reference, in the joint's plane.
    """
    bodies = (cuboid("base", (10, 1, 1)), cuboid("arm", (10, 1, 1)))
    specs = (
        JointSpec(
            "free2d",
            "composite",
            None,
            "base",
            params={"joints": [{"kind": "planar"}, {"kind": "revolute", "axis": _AXES["z"]}]},
            q0=np.array([0.0, 0.0, 0.0]),
            qdot0=np.array([0.0, 0.0, 0.5]),
        ),
        _rev(
            "hinge", "base", "arm", "z", _trans(5, 0, 0), _trans(-5, 0, 0), q0=np.deg2rad(angle_deg)
        ),
    )
    return _scene(
        "redmax-free2d",
        bodies,
        specs,
        gravity=np.array([0.0, -1.0 * CM, 0.0]),
        dt=1e-2,
        duration=10.0,
    )
