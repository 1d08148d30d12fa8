"""Test helper: step a maximal formulation with the solver layer's direct KKT backend.

Equality-only problems (joints, no contacts) are the KKT system of Sueda's notes,
eq. 1.73; ``solvers.solve(QP(M, -f, G, g, g), "kkt")`` solves it with the
OSQP multiplier sign (``M v - f + G^T y = 0``), so the impulses of
:class:`contactlab.problem.StepProblem` (``M v = f + G^T lambda``) are
``lambda = -y``.
"""

from __future__ import annotations

import numpy as np

from contactlab.formulation import Formulation
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import State
from solvers import QP, solve


def kkt_step(form: Formulation, state: State, h: float) -> tuple[State, StepProblem, StepSolution]:
    problem = form.assemble(state, h)
    if problem.G.shape[0]:
        res = solve(QP(problem.M, -problem.f, problem.G, problem.g, problem.g), "kkt")
    else:
        res = solve(QP(problem.M, -problem.f), "kkt")
    assert res.status == "optimal", res.status
    lam = -np.asarray(res.y) if problem.G.shape[0] else np.zeros(0)
    solution = StepSolution(np.asarray(res.x), lam, np.zeros(0), np.zeros(0))
    return form.advance(state, solution, h), problem, solution


def run(
    form: Formulation, h: float, steps: int, every: int = 1
) -> tuple[State, list[dict[str, float]]]:
    """``steps`` steps from the initial state; metrics every ``every`` steps (and at t = 0)."""
    state = form.initial_state()
    out = [{"t": 0.0, **form.metrics(state)}]
    for k in range(1, steps + 1):
        state, _, _ = kkt_step(form, state, h)
        if k % every == 0:
            out.append({"t": state.t, **form.metrics(state)})
    return state, out
