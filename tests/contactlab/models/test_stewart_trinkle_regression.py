"""Stewart--Trinkle with Lemke on a sliding cube that comes to rest (box-slide regression).

The cube (m = 1 kg, side 0.2 m, four corner contacts, k = 4 pyramid
directions, mu = 0.3, h = 5 ms) is launched at v0 = 2 m/s along +x.  Once it
has stopped, every step poses a maximally degenerate LCP: the four normal
rows span only three velocity directions (``N M^-1 N^T`` has rank 3), the
pyramid holds ``d`` and ``-d`` (``D M^-1 D^T`` is singular), and the friction
right-hand sides are rounding noise of order 1e-13 around zero.  Lemke's
method once ended on a secondary ray there (step 175, t = 0.875 s): a near
tie in the ratio test left a basic value negative by rounding.  The LCP has a
solution (the cube can stay at rest), so a correct Lemke must find it.

Facts, with their tolerances:

- the step-175 LCP is solved: ``optimal``, natural-map residual
  ``max |min(z, Mz + q)| < 1e-9`` (the brief's bar; the solve reaches about
  1e-13), the normal impulses carry the weight ``m g h`` to 1e-9, and the
  sliding speed is 0 to 1e-9 m/s;
- a whole 1 s run completes, every step ``optimal``; the cube travels exactly
  the semi-implicit Euler distance ``h sum_n (v0 - n a h)`` with
  ``a = mu g`` along the pyramid's axis (1e-9 m), which is
  ``v0^2 / (2 mu g) - v0 h / 2`` = 0.67458 m against the continuous 0.67958 m,
  and it stops on the predicted step;
- at 45 deg, between two pyramid directions, the 4-direction pyramid
  (friction set ``|f_x| + |f_y| <= mu f_N``) gives only ``mu / sqrt(2)``
  opposite the slip: the same discrete formula with ``a = mu g / sqrt(2)``
  (0.95607 m, sqrt(2) times the cone's distance less the same bias) holds to
  1e-9 m, with no sideways drift (1e-9 m).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.models.stewart_trinkle import StewartTrinkle
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers import LCP, solve

G = 9.81
V0, MU, MASS, H = 2.0, 0.3, 1.0, 5e-3
FAILING_STEP = 175  # the step that used to end on a secondary ray


class RecordingStewartTrinkle(StewartTrinkle):
    """Stewart--Trinkle that keeps the LCP of its latest step."""

    name = "stewart-trinkle"

    def __init__(self, solver: str, **options: Any) -> None:
        super().__init__(solver, **options)
        self.lcps: list[LCP] = []

    def run(self, problem: Any, warm: Any = None) -> Any:
        self.lcps.append(problem)
        return super().run(problem, warm)


def slide_simulator(direction_deg: float = 0.0) -> tuple[Simulator, RecordingStewartTrinkle]:
    scene = get_scenario("box-slide").build(v0=V0, mu=MU, mass=MASS, direction_deg=direction_deg)
    model = RecordingStewartTrinkle("lemke")
    return Simulator(scene, "maximal", model, dt=H), model


def discrete_stop(a: float) -> tuple[float, int]:
    """Distance [m] and step count of semi-implicit Euler braking at ``a`` [m/s^2] from V0.

    ``v_n = max(V0 - n a h, 0)``, ``x = h sum_n v_n``; the step that brings the
    speed to zero is the first with ``n a h >= V0``.
    """
    n_full = int(np.floor(V0 / (a * H)))
    x = H * sum(V0 - n * a * H for n in range(1, n_full + 1))
    return x, n_full + 1


@pytest.fixture(scope="module")
def resting_step() -> tuple[Any, LCP, Any]:
    """The step record and LCP of step 175 (the cube at rest for 39 steps)."""
    sim, model = slide_simulator()
    state = sim.initial_state()
    for i in range(FAILING_STEP + 1):
        state, record = sim.step(state, i)
    return record, model.lcps[-1], state


def test_failing_step_problem_is_the_degenerate_resting_cube(resting_step) -> None:
    record, lcp, _ = resting_step
    problem = record.problem
    nc, k = problem.n_contacts, 4
    assert nc == 4 and lcp.n == nc * (1 + k + 1)
    # at rest before the step: the body twist is rounding noise
    assert np.abs(problem.v).max() < 1e-9
    W = lcp.M.toarray()[: nc * (1 + k), : nc * (1 + k)]
    assert np.linalg.matrix_rank(W[:nc, :nc], tol=1e-9) == 3  # redundant normal rows
    q_friction = lcp.q[nc : nc * (1 + k)]
    assert np.abs(q_friction).max() < 1e-11  # friction right-hand side: rounding noise
    np.testing.assert_allclose(lcp.q[:nc], -G * H, atol=1e-9)  # gravity's velocity change


def test_lemke_solves_the_resting_cube_step(resting_step) -> None:
    record, lcp, _ = resting_step
    res = solve(lcp, "lemke")
    assert res.status == "optimal", res.message
    z = res.x
    w = np.asarray(lcp.M @ z + lcp.q)
    assert z.min() >= 0.0
    assert np.abs(np.minimum(z, w)).max() < 1e-9
    assert np.abs(z * w).max() < 1e-12
    nc, k = 4, 4
    assert z[:nc].sum() == pytest.approx(MASS * G * H, abs=1e-9)  # impulse carries the weight
    assert np.abs(z[nc * (1 + k) :]).max() < 1e-9  # sliding speed s = 0
    # the model's own step agrees: optimal, and the cube stays put
    assert record.solution.status == "optimal"
    assert np.abs(record.solution.v).max() < 1e-9


def test_full_slide_stops_at_the_discrete_v0_squared_over_2_mu_g() -> None:
    sim, _ = slide_simulator(0.0)
    run = sim.run(duration=1.0)
    assert set(run.steps["status"]) == {"optimal"}
    p = run.trajectory["position"][:, 0]
    speed = np.linalg.norm(run.trajectory["twist"][:, 0, 3:], axis=1)
    x_disc, n_stop = discrete_stop(MU * G)
    continuous = V0**2 / (2 * MU * G)
    assert continuous == pytest.approx(0.67958, abs=1e-5)
    assert p[-1, 0] - p[0, 0] == pytest.approx(x_disc, abs=1e-9)
    assert x_disc == pytest.approx(continuous - V0 * H / 2, abs=1e-5)
    assert abs(p[-1, 1] - p[0, 1]) < 1e-9 and abs(p[-1, 2] - p[0, 2]) < 1e-9
    assert int(np.argmax(speed < 1e-9)) == n_stop
    assert speed[-1] < 1e-9


def test_slide_between_pyramid_directions_brakes_at_mu_over_sqrt2() -> None:
    sim, _ = slide_simulator(45.0)
    run = sim.run(duration=1.0)
    assert set(run.steps["status"]) == {"optimal"}
    d = run.trajectory["position"][-1, 0] - run.trajectory["position"][0, 0]
    u = np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0)
    x_disc, _ = discrete_stop(MU * G / np.sqrt(2.0))
    assert d @ u == pytest.approx(x_disc, abs=1e-9)
    assert x_disc == pytest.approx(np.sqrt(2.0) * V0**2 / (2 * MU * G) - V0 * H / 2, abs=1e-5)
    assert np.linalg.norm(d - (d @ u) * u) < 1e-9
