"""Islands: the independent groups of a frictional-contact problem, solved one by one.

Two rows of a local problem ``u = W r + q`` interact only through ``W``; with the
factor ``W = C diag(d) C'`` of maximal coordinates, only through a body (a column
of ``C``) that both touch.  The *islands* are the connected components of the
graph whose nodes are the rows and whose edges join rows sharing a body (or a
non-zero of ``W`` when there is no factor): the components of the
body--contact--joint graph, a contact's three rows always in one island, a
joint's scalar rows with the contacts of the bodies it joins.  The static world
is no column, so two piles on one ground are two islands.

:func:`island_labels` labels the rows in compiled code (union--find over the CSR
arrays); :func:`split` cuts the problem into one :class:`FrictionalContact` per
island (its rows in their original order, its factor restricted to the bodies it
touches, or ``W``'s diagonal block); :func:`solve_islands` solves each with the
chosen backend and reassembles one :class:`~solvers.result.SolverResult`.  An
island's natural map is relative to its own ``||q_k||``; since
``sum_k ||q_k||^2 = ||q||^2``, islands each within ``tol`` make the whole problem
within ``tol`` (the residuals reported are those of the whole problem).  The
solution of an island depends on that island's data only, so a scene's far-apart
parts step as they would alone.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.frictional import FrictionalContact, residuals_and_velocity
from solvers.jit import njit
from solvers.result import STATUSES, SolverResult
from solvers.verdict import verdict

#: CPU seconds of a cold compilation of these kernels (not measured).
COMPILE_SECONDS: float | None = None

IVec = NDArray[np.int64]


@njit(cache=True)
def _find(parent: IVec, i: int) -> int:
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:  # path compression
        nxt = parent[i]
        parent[i] = root
        i = nxt
    return root


@njit(cache=True)
def _union(parent: IVec, a: int, b: int) -> None:
    ra, rb = _find(parent, a), _find(parent, b)
    if ra != rb:
        if ra < rb:
            parent[rb] = ra
        else:
            parent[ra] = rb


@njit(cache=True)
def _numbered(parent: IVec) -> tuple[IVec, int]:
    """The component of every node of the union--find forest ``parent``, numbered by
    first node, and the number of components."""
    n = parent.shape[0]
    label = np.full(n, -1, dtype=np.int64)
    count = 0
    for i in range(n):
        r = _find(parent, i)
        if label[r] < 0:
            label[r] = count
            count += 1
        label[i] = label[r]
    return label, count


@njit(cache=True)
def row_labels(ptr: IVec, idx: IVec, ncols: int, nc: int, by_columns: bool) -> tuple[IVec, int]:
    """Island of every row, numbered by first row, and the number of islands.

    ``by_columns``: rows sharing a column of the CSR matrix (``C``) are joined;
    otherwise (``W``) row ``i`` is joined to every column ``j`` with a stored entry.
    The three rows of each of the first ``nc`` contacts are always joined.
    """
    n = ptr.shape[0] - 1
    parent = np.arange(n)
    for i in range(nc):
        _union(parent, 3 * i, 3 * i + 1)
        _union(parent, 3 * i, 3 * i + 2)
    if by_columns:
        owner = np.full(ncols, -1, dtype=np.int64)
        for i in range(n):
            for k in range(ptr[i], ptr[i + 1]):
                j = idx[k]
                if owner[j] < 0:
                    owner[j] = i
                else:
                    _union(parent, i, owner[j])
    else:
        for i in range(n):
            for k in range(ptr[i], ptr[i + 1]):
                _union(parent, i, idx[k])
    return _numbered(parent)


@njit(cache=True)
def pair_labels(n: int, a: IVec, b: IVec) -> IVec:
    """Connected component of each of ``n`` nodes joined by the pairs ``(a[k], b[k])``
    (negative entries, the static world, join nothing), numbered by first node."""
    parent = np.arange(n)
    for k in range(a.shape[0]):
        if a[k] >= 0 and b[k] >= 0:
            _union(parent, a[k], b[k])
    return _numbered(parent)[0]


def island_labels(problem: FrictionalContact) -> tuple[IVec, int]:
    """``(labels, count)``: the island of every row of ``problem`` (module docstring)."""
    if problem.factor is not None:
        ptr, idx, _, d = problem.factor_arrays
        return row_labels(ptr, idx, int(d.shape[0]), problem.nc, True)  # type: ignore[no-any-return]
    W = problem.W
    return row_labels(  # type: ignore[no-any-return]
        W.indptr.astype(np.int64), W.indices.astype(np.int64), problem.n, problem.nc, False
    )


def split(problem: FrictionalContact) -> list[tuple[IVec, FrictionalContact]]:
    """One ``(rows, sub-problem)`` per island, rows ascending (contacts, then scalar rows)."""
    labels, count = island_labels(problem)
    if count <= 1:
        return [(np.arange(problem.n, dtype=np.int64), problem)]
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(count + 1))
    nc3 = 3 * problem.nc
    out: list[tuple[IVec, FrictionalContact]] = []
    C = None
    if problem.factor is not None:
        ptr, idx, val, d = problem.factor_arrays
        C = sp.csr_matrix((val, idx, ptr), shape=(problem.n, d.shape[0]))
    for k in range(count):
        rows = order[bounds[k] : bounds[k + 1]]
        contact_rows = rows[rows < nc3]
        scalar = rows[rows >= nc3] - nc3
        mu = problem.mu[contact_rows[::3] // 3]
        q = problem.q[rows]
        if C is not None:
            Ck = C[rows]
            cols = np.unique(Ck.indices)
            Ck = Ck[:, cols].tocsr()
            Ck.sort_indices()
            sub = FrictionalContact(
                None, q, mu, problem.law, problem.cone, problem.directions,
                problem.row_lo[scalar], factor=(Ck, problem.factor_arrays[3][cols]),
            )  # fmt: skip
        else:
            Wk = problem.W[rows][:, rows]
            sub = FrictionalContact(
                Wk, q, mu, problem.law, problem.cone, problem.directions, problem.row_lo[scalar]
            )
        out.append((rows, sub))
    return out


def _worst(statuses: list[str]) -> str:
    rank = {s: i for i, s in enumerate(STATUSES)}
    return max(statuses, key=lambda s: rank.get(s, len(STATUSES)))


def solve_islands(
    problem: FrictionalContact, backend: str, *, tol: float, warm_start: Any = None, **kwargs: Any
) -> SolverResult:
    """Solve every island of ``problem`` with ``backend`` (:func:`solvers.solve`), reassembled.

    ``warm_start`` (``(n,)``) is cut per island.  The status is the worst of the
    islands' (order of :data:`~solvers.result.STATUSES`), iterations and times are
    summed, the residuals and measures are the whole problem's.
    """
    from solvers.backend_registry import get_backend
    from solvers.dispatch import solve

    if problem.is_wide:  # wide cones: not split (the splitting reads three rows per contact)
        return solve(problem, backend, tol=tol, warm_start=warm_start, **kwargs)
    parts = split(problem)
    if len(parts) == 1:
        return solve(problem, backend, tol=tol, warm_start=warm_start, **kwargs)
    x = np.zeros(problem.n)
    statuses: list[str] = []
    messages: list[str] = []
    its, setup, run = 0, 0.0, 0.0
    plausible = True
    conversions: list[str] = []
    for k, (rows, sub) in enumerate(parts):
        warm = None if warm_start is None else np.asarray(warm_start, dtype=np.float64)[rows]
        res = solve(sub, backend, tol=tol, warm_start=warm, **kwargs)
        x[rows] = res.x
        statuses.append(res.status)
        if res.status != "optimal":
            messages.append(f"island {k} ({sub.nc} contacts): {res.message}")
        its += res.iterations
        setup += res.setup_time
        run += res.solve_time
        plausible = plausible and res.plausible
        conversions = conversions or list(res.conversions)
    measures, w = residuals_and_velocity(problem, x)
    residuals = {"natural_map": measures["natural_map"]}
    status = _worst(statuses)
    judged = verdict(status, residuals, tol, get_backend(backend).tolerance.accuracy, problem.q)
    head = f"{len(parts)} islands, each by {backend}; natural map {residuals['natural_map']:.3e}"
    return SolverResult(
        x, None, judged.status, "; ".join([head, *messages]) + judged.note, its, setup, run,
        float(np.einsum("i,i->", x, w)), residuals, backend,
        [*conversions, f"split into {len(parts)} islands"], w=w,
        plausible=plausible and judged.plausible, measures=measures,
    )  # fmt: skip
