"""Primal-dual interior point on the velocity form of the cone complementarity problem.

With the Delassus matrix factored as ``W = C D C'`` (``D = M^{-1}`` diagonal
and positive: maximal coordinates; or ``C = V Λ^{1/2}``, ``D = I`` from the
eigendecomposition of a small ``W``), the CCP ``K ∋ r ⟂ u = W r + q ∈ K*``
is the optimality condition of the strictly convex conic program in the
velocity change ``v = D C' r``

.. math:: \\min_v \\tfrac12 v' D^{-1} v \\quad \\text{s.t.} \\quad u = C v + q \\in K^*,

whose multiplier of the cone constraint is ``r``.  Each contact's exact cone
becomes the standard Lorentz cone ``L = {x_0 >= ||x_1||}`` by the scaling
``ũ = S u``, ``r = S r̃`` with ``S = diag(1, mu, mu)`` (``r̃' ũ = r' u``); a
polyhedral cone (pyramid, box) with generators ``g_j = (1, mu d_j)`` becomes
``k`` linear rows ``g_j' u >= 0`` with multipliers ``β_j >= 0``,
``r = Σ_j β_j g_j``; a unilateral scalar row is one linear row.  So the
problem is ``min 1/2 v'D^{-1}v`` s.t. ``s = Ĉ v + ŵ`` in a product of
Lorentz cones and half-lines, ``Ĉ = T' C``, ``ŵ = T' q``.

Mehrotra's predictor-corrector with Nesterov--Todd scaling (as in
Vandenberghe's CVXOPT ``coneqp``): per iteration one factorisation of the
normal matrix

.. math:: K = D^{-1} + Ĉ' \\, Θ \\, Ĉ, \\qquad Θ = \\text{blockdiag}(W_{NT}^{-2}),

(``nv x nv``: six unknowns per body, not three per contact; SPD) and two
solves.  The pattern of ``K`` is computed once per problem (the union of the
column sets of each cone's rows); its values are filled per iteration by a
compiled scatter (:func:`~solvers.backends.ipm_patterns.fill_normal`) and factored by the 6x6-block
Cholesky of :mod:`solvers.backends.block_cholesky` (the bodies' blocks; about
2.3x faster than ``qdldl``'s scalar LDL' on the 1000-box pile's ``K``, same
fill), or by ``qdldl`` when bilateral rows border ``K`` or the unknowns do not
come six by six, with the ordering computed once; a dense LU up to 64 unknowns.
The iteration count does not grow with the conditioning of ``W`` (redundant
contacts make ``W`` singular; ``K`` stays definite).  Stopping test: the
natural-map residual of :func:`~solvers.numerics.fc_kernels.natural_map` on
``r`` and ``u = W r + q`` (the same test as the other backends).

Warm start (:meth:`VelocityForm.impulse_point`): impulses ``r`` (the previous
step's, carried per persistent contact by the models) give the point
``v = D C' r``, ``s = Ĉ v + ŵ`` (primal feasible), ``z`` with ``T z = r`` (exact
cone ``z = S^{-1} r``; polyhedral cone the least-norm generator multipliers)
and ``y`` the bilateral rows' impulses (dual feasible: ``D^{-1} v = Ĉ'z + Gb'y``),
each block of ``s`` and ``z`` then pushed inside its cone by ``push`` times the
free velocity's scale (``z`` over the mean diagonal of ``W``).  The backend
returns impulses that already meet the tolerance as they are (no iteration),
starts from their point pushed by 3 times their natural map when that is at
most 0.1, and cold otherwise.  On
the 1000-box pile stacked at rest (12,112 contacts) a step then takes 0-2
iterations instead of 6; on landed 100- and 200-box piles, which still move,
11-18 instead of 18-23.  Centering the start (``s ∘ z = μ e`` per block) or
mixing it with the cold start was tried and took more iterations.

The pattern of ``K`` depends only on which bodies touch (not on the contacts'
order); the last pattern and its factorisation's ordering and symbolic
analysis are kept (``_SYMBOLIC``, one entry) and refactored for the next
problem with the same pattern: a pile at rest pays the analysis once.  No
scalar product on long vectors goes through BLAS (its thread start-up cost
milliseconds per call on a loaded machine): :mod:`solvers.backends.ipm_cones`.

This module is the driver: the problem lifted onto cones, the normal matrix
(:class:`Normal`), the velocity form and its warm start (:class:`VelocityForm`),
and the predictor-corrector loop (:func:`ipm_ccp`, compiled whole as
:func:`ccp_blocks`).  The normal matrix's sparse pattern is in
:mod:`solvers.backends.ipm_patterns`, the cone algebra in
:mod:`solvers.backends.ipm_cones`.

When ``K`` is factored by blocks (no bilateral rows) and the caller's residual is the
natural map through ``W``'s factor (:class:`FactorResidual`), the whole loop is one
compiled call (:func:`ccp_blocks`: the same kernels in the same order, so the same
iterates bit for bit; about 13 Python round trips of 10 kernel calls each saved per
200-box step).  The exact cone's ``Ĉ``, ``G_b``, ``T`` and ``E'`` are kept as CSR arrays
(:func:`~solvers.backends.ipm_patterns.select_soc`); the scipy matrices
(``VelocityForm.Ch`` ...) are made only when asked for.

The same Newton system at the last iterate (:attr:`VelocityForm.last`), with only the
free velocity moved by ``dq`` and the products ``s ∘ z`` held, is the derivative of
the central path: ``K dv = Ĉ'Θ(-T'dq)``, ``du = C dv`` (at a small barrier, the
active set's: a sticking contact's ``Θ`` is large, a separated one's small).  The
Coulomb law's Newton steps on De Saxcé's shift use it
(:meth:`solvers.backends.friction.IPMBackend._linearise`: the scaling recomputed at
``last``, one factorisation of :class:`Normal`, its solves), nothing else here.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from solvers.backends.block_cholesky import SHIFTS, BlockCholesky
from solvers.backends.block_cholesky import factor_shifted as chol_factor
from solvers.backends.block_cholesky import solve as chol_solve
from solvers.backends.ipm_cones import (
    abs_max,
    add_identity,
    apply_theta,
    cone_margin,
    dot,
    gap_after,
    jordan,
    jordan_div,
    max_step,
    nt_scaling,
    push_interior,
    recentre,
    scale,
    scale_inv,
)
from solvers.backends.ipm_patterns import (
    arrays_of,
    csr_of,
    fill_normal,
    normal_setup,
    same_pattern,
    select_soc,
)
from solvers.jit import njit
from solvers.numerics.csr import csr_mul, csr_tmul
from solvers.numerics.fc_kernels import factor_velocity, natural_map

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 2.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]
BVec = NDArray[np.bool_]


def _lift(problem, C, q):  # type: ignore[no-untyped-def]
    """``Ĉ = T' C``, ``ŵ = T' q``, the cone blocks and the map ``T`` back to ``r`` (sparse)."""
    import scipy.sparse as sp

    nc, n = problem.nc, problem.n
    uni = 3 * nc + np.flatnonzero(problem.row_lo == 0.0)
    bil = 3 * nc + np.flatnonzero(np.isinf(problem.row_lo))
    ms = uni.size
    mu = problem.mu
    if problem.cone == "soc":
        rows = np.arange(3 * nc)
        vals = np.column_stack([np.ones(nc), mu, mu]).ravel()
        T = sp.csr_matrix((vals, (rows, rows)), shape=(3 * nc + ms, n))
        bdim = np.full(nc, 3)
    else:
        d = problem.dirs
        k = d.shape[0]
        g = np.empty((nc, k, 3))
        g[:, :, 0] = 1.0
        g[:, :, 1:] = mu[:, None, None] * d[None, :, :]
        r_idx = np.repeat(np.arange(nc * k), 3)
        c_idx = (3 * np.repeat(np.arange(nc), k)[:, None] + np.arange(3)[None, :]).ravel()
        T = sp.csr_matrix((g.ravel(), (r_idx, c_idx)), shape=(nc * k + ms, n))
        bdim = np.ones(nc * k, dtype=np.int64)
    m_c = T.shape[0] - ms
    scal = sp.csr_matrix((np.ones(ms), (m_c + np.arange(ms), uni)), shape=T.shape)
    T = (T + scal).tocsr()
    Ch = (T @ C).tocsr()
    Ch.sort_indices()
    wh = np.asarray(T @ q)
    bptr = np.concatenate([[0], np.cumsum(np.concatenate([bdim, np.ones(ms, dtype=np.int64)]))])
    gdim = (
        np.concatenate(
            [
                np.full(nc, 3 if problem.cone == "soc" else bdim.size // max(nc, 1)),
                np.ones(ms, dtype=np.int64),
            ]
        )
        if nc
        else np.ones(ms, dtype=np.int64)
    )
    gptr = np.concatenate([[0], np.cumsum(gdim)]).astype(np.int64)
    gsoc = np.zeros(gptr.size - 1, dtype=np.bool_)
    if problem.cone == "soc":
        gsoc[:nc] = True
    G = sp.csr_matrix((np.ones(bil.size), (np.arange(bil.size), bil)), shape=(bil.size, n))
    return Ch, wh, bptr.astype(np.int64), T.T.tocsr(), (gptr, gsoc), T, G


def _select_soc(problem, C):  # type: ignore[no-untyped-def]
    """:func:`_lift` for the exact cone as sparse matrices (:func:`select_soc`'s arrays)."""
    n = problem.n
    ch, gb, tt, et, bptr, gsoc, rows, scale, bil = select_soc(
        *arrays_of(C), problem.mu, problem.row_lo, problem.nc
    )
    m, nv = rows.size, C.shape[1]
    return (
        csr_of(ch, (m, nv)), csr_of(gb, (bil.size, nv)), csr_of(tt, (n, m)),
        csr_of(et, (n, bil.size)), bptr, (bptr.copy(), gsoc), (rows, scale, bil),
    )  # fmt: skip


def eig_factor(W: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``C``, ``D = I`` with ``W = C C'`` from the eigendecomposition (small dense ``W``)."""
    lam, V = np.linalg.eigh(0.5 * (W + W.T))
    keep = lam > 1e-12 * max(float(lam.max(initial=0.0)), 1e-300)
    return V[:, keep] * np.sqrt(lam[keep]), np.ones(int(keep.sum()))


#: The last sparse normal matrix's pattern and its LDL' solver: a pile at rest poses the
#: same pattern (the same bodies in contact) step after step, whose ordering and symbolic
#: analysis (about 20 of the 30 ms of a first factorisation at 1000 boxes) are then done once.
_SYMBOLIC: dict[str, Any] = {}


class Normal:
    """The normal matrix ``K = D^{-1} + Ĉ'ΘĈ``: pattern once, values per iteration, LDL'.

    Factored by :class:`~solvers.backends.block_cholesky.BlockCholesky` (6x6 blocks:
    the bodies of maximal coordinates) when there is no bilateral border and the
    unknowns come six by six, else by ``qdldl``; dense LU up to 64 unknowns.  ``ch`` and
    ``gb``: the CSR arrays of ``Ĉ`` and of the bilateral rows (sorted indices), ``nv``
    the unknowns.
    """

    #: Whether the block Cholesky may be used (``False``: always ``qdldl``).
    blocked: ClassVar[bool] = True

    def __init__(self, ch, nv: int, dinv: Vec, bptr: IVec, groups, gb) -> None:  # type: ignore[no-untyped-def]
        ptr, idx, val = ch
        gbp, gbi, gbd = gb
        mb = gbp.shape[0] - 1
        size = nv + mb
        self.nv, self.bptr = nv, bptr
        self.gptr, self.gsoc = groups
        self.dinv_inv = 1.0 / dinv
        (self.rowblk, self.cptr, self.jptr, self.jval, colptr, row, self.slot,
         self.extra_slot) = normal_setup(bptr, self.gptr, ptr, idx, val, nv, gbp, gbi)  # fmt: skip
        # bilateral rows: the quasi-definite border [[K, Gb'], [Gb, -delta I]] (constant)
        delta = 1e-9 * float(np.mean(dinv)) if dinv.size else 1e-9
        # no border, six unknowns per body: the block Cholesky, else qdldl's scalar LDL'
        self.by_blocks = Normal.blocked and mb == 0 and nv % 6 == 0
        # the pattern of the previous problem (the same bodies in contact, whatever the
        # contacts' order): its solver's ordering and symbolic analysis are reused
        last = _SYMBOLIC.get("last")
        solver = None
        if (
            last is not None
            and same_pattern(last[0], (colptr, row))
            and isinstance(last[1], BlockCholesky) == self.by_blocks
        ):
            colptr, row, solver = last[0][0], last[0][1], last[1]
        self.key = (colptr, row)
        self.extra_vals = np.concatenate([gbd, np.full(mb, -delta)])
        self.values = np.zeros(row.size)
        self.size = size
        self.dense = size <= 64
        self.solver: Any = solver
        self._K: Any = None
        self._diag: IVec | None = None
        self.shifted, self.largest_shift = 0, 0.0

    @property
    def K(self):  # type: ignore[no-untyped-def]
        """``K`` as a scipy CSC matrix (upper triangle) sharing :attr:`values`."""
        if self._K is None:
            import scipy.sparse as sp

            colptr, row = self.key
            self._K = sp.csc_matrix((self.values, row, colptr), shape=(self.size, self.size))
            self.values = self._K.data  # the matrix's own array, filled in place
        return self._K

    def blocks(self) -> BlockCholesky:
        """The block Cholesky of this pattern (its symbolic analysis at the first call)."""
        if self.solver is None:
            self.solver = BlockCholesky(self.key[0], self.key[1], 6)
            _SYMBOLIC["last"] = (self.key, self.solver)
        return self.solver  # type: ignore[no-any-return]

    def factor(self, theta: Vec, floor: float = 0.0) -> float:
        """Fill ``K`` for the scaling ``theta`` and factor it; returns the diagonal shift used.

        ``K`` itself when ``floor`` is 0 and its factorisation succeeds; else ``K + σ
        max(diag K) I`` on the velocity unknowns (the bilateral border unchanged), ``σ`` the
        first of :data:`~solvers.backends.block_cholesky.SHIFTS` at least ``floor`` that
        factors (near convergence ``Θ`` reaches 1e17 times ``D^{-1}`` and a pivot of ``K``
        is lost in rounding: exactly zero or negative on some BLAS kernels and not on
        others).  Raises ``ValueError`` if every shift fails.  :attr:`shifted` counts the
        factorisations that needed one, :attr:`largest_shift` is the largest ``σ``.
        """
        fill_normal(
            self.nv, self.dinv_inv, self.gptr, self.gsoc, self.rowblk, self.cptr, self.jptr,
            self.jval, theta, self.slot, self.values,
        )  # fmt: skip
        if self.extra_slot.size:
            np.add.at(self.values, self.extra_slot, self.extra_vals)
        if not np.all(np.isfinite(self.values)):
            raise ValueError("normal matrix not finite")
        if self.by_blocks and not self.dense:
            used = self.blocks().factor(self.values, floor)
        else:
            used = -1.0
            for sigma in ((0.0,) if floor <= 0.0 else ()) + SHIFTS:
                if sigma >= floor and self._factor_plain(sigma):
                    used = sigma
                    break
            if used < 0.0:
                raise ValueError(
                    f"normal matrix singular, even shifted by {SHIFTS[-1]:g} times its "
                    "largest diagonal entry"
                )
        if used > 0.0:
            self.shifted += 1
            self.largest_shift = max(self.largest_shift, used)
        return used

    def _factor_plain(self, sigma: float) -> bool:
        """The dense LU or ``qdldl``'s LDL' of ``K + sigma max(diag K) I`` (velocity
        unknowns): whether it succeeded (every pivot finite and non-zero)."""
        import warnings

        K = self.K
        if sigma > 0.0:
            import scipy.sparse as sp

            diag = self.diag_slots
            values = K.data.copy()
            values[diag] += sigma * float(np.max(np.abs(values[diag])))
            K = sp.csc_matrix((values, K.indices, K.indptr), shape=K.shape)
        if self.dense:
            from scipy.linalg import LinAlgWarning, lu_factor

            A = K.toarray()
            A = A + np.triu(A, 1).T
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LinAlgWarning)
                lu, piv = lu_factor(A, check_finite=False)
            pivots = np.abs(np.diag(lu))
            if not (np.all(np.isfinite(lu)) and pivots.min() > 0.0):
                return False
            self.lu = (lu, piv)
            return True
        import qdldl

        try:
            if self.solver is None:
                self.solver = qdldl.Solver(K, upper=True)
                _SYMBOLIC["last"] = (self.key, self.solver)
            else:
                self.solver.update(K, upper=True)
        except (ValueError, RuntimeError):
            self.solver = None
            return False
        return True

    @property
    def diag_slots(self) -> IVec:
        """Positions in :attr:`values` of the velocity unknowns' diagonal entries."""
        if self._diag is None:
            colptr, row = self.key
            col = np.repeat(np.arange(self.size), np.diff(colptr))
            self._diag = np.flatnonzero((row == col) & (col < self.nv))
        return self._diag

    def solve(self, rhs: Vec) -> Vec:
        if self.dense:
            from scipy.linalg import lu_solve

            return np.asarray(lu_solve(self.lu, rhs, check_finite=False))
        return np.asarray(self.solver.solve(rhs))


@njit(cache=True)
def soc_impulse_point(  # type: ignore[no-untyped-def]  # pragma: no cover
    fptr, fidx, fval, d, cp, ci, cd, rows, scale, bil, bptr, r, q, push, wdiag
):
    """:meth:`VelocityForm.impulse_point` of the exact cone, in one call (the same
    arithmetic): ``v = D C' r``, ``s = Ĉ v + ŵ``, ``z = S^{-1} r``, pushed inside."""
    m = rows.shape[0]
    v = np.empty(d.shape[0])
    csr_tmul(fptr, fidx, fval, r, v)
    for j in range(v.shape[0]):
        v[j] *= d[j]
    wh = np.empty(m)
    for k in range(m):
        wh[k] = scale[k] * q[rows[k]]
    s = np.empty(m)
    csr_mul(cp, ci, cd, v, s)
    for k in range(m):
        s[k] += wh[k]
    z = np.zeros(m)
    for k in range(m):
        if scale[k] != 0.0:
            z[k] = r[rows[k]] / scale[k]
    scale_s = max(abs_max(wh), 1e-12)
    wd = max(wdiag, 1e-300)
    push_interior(bptr, s, push * scale_s)
    push_interior(bptr, z, push * scale_s / wd)
    y = np.empty(bil.shape[0])
    for k in range(bil.shape[0]):
        y[k] = r[bil[k]]
    return v, s, z, y


class VelocityForm:
    """What the iterations of one problem share whatever its free velocity: ``Ĉ``, ``T``, ``K``.

    Built at the first use of any of its arrays (:meth:`_build`): a warm start that
    already meets the tolerance needs none of them.  ``ch``, ``gb``, ``tt``, ``et``: the
    CSR arrays ``(ptr, indices, data)`` of ``Ĉ``, ``G_b``, ``T`` and ``E'``; ``Ch``,
    ``Gb``, ``Tt``, ``Et``: the same as scipy matrices, made on demand.
    """

    _LAZY = frozenset(
        {"ch", "gb", "tt", "et", "nv", "bptr", "groups", "sel", "T", "E", "cfac", "d", "wdiag"}
    )

    def __init__(self, problem, C, dinv: Vec) -> None:  # type: ignore[no-untyped-def]
        self.problem = problem
        #: the last interior point (v, s, z, y), the start of the next Coulomb round
        self.last: tuple[Vec, Vec, Vec, Vec] | None = None
        self._C, self._dinv = C, dinv
        self._normal: Normal | None = None
        #: Iterates of :func:`ipm_ccp` on a cone's boundary pushed back inside, in all.
        self.recentred = 0
        self._sparse: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        # only called for attributes not set yet: the arrays of _build
        if name in VelocityForm._LAZY and "_dinv" in self.__dict__ and "ch" not in self.__dict__:
            self._build()
            return self.__dict__[name]
        raise AttributeError(name)

    def _build(self) -> None:
        import scipy.sparse as sp

        problem, C, dinv = self.problem, self._C, self._dinv
        self.sel: tuple[IVec, Vec, IVec] | None = None
        if not (sp.issparse(C) and C.format == "csr"):
            C = sp.csr_matrix(C)
        self.nv = int(C.shape[1])
        if problem.cone == "soc":
            # Ĉ and the bilateral rows are rows of C (scaled): selected, no sparse products
            if not C.has_sorted_indices:
                C = C.copy()
                C.sort_indices()
                self.cfac = arrays_of(C)
            elif problem.factor is not None and C is problem.factor[0]:
                self.cfac = problem.factor_arrays[:3]  # the same arrays, int64 already
            else:
                self.cfac = arrays_of(C)
            self.ch, self.gb, self.tt, self.et, self.bptr, gsoc, *sel = select_soc(
                *self.cfac, problem.mu, problem.row_lo, problem.nc
            )
            self.groups = (self.bptr.copy(), gsoc)
            self.sel = (sel[0], sel[1], sel[2])
        else:
            Ch, _, self.bptr, Tt, self.groups, self.T, E = _lift(problem, C, problem.q)
            self.E = E  # selects the bilateral rows
            Gb = (E @ C).tocsr()
            Gb.sort_indices()
            self.ch, self.gb, self.tt = arrays_of(Ch), arrays_of(Gb), arrays_of(Tt)
            self.et = arrays_of(E.T.tocsr())
            self.cfac = arrays_of(C)
            self._sparse.update(Ch=Ch, Gb=Gb, Tt=Tt)
        self.d = np.ascontiguousarray(dinv, dtype=np.float64)
        # mean diagonal of W = C diag(d) C' (the impulse scale of the starting point)
        # (no rows: a step without contacts, whose solution is r = 0; any positive scale)
        if not problem.n:
            self.wdiag = 1.0
        elif problem.factor is not None:
            self.wdiag = float(np.mean(problem.diagonal()))
        else:
            self.wdiag = float(np.mean(np.asarray(problem.W.diagonal())))

    def _matrix(self, name: str, arrays, shape):  # type: ignore[no-untyped-def]
        if name not in self._sparse:
            self._sparse[name] = csr_of(arrays, shape)
        return self._sparse[name]

    @property
    def Ch(self):  # type: ignore[no-untyped-def]
        """``Ĉ`` (scipy CSR)."""
        return self._matrix("Ch", self.ch, (self.ch[0].size - 1, self.nv))

    @property
    def Gb(self):  # type: ignore[no-untyped-def]
        """The bilateral rows of ``C`` (scipy CSR)."""
        return self._matrix("Gb", self.gb, (self.gb[0].size - 1, self.nv))

    @property
    def Tt(self):  # type: ignore[no-untyped-def]
        """``T`` (``n x m``, scipy CSR): ``r = T z``."""
        return self._matrix("Tt", self.tt, (self.problem.n, self.ch[0].size - 1))

    @property
    def Et(self):  # type: ignore[no-untyped-def]
        """``E'`` (``n x mb``, scipy CSR): the bilateral rows' impulses ``r = E' y``."""
        return self._matrix("Et", self.et, (self.problem.n, self.gb[0].size - 1))

    @property
    def normal(self) -> Normal:
        """The normal matrix (built at the first iteration: a warm start may need none)."""
        if self._normal is None:
            self._normal = Normal(self.ch, self.nv, self._dinv, self.bptr, self.groups, self.gb)
        return self._normal

    def impulse_point(self, r: Vec, q: Vec, push: float) -> tuple[Vec, Vec, Vec, Vec]:
        """The interior point ``(v, s, z, y)`` of impulses ``r`` (a warm start), pushed inside.

        ``v = D C' r``, ``s = Ĉ v + ŵ`` (primal feasible), ``z`` with ``T z = r``
        (the exact cone: ``z = S^{-1} r``; a polyhedral cone: the least-norm
        multipliers of the generators), ``y`` the bilateral rows' impulses (dual
        feasible); then every block of ``s`` and ``z`` is moved ``push`` times the
        scale of the free velocity (``||ŵ||_inf``, and that over the mean diagonal of
        ``W`` for ``z``) inside its cone.
        """
        problem = self.problem
        ptr, idx, val = self.cfac
        if self.sel is not None:
            rows, scale, bil = self.sel
            return soc_impulse_point(  # type: ignore[no-any-return]
                ptr, idx, val, self.d, *self.ch, rows, scale, bil, self.bptr,
                np.ascontiguousarray(r, dtype=np.float64), q, push, self.wdiag,
            )  # fmt: skip
        v = np.empty(self.d.shape[0])
        csr_tmul(ptr, idx, val, r, v)
        v *= self.d
        wh, _ = self.lift(q)
        s = np.empty(wh.shape[0])
        cp, ci, cd = self.ch
        csr_mul(cp, ci, cd, v, s)
        s += wh
        nc = problem.nc
        uni = 3 * nc + np.flatnonzero(problem.row_lo == 0.0)
        bil = 3 * nc + np.flatnonzero(np.isinf(problem.row_lo))
        # r_c = diag(1, mu, mu) G β with G = [1; d_j]: β = G⁺ (r_n, r_t / mu)
        dirs = problem.dirs
        G = np.vstack([np.ones(dirs.shape[0]), dirs.T])
        rc = r[: 3 * nc].reshape(nc, 3).copy()
        mu = problem.mu[:, None]
        rc[:, 1:] = np.divide(rc[:, 1:], mu, out=np.zeros((nc, 2)), where=mu != 0.0)
        beta = np.einsum("ca,ja->cj", rc, np.linalg.pinv(G))
        z = np.concatenate([beta.ravel(), r[uni]])
        scale_s = max(abs_max(wh), 1e-12)
        wdiag = max(self.wdiag, 1e-300)
        push_interior(self.bptr, s, push * scale_s)
        push_interior(self.bptr, z, push * scale_s / wdiag)
        return v, s, z, r[bil].copy()

    def lift(self, q: Vec) -> tuple[Vec, Vec]:
        """``ŵ = T' q`` and the bilateral rows' free velocity."""
        if self.sel is not None:
            rows, scale, bil = self.sel
            return scale * q[rows], q[bil]
        return np.asarray(self.T @ q), np.asarray(self.E @ q)


@njit(cache=True)
def newton_residuals(  # type: ignore[no-untyped-def]  # pragma: no cover
    bptr, cp, ci, cd, gp, gi, gd, dinv_inv, v, s, z, y, wh, wb
):
    """The residuals of :func:`ipm_ccp`'s Newton system at ``(v, s, z, y)``, in one call.

    Returns ``r_d = D⁻¹ v - Ĉ' z - G_b' y``, ``r_b = G_b v + w_b``,
    ``r_p = s - Ĉ v - ŵ``, the duality gap ``s' z`` and the cone margins of
    ``s`` and ``z`` (:func:`cone_margin`).
    """
    m, nv, mb = s.shape[0], v.shape[0], y.shape[0]
    chv = np.empty(m)
    csr_mul(cp, ci, cd, v, chv)
    ctz = np.empty(nv)
    csr_tmul(cp, ci, cd, z, ctz)
    rd = np.empty(nv)
    for i in range(nv):
        rd[i] = dinv_inv[i] * v[i] - ctz[i]
    gv = np.zeros(mb)
    if mb:
        gty = np.empty(nv)
        csr_tmul(gp, gi, gd, y, gty)
        for i in range(nv):
            rd[i] -= gty[i]
        csr_mul(gp, gi, gd, v, gv)
    rb = np.empty(mb)
    for i in range(mb):
        rb[i] = gv[i] + wb[i]
    rp = np.empty(m)
    for i in range(m):
        rp[i] = s[i] - chv[i] - wh[i]
    return rd, rb, rp, dot(s, z), cone_margin(bptr, s), cone_margin(bptr, z)


@njit(cache=True)
def direction_rhs(  # type: ignore[no-untyped-def]  # pragma: no cover
    bptr, lam, wbar, eta, theta, rp, cp, ci, cd, rd, rb, corrector, ds_a, dz_a, sigma_mu
):
    """Right-hand side of the reduced Newton system of :func:`ipm_ccp`, in one call.

    The predictor (``corrector`` false) targets ``λ ∘ λ`` and the corrector adds
    Mehrotra's second-order term ``(W⁻¹ Δs_a) ∘ (W Δz_a)`` and the centring
    ``σ μ e``; returns the right-hand side ``(Ĉ' g - r_d, -r_b)`` and the two parts
    ``W⁻¹ t`` and ``Θ r_p`` of ``g`` (the back substitution reuses them).
    """
    m = lam.shape[0]
    nv = rd.shape[0]
    tmp = np.empty(m)
    t = np.empty(m)
    rc = np.empty(m)
    jordan(bptr, lam, lam, tmp)
    if not corrector:
        for i in range(m):
            rc[i] = -tmp[i]
    else:
        second = np.empty(m)
        scale_inv(bptr, wbar, eta, ds_a, t)  # W^-1 Δs_a
        scale(bptr, wbar, eta, dz_a, second)  # W Δz_a
        jordan(bptr, t, second, rc)
        for i in range(m):
            rc[i] = -tmp[i] - rc[i]
        add_identity(bptr, rc, sigma_mu)
    jordan_div(bptr, lam, rc, t)
    wt = np.empty(m)
    scale_inv(bptr, wbar, eta, t, wt)  # W^-1 t
    trp = np.empty(m)
    apply_theta(bptr, theta, rp, trp)
    g = np.empty(m)
    for i in range(m):
        g[i] = wt[i] + trp[i]
    rhs = np.empty(nv + rb.shape[0])
    top = np.empty(nv)
    csr_tmul(cp, ci, cd, g, top)
    for i in range(nv):
        rhs[i] = top[i] - rd[i]
    for i in range(rb.shape[0]):
        rhs[nv + i] = -rb[i]
    return rhs, wt, trp


@njit(cache=True)
def direction_back(  # type: ignore[no-untyped-def]  # pragma: no cover
    bptr, theta, cp, ci, cd, sol, nv, wt, trp, rp, s, z
):
    """The step of :func:`ipm_ccp` from the reduced system's solution, in one call.

    Returns ``(Δv, Δy, Δs, Δz, α_s, α_z, finite)``: ``Δs = Ĉ Δv - r_p``,
    ``Δz = W⁻¹ t + Θ (r_p - Ĉ Δv)``, the largest steps keeping ``s`` and ``z``
    in their cones and whether ``Δv`` and ``Δz`` are finite.
    """
    m = wt.shape[0]
    dv = sol[:nv].copy()
    dy = -sol[nv:]
    cdv = np.empty(m)
    csr_mul(cp, ci, cd, dv, cdv)
    tcd = np.empty(m)
    apply_theta(bptr, theta, cdv, tcd)
    dz = np.empty(m)
    ds = np.empty(m)
    for i in range(m):
        dz[i] = wt[i] + trp[i] - tcd[i]
        ds[i] = cdv[i] - rp[i]
    finite = True
    for i in range(dv.shape[0]):
        if not math.isfinite(dv[i]):
            finite = False
    for i in range(m):
        if not math.isfinite(dz[i]):
            finite = False
    return dv, dy, ds, dz, max_step(bptr, s, ds), max_step(bptr, z, dz), finite


@njit(cache=True)
def take_step(v, s, z, y, alpha, dv, ds, dz, dy):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``(v, s, z, y) += alpha (Δv, Δs, Δz, Δy)`` in place."""
    for i in range(v.shape[0]):
        v[i] += alpha * dv[i]
    for i in range(s.shape[0]):
        s[i] += alpha * ds[i]
    for i in range(z.shape[0]):
        z[i] += alpha * dz[i]
    for i in range(y.shape[0]):
        y[i] += alpha * dy[i]


#: Iterates on a cone's boundary pushed back inside before :func:`ipm_ccp` gives up
#: ("stalled on the cone boundary").
RECENTRE = 5

#: Why a run of :func:`ccp_blocks` stopped (its codes, the reasons :func:`ipm_ccp` reports).
_REASONS = (
    "cap",
    "converged",
    "not finite",
    "stalled on the cone boundary",
    "factorisation failed",
    "no finite step",
)


@njit(cache=True)
def ccp_blocks(  # type: ignore[no-untyped-def]  # pragma: no cover
    bptr, cp, ci, cd, tp, ti, td, dinv_inv, gptr, gsoc, rowblk, ncptr, jptr, jval, slot,
    values, first, second, lptr, lrows, rptr, rcols, rslot, L, perm, fptr, fidx, fval, fd,
    q, kind, mu, dirs, row_lo, nc, qnorm, u, ftmp, v, s, z, wh, tol, max_iter, far, wdiag,
):  # fmt: skip
    """:func:`ipm_ccp`'s loop in one call: no bilateral rows, ``K`` by 6x6 blocks.

    Each iteration runs the kernels of the Python loop in the same order on the same
    numbers (residuals, scaling, :func:`fill_normal`, the block Cholesky's factor and
    solves, predictor and corrector); each checked iterate's natural map is the CCP's at
    ``r = T z`` with ``u = C diag(d) C' r + q`` (``fptr, fidx, fval, fd``).  ``far <= 0``:
    every iterate is checked.  ``v, s, z`` are updated in place, ``u`` holds the last
    checked velocity (``ftmp``: scratch of one entry per column of ``C``).  Returns
    ``(r, iterations, natural map, reason code of _REASONS)``.
    """
    m, nv, n = s.shape[0], v.shape[0], q.shape[0]
    nb = bptr.shape[0] - 1
    y, wb = np.zeros(0), np.zeros(0)
    gp, gi, gd = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    wbar, eta = np.zeros(m), np.ones(nb)
    lam, theta = np.empty(m), np.zeros(9 * nb)
    dz, ds = np.empty(m), np.empty(m)
    r = np.zeros(n)
    sol = np.empty(nv)
    res, code = np.inf, 0
    best, best_r = np.inf, r.copy()
    checked = False
    it = 0
    sigma = 0.0
    shifted, largest, recentred = 0, 0.0, 0
    while True:
        csr_mul(tp, ti, td, z, r)
        if far > 0.0 and checked and res > far * tol and it < max_iter:
            checked = False
        else:
            checked = True
            res = factor_natural_map(
                fptr, fidx, fval, fd, r, q, ftmp, u, kind, mu, dirs, row_lo, nc, qnorm
            )
            if res < best:
                best, best_r = res, r.copy()
            if res <= tol:
                code = 1
                break
            if not math.isfinite(res):
                code = 2
                break
        if it >= max_iter:
            break
        it += 1
        rd, rb, rp, gap, margin_s, margin_z = newton_residuals(
            bptr, cp, ci, cd, gp, gi, gd, dinv_inv, v, s, z, y, wh, wb
        )
        mu_c = gap / max(nb, 1)
        if margin_s <= 0.0 or margin_z <= 0.0:
            if recentred >= RECENTRE:
                code = 3
                break
            # an iterate on a cone's boundary (rounding): pushed back inside (ipm_ccp)
            recentred += 1
            recentre(bptr, s, z, mu_c, wdiag)
            continue
        nt_scaling(bptr, s, z, wbar, eta, lam, theta)
        fill_normal(nv, dinv_inv, gptr, gsoc, rowblk, ncptr, jptr, jval, theta, slot, values)
        alpha, finite = 0.0, False
        dv, dy = np.empty(nv), np.empty(0)
        floor = 0.0
        while not finite:
            # K factored (shifted if it must be: Normal.factor), its directions; not finite:
            # refactored with the next larger shift
            used = chol_factor(values, first, second, lptr, lrows, rptr, rcols, rslot, L, floor)
            if used < 0.0:
                code = 4
                break
            if used > 0.0:
                shifted += 1
                largest = max(largest, used)
            finite = True
            for corrector in (False, True):
                rhs, wt, trp = direction_rhs(
                    bptr, lam, wbar, eta, theta, rp, cp, ci, cd, rd, rb, corrector, ds, dz,
                    sigma * mu_c,
                )  # fmt: skip
                chol_solve(L, 6, perm, lptr, lrows, rhs, sol)
                dv, dy, ds, dz, a_s, a_z, ok = direction_back(
                    bptr, theta, cp, ci, cd, sol, nv, wt, trp, rp, s, z
                )
                finite = finite and ok
                if not corrector:
                    alpha = min(1.0, a_s, a_z)
                    gap_aff = gap_after(s, ds, z, dz, alpha)
                    sigma = math.pow(min(max(gap_aff / max(gap, 1e-300), 0.0), 1.0), 3.0)
                else:
                    alpha = min(1.0, 0.99 * min(a_s, a_z))
            if not finite:
                floor = SHIFTS[0] if used == 0.0 else 10.0 * used
                if floor > SHIFTS[-1]:
                    break
        if code == 4:
            break
        if not (finite and alpha > 0.0):
            code = 5
            break
        take_step(v, s, z, y, alpha, dv, ds, dz, dy)
    if best <= res or not math.isfinite(res):
        r, res = best_r, best
    return r, it, res, code, shifted, largest, recentred


@njit(cache=True)
def factor_natural_map(  # type: ignore[no-untyped-def]  # pragma: no cover
    fptr, fidx, fval, fd, r, q, tmp, out, kind, mu, dirs, row_lo, nc, qnorm
):
    """The CCP's natural map at ``r`` with ``out = u = C diag(d) C' r + q``, in one call."""
    factor_velocity(fptr, fidx, fval, fd, r, q, tmp, out)
    return natural_map(0, kind, mu, dirs, row_lo, nc, r, out, qnorm)


class FactorResidual:
    """The CCP's natural map at ``r`` with ``u = C diag(d) C' r + q`` (``u`` in ``out``).

    Called as ``residual(r) -> (natural map, u)`` like any residual :func:`ipm_ccp` takes;
    being compiled arithmetic on arrays, it also runs inside :func:`ccp_blocks`.
    """

    def __init__(  # type: ignore[no-untyped-def]
        self, factor, q: Vec, kind: int, problem, qnorm: float, out: Vec
    ) -> None:
        self.fptr, self.fidx, self.fval, self.fd = factor
        self.q, self.kind, self.qnorm, self.out = q, kind, qnorm, out
        self.mu, self.dirs, self.row_lo, self.nc = (
            problem.mu,
            problem.dirs,
            problem.row_lo,
            problem.nc,
        )
        self.tmp = np.empty(self.fd.shape[0])

    def __call__(self, r: Vec) -> tuple[float, Vec]:
        res = factor_natural_map(
            self.fptr, self.fidx, self.fval, self.fd, r, self.q, self.tmp, self.out, self.kind,
            self.mu, self.dirs, self.row_lo, self.nc, self.qnorm,
        )  # fmt: skip
        return float(res), self.out


def next_shift(used: float) -> float | None:
    """The shift of :data:`~solvers.backends.block_cholesky.SHIFTS` after ``used`` (0: the
    first), ``None`` after the last."""
    larger = [x for x in SHIFTS if x > used]
    return larger[0] if larger else None


def ipm_ccp(
    form: VelocityForm,
    q: Vec,
    tol: float,
    max_iter: int,
    residual,
    start=None,
    point=None,
    far: float | None = None,
) -> tuple[Vec, int, float, str]:  # type: ignore[no-untyped-def]
    """Mehrotra predictor-corrector on the CCP (module docstring).

    ``residual(r)`` returns the natural-map residual the caller judges ``r``
    by and the velocity ``u = W r + q``; returns ``(r, iterations, residual,
    reason)``.  ``start``: a neighbouring problem's iterate and how far to push
    it inside; ``point``: an interior point ``(v, s, z, y)`` started from as it is
    (:meth:`VelocityForm.impulse_point`).  ``far``: while the last residual checked
    exceeds ``far * tol``, only every other iterate is checked (on pile steps the
    residual falls by at most a factor 7 per iteration: with ``far = 30`` the iteration
    counts of 100- and 200-box steps are unchanged and a 200-box step takes 8 % less
    time; a run that stops for another reason returns its best checked iterate).

    Breakdowns of rounding are repaired, not reported: a normal matrix that does not
    factor (or gives directions that are not finite) is shifted (:meth:`Normal.factor`);
    an iterate that a step of 0.99 of the way to the boundary leaves on a cone's boundary
    is pushed back inside by ``sqrt(s'z / blocks)`` (split by ``W``'s mean diagonal), at
    most :data:`RECENTRE` times (``form.recentred`` counts them).  On the 10-box pile's
    box-law step posed as the CCP on the exact cone, the iteration stopped on the
    boundary at 8.6e-8 with every BLAS kernel set; pushed back, it reaches 6.2e-9 in 20
    iterations and 9.2e-10 in 28 (ADMM: 8.3e-10 in 1,641; ``nsgs`` stalls at 8.3e-8).
    """
    problem = form.problem
    bptr, normal = form.bptr, form.normal
    wh, wb = form.lift(q)
    nb = bptr.shape[0] - 1
    cp, ci, cd = form.ch
    gp, gi, gd = form.gb
    ep, ei, ed = form.et
    tp, ti, td = form.tt
    m, nv, mb = cp.shape[0] - 1, normal.nv, gp.shape[0] - 1
    scale_s = max(abs_max(wh), 1e-12)
    # impulse scale: velocities over the mean diagonal of W
    wdiag = form.wdiag
    if point is not None:
        v, s, z, y = (np.array(x, dtype=np.float64) for x in point)
    elif start is None:
        y = np.zeros(mb)
        v = np.zeros(nv)
        s = wh.copy()
        margin = cone_margin(bptr, s)
        add_identity(bptr, s, max(0.0, -margin) + scale_s)
        z = np.zeros(m)
        add_identity(bptr, z, scale_s / max(wdiag, 1e-300))
    else:
        # a neighbouring problem's iterate, pushed into the interior by a fraction of the
        # new primal infeasibility (the free velocity changed by q - q_old)
        v, s, z, y, push = start
        v, s, z, y = v.copy(), s.copy(), z.copy(), y.copy()
        s_new = np.empty(m)
        csr_mul(cp, ci, cd, v, s_new)
        s_new += wh
        tau = max(push * abs_max(s_new - s), 1e-12 * scale_s)
        add_identity(bptr, s, tau)
        add_identity(bptr, z, tau / max(wdiag, 1e-300))
    if isinstance(residual, FactorResidual) and normal.by_blocks and not normal.dense:
        # the whole loop in one compiled call (no bilateral rows: mb = 0)
        if normal.solver is None:
            # a new pattern: the start's check first, as the loop makes it (a start that
            # meets the tolerance needs no symbolic analysis)
            r = np.zeros(problem.n)
            csr_mul(tp, ti, td, z, r)
            res, _ = residual(r)
            if res <= tol or not math.isfinite(res):
                form.last = (v, s, z, y)
                if res <= tol:
                    return r, 0, res, "converged"
                return np.zeros(problem.n), 0, np.inf, "not finite"
        chol = normal.blocks()
        r, it, res, code, shifted, largest, recentred = ccp_blocks(
            bptr, cp, ci, cd, tp, ti, td, normal.dinv_inv, normal.gptr, normal.gsoc,
            normal.rowblk, normal.cptr, normal.jptr, normal.jval, normal.slot, normal.values,
            chol.first, chol.second, chol.lptr, chol.lrows, chol.rptr, chol.rcols, chol.rslot,
            chol.L, chol.perm, residual.fptr, residual.fidx, residual.fval, residual.fd,
            residual.q, residual.kind, residual.mu, residual.dirs, residual.row_lo,
            residual.nc, residual.qnorm, residual.out, residual.tmp, v, s, z, wh, tol, max_iter,
            -1.0 if far is None else far, max(wdiag, 1e-300),
        )  # fmt: skip
        res = float(res)
        reason = "converged" if res <= tol else _REASONS[code]
        normal.shifted += int(shifted)
        normal.largest_shift = max(normal.largest_shift, float(largest))
        form.recentred += int(recentred)
        form.last = (v, s, z, y)
        return r, int(it), res, reason
    rb_part = np.zeros(problem.n)
    wbar, eta = np.zeros(m), np.ones(nb)
    lam, theta = np.empty(m), np.zeros(9 * nb)
    dz, ds = np.empty(m), np.empty(m)
    r = np.zeros(problem.n)
    res, reason = np.inf, "cap"
    best, best_r = np.inf, r.copy()
    checked = False
    it = 0
    sigma = 0.0
    recentred = 0
    while True:
        csr_mul(tp, ti, td, z, r)
        if mb:
            csr_mul(ep, ei, ed, y, rb_part)
            r += rb_part
        if far is not None and checked and res > far * tol and it < max_iter:
            checked = False  # the last check was far from tol: this iterate is not checked
        else:
            checked = True
            res, u = residual(r)
            if res < best:
                best, best_r = res, r.copy()
            if res <= tol:
                reason = "converged"
                break
            if not math.isfinite(res):
                reason = "not finite"
                break
        if it >= max_iter:
            break
        it += 1
        # D^-1 v - Ĉ'z - Gb'y, Gb v + wb, s - Ĉ v - ŵ, s'z and the cone margins
        rd, rb, rp, gap, margin_s, margin_z = newton_residuals(
            bptr, cp, ci, cd, gp, gi, gd, normal.dinv_inv, v, s, z, y, wh, wb
        )
        mu_c = gap / max(nb, 1)
        if margin_s <= 0.0 or margin_z <= 0.0:
            if recentred >= RECENTRE:
                reason = "stalled on the cone boundary"
                break
            # an iterate on a cone's boundary (a step of 0.99 of the way rounded onto it):
            # both pushed back inside by the square root of the mean gap per block, split
            # by the mean diagonal of W (s about W z), and the iteration goes on
            recentred += 1
            recentre(bptr, s, z, mu_c, wdiag)
            continue
        nt_scaling(bptr, s, z, wbar, eta, lam, theta)
        floor: float | None = 0.0
        while floor is not None:
            # K factored (shifted if it must be), its directions; not finite (a pivot lost in
            # rounding but not below zero): refactored with the next larger shift
            try:
                used = normal.factor(theta, floor)
            except (np.linalg.LinAlgError, ValueError, RuntimeError):
                reason = "factorisation failed"
                break
            steps = []
            for corrector in (False, True):
                # predictor, then corrector: right-hand side, solve, step (two compiled calls)
                rhs, wt, trp = direction_rhs(
                    bptr, lam, wbar, eta, theta, rp, cp, ci, cd, rd, rb, corrector, ds, dz,
                    sigma * mu_c,
                )  # fmt: skip
                sol = normal.solve(rhs)
                dv, dy, ds, dz, a_s, a_z, finite = direction_back(
                    bptr, theta, cp, ci, cd, sol, nv, wt, trp, rp, s, z
                )
                alpha = min(1.0, a_s, a_z)
                if not corrector:
                    gap_aff = gap_after(s, ds, z, dz, alpha)
                    sigma = min(max(gap_aff / max(gap, 1e-300), 0.0), 1.0) ** 3
                steps.append((dv, ds, dz, dy, min(1.0, 0.99 * min(a_s, a_z)), finite))
            if steps[0][5] and steps[1][5]:
                break
            floor = next_shift(used)
        if reason == "factorisation failed":
            break
        dv, ds, dz, dy, alpha, finite = steps[-1]
        if not (finite and steps[0][5] and alpha > 0.0):
            reason = "no finite step"
            break
        take_step(v, s, z, y, alpha, dv, ds, dz, dy)
    if best <= res or not math.isfinite(res):
        r, res = best_r, best
    if res <= tol:
        reason = "converged"
    form.recentred += recentred
    form.last = (v, s, z, y)
    return r, it, res, reason
