"""Robustness to rounding: stored pile steps perturbed by 1e-13, relative, in many directions.

The BLAS kernels a machine selects (AVX2, AVX-512, SSE3) change the last bits of every
product; a solver whose answer depends on them breaks down on one CPU and not on another.
So each stored step is solved again with ``W`` and ``q`` perturbed at the level of that
rounding (1e-13 relative, :func:`perturbed`) in ``DIRECTIONS`` random directions, and
every answer must meet the tolerance with the unperturbed answer's status (``optimal``),
judged by the layer's own natural map of the returned impulses (not the backend's claim).

The steps: ``pile10_box_singular`` (43 contacts of a landed 10-box pile, box-friction
Coulomb law; with the SkylakeX kernels ``ipm``'s normal matrix lost its last pivot in
rounding there at 1e-9, dense LU exactly singular, the step failed: a diagonal shift now
refactors it) under every law and cone ``ipm`` takes, and ``pile_fc`` (41 contacts of the
landed pile, with the previous step's impulses as warm start) for ``nsgs``.  The Newton
finishes (:mod:`solvers.backends.fc_newton`) start from the unperturbed problem's
interior-point iterate at 1e-5 and must reach 1e-9 on every perturbed problem.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp
from fc_newton_setup import stored_step
from test_frictional import stored_pile

from solvers import solve
from solvers.frictional import FrictionalContact, fc_residuals

pytest.importorskip("numba")

#: Random directions per step and solver.
DIRECTIONS = 50
#: Relative size of the perturbation: a few units of rounding of double precision.
SIZE = 1e-13


def perturbed(fc: FrictionalContact, rng: np.random.Generator) -> FrictionalContact:
    """``fc`` with ``q`` scaled entrywise by ``1 + 1e-13 ξ`` and ``W`` by ``S W S``,
    ``S = diag(1 + 1e-13 η)`` (``ξ, η`` standard normal; ``W`` stays symmetric positive
    semidefinite).  Through a factor ``W = C diag(d) C'``: ``C`` by ``S C`` and ``d`` by
    ``1 + 1e-13 ζ`` entrywise."""
    n = fc.n
    q = fc.q * (1.0 + SIZE * rng.standard_normal(n))
    S = sp.diags(1.0 + SIZE * rng.standard_normal(n))
    common = {"row_lo": fc.row_lo, "law": fc.law, "cone": fc.cone, "directions": fc.directions}
    if fc.factor is not None:
        C, d = fc.factor
        d = d * (1.0 + SIZE * rng.standard_normal(d.size))
        SC = sp.csr_matrix(S @ C)
        SC.sort_indices()
        return FrictionalContact(None, q, fc.mu, factor=(SC, d), **common)
    return FrictionalContact(sp.csr_matrix(S @ fc.W @ S), q, fc.mu, **common)


def perturbations(fc: FrictionalContact, seed: int) -> Iterator[FrictionalContact]:
    rng = np.random.default_rng(seed)
    for _ in range(DIRECTIONS):
        yield perturbed(fc, rng)


def box_step(law: str = "coulomb", cone: str = "box") -> FrictionalContact:
    """The 10-box pile's box-law step, posed with ``law`` on ``cone`` (the same ``W``, ``q``)."""
    fc = stored_step("pile10_box_singular", "box")
    return FrictionalContact(None, fc.q, fc.mu, law, cone, row_lo=fc.row_lo, factor=fc.factor)


def check_all(fc: FrictionalContact, seed: int, tol: float, run) -> None:  # type: ignore[no-untyped-def]
    """``run(problem)`` on ``fc`` and on its perturbations: the same status, ``optimal``, and
    the natural map of every answer, by the layer's own measure, within ``tol``."""
    base = run(fc)
    assert base.status == "optimal", base.message
    assert fc_residuals(fc, base.x)["natural_map"] <= tol
    for k, p in enumerate(perturbations(fc, seed)):
        res = run(p)
        assert res.status == base.status, (k, res.message)
        assert fc_residuals(p, res.x)["natural_map"] <= tol, (k, res.message)


@pytest.mark.parametrize(
    "law, cone", [("coulomb", "box"), ("coulomb", "pyramid"), ("coulomb", "soc"), ("ccp", "soc")]
)
def test_ipm_meets_the_tolerance_under_rounding_perturbations(law: str, cone: str) -> None:
    """``ipm`` at 1e-9 (the tolerance at which the box law broke down with the SkylakeX
    kernels) on the 10-box pile step and 50 perturbations of it."""
    check_all(box_step(law, cone), 1, 1e-9, lambda p: solve(p, "ipm", tol=1e-9))


@pytest.mark.parametrize("law", ["ccp", "coulomb"])
def test_nsgs_meets_the_tolerance_under_rounding_perturbations(law: str) -> None:
    """``nsgs`` at 1e-6 (its declared accuracy on the pile's redundant contacts) on the
    landed pile step from its warm start, and 50 perturbations of it."""
    fc, warm = stored_pile(law)
    check_all(fc, 2, 1e-6, lambda p: solve(p, "nsgs", tol=1e-6, warm_start=warm))


@pytest.mark.parametrize("cone", ["box", "pyramid", "soc"])
def test_newton_finish_meets_the_tolerance_under_rounding_perturbations(cone: str) -> None:
    """The law's semismooth Newton (the finish of ``ipm``: ``BoxNewton``, ``PyramidNewton``,
    ``SocNewton``), from the unperturbed step's interior-point iterate at 1e-5, reaches
    1e-9 on the step and on 50 perturbations of it (at most 300 iterations, the default
    cap)."""
    from solvers.backends.fc_newton import BoxNewton, PyramidNewton, SocNewton
    from solvers.backends.friction import IPMBackend

    fc = box_step("coulomb", cone)
    rough = solve(fc, "ipm", tol=1e-5, newton=0)
    assert rough.status == "optimal", rough.message

    class Answer:
        def __init__(self, problem: FrictionalContact) -> None:
            C, d = problem.factor
            if cone == "soc":
                newton = SocNewton(problem, C, d, IPMBackend.soc_rho_scale)
            else:
                newton = (BoxNewton if cone == "box" else PyramidNewton)(problem, C, d)
            self.x, _, res, why = newton.solve(rough.x, 1e-9, IPMBackend.newton_iterations)
            self.status = "optimal" if why == "converged" else why
            self.message = f"{why}: natural map {res:.3e}"

    check_all(fc, 3, 1e-9, Answer)
