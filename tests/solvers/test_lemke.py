"""Lemke's method against brute-force enumeration of complementary bases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from solvers import LCP, solve


def enumerate_lcp(M: np.ndarray, q: np.ndarray) -> list[np.ndarray]:
    """All solutions of 0 <= z ⟂ Mz + q >= 0 by trying every basis (2^n linear solves)."""
    n = q.size
    sols = []
    for k in range(n + 1):
        for alpha in itertools.combinations(range(n), k):
            a = list(alpha)
            z = np.zeros(n)
            if a:
                try:
                    z[a] = np.linalg.solve(M[np.ix_(a, a)], -q[a])
                except np.linalg.LinAlgError:
                    continue
            w = M @ z + q
            if np.all(z >= -1e-10) and np.all(w >= -1e-10):
                sols.append(z)
    return sols


def p_matrix(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """A P-matrix: PD non-symmetric, or triangular with positive diagonal (P but not PD)."""
    if kind == "pd":
        B = rng.standard_normal((n, n))
        S = rng.standard_normal((n, n))
        return B @ B.T + 0.5 * np.eye(n) + (S - S.T)
    T = np.triu(rng.standard_normal((n, n)) * 3.0, 1)
    return T + np.diag(rng.uniform(0.5, 2.0, n))


@pytest.mark.parametrize("seed", range(12))
def test_lemke_matches_enumeration_on_p_matrices(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 2 + seed % 5
    M = p_matrix(rng, n, "pd" if seed % 2 else "triangular")
    q = rng.standard_normal(n) * 2.0
    sols = enumerate_lcp(M, q)
    assert len(sols) == 1, "a P-matrix LCP has exactly one solution"
    res = solve(LCP(M, q), "lemke")
    assert res.status == "optimal"
    np.testing.assert_allclose(res.x, sols[0], atol=1e-9)
    assert res.max_residual <= 1e-9


def test_lemke_ray_termination_without_solution() -> None:
    """w = -z - 1 is negative for every z >= 0: no solution, and Lemke says so."""
    res = solve(LCP(-np.eye(3), -np.ones(3)), "lemke")
    assert res.status == "ray_termination" and not res.success
    assert np.all(np.isnan(res.x))


def test_lemke_degenerate_ties_do_not_cycle() -> None:
    """Equal entries of q make the first ratio test tie; lexicographic rule still terminates."""
    M = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])  # P-matrix (cyclic)
    q = -np.ones(3)
    res = solve(LCP(M, q), "lemke")
    sols = enumerate_lcp(M, q)
    assert res.status == "optimal"
    assert any(np.allclose(res.x, s, atol=1e-9) for s in sols)


def test_lemke_pivot_cap_reports_max_iterations() -> None:
    rng = np.random.default_rng(3)
    M = p_matrix(rng, 6, "pd")
    res = solve(LCP(M, -np.abs(rng.standard_normal(6)) - 1.0), "lemke", max_iter=1)
    assert res.status == "max_iterations" and not res.success
