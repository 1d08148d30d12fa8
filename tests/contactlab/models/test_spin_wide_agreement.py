"""The wide-cone frictional-contact backends against the SOC QP route of the spin models.

On random problems with 4-, 5- and 6-row contacts (torsion, rolling, both), bilateral and
unilateral scalar rows and a positive definite Delassus matrix (a unique solution), each of
``nsgs``, ``apgd`` and ``admm`` on :func:`contactlab.models.spin.wide_fc`'s problem returns
the impulses of the QP with chained 3-dimensional cones (:func:`contactlab.models.spin.cone_qp`)
solved by Clarabel through cvxpy at 1e-10, to 1e-6 (Clarabel's accuracy there: its natural
map is 2e-8 to 8e-8 and the two differ by 6e-8 to 4e-7); for Coulomb's law, the SOC route's
fixed point on De Saxcé's shift.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from contactlab.models.spin import WideStep, cone_qp, dual_norm, wide_fc

pytest.importorskip("cvxpy")

COMPS = {4: [0, 1, 2], 5: [0, 1, 3, 4], 6: [0, 1, 2, 3, 4]}


def _problem(
    rng: np.random.Generator, d: int, nc: int = 5
) -> tuple[np.ndarray, np.ndarray, WideStep]:
    comps = np.array(COMPS[d])
    n = nc * d + 2
    B = rng.normal(size=(n, n))
    W = B @ B.T / n + 0.5 * np.eye(n)
    q = rng.normal(size=n)
    q[0 : nc * d : d] -= 1.0
    coef = np.column_stack(
        [np.full(nc, 0.6), rng.uniform(0.01, 0.5, nc), rng.uniform(0.01, 0.5, nc)]
    )
    full = coef[:, [0, 0, 1, 2, 2]]  # (mu, mu, mu_t, mu_r, mu_r)
    empty = sp.csr_matrix((n, 1))
    wide = WideStep(
        empty, np.zeros(n), full[:, comps], comps, d, nc, 1, 1, sp.csr_matrix((3 * nc, 1))
    )
    return W, q, wide


def _soc_route(W: np.ndarray, q: np.ndarray, wide: WideStep, cone: str) -> np.ndarray:
    qp, Sc = cone_qp(sp.csr_matrix(W), q, wide, cone)
    res = solvers.solve(qp, "cvxpy:clarabel", tol=1e-10)
    assert res.status in ("optimal", "optimal_inaccurate"), res.message
    return np.asarray(Sc @ res.x[: W.shape[0]])


@pytest.mark.parametrize("cone", ["elliptic", "separate"])
@pytest.mark.parametrize("d", [4, 5, 6])
def test_ccp_equals_the_soc_route(d: int, cone: str) -> None:
    rng = np.random.default_rng(100 * d + len(cone))
    for _ in range(2):
        W, q, wide = _problem(rng, d)
        ref = _soc_route(W, q, wide, cone)
        problem = wide_fc(sp.csr_matrix(W), q, wide, "ccp", cone)
        for name in ("nsgs", "apgd", "admm", "padmm"):
            res = solvers.solve(problem, name, tol=1e-12, max_iter=400000)
            assert res.status == "optimal", res.message
            assert np.abs(res.x - ref).max() <= 1e-6 * (1 + np.abs(ref).max()), name


@pytest.mark.parametrize("cone", ["elliptic", "separate"])
def test_coulomb_equals_the_soc_routes_fixed_point(cone: str) -> None:
    rng = np.random.default_rng(5 if cone == "elliptic" else 6)
    W, q, wide = _problem(rng, 6)
    nc, d = wide.nc, wide.d
    shift = np.zeros(nc)
    for _ in range(200):  # De Saxcé's shift, as contactlab.models.spin.solve_rigid iterates it
        qs = q.copy()
        qs[0 : d * nc : d] += shift
        ref = _soc_route(W, qs, wide, cone)
        new = dual_norm(W @ ref + q, wide, cone)
        done = np.abs(new - shift).max() <= 1e-9  # below it, Clarabel's own noise
        shift = new
        if done:
            break
    assert done
    problem = wide_fc(sp.csr_matrix(W), q, wide, "coulomb", cone)
    for name in ("nsgs", "apgd", "admm", "padmm"):
        res = solvers.solve(problem, name, tol=1e-12, max_iter=400000)
        assert res.status == "optimal", res.message
        assert np.abs(res.x - ref).max() <= 1e-6 * (1 + np.abs(ref).max()), name
