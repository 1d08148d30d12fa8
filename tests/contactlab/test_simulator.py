"""The simulator loop and the metrics, checked against exactly known answers.

The formulation and model under test are the small fakes of
``particle_fakes.py`` (free spinning spheres under gravity, semi-implicit
Euler), whose discrete trajectory and energy error are known in closed form.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from contactlab import metrics as M
from contactlab import se3
from contactlab.errors import ConfigurationError, SingularSystemError, StateError, StepFailure
from contactlab.problem import StepProblem, StepSolution
from contactlab.simulator import Simulator

try:
    import particle_fakes as pf
except ImportError:  # tests/contactlab imported as a package
    from . import particle_fakes as pf

G = np.array([0.0, 0.0, -9.81])
H = 1e-3


@pytest.fixture(autouse=True)
def fake_stack():
    with pf.registered():
        yield


def _sim(guard: bool = True, **params) -> Simulator:
    options = params.pop("model_options", None)
    scene = pf.falling_spheres.build(**params)
    return Simulator(
        scene, "test-particle", "test-free", "kkt", model_options=options, divergence_guard=guard
    )


def test_free_flight_matches_the_closed_form_trajectory():
    run = _sim(n=2).run(duration=0.5)
    traj = run.trajectory
    k = np.arange(501)
    assert run.n_steps == 500 and run.status == "ok"
    np.testing.assert_allclose(traj["t"], k * H, atol=1e-12)
    p0, v0 = np.array([0.0, 0.0, 1.0]), np.array([0.5, 0.0, 2.0])
    exact = pf.discrete_position(p0, v0, G, H, k)
    # Discrete scheme reproduced to round-off.
    np.testing.assert_allclose(traj["position"][:, 0], exact, atol=1e-12)
    np.testing.assert_allclose(traj["position"][:, 1], exact + [0, 1, 0], atol=1e-12)
    # Against the continuous answer the semi-implicit scheme errs by exactly h|g|t/2.
    t = traj["t"][:, None]
    continuous = p0 + v0 * t + 0.5 * G * t**2
    err = np.linalg.norm(traj["position"][:, 0] - continuous, axis=1)
    np.testing.assert_allclose(err, H * 9.81 * traj["t"] / 2, atol=1e-12)
    # Constant spin about a principal axis: R(t) = exp(t [omega]).
    omega = 3.0 * np.array([1.0, 2.0, 2.0]) / 3.0
    R_exact = se3.exp_so3(traj["t"][:, None] * omega)
    np.testing.assert_allclose(traj["rotation"][:, 0], R_exact, atol=1e-10)
    # Body-frame twist: omega constant, nu = R^T v_world.
    np.testing.assert_allclose(traj["twist"][:, 0, :3], np.tile(omega, (501, 1)), atol=1e-14)
    v_world = v0 + G * t
    nu = np.einsum("kji,kj->ki", R_exact, v_world)
    np.testing.assert_allclose(traj["twist"][:, 0, 3:], nu, atol=1e-9)


def test_energy_error_is_the_known_linear_drift_of_semi_implicit_euler():
    run = _sim(n=1).run(steps=400)
    steps = run.steps
    e0 = run.initial_metrics["total_energy"]
    k = steps["step"].to_numpy() + 1
    # E_k - E_0 = -m |g|^2 h^2 k / 2 (particle_fakes docstring); rotation adds a constant.
    expected = -pf.MASS * 9.81**2 * H**2 * k / 2
    np.testing.assert_allclose(steps["total_energy"] - e0, expected, rtol=1e-9, atol=1e-11)
    agg = run.aggregates()
    assert agg["energy_drift"] == pytest.approx(abs(expected[-1]), rel=1e-9)
    assert agg["max_energy_deviation"] == pytest.approx(abs(expected[-1]), rel=1e-9)
    assert agg["success_rate"] == 1.0
    assert agg["total_iterations"] == 400


def test_same_inputs_give_the_same_run():
    a, b = _sim(n=3).run(steps=50), _sim(n=3).run(steps=50)
    timing = [c for c in a.steps if c.endswith("_time_s")]
    pd.testing.assert_frame_equal(a.steps.drop(columns=timing), b.steps.drop(columns=timing))
    for key, value in a.trajectory.items():
        assert np.array_equal(value, b.trajectory[key]), key


def test_penetration_and_contact_count_follow_the_falling_ball():
    # The fake model ignores contacts, so the ball falls through z = 0 from rest at 0.3 m
    # (deeper than its radius by the end: the divergence guard would rightly stop it).
    sim = _sim(guard=False, z0=0.3, vx0=0.0, vz0=0.0, ground=True)
    run = sim.run(steps=300)
    z = run.trajectory["position"][:, 0, 2]
    d_start = z[:-1] - pf.RADIUS  # contacts are detected at the start of each step
    near = d_start < sim.scene.contact.margin
    steps = run.steps
    np.testing.assert_array_equal(steps["n_contacts"].to_numpy(), near.astype(int))
    np.testing.assert_allclose(steps["penetration"], np.maximum(-d_start, 0.0) * near, atol=1e-12)
    assert steps["penetration"].iloc[-1] > 0.05
    # The ignored contact: the ball approaches through it, N v - c = v_z = -|g| h (k + 1).
    vz = -9.81 * H * (steps["step"].to_numpy() + 1)
    np.testing.assert_allclose(
        steps["normal_feasibility"], np.where(near, np.maximum(-vz, 0), 0), atol=1e-12
    )
    assert run.aggregates()["max_penetration"] == pytest.approx(steps["penetration"].max())


def test_a_failed_solve_stops_the_run_naming_step_time_and_solver():
    sim = _sim(model_options={"fail_at": 3})
    with pytest.raises(
        StepFailure, match=r"step 3 \(t = 0.003 s\).*numerical_error.*'kkt'"
    ) as info:
        sim.run(steps=10)
    partial = info.value.run  # type: ignore[attr-defined]
    assert partial.status == "failed" and partial.n_steps == 3
    assert partial.trajectory["position"].shape == (4, 1, 3)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_non_finite_state_is_reported():
    # Finite velocities (m v < 1.8e308) whose position update overflows.
    # The guard refuses such a scene before the first step (its energy scale overflows);
    # unguarded, the finiteness check stops the run at the step that overflows.
    with pytest.raises(ConfigurationError, match="too large to bound"):
        _sim(z0=1.797e308, vz0=8e307).run(steps=5)
    sim = _sim(guard=False, z0=1.797e308, vz0=8e307)
    with pytest.raises(StateError, match="non-finite E") as info:
        sim.run(steps=5)
    assert info.value.run.n_steps == 0  # type: ignore[attr-defined]  (failed in step 0)


def test_redundant_rows_give_a_singular_system_error():
    with pytest.raises(SingularSystemError, match="redundant"):
        _sim(pin_twice=True).run(steps=1)


def test_callback_can_stop_a_run_early():
    run = _sim().run(steps=100, callback=lambda state, rec: rec.index == 9)
    assert run.status == "stopped" and run.n_steps == 10
    assert run.trajectory["t"][-1] == pytest.approx(10 * H)


@pytest.mark.parametrize("bad", [{"steps": 0}, {"duration": -1.0}, {"steps": 5, "duration": 1.0}])
def test_invalid_run_lengths_are_rejected(bad):
    with pytest.raises(ConfigurationError):
        _sim().run(**bad)


def test_invalid_dt_is_rejected():
    scene = pf.falling_spheres.build()
    with pytest.raises(ConfigurationError, match="dt"):
        Simulator(scene, "test-particle", "test-free", dt=0.0)


# -- contact metrics on hand-computed problems -------------------------------------


def _point_mass_problem(mu: float, c: float = 0.0) -> StepProblem:
    """One point mass (v = (vx, vy, vz)) on the plane z = 0: N = e_z, T = (e_x, e_y)."""
    N = sp.csr_matrix([[0.0, 0.0, 1.0]])
    T = sp.csr_matrix([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    return StepProblem(H, sp.identity(3), np.zeros(3), np.zeros(3), N=N, c=[c], T=T, mu=[mu])


def _solution(v, lam_n, lam_t) -> StepSolution:
    return StepSolution(
        np.array(v, float), np.zeros(0), np.array(lam_n, float), np.array(lam_t, float)
    )


def test_exact_sliding_friction_has_zero_violations():
    mu, lam_n = 0.4, 2.0
    slip = np.array([0.6, 0.8])  # unit direction, speed 1 m/s
    sol = _solution([*slip, 0.0], [lam_n], -mu * lam_n * slip)
    out = M.contact_metrics(_point_mass_problem(mu), sol)
    assert out == {
        "normal_complementarity": 0.0,
        "normal_feasibility": 0.0,
        "cone_violation": 0.0,
        "dissipation_violation": pytest.approx(0.0, abs=1e-15),
        "n_sliding": 1.0,
    }


def test_friction_not_opposite_the_slip_is_measured():
    mu, lam_n = 0.5, 2.0  # full magnitude 1 N s
    sol = _solution([2.0, 0.0, 0.0], [lam_n], [0.0, mu * lam_n])  # sideways friction
    out = M.contact_metrics(_point_mass_problem(mu), sol)
    # || (0, 1) + 1 * (1, 0) || = sqrt(2)
    assert out["dissipation_violation"] == pytest.approx(np.sqrt(2.0))
    assert out["cone_violation"] == 0.0
    # Too little friction (half magnitude, right direction) is a violation too: 0.5 N s.
    out = M.contact_metrics(_point_mass_problem(mu), _solution([2.0, 0, 0], [lam_n], [-0.5, 0]))
    assert out["dissipation_violation"] == pytest.approx(0.5)


def test_cone_complementarity_and_feasibility_values():
    problem = _point_mass_problem(mu=0.5, c=0.25)
    # ||lambda_T|| = 5, mu lambda_N = 1: cone violated by 4; N v - c = 0.5, lambda_N = 2: 1.
    out = M.contact_metrics(problem, _solution([0.0, 0.0, 0.75], [2.0], [3.0, 4.0]))
    assert out["cone_violation"] == pytest.approx(4.0)
    assert out["normal_complementarity"] == pytest.approx(1.0)
    assert out["normal_feasibility"] == 0.0
    assert out["n_sliding"] == 0.0 and out["dissipation_violation"] == 0.0
    out = M.contact_metrics(problem, _solution([0.0, 0.0, 0.0], [0.0], [0.0, 0.0]))
    assert out["normal_feasibility"] == pytest.approx(0.25)


def test_sticking_contacts_are_not_judged_for_dissipation():
    out = M.contact_metrics(
        _point_mass_problem(0.5), _solution([1e-4, 0.0, 0.0], [2.0], [0.3, 0.0])
    )
    assert out["n_sliding"] == 0.0 and out["dissipation_violation"] == 0.0


def test_vectorized_contact_metrics_agree_with_a_per_contact_loop():
    rng = np.random.default_rng(7)
    nc, n = 40, 30
    N = sp.random(nc, n, density=0.3, random_state=1, format="csr")
    T = sp.random(2 * nc, n, density=0.3, random_state=2, format="csr")
    c, mu = rng.normal(size=nc), rng.uniform(0.1, 1.0, nc)
    problem = StepProblem(H, sp.identity(n), np.zeros(n), np.zeros(n), N=N, c=c, T=T, mu=mu)
    sol = _solution(rng.normal(size=n), rng.uniform(0, 2, nc), rng.normal(size=2 * nc))
    out = M.contact_metrics(problem, sol, slip_threshold=0.2)
    gap, slip = N @ sol.v - c, T @ sol.v
    comp = cone = diss = feas = 0.0
    sliding = 0
    for i in range(nc):
        lt, s = sol.lambda_T[2 * i : 2 * i + 2], slip[2 * i : 2 * i + 2]
        comp = max(comp, abs(sol.lambda_N[i] * gap[i]))
        feas = max(feas, -gap[i])
        cone = max(cone, np.hypot(*lt) - mu[i] * sol.lambda_N[i])
        if np.hypot(*s) > 0.2:
            sliding += 1
            diss = max(diss, np.hypot(*(lt + mu[i] * sol.lambda_N[i] * s / np.hypot(*s))))
    assert out["normal_complementarity"] == pytest.approx(comp)
    assert out["normal_feasibility"] == pytest.approx(max(feas, 0.0))
    assert out["cone_violation"] == pytest.approx(max(cone, 0.0))
    assert out["dissipation_violation"] == pytest.approx(diss)
    assert out["n_sliding"] == sliding


def test_aggregates_of_a_hand_made_table():
    steps = pd.DataFrame(
        {
            "t": [0.1, 0.2, 0.3, 0.4],
            "kinetic_energy": [1.0, 2.0, 3.0, 1.5],
            "potential_energy": [9.0, 8.5, 6.0, 8.7],
            "total_energy": [10.0, 10.5, 9.0, 10.2],
            "constraint_error": [1e-6, 3e-6, 2e-6, 0.0],
            "penetration": [0.0, 0.01, 0.002, 0.0],
            "solve_time_s": [1.0, 2.0, 3.0, 4.0],
            "iterations": [3, 4, 5, 6],
            "status": ["optimal", "max_iterations", "optimal", "optimal"],
        }
    )
    initial = {"total_energy": 10.0, "kinetic_energy": 4.0, "potential_energy": 6.0}
    agg = M.aggregate(steps, initial)
    assert agg["energy_drift"] == pytest.approx(0.2)
    # scale: largest kinetic energy 4 J vs potential range 9 - 6 = 3 J
    assert agg["energy_drift_relative"] == pytest.approx(0.2 / 4.0)
    # shifting the potential's zero changes nothing relative
    shifted = steps.assign(
        potential_energy=steps.potential_energy + 100, total_energy=steps.total_energy + 100
    )
    initial_shifted = {**initial, "total_energy": 110.0, "potential_energy": 106.0}
    assert M.aggregate(shifted, initial_shifted)["energy_drift_relative"] == pytest.approx(0.05)
    assert agg["max_energy_deviation"] == pytest.approx(1.0)
    assert agg["max_constraint_error"] == 3e-6 and agg["max_penetration"] == 0.01
    assert agg["median_solve_time_s"] == 2.5
    assert agg["p90_solve_time_s"] == pytest.approx(np.percentile([1, 2, 3, 4], 90))
    assert agg["total_iterations"] == 18 and agg["success_rate"] == 0.75
    assert agg["max_cone_violation"] is None  # column absent: not computable, not zero


def test_every_step_column_is_documented_once():
    names = [m.name for m in M.STEP_METRICS + M.RUN_AGGREGATES]
    assert len(names) == len(set(names))
    run = _sim().run(steps=3)
    documented = {m.name for m in M.STEP_METRICS}
    assert set(run.steps.columns) <= documented


def test_contacts_between_jointed_bodies_are_dropped():
    from contactlab.collision import ContactSet
    from contactlab.contact_pairs import drop_jointed, jointed_pairs
    from contactlab.scene import JointSpec

    scene = pf.falling_spheres.build(n=3).with_(
        joints=(
            JointSpec("j01", "revolute", "ball0", "ball1", axis=[0, 1, 0]),
            JointSpec("jw2", "spherical", None, "ball2"),
        )
    )
    pairs = [(0, 1), (1, 0), (1, 2), (0, -1), (2, -1), (0, 2)]
    a, b = (np.array(x) for x in zip(*pairs))
    n = len(pairs)
    contacts = ContactSet(
        np.zeros((n, 3)),
        np.tile([0.0, 0, 1], (n, 1)),
        -np.arange(n) * 1e-3,
        a,
        b,
        0 * a,
        0 * b,
        np.full(n, 0.5),
    )
    kept = drop_jointed(contacts, scene, jointed_pairs(scene))
    # (0,1) and (1,0) share joint j01; ball2's joint to the world excludes nothing,
    # so its contact with the world geometry (2,-1) is kept.
    assert list(zip(kept.body_a, kept.body_b)) == [(1, 2), (0, -1), (2, -1), (0, 2)]
    np.testing.assert_array_equal(kept.distance, [-2e-3, -3e-3, -4e-3, -5e-3])


@pytest.mark.parametrize("rows, rhs", [("G", "g"), ("N", "c"), ("L", "l")])
def test_step_problem_rows_without_right_hand_side_are_rejected(rows, rhs):
    """Rows without their right-hand side raise an error naming both (no assert)."""
    with pytest.raises(ConfigurationError, match=f"rows {rows} given without .* {rhs}"):
        StepProblem(0.01, sp.identity(3), np.zeros(3), np.zeros(3), **{rows: sp.csr_matrix((1, 3))})
