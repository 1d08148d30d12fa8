"""Floating-base spacetime transition with welded feet: derivatives, feasibility, optimality."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.optimize.transition import ContactTransition, solve
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.scenario import load_scenarios

pytestmark = pytest.mark.skipif(
    "humanoid-topple" not in load_scenarios(), reason="example-robot-data is not installed"
)


@pytest.fixture(scope="module")
def squat() -> ContactTransition:
    from contactlab.optimize.examples import humanoid_squat

    return humanoid_squat(knots=4, duration=0.4)


def test_jacobians_equal_central_differences(squat: ContactTransition) -> None:
    """Residual and constraint Jacobians (torques through ID with the contact wrenches held in
    the foot frames; foot position and orientation errors) against central differences of the
    evaluated residuals and constraints (step 1e-6), away from the initial guess: 1e-6 of the
    largest entry (central differences of smooth functions: about 1e-9 here)."""
    x = squat.initial_guess()
    x = x + 1e-2 * np.random.default_rng(3).standard_normal(len(x))
    r, c, Jr, Jc = squat.jacobians(x)
    r2, c2 = squat.evaluate(x)
    np.testing.assert_array_equal(r, r2)
    np.testing.assert_array_equal(c, c2)
    fd_r = np.empty(Jr.shape)
    fd_c = np.empty(Jc.shape)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = 1e-6
        rp, cp = squat.evaluate(x + e)
        rm, cm = squat.evaluate(x - e)
        fd_r[:, i] = (rp - rm) / 2e-6
        fd_c[:, i] = (cp - cm) / 2e-6
    assert np.abs(Jr.toarray() - fd_r).max() <= 1e-6 * np.abs(fd_r).max()
    feet = slice(6 * (squat.path.knots + 1), None)
    assert np.abs(Jc.toarray() - fd_c).max() <= 1e-6 * np.abs(fd_c).max()
    assert np.abs(Jc.toarray()[feet] - fd_c[feet]).max() <= 1e-6 * np.abs(fd_c[feet]).max()


def test_iterates_keep_the_feet_and_carry_the_base(squat: ContactTransition) -> None:
    """Every accepted iterate is feasible (the constraints are restored at each trial point):
    after a few iterations, whatever the stopping point, every knot's feet are at their start
    poses to 1e-8 (measured by forward kinematics), the base is unactuated (base rows of ID
    with the contact wrenches) to 1e-8, the end poses are exact, and the cost has fallen."""
    result = solve(squat, max_iterations=3)
    assert result.nit >= 1
    assert result.cost < result.initial_cost
    model, tree = squat.model, squat.model.tree
    for k, q in enumerate(result.q):
        E = forward_kinematics(tree, q).E[squat.foot_bodies]
        np.testing.assert_allclose(E[:, :3, 3], squat.foot_poses[:, :3, 3], atol=1e-8, rtol=0)
        np.testing.assert_allclose(E[:, :3, :3], squat.foot_poses[:, :3, :3], atol=1e-8, rtol=0)
        W = squat._wrenches(result.wrenches[k])
        tau = model.inverse_dynamics(q, result.qdot[k], result.qddot[k], W)
        assert np.abs(tau[squat.base]).max() <= 1e-8
    np.testing.assert_array_equal(result.q[0], squat.path.q_start)
    np.testing.assert_array_equal(result.q[-1], squat.path.q_end)


def test_end_pose_off_the_feet_is_refused(squat: ContactTransition) -> None:
    """An end pose that moves a foot is named and refused (no transition can meet it)."""
    from contactlab.errors import ConfigurationError

    moved = squat.path.q_end.copy()
    moved[squat.joints[3]] += 0.1  # the left knee, with the base unchanged
    with pytest.raises(ConfigurationError, match="moves a foot"):
        ContactTransition(squat.model, 0.4, 4, squat.path.q_start, moved, squat.feet)


def test_iterates_with_urdf_limits_stay_within_them(squat: ContactTransition) -> None:
    """With the URDF's joint limits every returned knot lies within them to 1e-8 (the active
    set holds a variable on the limit it would cross, and restoration corrections that cross
    one are held too), while the feet stay at their start poses to 1e-8."""
    problem = squat  # built with the URDF limits (the default)
    assert np.isfinite(problem.path.lower[problem.joints]).all()
    result = solve(problem, max_iterations=10)
    assert result.nit >= 1 and result.cost < result.initial_cost
    assert np.all(result.q >= problem.path.lower - 1e-8)
    assert np.all(result.q <= problem.path.upper + 1e-8)
    for q in result.q:
        E = forward_kinematics(problem.model.tree, q).E[problem.foot_bodies]
        np.testing.assert_allclose(E[:, :3, 3], problem.foot_poses[:, :3, 3], atol=1e-8, rtol=0)


def _lagrangian_gradient(problem: ContactTransition, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r, _, Jr, Jc = problem.jacobians(x)
    return 2.0 * (Jr.T @ r) + Jc.T @ y


def test_lagrangian_hessian_equals_central_differences(squat: ContactTransition) -> None:
    """``lagrangian_hessian`` (``2 J^T J``, the torques' curvature weighted by the residuals
    and the base multipliers, the feet's weighted by theirs) equals central differences of
    the exact Lagrangian gradient ``2 Jr^T r + Jc^T y`` (step 1e-5) at a random point with
    random multipliers, to 1e-5 of its largest entry (its own forward differences of exact
    derivatives, step 1e-7, are good to about 1e-7 relative; Gauss-Newton alone is off by
    more than 1e-3)."""
    rng = np.random.default_rng(5)
    x = squat.initial_guess()
    x = x + 1e-2 * rng.standard_normal(len(x))
    _, c, _, _ = squat.jacobians(x)
    y = rng.standard_normal(len(c))
    H = squat.lagrangian_hessian(x, y).toarray()
    fd = np.empty_like(H)
    for i in range(len(x)):
        e = np.zeros_like(x)
        e[i] = 1e-5
        fd[:, i] = _lagrangian_gradient(squat, x + e, y) - _lagrangian_gradient(squat, x - e, y)
        fd[:, i] /= 2e-5
    scale = np.abs(fd).max()
    assert np.abs(H - fd).max() <= 1e-5 * scale
    r, _, Jr, _ = squat.jacobians(x)
    assert np.abs(2.0 * (Jr.T @ Jr).toarray() - fd).max() > 1e-3 * scale


def test_converged_transition_is_a_kkt_point_and_a_local_minimum(
    squat: ContactTransition,
) -> None:
    """With the URDF limits the solver reports ``optimal``; checked here without its own
    report: the feet stay at their poses and the base unactuated to 1e-8 at every knot; the
    Lagrangian gradient with least-squares multipliers of the constraints and the bounds the
    solution lies on (dense ``lstsq``) is below 1e-6 of the initial cost gradient; every
    bound multiplier pushes outward (the cost would rise by leaving the bound); and the
    Lagrangian Hessian is positive semidefinite on the tangent space of the constraints and
    active bounds (second-order necessary condition; its least eigenvalue is above -1e-6 of
    its largest): a local minimum, not a saddle."""
    import scipy.linalg

    problem = squat
    result = solve(problem, max_iterations=200)
    assert result.status == "optimal"
    x = result.x
    lower, upper = problem.bounds()
    assert np.all(x >= lower) and np.all(x <= upper)
    r, c, Jr, Jc = problem.jacobians(x)
    assert np.abs(c).max() <= 1e-8
    g = 2.0 * (Jr.T @ r)
    r0, _, Jr0, _ = problem.jacobians(problem.initial_guess())
    g0 = np.abs(2.0 * (Jr0.T @ r0)).max()
    at_low = x - lower <= 1e-10
    at_high = upper - x <= 1e-10
    active = np.flatnonzero(at_low | at_high)
    E = np.zeros((len(active), len(x)))
    E[np.arange(len(active)), active] = 1.0
    A = np.vstack([Jc.toarray(), E])
    y = np.linalg.lstsq(A.T, -g, rcond=None)[0]
    lag = g + A.T @ y
    assert np.abs(lag).max() <= 1e-6 * g0
    z = y[len(c) :]  # d L / d x_i = g_i + z_i = 0: z_i = -g_i
    assert np.all(z[at_low[active]] <= 1e-6 * g0)  # at a lower bound the cost pulls down
    assert np.all(z[at_high[active]] >= -1e-6 * g0)
    H = problem.lagrangian_hessian(x, y[: len(c)], r, Jr).toarray()
    Z = scipy.linalg.null_space(A)
    eig = np.linalg.eigvalsh(Z.T @ H @ Z)
    assert eig.min() >= -1e-6 * eig.max()
