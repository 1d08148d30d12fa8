"""A solver backend: equality-constrained QPs by one dense KKT solve (numpy only)."""

from __future__ import annotations

import time

import numpy as np

from solvers.backends.base import Backend, SolveOptions
from solvers.problems import QP
from solvers.result import RawSolution


class DenseKKT(Backend):
    """Dense KKT solve ``[[P, A^T], [A, 0]] [x; y] = [-q; b]`` (equality rows only)."""

    name = "plugin-dense-kkt"
    description = "dense KKT solve with numpy (equality-constrained QP)"
    kind = "direct"
    accepts_qp = True
    equality_only = True
    supports_max_iter = False
    tolerance = 1e-9

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        t0 = time.perf_counter()
        n, m = qp.n, qp.m
        A = qp.A.toarray()
        K = np.block([[qp.P.toarray(), A.T], [A, np.zeros((m, m))]])
        sol = np.linalg.lstsq(K, np.concatenate([-qp.q, qp.l]), rcond=None)[0]
        return RawSolution(
            sol[:n], sol[n:], "optimal", "dense lstsq", 1, 0.0, time.perf_counter() - t0
        )
