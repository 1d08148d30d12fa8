"""Contact-shaped problems (block-diagonal SPD mass, sparse rows): every backend agrees.

The reference is Lemke's method on the problem's LCP form (exact pivoting, an
algorithm independent of the QP backends).  Agreement is required within each
backend's declared tolerance, scaled by the conditioning factor of the problem
(x errors are residuals divided by the smallest relevant eigenvalue, here >= 0.1).
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers import IncompatibleProblem, solve
from solvers.backend_registry import registered
from solvers.reference import contact_dual_qp, contact_primal_qp, contact_scene

PRIMAL = contact_primal_qp(contact_scene(5, 2.0, seed=11))
DUAL = contact_dual_qp(contact_scene(4, 2.0, rows_per_contact=5, seed=12))
REF_PRIMAL = solve(PRIMAL, "lemke")
REF_DUAL = solve(DUAL, "lemke")


def _solve_or_skip(problem, name: str):  # type: ignore[no-untyped-def]
    try:
        return solve(problem, name)
    except IncompatibleProblem as err:
        pytest.skip(f"{name} does not take this form: {err}")


def test_references_are_exact() -> None:
    assert REF_PRIMAL.success and REF_PRIMAL.max_residual <= 1e-10
    assert REF_DUAL.success and REF_DUAL.max_residual <= 1e-10
    # The primal has active and inactive contacts, the dual saturated friction: not trivial.
    assert 0 < np.sum(REF_PRIMAL.y < -1e-8) < PRIMAL.m
    assert np.any(np.isclose(np.abs(REF_DUAL.x), DUAL.u, rtol=0, atol=1e-10) & np.isfinite(DUAL.u))


def test_primal_contact_qp_agreement(backend_name: str) -> None:
    res = _solve_or_skip(PRIMAL, backend_name)
    tol = registered()[backend_name].tolerance.accuracy
    assert res.success, res.message
    assert res.max_residual <= tol
    np.testing.assert_allclose(res.x, REF_PRIMAL.x, atol=10 * tol)
    np.testing.assert_allclose(res.objective, REF_PRIMAL.objective, atol=10 * tol, rtol=1e-9)


def test_dual_friction_qp_agreement(backend_name: str) -> None:
    """The Delassus matrix is singular (5 rows per contact, 6 dofs per body): impulses are not
    unique, but the optimal value and the gradient P lam (relative velocities) are."""
    cls = registered()[backend_name]
    if cls.requires_definite:
        pytest.skip(f"{backend_name} needs a positive definite P; the Delassus matrix is singular")
    res = _solve_or_skip(DUAL, backend_name)
    tol = cls.tolerance.accuracy
    assert res.success, res.message
    assert res.max_residual <= tol
    np.testing.assert_allclose(DUAL.P @ res.x, DUAL.P @ REF_DUAL.x, atol=100 * tol)
    np.testing.assert_allclose(res.objective, REF_DUAL.objective, atol=100 * tol, rtol=1e-8)
