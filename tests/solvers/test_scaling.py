"""Backends with absolute thresholds see a unit-scaled cost (``solvers.conversions.cost_scaled``).

Facts:

- the scaling is exact: the scaled problem's solution mapped back is the
  original's (primal, row multipliers, bound multipliers and cone
  multipliers);
- a QP of the size of a reduced chain step (joint-space inertia of order
  1e-5 to 1e-3 kg m^2, no rows) was reported unbounded by ProxQP (its dual
  infeasibility threshold is absolute: 1e-4 against the smallest eigenvalue
  1.5e-5); with the cost scaled for ProxQP (and cvxpy's OSQP) they solve it;
- well-scaled problems are passed as they are (no conversion recorded);
- a QP without rows reaches SCS itself (qpsolvers would answer it with SciPy's
  LSQR, cvxpy's SCS path rejects ``m = 0``): the row ``0 x <= 1`` is added.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from solvers import conversions as cv
from solvers.backend_registry import get_backend
from solvers.errors import IncompatibleProblem
from solvers.problems import QP, SOCBlocks

#: the joint-space matrix of the 5-link chain's first reduced step (kg m^2)
CHAIN_P = np.array(
    [
        [3.0e-3, 1.1e-3, 2.0e-4],
        [1.1e-3, 9.0e-4, 2.5e-4],
        [2.0e-4, 2.5e-4, 1.2e-4],
    ]
)
CHAIN_Q = np.array([-1.04e-3, 6.6e-5, 6.9e-5])


def _equilibrating() -> list[str]:
    return [n for n in solvers.available_backends() if get_backend(n).equilibrate]


#: the backends that failed this step (ProxQP, cvxpy's OSQP: "unbounded"; cvxpy's SCS:
#: "m must be a positive integer") or answered it with another method (qpsolvers' SCS and
#: Clarabel: SciPy's LSQR)
CHAIN_STEP_BACKENDS = (
    "qpsolvers:proxqp", "cvxpy:proxqp", "cvxpy:osqp", "cvxpy:scs", "qpsolvers:scs",
    "qpsolvers:clarabel",
)  # fmt: skip


def _generic() -> list[str]:
    return [n for n in CHAIN_STEP_BACKENDS if n in solvers.available_backends()]


def test_the_chain_step_is_badly_scaled_in_the_sense_that_matters() -> None:
    eig = np.linalg.eigvalsh(CHAIN_P)
    assert eig[0] < 1e-4 < eig[-1] < 1e-2  # below an absolute 1e-4 certificate threshold


@pytest.mark.parametrize("name", _generic())
def test_every_generic_backend_solves_the_small_unconstrained_step(name: str) -> None:
    x_star = -np.linalg.solve(CHAIN_P, CHAIN_Q)
    with warnings.catch_warnings():
        # e.g. qpsolvers' "solving with SciPy's LSQR rather than SCS" fails the test
        warnings.simplefilter("error", UserWarning)
        res = solvers.solve(QP(CHAIN_P, CHAIN_Q), name, tol=1e-9)
    assert res.status in ("optimal", "optimal_inaccurate"), res
    assert (cv.COST_SCALING in res.conversions) == get_backend(name).equilibrate
    # first-order backends (SCS, OSQP) stop at ~1e-6 relative in x on this condition number
    # (cond(P) ~ 300); interior-point and active-set ones at round-off
    np.testing.assert_allclose(res.x, x_star, rtol=1e-4, atol=1e-6)


def _mixed_problem(scale: float) -> QP:
    """Bounds, general rows and one Coulomb cone, with a cost ``scale`` times a unit one."""
    rng = np.random.default_rng(4)
    B = rng.normal(size=(6, 6))
    P = B @ B.T + 0.5 * np.eye(6)
    d = 1.0 / np.sqrt(np.diag(P))
    P = scale * (d[:, None] * P * d[None, :])  # unit diagonal at scale 1: left as it is
    q = scale * rng.normal(size=6)
    A = sp.vstack([sp.eye(6, format="csr")[[0, 4]], sp.csr_matrix(rng.normal(size=(2, 6)))])
    l = np.array([0.1, -0.2, -np.inf, 0.05])
    u = np.array([np.inf, 0.2, 0.3, 0.05])
    soc = SOCBlocks(np.array([1]), np.array([[2, 3]]), np.array([0.4]))
    return QP(P, q, A, l, u, soc)


def test_the_scaling_is_exact() -> None:
    """Map the scaled problem's solution back: it satisfies the original's KKT conditions."""
    qp = QP(CHAIN_P, CHAIN_Q, sp.eye(3, format="csc")[[1]], [-1.0], [np.inf])
    scaled = cv.cost_scaled(qp)
    assert scaled is not None
    qs, scale = scaled
    assert qs.P.diagonal().max() == pytest.approx(1.0, rel=1e-15)
    assert cv.cost_scaled(qs) is None  # unit-scaled problems pass as they are
    ref = solvers.solve(qs, "osqp", tol=1e-10)
    x, y = ref.x, scale.y(ref.y)
    assert x[1] == pytest.approx(-1.0, abs=1e-7)  # the bound is active (free optimum -1.07)
    assert y is not None and y[0] < 0.0  # OSQP sign: active at its lower bound
    stationarity = qp.P @ x + qp.q + qp.A.T @ y
    assert np.max(np.abs(stationarity)) < 1e-9


@pytest.mark.parametrize("name", _equilibrating())
def test_scaled_and_unscaled_solves_agree_with_cones_rows_and_bounds(name: str) -> None:
    be = get_backend(name)
    small, unit = _mixed_problem(1e-4), _mixed_problem(1.0)
    try:
        res = solvers.solve(small, name, tol=1e-9)
    except IncompatibleProblem:
        assert not be.supports_soc
        return
    ref = solvers.solve(unit, name, tol=1e-9)
    assert cv.COST_SCALING in res.conversions and cv.COST_SCALING not in ref.conversions
    assert res.status in ("optimal", "optimal_inaccurate") and ref.status == res.status, (res, ref)

    # the same minimiser (the cost is scaled, not the feasible set); multipliers scale with
    # the cost; each backend agrees with itself to twice its declared accuracy (ECOS and
    # SCS 1e-4, measured 2.4e-5 relative for ECOS here)
    def close(a: np.ndarray, b: np.ndarray) -> None:
        np.testing.assert_allclose(a, b, atol=2 * be.tolerance.accuracy * (1 + np.max(np.abs(b))))

    close(res.x, ref.x)
    assert res.y is not None and ref.y is not None
    close(res.y / 1e-4, ref.y)
    if ref.z_soc is not None:
        assert res.z_soc is not None
        close(res.z_soc / 1e-4, ref.z_soc)
