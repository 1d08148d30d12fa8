"""Coulomb friction facts end to end: real scenarios through the simulator.

Every test builds a scene from :mod:`scenarios.contact`, steps it with
:class:`contactlab.simulator.Simulator` (collision, assembly, contact model,
solver layer, SE(3) integration) and compares the trajectory with a closed-form
prediction.

Time discretization.  The velocity-level step is semi-implicit Euler: under a
constant acceleration ``a`` the position after ``k`` steps is
``a h^2 k (k + 1) / 2``, a quadratic in ``t = k h`` whose leading coefficient
is exactly ``a / 2``; a least-squares quadratic fit therefore recovers ``a``
up to round-off, and the 1 % tolerances below leave room for the physics
(contact transients), not for the integrator.  A slide that decelerates to
rest stops ``h v0 / 2`` short of ``v0^2 / (2 mu g)`` (the sum
``h sum_k (v0 - k mu g h)`` against the integral); with ``h = 5 ms`` and
``v0 = 2 m/s`` that is 0.7 % of the 0.68 m distance, inside the 2 % tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.scenario import get_scenario
from contactlab.simulator import Run, Simulator

G = 9.81


def simulate(
    name: str,
    model: str,
    solver: str,
    params: dict[str, Any] | None = None,
    options: dict[str, Any] | None = None,
    duration: float = 1.0,
    dt: float | None = None,
) -> tuple[Any, Run]:
    scene = get_scenario(name).build(**(params or {}))
    sim = Simulator(scene, "maximal", model, solver, dt=dt, model_options=options)
    return scene, sim.run(duration=duration)


def fitted_acceleration(run: Run, direction: np.ndarray, skip: int = 0) -> float:
    """Twice the leading coefficient of a quadratic fit of the displacement along ``direction``."""
    t = run.trajectory["t"][skip:]
    x = (run.trajectory["position"][skip:, 0] - run.trajectory["position"][0, 0]) @ direction
    return float(2.0 * np.polyfit(t, x, 2)[0])


# (model, solver, options) of the models that respect Coulomb's law
COULOMB = [
    ("box-friction", "pgs", {"solver_tol": 1e-9}),  # facts to 1e-9: ask PGS for it
    ("stewart-trinkle", "lemke", {}),
    ("staggered-projections", "osqp", {}),
]


def case_id(case: tuple) -> str:
    return "-".join([case[0], case[1], *map(str, case[2].values())])


@pytest.mark.parametrize("case", COULOMB + [("anitescu-hart", "osqp", {})], ids=case_id)
def test_box_on_an_incline_below_the_friction_angle_stays(case: tuple) -> None:
    """tan 20 deg = 0.364 < mu = 0.5: static friction holds the box for 1 s.

    Anitescu-Hart also holds it: a sticking contact has no tangential slip, so
    its relaxation ``n . v >= c + mu |v_t|`` reduces to the exact constraint.
    Measured displacements are below 1e-12 m for all four models.
    """
    model, solver, opts = case
    scene, run = simulate(
        "box-incline", model, solver, {"angle_deg": 20.0, "mu": 0.5}, opts, dt=0.01
    )
    p = run.trajectory["position"][:, 0]
    assert run.status == "ok"
    assert np.max(np.linalg.norm(p - p[0], axis=1)) < 1e-4


@pytest.mark.parametrize("case", COULOMB + [("anitescu-hart", "osqp", {})], ids=case_id)
def test_box_on_a_steep_incline_slides_at_the_coulomb_rate(case: tuple) -> None:
    """tan 30 deg = 0.577 > mu = 0.5: a = g (sin 30 - 0.5 cos 30) = 0.6571 m/s^2 within 1 %.

    The exact models reproduce it to 1e-9 relative and stay on the plane.
    Anitescu-Hart slides at the same rate (its friction has the Coulomb
    magnitude) but its relaxation lifts the box off the incline, by about
    ``h mu v`` once sliding at speed ``v``: 3.3 mm after 1 s (v = 0.66 m/s,
    h = 10 ms) against 1e-12 m for the exact models.
    """
    model, solver, opts = case
    scene, run = simulate(
        "box-incline", model, solver, {"angle_deg": 30.0, "mu": 0.5}, opts, dt=0.01
    )
    a_pred = G * (np.sin(np.radians(30.0)) - 0.5 * np.cos(np.radians(30.0)))
    assert scene.extras["acceleration"] == pytest.approx(a_pred)
    a = fitted_acceleration(run, scene.extras["downhill"], skip=10)
    assert a == pytest.approx(a_pred, rel=1e-2)
    p = run.trajectory["position"][:, 0]
    lift = float((p[-1] - p[0]) @ scene.extras["normal"])
    if model == "anitescu-hart":
        v = a_pred * run.duration
        assert lift == pytest.approx(run.dt * 0.5 * v, rel=0.1)
    else:
        assert abs(lift) < 1e-9


def slide(model: str, solver: str, options: dict, direction_deg: float) -> tuple[Any, np.ndarray]:
    """Displacement (3,) of a box launched at 2 m/s (mu = 0.3) once it has stopped."""
    params = {"v0": 2.0, "direction_deg": direction_deg, "mu": 0.3}
    scene = get_scenario("box-slide").build(**params)
    t_stop = scene.extras["stopping_time"]
    # the pyramid's slide lasts up to sqrt(2) times longer than the Coulomb one
    scene, run = simulate(
        "box-slide", model, solver, params, options, duration=1.45 * t_stop, dt=5e-3
    )
    assert run.status == "ok"
    assert np.linalg.norm(run.trajectory["twist"][-1, 0, 3:]) < 1e-6  # at rest
    p = run.trajectory["position"][:, 0]
    return scene, p[-1] - p[0]


@pytest.mark.parametrize(
    "case",
    [("box-friction", "pgs", {"cone": "disc"})],
    ids=case_id,
)
def test_exact_cone_stops_at_the_coulomb_distance_along_the_launch(case: tuple) -> None:
    """Launched at 30 deg (off the pyramid's axes): stops after v0^2/(2 mu g) = 0.6796 m.

    With the exact cone the friction opposes the slip, so the box keeps its
    heading (measured error below 1e-6 deg) and stops 0.7 % short (the
    ``h v0 / 2`` of the time discretization, module docstring); tolerance 2 %.
    """
    model, solver, opts = case
    scene, d = slide(model, solver, opts, 30.0)
    u = scene.extras["direction"]
    assert d @ u == pytest.approx(scene.extras["stopping_distance"], rel=0.02)
    assert np.degrees(np.arctan2(d[1], d[0])) == pytest.approx(30.0, abs=1e-3)


def pyramid_slide(theta: float, v0: float, mu: float) -> np.ndarray:
    """Stopping displacement under the 4-direction pyramid ``|l_x| + |l_y| <= mu l_N``.

    Maximal dissipation picks the pyramid's vertex most opposed to the slip:
    for a slip at ``0 < theta < 45 deg`` that is ``-mu m g e_x``, so only
    ``v_x`` decays (at ``mu g``) until ``v_x = v_y``; then the whole edge
    between ``-e_x`` and ``-e_y`` dissipates equally and the box slides down
    the diagonal at ``mu g / sqrt(2)``.
    """
    vx, vy = v0 * np.cos(theta), v0 * np.sin(theta)
    x1, y1 = (vx**2 - vy**2) / (2 * mu * G), vy * (vx - vy) / (mu * G)
    diagonal = vy**2 / (mu * G)  # per component: speed sqrt(2) vy, deceleration mu g / sqrt(2)
    return np.array([x1 + diagonal, y1 + diagonal])


def box_slide_prediction(theta: float, v0: float, mu: float) -> np.ndarray:
    """Stopping displacement under the box ``|l_x|, |l_y| <= mu l_N``: each axis decays at mu g."""
    return np.array([(v0 * np.cos(theta)) ** 2, (v0 * np.sin(theta)) ** 2]) / (2 * mu * G)


@pytest.mark.parametrize(
    ("case", "predict"),
    [
        (("staggered-projections", "osqp", {"cone": "pyramid"}), pyramid_slide),
        (("box-friction", "pgs", {"cone": "box"}), box_slide_prediction),
    ],
    ids=["pyramid", "box"],
)
def test_four_direction_cones_distort_an_oblique_slide(case: tuple, predict: Any) -> None:
    """The polygonal cones bend an oblique slide away from its launch, as predicted.

    Launched at 30 deg with v0 = 2 m/s, mu = 0.3 (exact-cone stop: 0.680 m
    straight ahead):

    * 4-direction pyramid: the box veers 10.9 deg toward the diagonal and
      travels 0.883 m along the launch direction, 30 % beyond the Coulomb
      distance (measured: 10.94 deg, the distance 1.5 % short of the
      prediction, the time-discretization shortfall).
    * box (each tangent impulse bounded by mu lambda_N): friction up to
      ``sqrt(2) mu m g`` on the corner, so the box veers 11.6 deg toward the
      x axis and stops short, 0.526 m along the launch.

    Tolerances: 0.3 deg on the heading, 2 % on the displacement.
    """
    model, solver, opts = case
    scene, d = slide(model, solver, opts, 30.0)
    pred = predict(np.radians(30.0), 2.0, 0.3)
    heading = np.degrees(np.arctan2(d[1], d[0]))
    assert heading == pytest.approx(np.degrees(np.arctan2(pred[1], pred[0])), abs=0.3)
    assert abs(heading - 30.0) > 10.0  # the distortion is real, not round-off
    assert d[:2] == pytest.approx(pred, rel=0.02)


def test_pyramid_at_45_degrees_slides_sqrt2_further() -> None:
    """Along the diagonal the pyramid's friction is mu m g / sqrt(2): distance x sqrt(2).

    The slip bisects an edge of the pyramid, so the heading is kept (to 1e-6 deg)
    and the stop is sqrt(2) v0^2/(2 mu g) = 0.961 m, within 2 %.
    """
    scene, d = slide("staggered-projections", "osqp", {"cone": "pyramid"}, 45.0)
    assert np.degrees(np.arctan2(d[1], d[0])) == pytest.approx(45.0, abs=1e-4)
    assert d @ scene.extras["direction"] == pytest.approx(
        np.sqrt(2.0) * scene.extras["stopping_distance"], rel=0.02
    )


SHEATH = {"v": 1.0, "mu": 0.5, "dt": 0.01, "duration": 0.8}


def sheath_gap(model: str, solver: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """Gap of the sheath's box above the ground [m] and its speed over the last 0.3 s."""
    scene, run = simulate("sheath", model, solver, SHEATH, duration=SHEATH["duration"])
    assert run.status == "ok"
    z = run.trajectory["position"][:, 0, 2] - 0.05  # bottom face height (half height 0.05 m)
    speed = run.trajectory["twist"][:, 0, 3]
    last = run.trajectory["t"] >= SHEATH["duration"] - 0.3
    return scene, z[last], speed[last]


def test_anitescu_hart_sheath_rides_at_h_mu_v() -> None:
    """The box held sliding at v = 1 m/s rides at h mu v = 0.01 * 0.5 * 1 = 5 mm.

    The relaxation's normal row ``n . v = c + mu |v_t|`` with the gap-aware
    ``c = -d / h`` is stationary at ``d = h mu v`` (measured 5.000 mm, from
    0.5 s on, at speed 1.000 m/s); tolerance 10 %.
    """
    scene, gap, speed = sheath_gap("anitescu-hart", "osqp")
    assert speed == pytest.approx(1.0, rel=1e-3)
    assert gap == pytest.approx(scene.extras["anitescu_hart_gap"], rel=0.1)
    assert scene.extras["anitescu_hart_gap"] == pytest.approx(0.005)


@pytest.mark.parametrize(
    ("model", "solver"), [("staggered-projections", "osqp"), ("stewart-trinkle", "lemke")]
)
def test_exact_complementarity_keeps_the_sheath_on_the_ground(model: str, solver: str) -> None:
    """Staggered Projections and Stewart-Trinkle slide at 1 m/s with zero gap.

    Measured gap: 0 and below 1e-15 m (round-off), tolerance 1e-9 m against the
    5 mm of Anitescu-Hart.  The run covers 0.8 s, the speed-up and 0.5 s of
    steady sliding: continued, Stewart-Trinkle's LCP ends on a secondary ray of
    Lemke's method at t = 1.12 s (a failed step, reported as such by the
    simulator), a known limit of pivoting on these degenerate LCPs.
    """
    _, gap, speed = sheath_gap(model, solver)
    assert speed == pytest.approx(1.0, rel=1e-3)
    assert np.max(np.abs(gap)) < 1e-9


@pytest.mark.parametrize(("mu", "rolls"), [(0.5, True), (0.1, False)], ids=["rolls", "slips"])
@pytest.mark.parametrize(
    ("model", "solver"), [("box-friction", "pgs"), ("stewart-trinkle", "lemke")]
)
def test_ball_on_an_incline_rolls_or_slips(mu: float, rolls: bool, model: str, solver: str) -> None:
    """Ball on a 30 deg incline: (2/7) tan 30 = 0.165 separates rolling from slipping.

    mu = 0.5 rolls without slipping: a = (5/7) g sin 30 = 3.504 m/s^2 and
    ``omega r = v``.  mu = 0.1 slips: a = g (sin 30 - 0.1 cos 30) = 4.055 m/s^2
    while friction spins the ball up at ``alpha = (5/2) mu g cos 30 / r``, so
    ``omega r / v = 2.5 * 0.0866 / 0.4134 = 0.524``.  Measured: accelerations
    within 0.25 %, ``omega r / v`` within 1 %.  The residual comes from the
    ball settling 1.7 mm into the plane: the SE(3) exponential moves a
    rolling ball on the screw about its contact point, lowering the centre by
    about ``r (omega h)^2 / 2`` per step, which the penetration feedback
    (20 % per step) balances at ``r (omega h)^2 / 0.4``; the contact point,
    and so the effective radius, moves by half that depth.  Tolerances 1 %
    on the acceleration, 2 % on the rolling ratio.
    """
    th = np.radians(30.0)
    r = 0.1
    scene, run = simulate(
        "ball-incline", model, solver, {"angle_deg": 30.0, "mu": mu, "radius": r}, duration=0.5
    )
    assert run.status == "ok"
    assert scene.extras["rolls"] is rolls
    a_pred = 5 / 7 * G * np.sin(th) if rolls else G * (np.sin(th) - mu * np.cos(th))
    a = fitted_acceleration(run, scene.extras["downhill"])
    assert a == pytest.approx(a_pred, rel=1e-2)
    twist = run.trajectory["twist"][-1, 0]
    ratio = np.linalg.norm(twist[:3]) * r / np.linalg.norm(twist[3:])
    ratio_pred = 1.0 if rolls else 2.5 * mu * np.cos(th) / (np.sin(th) - mu * np.cos(th))
    assert ratio == pytest.approx(ratio_pred, rel=0.02)


@pytest.mark.parametrize(
    ("name", "params"), [("box-stack", {"n": 3}), ("mass-ratio-stack", {"ratio": 100.0})]
)
@pytest.mark.parametrize(
    ("model", "solver"), [("box-friction", "pgs"), ("staggered-projections", "osqp")]
)
def test_stacks_stay_at_rest(name: str, params: dict, model: str, solver: str) -> None:
    """Stacks released at rest stay at rest for 2 s (h = 10 ms).

    Bounds: every box moves less than 1e-6 m and turns less than 1e-6 rad,
    penetration stays below 1e-6 m (measured: below 4e-9 m for all four).
    On the 100:1 stack Gauss-Seidel converges slowly, the known weakness of
    PGS with large mass ratios: about 3000 sweeps per step, and 10 of the 200
    steps stop at the 10000-sweep cap (status ``max_iterations``, run
    ``inaccurate``) with residuals around 2e-7; the stack stays put all the
    same.
    """
    scene, run = simulate(name, model, solver, params, duration=2.0, dt=0.01)
    pgs_on_mass_ratio = solver == "pgs" and name == "mass-ratio-stack"
    assert run.status in (("ok", "inaccurate") if pgs_on_mass_ratio else ("ok",))
    p, R = run.trajectory["position"], run.trajectory["rotation"]
    assert np.max(np.abs(p - p[0])) < 1e-6
    cos_turn = (np.einsum("tbij,bij->tb", R, R[0]) - 1.0) / 2.0
    assert np.max(np.arccos(np.clip(cos_turn, -1.0, 1.0))) < 1e-6
    assert run.steps["penetration"].max() < 1e-6


def test_stewart_trinkle_keeps_the_three_box_stack_at_rest() -> None:
    """Stewart-Trinkle by Lemke holds the 3-box stack for 2 s (h = 10 ms) to round-off.

    Measured: no motion at all (0.0 m), no penetration.  On the 100:1
    mass-ratio stack Lemke's method ends on a secondary ray at step 10
    (t = 0.1 s), so that case is not claimed here.
    """
    _, run = simulate("box-stack", "stewart-trinkle", "lemke", {"n": 3}, duration=2.0, dt=0.01)
    assert run.status == "ok"
    p = run.trajectory["position"]
    assert np.max(np.abs(p - p[0])) < 1e-9
    assert run.steps["penetration"].max() < 1e-9


def test_anitescu_hart_launch_and_flight_on_a_slide() -> None:
    """Anitescu-Hart launches a sliding box off the ground and steps the airborne box.

    At the first step the relaxation's normal row is active with zero gap, so
    the box leaves with ``v_n = mu |v_t|`` exactly (0.3 * 1.82 = 0.546 m/s);
    it flies out of the 5 mm contact margin, so several steps have no
    contact (an empty dual problem, stepped without a solve), and lands again.
    """
    scene, run = simulate(
        "box-slide", "anitescu-hart", "osqp", {"v0": 2.0, "mu": 0.3}, duration=0.3
    )
    assert run.status == "ok"
    twist = run.trajectory["twist"][1, 0]
    assert twist[5] == pytest.approx(0.3 * np.linalg.norm(twist[3:5]), rel=1e-6)
    contacts = run.steps["n_contacts"].to_numpy()
    airborne = np.flatnonzero(contacts == 0)
    assert airborne.size >= 10 and contacts[-1] == 4
    # ballistic between contacts: vertical speed drops by g h per step
    vz = run.trajectory["twist"][:, 0, 5]
    flight = airborne[1:-1]
    assert np.diff(vz[flight + 1]) == pytest.approx(-G * run.dt, rel=1e-9)
