"""A friction model: box friction as one LCP with friction blocks, posed from the step problem.

With the rows ``C = [G; N; T; L]``, right-hand sides ``b = [g; c; 0; l]`` and
impulses ``z``, the velocities are ``v = M^-1 (f + C^T z)`` and the row
velocities ``w = C v - b = W z + q`` with the Delassus matrix
``W = C M^-1 C^T`` and ``q = C M^-1 f - b``.  Bilateral rows are free
(``w = 0``), normal and limit rows complementary (``0 <= z ⟂ w >= 0``), and
the two tangent rows of contact ``i`` bounded by ``mu_i z_n``: box friction
(ArtiSynth notes, §0.16).  The solver layer decides which backends take this LCP.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.models.base import SolvingModel
from contactlab.models.common import MassInverse
from contactlab.problem import StepProblem, StepSolution
from solvers import LCP, FrictionBlocks


class BoxFrictionLCP(SolvingModel):
    """Box friction as one LCP with friction blocks (an outside implementation)."""

    name = "plugin-box-lcp"
    forms = ("lcp",)

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        return [("block_lcp",)]

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        p = problem
        ng, nc, nl = p.G.shape[0], p.N.shape[0], p.L.shape[0]
        C = sp.vstack([p.G, p.N, p.T, p.L], format="csr")
        b = np.concatenate([p.g, p.c, np.zeros(2 * nc), p.l])
        minv = MassInverse(p.M)
        W = minv.delassus(C)
        q = np.asarray(C @ minv.vec(p.f)) - b
        lo = np.concatenate([np.full(ng, -np.inf), np.zeros(nc), np.zeros(2 * nc), np.zeros(nl)])
        normal = ng + np.arange(nc)
        tangent = (ng + nc + np.arange(2 * nc)).reshape(nc, 2)
        blocks = FrictionBlocks(normal, tangent, p.mu, cone="box") if nc else None
        res = self.run(LCP(0.5 * (W + W.T), q, lo, np.full(lo.size, np.inf), blocks))
        z = res.x
        v = minv.vec(p.f + C.T @ z)
        parts = np.split(z, np.cumsum([ng, nc, 2 * nc]))
        return StepSolution(
            v,
            *parts,
            status=self.take_status(),
            iterations=res.iterations,
            solve_time=res.setup_time + res.solve_time,
            results=self.take_results(),
        )
