"""Jointed chains: the pendulum and the REDMAX reference scenes 0, 1, 2, 23 and 24.

The REDMAX scenes are built in SI units with the reference's shapes scaled
from centimetres to metres and its density 1 g/cm^3 kept as 1000 kg/m^3, so
a 10 x 1 x 1 cm link is 0.1 x 0.01 x 0.01 m of 0.01 kg: every length,
mass and inertia is the reference's converted exactly (1 cm = 0.01 m,
1 g = 1e-3 kg); gravity is contactlab's 9.81 m/s^2 (the reference's
980 cm/s^2 is 9.80 m/s^2).  Forces convert with 1 dyn = 1e-5 N: the
spring-damper's stiffness per unit strain 1e6 dyn = 10 N and damping
1e3 g/s = 1 N s/m, the point-to-point springs' 1e2 g/s^2 = 0.1 N/m.

A link's body frame sits at its centre; joints sit at the link ends (the
reference's "joint transform" ``T_j`` and "body transform" ``T_b`` give
``frame_parent = inv(T_b,parent) T_j`` and ``frame_child = inv(T_b,child)``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.errors import ConfigurationError
from contactlab.scenario import scenario
from contactlab.scene import Body, JointSpec, Scene, StabilizationParams
from contactlab.shapes import Box

Array = NDArray[np.float64]

#: The reference's unit of length in metres and its density [kg/m^3].
CM = 0.01
DENSITY = 1000.0
_AXES = {k: np.eye(3)[i] for i, k in enumerate("xyz")}


#: The REDMAX reference scenes have no contact between links; the links keep
#: their box shapes for mass properties and drawing, but collision is off.


def _trans(x: float, y: float, z: float) -> Array:
    return se3.make_transform(None, np.array([x, y, z]) * CM)


def cuboid(name: str, sides_cm: tuple[float, float, float], density: float = DENSITY) -> Body:
    """A box body of the given side lengths [cm] and ``density`` [kg/m^3]."""
    body, _ = body_from_shape(
        name, Box(half_extents=0.5 * CM * np.array(sides_cm)), density=density
    )
    return body


def _axis(letter: str) -> Array:
    if letter not in _AXES:
        raise ConfigurationError(
            f"axes: the axis letter {letter!r} must be one of x, y, z (e.g. --set axes=yx)"
        )
    return _AXES[letter]


@scenario("pendulum", formulations=("maximal", "reduced"))
def pendulum(
    length: float = 1.0, mass: float = 1.0, angle_deg: float = 10.0, width: float = 0.02
) -> Scene:
    """One thin box link on a hinge about y at the world origin, released at rest.

    length : link length [m].
    mass : link mass [kg].
    angle_deg : initial angle from the downward vertical [deg].
    width : side of the link's square cross-section [m].

    Small-amplitude period ``2 pi sqrt(I_pivot / (m g d))`` with
    ``I_pivot = m (length^2 + width^2)/12 + m d^2`` and ``d = length/2``.
    """
    if not (length > 0 and width > 0 and mass > 0):
        raise ConfigurationError("pendulum length, width and mass must be positive")
    body, _ = body_from_shape(
        "link", Box(half_extents=0.5 * np.array([length, width, width])), mass=mass
    )
    hinge = JointSpec(
        "hinge",
        "revolute",
        None,
        "link",
        # joint frame turned so that the link (its x axis) hangs down at q = 0
        frame_parent=se3.make_transform(se3.exp_so3([0.0, np.pi / 2, 0.0])),
        frame_child=se3.make_transform(None, [-0.5 * length, 0.0, 0.0]),
        axis=_AXES["y"],
        q0=np.array([np.deg2rad(angle_deg)]),
    )
    return Scene("pendulum", (body,), (hinge,), collision=False, dt=1e-3, duration=5.0)


def _chain(
    n_links: int, kinds: str, axes: str, angles_deg: tuple[float, ...]
) -> tuple[list[Body], list[JointSpec]]:
    """Links 10 x 1 x 1 cm along x, joined end to end; the root hinge sits at the origin."""
    if n_links < 1:
        raise ConfigurationError(f"n_links must be at least 1, got {n_links}")
    if not kinds or any(k not in "RF" for k in kinds):
        raise ConfigurationError(
            f"joints must be a string of R (revolute) and F (fixed), got {kinds!r}"
        )
    if not axes or not angles_deg:
        raise ConfigurationError("axes and angles_deg must not be empty")
    bodies, joints = [], []
    n_rev = 0
    for i in range(n_links):
        bodies.append(cuboid(f"link{i}", (10.0, 1.0, 1.0)))
        parent = None if i == 0 else f"link{i - 1}"
        frame_parent = np.eye(4) if i == 0 else _trans(5.0, 0.0, 0.0)
        frame_child = _trans(-5.0, 0.0, 0.0)
        name, child = f"joint{i}", f"link{i}"
        if kinds[i % len(kinds)] == "R":
            axis = _axis(axes[n_rev % len(axes)])
            q0 = np.array([np.deg2rad(angles_deg[n_rev % len(angles_deg)])])
            spec = JointSpec(
                name, "revolute", parent, child, frame_parent, frame_child, axis, q0=q0
            )
            n_rev += 1
        else:
            spec = JointSpec(name, "fixed", parent, child, frame_parent, frame_child)
        joints.append(spec)
    return bodies, joints


@scenario("chain", formulations=("maximal", "reduced"))
def chain(
    n_links: int = 5,
    joints: str = "RF",
    axes: str = "y",
    angles_deg: tuple = (45.0,),
    baumgarte: float = -1.0,
) -> Scene:
    """Serial chain of 10 x 1 x 1 cm links (REDMAX scenes 0 and 1).

    n_links : number of links.
    joints : joint kinds cycled along the chain, R = revolute, F = fixed.
    axes : revolute axes cycled over the revolute joints (letters x, y, z).
    angles_deg : initial angles of the revolute joints, cycled [deg].
    baumgarte : velocity-level factor gamma [1/s]; negative = default 1/h.

    The defaults are scene 0 (5 links, revolute about y and fixed joints
    alternating, revolutes at 45 deg); scene 1 is
    ``n_links=3 joints=R axes=zyz angles_deg=0,90,90``.
    """
    bodies, specs = _chain(n_links, joints, axes, tuple(angles_deg))
    stab = StabilizationParams(gamma=None if baumgarte < 0 else baumgarte)
    return Scene(
        "chain",
        tuple(bodies),
        tuple(specs),
        stabilization=stab,
        collision=False,
        dt=1e-2,
        duration=5.0,
    )


@scenario("branching", formulations=("maximal", "reduced"))
def branching(angle_deg: float = 45.0) -> Scene:
    """REDMAX scene 2: a vertical link, a crossbar and two hanging links.

    angle_deg : initial angle of the two hanging links' hinges [deg].

    A 1 x 1 x 10 cm link hangs from a hinge about x at 15 cm height; a
    1 x 20 x 1 cm crossbar turns about z under it; 1 x 1 x 10 cm links hang
    from the crossbar's ends on hinges about x and y.
    """
    q = np.deg2rad(angle_deg)
    bodies = (
        cuboid("upright", (1.0, 1.0, 10.0)),
        cuboid("crossbar", (1.0, 20.0, 1.0)),
        cuboid("left", (1.0, 1.0, 10.0)),
        cuboid("right", (1.0, 1.0, 10.0)),
    )
    top = _trans(0.0, 0.0, 5.0)  # joint at the top end of a hanging link
    specs = (
        JointSpec(
            "top",
            "revolute",
            None,
            "upright",
            frame_parent=_trans(0, 0, 15),
            frame_child=top,
            axis=_AXES["x"],
            q0=np.array([0.0]),
        ),
        JointSpec(
            "middle",
            "revolute",
            "upright",
            "crossbar",
            frame_parent=_trans(0, 0, -5),
            axis=_AXES["z"],
            q0=np.array([0.0]),
        ),
        JointSpec(
            "left",
            "revolute",
            "crossbar",
            "left",
            frame_parent=_trans(0, -10, 0),
            frame_child=top,
            axis=_AXES["x"],
            q0=np.array([q]),
        ),
        JointSpec(
            "right",
            "revolute",
            "crossbar",
            "right",
            frame_parent=_trans(0, 10, 0),
            frame_child=top,
            axis=_AXES["y"],
            q0=np.array([q]),
        ),
    )
    return Scene("branching", bodies, specs, collision=False, dt=1e-2, duration=5.0)


@scenario("spring-chain", formulations=("maximal", "reduced"))
def spring_chain(
    n_links: int = 4, stiffness: float = 0.1, root_deg: float = 90.0, angle_deg: float = 11.25
) -> Scene:
    """REDMAX scene 23: a hinged chain whose neighbouring links are also joined by springs.

    n_links : number of 10 x 1 x 1 cm links on hinges about y.
    stiffness : zero-rest-length spring constant [N/m] (the reference's 1e2 g/s^2).
    root_deg : initial angle of the root hinge [deg].
    angle_deg : initial angle of the other hinges [deg] (the reference's pi/16).

    Spring ``i`` joins the point (-1, 0, 0) cm of link ``i-1`` to the point
    (5, 0, 0) cm (the far end) of link ``i``.
    """
    from contactlab.forces.springs import ZeroLengthSpring

    bodies, specs = _chain(n_links, "R", "y", (root_deg,) + (angle_deg,) * max(n_links - 1, 0))
    springs = tuple(
        ZeroLengthSpring(
            f"link{i - 1}", np.array([-CM, 0, 0]), f"link{i}", np.array([5 * CM, 0, 0]), stiffness
        )
        for i in range(1, n_links)
    )
    return Scene(
        "spring-chain",
        tuple(bodies),
        tuple(specs),
        forces=springs,
        collision=False,
        dt=1e-2,
        duration=5.0,
    )


@scenario("spring-damper", formulations=("maximal", "reduced"))
def spring_damper(stiffness: float = 10.0, damping: float = 1.0) -> Scene:
    """REDMAX scene 24: a welded link carrying two hinged links and a spring-damper.

    stiffness : k [N] per unit strain (the reference's 1e6 dyn).
    damping : axial damping [N s/m] (the reference's 1e3 g/s in ``f = -d v``).

    The reference's force is ``k (l - L)/L + d ldot``; contactlab's
    spring-damper takes its damping per unit strain rate, so it is given
    ``damping * L`` [N s].

    Link 0 is welded to the world (its end at the origin), link 1 hinges about
    y at its far end starting at 90 deg, link 2 hinges on link 1 at -90 deg;
    the spring-damper joins (-2, 0, -0.5) cm on link 0 and (1, 0.5, -0.5) cm on
    link 1 with its rest length equal to the initial distance.
    """
    from contactlab.forces.springs import SpringDamper
    from contactlab.joints.placement import place_bodies

    bodies = tuple(cuboid(f"link{i}", (10.0, 1.0, 1.0)) for i in range(3))
    end, start = _trans(5.0, 0.0, 0.0), _trans(-5.0, 0.0, 0.0)
    specs = (
        JointSpec("weld", "fixed", None, "link0", frame_child=start),
        JointSpec(
            "hinge1",
            "revolute",
            "link0",
            "link1",
            frame_parent=end,
            frame_child=start,
            axis=_AXES["y"],
            q0=np.array([np.pi / 2]),
        ),
        JointSpec(
            "hinge2",
            "revolute",
            "link1",
            "link2",
            frame_parent=end,
            frame_child=start,
            axis=_AXES["y"],
            q0=np.array([-np.pi / 2]),
        ),
    )
    p1, p2 = np.array([-2.0, 0.0, -0.5]) * CM, np.array([1.0, 0.5, -0.5]) * CM
    scene = Scene("spring-damper", bodies, specs, collision=False, dt=1e-2, duration=5.0)
    E, _ = place_bodies(scene)
    rest = float(np.linalg.norm(se3.transform_points(E[1], p2) - se3.transform_points(E[0], p1)))
    damper = SpringDamper("link0", p1, "link1", p2, stiffness, damping * rest, rest)
    return scene.with_(forces=(damper,))
