"""Parametrically controlled bodies (ArtiSynth's notes §0.21), maximal coordinates.

Facts: a driven body and every body attached to it sit exactly on the
prescribed trajectory (no drift); a pendulum hinged to an oscillating
platform moves as with the platform driven by a prescribed joint (the
constraint-row way) to solver accuracy, and converges at first order to an
independent ODE solution of the moving-pivot pendulum; a cube on an
accelerating platform sticks below ``mu g`` and slides above it, by the
discrete closed form; bad trajectories give one clear line.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from contactlab import se3
from contactlab.attachment import Attachment
from contactlab.errors import ConfigurationError
from contactlab.maximal import MaximalFormulation
from contactlab.reduced.constraints import PrescribedJoint
from contactlab.scene import Body, JointSpec, Scene
from contactlab.simulator import Simulator
from scenarios.driven import box_platform, platform_pendulum

G = 9.81
AMPLITUDE, FREQUENCY, ANGLE, LENGTH = 0.2, 1.5, 40.0, 0.6
OMEGA = 2 * np.pi * FREQUENCY


def _x(t: float) -> float:
    return AMPLITUDE * np.sin(OMEGA * t)


def _run(scene: Scene, h: float, steps: int, **options: object) -> dict:
    form = MaximalFormulation(scene, **options)  # type: ignore[arg-type]
    return Simulator(scene, form, "frictionless", "kkt", dt=h).run(steps=steps).trajectory


def _poses(tr: dict) -> np.ndarray:
    R, p = tr["rotation"], tr["position"]
    E = np.zeros(R.shape[:-2] + (4, 4))
    E[..., :3, :3], E[..., :3, 3], E[..., 3, 3] = R, p, 1.0
    return E


def _pendulum(driven: bool) -> Scene:
    """The ``platform-pendulum`` scene, or the same with the platform on a prescribed slider."""
    scene = platform_pendulum.builder(
        amplitude=AMPLITUDE, frequency=FREQUENCY, angle_deg=ANGLE, length=LENGTH
    )
    if driven:
        return scene
    E_platform = scene.initial_E[0]
    slide = JointSpec(
        "slide", "prismatic", None, "platform", frame_parent=E_platform, axis=[1, 0, 0]
    )
    motion = PrescribedJoint(
        "slide", lambda t: (_x(t), AMPLITUDE * OMEGA * np.cos(OMEGA * t), -(OMEGA**2) * _x(t))
    )
    phi = scene.initial_phi.copy()
    phi[0, 3] = AMPLITUDE * OMEGA
    return scene.with_(
        joints=(slide, *scene.joints), constraints=(motion,), attachments=(), initial_phi=phi
    )


def _angle(tr: dict) -> np.ndarray:
    """The bob's angle from the downward vertical about y [rad]."""
    R = tr["rotation"][:, 1]
    return np.arctan2(R[:, 0, 2], R[:, 2, 2])


def _ode_angle(t_end: float, inertia: float, mass: float) -> float:
    """``(I + m l^2) theta'' = m l cos(theta) x''(t) - m g l sin(theta)``, theta'(0) = 0."""

    def rhs(t: float, y: np.ndarray) -> list[float]:
        th, w = y
        xdd = -(OMEGA**2) * _x(t)
        return [w, mass * LENGTH * (np.cos(th) * xdd - G * np.sin(th)) / inertia]

    sol = solve_ivp(rhs, (0.0, t_end), [np.radians(ANGLE), 0.0], rtol=1e-12, atol=1e-12)
    return float(sol.y[0, -1])


def test_driven_body_and_its_attachments_follow_the_trajectory_exactly() -> None:
    """A platform on a screw path, a tool attached to it and a bob hinged to the tool.

    The platform is at ``D(t) T0`` and the tool at ``D(t) T0 T`` to rounding
    (1e-13) at every step, and their twists are the secant twist of the path
    carried by ``Ad``; the bob, the only unknown, is swung around by them.
    """

    def screw(t: float) -> np.ndarray:
        return se3.make_transform(se3.exp_so3([0.0, 0.0, 2.0 * t]), [0.3 * t, 0.0, 0.5 * t * t])

    T0 = se3.make_transform(se3.exp_so3([0.1, 0.0, 0.0]), [0.5, 0.0, 1.0])
    T = se3.make_transform(se3.exp_so3([0.0, 0.4, 0.0]), [0.0, 0.2, -0.1])
    arm = se3.make_transform(None, [0.0, 0.0, 0.3])
    bodies = (
        Body("platform", 4.0, [0.1, 0.1, 0.1]),
        Body("tool", 0.5, [0.01, 0.01, 0.01]),
        Body("bob", 1.0, [0.004, 0.004, 0.004]),
    )
    E_tool = T0 @ T
    scene = Scene(
        "screw",
        bodies,
        joints=(JointSpec("hinge", "revolute", "tool", "bob", np.eye(4), arm, axis=[1, 0, 0]),),
        attachments=(
            Attachment("platform", trajectory=screw),
            Attachment("tool", "platform", transform=T),
        ),
        initial_E=np.array([T0, E_tool, E_tool @ se3.inverse(arm)]),
        collision=False,
    )
    h, steps = 2e-3, 150
    tr = _run(scene, h, steps)
    E, phi = _poses(tr), tr["twist"]
    D = np.array([screw(k * h) for k in range(steps + 1)])
    assert np.abs(E[:, 0] - D @ T0).max() < 1e-13
    assert np.abs(E[:, 1] - D @ T0 @ T).max() < 1e-13
    secant = se3.log_se3(se3.inverse(D[:-1] @ T0) @ D[1:] @ T0) / h  # platform twists per step
    assert np.abs(phi[1:, 0] - secant).max() < 1e-9
    carried = (se3.adjoint(se3.inverse(T)) @ secant[..., None])[..., 0]
    assert np.abs(phi[1:, 1] - carried).max() < 1e-9
    # the bob hangs from the tool and was carried 25 cm up the screw
    assert E[-1, 2, 2, 3] - E[0, 2, 2, 3] > 0.02
    assert np.abs(E[:, 2] @ arm - E[:, 1]).max(axis=0)[:3, 3].max() < 1e-3


@pytest.mark.parametrize(
    ("integrator", "steps"),
    [("linearly-implicit", 64), ("symplectic-euler", 64), ("trapezoidal", 64),
     ("bridson-marino", 64)],
)  # fmt: skip
def test_pendulum_on_driven_platform_matches_the_prescribed_joint(
    integrator: str, steps: int
) -> None:
    """Driven platform (§0.21) vs platform on a slider driven by a prescribed joint.

    The slider's row asks ``qdot+ = (x(t+h) - x(t))/h - gamma (q - x(t))``,
    the secant rate of the drive, so the platform velocities agree to the
    direct KKT solve's rounding and so do the bob's (1e-10; measured ~1e-15
    on the positions, ~1e-13 on the twists), with every integrator (the
    position projection measures the slider against its target at the end
    of the step).
    """
    h = 4e-3
    a = _run(_pendulum(True), h, steps, integrator=integrator)
    b = _run(_pendulum(False), h, steps, integrator=integrator)
    assert np.abs(a["position"] - b["position"]).max() < 1e-10
    assert np.abs(a["rotation"] - b["rotation"]).max() < 1e-10
    assert np.abs(a["twist"][:, 1] - b["twist"][:, 1]).max() < 1e-10
    x = np.array([_x(k * h) for k in range(steps + 1)])
    assert np.abs(a["position"][:, 0, 0] - x).max() < 1e-14  # the platform is on its path
    assert np.ptp(_angle(a)) > 0.1  # it swung


def test_pendulum_on_driven_platform_converges_at_first_order() -> None:
    """Error at t = 0.512 s against the ODE (solve_ivp at 1e-12): ratio ~2 per halving of h.

    Every integrator step is first order (linearly implicit Euler, the
    default); measured errors 3.6e-2, 1.8e-2, 9.3e-3 rad at h = 8, 4, 2 ms
    (ratios 1.98, 1.99).
    """
    scene = _pendulum(True)
    t_end = 0.512
    reference = _ode_angle(t_end, scene.extras["inertia_about_hinge"], scene.bodies[1].mass)
    errors = []
    for h in (8e-3, 4e-3, 2e-3):
        tr = _run(scene, h, round(t_end / h))
        errors.append(abs(_angle(tr)[-1] - reference))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 1.8) & (ratios < 2.2)), (errors, ratios)
    assert errors[-1] < 1.2e-2


@pytest.mark.parametrize("fraction", [0.99, 1.01])
def test_box_on_accelerating_platform_sticks_below_mu_g_and_slides_above(fraction: float) -> None:
    """Box friction (QP at 1e-10) on a platform accelerating at ``fraction * mu g``.

    Discrete closed form (platform driven by its secant velocity
    ``a h (k + 1/2)`` in step k): below ``mu g`` the cube keeps up exactly;
    above, the first step still sticks (``a h/2 <= mu g h``) and then every
    step adds ``mu g h``, so after n steps it lags by ``h^2 n (n - 1)/2 (a - mu g)``
    and its velocity grows by exactly ``mu g h`` a step.
    """
    mu, h, n = 0.5, 5e-3, 40
    a = fraction * mu * G
    scene = box_platform.builder(acceleration=a, mu=mu)
    sim = Simulator(
        scene, "maximal", "box-friction", "qpsolvers:clarabel", dt=h,
        model_options={"solver_tol": 1e-10},
    )  # fmt: skip
    tr = sim.run(steps=n).trajectory
    x = tr["position"][:, :, 0]
    lag = x[-1, 0] - x[-1, 1]
    if fraction < 1:
        assert scene.extras["sticks"]
        assert abs(lag) < 1e-8
    else:
        assert not scene.extras["sticks"]
        expected = h * h * n * (n - 1) / 2 * (a - mu * G)
        assert abs(lag - expected) < 1e-6 * expected
        velocity = tr["twist"][:, 1, 3]
        assert np.abs(np.diff(velocity[2:]) - mu * G * h).max() < 1e-8
    # the cube stays on the platform's surface
    assert np.abs(tr["position"][:, 1, 2] - 0.1).max() < 1e-6


def test_bad_trajectories_are_one_line() -> None:
    def fine(t: float) -> np.ndarray:
        return np.eye(4)

    cases = [
        (lambda: Attachment("b", "a", trajectory=fine), "drop master='a'"),
        (lambda: Attachment("b", trajectory=np.eye(4)), "trajectory must be a function"),
    ]
    for make, needle in cases:
        with pytest.raises(ConfigurationError) as info:
            make()
        assert needle in str(info.value) and "\n" not in str(info.value)
    scene = Scene(
        "bad",
        (Body("b", 1.0, [0.1, 0.1, 0.1]),),
        attachments=(Attachment("b", trajectory=lambda t: 2.0 * np.eye(4)),),
        collision=False,
    )
    with pytest.raises(ConfigurationError, match=r"trajectory\(0\) is not a finite rigid"):
        MaximalFormulation(scene)
