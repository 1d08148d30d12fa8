"""Scenes with parametrically controlled bodies (ArtiSynth's notes §0.21).

A driven body follows a prescribed trajectory (``Attachment(body,
trajectory=...)``): the maximal formulation removes it from the unknowns and
feeds its prescribed velocity into the step, so it moves exactly along its
path whatever loads it carries.

* ``box-platform``: a cube resting on a platform that accelerates uniformly
  along x; friction carries the cube along up to the acceleration ``mu g``.
* ``platform-pendulum``: a pendulum hinged to a platform that oscillates
  along x (the moving-pivot pendulum).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.attachment import Attachment
from contactlab.bodies import body_from_shape
from contactlab.errors import ConfigurationError
from contactlab.scenario import scenario
from contactlab.scene import Body, ContactParams, JointSpec, Scene
from contactlab.shapes import Box

Array = NDArray[np.float64]

G = 9.81


def _positive(**values: float) -> None:
    for name, v in values.items():
        if not (np.isfinite(v) and v > 0):
            raise ConfigurationError(f"parameter {name} must be positive, got {v}")


def along_x(x: Callable[[float], float]) -> Callable[[float], Array]:
    """The trajectory ``t -> (4, 4)`` translating a driving frame to ``(x(t), 0, 0)`` [m]."""

    def pose(t: float) -> Array:
        return se3.make_transform(None, [x(t), 0.0, 0.0])

    return pose


@scenario("box-platform")
def box_platform(
    acceleration: float = 3.0, mu: float = 0.5, size: float = 0.2, mass: float = 1.0
) -> Scene:
    """A cube resting on a platform driven along x with constant acceleration.

    acceleration : the platform's acceleration [m/s^2] (it starts at rest).
    mu : friction coefficient between cube and platform.
    size : cube side [m].
    mass : cube mass [kg].

    Prediction: the cube sticks to the platform while ``acceleration <= mu g``
    and then moves with it; above, it slides back relative to the platform
    and accelerates at ``mu g``, falling behind by ``(a - mu g) t^2 / 2``.
    """
    _positive(size=size, mass=mass)
    if not (np.isfinite(acceleration) and np.isfinite(mu) and mu >= 0):
        raise ConfigurationError(
            f"box-platform needs a finite acceleration and mu >= 0, got {acceleration}, {mu}"
        )
    half = 0.5 * size
    duration = 1.0
    length = 2.0 + 0.5 * abs(acceleration) * duration**2  # the cube stays on the platform
    platform, _ = body_from_shape(
        "platform", Box(half_extents=np.array([length, 0.5, 0.05])), mass=20.0
    )
    cube, _ = body_from_shape("box", Box(half_extents=np.full(3, half)), mass=mass)
    E = np.array(
        [se3.make_transform(None, [0.0, 0.0, -0.05]), se3.make_transform(None, [0.0, 0.0, half])]
    )
    a_box = min(abs(acceleration), mu * G) * np.sign(acceleration)
    return Scene(
        "box-platform",
        (platform, cube),
        attachments=(
            Attachment("platform", trajectory=along_x(lambda t: 0.5 * acceleration * t * t)),
        ),
        initial_E=E,
        initial_phi=np.zeros((2, 6)),
        contact=ContactParams(margin=0.005, stabilization=None, max_correction=0.5, mu=mu),
        dt=5e-3,
        duration=duration,
        extras={"sticks": bool(abs(acceleration) <= mu * G), "box_acceleration": float(a_box)},
    )


@scenario("platform-pendulum")
def platform_pendulum(
    amplitude: float = 0.2,
    frequency: float = 1.5,
    angle_deg: float = 40.0,
    length: float = 0.6,
    mass: float = 1.0,
) -> Scene:
    """A pendulum hinged (about y) to a platform oscillating along x.

    amplitude : platform amplitude [m]; x(t) = amplitude sin(2 pi frequency t).
    frequency : platform frequency [Hz].
    angle_deg : initial angle of the pendulum from the downward vertical [deg].
    length : distance from the hinge to the bob's centre of mass [m].
    mass : bob mass [kg].

    Prediction: with ``I`` the bob's inertia about its centre (y axis), the
    angle obeys ``(I + m l^2) theta'' = m l cos(theta) x''(t) - m g l sin(theta)``
    (the platform's acceleration enters as a fictitious force); the bob starts
    moving with the pivot (``theta' = 0``).
    """
    _positive(length=length, mass=mass, frequency=frequency)
    if not np.isfinite(amplitude):
        raise ConfigurationError(f"amplitude must be finite [m], got {amplitude}")
    omega = 2.0 * np.pi * frequency
    r = 0.05
    bob = Body("bob", mass, np.full(3, 0.4 * mass * r * r))  # a solid ball of radius 5 cm
    platform = Body("platform", 5.0, np.full(3, 0.1))
    E_platform = se3.make_transform(None, [0.0, 0.0, 2.0])
    arm = se3.make_transform(None, [0.0, 0.0, length])  # the hinge in the bob's frame
    tilt = se3.make_transform(se3.exp_so3(np.array([0.0, np.radians(angle_deg), 0.0])))
    E_bob = E_platform @ tilt @ se3.inverse(arm)
    phi_bob = np.zeros(6)  # moving with the pivot: world velocity (A omega, 0, 0)
    phi_bob[3:] = E_bob[:3, :3].T @ np.array([amplitude * omega, 0.0, 0.0])
    hinge = JointSpec(
        "hinge", "revolute", "platform", "bob", frame_parent=np.eye(4), frame_child=arm,
        axis=[0, 1, 0],
    )  # fmt: skip
    return Scene(
        "platform-pendulum",
        (platform, bob),
        joints=(hinge,),
        attachments=(
            Attachment("platform", trajectory=along_x(lambda t: amplitude * np.sin(omega * t))),
        ),
        initial_E=np.array([E_platform, E_bob]),
        initial_phi=np.array([np.zeros(6), phi_bob]),
        collision=False,
        dt=2e-3,
        duration=2.0,
        extras={"inertia_about_hinge": float(bob.inertia[1] + mass * length**2)},
    )
