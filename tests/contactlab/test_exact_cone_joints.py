"""The exact-cone models on a jointed chain in maximal coordinates by their default backend
(``apgd``), whose joint rows are eliminated by their Schur complement before the
iterations (:class:`solvers.backends.fc_base.FreeRows`).

Scene ``chain-fall`` (five links on a planar joint and four hinges, h = 10 ms), maximal
coordinates, 40 steps: the chain falls, lands and lies on up to 20 contacts (four corners
a link).  Facts:

* every step of ``coulomb`` and of ``anitescu-hart`` with ``cone="soc"`` is solved to the
  default tolerance (status ``optimal``, natural-map residual relative to ``||q||`` within
  it), and the joints' velocity rows hold: ``|G v - g| <= 1e-9`` m/s on every step;
* the same step problems solved to a natural-map residual of 1e-10 by ``apgd`` and by the
  interior point ``ipm`` (an independent algorithm; for Anitescu--Hart also Clarabel, on
  the convex cone problem whose velocities are unique) have the same contact velocities to
  1e-6 m/s.  Coulomb's law is a fixed point, not a convex program: its steps are compared
  where both methods reach 1e-10 within 50,000 iterations (six of the seven sampled steps,
  measured; the seventh, at rest on 20 redundant contacts, stops apgd at 1.8e-8).
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import Any

import numpy as np
import pytest

from contactlab.models import make_model
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

EXACT = [("coulomb", {}), ("anitescu-hart", {"cone": "soc"})]
STEPS = 40


def chain_run(model: str, options: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    """The maximal chain's default run: per step the problem, the solution and the record."""
    scene = get_scenario("chain-fall").build()
    sim = Simulator(scene, "maximal", model, model_options=options)
    assert sim.model.solver == "apgd"
    seen: list[tuple[Any, Any]] = []
    solve = sim.model.solve

    def spy(problem: Any, cache: Any) -> Any:
        solution = solve(problem, cache)
        seen.append((problem, solution))
        return solution

    sim.model.solve = spy  # type: ignore[method-assign]
    state = sim.initial_state()
    out = []
    for i in range(STEPS):
        state, record = sim.step(state, i)
        out.append((*seen[-1], record))
    return out


@pytest.fixture(scope="module", params=EXACT, ids=["coulomb", "anitescu-hart-soc"])
def run(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any], list[Any]]:
    model, options = request.param
    return model, options, chain_run(model, options)


def test_every_step_is_solved_and_the_joints_hold(
    run: tuple[str, dict[str, Any], list[Any]],
) -> None:
    model, options, steps = run
    tol = make_model(model, "apgd", **options).tol
    contacts = [record.metrics["n_contacts"] for _, _, record in steps]
    assert max(contacts) >= 20  # the chain lies on its links' corners
    for i, (problem, solution, record) in enumerate(steps):
        assert record.metrics["status"] == "optimal", (i, record.metrics["status"])
        if problem.n_contacts:
            assert record.metrics["solver_residual"] <= tol, i
        assert np.max(np.abs(problem.G @ solution.v - problem.g)) <= 1e-9, i


def test_steps_agree_with_the_interior_point(run: tuple[str, dict[str, Any], list[Any]]) -> None:
    model, options, steps = run
    references = ["ipm"]
    if model != "coulomb" and all(find_spec(m) for m in ("cvxpy", "clarabel")):
        references.append("cvxpy:clarabel")
    sampled = compared = 0
    for i, (problem, _, _) in enumerate(steps):
        if i % 4 != 3 or not problem.n_contacts:
            continue
        sampled += 1
        answers = {}
        for solver in ["apgd", *references]:
            m = make_model(model, solver, solver_tol=1e-10, max_iter=50000, **options)
            sol = m.solve(problem, {})
            if sol.status == "optimal":
                answers[solver] = np.concatenate([problem.N @ sol.v, problem.T @ sol.v])
        if model != "coulomb":
            assert set(answers) == {"apgd", *references}, (i, sorted(answers))
        if "apgd" in answers and "ipm" in answers:
            compared += 1
            for name in references:
                np.testing.assert_allclose(
                    answers["apgd"], answers[name], rtol=0, atol=1e-6, err_msg=f"{i} {name}"
                )
    assert sampled == 7
    assert compared >= (5 if model == "coulomb" else 7)
