"""Frictionless and Stewart--Trinkle steps through the frictional-contact backends agree with
the existing routes.

- ``frictionless``: its step as a local problem of scalar rows (``G`` bilateral,
  ``N`` and ``L`` unilateral) by ``nsgs``, ``apgd`` and ``admm`` against the
  primal contact QP solved by the interior-point ``cvxpy:clarabel``;
- ``stewart-trinkle``: its LCP (Lemke) has the conditions of the Coulomb law with
  the k-direction pyramid in De Saxcé's form, which the three backends solve.

Both on the step problems of small scenes (a three-cube stack at rest, a cube
sliding down a 30-degree incline, a cube pushed across the ground) in the same
state: contact velocities ``N v`` and ``T v`` agree to 1e-6 m/s.  The backends are
asked for a natural-map residual of 1e-10 (relative to ``||q||``) within 2e4
iterations.  On the stack's redundant contacts (four corners per face) all three
converge slowly in the impulses (frictionless, measured: nsgs 1.8e-6 and admm
1.1e-6 after 2e5 iterations, apgd 1.3e-7 after 2e4); a capped run must say
``max_iterations`` (an answer at 1e-10 ``optimal``), its residual be below 1e-4,
and its velocities still agree to 1e-6 m/s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.collision import collide
from contactlab.models.base import make_model
from contactlab.problem import StepProblem
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")
FC = ("nsgs", "apgd", "admm")
SCENES: list[tuple[str, dict[str, Any]]] = [
    ("box-stack", {"n": 3}),
    ("box-incline", {"angle_deg": 30.0}),
    ("box-push", {"force": 8.0, "mu": 0.3}),
]


def step_problems(name: str, params: dict[str, Any], steps: int = 6) -> list[StepProblem]:
    """Step problems of the scene along a box-friction run (every third step)."""
    scene = get_scenario(name).build(**params)
    sim = Simulator(scene, "maximal", "box-friction", "pgs", dt=0.005)
    state = sim.initial_state()
    out = []
    for i in range(steps):
        if i % 3 == 2:
            contacts = collide(scene, state.E)
            out.append(sim.formulation.assemble(state, 0.005, contacts))
        state, _ = sim.step(state, i)
    assert all(p.n_contacts >= 4 for p in out)
    return out


def contact_velocities(problem: StepProblem, v: np.ndarray) -> np.ndarray:
    return np.concatenate([problem.N @ v, problem.T @ v])


def solve_with(model: str, solver: str, problem: StepProblem, **options: Any) -> np.ndarray:
    m = make_model(model, solver, **options)
    sol = m.solve(problem, {})
    assert sol.status == "optimal", (model, solver, sol.status)
    return sol.v


def fc_velocities(model: str, solver: str, problem: StepProblem, **options: Any) -> np.ndarray:
    """Contact velocities by a frictional-contact backend asked for 1e-10 (module docstring)."""
    m = make_model(model, solver, solver_tol=1e-10, max_iter=20000, **options)
    sol = m.solve(problem, {})
    residual = sol.results[0].residuals["natural_map"]
    assert sol.status in ("optimal", "max_iterations"), (model, solver, sol.status)
    assert residual <= 1e-4 and (sol.status == "optimal") == (residual <= 1e-10)
    return contact_velocities(problem, sol.v)


@pytest.mark.parametrize(("name", "params"), SCENES)
def test_frictionless_by_fc_backends_agrees_with_interior_point(
    name: str, params: dict[str, Any]
) -> None:
    pytest.importorskip("clarabel")
    for problem in step_problems(name, params):
        ref = contact_velocities(
            problem, solve_with("frictionless", "cvxpy:clarabel", problem, solver_tol=1e-10)
        )
        for solver in FC:
            u = fc_velocities("frictionless", solver, problem)
            np.testing.assert_allclose(u, ref, atol=1e-6, err_msg=solver)


@pytest.mark.parametrize(("name", "params"), SCENES)
def test_stewart_trinkle_by_fc_backends_agrees_with_lemke(
    name: str, params: dict[str, Any]
) -> None:
    sliding = 0.0
    for problem in step_problems(name, params):
        v_ref = solve_with("stewart-trinkle", "lemke", problem, directions=4)
        ref = contact_velocities(problem, v_ref)
        sliding = max(sliding, float(np.max(np.abs(problem.T @ v_ref))))
        for solver in FC:
            u = fc_velocities("stewart-trinkle", solver, problem, directions=4)
            np.testing.assert_allclose(u, ref, atol=1e-6, err_msg=solver)
    if name != "box-stack":
        assert sliding > 1e-3  # the incline and the push slide: friction on the cone's boundary
