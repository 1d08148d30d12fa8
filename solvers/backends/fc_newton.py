"""Semismooth Newton on the box and pyramid laws' complementarity functions (``ipm``'s finish).

The pyramid law is :class:`PyramidNewton`'s (Stewart and Trinkle's LCP, the same iteration
as below); this docstring describes the box law's :class:`BoxNewton`.

The box law (``law="coulomb"``, ``cone="box"``: De Saxcé's NCP on the box cone) is,
contact by contact, the mixed complementarity problem

- ``0 <= r_n ⟂ u_n >= 0``;
- per tangent axis ``k``: ``-mu r_n <= r_tk <= mu r_n`` with ``u_tk <= 0`` at the upper
  bound, ``u_tk >= 0`` at the lower one and ``u_tk = 0`` between them (maximal
  dissipation per axis),

with ``u = W r + q``; a scalar row after the contacts is ``u = 0`` (bilateral) or
``0 <= r ⟂ u >= 0``.  (De Saxcé's ``û ∈ K*`` is ``u_n >= 0`` on the box cone, and
``r · û = 0`` splits into ``r_n u_n = 0`` and ``r_tk u_tk = -mu r_n |u_tk|`` per axis.)
Its min-function (Alart--Curnier's form with the bound ``mu max(r_n, 0)``)

.. math::

    \\Phi_n = r_n - \\max(0, r_n - \\rho_n u_n), \\qquad
    \\Phi_{tk} = r_{tk} - \\operatorname{mid}(-b, r_{tk} - \\rho_{tk} u_{tk}, b),
    \\quad b = \\mu \\max(r_n, 0),

(``ρ`` per row ``1 / W_jj``) vanishes exactly at the law's solutions and is piecewise
affine in ``r``: on each piece ``Φ(r + δ) = Φ(r) + (A + B W) δ`` with ``B`` diagonal
(``ρ_j`` on the rows whose velocity is active: a pressed normal, a sticking axis, a
bilateral row; 0 elsewhere) and ``A`` one entry per free or sliding row (``1`` on its
own impulse, ``∓ mu`` on its contact's normal impulse for an axis sliding at ``±b``).
That ``J = A + B W`` is an element of ``Φ``'s generalized (Clarke) Jacobian, so Newton's
steps on it converge locally in finitely many steps once the active pieces are found.

Each iteration solves ``(J + ε B diag(W)) δ = -Φ`` (a Levenberg--Marquardt/proximal term on
the active rows: four corners of a face give redundant rows of ``W``, and ``J`` is singular
there) without forming ``W``: with ``W = C diag(d) C'`` and ``δv = diag(d) C' δ`` (the
bodies' velocity change),

.. math::

    \\begin{bmatrix} \\operatorname{diag}(d)^{-1} & -C' \\\\ B C & A + ε B \\operatorname{diag}(W)
    \\end{bmatrix} \\begin{bmatrix} δv \\\\ δ \\end{bmatrix} = \\begin{bmatrix} 0 \\\\ -Φ
    \\end{bmatrix},

one sparse LU (SuperLU, ``scipy.sparse.linalg.splu``) per iteration on a pattern built
once (only its values change; the CSC wrapper around them is the only sparse object made
per iteration), ``δu = C δv``.  Globalised by a backtracking (Armijo) line search on
``0.5 ||Φ||²``, nonmonotone (against the largest merit of the last 30 iterates), down to
steps of ``2^-20``; when no step length decreases it, ``ε`` grows tenfold and the iteration
retries, up to ``ε = 100`` (then it stops, reason ``"no descent"``).  ``ε`` starts at
``1e-8`` (relative to ``diag(W)``), falls tenfold after each full step and rises tenfold
after each shortened one.

The stopping test is the project's natural map (:func:`~solvers.numerics.fc_kernels.natural_map`,
the projection on the box cone itself, ``ρ = 1``, relative to ``||q||``), not ``||Φ||``;
the iterate with the smallest natural map is returned.  The per-row pieces (``Φ``, ``A``,
``B``) and the matrix values are filled by compiled kernels; Python runs once per
iteration.

Measured.  On small random box-law problems (6 contacts, singular ``W``) the iteration
from ``r = 0`` ends in 5--8 steps at Lemke's solution of the equivalent LCP
(``tests/solvers/test_fc_newton.py``).  On pile steps it does not converge that way: at
``ipm``'s stalled iterates (natural map 2e-6 to 1e-5) of the 100- and 200-box transients
it takes 3--52 iterations to 1e-6 (seven capped steps), and 26--210 to 1e-8 on nine of
ten stored coupled starts of ``staggered-projections`` (the tenth stops at 4.9e-8).  The
piece selected at such an iterate has no solution: on a stored 100-box step stalled at
6e-7, the least-squares solution of the piece's Newton system leaves 1.2e-7 of
``||Φ|| = 4.6e-7``, spread over sticking contacts of boxes resting on four corners.  A likely
cause (not verified): the normal rows of the four corners carry position-correction terms
that one rigid motion cannot meet exactly, so at the solution some corner unloads
(``r_n = 0``), far in impulse space from an iterate whose residual is already small, with
a flat merit along the way; the fixed point and Gauss--Seidel sweeps crawl there too.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.frictional import FrictionalContact
from solvers.jit import njit
from solvers.numerics.fc_kernels import factor_velocity, natural_map

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 2.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


@njit(cache=True)
def scalar_piece(
    row: int, x: float, w: float, rho: float, free: bool, phi: Vec, beta: Vec, adiag: Vec
) -> float:
    """One scalar row of a min-function: ``Φ = x - max(0, x - ρ w)`` (``Φ = ρ w`` when
    ``free``: a bilateral row), its piece (``B``'s diagonal ``beta``, ``A``'s ``adiag``);
    returns ``Φ²``."""
    if free or x - rho * w > 0.0:
        phi[row] = rho * w
        beta[row] = rho
        adiag[row] = 0.0
    else:
        phi[row] = x
        beta[row] = 0.0
        adiag[row] = 1.0
    return phi[row] * phi[row]


@njit(cache=True)
def bound_pieces(
    acc: float, row0: int, u0: int, x: Vec, u: Vec, rho: Vec, row_lo: Vec, phi: Vec,
    beta: Vec, adiag: Vec,
) -> float:  # fmt: skip
    """:func:`scalar_piece` of every scalar row of a min-function (rows ``row0 + m`` of
    ``x``, velocities ``u[u0 + m]``; a row without lower bound ``row_lo[m]`` is free)
    added to ``acc``, one after another."""
    for m in range(row_lo.shape[0]):
        row = row0 + m
        w = u[u0 + m]
        acc += scalar_piece(row, x[row], w, rho[row], row_lo[m] == -np.inf, phi, beta, adiag)
    return acc


@njit(cache=True)
def box_pieces(
    nc: int,
    mu: Vec,
    row_lo: Vec,
    rho: Vec,
    r: Vec,
    u: Vec,
    phi: Vec,
    beta: Vec,
    adiag: Vec,
    aoff: Vec,
) -> float:
    """``Φ(r)`` and its piece ``A + B W`` (module docstring); returns ``0.5 ||Φ||²``.

    ``beta`` is ``B``'s diagonal, ``adiag`` ``A``'s, ``aoff[2 i + k]`` the entry of row
    ``3 i + 1 + k`` in column ``3 i`` (an axis sliding at its bound).
    """
    acc = 0.0
    for i in range(nc):
        j = 3 * i
        rn = r[j]
        acc += scalar_piece(j, rn, u[j], rho[j], False, phi, beta, adiag)
        b = mu[i] * rn if rn > 0.0 else 0.0
        for k in range(2):
            t = j + 1 + k
            z = r[t] - rho[t] * u[t]
            if b > 0.0 and -b < z < b:
                phi[t] = rho[t] * u[t]
                beta[t] = rho[t]
                adiag[t] = 0.0
                aoff[2 * i + k] = 0.0
            else:
                s = 1.0 if z >= b else -1.0
                phi[t] = r[t] - s * b
                beta[t] = 0.0
                adiag[t] = 1.0
                aoff[2 * i + k] = -s * mu[i] if rn > 0.0 else 0.0
            acc += phi[t] * phi[t]
    return 0.5 * bound_pieces(acc, 3 * nc, 3 * nc, r, u, rho, row_lo, phi, beta, adiag)


@njit(cache=True)
def fill_common_values(
    nv: int,
    n: int,
    dinv: Vec,
    c_rows: IVec,
    c_val: Vec,
    beta: Vec,
    adiag: Vec,
    reg: Vec,
    slots: IVec,
    out: Vec,
) -> int:
    """The blocks every piecewise-linear law's augmented matrix opens with, in CSC order
    (``slots``: COO entry -> CSC slot): ``diag(d)^-1`` (``nv``), ``-C'`` (``C``'s entries),
    ``B C`` (same), ``A``'s diagonal plus ``reg`` (``n``).  Returns the next COO entry."""
    e = 0
    for k in range(nv):
        out[slots[e]] = dinv[k]
        e += 1
    nnz = c_val.shape[0]
    for k in range(nnz):
        out[slots[e]] = -c_val[k]
        e += 1
    for k in range(nnz):
        out[slots[e]] = beta[c_rows[k]] * c_val[k]
        e += 1
    for j in range(n):
        out[slots[e]] = adiag[j] + reg[j]
        e += 1
    return e


@njit(cache=True)
def fill_values(
    nv: int,
    nc: int,
    n: int,
    dinv: Vec,
    c_rows: IVec,
    c_val: Vec,
    beta: Vec,
    adiag: Vec,
    aoff: Vec,
    reg: Vec,
    slots: IVec,
    out: Vec,
) -> None:
    """Values of the augmented matrix in its CSC order (``slots``: COO entry -> CSC slot).

    COO order: ``diag(d)^-1`` (``nv``), ``-C'`` (``C``'s entries), ``B C`` (same), ``A``'s
    diagonal plus ``reg`` (``n``), ``A``'s sliding entries (``2 nc``).
    """
    e = fill_common_values(nv, n, dinv, c_rows, c_val, beta, adiag, reg, slots, out)
    for k in range(2 * nc):
        out[slots[e]] = aoff[k]
        e += 1


def csc_slots(
    rows: IVec, cols: IVec, size: int
) -> tuple[IVec, NDArray[np.int32], NDArray[np.int32]]:
    """The CSC pattern of a ``size x size`` matrix with entries at ``(rows, cols)`` and, per
    entry, its slot in the CSC data: ``(slots, indptr, indices)``.  Entries on one
    position share its slot (their values add up)."""
    keys = cols * size + rows  # column-major: sorted keys are the CSC order
    uniq, slots = np.unique(keys, return_inverse=True)
    indices = (uniq % size).astype(np.int32)
    indptr = np.searchsorted(uniq // size, np.arange(size + 1)).astype(np.int32)
    return slots.astype(np.int64), indptr, indices


class _MinNewton:
    """The iteration shared by :class:`BoxNewton`, :class:`PyramidNewton` and
    :class:`SocNewton` (module docstring): subclasses give the unknowns ``x`` of their
    min-function (``_start``, ``_impulse``), its pieces (``_pieces``, the first array of the
    state being ``Φ``) and the augmented matrix of a piece (``_matrix``); ``self.C`` is the
    factor's ``C``."""

    #: Armijo's constant and the shortest step tried before ``ε`` grows.
    armijo = 1e-4
    shortest = 2.0**-20
    #: ``ε`` (relative to ``diag(W)``): start, factor after a full step, floor, ceiling
    #: (``ε`` grows tenfold after a shortened step or when no step length decreases).
    eps_start = 1e-8
    eps_down = 0.1
    eps_min = 1e-10
    eps_cap = 1e2
    #: The line search compares with the largest merit of the last ``nonmonotone`` iterates.
    nonmonotone = 30
    #: ``natural_map``'s cone code: 1 polyhedral (box, pyramid), 0 the exact cone.
    _cone_code = 1
    n: int
    nv: int
    C: sp.csr_matrix

    rho: Vec
    rho_unit: Vec | None = None
    #: Factorisations that were singular or gave a step that is not finite, each answered
    #: by a tenfold proximal term ``ε`` (counted over every :meth:`solve`).
    singular: int = 0

    def _set_factor(self, problem: FrictionalContact, C: sp.spmatrix, d: Vec) -> sp.csr_matrix:
        """The factor ``W = C diag(d) C'`` as the kernels take it; returns ``C`` (CSR,
        sorted indices)."""
        self.problem = problem
        C = sp.csr_matrix(C)
        if not C.has_sorted_indices:
            # sorted on a copy: the caller's matrix (and arrays made from it) stay as they are
            C = C.copy()
            C.sort_indices()
        self.n, self.nv = C.shape
        self.nc = problem.nc
        self.C = C
        self.fptr = C.indptr.astype(np.int64)
        self.fidx = C.indices.astype(np.int64)
        self.fval = np.ascontiguousarray(C.data, dtype=np.float64)
        self.d = np.ascontiguousarray(d, dtype=np.float64)
        self.tmp = np.empty(self.nv)
        self.qnorm = float(np.linalg.norm(problem.q))
        self.dinv = 1.0 / self.d
        diag = np.asarray(problem.diagonal(), dtype=np.float64)
        self.wdiag = np.where(diag > 0.0, diag, 1.0)
        return C

    def _set_pattern(self, rows: IVec, cols: IVec, size: int) -> None:
        """The augmented matrix's CSC pattern and each entry's slot (:func:`csc_slots`)."""
        self.slots, self.K_indptr, self.K_indices = csc_slots(rows, cols, size)
        self.values = np.zeros(self.K_indices.size)

    def scale_rho(self, scale: float) -> None:
        """``ρ`` = ``scale`` times the one set at construction (the pieces' split)."""
        if self.rho_unit is None:
            self.rho_unit = self.rho.copy()
        self.rho = scale * self.rho_unit

    def velocity(self, r: Vec, out: Vec) -> None:
        """``out = W r + q`` through the factor."""
        factor_velocity(self.fptr, self.fidx, self.fval, self.d, r, self.problem.q, self.tmp, out)

    def natural(self, r: Vec, u: Vec) -> float:
        """The project's natural map of the law at ``(r, u)`` (relative to ``||q||``; the
        cone's code ``_cone_code`` as :func:`~solvers.numerics.fc_kernels.natural_map`
        takes it)."""
        p = self.problem
        return float(
            natural_map(1, self._cone_code, p.mu, p.dirs, p.row_lo, p.nc, r, u, self.qnorm)
        )

    def _start(self, r: Vec, u: Vec) -> Vec:
        return r.copy()

    def _impulse(self, x: Vec) -> Vec:
        return x

    def _state(self) -> tuple[Vec, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _pieces(self, x: Vec, u: Vec, state: tuple[Vec, ...]) -> float:  # pragma: no cover
        raise NotImplementedError

    def _matrix(self, state: tuple[Vec, ...], eps: float) -> sp.csc_matrix:  # pragma: no cover
        raise NotImplementedError

    def solve(
        self, r0: Vec, tol: float, max_iter: int, eps: float | None = None
    ) -> tuple[Vec, int, float, str]:
        """Newton's iteration from ``r0``: ``(r, iterations, natural map, reason)``.

        ``eps``: the first proximal term (default ``eps_start``).

        ``reason`` is ``"converged"`` (natural map ``<= tol``), ``"cap"`` (``max_iter``
        iterations) or ``"no descent"`` (no step length decreased the merit, even with
        ``ε`` at its ceiling); ``r`` is the iterate with the smallest natural map.
        """
        import scipy.sparse.linalg as spla

        nv = self.nv
        r = np.array(r0, dtype=np.float64)
        u = np.empty(self.n)
        self.velocity(r, u)
        x = self._start(r, u)  # the unknowns of the min-function
        state, trial = self._state(), self._state()
        res = self.natural(r, u)
        best_r, best = r.copy(), res
        it, reason = 0, "cap"
        theta = self._pieces(x, u, state)
        history = [theta]
        rhs = np.zeros(nv + x.size)
        eps = self.eps_start if eps is None else float(eps)
        x_t, t = x, 1.0
        while it < max_iter:
            if res <= tol:
                reason = "converged"
                break
            it += 1
            accepted = False
            while not accepted and eps <= self.eps_cap:
                try:
                    lu = spla.splu(self._matrix(state, eps), permc_spec="COLAMD")
                except RuntimeError:  # exactly singular: a larger proximal term
                    self.singular += 1
                    eps *= 10.0
                    continue
                rhs[nv:] = -state[0]
                sol = lu.solve(rhs)
                if not np.all(np.isfinite(sol)):
                    self.singular += 1
                    eps *= 10.0
                    continue
                dx = sol[nv:]
                du = self.C @ sol[:nv]
                ref = max(history[-self.nonmonotone :])
                t = 1.0
                while t >= self.shortest:
                    x_t = x + t * dx
                    th = self._pieces(x_t, u + t * du, trial)
                    if th <= ref - 2.0 * self.armijo * t * theta:
                        accepted = True
                        break
                    t *= 0.5
                if not accepted:
                    eps *= 10.0
            if not accepted:
                reason = "no descent"
                break
            eps = (
                max(eps * self.eps_down, self.eps_min)
                if t == 1.0
                else min(10.0 * eps, self.eps_cap)
            )
            x = x_t
            r = self._impulse(x)
            self.velocity(r, u)  # exact, not u + t du, for the next piece and the test
            theta = self._pieces(x, u, state)
            history.append(theta)
            res = self.natural(r, u)
            if res < best:
                best_r, best = r.copy(), res
        if best < res:
            r, res = best_r, best
        if res <= tol:
            reason = "converged"
        return r, it, float(res), reason


class BoxNewton(_MinNewton):
    """Semismooth Newton on the box law of ``problem`` through its factor ``W = C diag(d) C'``.

    :meth:`solve` runs from a start ``r0`` (module docstring); the pattern of the augmented
    matrix and its CSC slots are built here once.
    """

    def __init__(self, problem: FrictionalContact, C: sp.spmatrix, d: Vec) -> None:
        if problem.law != "coulomb" or problem.cone != "box":
            raise ValueError("BoxNewton solves the box law (law='coulomb', cone='box') only")
        C = self._set_factor(problem, C, d)
        n, nv, nc = self.n, self.nv, self.nc
        coo = C.tocoo()
        self.c_rows = coo.row.astype(np.int64)
        self.c_val = np.ascontiguousarray(coo.data, dtype=np.float64)
        self.rho = 1.0 / self.wdiag
        # tangent rows in order 3 i + 1 + k: the (2 i + k)-th, as aoff is stored
        tang = np.sort(np.concatenate([3 * np.arange(nc) + 1, 3 * np.arange(nc) + 2]))
        rows = np.concatenate(
            [np.arange(nv), coo.col, nv + coo.row, nv + np.arange(n), nv + tang]
        ).astype(np.int64)
        cols = np.concatenate(
            [np.arange(nv), nv + coo.row, coo.col, nv + np.arange(n), nv + 3 * (tang // 3)]
        ).astype(np.int64)
        self._set_pattern(rows, cols, nv + n)

    def pieces(self, r: Vec, u: Vec, phi: Vec, beta: Vec, adiag: Vec, aoff: Vec) -> float:
        """:func:`box_pieces` of this problem; returns ``0.5 ||Φ||²``."""
        p = self.problem
        return float(box_pieces(p.nc, p.mu, p.row_lo, self.rho, r, u, phi, beta, adiag, aoff))

    def matrix(self, beta: Vec, adiag: Vec, aoff: Vec, eps: float) -> sp.csc_matrix:
        """The augmented matrix of the piece ``(beta, adiag, aoff)`` with the term ``ε``."""
        fill_values(
            self.nv, self.nc, self.n, self.dinv, self.c_rows, self.c_val, beta, adiag, aoff,
            eps * beta * self.wdiag, self.slots, self.values,
        )  # fmt: skip
        size = self.nv + self.n
        return sp.csc_matrix((self.values, self.K_indices, self.K_indptr), shape=(size, size))

    def _state(self) -> tuple[Vec, ...]:
        return np.empty(self.n), np.empty(self.n), np.empty(self.n), np.empty(2 * self.nc)

    def _pieces(self, x: Vec, u: Vec, state: tuple[Vec, ...]) -> float:
        return self.pieces(x, u, *state)

    def _matrix(self, state: tuple[Vec, ...], eps: float) -> sp.csc_matrix:
        return self.matrix(state[1], state[2], state[3], eps)


@njit(cache=True)
def pyramid_impulse(nc: int, k: int, dirs: Vec, x: Vec, r: Vec) -> None:
    """``r = P x``: ``r_n``, ``r_t = Σ_j β_j d_j`` per contact, the scalar rows copied."""
    m = k + 2
    for i in range(nc):
        a = m * i
        r[3 * i] = x[a]
        t1 = 0.0
        t2 = 0.0
        for j in range(k):
            t1 += x[a + 1 + j] * dirs[j, 0]
            t2 += x[a + 1 + j] * dirs[j, 1]
        r[3 * i + 1] = t1
        r[3 * i + 2] = t2
    for b in range(r.shape[0] - 3 * nc):
        r[3 * nc + b] = x[m * nc + b]


@njit(cache=True)
def pyramid_start(nc: int, k: int, dirs: Vec, r: Vec, u: Vec, x: Vec) -> None:
    """Unknowns ``(r_n, β, λ)`` of impulses ``r``: ``r_t`` on the two directions that
    bracket it, ``λ = max(0, max_j -d_j . u_t)`` (the sliding speed along the pyramid)."""
    m = k + 2
    sector = 2.0 * math.pi / k
    for i in range(nc):
        a = m * i
        x[a] = r[3 * i]
        for j in range(k):
            x[a + 1 + j] = 0.0
        t1, t2 = r[3 * i + 1], r[3 * i + 2]
        if t1 != 0.0 or t2 != 0.0:
            ang = math.atan2(t2, t1)
            if ang < 0.0:
                ang += 2.0 * math.pi
            j0 = int(ang // sector) % k
            j1 = (j0 + 1) % k
            # t = p d_j0 + s d_j1 (Cramer's rule)
            det = dirs[j0, 0] * dirs[j1, 1] - dirs[j0, 1] * dirs[j1, 0]
            p = (t1 * dirs[j1, 1] - t2 * dirs[j1, 0]) / det
            s = (dirs[j0, 0] * t2 - dirs[j0, 1] * t1) / det
            x[a + 1 + j0] = max(p, 0.0)
            x[a + 1 + j1] = max(s, 0.0)
        lam = 0.0
        for j in range(k):
            lam = max(lam, -(dirs[j, 0] * u[3 * i + 1] + dirs[j, 1] * u[3 * i + 2]))
        x[a + k + 1] = lam
    for b in range(r.shape[0] - 3 * nc):
        x[m * nc + b] = r[3 * nc + b]


@njit(cache=True)
def pyramid_pieces(
    nc: int,
    k: int,
    dirs: Vec,
    mu: Vec,
    row_lo: Vec,
    rho: Vec,
    x: Vec,
    u: Vec,
    phi: Vec,
    beta: Vec,
    adiag: Vec,
) -> float:
    """``Φ(x)`` of the Stewart--Trinkle LCP and its piece ``A + B (W_x + E)`` (class
    :class:`PyramidNewton`); returns ``0.5 ||Φ||²``.  ``beta``: ``B``'s diagonal, ``adiag``:
    ``A``'s."""
    m = k + 2
    acc = 0.0
    for i in range(nc):
        a = m * i
        lam = x[a + k + 1]
        rem = mu[i] * x[a]
        for j in range(k + 2):
            row = a + j
            if j == 0:
                w = u[3 * i]
            elif j <= k:
                w = lam + dirs[j - 1, 0] * u[3 * i + 1] + dirs[j - 1, 1] * u[3 * i + 2]
                rem -= x[row]
            else:
                w = rem
            acc += scalar_piece(row, x[row], w, rho[row], False, phi, beta, adiag)
    return 0.5 * bound_pieces(acc, m * nc, 3 * nc, x, u, rho, row_lo, phi, beta, adiag)


@njit(cache=True)
def fill_lcp_values(
    dinv: Vec,
    c_rows: IVec,
    c_val: Vec,
    e_rows: IVec,
    e_val: Vec,
    beta: Vec,
    adiag: Vec,
    reg: Vec,
    slots: IVec,
    out: Vec,
) -> None:
    """Values of :class:`PyramidNewton`'s augmented matrix in CSC order; COO order:
    ``diag(d)^-1``, ``-C_x'``, ``B C_x``, ``A``'s diagonal plus ``reg`` (the blocks of
    :func:`fill_common_values`), ``B E``."""
    nv, n = dinv.shape[0], adiag.shape[0]
    e = fill_common_values(nv, n, dinv, c_rows, c_val, beta, adiag, reg, slots, out)
    for k in range(e_val.shape[0]):
        out[slots[e]] = beta[e_rows[k]] * e_val[k]
        e += 1


class PyramidNewton(_MinNewton):
    """Semismooth Newton on the pyramid law (``law="coulomb"``, ``cone="pyramid"``) in its
    Stewart--Trinkle complementarity form, through the factor ``W = C diag(d) C'``.

    Per contact the unknowns are ``x = (r_n, β_1 .. β_k, λ)`` with ``r_t = Σ_j β_j d_j``
    (``d_j`` the pyramid's unit directions), and the law is the LCP

    - ``0 <= r_n ⟂ u_n >= 0``;
    - ``0 <= β_j ⟂ λ + d_j . u_t >= 0`` (friction only along directions opposing the slip);
    - ``0 <= λ ⟂ mu r_n - Σ_j β_j >= 0`` (sliding at the pyramid's boundary, ``λ = h(u_t) /
      mu``),

    scalar rows as in :class:`BoxNewton`.  With ``r = P x`` its velocity is
    ``w = P' W P x + P' q + E x`` (``E``: ``λ`` in the ``β`` rows, ``mu r_n - Σ β`` in the
    ``λ`` row).  Every row is a min-function ``Φ_j = x_j - max(0, x_j - ρ_j w_j)``
    (``ρ``: ``1 / W_nn`` for ``r_n``, ``1 / (d_j' diag(W_t) d_j)`` for ``β_j``, the mean of
    ``W_t``'s diagonal for ``λ``), piecewise affine with piece ``A + B (P' W P + E)``; the
    augmented system is :class:`BoxNewton`'s with ``C_x = P' C`` and ``B E`` in the lower
    right block, the proximal term ``ε`` on the active rows.  The iteration (line search,
    ``ε``, stopping on the natural map of ``r = P x``) is :class:`BoxNewton`'s.  A start
    ``r`` puts ``r_t`` on the two directions bracketing it and ``λ = max(0, max_j -d_j .
    u_t)``.
    """

    def __init__(self, problem: FrictionalContact, C: sp.spmatrix, d: Vec) -> None:
        if problem.law != "coulomb" or problem.cone != "pyramid":
            raise ValueError(
                "PyramidNewton solves the pyramid law (law='coulomb', cone='pyramid') only"
            )
        C = self._set_factor(problem, C, d)
        n, nv, nc = self.n, self.nv, self.nc
        k = problem.dirs.shape[0]
        m = k + 2
        nb = n - 3 * nc
        N = m * nc + nb
        self.k, self.N = k, N
        self.dirs = np.ascontiguousarray(problem.dirs, dtype=np.float64)
        # P (n x N): r = P x
        ci = np.arange(nc)
        prow = [3 * ci, np.repeat(3 * ci + 1, k), np.repeat(3 * ci + 2, k), 3 * nc + np.arange(nb)]
        bcol = (m * ci[:, None] + 1 + np.arange(k)[None, :]).ravel()
        pcol = [m * ci, bcol, bcol, m * nc + np.arange(nb)]
        pval = [
            np.ones(nc),
            np.tile(self.dirs[:, 0], nc),
            np.tile(self.dirs[:, 1], nc),
            np.ones(nb),
        ]
        P = sp.csr_matrix(
            (np.concatenate(pval), (np.concatenate(prow), np.concatenate(pcol))), shape=(n, N)
        )
        Cx = sp.coo_matrix(P.T @ C)
        Cx.eliminate_zeros()
        self.c_rows = Cx.row.astype(np.int64)
        self.c_val = np.ascontiguousarray(Cx.data, dtype=np.float64)
        # E: λ in the β rows (1), μ r_n and -β in the λ row
        lam = m * ci + k + 1
        e_rows = np.concatenate([bcol, lam, np.repeat(lam, k)]).astype(np.int64)
        e_cols = np.concatenate([np.repeat(lam, k), m * ci, bcol]).astype(np.int64)
        e_val = np.concatenate([np.ones(nc * k), problem.mu, -np.ones(nc * k)])
        self.e_rows, self.e_val = e_rows, np.ascontiguousarray(e_val, dtype=np.float64)
        wdiag = self.wdiag
        rho = np.empty(N)
        rho[m * ci] = 1.0 / wdiag[3 * ci]
        wt1, wt2 = wdiag[3 * ci + 1], wdiag[3 * ci + 2]
        bw = wt1[:, None] * self.dirs[None, :, 0] ** 2 + wt2[:, None] * self.dirs[None, :, 1] ** 2
        rho[bcol] = 1.0 / bw.ravel()
        rho[lam] = 0.5 * (wt1 + wt2)
        rho[m * nc :] = 1.0 / wdiag[3 * nc :]
        self.rho = rho
        rows = np.concatenate(
            [np.arange(nv), Cx.col, nv + Cx.row, nv + np.arange(N), nv + e_rows]
        ).astype(np.int64)
        cols = np.concatenate(
            [np.arange(nv), nv + Cx.row, Cx.col, nv + np.arange(N), nv + e_cols]
        ).astype(np.int64)
        self._set_pattern(rows, cols, nv + N)
        self.P = P

    def _start(self, r: Vec, u: Vec) -> Vec:
        x = np.empty(self.N)
        pyramid_start(self.nc, self.k, self.dirs, r, u, x)
        return x

    def _impulse(self, x: Vec) -> Vec:
        r = np.empty(self.n)
        pyramid_impulse(self.nc, self.k, self.dirs, x, r)
        return r

    def _state(self) -> tuple[Vec, ...]:
        return np.empty(self.N), np.empty(self.N), np.empty(self.N)

    def _pieces(self, x: Vec, u: Vec, state: tuple[Vec, ...]) -> float:
        return self.pieces(x, u, *state)

    def pieces(self, x: Vec, u: Vec, phi: Vec, beta: Vec, adiag: Vec) -> float:
        """:func:`pyramid_pieces` of this problem at ``x`` (``u = W P x + q``)."""
        p = self.problem
        return float(
            pyramid_pieces(
                self.nc, self.k, self.dirs, p.mu, p.row_lo, self.rho, x, u, phi, beta, adiag
            )
        )

    def _matrix(self, state: tuple[Vec, ...], eps: float) -> sp.csc_matrix:
        return self.matrix(state[1], state[2], eps)

    def matrix(self, beta: Vec, adiag: Vec, eps: float) -> sp.csc_matrix:
        """The augmented matrix of the piece ``(beta, adiag)`` with the term ``ε``."""
        reg = np.where(beta > 0.0, eps, 0.0)
        fill_lcp_values(
            self.dinv, self.c_rows, self.c_val, self.e_rows, self.e_val, beta, adiag, reg,
            self.slots, self.values,
        )  # fmt: skip
        size = self.nv + self.N
        return sp.csc_matrix((self.values, self.K_indices, self.K_indptr), shape=(size, size))


@njit(cache=True)
def soc_pieces(
    nc: int,
    mu: Vec,
    row_lo: Vec,
    rho: Vec,
    r: Vec,
    u: Vec,
    phi: Vec,
    bself: Vec,
    bcross: Vec,
    aself: Vec,
    across: Vec,
    aoff: Vec,
) -> float:
    """``Φ(r)`` of Alart--Curnier's function on the exact cone and its piece ``A + B W``
    (:class:`SocNewton`); returns ``0.5 ||Φ||²``.

    Per row ``j``: ``bself[j]`` (``B_jj``), ``aself[j]`` (``A_jj``), and for a tangent row
    the entries of its contact's other tangent row ``p``: ``bcross[j] = B_pj``,
    ``across[j] = A_pj`` (0 on the other rows); ``aoff[2 i + k]`` the entry of row
    ``3 i + 1 + k`` in column ``3 i``.
    """
    acc = 0.0
    for i in range(nc):
        j = 3 * i
        rn = r[j]
        acc += scalar_piece(j, rn, u[j], rho[j], False, phi, bself, aself)
        bcross[j] = 0.0
        across[j] = 0.0
        t1, t2 = j + 1, j + 2
        rt = rho[t1]  # one ρ for both tangent rows (the disk stays a disk)
        z1 = r[t1] - rt * u[t1]
        z2 = r[t2] - rt * u[t2]
        radius = mu[i] * rn if rn > 0.0 else 0.0
        nz = math.sqrt(z1 * z1 + z2 * z2)
        if radius > 0.0 and nz <= radius:
            # sticking: Φ_t = ρ u_t
            phi[t1], phi[t2] = rt * u[t1], rt * u[t2]
            bself[t1] = bself[t2] = rt
            bcross[t1] = bcross[t2] = 0.0
            aself[t1] = aself[t2] = 0.0
            across[t1] = across[t2] = 0.0
            aoff[2 * i] = aoff[2 * i + 1] = 0.0
        elif radius > 0.0:
            # sliding: Φ_t = r_t - radius z / |z|; with Π = I - ẑẑ' and s = radius / |z|,
            # dΦ_t = (I - s Π) dr_t + ρ s Π du_t - mu ẑ dr_n
            e1, e2 = z1 / nz, z2 / nz
            s = radius / nz
            phi[t1], phi[t2] = r[t1] - radius * e1, r[t2] - radius * e2
            p11, p22, p12 = 1.0 - e1 * e1, 1.0 - e2 * e2, -e1 * e2
            bself[t1], bself[t2] = rt * s * p11, rt * s * p22
            bcross[t1] = bcross[t2] = rt * s * p12
            aself[t1], aself[t2] = 1.0 - s * p11, 1.0 - s * p22
            across[t1] = across[t2] = -s * p12
            aoff[2 * i], aoff[2 * i + 1] = -mu[i] * e1, -mu[i] * e2
        else:
            # no normal impulse: Φ_t = r_t
            phi[t1], phi[t2] = r[t1], r[t2]
            bself[t1] = bself[t2] = 0.0
            bcross[t1] = bcross[t2] = 0.0
            aself[t1] = aself[t2] = 1.0
            across[t1] = across[t2] = 0.0
            aoff[2 * i] = aoff[2 * i + 1] = 0.0
        acc += phi[t1] * phi[t1] + phi[t2] * phi[t2]
    for m in range(row_lo.shape[0]):
        j = 3 * nc + m
        acc += scalar_piece(j, r[j], u[j], rho[j], row_lo[m] == -np.inf, phi, bself, aself)
        bcross[j] = 0.0
        across[j] = 0.0
    return 0.5 * acc


@njit(cache=True)
def fill_soc_values(
    nv: int,
    n: int,
    dinv: Vec,
    c_rows: IVec,
    c_val: Vec,
    bself: Vec,
    bcross: Vec,
    aself: Vec,
    across: Vec,
    aoff: Vec,
    eps: float,
    wdiag: Vec,
    slots: IVec,
    out: Vec,
) -> None:
    """Values of :class:`SocNewton`'s augmented matrix in CSC order (``slots``: COO entry ->
    CSC slot; entries on one slot add up).  COO order: ``diag(d)^-1``, ``-C'``, ``B C``'s
    own-row part, its partner-row part, ``A + ε B diag(W)``'s diagonal, its partner
    entries, ``A``'s sliding entries in the normal's column."""
    out[:] = 0.0
    e = 0
    for k in range(nv):
        out[slots[e]] += dinv[k]
        e += 1
    nnz = c_val.shape[0]
    for k in range(nnz):
        out[slots[e]] += -c_val[k]
        e += 1
    for k in range(nnz):
        out[slots[e]] += bself[c_rows[k]] * c_val[k]
        e += 1
    for k in range(nnz):
        out[slots[e]] += bcross[c_rows[k]] * c_val[k]
        e += 1
    for j in range(n):
        out[slots[e]] += aself[j] + eps * bself[j] * wdiag[j]
        e += 1
    for j in range(n):
        out[slots[e]] += across[j] + eps * bcross[j] * wdiag[j]
        e += 1
    for k in range(aoff.shape[0]):
        out[slots[e]] += aoff[k]
        e += 1


class SocNewton(_MinNewton):
    """Semismooth Newton on the Coulomb law on the exact cone (De Saxcé's NCP,
    ``law="coulomb"``, ``cone="soc"``) through the factor ``W = C diag(d) C'``.

    Alart--Curnier's function (the box law's of the module docstring with the disk in place
    of the square):

    .. math::

        \\Phi_n = r_n - \\max(0, r_n - \\rho_n u_n), \\qquad
        \\Phi_t = r_t - P_{D(\\mu \\max(r_n, 0))}(r_t - \\rho_t u_t),

    ``ρ_n = rho_scale / W_nn``, ``ρ_t`` = ``rho_scale`` / the mean of the contact's two
    tangent diagonal entries of ``W`` (``rho_scale`` 1 by default; ``ipm``'s finish, which
    starts near a solution, passes 10: on the 18 saved steps of the 100- and 200-box drop
    transients that its rounds left short, after 500 iterations and 200 sweeps, 10
    converges on all 18 in 7-49 iterations, 1 on 17 in 9-104, the 18th stalling at 1.1e-6
    with no descent, as 0.1 and 0.01 do; from ``r = 0`` on small random problems 10 caps
    on five of eight where 1 converges in 5-9); it vanishes exactly at the law's solutions
    (``r_n > 0`` forces ``u_n = 0``: no separation while sliding; sliding
    ``r_t = -mu r_n u_t / |u_t|``).  A sliding contact's piece couples its two tangent rows
    (``B``'s 2x2 block ``ρ_t s Π``, ``A``'s ``I - s Π``, ``Π = I - ẑẑ'``,
    ``s = mu r_n / |z|``), so the augmented matrix has ``B C``'s rows mixed pairwise; its
    pattern is built once, entries on one slot add up.  The iteration (line search,
    proximal term ``ε B diag(W)``, stopping on the project's natural map) is
    :class:`BoxNewton`'s.
    """

    _cone_code = 0

    def __init__(
        self, problem: FrictionalContact, C: sp.spmatrix, d: Vec, rho_scale: float = 1.0
    ) -> None:
        if problem.law != "coulomb" or problem.cone != "soc":
            raise ValueError("SocNewton solves the Coulomb law on the exact cone only")
        C = self._set_factor(problem, C, d)
        n, nv, nc = self.n, self.nv, self.nc
        coo = C.tocoo()
        self.c_rows = coo.row.astype(np.int64)
        self.c_val = np.ascontiguousarray(coo.data, dtype=np.float64)
        rho = rho_scale / self.wdiag
        ci = np.arange(nc)
        tangent = self.wdiag[3 * ci + 1] + self.wdiag[3 * ci + 2]
        rho[3 * ci + 1] = rho[3 * ci + 2] = 2.0 * rho_scale / tangent
        self.rho = rho
        # each row's partner: the contact's other tangent row (itself on the other rows)
        partner = np.arange(n, dtype=np.int64)
        partner[3 * ci + 1], partner[3 * ci + 2] = 3 * ci + 2, 3 * ci + 1
        tang = np.sort(np.concatenate([3 * ci + 1, 3 * ci + 2]))
        rows = np.concatenate(
            [np.arange(nv), coo.col, nv + coo.row, nv + partner[coo.row], nv + np.arange(n),
             nv + partner, nv + tang]
        ).astype(np.int64)  # fmt: skip
        cols = np.concatenate(
            [np.arange(nv), nv + coo.row, coo.col, coo.col, nv + np.arange(n), nv + np.arange(n),
             nv + 3 * (tang // 3)]
        ).astype(np.int64)  # fmt: skip
        self._set_pattern(rows, cols, nv + n)

    def pieces(self, r: Vec, u: Vec, *state: Vec) -> float:
        """:func:`soc_pieces` of this problem into ``state`` (``phi, bself, bcross, aself,
        across, aoff``); returns ``0.5 ||Φ||²``."""
        p = self.problem
        return float(soc_pieces(p.nc, p.mu, p.row_lo, self.rho, r, u, *state))

    def matrix(self, state: tuple[Vec, ...], eps: float) -> sp.csc_matrix:
        """The augmented matrix of the piece ``state`` with the term ``ε``."""
        _, bself, bcross, aself, across, aoff = state
        fill_soc_values(
            self.nv, self.n, self.dinv, self.c_rows, self.c_val, bself, bcross, aself, across,
            aoff, eps, self.wdiag, self.slots, self.values,
        )  # fmt: skip
        size = self.nv + self.n
        return sp.csc_matrix((self.values, self.K_indices, self.K_indptr), shape=(size, size))

    def _state(self) -> tuple[Vec, ...]:
        n = self.n
        return (*(np.empty(n) for _ in range(5)), np.empty(2 * self.nc))

    def _pieces(self, x: Vec, u: Vec, state: tuple[Vec, ...]) -> float:
        return self.pieces(x, u, *state)

    def _matrix(self, state: tuple[Vec, ...], eps: float) -> sp.csc_matrix:
        return self.matrix(state, eps)
