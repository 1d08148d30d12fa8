"""Semismooth Newton on the box law's complementarity function (the ``ipm`` backend's finish).

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
once (only its values change), ``δu = C δv``.  Globalised by a backtracking (Armijo) line
search on ``0.5 ||Φ||²``; when no step length decreases it, ``ε`` grows tenfold (the step
turns toward ``-J'Φ``) and the iteration retries.  ``ε`` starts at
``min(1e-6, ||Φ||)`` relative to ``diag(W)`` and shrinks with ``||Φ||``, so the
iteration is Newton's near a solution.

The stopping test is the project's natural map (:func:`~solvers.backends.fc_kernels.natural_map`,
the projection on the box cone itself, ``ρ = 1``, relative to ``||q||``), not ``||Φ||``;
the iterate with the smallest natural map is returned.  The per-row pieces (``Φ``, ``A``,
``B``) and the matrix values are filled by compiled kernels; Python runs once per
iteration.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.jit import njit

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


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
        zn = rn - rho[j] * u[j]
        if zn > 0.0:
            phi[j] = rho[j] * u[j]
            beta[j] = rho[j]
            adiag[j] = 0.0
        else:
            phi[j] = rn
            beta[j] = 0.0
            adiag[j] = 1.0
        acc += phi[j] * phi[j]
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
    for m in range(row_lo.shape[0]):
        j = 3 * nc + m
        if row_lo[m] == -np.inf or r[j] - rho[j] * u[j] > 0.0:
            phi[j] = rho[j] * u[j]
            beta[j] = rho[j]
            adiag[j] = 0.0
        else:
            phi[j] = r[j]
            beta[j] = 0.0
            adiag[j] = 1.0
        acc += phi[j] * phi[j]
    return 0.5 * acc


@njit(cache=True)
def _fb(a: float, b: float) -> tuple[float, float, float]:
    """``a + b - sqrt(a² + b²)`` (zero iff ``a, b >= 0``, ``ab = 0``) and its two partials."""
    s = math.sqrt(a * a + b * b)
    if s == 0.0:
        return 0.0, 1.0 - 0.7071067811865476, 1.0 - 0.7071067811865476
    return a + b - s, 1.0 - a / s, 1.0 - b / s


@njit(cache=True)
def box_pieces_fb(
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
    """Fischer--Burmeister's ``Φ(r)`` and its Jacobian ``A + B W`` (as :func:`box_pieces`).

    ``Φ_n = φ(r_n, ρ u_n)``; per axis the two-sided form ``φ(r_t + b, -φ(b - r_t, -ρ u_t))``
    with ``b = mu max(r_n, 0)``; ``φ(a, c) = a + c - sqrt(a² + c²)``.
    """
    acc = 0.0
    for i in range(nc):
        j = 3 * i
        rn = r[j]
        f, da, db = _fb(rn, rho[j] * u[j])
        phi[j] = f
        adiag[j] = da
        beta[j] = db * rho[j]
        acc += f * f
        m = mu[i] if rn > 0.0 else 0.0
        b = m * rn
        for k in range(2):
            t = j + 1 + k
            g, da1, db1 = _fb(b - r[t], -rho[t] * u[t])
            f, da2, db2 = _fb(r[t] + b, -g)
            phi[t] = f
            adiag[t] = da2 + db2 * da1
            aoff[2 * i + k] = m * (da2 - db2 * da1)
            beta[t] = db2 * db1 * rho[t]
            acc += f * f
    for q in range(row_lo.shape[0]):
        j = 3 * nc + q
        if row_lo[q] == -np.inf:
            phi[j] = rho[j] * u[j]
            beta[j] = rho[j]
            adiag[j] = 0.0
        else:
            f, da, db = _fb(r[j], rho[j] * u[j])
            phi[j] = f
            adiag[j] = da
            beta[j] = db * rho[j]
        acc += phi[j] * phi[j]
    return 0.5 * acc


@njit(cache=True)
def fill_values(
    nv: int,
    nc: int,
    n: int,
    dinv: Vec,
    ct_val: Vec,
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
    e = 0
    for k in range(nv):
        out[slots[e]] = dinv[k]
        e += 1
    nnz = c_val.shape[0]
    for k in range(nnz):
        out[slots[e]] = -ct_val[k]
        e += 1
    for k in range(nnz):
        out[slots[e]] = beta[c_rows[k]] * c_val[k]
        e += 1
    for j in range(n):
        out[slots[e]] = adiag[j] + reg[j]
        e += 1
    for k in range(2 * nc):
        out[slots[e]] = aoff[k]
        e += 1


class BoxNewton:
    """Semismooth Newton on the box law for one problem with its factor ``W = C diag(d) C'``.

    ``velocity(r, out)`` writes ``W r + q``; ``natural(r, u)`` returns the project's natural
    map.  :meth:`solve` runs from a start ``r0``.
    """

    #: Armijo's constant and the shortest step tried before ``ε`` grows.
    armijo = 1e-4
    shortest = 1.0 / 1024.0
    #: ``ε`` bounds (relative to ``diag(W)``) and its growth when no step decreases.
    eps_start = 1e-4
    eps_down = 0.1
    eps_min = 1e-10
    eps_cap = 1e2
    nonmonotone = 10
    trace = False
    function = "min"

    def __init__(self, problem, C: sp.csr_matrix, d: Vec, velocity, natural) -> None:  # type: ignore[no-untyped-def]
        self.problem = problem
        self.pieces = box_pieces_fb if self.function == "fb" else box_pieces
        self.velocity = velocity
        self.natural = natural
        n, nv = C.shape
        self.n, self.nv, self.nc = n, nv, problem.nc
        C = sp.csr_matrix(C)
        C.sort_indices()
        coo = C.tocoo()
        self.C = C
        self.c_rows = coo.row.astype(np.int64)
        self.c_val = np.ascontiguousarray(coo.data, dtype=np.float64)
        self.dinv = 1.0 / np.asarray(d, dtype=np.float64)
        diag = np.asarray(problem.diagonal(), dtype=np.float64)
        self.wdiag = np.where(diag > 0.0, diag, 1.0)
        self.rho = 1.0 / self.wdiag
        nc = self.nc
        tang = np.concatenate([3 * np.arange(nc) + 1, 3 * np.arange(nc) + 2])
        tang = np.sort(tang)
        normal_of = 3 * (tang // 3)
        rows = np.concatenate(
            [np.arange(nv), coo.col, nv + coo.row, nv + np.arange(n), nv + tang]
        ).astype(np.int64)
        cols = np.concatenate(
            [np.arange(nv), nv + coo.row, coo.col, nv + np.arange(n), nv + normal_of]
        ).astype(np.int64)
        ones = np.arange(1, rows.size + 1, dtype=np.float64)
        K = sp.coo_matrix((ones, (rows, cols)), shape=(nv + n, nv + n)).tocsc()
        K.sort_indices()
        order = np.rint(K.data).astype(np.int64) - 1
        slots = np.empty(rows.size, dtype=np.int64)
        slots[order] = np.arange(rows.size)
        self.slots = slots
        self.K_indptr, self.K_indices = K.indptr.copy(), K.indices.copy()
        self.values = np.zeros(rows.size)
        # aoff is stored per contact (2 i + k), the COO sliding entries are in row order
        # of ``tang``: row 3 i + 1 + k is the (2 i + k)-th, the same order
        self.ct_val = self.c_val  # -C' carries C's entries in the same COO order

    def solve(
        self, r0: Vec, tol: float, max_iter: int
    ) -> tuple[Vec, int, float, str]:
        """Newton's iteration from ``r0``: ``(r, iterations, natural map, reason)``."""
        import scipy.sparse.linalg as spla

        problem = self.problem
        n, nv, nc = self.n, self.nv, self.nc
        r = np.array(r0, dtype=np.float64)
        u = np.empty(n)
        self.velocity(r, u)
        phi, beta, adiag = np.empty(n), np.empty(n), np.empty(n)
        aoff = np.empty(2 * nc)
        phi_t, beta_t, adiag_t, aoff_t = np.empty(n), np.empty(n), np.empty(n), np.empty(2 * nc)
        res = self.natural(r, u)
        best_r, best = r.copy(), res
        it, reason = 0, "cap"
        theta = self.pieces(nc, problem.mu, problem.row_lo, self.rho, r, u, phi, beta, adiag, aoff)
        rhs = np.zeros(nv + n)
        du = np.empty(n)
        eps = self.eps_start
        history = [theta]
        while it < max_iter:
            if res <= tol:
                reason = "converged"
                break
            it += 1
            accepted = False
            while not accepted and eps <= self.eps_cap:
                fill_values(
                    nv, nc, n, self.dinv, self.ct_val, self.c_rows, self.c_val, beta, adiag,
                    aoff, eps * beta * self.wdiag, self.slots, self.values,
                )  # fmt: skip
                K = sp.csc_matrix(
                    (self.values, self.K_indices, self.K_indptr), shape=(nv + n, nv + n)
                )
                try:
                    lu = spla.splu(K, permc_spec="COLAMD")
                except RuntimeError:  # exactly singular: more regularisation
                    eps *= 10.0
                    continue
                rhs[nv:] = -phi
                sol = lu.solve(rhs)
                dv, dr = sol[:nv], sol[nv:]
                if not np.all(np.isfinite(sol)):
                    eps *= 10.0
                    continue
                du[:] = self.C @ dv
                t = 1.0
                ref = max(history[-self.nonmonotone :])
                while t >= self.shortest:
                    r_t = r + t * dr
                    u_t = u + t * du
                    th = self.pieces(
                        nc, problem.mu, problem.row_lo, self.rho, r_t, u_t, phi_t, beta_t,
                        adiag_t, aoff_t,
                    )  # fmt: skip
                    if th <= ref - 2.0 * self.armijo * t * theta:
                        accepted = True
                        break
                    t *= 0.5
                if not accepted:
                    eps *= 10.0
            if not accepted:
                reason = "no descent"
                break
            eps = max(eps * self.eps_down, self.eps_min) if t == 1.0 else min(eps * 10.0, self.eps_cap)
            r = r_t
            self.velocity(r, u)  # u + t du up to rounding: the exact one for the test
            theta = self.pieces(
                nc, problem.mu, problem.row_lo, self.rho, r, u, phi, beta, adiag, aoff
            )
            history.append(theta)
            res = self.natural(r, u)
            if self.trace:
                print(it, f"theta {theta:.3e} t {t:.4g} eps {eps:.1e} res {res:.3e}")
            if res < best:
                best_r, best = r.copy(), res
        if best < res:
            r, res = best_r, best
        if res <= tol:
            reason = "converged"
        return r, it, float(res), reason
