"""The frictionless contact QP: primal and dual forms, every fitting backend, the KKT conditions."""

from __future__ import annotations

import numpy as np
import pytest
from model_problems import G_ACC, box_on_plane, random_contact_problem

import solvers
from contactlab.models import make_model
from contactlab.models.base import model_class
from contactlab.problem import StepProblem, StepSolution

PROBLEMS = [
    random_contact_problem(10, bodies=3, contacts=6),
    random_contact_problem(11, bodies=4, contacts=6, joints=3, limits=2),
]


def kkt_violation(p: StepProblem, s: StepSolution) -> float:
    """Largest violation of stationarity, feasibility, sign and complementarity."""
    M = p.M.toarray()
    stat = M @ s.v - p.f - p.G.T @ s.lambda_G - p.N.T @ s.lambda_N - p.L.T @ s.lambda_L
    gap_n, gap_l = p.N @ s.v - p.c, p.L @ s.v - p.l
    parts = [
        np.abs(stat),
        np.abs(p.G @ s.v - p.g),
        np.maximum(-gap_n, 0),
        np.maximum(-gap_l, 0),
        np.maximum(-s.lambda_N, 0),
        np.maximum(-s.lambda_L, 0),
        np.abs(s.lambda_N * gap_n),
        np.abs(s.lambda_L * gap_l),
    ]
    return float(max(np.max(x, initial=0.0) for x in parts))


def objective(p: StepProblem, v: np.ndarray) -> float:
    return float(0.5 * v @ (p.M @ v) - p.f @ v)


def reference(p: StepProblem) -> StepSolution:
    return make_model("frictionless", "cvxpy:clarabel", form="primal", solver_tol=1e-10).solve(
        p, {}
    )


@pytest.mark.parametrize("form", ["primal", "dual"])
@pytest.mark.parametrize("index", range(len(PROBLEMS)))
def test_every_backend_gives_the_same_velocities(form: str, index: int) -> None:
    p = PROBLEMS[index]
    ref = reference(p)
    assert kkt_violation(p, ref) < 1e-6
    names = [n for n in model_class("frictionless").compatible_solvers() if n != "kkt"]
    if form == "dual":
        names = [n for n in names if not solvers.get_backend(n).requires_definite]
    for name in names:
        sol = make_model("frictionless", name, form=form).solve(p, {})
        # accuracy: the backend's declared tolerance, amplified by the problem's conditioning
        tol = 200 * solvers.get_backend(name).tolerance.accuracy
        assert sol.status in ("optimal", "optimal_inaccurate"), (name, sol.status)
        assert np.max(np.abs(sol.v - ref.v)) < tol, (name, np.max(np.abs(sol.v - ref.v)))
        assert abs(objective(p, sol.v) - objective(p, ref.v)) < tol * 10, name
        assert kkt_violation(p, sol) < tol, (name, kkt_violation(p, sol))


def test_primal_and_dual_agree_to_solver_precision() -> None:
    for p in PROBLEMS:
        a = make_model("frictionless", "lemke", form="primal").solve(p, {})
        b = make_model("frictionless", "lemke", form="dual").solve(p, {})
        np.testing.assert_allclose(a.v, b.v, atol=1e-9)
        np.testing.assert_allclose(a.lambda_N, b.lambda_N, atol=1e-8)


def test_resting_box_carries_its_weight() -> None:
    p = box_on_plane(m=2.0, mu=0.0)
    sol = make_model("frictionless", "osqp", solver_tol=1e-10).solve(p, {})
    np.testing.assert_allclose(sol.v, 0.0, atol=1e-8)
    # the contact impulses hold the weight over one step: sum lambda_N = m g h
    assert sol.lambda_N.sum() == pytest.approx(2.0 * G_ACC * 0.01, rel=1e-6)
    assert np.all(sol.lambda_N > -1e-9)


def test_warm_start_from_the_cache_reproduces_the_solution() -> None:
    p = PROBLEMS[1]
    model = make_model("frictionless", "osqp")
    cache: dict = {}
    first = model.solve(p, cache)
    second = model.solve(p, cache)
    np.testing.assert_allclose(second.v, first.v, atol=1e-6)
    assert second.iterations <= first.iterations
