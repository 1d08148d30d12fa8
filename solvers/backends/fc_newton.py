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
once (only its values change; the CSC wrapper around them is the only sparse object made
per iteration), ``δu = C δv``.  Globalised by a backtracking (Armijo) line search on
``0.5 ||Φ||²``, nonmonotone (against the largest merit of the last 30 iterates), down to
steps of ``2^-20``; when no step length decreases it, ``ε`` grows tenfold and the iteration
retries, up to ``ε = 100`` (then it stops, reason ``"no descent"``).  ``ε`` starts at
``1e-8`` (relative to ``diag(W)``), falls tenfold after each full step and rises tenfold
after each shortened one.

The stopping test is the project's natural map (:func:`~solvers.backends.fc_kernels.natural_map`,
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

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.backends.fc_kernels import factor_velocity, natural_map
from solvers.frictional import FrictionalContact
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
    for k in range(2 * nc):
        out[slots[e]] = aoff[k]
        e += 1


class BoxNewton:
    """Semismooth Newton on the box law of ``problem`` through its factor ``W = C diag(d) C'``.

    :meth:`solve` runs from a start ``r0`` (module docstring); the pattern of the augmented
    matrix and its CSC slots are built here once.
    """

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

    def __init__(self, problem: FrictionalContact, C: sp.spmatrix, d: Vec) -> None:
        if problem.law != "coulomb" or problem.cone != "box":
            raise ValueError("BoxNewton solves the box law (law='coulomb', cone='box') only")
        self.problem = problem
        C = sp.csr_matrix(C)
        C.sort_indices()
        n, nv = C.shape
        nc = problem.nc
        self.n, self.nv, self.nc = n, nv, nc
        self.C = C
        self.fptr = C.indptr.astype(np.int64)
        self.fidx = C.indices.astype(np.int64)
        self.fval = np.ascontiguousarray(C.data, dtype=np.float64)
        self.d = np.ascontiguousarray(d, dtype=np.float64)
        self.tmp = np.empty(nv)
        self.qnorm = float(np.linalg.norm(problem.q))
        coo = C.tocoo()
        self.c_rows = coo.row.astype(np.int64)
        self.c_val = np.ascontiguousarray(coo.data, dtype=np.float64)
        self.dinv = 1.0 / self.d
        diag = np.asarray(problem.diagonal(), dtype=np.float64)
        self.wdiag = np.where(diag > 0.0, diag, 1.0)
        self.rho = 1.0 / self.wdiag
        # tangent rows in order 3 i + 1 + k: the (2 i + k)-th, as aoff is stored
        tang = np.sort(np.concatenate([3 * np.arange(nc) + 1, 3 * np.arange(nc) + 2]))
        rows = np.concatenate(
            [np.arange(nv), coo.col, nv + coo.row, nv + np.arange(n), nv + tang]
        ).astype(np.int64)
        cols = np.concatenate(
            [np.arange(nv), nv + coo.row, coo.col, nv + np.arange(n), nv + 3 * (tang // 3)]
        ).astype(np.int64)
        # each COO entry tagged by its index + 1: where it lands in CSC order gives its slot
        tags = np.arange(1, rows.size + 1, dtype=np.float64)
        K = sp.coo_matrix((tags, (rows, cols)), shape=(nv + n, nv + n)).tocsc()
        K.sort_indices()
        slots = np.empty(rows.size, dtype=np.int64)
        slots[np.rint(K.data).astype(np.int64) - 1] = np.arange(rows.size)
        self.slots = slots
        self.K_indptr, self.K_indices = K.indptr.copy(), K.indices.copy()
        self.values = np.zeros(rows.size)

    def velocity(self, r: Vec, out: Vec) -> None:
        """``out = W r + q`` through the factor."""
        factor_velocity(self.fptr, self.fidx, self.fval, self.d, r, self.problem.q, self.tmp, out)

    def natural(self, r: Vec, u: Vec) -> float:
        """The project's natural map of the box law at ``(r, u)`` (relative to ``||q||``)."""
        p = self.problem
        return float(natural_map(1, 1, p.mu, p.dirs, p.row_lo, p.nc, r, u, self.qnorm))

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

        n, nv, nc = self.n, self.nv, self.nc
        r = np.array(r0, dtype=np.float64)
        u = np.empty(n)
        self.velocity(r, u)
        phi, beta, adiag, aoff = np.empty(n), np.empty(n), np.empty(n), np.empty(2 * nc)
        phi_t, beta_t, adiag_t, aoff_t = np.empty(n), np.empty(n), np.empty(n), np.empty(2 * nc)
        res = self.natural(r, u)
        best_r, best = r.copy(), res
        it, reason = 0, "cap"
        theta = self.pieces(r, u, phi, beta, adiag, aoff)
        history = [theta]
        rhs = np.zeros(nv + n)
        eps = self.eps_start if eps is None else float(eps)
        r_t, t = r, 1.0
        while it < max_iter:
            if res <= tol:
                reason = "converged"
                break
            it += 1
            accepted = False
            while not accepted and eps <= self.eps_cap:
                try:
                    lu = spla.splu(self.matrix(beta, adiag, aoff, eps), permc_spec="COLAMD")
                except RuntimeError:  # exactly singular: a larger proximal term
                    eps *= 10.0
                    continue
                rhs[nv:] = -phi
                sol = lu.solve(rhs)
                if not np.all(np.isfinite(sol)):
                    eps *= 10.0
                    continue
                dr = sol[nv:]
                du = self.C @ sol[:nv]
                ref = max(history[-self.nonmonotone :])
                t = 1.0
                while t >= self.shortest:
                    r_t = r + t * dr
                    th = self.pieces(r_t, u + t * du, phi_t, beta_t, adiag_t, aoff_t)
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
            r = r_t
            self.velocity(r, u)  # exact, not u + t du, for the next piece and the test
            theta = self.pieces(r, u, phi, beta, adiag, aoff)
            history.append(theta)
            res = self.natural(r, u)
            if res < best:
                best_r, best = r.copy(), res
        if best < res:
            r, res = best_r, best
        if res <= tol:
            reason = "converged"
        return r, it, float(res), reason
