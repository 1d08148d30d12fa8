"""Banded Newton / Gauss-Newton spacetime optimization: derivatives, optimality, agreement."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contactlab.cli import main
from contactlab.errors import ConfigurationError
from contactlab.optimize import SpacetimeProblem, optimize
from contactlab.optimize.gauss_newton import (
    banded_lower,
    projected_gradient,
    residual_curvature,
    sparse_jacobian,
)
from contactlab.optimize.spacetime import SpacetimeResult
from contactlab.reduced.model import Model
from contactlab.scenario import get_scenario


def _chain(n: int) -> Model:
    return Model.from_scene(get_scenario("chain").build(n_links=n, joints="R", axes="y"))


@pytest.fixture(scope="module")
def arm2() -> Model:
    return Model.from_scene(get_scenario("chain").build(n_links=2, joints="R", axes="yz"))


@pytest.fixture(scope="module")
def arm3() -> Model:
    return _chain(3)


def _perturbed(arm: Model) -> tuple[SpacetimeProblem, np.ndarray]:
    a = np.array
    problem = SpacetimeProblem(
        arm, 0.6, 12, a([0.0, 0.0]), a([1.0, -0.5]), a([0.3, 0.1]), a([-0.2, 0.4]),
        via={0.3: a([0.5, 0.2])},
    )  # fmt: skip
    x = problem.initial_guess() + 0.1 * np.random.default_rng(1).standard_normal(problem.n_free)
    return problem, x


def test_sparse_jacobian_equals_the_dense_one(arm2: Model) -> None:
    """The banded assembly equals the dense chain rule of ``residual_jacobian`` (1e-12).

    Two constructions of the same matrix (index arithmetic with folded ghost
    knots, against dense four-index accumulation), with end velocities and a
    via-point; ``r . r`` is the cost.  Its Gauss-Newton matrix is banded with
    half-bandwidth below ``3 nq``.
    """
    problem, x = _perturbed(arm2)
    r, J = sparse_jacobian(problem, x)
    dense = problem.residual_jacobian(x)
    assert np.abs(J.toarray() - dense).max() <= 1e-12 * np.abs(dense).max()
    assert np.isclose(r @ r, problem.cost(x), rtol=1e-13)
    assert banded_lower(J.T @ J).shape[0] <= 3 * arm2.nq


def test_newton_hessian_equals_central_differences_of_the_gradient(arm2: Model) -> None:
    """``2 (J^T J + sum r_i d2r_i)`` equals central differences of the exact gradient.

    The curvature term is itself a forward difference (step 1e-7: truncation
    about 1e-7 of the third derivative, roundoff 1e-9); the central differences
    of the gradient (step 1e-6) err by about 1e-12.  Tolerance 1e-5 of the
    largest entry.
    """
    problem, x = _perturbed(arm2)
    r, J = sparse_jacobian(problem, x)
    H = 2.0 * (J.T @ J + residual_curvature(problem, x, r)).toarray()
    step = 1e-6
    fd = np.empty_like(H)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = step
        fd[:, i] = (problem.cost_and_gradient(x + e)[1] - problem.cost_and_gradient(x - e)[1]) / (
            2 * step
        )
    assert np.abs(H - fd).max() <= 1e-5 * np.abs(fd).max()
    # the omitted term matters here: Gauss-Newton alone is off by more than the tolerance
    assert np.abs(2.0 * (J.T @ J).toarray() - fd).max() > 1e-3 * np.abs(fd).max()


@pytest.mark.parametrize("method", ["Newton", "Gauss-Newton"])
def test_optimum_with_limits_and_via_point_meets_first_order_conditions(
    arm3: Model, method: str
) -> None:
    """3-link arm with a via-point and binding limits of +-60 deg: a KKT point.

    The projected gradient (the gradient without the components a held bound
    absorbs: the bound multipliers, of the right sign by construction) is below
    1e-6 of its value at the initial guess; no knot passes a limit by more than
    1e-8; the via-point and the end states hold to 1e-8; the limits bind
    (some knot sits on one).
    """
    limit = np.deg2rad(60.0)
    q1 = np.array([np.pi / 3, -np.pi / 4, np.pi / 6])
    problem = SpacetimeProblem(
        arm3, 0.8, 16, np.zeros(3), q1, via={0.4: np.array([0.6, 0.0, 0.0])},
        lower=np.full(3, -limit), upper=np.full(3, limit),
    )  # fmt: skip
    result = optimize(problem, method=method, check_gradient=False)
    assert result.status == "optimal"
    mask = ~problem._fixed
    lower = np.broadcast_to(problem.lower, mask.shape)[mask]
    upper = np.broadcast_to(problem.upper, mask.shape)[mask]
    x0 = problem.initial_guess()
    x = result.q[mask]
    pg0 = projected_gradient(problem.cost_and_gradient(x0)[1], x0, lower, upper)
    pg = projected_gradient(problem.cost_and_gradient(x)[1], x, lower, upper)
    assert np.abs(pg).max() <= 1e-6 * np.abs(pg0).max()
    assert np.all(result.q >= -limit - 1e-8) and np.all(result.q <= limit + 1e-8)
    assert np.isclose(np.abs(result.q).max(), limit, atol=1e-12)
    np.testing.assert_allclose(result.q[8], [0.6, 0.0, 0.0], atol=1e-8)
    assert result.boundary_error < 1e-8
    assert result.cost < result.initial_cost


def test_newton_and_bfgs_reach_the_same_optimum(arm3: Model) -> None:
    """The arm example (20 knots), two methods from one start: the same minimizer.

    The problem is not convex (a light triple pendulum has many nearly passive
    motions), so both start from the same point in one basin: the Newton
    optimum with every free knot moved by up to 0.01 rad (at 0.05 rad BFGS can
    leave for another basin).  Both stop when the
    predicted decrease ``g^T H^-1 g / 2`` is below 1e-12 of the initial cost,
    i.e. within ``sqrt(2e-12 f0 / lambda_min(H))`` of the minimizer (the
    tolerances 1e-5 rad and 1e-8 of the cost bound it with margin).
    """
    q1 = np.array([np.pi / 2, -np.pi / 4, np.pi / 6])
    problem = SpacetimeProblem(arm3, 1.0, 20, np.zeros(3), q1)
    first = optimize(problem, check_gradient=False)
    assert first.status == "optimal"
    start = first.q + 0.01 * np.random.default_rng(2).uniform(-1, 1, first.q.shape)
    newton = optimize(problem, method="Newton", check_gradient=False, initial=start)
    bfgs = optimize(problem, method="BFGS", check_gradient=False, initial=start)
    assert newton.status == bfgs.status == "optimal"
    np.testing.assert_allclose(newton.q, bfgs.q, atol=1e-5)
    assert abs(newton.cost - bfgs.cost) <= 1e-8 * newton.cost


def test_arm_optimum_does_not_wind(arm3: Model) -> None:
    """Unless ``wind=True``, no revolute joint turns half a turn past its fixed positions.

    The documented arm example (horizontal to (90, -45, 30) deg in 1 s) whose
    BFGS optimum once wound joints to -296 and 410 deg.
    """
    q1 = np.array([np.pi / 2, -np.pi / 4, np.pi / 6])
    problem = SpacetimeProblem(arm3, 1.0, 20, np.zeros(3), q1)
    result = optimize(problem, check_gradient=False)
    assert result.status == "optimal"
    low, high = problem.turn_bounds()
    np.testing.assert_allclose(low, np.minimum(0.0, q1) - np.pi)
    np.testing.assert_allclose(high, np.maximum(0.0, q1) + np.pi)
    assert np.all(result.q >= low - 1e-8) and np.all(result.q <= high + 1e-8)
    assert np.all(np.abs(result.q) < 2 * np.pi)


def _hanging(n: int) -> SpacetimeProblem:
    """The benchmark's hanging ``n``-link chain swung to a bent pose (0.6 s, 10 intervals)."""
    start = np.zeros(n)
    start[0] = np.pi / 2
    end = start.copy()
    end[:3] += [0.4, -0.3, 0.2]
    return SpacetimeProblem(_chain(n), 0.6, 10, start, end)


def _first_order_point(
    problem: SpacetimeProblem, result: SpacetimeResult
) -> tuple[np.ndarray, ...]:
    """Check, without the solver's report, that ``result`` is ``optimal``, within the
    half-turn bounds, and that its projected gradient (from the dense gradient of
    ``cost_and_gradient``, not the solver's sparse Jacobian) is below 1e-6 of the initial
    gradient; returns the unknowns, the mask of those off the bounds and the exact Hessian
    over them."""
    assert result.status == "optimal"
    mask = ~problem._fixed
    x = result.q[mask]
    low, high = problem.turn_bounds()
    lower = np.broadcast_to(low, mask.shape)[mask]
    upper = np.broadcast_to(high, mask.shape)[mask]
    assert np.all(x >= lower) and np.all(x <= upper)
    g = problem.cost_and_gradient(x)[1]
    g0 = problem.cost_and_gradient(problem.initial_guess())[1]
    assert np.abs(projected_gradient(g, x, lower, upper)).max() <= 1e-6 * np.abs(g0).max()
    free = (x - lower > 1e-10) & (upper - x > 1e-10)
    r, J = sparse_jacobian(problem, x)
    H = 2.0 * (J.T @ J + residual_curvature(problem, x, r)).toarray()
    return x, free, H[np.ix_(free, free)]


def test_ten_link_chain_converges() -> None:
    """A hanging 10-link chain (10 unknowns per knot) swung to a bent pose: a first-order point.

    The projected gradient (half-turn bounds) falls below 1e-6 of the initial
    gradient; the cost below the straight-line guess's.  The iteration count is not part of
    the fact: rounding decides the way near saddles (measured with OpenBLAS's kernels:
    Prescott 175, SkylakeX 182, Haswell 186 iterations to cost 9.3e-6; with the damped step
    alone 141 to 4.0e-5 and 852 and 1384 to 2.8e-5), so the cap is set well above them.
    """
    problem = _hanging(10)
    result = optimize(problem, check_gradient=False, max_iterations=4000)
    _first_order_point(problem, result)
    assert result.cost < result.initial_cost


def test_twenty_link_chain_reaches_a_first_order_point() -> None:
    """The hanging 20-link chain of the benchmark (180 unknowns), default Newton: ``optimal``,
    checked without the solver's report.

    The projected gradient (half-turn bounds), from the dense gradient of
    ``cost_and_gradient`` (not the solver's sparse Jacobian), is below 1e-6 of the
    initial gradient; every knot within its bounds; the cost below the straight-line
    guess's.  The Hessian there is indefinite along the chain's nearly passive motions
    (a first-order point; the solver's message says which case it stopped in, and the
    least eigenvalue of the exact Hessian over the variables off the bounds agrees with
    it).  Before the flipped steps the damped Newton stopped at the 1000-iteration cap.
    """
    problem = _hanging(20)
    result = optimize(problem, check_gradient=False)
    _, _, H = _first_order_point(problem, result)
    assert result.cost < result.initial_cost
    least = np.linalg.eigvalsh(H)[0]
    assert ("indefinite" in result.message) == (least < 0.0)


def test_cli_limits_run_the_banded_newton(tmp_path: Path) -> None:
    """``--upper`` with the default method: Newton, optimal, no knot above the limit (1e-8)."""
    out = tmp_path / "limited"
    code = main(
        ["optimize", "pendulum", "--start", "0", "--end", "30deg", "--upper", "35deg",
         "--duration", "0.4", "--knots", "8", "--out", str(out), "--no-animation"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "Newton" and summary["status"] == "optimal"
    assert summary["problem"]["wind"] is False
    assert np.load(out / "trajectory.npz")["q"].max() <= np.deg2rad(35) + 1e-8


def test_wind_lifts_the_half_turn_bounds_and_bad_initial_knots_are_named(arm2: Model) -> None:
    """``wind=True`` leaves the limits as given; ``initial`` of the wrong shape is refused."""
    a = np.array
    problem = SpacetimeProblem(arm2, 0.5, 10, a([0.0, 0.0]), a([1.0, -1.0]), wind=True)
    low, high = problem.turn_bounds()
    assert np.all(np.isinf(low)) and np.all(np.isinf(high))
    bounded = SpacetimeProblem(arm2, 0.5, 10, a([0.0, 0.0]), a([1.0, -1.0]), upper=a([2.0, np.inf]))
    low, high = bounded.turn_bounds()
    np.testing.assert_allclose(high, [2.0, np.pi])
    np.testing.assert_allclose(low, [-np.pi, -1.0 - np.pi])
    with pytest.raises(ConfigurationError, match=r"initial must be \(11, 2\) finite knot"):
        optimize(problem, initial=np.zeros((10, 2)))


def test_horizontal_ten_link_arm_reaches_a_local_minimum() -> None:
    """The 10-link arm from horizontal to (90, -45, 30, 0, ...) deg in 1 s (10 intervals),
    default Newton: ``optimal`` (within the 1000-iteration cap), checked without the solver's
    report.  First order: the gradient with the components that push a variable at a
    half-turn bound outward removed is below 1e-6 of the initial gradient (the removed
    components are the bound multipliers, of the right sign by construction).  Second order:
    the exact Hessian over the variables off the bounds is positive definite (its least
    eigenvalue above 0), and that eigenvalue equals the second difference of the cost along
    its eigenvector (step 1e-4: truncation ``eps^2 f'''' / 12``, rounding about
    ``1e-16 f / eps^2``; bound 1e-2; with step 1e-3 the truncation was 6e-4 relative at the
    minimum reached with SkylakeX kernels, 1.2e-2 at the flatter one, least eigenvalue
    2.4e-8, reached with Prescott's), so the curvature is the cost's own, not the model's:
    a local minimum.
    """
    model = _chain(10)
    end = np.zeros(10)
    end[:3] = [np.pi / 2, -np.pi / 4, np.pi / 6]
    problem = SpacetimeProblem(model, 1.0, 10, np.zeros(10), end)
    result = optimize(problem, check_gradient=False)
    x, free, H = _first_order_point(problem, result)
    eig, V = np.linalg.eigh(H)
    assert eig[0] > 0.0
    v = np.zeros_like(x)
    v[free] = V[:, 0]
    eps = 1e-4
    second = (problem.cost(x + eps * v) - 2 * problem.cost(x) + problem.cost(x - eps * v)) / eps**2
    assert abs(second - eig[0]) <= 1e-2 * eig[0]
