"""The ``soft`` model's resting penetration and its warm start.

At rest (``v = v^+ = 0``) the normal row of MuJoCo's regularized problem reads
``(A + R) z - h g - h a_ref = 0`` with ``A z = h g`` (the impulse carries the
weight), so ``R m g = -k d r``: a ball rests at ``r* = -(1-d)/d * (1/m) * m g / (k d)``,
which for a constant impedance ``d`` (``dmin = dmax``) and ``solref = (tc, zeta)`` is
``r* = -(1 - d) g tc^2 zeta^2``, independent of the mass and exact at the discrete
level.  MuJoCo's pyramid puts ``m g / 4`` on each of four edges regularized by
``R_py = 2 mu^2 (1-d)/d (1 + mu^2)/m``, so there ``r*`` carries the factor
``mu^2 (1 + mu^2) / 2`` (maximal coordinates: in reduced ones ``diag="auto"`` takes the
exact ``W_ii`` of the edges, ``(1 + 3.5 mu^2)/m`` for a ball, not MuJoCo's approximation).
Checked in maximal and reduced coordinates (``diag`` from the body weights or
from ``W_ii``: both ``1/m`` for a ball's normal row) to 1e-9 relative after the
critically damped approach has died out.  The step's problem is strictly convex, so a
step started from the previous impulses (warm) ends where a cold start does.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

G = 9.81


@pytest.mark.parametrize(
    ("formulation", "cone"),
    [("maximal", "elliptic"), ("reduced", "elliptic"), ("maximal", "pyramidal")],
)
def test_ball_rests_at_the_soft_penetration(formulation: str, cone: str) -> None:
    d, tc, zeta = 0.9, 0.02, 1.0
    scene = get_scenario("ball-drop").build(height=0.005, dt=2e-3, duration=1.0)
    options = {
        "solref": (tc, zeta),
        "solimp": (d, d, 0.001, 0.5, 2.0),
        "cone": cone,
        "solver_tol": 1e-13,
        "max_iter": 100000,
    }
    sim = Simulator(scene, formulation, "soft", "nsgs", dt=2e-3, model_options=options)
    state = sim.initial_state()
    for i in range(750):
        state, record = sim.step(state, i)
        assert record.solution.status == "optimal"
    E, _ = sim.formulation.maximal(state)
    r = float(E[0][2, 3]) - 0.1  # radius 0.1
    expected = -(1.0 - d) * G * tc * tc * zeta * zeta
    if cone == "pyramidal":
        # four edges of weight (1 + mu^2)/m, each R_py = 2 mu^2 R_0 carrying m g / 4
        mu = 0.5
        expected *= 2.0 * mu * mu * (1.0 + mu * mu) / 4.0
    assert abs(r - expected) <= 1e-9 * abs(expected)


@pytest.mark.parametrize("cone", ["elliptic", "pyramidal"])
def test_warm_start_reaches_the_cold_solution(cone: str) -> None:
    scene = get_scenario("box-stack").build()
    options = {"cone": cone, "solver_tol": 1e-12, "max_iter": 200000}
    sim = Simulator(scene, "maximal", "soft", "nsgs", dt=0.005, model_options=options)
    state = sim.initial_state()
    for i in range(60):
        state, _ = sim.step(state, i)
    from contactlab.collision import collide

    problem = sim.formulation.assemble(state, 0.005, collide(scene, state.E))
    assert problem.n_contacts >= 12
    warm = sim.model.solve(problem, dict(state.cache))
    cold = sim.model.solve(problem, {})
    scale = np.abs(cold.v).max() + 9.81 * 0.005
    assert np.abs(warm.v - cold.v).max() <= 1e-9 * scale
