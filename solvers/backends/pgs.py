"""Projected Gauss--Seidel (PGS) with successive over-relaxation for box/mixed LCPs.

Sweeps rows in order (ArtiSynth notes, §0.15, eq. (0.17)), projecting each update
onto its bounds; friction rows of a :class:`~solvers.problems.FrictionBlocks`
are bounded by ``mu`` times the current normal impulse (box, ArtiSynth notes §0.16)
or projected onto the friction disc.  The solve stops with ``optimal`` once
the natural-map residual ``max |z - Pi(z - w)|`` is at most ``tol`` and with
``max_iterations`` (never ``optimal``) when the sweep cap is reached first.

The stopping test is absolute: entry ``i`` of the residual is ``z_i`` [the
row's impulse unit] minus its projection, with ``w_i = (M z + q)_i`` (a
velocity for contact rows) inside; there is no scaling by ``||z||`` or
``||q||``.  On contact problems whose impulses and free velocities are of
order one or less (a 200-box pile: ``||z||_inf`` 0.7 N s, median normal
impulse 1e-2 N s, ``||q||_inf`` 1.3 m/s) a relative test
``tol * max(1, ||z||_inf)`` would be the same test.

Redundant contacts (four corners of a face carry three degrees of freedom)
make ``M`` singular, and Gauss--Seidel then converges slowly in ``z``: on a
landed 200-box pile the residual sits for thousands of sweeps at 1e-5 on a few
rows while their impulses drift along a null-space direction of ``M`` by
~3e-6 N s per sweep, until a bound is reached and the next plateau begins.
The frictionless subproblem of the same step (a symmetric PSD LCP, where PGS
provably converges) behaves alike: 52 sweeps to 1e-4, no 1e-6 in 20000.  So
``tol = 1e-6`` is out of reach of PGS on piles within its sweep cap, and it
says so with ``max_iterations``; ``benchmarks/bench_contact.py`` measures the
sweeps per tolerance.

Settings (keywords of :func:`solvers.solve`): ``omega`` (SOR factor in
``(0, 2)``, default 1.0), ``check_every`` (sweeps between checks of the time
limit and of the running residual estimate, default 8; the exact residual is
evaluated only when the estimate of the last sweep is within ``10 tol``).  ``max_iter`` counts
sweeps (default 10000).  The inner loop is compiled with numba.

QPs reach PGS through the layer's conversions, named in ``result.conversions``:
a QP whose rows are bounds on single variables (``A = I`` or absent) is the box
LCP ``(P, q)``; a QP with SPD ``P`` and general rows becomes an LCP in its row
multipliers (ArtiSynth notes, §0.3).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.problems import LCP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance


class PGSBackend(Backend):
    """Projected Gauss--Seidel / SOR, numba-compiled sweeps over CSR rows."""

    name = "pgs"
    description = "projected Gauss-Seidel with SOR (box/mixed LCP, box and disc friction)"
    kind = "iterative"
    required_modules = ("numba",)
    accepts_lcp = True
    supports_box_lcp = True
    supports_friction_blocks = True
    supports_warm_start = True
    supports_time_limit = True
    # Gauss--Seidel reaches 1e-6 on resting piles within a few sweeps, while tighter requests
    # run into the sweep cap on redundant contacts (module docstring): ask for what it reaches.
    tolerance = Tolerance(1e-6, request=1e-6)

    def solve_lcp(self, lcp: LCP, opts: SolveOptions) -> RawSolution:
        from solvers.backends.pgs_kernel import contact_blocks, natural_residual, pgs_sweeps

        settings = dict(opts.settings)
        omega = float(settings.pop("omega", 1.0))
        check_every = int(settings.pop("check_every", 8))
        if settings:
            raise ProblemError(
                "backend_settings",
                f"pgs does not know {sorted(settings)}; it takes omega and check_every",
            )
        if not 0.0 < omega < 2.0:
            raise ProblemError("omega", f"the SOR factor must lie in (0, 2), got {omega}")
        if check_every < 1:
            raise ProblemError("check_every", f"must be >= 1, got {check_every}")
        max_iter = 10000 if opts.max_iter is None else int(opts.max_iter)

        t0 = time.perf_counter()
        M = lcp.M
        diag = M.diagonal()
        loose = decoupled_rows(M, diag)
        indptr = M.indptr.astype(np.int64)
        indices = M.indices.astype(np.int64)
        data = M.data
        owner = np.full(lcp.n, -1, dtype=np.int64)
        mu_row = np.zeros(lcp.n)
        unit_a = np.arange(lcp.n, dtype=np.int64)
        unit_b = np.full(lcp.n, -1, dtype=np.int64)
        if lcp.blocks is not None:
            owner, mu_row = lcp.blocks.row_owner(lcp.n)
            if lcp.blocks.cone == "disc":
                t = lcp.blocks.tangent
                keep = np.ones(lcp.n, dtype=bool)
                keep[t[:, 1]] = False
                unit_b[t[:, 0]] = t[:, 1]
                unit_a, unit_b = unit_a[keep], unit_b[keep]
        step = np.zeros(unit_a.size)
        pairs = unit_b >= 0
        if np.any(pairs):
            a, b = unit_a[pairs], unit_b[pairs]
            off = np.abs(np.asarray(M[a, b]).reshape(-1))
            # a disc pair with both rows decoupled is not swept (its step is never used)
            step[pairs] = 1.0 / np.maximum(np.maximum(diag[a], diag[b]) + off, 1e-300)
        # the units that are swept: all but the decoupled ones, set in closed form
        swept = ~(np.isin(unit_a, loose) & ((unit_b < 0) | np.isin(unit_b, loose)))
        sweep_a, sweep_b, sweep_step = unit_a[swept], unit_b[swept], step[swept]
        sweep_a, sweep_b, sweep_c, sweep_step = contact_units(
            lcp, M, diag, loose, sweep_a, sweep_b, sweep_step
        )
        block = np.zeros((sweep_a.size, 9))
        contact_blocks(indptr, indices, data, sweep_a, sweep_b, sweep_c, block)
        fixed = _Decoupled(lcp, loose, owner, mu_row, unit_a, unit_b, opts.tol)
        z = np.zeros(lcp.n) if opts.x0 is None else np.array(opts.x0, dtype=np.float64)
        if z.shape != (lcp.n,):
            raise ProblemError("warm_start", f"has shape {z.shape}, expected ({lcp.n},)")
        np.clip(z, lcp.lo, lcp.hi, out=z)
        args = (indptr, indices, data, lcp.q, lcp.lo, lcp.hi, owner, mu_row, unit_a, unit_b)
        t1 = time.perf_counter()

        sweeps = 0
        unbounded = fixed.set(z)
        residual = natural_residual(*args, z)
        status = "optimal" if residual <= opts.tol else "max_iterations"
        while residual > opts.tol and unbounded < 0:
            if sweeps >= max_iter:
                status = "max_iterations"
                break
            if opts.time_limit is not None and time.perf_counter() - t1 > opts.time_limit:
                status = "time_limit"
                break
            chunk = min(check_every, max_iter - sweeps)
            estimate = pgs_sweeps(
                indptr,
                indices,
                data,
                diag,
                lcp.q,
                lcp.lo,
                lcp.hi,
                owner,
                mu_row,
                sweep_a,
                sweep_b,
                sweep_c,
                block,
                sweep_step,
                z,
                omega,
                chunk,
            )
            sweeps += chunk
            # the exact residual costs a sweep: evaluate it once the last sweep's running
            # estimate (pessimistic: it sees the iterates before their updates) is within
            # 10 tol, and at the cap
            if estimate <= 10.0 * opts.tol or sweeps >= max_iter or not np.isfinite(estimate):
                unbounded = fixed.set(z)
                residual = natural_residual(*args, z)
            if not np.isfinite(residual):
                status = "numerical_error"
                break
        else:
            status = "optimal" if unbounded < 0 else status
        t2 = time.perf_counter()
        msg = f"pgs: natural-map residual {residual:.3e} after {sweeps} sweeps (tol {opts.tol:g})"
        if loose.size:
            msg += f"; {loose.size} decoupled rows (M_ii = 0) set in closed form"
        if unbounded >= 0:
            status = "infeasible"
            msg += (
                f"; row {unbounded} is decoupled (M_ii = 0, no other row acts on it) but "
                f"q_i = {lcp.q[unbounded]:.3g} asks for an unbounded impulse: the LCP has no "
                "solution"
            )
        return RawSolution(z, None, status, msg, sweeps, t1 - t0, t2 - t1)


#: A contact's rows are solved together when friction can overturn its normal row's
#: update: ``mu |M_nt| > COUPLING M_nn`` for one of its tangent rows.
COUPLING = 0.5


def contact_units(
    lcp: LCP,
    M: Any,
    diag: NDArray[np.float64],
    loose: NDArray[np.int64],
    unit_a: NDArray[np.int64],
    unit_b: NDArray[np.int64],
    step: NDArray[np.float64],
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """Group a box-friction contact's rows into one unit solved exactly (pgs_kernel).

    Row by row, a friction update changes the normal row's ``w_n`` by ``M_nt mu z_n``
    against the normal update's own ``M_nn z_n``: where ``mu |M_nt| > M_nn`` (a hinged
    body whose contact slides far from the hinge: friction's lever dominates the
    normal's) the two undo each other every sweep and Gauss--Seidel cycles.  Such a
    contact (``mu |M_nt| > COUPLING M_nn``) is one unit, solved exactly; the others stay
    row by row, which costs less per sweep (on a 50-box drop a unit per contact made a
    sweep 2.8 times dearer for 11 % fewer sweeps).  A contact qualifies when its normal
    row is bounded by ``[0, inf)``, is not decoupled, ``mu > 0``, and it has one or two
    tangent rows that are not decoupled (decoupled tangent rows stay in closed form).
    The unit takes the normal row's place in the sweep order; ``unit_c`` is ``-2`` for
    the other units.
    """
    unit_c = np.full(unit_a.size, -2, dtype=np.int64)
    blocks = lcp.blocks
    if blocks is None or blocks.cone != "box" or blocks.tangent.shape[1] > 2:
        return unit_a, unit_b, unit_c, step
    normal, tangent = blocks.normal, blocks.tangent
    keep_t = ~np.isin(tangent, loose)
    coupling = np.zeros(normal.size)
    for k in range(tangent.shape[1]):
        coupling = np.maximum(coupling, np.abs(np.asarray(M[normal, tangent[:, k]]).ravel()))
    ok = (
        (blocks.mu * coupling > COUPLING * diag[normal])
        & ~np.isin(normal, loose)
        & (lcp.lo[normal] == 0.0)
        & (lcp.hi[normal] == np.inf)
        & (blocks.mu > 0.0)
        & keep_t.any(axis=1)
    )
    if not np.any(ok):
        return unit_a, unit_b, unit_c, step
    position = np.full(lcp.n, -1, dtype=np.int64)
    position[unit_a] = np.arange(unit_a.size)
    # the kept tangent rows of each qualifying contact, first kept one first
    first = np.where(keep_t[:, 0], tangent[:, 0], tangent[:, -1])
    second = np.full(normal.size, -1, dtype=np.int64)
    if tangent.shape[1] == 2:
        second = np.where(keep_t[:, 0] & keep_t[:, 1], tangent[:, 1], -1)
    at = position[normal[ok]]
    unit_b = unit_b.copy()
    unit_b[at] = first[ok]
    unit_c[at] = second[ok]
    drop = np.zeros(unit_a.size, dtype=bool)
    drop[position[first[ok]]] = True
    both = ok & (second >= 0)
    drop[position[second[both]]] = True
    keep = ~drop
    return unit_a[keep], unit_b[keep], unit_c[keep], step[keep]


#: A row whose diagonal is at most this fraction of the largest diagonal entry (zero, or
#: rounding of a zero: a Jacobian row of 1e-12 relative gives 1e-24) is *decoupled* when
#: no other entry of its row or column exceeds :data:`DECOUPLED_OFF` of that scale.
DECOUPLED_DIAG = 1e-24
DECOUPLED_OFF = 1e-12


def decoupled_rows(M: Any, diag: NDArray[np.float64]) -> NDArray[np.int64]:
    """The rows of ``M`` with a zero diagonal that no other row acts on, and none acts on.

    Such a row ``i`` (a friction direction in which nothing can move, e.g. out of the
    plane of a planar mechanism in reduced coordinates: its Jacobian row is zero) has
    ``w_i = q_i`` whatever ``z``, and its ``z_i`` changes no other ``w_j``: it is solved
    in closed form (:class:`_Decoupled`), not by a Gauss--Seidel division by ``M_ii``.

    Raises
    ------
    IncompatibleProblem
        For a negative diagonal entry, or a zero one whose row or column is not zero
        (``M`` is then not positive semidefinite, and Gauss--Seidel does not apply).
    """
    scale = float(np.max(np.abs(diag), initial=0.0))
    small = np.flatnonzero(diag <= DECOUPLED_DIAG * scale)
    if small.size == 0:
        return small.astype(np.int64)
    negative = small[diag[small] < -DECOUPLED_DIAG * scale]
    limit = DECOUPLED_OFF * scale
    A = sp.csr_matrix(M)
    rows = abs(A[small]).max(axis=1).toarray().reshape(-1)
    cols = abs(A.T.tocsr()[small]).max(axis=1).toarray().reshape(-1)
    coupled = small[(rows > limit) | (cols > limit)]
    bad = np.concatenate([negative, coupled])
    if bad.size:
        i = int(bad[0])
        raise IncompatibleProblem(
            f"pgs needs a positive diagonal of M (or a zero row and column); row {i} has "
            f"M_ii = {diag[i]:g} and is coupled to other rows ({bad.size} such rows); use "
            "'lemke' or a QP backend, or regularise M"
        )
    return small.astype(np.int64)


class _Decoupled:
    """Closed-form values of the decoupled rows (:func:`decoupled_rows`) given the others.

    With ``w_i = q_i`` the row's condition is ``z_i = Pi(z_i - q_i)`` on its bounds (for a
    friction row ``±mu z_n`` with the current normal impulse; for a disc pair whose two
    rows are decoupled the disc of radius ``mu z_n``): ``z_i`` at the lower bound when
    ``q_i > 0``, at the upper one when ``q_i < 0``, and the projection of 0 when
    ``|q_i| <= tol`` (its residual is then at most ``|q_i|``, and a free velocity that is
    zero up to rounding gives no impulse).
    """

    def __init__(
        self,
        lcp: LCP,
        loose: NDArray[np.int64],
        owner: NDArray[np.int64],
        mu_row: NDArray[np.float64],
        unit_a: NDArray[np.int64],
        unit_b: NDArray[np.int64],
        tol: float,
    ) -> None:
        whole = np.isin(unit_a, loose) & ((unit_b < 0) | np.isin(unit_b, loose))
        single = whole & (unit_b < 0)
        self.rows = unit_a[single]
        self.pair_a, self.pair_b = unit_a[whole & (unit_b >= 0)], unit_b[whole & (unit_b >= 0)]
        self.q, self.lo, self.hi = lcp.q, lcp.lo, lcp.hi
        self.owner, self.mu_row, self.tol = owner, mu_row, tol

    def set(self, z: NDArray[np.float64]) -> int:
        """Set the decoupled entries of ``z`` in place; the first row without a solution or -1."""
        i = self.rows
        if i.size:
            own = self.owner[i]
            friction = own >= 0
            radius = self.mu_row[i] * np.maximum(z[np.where(friction, own, 0)], 0.0)
            lo = np.where(friction, -radius, self.lo[i])
            hi = np.where(friction, radius, self.hi[i])
            q = self.q[i]
            value = np.where(q > self.tol, lo, np.where(q < -self.tol, hi, np.clip(0.0, lo, hi)))
            unbounded = np.flatnonzero(~np.isfinite(value))
            if unbounded.size:
                return int(i[unbounded[0]])
            z[i] = value
        a, b = self.pair_a, self.pair_b
        if a.size:
            radius = self.mu_row[a] * np.maximum(z[self.owner[a]], 0.0)
            qa, qb = self.q[a], self.q[b]
            norm = np.hypot(qa, qb)
            push = np.where(norm > self.tol, radius / np.maximum(norm, 1e-300), 0.0)
            z[a], z[b] = -push * qa, -push * qb
        return -1
