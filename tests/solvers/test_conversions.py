"""Conversions preserve solutions: solve both forms with independent backends and compare."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, QP, IncompatibleProblem, solve
from solvers import conversions as cv
from solvers.reference import contact_primal_qp, contact_scene


def random_spd(rng: np.random.Generator, n: int) -> np.ndarray:
    B = rng.standard_normal((n, n))
    return B @ B.T + n * 0.1 * np.eye(n)


def test_spd_inverse_block_diagonal_matches_dense() -> None:
    scene = contact_scene(7, seed=1)
    inv = cv.spd_inverse(scene.M)
    assert sp.issparse(inv) and inv.nnz == 7 * 36, "block-diagonal inverse stays block-diagonal"
    np.testing.assert_allclose(inv.toarray(), np.linalg.inv(scene.M.toarray()), atol=1e-12)


def test_bound_qp_and_box_lcp_have_the_same_solution() -> None:
    rng = np.random.default_rng(0)
    n = 8
    P = random_spd(rng, n)
    qp = QP(P, rng.standard_normal(n) * 3, sp.identity(n), -np.ones(n), np.ones(n))
    lcp, recover = cv.bound_qp_to_lcp(qp)
    ref = solve(qp, "osqp", tol=1e-10, polish=True)
    z = solve(lcp, "lemke").x  # Lemke on the box LCP (doubled rows): an exact pivoting method
    x, y = recover(z)
    np.testing.assert_allclose(x, ref.x, atol=1e-8)
    np.testing.assert_allclose(y, ref.y, atol=1e-8)


def test_qp_dual_lcp_matches_seed_formulas_and_primal() -> None:
    """ArtiSynth notes §0.3: M = A Q^-1 A^T, q = -b - A Q^-1 c, x = Q^-1 (A^T z - c), A x >= b."""
    rng = np.random.default_rng(1)
    n, m = 6, 9
    Q = random_spd(rng, n)
    c = rng.standard_normal(n)
    A = rng.standard_normal((m, n))
    b = rng.standard_normal(m)
    qp = QP(Q, c, A, b, np.full(m, np.inf))
    lcp, recover = cv.qp_to_dual_lcp(qp)
    Qinv = np.linalg.inv(Q)
    np.testing.assert_allclose(lcp.M.toarray(), A @ Qinv @ A.T, atol=1e-10)
    np.testing.assert_allclose(lcp.q, -b - A @ Qinv @ c, atol=1e-10)
    z = solve(lcp, "lemke").x
    x, y = recover(z)
    np.testing.assert_allclose(x, Qinv @ (A.T @ z - c), atol=1e-12)
    ref = solve(qp, "cvxpy:clarabel", tol=1e-10)
    np.testing.assert_allclose(x, ref.x, atol=1e-7)
    np.testing.assert_allclose(y, ref.y, atol=1e-7)


def test_mixed_lcp_schur_reduction_matches_seed_and_qp() -> None:
    """ArtiSynth notes §0.7: the mixed LCP M x - G^T lam - N^T z = f, G x = g, N x >= n, reduces to
    w = Nbar A^-1 Nbar^T z + Nbar A^-1 b - n  with  A = [[M, -G^T], [G, 0]]."""
    rng = np.random.default_rng(2)
    nx, ng, nn = 6, 2, 5
    M = random_spd(rng, nx)
    G = rng.standard_normal((ng, nx))
    N = rng.standard_normal((nn, nx))
    f, g, nvec = rng.standard_normal(nx), rng.standard_normal(ng), rng.standard_normal(nn)
    K = np.block([[M, -G.T, -N.T], [G, np.zeros((ng, ng + nn))], [N, np.zeros((nn, ng + nn))]])
    q = np.concatenate([-f, -g, -nvec])
    nf = nx + ng
    lo = np.concatenate([np.full(nf, -np.inf), np.zeros(nn)])
    mixed = LCP(K, q, lo, np.full(nf + nn, np.inf))
    red = cv.mixed_lcp_to_lcp(mixed)
    A = K[:nf, :nf]
    Nbar = np.hstack([N, np.zeros((nn, ng))])
    bvec = np.concatenate([f, g])
    np.testing.assert_allclose(red.lcp.M.toarray(), Nbar @ np.linalg.solve(A, Nbar.T), atol=1e-10)
    np.testing.assert_allclose(red.lcp.q, Nbar @ np.linalg.solve(A, bvec) - nvec, atol=1e-10)
    sol = red.recover(solve(red.lcp, "lemke").x)
    x = sol[:nx]
    # The same problem as a QP: min 1/2 x'Mx - f'x  s.t.  G x = g,  N x >= n.
    qp = QP(
        M,
        -f,
        np.vstack([G, N]),
        np.concatenate([g, nvec]),
        np.concatenate([g, np.full(nn, np.inf)]),
    )
    ref = solve(qp, "cvxpy:clarabel", tol=1e-10)
    np.testing.assert_allclose(x, ref.x, atol=1e-7)
    # Multipliers: lam and z are minus the OSQP multipliers of the G and N rows.
    np.testing.assert_allclose(-sol[nx:], ref.y, atol=1e-7)


def test_lcp_to_qp_preserves_solution_and_refuses_nonsymmetric() -> None:
    rng = np.random.default_rng(3)
    n = 10
    B = rng.standard_normal((n, n - 3))
    M = B @ B.T + 0.01 * np.eye(n)
    lcp = LCP(M, rng.standard_normal(n))
    a = solve(lcp, "lemke")
    b = solve(lcp, "cvxpy:clarabel", tol=1e-10)
    assert b.conversions == [cv.LCP_TO_QP]
    np.testing.assert_allclose(b.x, a.x, atol=1e-6)
    with pytest.raises(IncompatibleProblem, match="non-symmetric.*lemke"):
        solve(LCP(M + np.triu(np.ones((n, n)), 1), lcp.q), "osqp")


def test_contact_qp_dual_recovers_primal_velocity_and_multipliers() -> None:
    scene = contact_scene(6, seed=4)
    primal = contact_primal_qp(scene)
    rows = scene.row_index()[:, 0]
    dual, recover = cv.contact_qp_dual(scene.M, scene.f, scene.J[rows], primal.l, primal.u)
    assert dual.bound_rows() is not None, "the dual is bound-constrained"
    lam = solve(dual, "osqp", tol=1e-11, polish=True).x
    v, y = recover(lam)
    ref = solve(primal, "cvxpy:clarabel", tol=1e-10)
    np.testing.assert_allclose(v, ref.x, atol=1e-7)
    np.testing.assert_allclose(y, ref.y, atol=1e-7)
    # Sueda's notes, eq. (1.84): M v = f + J^T lam.
    np.testing.assert_allclose(scene.M @ v, scene.f + scene.J[rows].T @ lam, atol=1e-9)


def test_box_lcp_to_standard_doubling_preserves_solution() -> None:
    rng = np.random.default_rng(5)
    n = 12
    M = random_spd(rng, n)
    lo = np.where(rng.random(n) < 0.3, -np.inf, -rng.uniform(0, 1, n))
    hi = np.where(rng.random(n) < 0.3, np.inf, rng.uniform(0, 1, n))
    lo[np.isinf(lo) & np.isinf(hi)] = 0.0
    lcp = LCP(M, rng.standard_normal(n) * 3, lo, hi)
    std, back = cv.box_lcp_to_standard(lcp)
    assert std.is_standard
    z = back(solve(std, "lemke").x)
    ref = solve(lcp, "pgs", tol=1e-12)
    np.testing.assert_allclose(z, ref.x, atol=1e-9)


def test_layer_records_conversions_in_order() -> None:
    qp = QP(np.eye(2), [1.0, -1.0], np.array([[1.0, 1.0], [1.0, 0.0]]), [1.0, 0.0], [1.0, 0.5])
    res = solve(qp, "lemke")
    assert res.conversions == [cv.QP_TO_DUAL_LCP, cv.MIXED_TO_LCP, cv.BOX_TO_STANDARD]
    ref = solve(qp, "qpsolvers:quadprog")
    np.testing.assert_allclose(res.x, ref.x, atol=1e-10)
    np.testing.assert_allclose(res.y, ref.y, atol=1e-10)
