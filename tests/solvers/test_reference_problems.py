"""Every available backend against the reference library (analytic solutions).

Per-backend tolerances are the ones each backend declares
(``Backend.tolerance.accuracy``: accuracy reached with default settings).  Degenerate
problems (a constraint active with zero multiplier) are loosened to ``1e-4``:
interior-point iterates approach such a point like ``sqrt(gap)``, so a
``1e-8`` gap gives ``1e-4`` accuracy in ``x``.
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers import STATUSES, IncompatibleProblem, solve
from solvers.backend_registry import registered
from solvers.reference import Reference, reference_lcps, reference_qps

REFS = reference_qps() + reference_lcps()
DEGENERATE = {"qp_degenerate_active", "qp_redundant_rows", "lcp_degenerate_psd"}
# Problems with singular P/M that active-set solvers needing a definite matrix cannot take.
SINGULAR = {"lcp_degenerate_psd", "qp_unbounded"}
ONE_BACKEND = {"lcp_friction_box", "lcp_friction_disc", "lcp_no_solution"}


def _tol(name: str, ref: Reference) -> float:
    tol = registered()[name].tolerance.accuracy
    return max(tol, 1e-4) if ref.name in DEGENERATE else tol


@pytest.mark.parametrize("ref", REFS, ids=[r.name for r in REFS])
def test_backend_on_reference(backend_name: str, ref: Reference) -> None:
    name = backend_name
    cls = registered()[name]
    try:
        res = solve(ref.problem, name)
    except IncompatibleProblem as err:
        # An honest refusal must say what would help.
        assert "use" in str(err) or "backends" in str(err)
        return
    assert res.status in STATUSES
    assert res.backend == name
    if ref.status != "optimal":
        expected = "ray_termination" if name == "lemke" else ref.status
        if getattr(cls, "detects_infeasibility", False) or name == "lemke":
            assert res.status == expected, res.message
        else:
            assert not res.success, "an infeasible/unbounded problem must never be 'optimal'"
        return
    if ref.name in SINGULAR and cls.requires_definite:
        assert not res.success
        return
    tol = _tol(name, ref)
    assert res.success, res.message
    assert res.max_residual <= tol, res.residuals
    if ref.x is not None:
        np.testing.assert_allclose(res.x, ref.x, atol=tol, rtol=0)
    if ref.y is not None and res.y is not None:
        np.testing.assert_allclose(res.y, ref.y, atol=max(tol, 10 * tol if name == "pgs" else tol))


@pytest.mark.parametrize("ref", REFS, ids=[r.name for r in REFS])
def test_each_reference_is_solved_by_several_backends(ref: Reference) -> None:
    """Refusals are the exception: each problem has at least two backends that take it.

    Friction blocks (only PGS) and the LCP without solution (non-convex QP form,
    only Lemke) are the documented exceptions with one.
    """
    from solvers import available_backends

    taken = 0
    for name in available_backends():
        try:
            solve(ref.problem, name)
            taken += 1
        except IncompatibleProblem:
            pass
    assert taken >= (1 if ref.name in ONE_BACKEND else 2)
