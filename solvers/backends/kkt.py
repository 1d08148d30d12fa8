"""Direct sparse KKT solve for equality-constrained QPs.

.. math::

    \\begin{pmatrix} P & A^\\top \\\\ A & 0 \\end{pmatrix}
    \\begin{pmatrix} x \\\\ y \\end{pmatrix} =
    \\begin{pmatrix} -q \\\\ b \\end{pmatrix}

(Sueda's notes §1.10; ArtiSynth notes §0.6).  With ``y`` as unknown the multipliers carry
the OSQP sign (``P x + q + A^T y = 0``).  The LU factorisation is cached and
reused while ``P`` and ``A`` keep the same values, so a sequence of solves that
only changes ``q`` and ``b`` factorises once.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from solvers.backends.base import Backend, SolveOptions
from solvers.problems import QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance


def _fingerprint(mat: sp.csc_matrix) -> tuple[tuple[int, int], bytes, bytes, bytes]:
    return mat.shape, mat.indptr.tobytes(), mat.indices.tobytes(), mat.data.tobytes()


#: largest A (rows x columns) whose rank is computed to explain a singular KKT matrix
_DIAGNOSE_SIZE = 250_000


def _singular_reason(qp: QP) -> str:
    """Why ``[[P, A^T], [A, 0]]`` is singular: dependent rows of ``A`` or ``P`` (fixes differ)."""
    generic = "P must be positive definite on the null space of A and A must have full row rank"
    if qp.m * qp.n > _DIAGNOSE_SIZE:
        return generic
    A = qp.A.toarray()
    rank = int(np.linalg.matrix_rank(A)) if qp.m else 0
    if rank < qp.m:
        residual = np.linalg.lstsq(A, qp.l, rcond=None)[0]
        consistent = np.allclose(A @ residual, qp.l, atol=1e-9 * (1 + np.abs(qp.l).max()))
        kind = "redundant" if consistent else "contradictory"
        return (
            f"the {qp.m} equality rows of A have rank {rank}: {qp.m - rank} of them "
            f"{'is' if qp.m - rank == 1 else 'are'} {kind} (a constraint given twice?); remove "
            "the dependent rows"
        )
    return "P is not positive definite on the null space of A (a direction with no inertia)"


class KKTBackend(Backend):
    """Sparse LU of the KKT matrix (``scipy.sparse.linalg.splu``), factorisation reused."""

    name = "kkt"
    description = "direct sparse KKT solve (equality-constrained QP), factorisation cached"
    kind = "direct"
    accepts_qp = True
    equality_only = True
    supports_max_iter = False
    tolerance = Tolerance(1e-9)

    def __init__(self) -> None:
        self._key: tuple[object, object] | None = None
        self._lu: spla.SuperLU | None = None
        #: Number of factorisations performed (exposed to show the cache works).
        self.factorizations = 0

    def _factor(self, qp: QP) -> spla.SuperLU:
        key = (_fingerprint(qp.P), _fingerprint(qp.A))
        if self._lu is not None and key == self._key:
            return self._lu
        K = sp.bmat([[qp.P, qp.A.T], [qp.A, None]], format="csc")
        self._lu = spla.splu(K)
        self._key = key
        self.factorizations += 1
        return self._lu

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        t0 = time.perf_counter()
        try:
            lu = self._factor(qp)
        except RuntimeError as err:  # splu: "Factor is exactly singular"
            self._key = self._lu = None
            return RawSolution(
                np.full(qp.n, np.nan),
                np.full(qp.m, np.nan),
                "numerical_error",
                f"KKT matrix is singular ({err}): {_singular_reason(qp)}",
            )
        t1 = time.perf_counter()
        sol = lu.solve(np.concatenate([-qp.q, qp.l]))
        t2 = time.perf_counter()
        x, y = sol[: qp.n], sol[qp.n :]
        status = "optimal" if np.all(np.isfinite(sol)) else "numerical_error"
        return RawSolution(x, y, status, "direct KKT solve", 0, t1 - t0, t2 - t1)
