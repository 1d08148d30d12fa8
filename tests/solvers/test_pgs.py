"""Projected Gauss-Seidel: convergence, honest stopping, friction blocks, warm start."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, QP, FrictionBlocks, SOCBlocks, solve
from solvers.backends.pgs_kernel import pgs_sweeps
from solvers.reference import contact_friction_lcp, contact_scene


def spd_lcp(n: int, seed: int, box: bool = False) -> LCP:
    rng = np.random.default_rng(seed)
    B = sp.random(n, n, density=4.0 / n, random_state=seed) + sp.identity(n)
    M = (B @ B.T).tocsr()
    q = rng.standard_normal(n)
    if box:
        return LCP(M, q, -rng.uniform(0.1, 1.0, n), rng.uniform(0.1, 1.0, n))
    return LCP(M, q)


@pytest.mark.parametrize("box", [False, True])
def test_pgs_converges_on_spd_and_matches_lemke(box: bool) -> None:
    lcp = spd_lcp(60, 1, box)
    ref = solve(lcp, "lemke")
    res = solve(lcp, "pgs", tol=1e-10)
    assert res.status == "optimal"
    assert res.max_residual <= 1e-9
    # SPD M: the LCP is strongly monotone, |z - z*| <= residual / lambda_min(M) (up to a factor).
    lam_min = np.linalg.eigvalsh(lcp.M.toarray()).min()
    np.testing.assert_allclose(res.x, ref.x, atol=10 * 1e-10 / lam_min)


def test_pgs_sor_factor_reaches_same_solution() -> None:
    lcp = spd_lcp(80, 2)
    a = solve(lcp, "pgs", tol=1e-10, omega=1.0)
    b = solve(lcp, "pgs", tol=1e-10, omega=1.4)
    assert a.success and b.success
    np.testing.assert_allclose(a.x, b.x, atol=1e-8)


def test_pgs_reports_max_iterations_when_capped() -> None:
    lcp = spd_lcp(100, 3)
    res = solve(lcp, "pgs", tol=1e-12, max_iter=3)
    assert res.status == "max_iterations" and not res.success
    assert res.iterations == 3
    assert res.max_residual > 1e-12


def test_pgs_warm_start_from_solution_needs_no_sweep() -> None:
    lcp = spd_lcp(50, 4)
    cold = solve(lcp, "pgs", tol=1e-9)
    warm = solve(lcp, "pgs", tol=1e-9, warm_start=cold)
    assert cold.iterations > 0 and warm.iterations == 0 and warm.success


@pytest.mark.parametrize("cone", ["box", "disc"])
def test_pgs_friction_blocks_respect_cone(cone: str) -> None:
    scene = contact_scene(8, 2.0, rows_per_contact=3, seed=5)
    lcp = contact_friction_lcp(scene, cone)
    res = solve(lcp, "pgs", tol=1e-8, max_iter=20000)
    assert res.status == "optimal", res.message
    blk = lcp.blocks
    zn, zt = res.x[blk.normal], res.x[blk.tangent]
    assert np.all(zn >= 0)
    slack = 1e-8
    if cone == "box":
        assert np.all(np.abs(zt) <= blk.mu[:, None] * zn[:, None] + slack)
    else:
        assert np.all(np.linalg.norm(zt, axis=1) <= blk.mu * zn + slack)
    assert res.max_residual <= 1e-7
    # Some contacts slide (friction at the bound), so the cone constraint is really exercised.
    on_rim = (
        np.abs(zt).max(axis=1) >= blk.mu * zn - 1e-6
        if cone == "box"
        else (np.linalg.norm(zt, axis=1) >= blk.mu * zn - 1e-6)
    )
    assert np.any(on_rim & (zn > 1e-6))


def _decoupled_contacts(
    rng: np.random.Generator, nc: int, q_scale: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``nc`` contacts (rows n, t1, t2 each) whose SPD matrix has no normal-tangent
    coupling (``M_nt = 0``), approaching (``q_n <= -0.5``), with ``mu`` in [0.2, 0.6]:
    ``(M, q, normal, tangent, mu)``."""
    normal = np.arange(nc) * 3
    tangent = np.stack([normal + 1, normal + 2], axis=1)
    B = rng.standard_normal((3 * nc, 3 * nc)) * 0.3
    M = B @ B.T + np.eye(3 * nc)
    M[np.ix_(normal, tangent.ravel())] = 0.0
    M[np.ix_(tangent.ravel(), normal)] = 0.0
    q = rng.standard_normal(3 * nc) * q_scale
    q[normal] = -np.abs(q[normal]) - 0.5
    mu = rng.uniform(0.2, 0.6, nc)
    return M, q, normal, tangent, mu


def test_pgs_friction_agrees_with_qp_when_normals_decouple() -> None:
    """With M_nt = 0 the normal impulses do not depend on friction, so the friction bounds
    are fixed numbers and the blocked LCP equals a box LCP a QP backend can solve."""
    nc = 6
    M, q, normal, tangent, mu = _decoupled_contacts(np.random.default_rng(7), nc, 1.0)
    blocked = solve(LCP(M, q, blocks=FrictionBlocks(normal, tangent, mu, "box")), "pgs", tol=1e-11)
    zn = blocked.x[normal]
    lo = np.zeros(3 * nc)
    hi = np.full(3 * nc, np.inf)
    lo[tangent] = -(mu * zn)[:, None]
    hi[tangent] = (mu * zn)[:, None]
    fixed = solve(LCP(M, q, lo, hi), "osqp", tol=1e-10, polish=True)
    assert blocked.success and fixed.success
    assert np.any(np.abs(blocked.x[tangent]) >= (mu * zn)[:, None] - 1e-9), (
        "some friction saturates"
    )
    np.testing.assert_allclose(blocked.x, fixed.x, atol=1e-7)


def test_pgs_inner_loop_is_compiled() -> None:
    """The row loop runs in numba (a compiled dispatcher with a cached signature)."""
    assert hasattr(pgs_sweeps, "signatures") and pgs_sweeps.signatures


def test_pgs_disc_friction_agrees_with_cone_qp_when_normals_decouple() -> None:
    """With M_nt = 0 the normal impulses are fixed by their own rows; the disc-friction
    condition z_t = Pi_disc(z_t - alpha w_t) is then the optimality condition of
    min 1/2 z'Mz + q'z over ||z_t|| <= mu z_n with z_n fixed: a cone QP (cvxpy + Clarabel)."""
    nc = 5
    M, q, normal, tangent, mu = _decoupled_contacts(np.random.default_rng(8), nc, 2.0)
    blocks = FrictionBlocks(normal, tangent, mu, "disc")
    res = solve(LCP(M, q, blocks=blocks), "pgs", tol=1e-11, max_iter=50000)
    assert res.success, res.message
    zn = res.x[normal]
    # Cone QP: the same objective, normals pinned to the PGS values by equality rows.
    A = sp.csr_matrix((np.ones(nc), (np.arange(nc), normal)), shape=(nc, 3 * nc))
    cone = QP(M, q, A, zn, zn, soc=SOCBlocks(normal, tangent, mu))
    ref = solve(cone, "cvxpy:clarabel", tol=1e-9)
    assert ref.success
    rim = np.linalg.norm(res.x[tangent], axis=1) >= mu * zn - 1e-8
    assert np.any(rim) and not np.all(rim), "some contacts slide, some stick"
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)


@pytest.mark.parametrize("cone", ["box", "disc"])
def test_pgs_separating_contacts_carry_no_friction(cone: str) -> None:
    """Contacts whose normal rows separate (``q_n > 0`` with no coupling to the others)
    end with zero normal impulse, so their friction bound ``mu z_n`` is zero and PGS
    zeroes their tangent impulses (without forming ``w``) even from a warm start that
    puts friction there; the other contacts still reach the same solution as from cold."""
    nc = 6
    M, q, normal, tangent, mu = _decoupled_contacts(np.random.default_rng(11), nc, 1.0)
    sep = np.array([1, 4])
    keep = np.setdiff1d(np.arange(nc), sep)
    rows_sep = np.concatenate([normal[sep], tangent[sep].ravel()])
    rows_keep = np.concatenate([normal[keep], tangent[keep].ravel()])
    M[np.ix_(rows_sep, rows_keep)] = 0.0  # separating contacts feel no other impulse
    M[np.ix_(rows_keep, rows_sep)] = 0.0
    q[normal[sep]] = 0.8
    lcp = LCP(M, q, blocks=FrictionBlocks(normal, tangent, mu, cone))
    cold = solve(lcp, "pgs", tol=1e-10)
    x0 = cold.x.copy()
    x0[tangent[sep]] = 0.3  # friction where none is allowed
    warm = solve(lcp, "pgs", tol=1e-10, warm_start=x0)
    assert cold.success and warm.success
    assert np.all(cold.x[normal[sep]] == 0.0)
    assert np.all(warm.x[tangent[sep]] == 0.0)
    assert warm.max_residual <= 1e-10
    np.testing.assert_allclose(warm.x, cold.x, atol=1e-9)
