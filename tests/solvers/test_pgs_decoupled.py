"""PGS on LCPs with decoupled rows: a zero diagonal whose row and column are zero.

Such rows come from directions in which nothing can move (in reduced
coordinates, the friction direction out of the plane of a planar mechanism:
its Jacobian row is zero).  ``w_i = q_i`` whatever ``z``, and ``z_i`` acts on
no other row, so the row is solved in closed form.

Facts:

* with decoupled rows added to a box-friction LCP (a normal row with
  ``q > 0``, its two friction rows with ``q = 0``, a bounded row with
  ``q < 0``), PGS meets its tolerance; the coupled rows' impulses are those
  PGS finds for the same LCP without the decoupled rows (to the tolerance's
  scale), and the decoupled entries are their closed-form values (the lower
  bound 0, zero, the upper bound);
* a decoupled row that asks for an unbounded impulse (a free row, or a normal
  row with ``q < 0``) has no solution: status ``infeasible``, not a step;
* a zero diagonal with a non-zero row (not positive semidefinite) is refused
  with one clear error.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, FrictionBlocks, solve
from solvers.errors import IncompatibleProblem
from solvers.residuals import lcp_residuals

TOL = 1e-10


def _pressed_contacts(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two contacts (normal, t1, t2 rows each) with an SPD Delassus matrix, pressed."""
    rng = np.random.default_rng(seed)
    J = rng.normal(size=(6, 9))
    W = J @ J.T + 0.1 * np.eye(6)
    q = np.array([-1.0, 0.3, -0.2, -0.5, 0.1, 0.4])
    return W, q


def _embed(W: np.ndarray, q: np.ndarray, extra_q: list[float]) -> tuple[sp.csr_matrix, np.ndarray]:
    n, k = W.shape[0], len(extra_q)
    big = np.zeros((n + k, n + k))
    big[:n, :n] = W
    return sp.csr_matrix(big), np.concatenate([q, extra_q])


def test_decoupled_rows_are_solved_in_closed_form():
    W, q = _pressed_contacts()
    mu = np.array([0.5, 0.4])
    base = FrictionBlocks(np.array([0, 3]), np.array([[1, 2], [4, 5]]), mu)
    lo, hi = np.array([0.0, 0, 0, 0, 0, 0]), np.full(6, np.inf)
    ref = solve(LCP(sp.csr_matrix(W), q, lo, hi, base), "pgs", tol=TOL, max_iter=100000)
    assert ref.status == "optimal"
    # rows 6: a third contact's normal row (q > 0: separating); 7, 8: its friction rows
    # (q = 0); 9: a friction row of contact 0 along a direction nothing can move in, q < 0
    M, qq = _embed(W, q, [0.2, 0.0, 0.0, -0.3])
    blocks = FrictionBlocks(
        np.array([0, 3, 6]), np.array([[1, 2], [4, 5], [7, 8]]), np.array([0.5, 0.4, 0.3])
    )
    # row 9: bounded by contact 0's friction bound, given explicitly
    lo9 = -mu[0] * ref.x[0]
    hi9 = mu[0] * ref.x[0]
    lcp = LCP(M, qq, np.r_[lo, 0.0, 0, 0, lo9], np.r_[hi, np.inf, 0, 0, hi9], blocks)
    res = solve(lcp, "pgs", tol=TOL, max_iter=100000)
    assert res.status == "optimal", res.message
    assert "decoupled rows" in res.message
    np.testing.assert_allclose(res.x[:6], ref.x, atol=1e3 * TOL)
    assert res.x[6] == 0.0 and res.x[7] == 0.0 and res.x[8] == 0.0
    assert res.x[9] == pytest.approx(hi9)
    assert max(lcp_residuals(lcp, res.x).values()) <= 1e3 * TOL


@pytest.mark.parametrize(
    ("lo", "hi", "q"),
    [(-np.inf, np.inf, 0.1), (0.0, np.inf, -0.1)],
    ids=["free row", "normal row pulled"],
)
def test_a_decoupled_row_without_a_solution_is_infeasible(lo, hi, q):
    W, qc = _pressed_contacts()
    M, qq = _embed(W, qc, [q])
    lcp = LCP(M, qq, np.r_[np.zeros(6), lo], np.r_[np.full(6, np.inf), hi])
    res = solve(lcp, "pgs", tol=TOL)
    assert res.status == "infeasible"
    assert "row 6 is decoupled" in res.message


def test_a_zero_diagonal_with_coupling_is_refused():
    M = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 2.0]]))
    lcp = LCP(M, np.array([-1.0, -1.0]), np.zeros(2), np.full(2, np.inf))
    with pytest.raises(IncompatibleProblem, match=r"row 0 has M_ii = 0 and is coupled"):
        solve(lcp, "pgs")
