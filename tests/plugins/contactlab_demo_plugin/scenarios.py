"""Scenarios: scenes that use the outside constraint type, joint kind and formulation."""

from __future__ import annotations

import numpy as np

from contactlab import se3
from contactlab.scenario import scenario
from contactlab.scene import Body, JointSpec, Scene


def _box(mass: float, side: float) -> Body:
    inertia = np.full(3, mass * side**2 / 6.0)  # solid cube [kg m^2]
    return Body("box", mass, inertia)


@scenario("plugin-glide", formulations=("maximal",))
def glide(height: float = 1.0, speed: float = 0.7, mass: float = 2.0) -> Scene:
    """A cube held at a fixed height by the outside constraint, moving along x.

    height : height of the centre of mass [m].
    speed : initial speed along x [m/s].
    mass : [kg].
    """
    E = se3.make_transform(None, [0.0, 0.0, height])[None]
    phi = np.array([[0.0, 0.0, 0.0, speed, 0.0, 0.0]])
    hold = JointSpec("hold", "plugin-fixed-height", None, "box", params={"height": height})
    return Scene(
        "plugin-glide",
        (_box(mass, 0.2),),
        (hold,),
        initial_E=E,
        initial_phi=phi,
        collision=False,
        dt=1e-2,
        duration=0.5,
    )


@scenario("plugin-screw", formulations=("reduced",))
def screw(pitch: float = 0.05, mass: float = 1.5) -> Scene:
    """A cube on the outside helical joint about the vertical, released at rest.

    pitch : advance along z per radian [m/rad].
    mass : [kg].
    """
    joint = JointSpec("screw", "plugin-helical", None, "box", params={"pitch": pitch})
    return Scene(
        "plugin-screw", (_box(mass, 0.2),), (joint,), collision=False, dt=1e-2, duration=0.5
    )


@scenario("plugin-slot", formulations=("reduced", "maximal"))
def slot(length: float = 0.4, angle: float = 0.6, mass: float = 1.0) -> Scene:
    """A rod hanging from a pin that slides freely in a horizontal slot (along x).

    length : rod length [m]; the pin is at its top end.
    angle : initial swing about the horizontal pin axis (world -y) [rad].
    mass : [kg].
    """
    side = 0.02
    rod = Body(
        "rod",
        mass,
        mass / 12.0 * np.array([length**2 + side**2, length**2 + side**2, 2 * side**2]),
    )
    turn = se3.make_transform(se3.exp_so3(np.array([np.pi / 2, 0.0, 0.0])))  # joint z = world -y
    joint = JointSpec(
        "slot",
        "plugin-pin-slot",
        None,
        "rod",
        frame_parent=se3.make_transform(None, [0.0, 0.0, 1.0]) @ turn,
        frame_child=se3.make_transform(None, [0.0, 0.0, length / 2]) @ turn,
        q0=np.array([0.0, angle]),
    )
    return Scene("plugin-slot", (rod,), (joint,), collision=False, dt=1e-3, duration=0.3)


@scenario("plugin-throw", formulations=("plugin-particle", "maximal"))
def throw(speed_x: float = 0.5, speed_z: float = 2.0, mass: float = 1.0) -> Scene:
    """A cube thrown without spin from 1 m high (no ground).

    speed_x : initial horizontal speed [m/s].
    speed_z : initial vertical speed [m/s].
    mass : [kg].
    """
    E = se3.make_transform(None, [0.0, 0.0, 1.0])[None]
    phi = np.array([[0.0, 0.0, 0.0, speed_x, 0.0, speed_z]])
    return Scene(
        "plugin-throw",
        (_box(mass, 0.2),),
        initial_E=E,
        initial_phi=phi,
        collision=False,
        dt=1e-2,
        duration=0.5,
    )


SCENARIOS = {s.name: s for s in (glide, screw, slot, throw)}
