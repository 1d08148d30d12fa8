"""Solve a frictional-contact problem with any backend that fits, converting when needed.

Which backend fits is decided by :func:`solvers.fitting.fit` from the
backends' capability flags, through the problem kinds registered here
(:attr:`FrictionalContact.kind <solvers.frictional.FrictionalContact.kind>`):

``fc_ccp_soc``
    the CCP with the exact cone: ``accepts_fc`` backends natively; QP
    backends with ``supports_soc`` as ``min 1/2 r'Wr + q'r`` over the cones
    (:data:`FC_CCP_TO_SOC_QP`);
``fc_ccp_poly``
    the CCP with a pyramid or box: ``accepts_fc``; inequality QP backends
    with the cone's edges as linear rows (:data:`FC_CCP_TO_QP`);
``fc_coulomb``
    the Coulomb law with the exact cone or the box: ``accepts_fc`` and
    ``solves_coulomb``; LCP backends with ``supports_friction_blocks`` (disc
    or box blocks: their complementarity is exactly De Saxcé's form,
    :data:`FC_COULOMB_TO_LCP`);
``fc_coulomb_pyramid``
    the Coulomb law with a pyramid: ``accepts_fc`` and ``solves_coulomb`` only.
``fc_wide_ccp`` / ``fc_wide_coulomb``
    the CCP / the Coulomb law on wide cones (torsional and rolling rows,
    :class:`~solvers.frictional_wide.WideFrictionalContact`): backends with
    ``accepts_fc_wide`` (``nsgs``, ``apgd``, ``admm``, ``padmm``), natively; the SOC QP backends
    take the CCP as the model's own QP with chained cones
    (:func:`contactlab.models.spin.cone_qp`), not through this layer.

A global problem is first reduced to the local one
(:data:`GLOBAL_TO_LOCAL`).  Every result carries the conversions applied,
the natural-map residual (its ``residuals``, judged by
:func:`solvers.verdict.verdict`) and the Signorini/cone/dissipation measures
of :func:`solvers.frictional.fc_residuals` (its ``measures``).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem
from solvers.fitting import ProblemKind, Route, fit, fitting_backends, register_kind
from solvers.frictional import FrictionalContact, GlobalFrictionalContact, residuals_and_velocity
from solvers.problems import LCP, QP, FrictionBlocks, SOCBlocks
from solvers.result import RawSolution, SolverResult
from solvers.verdict import verdict

GLOBAL_TO_LOCAL = "global frictional contact -> local (W = H' M^-1 H)"
FC_CCP_TO_SOC_QP = "frictional contact (ccp, soc) -> qp with second-order cones"
FC_CCP_TO_QP = "frictional contact (ccp, polyhedral cone) -> qp with edge rows"
FC_COULOMB_TO_LCP = "frictional contact (coulomb, box/soc) -> lcp with friction blocks"

_QP_PSD = {"accepts_qp": True, "equality_only": False, "requires_definite": False}
_NATIVE = Route({"accepts_fc": True})
_NATIVE_COULOMB = Route({"accepts_fc": True, "solves_coulomb": True})
for _kind in (
    ProblemKind(
        "fc_ccp_soc",
        "frictional-contact CCP with the exact cone",
        (_NATIVE, Route({**_QP_PSD, "supports_soc": True}, (FC_CCP_TO_SOC_QP,))),
    ),
    ProblemKind(
        "fc_ccp_poly",
        "frictional-contact CCP with a polyhedral cone",
        (_NATIVE, Route(_QP_PSD, (FC_CCP_TO_QP,))),
    ),
    ProblemKind(
        "fc_coulomb",
        "Coulomb frictional-contact problem with the exact cone or the box",
        (
            _NATIVE_COULOMB,
            Route({"accepts_lcp": True, "supports_friction_blocks": True}, (FC_COULOMB_TO_LCP,)),
        ),
    ),
    ProblemKind(
        "fc_coulomb_pyramid",
        "Coulomb frictional-contact problem with a pyramid",
        (_NATIVE_COULOMB,),
    ),
    ProblemKind(
        "fc_wide_ccp",
        "frictional-contact CCP with torsional/rolling rows (wide cones)",
        (Route({"accepts_fc_wide": True}),),
    ),
    ProblemKind(
        "fc_wide_coulomb",
        "Coulomb frictional-contact problem with torsional/rolling rows (wide cones)",
        (Route({"accepts_fc_wide": True, "solves_coulomb": True}),),
    ),
):
    register_kind(_kind)


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
    problem: FrictionalContact | GlobalFrictionalContact,
    be: Backend,
    opts: SolveOptions,
    *,
    solve: Callable[..., SolverResult],
    call: Callable[[Callable[[], RawSolution], int], RawSolution],
) -> SolverResult:
    """Route ``problem`` to backend ``be`` (see the module docstring).

    ``solve`` solves a converted QP or LCP and ``call`` runs the backend, both
    passed in by :func:`solvers.solve` (which imports this module).
    """
    convs: list[str] = []
    t0 = time.perf_counter()
    if isinstance(problem, GlobalFrictionalContact):
        problem = problem.to_local()
        convs.append(GLOBAL_TO_LOCAL)
    answer = fit(be, problem)
    if not answer.ok:
        raise IncompatibleProblem(
            f"{answer.reason}; fitting backends: "
            f"{', '.join(fitting_backends(problem)) or 'none installed'}"
        )
    t_conv = time.perf_counter() - t0
    if not answer.conversions:
        be.check_fc(problem)  # type: ignore[attr-defined]
        raw = call(lambda: be.solve_fc(problem, opts), problem.n)  # type: ignore[attr-defined]
    else:
        how = answer.conversions[0]
        convs.append(how)
        sub: QP | LCP = to_lcp(problem) if how == FC_COULOMB_TO_LCP else to_qp(problem)
        t_conv = time.perf_counter() - t0
        res = solve(
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
    w = None
    measures: dict[str, float] = {"natural_map": float("nan")}
    if finite:
        measures, w = residuals_and_velocity(problem, r)  # w = W r + q, computed once
    residuals = {"natural_map": measures["natural_map"]}
    judged = verdict(raw.status, residuals, opts.tol, be.tolerance.accuracy, problem.q)
    status = judged.status
    if not finite and status in ("optimal", "optimal_inaccurate"):
        status = "numerical_error"
    return SolverResult(
        r,
        None,
        status,
        raw.message + judged.note,
        raw.iterations,
        raw.setup_time,
        raw.solve_time,
        # einsum: no BLAS call (its threads' start-up costs ms on a loaded machine)
        float(np.einsum("i,i->", r, w)) if w is not None else float("nan"),
        residuals,
        be.name,
        convs,
        w=w,
        plausible=judged.plausible and finite,
        measures=measures,
    )
