"""The solver layer's one fit table, its one verdict and its one tolerance default.

Facts:

- for a representative problem of every built-in kind and every installed
  backend, :func:`solvers.fit` agrees with :func:`solvers.solve`: a backend
  that fits solves the problem (a claimed, plausible solution) through the
  form conversions the fit names; a backend that does not fit is refused by
  ``solve`` with ``IncompatibleProblem`` and the fit's reason (``solve``
  follows the table, it decides nothing of its own);
- a new problem kind plugs into the same function by declaring capability
  flags, without touching the table of built-in kinds;
- the verdict downgrades a claimed optimum past ``1e3 max(tol, accuracy)`` and
  judges it implausible past that limit times ``max(1, |q|_inf)``;
- ``solve`` without ``tol`` asks the backend for its ``tolerance.request``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pytest

import solvers
from solvers import (
    LCP,
    QP,
    FrictionalContact,
    FrictionBlocks,
    IncompatibleProblem,
    ProblemKind,
    Route,
    SOCBlocks,
    fit,
    kind_of,
)
from solvers import conversions as cv
from solvers import fitting as fit_module
from solvers.backends.base import Backend
from solvers.frictional_wide import wide_problem
from solvers.verdict import verdict

INF = np.inf
PSD = np.array([[1.0, -1.0, 0.0], [-1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # null space (1, 1, 0)
SPD = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])

#: one contact's Delassus block (normal row first)
BLOCK = np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.0], [0.0, 0.0, 2.0]])

#: a small, well-posed problem of each built-in kind (bounded despite singular costs)
PROBLEMS: dict[str, QP | LCP | FrictionalContact] = {
    "eq_qp": QP(SPD, [1.0, -1.0, 0.5], np.array([[1.0, 1.0, 1.0]]), [1.0], [1.0]),
    "qp": QP(
        SPD,
        [1.0, -1.0, 0.5],
        np.array([[1.0, 1.0, 0.0], [0.0, 1.0, -1.0]]),
        [0.5, -INF],
        [INF, 0.2],
    ),
    "bound_qp": QP(PSD, [1.0, 1.0, -1.0], np.eye(3), np.zeros(3), np.full(3, INF)),
    "box_qp": QP(PSD, [1.0, 0.5, -3.0], np.eye(3), -np.ones(3), np.ones(3)),
    "rows_qp": QP(
        np.diag([1.0, 1.0, 0.0]),
        [0.3, -0.2, 1.0],
        np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 1.0]]),
        [0.0, -INF],
        [INF, 2.0],
    ),
    "soc_qp": QP(
        np.diag([2.0, 1.0, 1.0]),
        [-1.0, 3.0, 0.0],
        soc=SOCBlocks(np.array([0]), np.array([[1, 2]]), np.array([0.5])),
    ),
    "sym_lcp": LCP(SPD, [-1.0, 2.0, -0.5]),
    "lcp": LCP(np.array([[2.0, 1.0], [0.0, 2.0]]), [-1.0, -1.0]),
    "block_lcp": LCP(
        np.array([[2.0, 0.5, 0.0], [0.5, 2.0, 0.0], [0.0, 0.0, 2.0]]),
        [-1.0, 0.8, -0.1],
        blocks=FrictionBlocks(np.array([0]), np.array([[1, 2]]), np.array([0.3])),
    ),
    "pivot_lcp": LCP(np.array([[1.0, 1.0], [-1.0, 0.0]]), [-1.0, 1.0]),
    "fc_ccp_soc": FrictionalContact(BLOCK, [-1.0, 0.8, -0.1], [0.3], law="ccp", cone="soc"),
    "fc_ccp_poly": FrictionalContact(BLOCK, [-1.0, 0.8, -0.1], [0.3], law="ccp", cone="pyramid"),
    "fc_coulomb": FrictionalContact(BLOCK, [-1.0, 0.8, -0.1], [0.3], law="coulomb", cone="box"),
    "fc_coulomb_pyramid": FrictionalContact(
        BLOCK, [-1.0, 0.8, -0.1], [0.3], law="coulomb", cone="pyramid", directions=6
    ),
    # a contact with torsional and rolling rows (MuJoCo's condim 6, elliptic cone)
    "fc_wide_ccp": wide_problem(
        np.eye(6) + 0.1,
        [-1.0, 0.8, -0.1, 0.05, 0.02, 0.0],
        [6],
        [0.3, 0.3, 0.01, 0.02, 0.02],
        "ccp",
        "elliptic",
    ),
    "fc_wide_coulomb": wide_problem(
        np.eye(6) + 0.1,
        [-1.0, 0.8, -0.1, 0.05, 0.02, 0.0],
        [6],
        [0.3, 0.3, 0.01, 0.02, 0.02],
        "coulomb",
        "separate",
    ),
}

#: conversions that depend on the instance rather than the kind (LCP normalisations)
NORMALISATIONS = {cv.MIXED_TO_LCP, cv.BOX_TO_STANDARD}


def test_every_built_in_kind_has_a_representative() -> None:
    assert set(PROBLEMS) == set(solvers.kinds())
    for kind, problem in PROBLEMS.items():
        assert kind_of(problem) == kind


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_fit_agrees_with_solve_for_every_installed_backend(kind: str) -> None:
    problem = PROBLEMS[kind]
    for name in solvers.available_backends():
        answer = fit(name, problem)
        assert answer.kinds == (kind,)
        try:
            res = solvers.solve(problem, name)
        except IncompatibleProblem as err:
            assert not answer.ok, f"{name} fits {kind} but solve refused: {err}"
            assert answer.reason in str(err)  # solve refuses with the table's reason
            continue
        assert answer.ok, f"{name} does not fit {kind} but solve took it"
        assert answer.reason == ""
        assert res.status in ("optimal", "optimal_inaccurate"), (name, kind, res)
        assert res.plausible, (name, kind, res)
        assert list(answer.conversions) == [c for c in res.conversions if c not in NORMALISATIONS]
        assert set(res.conversions) - set(answer.conversions) <= NORMALISATIONS


def test_a_refusal_names_the_kind_and_the_capabilities_it_needs() -> None:
    answer = fit("kkt", "qp")
    assert not answer and answer.conversions == ()
    assert "'kkt' cannot take a QP with SPD cost and general inequality rows" in answer.reason
    assert "not equality_only" in answer.reason and "accepts_lcp" in answer.reason
    assert fit("lemke", ("qp", "pivot_lcp")).conversions == (cv.QP_TO_DUAL_LCP,)
    if "pgs" in solvers.available_backends():
        assert not fit("pgs", ("qp", "pivot_lcp"))  # every kind of a route must fit
        assert "zero diagonal" in fit("pgs", ("qp", "pivot_lcp")).reason


def test_an_unavailable_backend_does_not_fit_and_says_why() -> None:
    class Missing(Backend):
        name = "missing-for-fit"
        required_modules = ("no_such_module_for_fit",)
        accepts_qp = True

    answer = fit(Missing, "eq_qp")
    assert not answer
    assert "'no_such_module_for_fit' is not installed" in answer.reason


def test_a_new_problem_kind_plugs_in_through_capability_flags(monkeypatch: Any) -> None:
    kind = ProblemKind(
        "fc_local_test",
        "frictional-contact problem in local form",
        (Route({"accepts_fc_local_test": True}),),
    )
    monkeypatch.setitem(fit_module._KINDS, kind.name, kind)

    class LocalSolver(Backend):
        name = "fc-local-test"
        accepts_fc_local_test: ClassVar[bool] = True

    class Problem:
        kind = "fc_local_test"

    assert fit(LocalSolver, "fc_local_test").ok
    assert fit(LocalSolver, Problem()).ok
    refused = fit("lemke", kind)
    assert not refused and "needs [accepts_fc_local_test]" in refused.reason
    assert "fc_local_test" not in solvers.fitting_backends("fc_local_test")


def test_the_verdict_downgrades_and_judges_plausibility_once() -> None:
    residuals = {"primal": 2e-3, "dual": 0.0, "complementarity": 0.0}
    q_unit, q_large = np.array([1.0, -0.5]), np.array([10.0, 0.0])
    # limit 1e3 * max(1e-9, 1e-6) = 1e-3 < 2e-3: downgraded; scale 1: implausible
    v = verdict("optimal", residuals, 1e-9, 1e-6, q_unit)
    assert (v.status, v.plausible) == ("optimal_inaccurate", False)
    assert "exceeds 1.0e-03" in v.note
    # scale 10: 2e-3 <= 1e-2, a plausible (if inaccurate) solution
    v = verdict("optimal", residuals, 1e-9, 1e-6, q_large)
    assert (v.status, v.plausible) == ("optimal_inaccurate", True)
    # within the limit: unchanged; a status that claims nothing is not contradicted
    v = verdict("optimal", residuals, 1e-5, 1e-6, q_unit)
    assert (v.status, v.plausible, v.note) == ("optimal", True, "")
    assert verdict("max_iterations", residuals, 1e-9, 1e-6, q_unit).plausible
    nan = dict.fromkeys(residuals, float("nan"))
    assert not verdict("optimal", nan, 1e-9, 1e-6, q_unit).plausible


def test_solve_without_tol_asks_for_the_backends_default() -> None:
    assert Backend.tolerance.request == 1e-9
    if "pgs" not in solvers.available_backends():
        pytest.skip("pgs needs numba (pip install numba)")
    assert solvers.get_backend("pgs").tolerance.request == 1e-6
    res = solvers.solve(PROBLEMS["sym_lcp"], "pgs")
    assert "(tol 1e-06)" in res.message
    assert "(tol 1e-09)" in solvers.solve(PROBLEMS["sym_lcp"], "pgs", tol=1e-9).message


def test_a_problem_without_unknowns_is_solved_by_the_layer() -> None:
    res = solvers.solve(QP(np.zeros((0, 0)), np.zeros(0)), "kkt")
    assert res.status == "optimal" and res.x.shape == (0,) and res.plausible
    res = solvers.solve(LCP(np.zeros((0, 0)), np.zeros(0)), "lemke")
    assert res.status == "optimal" and res.w is not None and res.w.shape == (0,)
