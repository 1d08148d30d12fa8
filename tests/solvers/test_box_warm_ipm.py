"""The box law through ``ipm`` warm-started from the previous step's impulses.

Facts: on a pile at rest the warm start turns a fixed point of 16 rounds into a few
semismooth Newton iterations from the warm impulses (or, without that, one fixed-point
round from them), to the same velocities as the cold start; a Newton start that misses
hands its iterate to the fixed point, which still meets the tolerance.  The Coulomb law on
the pyramid (``stewart-trinkle``) starts its fixed point from the warm impulses too.
"""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.bench_friction import posed_problems
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers import solve
from solvers.backends.fc_newton import BoxNewton
from solvers.backends.friction import IPMBackend
from solvers.frictional import fc_residuals


def resting_step(model: str) -> tuple:
    """The third step of ``model`` by ``ipm`` (natural map 1e-6) on the 30-box pile stacked
    at rest (288 contacts, four on every face) and its warm start: the previous step's
    impulses per persistent contact, as the model passes them."""
    scene = get_scenario("box-pile").build(n=30, layout="stacked")
    state = Simulator(scene, "maximal", "frictionless", "pgs").initial_state()
    sim = Simulator(scene, "maximal", model, "ipm", dt=0.005,
                    model_options={"solver_tol": 1e-6})  # fmt: skip
    problem, warm = posed_problems(sim, state, 3)[-1]
    assert warm is not None and problem.nc == 288 and problem.law == "coulomb"
    return problem, warm


def _rounds(res) -> int:  # type: ignore[no-untyped-def]
    return int(res.message.split(" fixed-point rounds")[0].rsplit(" ", 1)[1])


@pytest.fixture(scope="module")
def resting_box_step() -> tuple:
    """``box-friction``'s step (the box law)."""
    problem, warm = resting_step("box-friction")
    assert problem.cone == "box"
    return problem, warm


def test_box_law_warm_start_on_a_pile_at_rest(resting_box_step: tuple) -> None:
    """Warm impulses at natural map 1.6e-6 (above the tolerance 1e-6, below
    ``newton_first``): semismooth Newton from them meets 1e-6 in 1 iteration (measured;
    3 with the proximal term from 1e-8 instead of ``newton_first_eps``), no fixed-point
    round; cold, the fixed point takes 115 interior-point iterations in 16 rounds
    (measured).  At 1e-8, Newton from the warm impulses stops at its 20-iteration cap and
    the fixed point goes on from its iterate: 86 iterations in all against 227 cold
    (measured).  Asserted: at most 2 Newton iterations and no interior-point one at 1e-6,
    at most half the cold count at 1e-8.

    The pile is at rest, nothing slides: warm and cold velocities agree to 1e-6 m/s
    (measured 3.8e-7 at 1e-6, 4.3e-8 at 1e-8; ``||q||`` = 0.39 m/s)."""
    problem, warm = resting_box_step
    assert 1e-6 < fc_residuals(problem, warm)["natural_map"] <= IPMBackend.newton_first
    for tol in (1e-6, 1e-8):
        hot = solve(problem, "ipm", tol=tol, warm_start=warm)
        cold = solve(problem, "ipm", tol=tol)
        assert hot.status == "optimal" and cold.status == "optimal", (hot.message, cold.message)
        assert fc_residuals(problem, hot.x)["natural_map"] <= tol
        np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)
        if tol == 1e-6:
            assert "from the warm start" in hot.message and "after 0 iterations" in hot.message
            assert hot.iterations <= 2 < 50 <= cold.iterations, (hot.message, cold.message)
        else:
            assert 2 * hot.iterations <= cold.iterations, (hot.message, cold.message)


def test_box_law_fixed_point_from_warm_impulses(
    resting_box_step: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Newton first (``newton_first = 0``) the fixed point starts from the warm
    impulses (De Saxcé's shift of their velocities, the first CCP from their interior
    point): one round, 12 interior-point iterations at 1e-6 against 16 rounds, 115 cold
    (measured); asserted at most 2 rounds and a quarter of the cold iterations, and the
    cold run's velocities within 1e-6 m/s (measured 3.4e-7)."""
    problem, warm = resting_box_step
    cold = solve(problem, "ipm", tol=1e-6)
    monkeypatch.setattr(IPMBackend, "newton_first", 0.0)
    hot = solve(problem, "ipm", tol=1e-6, warm_start=warm)
    assert hot.status == "optimal" and cold.status == "optimal", (hot.message, cold.message)
    assert "semismooth" not in hot.message
    assert _rounds(hot) <= 2 and 4 * hot.iterations <= cold.iterations, (hot.message, cold.message)
    np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)


def test_box_law_newton_first_that_misses_hands_over_to_the_fixed_point(
    resting_box_step: tuple, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Newton first capped at one iteration, its proximal term from ``BoxNewton``'s default
    1e-8 (it needs 3 iterations then): the fixed point starts from
    the better of Newton's iterate and the warm impulses and meets the tolerance (measured:
    one round, 12 interior-point iterations); the iterations reported are both, and the
    velocities agree with the cold run's within 1e-6 m/s (measured 3.4e-7)."""
    problem, warm = resting_box_step
    cold = solve(problem, "ipm", tol=1e-6)
    monkeypatch.setattr(IPMBackend, "newton_first_cap", 1)
    monkeypatch.setattr(IPMBackend, "newton_first_eps", BoxNewton.eps_start)
    hot = solve(problem, "ipm", tol=1e-6, warm_start=warm)
    assert hot.status == "optimal", hot.message
    assert (
        "1 semismooth Newton iterations" in hot.message and "from the warm start" not in hot.message
    )
    assert fc_residuals(problem, hot.x)["natural_map"] <= 1e-6
    np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)


def test_pyramid_coulomb_warm_start_on_a_pile_at_rest() -> None:
    """``stewart-trinkle`` (the Coulomb law on the pyramid, Anderson's mixing, without its
    Newton finish, ``newton=0``) on the same pile: warm impulses at natural map 1.2e-6; at
    1e-6 one round, 8 interior-point iterations against 10 rounds, 32 cold; at 1e-8 3
    rounds, 72 against 13 rounds, 91 (measured).  Asserted: at most 2 rounds and half the
    cold iterations at 1e-6, at most 4 rounds and fewer iterations than cold at 1e-8;
    velocities within 1e-6 m/s of the cold run's (measured 2.7e-8 and 6.9e-9)."""
    problem, warm = resting_step("stewart-trinkle")
    assert problem.cone == "pyramid"
    for tol in (1e-6, 1e-8):
        hot = solve(problem, "ipm", tol=tol, warm_start=warm, newton=0)
        cold = solve(problem, "ipm", tol=tol, newton=0)
        assert hot.status == "optimal" and cold.status == "optimal", (hot.message, cold.message)
        np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)
        if tol == 1e-6:
            assert _rounds(hot) <= 2 and 2 * hot.iterations <= cold.iterations, hot.message
        else:
            assert _rounds(hot) <= 4 < _rounds(cold), (hot.message, cold.message)
            assert hot.iterations < cold.iterations, (hot.message, cold.message)


def test_pyramid_law_newton_first_on_a_pile_at_rest() -> None:
    """With the pyramid law's Newton finish (the default) the warm impulses (natural map
    1.2e-6, below ``newton_first``) go to semismooth Newton first: at 1e-6 it meets the
    tolerance from them (1 iteration, no fixed-point round; cold 10 rounds, 32 iterations);
    at 1e-8 it misses within ``newton_first_cap`` and hands over to the fixed point (2
    rounds, 58 iterations in all against 91 cold; measured).  Velocities within 1e-6 m/s of
    the cold run's."""
    problem, warm = resting_step("stewart-trinkle")
    for tol in (1e-6, 1e-8):
        hot = solve(problem, "ipm", tol=tol, warm_start=warm)
        cold = solve(problem, "ipm", tol=tol)
        assert hot.status == "optimal" and cold.status == "optimal", (hot.message, cold.message)
        if tol == 1e-6:
            assert "from the warm start" in hot.message, hot.message
        else:
            assert hot.iterations < cold.iterations, (hot.message, cold.message)
        assert fc_residuals(problem, hot.x)["natural_map"] <= tol
        np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)
