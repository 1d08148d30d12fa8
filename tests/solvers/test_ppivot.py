"""On-demand principal pivoting (seed 001 §0.7–0.8) against independent solutions.

``ppivot`` solves a QP's mixed LCP by principal pivoting with LCP columns formed
by KKT solves only when a row enters the active set.  It is checked against the
direct KKT solve (equality rows only), Lemke's method on the same QP's dual LCP
(the layer's ``qp -> lcp`` conversion) and an interior-point cone solver, on
contact-shaped problems with equality (joint) and inequality (contact) rows;
the reference library (analytic solutions) runs it through
``test_reference_problems``.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import QP, solve
from solvers.reference import contact_primal_qp, contact_scene

TOL = 1e-9


def _mixed(seed: int, n_bodies: int = 6) -> QP:
    """Contact QP plus two-sided rows and a few joint-like equality rows."""
    scene = contact_scene(n_bodies, contacts_per_body=2.0, rows_per_contact=3, seed=seed)
    qp = contact_primal_qp(scene)
    rng = np.random.default_rng(seed + 100)
    n = qp.n
    G = sp.csr_matrix(rng.standard_normal((3, n)) * (rng.random((3, n)) < 0.2))
    B = sp.csr_matrix(rng.standard_normal((2, n)) * (rng.random((2, n)) < 0.3))
    g = rng.standard_normal(3) * 0.1
    A = sp.vstack([qp.A, G, B], format="csc")
    l = np.concatenate([qp.l, g, [-0.05, -0.02]])
    u = np.concatenate([qp.u, g, [0.05, 0.02]])
    return QP(qp.P, qp.q, A, l, u)


@pytest.mark.parametrize("seed", range(4))
def test_ppivot_agrees_with_lemke_and_interior_point(seed: int) -> None:
    qp = _mixed(seed)
    res = solve(qp, "ppivot", tol=TOL)
    assert res.status == "optimal", res.message
    assert res.max_residual < 1e-8, res.residuals
    lemke = solve(qp, "lemke", tol=TOL)
    assert lemke.status == "optimal", lemke.message
    # the QP's x is unique (P is SPD): both pivoting methods reach it to round-off
    np.testing.assert_allclose(res.x, lemke.x, atol=1e-8)
    ip = solve(qp, "cvxpy:clarabel", tol=TOL)
    np.testing.assert_allclose(res.x, ip.x, atol=1e-6)


def test_ppivot_equals_the_direct_kkt_solve_on_equality_rows() -> None:
    qp = _mixed(7)
    eq = np.flatnonzero(qp.l == qp.u)
    only_eq = QP(qp.P, qp.q, qp.A[eq], qp.l[eq], qp.u[eq])
    a = solve(only_eq, "ppivot", tol=TOL)
    b = solve(only_eq, "kkt", tol=TOL)
    np.testing.assert_allclose(a.x, b.x, atol=1e-12)
    np.testing.assert_allclose(a.y, b.y, atol=1e-12)
    assert a.iterations == 0


def test_columns_are_formed_only_for_rows_that_enter() -> None:
    """A scene where most contacts separate: far fewer KKT solves than rows (§0.8)."""
    scene = contact_scene(40, contacts_per_body=3.0, rows_per_contact=3, seed=3)
    qp = contact_primal_qp(scene)
    res = solve(qp, "ppivot", tol=TOL)
    assert res.status == "optimal", res.message
    formed = int(res.message.split("; ")[-1].split(" of ")[0])
    active = int(np.sum(np.abs(res.y) > 0))
    assert formed < qp.m / 2
    assert active <= formed
    ref = solve(qp, "lemke", tol=TOL)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-8)


def test_ppivot_reports_infeasible_rows() -> None:
    P = sp.identity(2, format="csc")
    A = sp.csc_matrix(np.array([[1.0, 0.0], [-1.0, 0.0]]))
    qp = QP(P, np.zeros(2), A, np.array([1.0, 1.0]), np.array([np.inf, np.inf]))
    res = solve(qp, "ppivot")
    assert res.status == "infeasible"
    assert "infeasible" in res.message
