"""Solve a frictional-contact problem with any backend that fits, converting when needed.

Which backend fits is decided here from the backends' capability flags:

- ``accepts_fc`` (``nsgs``, ``apgd``, ``admm``): the local problem natively,
  for the laws the backend lists;
- a QP backend with ``supports_soc``: the CCP with the exact cone as the QP
  ``min 1/2 r'Wr + q'r`` over the cones (:data:`FC_CCP_TO_SOC_QP`);
- a QP backend without cones: the CCP with a polyhedral cone, the cone's
  edges as linear rows (:data:`FC_CCP_TO_QP`);
- an LCP backend with ``supports_friction_blocks``: the Coulomb law with the
  box cone (box friction blocks) or the exact cone (disc blocks), the
  De Saxcé form being exactly the blocks' complementarity
  (:data:`FC_COULOMB_TO_LCP`).

A global problem is first reduced to the local one
(:data:`GLOBAL_TO_LOCAL`).  Every result carries the conversions applied,
the natural-map residual and the Signorini/cone/dissipation measures of
:func:`solvers.frictional.fc_residuals`, on the problem as given.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem
from solvers.frictional import FrictionalContact, GlobalFrictionalContact, fc_residuals
from solvers.problems import LCP, QP, FrictionBlocks, SOCBlocks
from solvers.registry import available_backends, registered
from solvers.result import RawSolution, SolverResult

GLOBAL_TO_LOCAL = "global frictional contact -> local (W = H' M^-1 H)"
FC_CCP_TO_SOC_QP = "frictional contact (ccp, soc) -> qp with second-order cones"
FC_CCP_TO_QP = "frictional contact (ccp, polyhedral cone) -> qp with edge rows"
FC_COULOMB_TO_LCP = "frictional contact (coulomb, box/soc) -> lcp with friction blocks"

#: A claimed optimum whose natural-map residual exceeds this multiple of the tolerance
#: is downgraded to ``optimal_inaccurate`` (as for QPs and LCPs).
IMPLAUSIBLE_FACTOR = 1e3


def fits(cls: type[Backend], problem: FrictionalContact) -> tuple[bool, str]:
    """Whether backend class ``cls`` can solve ``problem``, and through which conversion."""
    if getattr(cls, "accepts_fc", False):
        laws = getattr(cls, "laws", ("ccp", "coulomb"))
        if problem.law in laws:
            return True, ""
        return False, f"{cls.name} solves the {'/'.join(laws)} law only"
    if problem.law == "ccp" and cls.accepts_qp and not cls.equality_only:
        if problem.cone == "soc":
            if cls.supports_soc:
                return True, FC_CCP_TO_SOC_QP
            return False, f"{cls.name} takes no second-order cones"
        return True, FC_CCP_TO_QP
    if problem.law == "coulomb" and cls.accepts_lcp and cls.supports_friction_blocks:
        if problem.cone in ("box", "soc"):
            return True, FC_COULOMB_TO_LCP
        return False, f"{cls.name} has no pyramid friction blocks"
    if problem.law == "coulomb":
        return False, f"{cls.name} is a convex solver; the Coulomb law is not a convex program"
    return False, f"{cls.name} takes neither QPs nor frictional-contact problems"


def fitting_backends(problem: FrictionalContact) -> list[str]:
    """Installed backends that solve ``problem`` (natively or through a conversion)."""
    return [n for n in available_backends() if fits(registered()[n], problem)[0]]


def _edge_rows(problem: FrictionalContact) -> sp.csr_matrix:
    """Rows ``mu o_j r_n - nrm_j . r_t >= 0`` of each contact's polygon edges, and ``r_n >= 0``."""
    d = problem.dirs
    e = np.roll(d, -1, axis=0) - d
    nrm = np.column_stack([e[:, 1], -e[:, 0]])
    offset = np.sum(nrm * d, axis=1)
    k, nc = d.shape[0], problem.nc
    local = np.zeros((nc, k + 1, 3))
    local[:, :k, 0] = problem.mu[:, None] * offset[None, :]
    local[:, :k, 1:] = -nrm[None, :, :]
    local[:, k, 0] = 1.0
    rows = np.repeat(np.arange(nc * (k + 1)), 3)
    cols = np.tile(np.arange(3), nc * (k + 1)) + 3 * np.repeat(np.arange(nc), 3 * (k + 1))
    return sp.csr_matrix((local.ravel(), (rows, cols)), shape=(nc * (k + 1), problem.n))


def to_qp(problem: FrictionalContact) -> QP:
    """The CCP as the QP ``min 1/2 r'Wr + q'r`` over the cones (and scalar-row bounds)."""
    nc, ms = problem.nc, problem.row_lo.size
    scalar = sp.csr_matrix(
        (np.ones(ms), (np.arange(ms), 3 * nc + np.arange(ms))), shape=(ms, problem.n)
    )
    if problem.cone == "soc":
        ids = np.arange(3 * nc).reshape(nc, 3)
        cones = SOCBlocks(ids[:, 0], ids[:, 1:], problem.mu)
        return QP(problem.W, problem.q, scalar, problem.row_lo, np.full(ms, np.inf), soc=cones)
    A = sp.vstack([_edge_rows(problem), scalar], format="csc")
    lo = np.concatenate([np.zeros(A.shape[0] - ms), problem.row_lo])
    return QP(problem.W, problem.q, A, lo, np.full(A.shape[0], np.inf))


def to_lcp(problem: FrictionalContact) -> LCP:
    """The Coulomb law with the box or exact cone as an LCP with friction blocks."""
    nc = problem.nc
    ids = np.arange(3 * nc).reshape(nc, 3)
    cone = "disc" if problem.cone == "soc" else "box"
    blocks = FrictionBlocks(ids[:, 0], ids[:, 1:], problem.mu, cone)  # type: ignore[arg-type]
    lo = np.concatenate([np.zeros(3 * nc), problem.row_lo])
    return LCP(problem.W, problem.q, lo, np.full(problem.n, np.inf), blocks)


def solve_frictional(
    problem: FrictionalContact | GlobalFrictionalContact, be: Backend, opts: SolveOptions
) -> SolverResult:
    """Route ``problem`` to backend ``be`` (see the module docstring)."""
    from solvers import dispatch

    convs: list[str] = []
    t0 = time.perf_counter()
    if isinstance(problem, GlobalFrictionalContact):
        problem = problem.to_local()
        convs.append(GLOBAL_TO_LOCAL)
    ok, how = fits(type(be), problem)
    if not ok:
        raise IncompatibleProblem(
            f"backend {be.name!r} does not fit this {problem.law} problem ({how}); "
            f"fitting backends: {', '.join(fitting_backends(problem)) or 'none installed'}"
        )
    t_conv = time.perf_counter() - t0
    if how == "":
        be.check_fc(problem)  # type: ignore[attr-defined]
        raw = dispatch._call(lambda: be.solve_fc(problem, opts), problem.n)  # type: ignore[attr-defined]
    else:
        convs.append(how)
        sub: QP | LCP = to_lcp(problem) if how == FC_COULOMB_TO_LCP else to_qp(problem)
        t_conv = time.perf_counter() - t0
        res = dispatch.solve(
            sub,
            be.name,
            tol=opts.tol,
            max_iter=opts.max_iter,
            warm_start=opts.x0,
            time_limit=opts.time_limit,
            **opts.settings,
        )
        convs.extend(res.conversions)
        raw = RawSolution(
            res.x, None, res.status, res.message, res.iterations, res.setup_time, res.solve_time
        )
    raw.setup_time += t_conv
    r = raw.x
    finite = bool(np.all(np.isfinite(r)))
    measures = fc_residuals(problem, r) if finite else {"natural_map": float("nan")}
    status = raw.status
    limit = IMPLAUSIBLE_FACTOR * max(opts.tol, be.tolerance)
    if finite and status == "optimal" and measures["natural_map"] > limit:
        raw.message += (
            f"; reported optimal but the natural-map residual {measures['natural_map']:.2e} "
            f"exceeds {limit:.1e}: reported as optimal_inaccurate"
        )
        status = "optimal_inaccurate"
    if not finite and status == "optimal":
        status = "numerical_error"
    residuals = {"natural_map": measures["natural_map"]}
    return SolverResult(
        r,
        None,
        status,
        raw.message,
        raw.iterations,
        raw.setup_time,
        raw.solve_time,
        float(r @ problem.velocity(r)) if finite else float("nan"),
        residuals,
        be.name,
        convs,
        w=problem.velocity(r) if finite else None,
        measures=measures,
    )
