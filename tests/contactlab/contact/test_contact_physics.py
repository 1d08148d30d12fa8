"""Physical facts of the contact scenes stepped end to end (collision, rows, models).

Maximal coordinates with semi-implicit Euler: a constant acceleration ``a``
gives ``v_N = N h a`` exactly, so accelerations are read from the final
velocity (tolerance 1 %, the studies' bar).  Stopping distances carry the
scheme's ``O(h)`` bias of ``v0 h / 2`` (0.7 % for the defaults), inside the
2 % bar.  Position facts (resting, gaps) are exact up to the solvers'
tolerances: ``1e-6`` m.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.runspec import build_simulator

EXACT = [("stewart-trinkle", "lemke"), ("box-friction", "pgs")]
#: the physical facts here are checked to 1e-9: PGS is asked for that accuracy (its default
#: request is 1e-6, tests/contactlab/models/test_solver_tol_default.py)
TIGHT = {"solver_tol": 1e-10}


def run(name, params, model, solver):
    sim = build_simulator(name, params, model=model, solver=solver, model_options=TIGHT)
    r = sim.run()
    return sim.scene, r.trajectory["position"][:, 0], r.trajectory["twist"][:, 0], r


@pytest.mark.parametrize(("v", "mu", "dt"), [(1.0, 0.5, 0.01), (2.0, 0.3, 0.005)])
def test_anitescu_hart_rides_at_h_mu_v_above_the_ground(v, mu, dt):
    scene, p, phi, _ = run(
        "sheath", {"v": v, "mu": mu, "dt": dt, "duration": 0.6}, "anitescu-hart", "osqp"
    )
    half = 0.05
    gap = p[-1, 2] - half
    assert gap == pytest.approx(dt * mu * v, rel=0.1)
    assert scene.extras["anitescu_hart_gap"] == pytest.approx(dt * mu * v)
    assert phi[-1, 3] == pytest.approx(v, rel=0.01)


@pytest.mark.parametrize(("model", "solver"), [*EXACT, ("staggered-projections", "osqp")])
def test_exact_models_keep_the_sliding_box_on_the_ground(model, solver):
    _, p, phi, _ = run("sheath", {"duration": 0.6}, model, solver)
    assert np.abs(p[:, 2] - 0.05).max() < 1e-6
    assert phi[-1, 3] == pytest.approx(1.0, rel=0.01)


@pytest.mark.parametrize(("model", "solver"), EXACT)
def test_incline_sticks_below_and_slides_above_the_friction_angle(model, solver):
    scene, p, _, _ = run("box-incline", {"angle_deg": 20.0, "mu": 0.5}, model, solver)
    assert np.linalg.norm(p - p[0], axis=1).max() < 1e-4
    scene, p, phi, r = run("box-incline", {"angle_deg": 30.0, "mu": 0.3}, model, solver)
    T = r.trajectory["t"][-1]
    v_down = (r.trajectory["rotation"][-2, 0] @ phi[-1, 3:]) @ scene.extras["downhill"]
    assert v_down / T == pytest.approx(scene.extras["acceleration"], rel=0.01)
    assert abs((p[-1] - p[0]) @ scene.extras["normal"]) < 1e-6  # stays on the plane


def test_ball_rolls_without_slipping_at_five_sevenths_g_sin():
    scene, p, phi, r = run("ball-incline", {"angle_deg": 20.0, "mu": 0.5}, *EXACT[0])
    T = r.trajectory["t"][-1]
    # The step's velocities are constrained at the configuration the step started
    # from, so world velocities use that rotation (the ball turns 0.12 rad per step).
    R = r.trajectory["rotation"][-2, 0]
    v, w = R @ phi[-1, 3:], R @ phi[-1, :3]
    a = v @ scene.extras["downhill"] / T
    assert a == pytest.approx(5 / 7 * 9.81 * np.sin(np.radians(20)), rel=0.01)
    # rolling: spin and speed match, |omega| r = |v_t|.  Within 2 %: the screw
    # motion E exp(h phi) of a ball turning 0.12 rad per step carries its centre on
    # an arc, so it hops by ~0.7 mm and its tangential speed lags the spin by ~1.8 %.
    n = scene.extras["normal"]
    v_t = v - (v @ n) * n
    assert np.linalg.norm(w) * 0.1 == pytest.approx(np.linalg.norm(v_t), rel=0.02)
    assert abs(w @ np.cross(n, scene.extras["downhill"])) == pytest.approx(np.linalg.norm(w))
    # and it slips when mu < 2/7 tan(theta): a = g (sin - mu cos)
    scene, p, phi, r = run("ball-incline", {"angle_deg": 40.0, "mu": 0.1}, *EXACT[0])
    R = r.trajectory["rotation"][-2, 0]
    a = (R @ phi[-1, 3:]) @ scene.extras["downhill"] / r.trajectory["t"][-1]
    th = np.radians(40)
    assert a == pytest.approx(9.81 * (np.sin(th) - 0.1 * np.cos(th)), rel=0.01)


def test_box_slide_stops_after_v0_squared_over_2_mu_g():
    scene, p, phi, _ = run("box-slide", {"v0": 2.0, "mu": 0.3}, *EXACT[1])
    travelled = (p[-1] - p[0]) @ scene.extras["direction"]
    assert travelled == pytest.approx(scene.extras["stopping_distance"], rel=0.02)
    assert np.abs(phi[-1]).max() < 1e-9


def test_stack_stays_at_rest():
    _, _, _, r = run("box-stack", {"n": 3}, *EXACT[1])
    pos = r.trajectory["position"]
    assert np.abs(pos - pos[0]).max() < 1e-6
    assert r.steps["penetration"].max() < 1e-6


def test_body_inside_the_margin_falls_onto_the_surface_not_short_of_it():
    """With c = -d/h the box starting 3 mm up lands at distance 0 and stays there."""
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-slide").build(v0=0.0)
    E = scene.initial_E.copy()
    E[0, 2, 3] += 0.003
    scene = scene.with_(initial_E=E, duration=0.3)
    r = Simulator(scene, model="box-friction", solver="pgs", model_options=TIGHT).run()
    z = r.trajectory["position"][:, 0, 2]
    assert z.min() >= 0.1 - 1e-9  # never below the ground
    assert z[-1] == pytest.approx(0.1, abs=1e-9)


def test_penetration_decays_by_the_feedback_fraction_per_step():
    """Starting 2 mm deep, the depth shrinks by 1 - 0.2 per step (beta = 0.2 / h)."""
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-slide").build(v0=0.0)
    E = scene.initial_E.copy()
    E[0, 2, 3] -= 0.002
    scene = scene.with_(initial_E=E)
    r = Simulator(scene, model="box-friction", solver="pgs").run(steps=5)
    depth = 0.1 - r.trajectory["position"][:, 0, 2]
    # the first step also absorbs gravity (h^2 g = 0.25 mm): compare steps 1 -> 4
    ratios = depth[2:] / depth[1:-1]
    assert np.allclose(ratios, 0.8, atol=0.02)
