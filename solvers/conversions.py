"""Conversions between problem forms.

Every conversion returns the new problem and a function mapping its solution
back, and has a short name the layer records in ``SolverResult.conversions``.

- :func:`bound_qp_to_lcp`: ``min 1/2 x'Px + q'x, lo <= x <= hi`` is the box LCP
  ``(M, q) = (P, q)``; its ``w = Px + q`` is minus the OSQP multiplier.
- :func:`qp_dual` / :func:`qp_to_dual_lcp`: a QP with SPD ``P`` and general rows
  becomes an LCP in the row multipliers (ArtiSynth notes, §0.3):
  ``M = A P^-1 A^T``, ``q = -b - A P^-1 q_qp``, ``x = P^-1 (A^T lambda - q_qp)``.
- :func:`contact_qp_dual`: the primal contact QP ``min 1/2 v'Mv - f'v,
  l <= A v <= u`` with block-diagonal SPD ``M`` becomes a bound-constrained QP
  in the impulses (Sueda's notes, eqs. (1.83)-(1.84)).
- :func:`lcp_to_qp`: an LCP with symmetric PSD ``M`` (no friction blocks) is the
  bound-constrained QP ``min 1/2 z'Mz + q'z, lo <= z <= hi``.
- :func:`mixed_lcp_to_lcp`: free rows are eliminated by a Schur complement
  (ArtiSynth notes, §0.7).
- :func:`box_lcp_to_standard`: rows with one finite bound are shifted/flipped
  to ``0 <= s ⟂ w' >= 0``.
- :func:`cost_scaled`: a QP whose cost is far from unit scale is solved with
  its cost multiplied by ``1 / max diag(P)`` (same minimiser, multipliers
  scaled), so that solvers with absolute thresholds (infeasibility
  certificates) see a unit-scaled cost.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray
from scipy.sparse.csgraph import connected_components

from solvers.errors import IncompatibleProblem, ProblemError
from solvers.problems import LCP, QP, FrictionBlocks, Matrix

Vec = NDArray[np.float64]

BOUND_QP_TO_LCP = "bound-constrained qp -> box lcp (M = P)"
QP_TO_DUAL_LCP = "qp -> lcp in the row multipliers (ArtiSynth notes §0.3)"
LCP_TO_QP = "lcp -> qp (symmetric PSD M)"
MIXED_TO_LCP = "mixed lcp -> lcp (Schur complement, ArtiSynth notes §0.7)"
BOX_TO_STANDARD = "box lcp -> standard lcp (bound shift)"
COST_SCALING = "qp -> qp with cost scaled to max diag(P) = 1"

_BLOCK_LIMIT = 256


def spd_inverse(P: Matrix) -> sp.csr_matrix | spla.SuperLU:
    """Inverse of an SPD matrix: explicit and sparse when it is block diagonal.

    Returns a sparse matrix if every connected block has at most 256 rows
    (e.g. 6x6 rigid-body mass matrices), else the ``splu`` factorisation.
    Raises :class:`ProblemError` if a block is not positive definite.
    """
    Pc = sp.csr_matrix(P)
    n = Pc.shape[0]
    ncomp, labels = connected_components(Pc, directed=False)
    sizes = np.bincount(labels, minlength=ncomp)
    if sizes.max(initial=0) > _BLOCK_LIMIT:
        return spla.splu(sp.csc_matrix(Pc))
    order = np.argsort(labels, kind="stable")
    rows: list[NDArray[np.int64]] = []
    cols: list[NDArray[np.int64]] = []
    vals: list[Vec] = []
    for size in np.unique(sizes):
        comps = np.flatnonzero(sizes == size)
        idx = order[np.isin(labels[order], comps)].reshape(len(comps), size)
        r_idx = np.repeat(idx, size, axis=1)
        c_idx = np.tile(idx, (1, size))
        dense = np.asarray(Pc[r_idx.ravel(), c_idx.ravel()]).reshape(len(comps), size, size)
        try:
            np.linalg.cholesky(dense)
        except np.linalg.LinAlgError as err:
            raise ProblemError(
                "P", "must be symmetric positive definite for this conversion"
            ) from err
        inv = np.linalg.inv(dense)
        rows.append(r_idx.ravel())
        cols.append(c_idx.ravel())
        vals.append(inv.ravel())
    return sp.csr_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
    )


def _apply_inverse(inv: sp.csr_matrix | spla.SuperLU, B: Matrix) -> Matrix:
    if isinstance(inv, spla.SuperLU):
        dense = sp.csr_matrix(B).toarray() if sp.issparse(B) else np.asarray(B)
        return inv.solve(dense)
    return inv @ B


@dataclass
class QPDual:
    """The row-multiplier form of a QP with SPD ``P`` (ArtiSynth notes, §0.3).

    Dual variables ``lam`` (one per row side) satisfy the box LCP
    ``w = D lam + c``, ``lo <= lam <= hi``.  ``lam = -y`` (minus the OSQP
    multiplier): positive on a lower-bound row, negative on an upper-bound row.
    """

    D: sp.csr_matrix
    c: Vec
    lo: Vec
    hi: Vec
    recover: Callable[[Vec], tuple[Vec, Vec]]


def qp_dual(P: Matrix, q: Vec, A: Matrix, l: Vec, u: Vec) -> QPDual:
    """Dual of ``min 1/2 x'Px + q'x, l <= Ax <= u`` in the row multipliers.

    Equality rows give free multipliers, one-sided rows sign-constrained ones,
    two-sided rows one multiplier per side; rows with no finite bound drop out.
    ``recover(lam)`` returns ``(x, y)`` with OSQP-signed ``y``.
    """
    A = sp.csr_matrix(A)
    m = A.shape[0]
    eq = l == u
    lower = np.flatnonzero(~eq & np.isfinite(l))
    upper = np.flatnonzero(~eq & np.isfinite(u))
    equal = np.flatnonzero(eq)
    rows = np.concatenate([equal, lower, upper])
    b = np.concatenate([l[equal], l[lower], u[upper]])
    k_eq, k_lo = equal.size, lower.size
    lo = np.concatenate([np.full(k_eq, -np.inf), np.zeros(k_lo), np.full(upper.size, -np.inf)])
    hi = np.concatenate([np.full(k_eq, np.inf), np.full(k_lo, np.inf), np.zeros(upper.size)])
    Ad = A[rows]
    inv = spd_inverse(P)
    PinvAt = _apply_inverse(inv, Ad.T.tocsc())
    Pinvq = np.asarray(_apply_inverse(inv, q.reshape(-1, 1))).reshape(-1)
    D = sp.csr_matrix(Ad @ PinvAt)
    D = (D + D.T) * 0.5
    c = -b - np.asarray(Ad @ Pinvq).reshape(-1)

    def recover(lam: Vec) -> tuple[Vec, Vec]:
        x = np.asarray(PinvAt @ lam).reshape(-1) - Pinvq
        y = np.zeros(m)
        np.add.at(y, rows, -lam)
        return x, y

    return QPDual(D, c, lo, hi, recover)


def qp_to_dual_lcp(qp: QP) -> tuple[LCP, Callable[[Vec], tuple[Vec, Vec]]]:
    """Box LCP in the row multipliers of a QP with SPD ``P`` (ArtiSynth notes, §0.3)."""
    if qp.soc is not None:
        raise IncompatibleProblem("a QP with cones has no LCP form; use a cone-capable backend")
    dual = qp_dual(qp.P, qp.q, qp.A, qp.l, qp.u)
    return LCP(dual.D, dual.c, dual.lo, dual.hi), dual.recover


def contact_qp_dual(
    M: Matrix, f: Vec, A: Matrix, l: Vec, u: Vec
) -> tuple[QP, Callable[[Vec], tuple[Vec, Vec]]]:
    """Dual of the primal contact QP ``min 1/2 v'Mv - f'v  s.t.  l <= A v <= u``.

    ``M`` is SPD (block-diagonal rigid-body mass matrices are inverted block
    by block).  The dual is the bound-constrained QP

    .. math:: \\min_\\lambda \\tfrac12 \\lambda^\\top A M^{-1} A^\\top \\lambda
              - (b + A M^{-1} f)^\\top \\lambda, \\quad lo \\le \\lambda \\le hi

    (Sueda's notes, eq. (1.83), with the sign of ``b`` for ``A v >= b``), and
    ``v = M^{-1}(f + A^T \\lambda)`` (eq. (1.84)).  Returns the dual QP and
    ``recover(lam) -> (v, y)`` with OSQP-signed primal multipliers ``y``.
    """
    fv = np.asarray(f, dtype=np.float64)
    dual = qp_dual(M, -fv, A, np.asarray(l, float), np.asarray(u, float))
    n = dual.c.shape[0]
    return QP(dual.D, dual.c, sp.identity(n, format="csc"), dual.lo, dual.hi), dual.recover


def bound_qp_to_lcp(qp: QP) -> tuple[LCP, Callable[[Vec], tuple[Vec, Vec]]] | None:
    """Box LCP ``(P, q, lo, hi)`` of a QP whose rows are bounds on single variables.

    Returns ``None`` if ``A`` is not made of distinct unit rows.  Variables
    without a row are free.  ``recover(z) -> (x, y)`` with ``y = -(Pz + q)``
    on the bounded variables (OSQP sign).
    """
    cols = qp.bound_rows()
    if cols is None or qp.soc is not None:
        return None
    lo = np.full(qp.n, -np.inf)
    hi = np.full(qp.n, np.inf)
    lo[cols] = qp.l
    hi[cols] = qp.u
    lcp = LCP(qp.P, qp.q, lo, hi)

    def recover(z: Vec) -> tuple[Vec, Vec]:
        return z, -np.asarray(qp.P @ z + qp.q)[cols]

    return lcp, recover


def lcp_to_qp(lcp: LCP, check_psd: bool = True) -> tuple[QP, Callable[[Vec, Vec | None], Vec]]:
    """QP ``min 1/2 z'Mz + q'z, lo <= z <= hi`` of an LCP with symmetric PSD ``M``.

    Its KKT conditions are the LCP with ``w = Mz + q = -y``.  Friction blocks
    (bounds that depend on ``z``) have no QP form.  ``check_psd`` tests the
    smallest eigenvalue for ``n <= 2000`` (larger problems are left to the QP
    backend's own convexity check).
    """
    if lcp.blocks is not None:
        raise IncompatibleProblem(
            "an LCP with friction blocks (bounds that follow z_n) has no QP form; "
            "use 'pgs', or a QP with SOCBlocks on a cone-capable backend"
        )
    if not lcp.is_symmetric:
        raise IncompatibleProblem(
            "the LCP matrix M is not symmetric, so it is not the KKT system of a QP; "
            "use 'lemke' (standard/mixed LCP) or 'pgs'"
        )
    if check_psd and lcp.n <= 2000:
        eig_min = float(np.linalg.eigvalsh(lcp.M.toarray()).min()) if lcp.n else 0.0
        scale = max(float(np.abs(lcp.M.data).max(initial=0.0)), 1.0)
        if eig_min < -1e-9 * scale:
            raise IncompatibleProblem(
                f"the LCP matrix M is symmetric but indefinite (eigenvalue {eig_min:.3g}); "
                "the QP would be non-convex; use 'lemke' or 'pgs'"
            )
    n = lcp.n
    qp = QP(lcp.M, lcp.q, sp.identity(n, format="csc"), lcp.lo, lcp.hi)
    return qp, lambda x, y: x


@dataclass
class ReducedLCP:
    """An LCP on a subset ``keep`` of rows, with the map back to the full ``z``."""

    lcp: LCP
    keep: NDArray[np.int64]
    recover: Callable[[Vec], Vec]


def mixed_lcp_to_lcp(lcp: LCP) -> ReducedLCP:
    """Eliminate the free rows (``lo = -inf, hi = inf``, so ``w_F = 0``) by a Schur complement.

    With ``F`` free and ``S`` the other rows (ArtiSynth notes, §0.7):

    .. math::

        z_F = -M_{FF}^{-1}(q_F + M_{FS} z_S), \\qquad
        M' = M_{SS} - M_{SF} M_{FF}^{-1} M_{FS}, \\quad
        q' = q_S - M_{SF} M_{FF}^{-1} q_F.

    ``M_FF`` must be nonsingular.  Friction blocks are re-indexed onto ``S``.
    """
    F = lcp.free_rows
    S = np.setdiff1d(np.arange(lcp.n), F)
    M = lcp.M
    M_FF = sp.csc_matrix(M[F][:, F])
    try:
        lu = spla.splu(M_FF)
    except RuntimeError as err:
        raise IncompatibleProblem(
            f"the free-row block M_FF ({F.size}x{F.size}) is singular, so the mixed LCP cannot be "
            "reduced by a Schur complement; use 'pgs'"
        ) from err
    M_FS = M[F][:, S].toarray()
    M_SF = M[S][:, F]
    X = lu.solve(M_FS) if F.size else np.zeros((0, S.size))
    xq = lu.solve(lcp.q[F]) if F.size else np.zeros(0)
    M_red = M[S][:, S].toarray() - np.asarray(M_SF @ X)
    q_red = lcp.q[S] - np.asarray(M_SF @ xq).reshape(-1)
    blocks = None
    if lcp.blocks is not None:
        pos = np.full(lcp.n, -1)
        pos[S] = np.arange(S.size)
        b = lcp.blocks
        blocks = FrictionBlocks(pos[b.normal], pos[b.tangent], b.mu, b.cone)
    reduced = LCP(M_red, q_red, lcp.lo[S], lcp.hi[S], blocks)

    def recover(z_S: Vec) -> Vec:
        z = np.empty(lcp.n)
        z[S] = z_S
        z[F] = -xq - X @ z_S
        return z

    return ReducedLCP(reduced, S.astype(np.int64), recover)


def box_lcp_to_standard(lcp: LCP) -> tuple[LCP, Callable[[Vec], Vec]]:
    r"""Standard LCP of a box LCP without free rows or friction blocks.

    ``z = lo + s`` on rows with a finite lower bound and ``z = hi - s`` on rows
    with only a finite upper bound: with ``D = diag(±1)`` and ``c`` the bound,
    ``M' = D M D`` and ``q' = D (M c + q)``.  A row ``B`` with both bounds
    finite gets a second unknown ``t_B = w^-_B >= 0`` (the part of ``w``
    pushing against the upper bound), paired with the slack ``hi - lo - s``:

    .. math::

        \begin{pmatrix} M' & E \\ -E^\top & 0 \end{pmatrix}
        \begin{pmatrix} s \\ t \end{pmatrix} +
        \begin{pmatrix} q' \\ hi_B - lo_B \end{pmatrix} \ge 0,

    with ``E`` selecting the rows ``B``.  The map back returns ``z = c + D s``.
    """
    if lcp.blocks is not None:
        raise IncompatibleProblem("friction blocks have no standard-LCP form; use 'pgs'")
    fin_lo, fin_hi = np.isfinite(lcp.lo), np.isfinite(lcp.hi)
    if np.any(~fin_lo & ~fin_hi):
        raise IncompatibleProblem("free rows remain; apply mixed_lcp_to_lcp first")
    n = lcp.n
    d = np.where(fin_lo, 1.0, -1.0)
    c = np.where(fin_lo, lcp.lo, lcp.hi)
    D = sp.diags(d)
    M1 = sp.csr_matrix(D @ lcp.M @ D)
    q1 = d * (np.asarray(lcp.M @ c) + lcp.q)
    box = np.flatnonzero(fin_lo & fin_hi)
    if box.size:
        E = sp.csr_matrix((np.ones(box.size), (box, np.arange(box.size))), shape=(n, box.size))
        M1 = sp.bmat([[M1, E], [-E.T, None]], format="csr")
        q1 = np.concatenate([q1, lcp.hi[box] - lcp.lo[box]])
    return LCP(M1, q1), lambda s: c + d * s[:n]


#: a cost whose largest diagonal entry is at least this is left as it is
_SMALL_COST = 0.25


@dataclass(frozen=True)
class CostScaling:
    """The cost ``c (1/2 x'Px + q'x)`` of :func:`cost_scaled`: same ``x``, multipliers ``c y``."""

    c: float

    def y0(self, y: Vec | None) -> Vec | None:
        return None if y is None else np.asarray(y, dtype=np.float64) * self.c

    def y(self, y_scaled: Vec | None) -> Vec | None:
        return None if y_scaled is None else y_scaled / self.c

    def z_soc(self, z_scaled: Vec | None) -> Vec | None:
        return None if z_scaled is None else z_scaled / self.c


def cost_scaled(qp: QP) -> tuple[QP, CostScaling] | None:
    """``qp`` with its cost multiplied by ``c = 1 / max diag(P)``, or ``None`` if near unit scale.

    The minimiser and the feasible set are unchanged; every multiplier (rows and
    cones) is multiplied by ``c``.  Solvers whose infeasibility certificates and
    stopping tests use absolute thresholds (ProxQP: ``||P dx|| <= 1e-4``) misjudge
    a cost whose eigenvalues are all far below 1, such as the joint-space inertia of
    a chain of small links.  Only small costs are scaled (up): returns ``None``
    when ``max diag(P) >= 1/4`` or ``P`` has no positive diagonal entry (scaling
    large costs down made ProxQP fail on joint-friction steps it solves as posed).
    """
    top = float(np.max(qp.P.diagonal(), initial=0.0))
    if top <= 0.0 or top >= _SMALL_COST:
        return None
    c = 1.0 / top
    return QP(qp.P * c, qp.q * c, qp.A, qp.l, qp.u, qp.soc), CostScaling(c)
