"""The free scalar rows (joints) of a frictional-contact problem eliminated by their Schur
complement before ``apgd``'s and ``admm``'s iterations (:mod:`solvers.numerics.fc_schur`,
:class:`solvers.backends.fc_base.FreeRows`).

The problems are built as a step's: rows ``C = [contacts; bounded row; joints]`` acting on
the velocities of bodies with a diagonal mass, ``W = C M^-1 C'``, ``q = C M^-1 f - b``; the
joints act on the first bodies only, and one contact only on a body no joint touches.

Facts:

* the kept rows' matrix and free velocity are the Schur complement
  ``W_KK - W_KF W_FF^-1 W_FK`` and ``q_K - W_KF W_FF^-1 q_F`` (a dense solve, to 1e-12 of
  ``max |W|``), a kept row no free row touches keeps its row of ``W``, and the impulses
  recovered from any kept ones give the free rows a zero velocity and the kept rows the
  Schur complement's velocity (to 1e-12 of the velocities' scale);
* ``apgd`` and ``admm`` with the free rows eliminated solve the problem: the CCP's velocities agree
  with Clarabel's (a convex QP over the cones, whose velocities are unique) and Coulomb's
  with the project's interior point's (an independent algorithm) to 1e-6 m/s at a
  natural-map residual of 1e-10, the joints' velocities within 1e-9 m/s;
* dependent joint rows (a row repeated, ``W_FF`` singular) are not eliminated and stay in
  the iteration; the answer has the independent rows' velocities.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import FrictionalContact, solve
from solvers.backends.fc_base import FreeRows
from solvers.fc_dispatch import to_qp

pytest.importorskip("numba")

NC, NF, BODIES = 5, 8, 4


def jointed_problem(law: str, seed: int = 2, repeat: bool = False) -> FrictionalContact:
    """Five contacts (the last on body 3 alone), one bounded scalar row and eight joint rows
    on bodies 0-2 (``repeat``: the first joint row twice), as a step's problem."""
    rng = np.random.default_rng(seed)
    n = 6 * BODIES
    contacts = rng.standard_normal((3 * NC, n))
    contacts[: 3 * (NC - 1), 18:] = 0.0
    contacts[3 * (NC - 1) :, :18] = 0.0
    bounded = rng.standard_normal((1, n))
    joints = np.zeros((NF, n))
    joints[:, :18] = rng.standard_normal((NF, 18))
    b = np.concatenate([0.05 * rng.standard_normal(3 * NC + 1), 0.01 * rng.standard_normal(NF)])
    if repeat:
        joints = np.vstack([joints, joints[:1]])
        b = np.append(b, b[3 * NC + 1])
    C = np.vstack([contacts, bounded, joints])
    minv = 1.0 / rng.uniform(0.5, 2.0, n)
    f = rng.standard_normal(n)
    W = C @ (minv[:, None] * C.T)
    q = C @ (minv * f) - b
    lo = np.concatenate([[0.0], np.full(C.shape[0] - 3 * NC - 1, -np.inf)])
    return FrictionalContact(sp.csr_matrix(W), q, np.full(NC, 0.5), law, "soc", row_lo=lo)


def test_kept_rows_are_the_schur_complement() -> None:
    problem = jointed_problem("ccp")
    free_rows = FreeRows.of(problem)
    assert free_rows is not None
    W = problem.W.toarray()
    F = np.arange(3 * NC + 1, problem.n)
    K = np.arange(3 * NC + 1)
    np.testing.assert_array_equal(free_rows.free, F)
    np.testing.assert_array_equal(free_rows.keep, K)
    X = np.linalg.solve(W[np.ix_(F, F)], np.column_stack([W[np.ix_(F, K)], problem.q[F]]))
    S = W[np.ix_(K, K)] - W[np.ix_(K, F)] @ X[:, :-1]
    qk = problem.q[K] - W[np.ix_(K, F)] @ X[:, -1]
    ptr, idx, val = free_rows.csr
    S_csr = sp.csr_matrix((val, idx, ptr), shape=(K.size, K.size)).toarray()
    scale = np.max(np.abs(W))
    np.testing.assert_allclose(S_csr, S, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(free_rows.q, qk, rtol=0, atol=1e-12 * scale)
    # the last contact's body has no joint: its rows of W are kept as they are
    last = np.arange(3 * (NC - 1), 3 * NC)
    assert set(last).isdisjoint(free_rows.keep[free_rows.J])
    np.testing.assert_array_equal(S_csr[last], W[np.ix_(last, K)])
    rk = np.random.default_rng(5).standard_normal(K.size)
    r, _ = free_rows.whole(rk, 0)
    u = W @ r + problem.q
    speed = np.max(np.abs(problem.q)) + np.max(np.abs(S @ rk))
    np.testing.assert_array_equal(r[K], rk)
    assert np.max(np.abs(u[F])) <= 1e-12 * speed
    np.testing.assert_allclose(u[K], S @ rk + qk, rtol=0, atol=1e-12 * speed)


@pytest.mark.parametrize("solver", ["apgd", "admm"])
@pytest.mark.parametrize("law", ["ccp", "coulomb"])
def test_joints_eliminated_agree_with_an_interior_point(law: str, solver: str) -> None:
    problem = jointed_problem(law)
    assert FreeRows.of(problem) is not None
    if law == "ccp":
        pytest.importorskip("clarabel")
        ref = problem.velocity(solve(to_qp(problem), "cvxpy:clarabel", tol=1e-10).x)
    else:
        exact = solve(problem, "ipm", tol=1e-10)
        assert exact.status == "optimal", exact.message
        ref = exact.w
    res = solve(problem, solver, tol=1e-10, max_iter=200000)
    assert res.status == "optimal", res.message
    assert "8 free rows eliminated" in res.message
    assert res.residuals["natural_map"] <= 1e-10
    np.testing.assert_allclose(res.w, ref, rtol=0, atol=1e-6)
    assert np.max(np.abs(res.w[3 * NC + 1 :])) <= 1e-9
    # the contacts are not trivial: some press, the bounded row is active or not
    assert np.max(res.x[0 : 3 * NC : 3]) > 1e-3


def test_dependent_joint_rows_stay_in_the_iteration() -> None:
    problem = jointed_problem("ccp", repeat=True)
    assert FreeRows.of(problem) is None
    res = solve(problem, "apgd", tol=1e-10, max_iter=200000)
    assert res.status == "optimal", res.message
    assert "eliminated" not in res.message
    single = solve(jointed_problem("ccp"), "apgd", tol=1e-10)
    np.testing.assert_allclose(res.w[: single.w.size], single.w, rtol=0, atol=1e-6)
    assert abs(res.w[-1]) <= 1e-9
