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
