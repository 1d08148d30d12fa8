"""Sparse Cholesky ``P K P' = L L'`` of an SPD matrix by dense square blocks.

The normal matrix of :mod:`solvers.backends.fc_ipm` in maximal coordinates is
made of the bodies' dense ``6 x 6`` blocks.  A scalar LDL' (``qdldl``) walks
its entries one by one; here the unknowns are grouped in consecutive blocks of
``bs`` and the factorisation runs over the block graph, every operation a dense
``bs x bs`` product or triangular solve (the same arithmetic as a scalar
Cholesky, without its indirect addressing per entry).

Symbolic analysis, once per pattern (:func:`analyse`): the block pattern of
the upper triangle, a fill-reducing order of the blocks (the caller passes it:
``qdldl``'s approximate minimum degree on the block graph), the elimination
tree and the block structure of every column of ``L`` (children's structures
merged), the transposed (row) structure, and for every stored entry of ``K``
the slot it is added to.  Numeric factorisation (:func:`factor`): left-looking,
column ``j`` gathers ``L_jk`` of its row structure, ``A_ij -= L_ik L_jk'``,
then ``L_jj = chol(A_jj)`` and ``L_ij = A_ij L_jj^{-T}``.  :func:`solve`:
forward and backward substitution by blocks.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.csr import find_sorted

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]
#: The block size of :func:`factor` (a constant, so that its loops unroll).
BS = 6


@njit(cache=True)
def block_graph(colptr: IVec, rows: IVec, bs: int) -> tuple:
    """Symmetric adjacency (CSR, no diagonal, sorted) of the blocks of an upper CSC pattern."""
    n = colptr.shape[0] - 1
    nb = n // bs
    mark = np.full(nb, -1, dtype=np.int64)
    deg = np.zeros(nb, dtype=np.int64)
    # pass 1: distinct upper block pairs (I < J) per block column J
    for J in range(nb):
        for c in range(J * bs, (J + 1) * bs):
            for e in range(colptr[c], colptr[c + 1]):
                i = rows[e] // bs
                if i < J and mark[i] != J:
                    mark[i] = J
                    deg[i] += 1
                    deg[J] += 1
    ptr = np.zeros(nb + 1, dtype=np.int64)
    for b in range(nb):
        ptr[b + 1] = ptr[b] + deg[b]
    adj = np.empty(ptr[nb], dtype=np.int64)
    fill = ptr[:-1].copy()
    mark[:] = -1
    for J in range(nb):
        for c in range(J * bs, (J + 1) * bs):
            for e in range(colptr[c], colptr[c + 1]):
                i = rows[e] // bs
                if i < J and mark[i] != J:
                    mark[i] = J
                    adj[fill[i]] = J
                    fill[i] += 1
                    adj[fill[J]] = i
                    fill[J] += 1
    for b in range(nb):
        adj[ptr[b] : ptr[b + 1]] = np.sort(adj[ptr[b] : ptr[b + 1]])
    return ptr, adj


@njit(cache=True)
def _symbolic(ptr: IVec, adj: IVec, perm: IVec) -> tuple:
    """Elimination tree and block column / row structures of ``L`` in the order ``perm``."""
    nb = ptr.shape[0] - 1
    iperm = np.empty(nb, dtype=np.int64)
    for k in range(nb):
        iperm[perm[k]] = k
    # elimination tree (Liu, with path compression), from the lower neighbours
    parent = np.full(nb, -1, dtype=np.int64)
    ancestor = np.full(nb, -1, dtype=np.int64)
    for j in range(nb):
        old = perm[j]
        for e in range(ptr[old], ptr[old + 1]):
            i = iperm[adj[e]]
            while i != -1 and i < j:
                nxt = ancestor[i]
                ancestor[i] = j
                if nxt == -1:
                    parent[i] = j
                i = nxt
    # children lists
    cptr = np.zeros(nb + 1, dtype=np.int64)
    for j in range(nb):
        if parent[j] >= 0:
            cptr[parent[j] + 1] += 1
    for j in range(nb):
        cptr[j + 1] += cptr[j]
    child = np.empty(cptr[nb], dtype=np.int64)
    cf = cptr[:-1].copy()
    for j in range(nb):
        p = parent[j]
        if p >= 0:
            child[cf[p]] = j
            cf[p] += 1
    # column structures: lower neighbours and the children's structures, without j
    cap = max(16, 4 * ptr[nb])
    buf = np.empty(cap, dtype=np.int64)
    lptr = np.zeros(nb + 1, dtype=np.int64)
    mark = np.full(nb, -1, dtype=np.int64)
    pos = 0
    for j in range(nb):
        start = pos
        need = ptr[perm[j] + 1] - ptr[perm[j]]
        for t in range(cptr[j], cptr[j + 1]):
            c = child[t]
            need += lptr[c + 1] - lptr[c]
        if pos + need > cap:
            cap = max(2 * cap, pos + need)
            grown = np.empty(cap, dtype=np.int64)
            grown[:pos] = buf[:pos]
            buf = grown
        mark[j] = j
        old = perm[j]
        for e in range(ptr[old], ptr[old + 1]):
            i = iperm[adj[e]]
            if i > j and mark[i] != j:
                mark[i] = j
                buf[pos] = i
                pos += 1
        for t in range(cptr[j], cptr[j + 1]):
            c = child[t]
            for q in range(lptr[c], lptr[c + 1]):
                i = buf[q]
                if i > j and mark[i] != j:
                    mark[i] = j
                    buf[pos] = i
                    pos += 1
        buf[start:pos] = np.sort(buf[start:pos])
        lptr[j + 1] = pos
    lrows = buf[:pos].copy()
    # row structures: for each j the columns k < j with L_jk != 0, and the slot of L_jk
    rcnt = np.zeros(nb + 1, dtype=np.int64)
    for q in range(pos):
        rcnt[lrows[q] + 1] += 1
    for j in range(nb):
        rcnt[j + 1] += rcnt[j]
    rcols = np.empty(pos, dtype=np.int64)
    rslot = np.empty(pos, dtype=np.int64)
    rf = rcnt[:-1].copy()
    for k in range(nb):
        for q in range(lptr[k], lptr[k + 1]):
            i = lrows[q]
            rcols[rf[i]] = k
            rslot[rf[i]] = q
            rf[i] += 1
    return iperm, lptr, lrows, rcnt, rcols, rslot


@njit(cache=True)
def _entry_slots(colptr: IVec, rows: IVec, bs: int, iperm: IVec, lptr: IVec, lrows: IVec) -> tuple:
    """For each stored entry of the upper ``K``: its slot in ``L``'s storage (and the mirror
    slot of an off-diagonal entry of a diagonal block, else -1).

    Diagonal blocks first (``nb bs^2`` numbers, row-major), then the off-diagonal
    blocks of ``L`` column by column (``L_ij`` row-major: rows of block ``i``)."""
    n = colptr.shape[0] - 1
    nb = n // bs
    b2 = bs * bs
    off = nb * b2
    first = np.empty(rows.shape[0], dtype=np.int64)
    second = np.full(rows.shape[0], -1, dtype=np.int64)
    for c in range(n):
        J, cj = c // bs, c % bs
        jn = iperm[J]
        for e in range(colptr[c], colptr[c + 1]):
            r = rows[e]
            ii, ri = r // bs, r % bs
            inew = iperm[ii]
            if inew == jn:
                first[e] = jn * b2 + ri * bs + cj
                if ri != cj:
                    second[e] = jn * b2 + cj * bs + ri
            elif inew > jn:
                p = find_sorted(lrows, lptr[jn], lptr[jn + 1], inew)
                first[e] = off + p * b2 + ri * bs + cj
            else:
                p = find_sorted(lrows, lptr[inew], lptr[inew + 1], jn)
                first[e] = off + p * b2 + cj * bs + ri
    return first, second


@njit(cache=True)
def _update(L: Vec, src: int, dst: int, T: Vec) -> None:
    """``L[dst] -= L[src] T`` for 6x6 row-major blocks (a row's six sums in registers)."""
    for a in range(6):
        r = src + 6 * a
        l0, l1, l2, l3, l4, l5 = L[r], L[r + 1], L[r + 2], L[r + 3], L[r + 4], L[r + 5]
        w = dst + 6 * a
        for b in range(6):
            L[w + b] -= (
                l0 * T[b] + l1 * T[6 + b] + l2 * T[12 + b]
                + l3 * T[18 + b] + l4 * T[24 + b] + l5 * T[30 + b]
            )  # fmt: skip


@njit(cache=True)
def factor(
    values: Vec,
    first: IVec,
    second: IVec,
    lptr: IVec,
    lrows: IVec,
    rptr: IVec,
    rcols: IVec,
    rslot: IVec,
    L: Vec,
    shift: float,
) -> bool:
    """Numeric factorisation of ``K + shift max(diag K) I`` into ``L`` (module docstring);
    ``False`` on a pivot <= 0 (or not finite).

    Blocks of ``BS`` (a compile-time constant: the small loops unroll)."""
    nb = lptr.shape[0] - 1
    b2 = BS * BS
    off = nb * b2
    L[:] = 0.0
    for e in range(values.shape[0]):
        L[first[e]] += values[e]
        if second[e] >= 0:
            L[second[e]] += values[e]
    if shift > 0.0:
        top = 0.0
        for j in range(nb):
            for a in range(BS):
                top = max(top, abs(L[j * b2 + a * BS + a]))
        for j in range(nb):
            for a in range(BS):
                L[j * b2 + a * BS + a] += shift * top
    posmap = np.full(nb, -1, dtype=np.int64)
    T = np.empty(b2)  # L_jk transposed: T[m, b] = L_jk[b, m]
    for j in range(nb):
        for p in range(lptr[j], lptr[j + 1]):
            posmap[lrows[p]] = p
        dj = j * b2
        for t in range(rptr[j], rptr[j + 1]):
            k = rcols[t]
            pj = rslot[t]  # slot of L_jk in column k
            bj = off + pj * b2
            for m in range(BS):
                for b in range(BS):
                    T[m * BS + b] = L[bj + b * BS + m]
            # A_jj -= L_jk L_jk' and A_ij -= L_ik L_jk' for the rows i > j of column k
            _update(L, bj, dj, T)
            for q in range(pj + 1, lptr[k + 1]):
                _update(L, off + q * b2, off + posmap[lrows[q]] * b2, T)
        # L_jj = chol(A_jj), lower, in place
        for a in range(BS):
            s = L[dj + a * BS + a]
            for m in range(a):
                s -= L[dj + a * BS + m] * L[dj + a * BS + m]
            if not s > 0.0:
                return False
            piv = np.sqrt(s)
            L[dj + a * BS + a] = piv
            for b in range(a + 1, BS):
                s = L[dj + b * BS + a]
                for m in range(a):
                    s -= L[dj + b * BS + m] * L[dj + a * BS + m]
                L[dj + b * BS + a] = s / piv
        # L_ij = A_ij L_jj^{-T}: each row x of A_ij solves L_jj x' = a'
        for p in range(lptr[j], lptr[j + 1]):
            bi = off + p * b2
            for a in range(BS):
                for b in range(BS):
                    s = L[bi + a * BS + b]
                    for m in range(b):
                        s -= L[bi + a * BS + m] * L[dj + b * BS + m]
                    L[bi + a * BS + b] = s / L[dj + b * BS + b]
    return True


#: The diagonal shifts :func:`factor_shifted` tries in turn, relative to ``max(diag K)``
#: (the first is about the rounding of a pivot that large: a smaller one is lost in it).
SHIFTS = (1e-14, 1e-12, 1e-10, 1e-8, 1e-6)


@njit(cache=True)
def factor_shifted(
    values: Vec,
    first: IVec,
    second: IVec,
    lptr: IVec,
    lrows: IVec,
    rptr: IVec,
    rcols: IVec,
    rslot: IVec,
    L: Vec,
    floor: float,
) -> float:
    """:func:`factor` of ``K`` itself when ``floor`` is 0 and it succeeds, else of
    ``K + σ max(diag K) I`` with ``σ`` the first of :data:`SHIFTS` at least ``floor`` for
    which it succeeds.  Returns the shift used (0.0: none), or -1.0 if every one fails."""
    if floor <= 0.0 and factor(values, first, second, lptr, lrows, rptr, rcols, rslot, L, 0.0):
        return 0.0
    for sigma in SHIFTS:
        if sigma >= floor and factor(
            values, first, second, lptr, lrows, rptr, rcols, rslot, L, sigma
        ):
            return sigma
    return -1.0


@njit(cache=True)
def solve(L: Vec, bs: int, perm: IVec, lptr: IVec, lrows: IVec, rhs: Vec, out: Vec) -> None:
    """``out = K^{-1} rhs`` from the factor ``P K P' = L L'``."""
    nb = lptr.shape[0] - 1
    b2 = bs * bs
    off = nb * b2
    y = np.empty(nb * bs)
    for j in range(nb):
        for a in range(bs):
            y[j * bs + a] = rhs[perm[j] * bs + a]
    for j in range(nb):
        dj = j * b2
        for a in range(bs):
            s = y[j * bs + a]
            for m in range(a):
                s -= L[dj + a * bs + m] * y[j * bs + m]
            y[j * bs + a] = s / L[dj + a * bs + a]
        for p in range(lptr[j], lptr[j + 1]):
            bi = off + p * b2
            i = lrows[p]
            for a in range(bs):
                acc = 0.0
                for m in range(bs):
                    acc += L[bi + a * bs + m] * y[j * bs + m]
                y[i * bs + a] -= acc
    for j in range(nb - 1, -1, -1):
        dj = j * b2
        for p in range(lptr[j], lptr[j + 1]):
            bi = off + p * b2
            i = lrows[p]
            for m in range(bs):
                acc = 0.0
                for a in range(bs):
                    acc += L[bi + a * bs + m] * y[i * bs + a]
                y[j * bs + m] -= acc
        for a in range(bs - 1, -1, -1):
            s = y[j * bs + a]
            for m in range(a + 1, bs):
                s -= L[dj + m * bs + a] * y[j * bs + m]
            y[j * bs + a] = s / L[dj + a * bs + a]
    for j in range(nb):
        for a in range(bs):
            out[perm[j] * bs + a] = y[j * bs + a]


class BlockCholesky:
    """The factor of one pattern (upper CSC ``colptr, rows``, blocks of ``bs``), refactored
    per call of :meth:`factor` with new values; ordering by ``qdldl``'s AMD on the
    block graph."""

    def __init__(self, colptr: IVec, rows: IVec, bs: int) -> None:
        import qdldl
        import scipy.sparse as sp

        n = colptr.shape[0] - 1
        if bs != BS or n % bs:
            raise ValueError(f"BlockCholesky: blocks of {BS}; got {bs} for a size {n}")
        self.bs, self.nb = bs, n // bs
        ptr, adj = block_graph(colptr.astype(np.int64), rows.astype(np.int64), bs)
        # AMD of the block graph: qdldl's order of a definite matrix with that pattern
        nb = self.nb
        src = np.repeat(np.arange(nb), np.diff(ptr))
        upper = src < adj
        G = sp.csc_matrix(
            (
                np.concatenate([np.full(int(upper.sum()), -1.0), np.full(nb, float(nb + 1))]),
                (np.concatenate([src[upper], np.arange(nb)]),
                 np.concatenate([adj[upper], np.arange(nb)])),
            ),
            shape=(nb, nb),
        )  # fmt: skip
        self.perm = np.asarray(qdldl.Solver(G, upper=True).factors()[2], dtype=np.int64)
        sym = _symbolic(ptr, adj, self.perm)
        self.iperm, self.lptr, self.lrows, self.rptr, self.rcols, self.rslot = sym
        self.first, self.second = _entry_slots(
            colptr.astype(np.int64), rows.astype(np.int64), bs, self.iperm, self.lptr, self.lrows
        )
        self.L = np.zeros(nb * bs * bs + self.lrows.shape[0] * bs * bs)

    def factor(self, values: Vec, floor: float = 0.0) -> float:
        """Factor the matrix with these values (in the pattern's order), shifted if it must be
        (:func:`factor_shifted`); returns the relative shift, raises if every one fails."""
        used = factor_shifted(
            values, self.first, self.second, self.lptr, self.lrows, self.rptr, self.rcols,
            self.rslot, self.L, floor,
        )  # fmt: skip
        if used < 0.0:
            raise ValueError(
                "block Cholesky: the matrix is not positive definite, even shifted by "
                f"{SHIFTS[-1]:g} times its largest diagonal entry"
            )
        return float(used)

    def solve(self, rhs: Vec) -> Vec:
        out = np.empty(rhs.shape[0])
        solve(self.L, self.bs, self.perm, self.lptr, self.lrows, np.ascontiguousarray(rhs), out)
        return out
