"""Registry, availability reporting, entry points and the layer's errors."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import (
    LCP,
    QP,
    STATUSES,
    FrictionBlocks,
    IncompatibleProblem,
    ProblemError,
    SOCBlocks,
    SolverNotFound,
    available_backends,
    backend_registry,
    backend_table,
    get_backend,
    plugins,
    solve,
)
from solvers.backends.base import Backend, SolveOptions
from solvers.result import RawSolution


def test_table_lists_every_backend_with_reason_when_missing() -> None:
    rows = backend_table()
    names = [r["name"] for r in rows]
    for core in ("kkt", "osqp", "pgs", "lemke", "cvxpy:clarabel", "qpsolvers:quadprog"):
        assert core in names
    for row in rows:
        cls = backend_registry.registered()[row["name"]]
        found = all(importlib.util.find_spec(m) is not None for m in cls.required_modules)
        assert row["available"] == found
        assert (row["reason"] == "") == found
        if not found:
            assert "pip install" in row["reason"]
    assert set(available_backends()) == {r["name"] for r in rows if r["available"]}


def test_unknown_and_missing_backends_raise_solver_not_found() -> None:
    qp = QP(np.eye(1), [1.0])
    with pytest.raises(SolverNotFound, match=r"unknown backend 'nope'; installed backends: .*osqp"):
        solve(qp, "nope")

    class Missing(Backend):
        name = "missing-test"
        required_modules = ("surely_not_a_module_xyz",)
        extra = "qp"
        accepts_qp = True

    backend_registry.register_backend(Missing)
    try:
        with pytest.raises(SolverNotFound, match=r"pip install contactlab\[qp\].*installed"):
            solve(qp, "missing-test")
        row = next(r for r in backend_table() if r["name"] == "missing-test")
        assert row["available"] is False and "surely_not_a_module_xyz" in row["reason"]
    finally:
        backend_registry.BACKENDS.unregister("missing-test")


def test_third_party_backend_through_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """A package registering ``BACKENDS`` in the group becomes solvable by name."""

    class Doubler(Backend):
        """Solves min 1/2 x'Px + q'x without constraints by a dense solve."""

        name = "thirdparty-dense"
        accepts_qp = True
        tolerance = 1e-10

        def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
            x = np.linalg.solve(qp.P.toarray(), -qp.q)
            return RawSolution(x, np.zeros(0), "optimal", "dense solve")

    ep = SimpleNamespace(name="thirdparty", value="thirdparty:BACKENDS", load=lambda: [Doubler])

    def fake_entry_points(group: str) -> list[Any]:
        return [ep] if group == backend_registry.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(plugins, "entry_points", fake_entry_points)
    monkeypatch.setattr(backend_registry, "_instances", {})
    backend_registry.BACKENDS.reload()
    try:
        assert "thirdparty-dense" in available_backends()
        res = solve(QP(2 * np.eye(2), [2.0, -4.0]), "thirdparty-dense")
    finally:
        monkeypatch.undo()
        backend_registry.BACKENDS.reload()
    np.testing.assert_allclose(res.x, [-1.0, 2.0])
    assert res.residuals["dual"] == 0.0


def test_installed_builtin_entry_point_is_declared() -> None:
    from importlib.metadata import entry_points

    eps = [e for e in entry_points(group=backend_registry.ENTRY_POINT_GROUP) if e.name == "builtin"]
    assert eps and eps[0].value == "solvers.backends:BACKENDS"


def test_incompatible_pairings_name_what_helps() -> None:
    ineq = QP(np.eye(2), [1.0, 1.0], np.eye(2), [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(IncompatibleProblem, match="only equality-constrained.*osqp"):
        solve(ineq, "kkt")
    cone = QP(np.eye(3), np.ones(3), soc=SOCBlocks(np.array([0]), np.array([[1, 2]]), [0.5]))
    with pytest.raises(IncompatibleProblem, match="second-order cones.*cvxpy:clarabel"):
        solve(cone, "osqp")
    blocked = LCP(np.eye(3), np.ones(3), blocks=FrictionBlocks([0], [[1, 2]], [0.5]))
    with pytest.raises(IncompatibleProblem, match="friction blocks.*pgs"):
        solve(blocked, "osqp")
    with pytest.raises(IncompatibleProblem, match="friction blocks.*pgs"):
        solve(blocked, "lemke")


def test_kkt_reuses_factorisation_when_only_rhs_changes() -> None:
    rng = np.random.default_rng(0)
    n, m = 30, 8
    B = sp.random(n, n, density=0.1, random_state=1)
    P = (B @ B.T + sp.identity(n)).tocsc()
    A = sp.random(m, n, density=0.3, random_state=2) + sp.hstack(
        [sp.identity(m), sp.csr_matrix((m, n - m))]
    )
    kkt = get_backend("kkt")
    before = kkt.factorizations
    for _ in range(4):
        b = rng.standard_normal(m)
        res = solve(QP(P, rng.standard_normal(n), A, b, b), "kkt")
        assert res.success and res.max_residual <= 1e-9
    assert kkt.factorizations - before == 1, "P and A unchanged: factorised once"
    solve(QP(2 * P, np.zeros(n), A, np.zeros(m), np.zeros(m)), "kkt")
    assert kkt.factorizations - before == 2, "a new P triggers a new factorisation"


def test_kkt_matches_analytic_equality_qp_and_osqp() -> None:
    rng = np.random.default_rng(3)
    n, m = 12, 4
    B = rng.standard_normal((n, n))
    P = B @ B.T + np.eye(n)
    A = rng.standard_normal((m, n))
    q, b = rng.standard_normal(n), rng.standard_normal(m)
    K = np.block([[P, A.T], [A, np.zeros((m, m))]])
    sol = np.linalg.solve(K, np.concatenate([-q, b]))
    res = solve(QP(P, q, A, b, b), "kkt")
    np.testing.assert_allclose(res.x, sol[:n], atol=1e-10)
    np.testing.assert_allclose(res.y, sol[n:], atol=1e-10)
    ref = solve(QP(P, q, A, b, b), "osqp", tol=1e-10, polish=True)
    np.testing.assert_allclose(ref.y, res.y, atol=1e-7)


def test_osqp_status_map_settings_pass_through_and_warm_start() -> None:
    rng = np.random.default_rng(4)
    n = 40
    B = rng.standard_normal((n, n))
    qp = QP(
        B @ B.T + np.eye(n), rng.standard_normal(n), np.eye(n), -np.ones(n) * 0.1, np.ones(n) * 0.1
    )
    capped = solve(qp, "osqp", max_iter=1)
    assert capped.status == "max_iterations" and not capped.success
    cold = solve(qp, "osqp", tol=1e-7)
    warm = solve(qp, "osqp", tol=1e-7, warm_start=cold)
    assert cold.success and warm.success
    assert warm.iterations < cold.iterations
    # A setting passed through: no scaling changes the iterate sequence, not the solution.
    unscaled = solve(qp, "osqp", tol=1e-7, scaling=0)
    np.testing.assert_allclose(unscaled.x, cold.x, atol=1e-5)


def test_statuses_are_from_the_shared_vocabulary() -> None:
    qp = QP(np.eye(1), [0.0], np.array([[1.0], [1.0]]), [1.0, -np.inf], [np.inf, 0.0])
    for name in available_backends():
        try:
            res = solve(qp, name)
        except IncompatibleProblem:
            continue
        assert res.status in STATUSES, (name, res.status)
        assert res.status != "optimal"


def test_warm_start_ignored_with_warning_where_unsupported() -> None:
    with pytest.warns(UserWarning, match="no warm start"):
        solve(LCP(np.eye(2), [-1.0, 1.0]), "lemke", warm_start=np.zeros(2))


def test_claimed_optimum_contradicted_by_residuals_is_downgraded() -> None:
    """The layer does not take a backend's word: residuals decide whether 'optimal' stands."""

    class Liar(Backend):
        name = "liar-test"
        accepts_qp = True

        def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
            return RawSolution(np.zeros(qp.n), np.zeros(qp.m), "optimal", "claims optimal")

    backend_registry.register_backend(Liar)
    try:
        res = solve(QP(np.eye(2), [1.0, -1.0]), "liar-test")
    finally:
        backend_registry.BACKENDS.unregister("liar-test")
        backend_registry._instances.pop("liar-test", None)
    assert res.status == "optimal_inaccurate" and not res.success
    assert res.residuals["dual"] == 1.0 and "layer's residual" in res.message


def test_iteration_cap_reaches_the_backend_or_warns() -> None:
    rng = np.random.default_rng(4)
    n = 40
    B = rng.standard_normal((n, n))
    qp = QP(
        B @ B.T + np.eye(n), rng.standard_normal(n), np.eye(n), -0.1 * np.ones(n), 0.1 * np.ones(n)
    )
    assert solve(qp, "cvxpy:clarabel", max_iter=2).status == "max_iterations"
    assert solve(qp, "pgs", max_iter=2).status == "max_iterations"
    assert not solve(qp, "qpsolvers:clarabel", max_iter=2).success
    assert solve(qp, "osqp", time_limit=1e-9).status == "time_limit"
    eq = QP(np.eye(2), np.ones(2), np.ones((1, 2)), [1.0], [1.0])
    with pytest.warns(UserWarning, match="no iteration cap"):
        solve(eq, "kkt", max_iter=5)
    with pytest.warns(UserWarning, match="no time limit"):
        solve(eq, "kkt", time_limit=1.0)


def test_warm_start_shapes_are_checked() -> None:
    qp = QP(np.eye(2), [1.0, 1.0], np.eye(2), [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(ProblemError, match=r"^warm_start: x has shape \(3,\), expected \(2,\)"):
        solve(qp, "osqp", warm_start=np.zeros(3))
    with pytest.raises(ProblemError, match=r"^warm_start: y has shape \(5,\)"):
        solve(qp, "osqp", warm_start=(np.zeros(2), np.zeros(5)))
