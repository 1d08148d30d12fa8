"""Canonical problem forms: the quadratic program :class:`QP` and the box LCP :class:`LCP`.

Both are plain data validated at construction: shapes are normalised, numbers
must be finite where the form requires it, and an error names the field, its
shape and what was expected.  Matrices are stored as ``scipy.sparse`` (CSC for
the QP, as OSQP expects; CSR for the LCP, the row-wise layout Gauss--Seidel
sweeps).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal, TypeAlias

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from solvers.errors import ProblemError

Matrix: TypeAlias = sp.spmatrix | sp.sparray | NDArray[np.float64]

_SYMMETRY_RTOL = 1e-10


def _as_sparse(name: str, value: object, shape: tuple[int, int] | None, fmt: str) -> sp.csc_matrix:
    try:
        mat = (
            sp.csc_matrix(value, dtype=np.float64)
            if fmt == "csc"
            else sp.csr_matrix(value, dtype=np.float64)
        )
    except (TypeError, ValueError) as err:
        raise ProblemError(name, f"cannot be read as a float matrix ({err})") from err
    if shape is not None and mat.shape != shape:
        raise ProblemError(name, f"has shape {mat.shape}, expected {shape}")
    if not np.all(np.isfinite(mat.data)):
        raise ProblemError(name, "contains NaN or infinite entries; every entry must be finite")
    mat.eliminate_zeros()
    mat.sort_indices()
    return mat


def _as_vector(name: str, value: ArrayLike, n: int, *, finite: bool) -> NDArray[np.float64]:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 2 and 1 in arr.shape:
        arr = arr.reshape(-1)
    if arr.shape != (n,):
        raise ProblemError(name, f"has shape {arr.shape}, expected ({n},)")
    if np.any(np.isnan(arr)):
        raise ProblemError(name, "contains NaN")
    if finite and not np.all(np.isfinite(arr)):
        raise ProblemError(name, "contains infinite entries; every entry must be finite")
    return arr.copy()


def _index_array(
    name: str, value: ArrayLike, shape_tail: tuple[int, ...], n: int
) -> NDArray[np.int64]:
    arr = np.asarray(value)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ProblemError(name, f"must hold integer indices, got dtype {arr.dtype}")
    arr = (
        arr.astype(np.int64).reshape((-1, *shape_tail))
        if arr.size
        else np.zeros((0, *shape_tail), np.int64)
    )
    if arr.size and (arr.min() < 0 or arr.max() >= n):
        raise ProblemError(
            name, f"indices must lie in [0, {n}), got range [{arr.min()}, {arr.max()}]"
        )
    return arr


def _check_bounds(lname: str, uname: str, lo: NDArray[np.float64], hi: NDArray[np.float64]) -> None:
    bad = np.flatnonzero(lo > hi)
    if bad.size:
        i = int(bad[0])
        raise ProblemError(
            f"{lname}/{uname}",
            f"{lname}[{i}] = {lo[i]} exceeds {uname}[{i}] = {hi[i]} "
            f"({bad.size} such rows); need {lname} <= {uname}",
        )


def is_symmetric(mat: sp.spmatrix, rtol: float = _SYMMETRY_RTOL) -> bool:
    """Whether a sparse matrix equals its transpose up to ``rtol * max|entry|``."""
    if mat.shape[0] != mat.shape[1]:
        return False
    diff = (mat - mat.T).tocoo()
    scale = max(float(np.abs(mat.data).max()) if mat.nnz else 0.0, 1.0)
    return bool(diff.nnz == 0 or np.abs(diff.data).max() <= rtol * scale)


@dataclass(frozen=True, eq=False)
class SOCBlocks:
    """Second-order (Coulomb) cone constraints on QP variables.

    For every contact ``i``:

    .. math:: \\| x_{t_i} \\| \\le \\mu_i \\, x_{n_i}

    Parameters
    ----------
    normal
        ``(nc,)`` index of the normal component of each contact in ``x``.
    tangent
        ``(nc, 2)`` indices of the two tangential components in ``x``.
    mu
        ``(nc,)`` friction coefficients [-], non-negative.
    """

    normal: NDArray[np.int64]
    tangent: NDArray[np.int64]
    mu: NDArray[np.float64]

    def validated(self, n: int) -> SOCBlocks:
        """Return a copy with arrays normalised and checked against ``n`` variables."""
        normal = _index_array("soc.normal", self.normal, (), n)
        tangent = _index_array("soc.tangent", self.tangent, (2,), n)
        if tangent.shape[0] != normal.shape[0]:
            raise ProblemError(
                "soc.tangent",
                f"has {tangent.shape[0]} rows, expected {normal.shape[0]} (one per contact)",
            )
        mu = _as_vector("soc.mu", self.mu, normal.shape[0], finite=True)
        if np.any(mu < 0):
            raise ProblemError("soc.mu", "friction coefficients must be >= 0")
        used = np.concatenate([normal, tangent.ravel()])
        if np.unique(used).size != used.size:
            raise ProblemError("soc", "a variable appears in more than one cone slot")
        return SOCBlocks(normal, tangent, mu)

    @property
    def count(self) -> int:
        """Number of cones ``nc``."""
        return int(self.normal.shape[0])


class QP:
    """Convex quadratic program in OSQP form.

    .. math::

        \\min_x \\tfrac12 x^\\top P x + q^\\top x
        \\quad \\text{s.t.} \\quad l \\le A x \\le u, \\qquad
        \\|x_{t_i}\\| \\le \\mu_i x_{n_i} \\ (\\text{optional cones})

    Parameters
    ----------
    P
        ``(n, n)`` symmetric positive semidefinite cost matrix (sparse or dense).
    q
        ``(n,)`` linear cost.
    A
        ``(m, n)`` constraint matrix, or ``None`` for no linear constraints.
    l, u
        ``(m,)`` lower / upper bounds, ``-inf`` / ``+inf`` allowed; defaults
        ``-inf`` / ``+inf``.  Rows with ``l == u`` are equalities.
    soc
        Optional :class:`SOCBlocks` (exact Coulomb cones on ``x``).

    Notes
    -----
    Multipliers follow OSQP: ``P x + q + A^T y = 0`` at a solution (plus the
    cone term), ``y_i > 0`` when row ``i`` is active at its upper bound and
    ``y_i < 0`` at its lower bound.
    """

    def __init__(
        self,
        P: Matrix,
        q: ArrayLike,
        A: Matrix | None = None,
        l: ArrayLike | None = None,
        u: ArrayLike | None = None,
        soc: SOCBlocks | None = None,
    ) -> None:
        q_arr = np.asarray(q, dtype=np.float64).reshape(-1)
        n = q_arr.shape[0]
        self.P = _as_sparse("P", P, (n, n), "csc")
        if not is_symmetric(self.P):
            raise ProblemError(
                "P", "must be symmetric; pass (P + P.T) / 2 if only one triangle is meant"
            )
        self.q = _as_vector("q", q_arr, n, finite=True)
        if A is None:
            if l is not None or u is not None:
                raise ProblemError(
                    "A", "is None but bounds l/u were given; pass A (e.g. identity for bounds on x)"
                )
            self.A = sp.csc_matrix((0, n))
        else:
            self.A = _as_sparse("A", A, None, "csc")
            if self.A.shape[1] != n:
                raise ProblemError(
                    "A", f"has {self.A.shape[1]} columns, expected n = {n} (length of q)"
                )
        m = self.A.shape[0]
        self.l = _as_vector("l", np.full(m, -np.inf) if l is None else l, m, finite=False)
        self.u = _as_vector("u", np.full(m, np.inf) if u is None else u, m, finite=False)
        _check_bounds("l", "u", self.l, self.u)
        if np.any(self.l == np.inf) or np.any(self.u == -np.inf):
            raise ProblemError("l/u", "l = +inf or u = -inf makes a row infeasible by construction")
        self.soc = soc.validated(n) if soc is not None else None

    @property
    def n(self) -> int:
        """Number of variables."""
        return int(self.q.shape[0])

    @property
    def m(self) -> int:
        """Number of linear constraint rows."""
        return int(self.A.shape[0])

    @cached_property
    def P_upper(self) -> sp.csc_matrix:
        """Upper triangle of ``P`` (CSC), computed once per problem (OSQP's input)."""
        return sp.triu(self.P, format="csc")

    @property
    def is_equality_only(self) -> bool:
        """Every row is an equality ``l == u`` and there are no cones."""
        return self.soc is None and bool(np.all(self.l == self.u))

    def bound_rows(self) -> NDArray[np.int64] | None:
        """Variable index of every row if ``A`` selects single variables with coefficient 1.

        Returns ``None`` unless each row of ``A`` is a distinct unit row
        ``e_j^T`` (bounds on variables).  Variables without a row are free.
        """
        A = self.A.tocsr()
        if A.nnz != self.m or np.any(np.diff(A.indptr) != 1) or not np.all(A.data == 1.0):
            return None
        cols = A.indices.astype(np.int64)
        if np.unique(cols).size != cols.size:
            return None
        return cols

    def objective(self, x: NDArray[np.float64]) -> float:
        """Cost ``1/2 x'Px + q'x`` at ``x``."""
        return float(0.5 * x @ (self.P @ x) + self.q @ x)

    @classmethod
    def from_standard(
        cls,
        P: Matrix,
        q: ArrayLike,
        G: Matrix | None = None,
        h: ArrayLike | None = None,
        A: Matrix | None = None,
        b: ArrayLike | None = None,
        lb: ArrayLike | None = None,
        ub: ArrayLike | None = None,
    ) -> QP:
        """Build from the qpsolvers form ``G x <= h, A x = b, lb <= x <= ub``.

        Rows are stacked as ``[G; A; I]`` with bounds ``[-inf, h]``, ``[b, b]``
        and ``[lb, ub]``, so the OSQP multipliers ``y`` split back into the
        qpsolvers ones as ``z = y[:mG]``, ``y_eq = y[mG:mG+mA]``,
        ``z_box = y[mG+mA:]``.
        """
        q_arr = np.asarray(q, dtype=np.float64).reshape(-1)
        n = q_arr.shape[0]
        blocks: list[sp.csc_matrix] = []
        lows: list[NDArray[np.float64]] = []
        ups: list[NDArray[np.float64]] = []
        if (G is None) != (h is None):
            raise ProblemError("G/h", "give both G and h or neither")
        if (A is None) != (b is None):
            raise ProblemError("A/b", "give both A and b or neither")
        if G is not None:
            Gm = _as_sparse("G", G, None, "csc")
            hv = _as_vector("h", h, Gm.shape[0], finite=False)  # type: ignore[arg-type]
            blocks.append(Gm)
            lows.append(np.full(Gm.shape[0], -np.inf))
            ups.append(hv)
        if A is not None:
            Am = _as_sparse("A", A, None, "csc")
            bv = _as_vector("b", b, Am.shape[0], finite=True)  # type: ignore[arg-type]
            blocks.append(Am)
            lows.append(bv)
            ups.append(bv)
        if lb is not None or ub is not None:
            lbv = _as_vector("lb", np.full(n, -np.inf) if lb is None else lb, n, finite=False)
            ubv = _as_vector("ub", np.full(n, np.inf) if ub is None else ub, n, finite=False)
            blocks.append(sp.identity(n, format="csc"))
            lows.append(lbv)
            ups.append(ubv)
        if not blocks:
            return cls(P, q_arr)
        for blk in blocks:
            if blk.shape[1] != n:
                raise ProblemError(
                    "G/A", f"constraint matrix has {blk.shape[1]} columns, expected {n}"
                )
        return cls(
            P, q_arr, sp.vstack(blocks, format="csc"), np.concatenate(lows), np.concatenate(ups)
        )

    def __repr__(self) -> str:
        cones = f", soc={self.soc.count}" if self.soc is not None else ""
        return f"QP(n={self.n}, m={self.m}, nnz(P)={self.P.nnz}, nnz(A)={self.A.nnz}{cones})"


@dataclass(frozen=True, eq=False)
class FrictionBlocks:
    """Per-contact structure of an LCP: friction bounds that follow the normal impulse.

    For contact ``i`` the rows ``tangent[i]`` of ``z`` are bounded by the
    normal impulse ``z[normal[i]]``:

    - ``cone="box"``: ``-mu_i z_n <= z_t,k <= mu_i z_n`` for each direction
      (ArtiSynth notes, §0.16 box friction);
    - ``cone="disc"``: ``||z_t|| <= mu_i z_n`` (``k == 2``), projected onto
      the disc.

    The ``lo``/``hi`` entries an :class:`LCP` stores for tangent rows are
    ignored; the complementarity condition for a tangent row is the box/disc
    one with these moving bounds (a disc row's ``w_t`` must be anti-parallel
    to ``z_t`` when ``z_t`` is on the rim: maximal dissipation).

    Parameters
    ----------
    normal
        ``(nc,)`` index of each contact's normal row.
    tangent
        ``(nc, k)`` indices of its tangential rows.
    mu
        ``(nc,)`` friction coefficients [-].
    cone
        ``"box"`` or ``"disc"``.
    """

    normal: NDArray[np.int64]
    tangent: NDArray[np.int64]
    mu: NDArray[np.float64]
    cone: Literal["box", "disc"] = "box"

    def validated(self, n: int) -> FrictionBlocks:
        """Return a copy with arrays normalised and checked against ``n`` rows."""
        normal = _index_array("blocks.normal", self.normal, (), n)
        tangent = np.asarray(self.tangent)
        k = tangent.shape[1] if tangent.ndim == 2 else 1
        tangent = _index_array("blocks.tangent", tangent, (k,), n)
        if tangent.shape[0] != normal.shape[0]:
            raise ProblemError(
                "blocks.tangent", f"has {tangent.shape[0]} rows, expected {normal.shape[0]}"
            )
        mu = _as_vector("blocks.mu", self.mu, normal.shape[0], finite=True)
        if np.any(mu < 0):
            raise ProblemError("blocks.mu", "friction coefficients must be >= 0")
        if self.cone not in ("box", "disc"):
            raise ProblemError("blocks.cone", f"must be 'box' or 'disc', got {self.cone!r}")
        if self.cone == "disc" and k != 2:
            raise ProblemError(
                "blocks.tangent", f"cone='disc' needs 2 tangent rows per contact, got {k}"
            )
        used = np.concatenate([normal, tangent.ravel()])
        if np.unique(used).size != used.size:
            raise ProblemError("blocks", "a row appears in more than one block slot")
        return FrictionBlocks(normal, tangent, mu, self.cone)

    @property
    def count(self) -> int:
        """Number of contacts ``nc``."""
        return int(self.normal.shape[0])

    def row_owner(self, n: int) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """For each of ``n`` rows: the normal row bounding it (-1 if none) and its ``mu``."""
        owner = np.full(n, -1, dtype=np.int64)
        mu_row = np.zeros(n)
        owner[self.tangent.ravel()] = np.repeat(self.normal, self.tangent.shape[1])
        mu_row[self.tangent.ravel()] = np.repeat(self.mu, self.tangent.shape[1])
        return owner, mu_row


class LCP:
    """Box (mixed) linear complementarity problem.

    Find ``z`` with ``w = M z + q`` and ``lo <= z <= hi`` such that for every row

    - ``z_i = lo_i``  implies ``w_i >= 0``,
    - ``z_i = hi_i``  implies ``w_i <= 0``,
    - ``lo_i < z_i < hi_i`` implies ``w_i = 0``.

    ``lo = 0, hi = inf`` is the standard LCP ``0 <= z ⟂ w >= 0``; ``lo = -inf,
    hi = inf`` makes row ``i`` a free variable with ``w_i = 0`` (an equality).

    Parameters
    ----------
    M
        ``(n, n)`` matrix, sparse or dense (stored as CSR).
    q
        ``(n,)`` vector.
    lo, hi
        ``(n,)`` bounds; defaults ``0`` and ``+inf``.
    blocks
        Optional :class:`FrictionBlocks` whose tangent-row bounds follow the
        normal impulse.
    """

    def __init__(
        self,
        M: Matrix,
        q: ArrayLike,
        lo: ArrayLike | None = None,
        hi: ArrayLike | None = None,
        blocks: FrictionBlocks | None = None,
    ) -> None:
        q_arr = np.asarray(q, dtype=np.float64).reshape(-1)
        n = q_arr.shape[0]
        self.M = _as_sparse("M", M, (n, n), "csr")
        self.q = _as_vector("q", q_arr, n, finite=True)
        self.lo = _as_vector("lo", np.zeros(n) if lo is None else lo, n, finite=False)
        self.hi = _as_vector("hi", np.full(n, np.inf) if hi is None else hi, n, finite=False)
        self.blocks = blocks.validated(n) if blocks is not None else None
        if self.blocks is not None:
            # Tangent-row bounds come from the block; store the widest box so checks ignore them.
            t = self.blocks.tangent.ravel()
            self.lo[t] = -np.inf
            self.hi[t] = np.inf
            if np.any(self.lo[self.blocks.normal] < 0):
                raise ProblemError(
                    "lo", "normal rows of friction blocks need lo >= 0 (mu * z_n bounds friction)"
                )
        _check_bounds("lo", "hi", self.lo, self.hi)
        if np.any(self.lo == np.inf) or np.any(self.hi == -np.inf):
            raise ProblemError("lo/hi", "lo = +inf or hi = -inf leaves no admissible z")

    @property
    def n(self) -> int:
        """Number of rows / unknowns."""
        return int(self.q.shape[0])

    @property
    def is_standard(self) -> bool:
        """``lo == 0``, ``hi == inf`` and no friction blocks."""
        return self.blocks is None and bool(np.all(self.lo == 0.0) and np.all(self.hi == np.inf))

    @property
    def free_rows(self) -> NDArray[np.int64]:
        """Rows with ``lo = -inf``, ``hi = +inf`` outside friction blocks (``w_i = 0``)."""
        free = (self.lo == -np.inf) & (self.hi == np.inf)
        if self.blocks is not None:
            free[self.blocks.tangent.ravel()] = False
        return np.flatnonzero(free).astype(np.int64)

    @property
    def is_symmetric(self) -> bool:
        """Whether ``M`` is symmetric."""
        return is_symmetric(self.M)

    def w(self, z: NDArray[np.float64]) -> NDArray[np.float64]:
        """``w = M z + q``."""
        return np.asarray(self.M @ z + self.q)

    def __repr__(self) -> str:
        blk = f", blocks={self.blocks.count} {self.blocks.cone}" if self.blocks is not None else ""
        return f"LCP(n={self.n}, nnz(M)={self.M.nnz}{blk})"
