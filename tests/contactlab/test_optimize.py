"""Spacetime optimization: exact gradient, boundary conditions, the linearized pendulum."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contactlab.cli import main
from contactlab.errors import ConfigurationError
from contactlab.optimize import SpacetimeProblem, optimize
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.model import Model
from contactlab.scenario import get_scenario


@pytest.fixture(scope="module")
def arm() -> Model:
    return Model.from_scene(get_scenario("chain").build(n_links=2, joints="R", axes="yz"))


def test_gradient_equals_central_differences_of_the_cost(arm: Model) -> None:
    """The chained analytic gradient matches central differences of the cost to 1e-7 relative.

    Checked away from the initial guess (a random perturbation), with
    nonzero end velocities and a via-point, so every term of the chain rule
    (ghost knots, fixed knots) is exercised.
    """
    problem = SpacetimeProblem(
        arm, 0.6, 12, [0.0, 0.0], [1.0, -0.5], [0.3, 0.1], [-0.2, 0.4], via={0.3: [0.5, 0.2]}
    )
    x = problem.initial_guess() + 0.1 * np.random.default_rng(0).standard_normal(problem.n_free)
    assert problem.gradient_check(x) < 1e-7


def test_optimum_meets_the_boundary_conditions(arm: Model) -> None:
    """End positions and velocities and the via-point hold at the optimum to 1e-8."""
    q0, q1, v0, v1 = [0.0, 0.2], [0.8, -0.4], [0.5, 0.0], [0.0, -0.3]
    problem = SpacetimeProblem(arm, 0.5, 10, q0, q1, v0, v1, via={0.25: [0.4, 0.4]})
    result = optimize(problem)
    assert result.status == "optimal"
    assert result.cost < result.initial_cost
    np.testing.assert_allclose(result.q[0], q0, atol=1e-8)
    np.testing.assert_allclose(result.q[-1], q1, atol=1e-8)
    np.testing.assert_allclose(result.qdot[0], v0, atol=1e-8)
    np.testing.assert_allclose(result.qdot[-1], v1, atol=1e-8)
    np.testing.assert_allclose(result.q[5], [0.4, 0.4], atol=1e-8)
    assert result.boundary_error < 1e-8


def test_joint_limits_hold_and_bind(arm: Model) -> None:
    """Letting the arm fall, the free optimum passes q0 = 1 rad; with that limit, no knot does."""
    ends = ([0.0, 0.0], [0.6, 0.0], [-1.0, 0.0])
    free = optimize(SpacetimeProblem(arm, 0.5, 10, *ends))
    assert free.q[:, 0].max() > 1.0
    problem = SpacetimeProblem(arm, 0.5, 10, *ends, upper=[1.0, np.inf])
    limited = optimize(problem, method="L-BFGS-B")
    assert limited.q[:, 0].max() <= 1.0 + 1e-12
    assert limited.cost > free.cost
    assert limited.boundary_error < 1e-8


def test_single_pendulum_matches_the_linearized_optimum() -> None:
    """Small swing of a pendulum: the discrete optimum equals the linear problem's solution.

    Linearized, ``tau = I q'' + k q``; minimizing the integral of ``tau^2``
    gives ``(I D^2 + k)^2 q = 0``, so ``q = a cos wt + b sin wt + c t cos wt
    + d t sin wt`` (``w^2 = k / I``) fitted to the four end conditions.
    Differences: the central differences (``(w h)^2 / 12`` ~ 1e-4 for
    ``h = 0.01 s``) and the sine (``A^2 / 6`` ~ 7e-5 for ``A = 0.02 rad``);
    the tolerance is 1e-3 of the amplitude.
    """
    model = Model.from_scene(get_scenario("pendulum").build())
    zero = np.zeros(1)
    inertia = model.mass_matrix(zero)[0, 0]
    k = inverse_dynamics_derivatives(model, zero, zero, zero)[0][0, 0]
    w = np.sqrt(k / inertia)
    T, A = 0.5, 0.02
    result = optimize(SpacetimeProblem(model, T, 50, [0.0], [A]))
    assert result.status == "optimal"

    def basis(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        c, s = np.cos(w * t), np.sin(w * t)
        value = np.stack([c, s, t * c, t * s], -1)
        slope = np.stack([-w * s, w * c, c - w * t * s, s + w * t * c], -1)
        return value, slope

    (v0, d0), (v1, d1) = basis(np.array(0.0)), basis(np.array(T))
    coef = np.linalg.solve(np.array([v0, d0, v1, d1]), [0.0, 0.0, A, 0.0])
    linear = basis(result.t)[0] @ coef
    np.testing.assert_allclose(result.q[:, 0], linear, atol=1e-3 * A)


def test_cli_writes_a_results_folder(tmp_path: Path) -> None:
    """``contactlab optimize`` states cost, iterations, gradient check and boundary error."""
    out = tmp_path / "swing"
    code = main(
        ["optimize", "pendulum", "--start", "0", "--end", "30deg", "--duration", "0.4",
         "--knots", "8", "--out", str(out), "--no-animation"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "optimal"
    assert summary["gradient_check_initial"] < 1e-6
    assert summary["boundary_error"] < 1e-8
    assert summary["cost"] < summary["initial_cost"]
    assert np.isclose(np.load(out / "trajectory.npz")["q"][-1, 0], np.deg2rad(30))
    assert {p.name for p in (out / "plots").iterdir()} == {"q.png", "tau.png", "convergence.png"}


def test_bad_input_is_named(arm: Model) -> None:
    with pytest.raises(ConfigurationError, match="via-point time 0.33 s is not an interior knot"):
        SpacetimeProblem(arm, 1.0, 10, [0, 0], [1, 1], via={0.33: [0, 0]})
    with pytest.raises(ConfigurationError, match="q_end must be 2 finite numbers"):
        SpacetimeProblem(arm, 1.0, 10, [0, 0], [1, np.nan])
    with pytest.raises(ConfigurationError, match="joint limits need method 'L-BFGS-B'"):
        optimize(SpacetimeProblem(arm, 1.0, 10, [0, 0], [1, 1], upper=[2, 2]), method="BFGS")
