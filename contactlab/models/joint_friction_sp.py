"""Staggered Projections with joint friction on the maximal model (BISP's reference).

The maximal formulation keeps every joint as bilateral rows ``G``; the joint
friction is friction on the joint's *explicit* contact points
(:mod:`contactlab.jointfriction.rows`): the contact QP (seed 000, eq. 2.109)
gives the joints' multipliers, each friction joint's reaction on its child
is ``G_j^T lambda_j`` restricted to the child's columns, the local solves of
eq. 2.114 turn it into joint contact normal impulses ``alpha``, and the
friction QP (eq. 2.110) bounds the joint friction by ``mu |alpha|`` while the
joint rows are re-solved.  The loop is the one BISP runs
(:mod:`contactlab.jointfriction.staggered`); only the reactions come from
the joints' own multipliers instead of the velocity comparison and
traversal of BISP, so the two models are independent computations of the
same friction law.

The model needs the joint geometry: the maximal formulation puts the scene
and the body transforms in ``StepProblem.info["scene"]`` and ``info["E"]``,
and the owner of every ``G`` row in ``info["row_owners"]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.errors import IncompatibleError
from contactlab.jointfriction.staggered import JointFrictionModel, StaggeredSetup, solve_staggered
from contactlab.models.base import register_model
from contactlab.models.common import Array, Rows, step_data
from contactlab.problem import StepProblem, StepSolution

_CACHE = "joint-friction-sp:friction"


@register_model("joint-friction-sp")
class JointFrictionSP(JointFrictionModel):
    """Staggered Projections with joint friction in maximal coordinates.

    Options and ``last`` as in
    :class:`~contactlab.jointfriction.staggered.JointFrictionModel`.
    """

    #: the formulation whose step problem the model reads (checked by the experiment runner)
    formulations = ("maximal",)

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        info = problem.info
        if "E" not in info or "scene" not in info or "row_owners" not in info:
            raise IncompatibleError(
                "model 'joint-friction-sp' works on the maximal model's joint rows; run it with "
                "--formulation maximal (use model 'bisp' with --formulation reduced)"
            )
        scene, E = info["scene"], np.asarray(info["E"])
        layout = self.layout(scene)
        jrows = layout.rows(E)
        d = step_data(problem)
        owners = np.asarray(info["row_owners"])
        name_to_j = {s.name: j for j, s in enumerate(layout.specs)}
        joint_of_row = np.array([name_to_j.get(str(o), -1) for o in owners], dtype=np.int64)
        sel = np.flatnonzero(joint_of_row >= 0)
        jr = joint_of_row[sel]
        cols = 6 * layout.child[jr][:, None] + np.arange(6)
        G = d.G.tocsr()
        blocks = np.asarray(G[sel].toarray()[np.arange(sel.size)[:, None], cols])

        def reactions(v: Array, crow: Rows, lam_C: Array, b_ext: Array, b_j: Array) -> Array:
            lam_G = crow.part(lam_C, "G")
            out = np.zeros((layout.n_joints, 6))
            np.add.at(out, jr, blocks * lam_G[sel][:, None])
            return out

        setup = StaggeredSetup(
            joint=jrows,
            T_joint=sp.csr_matrix(jrows.Tg),
            inertia_inv=1.0 / problem.M.diagonal(),
            N_ext=d.N,
            reactions=reactions,
        )
        sol, self.last = solve_staggered(self, problem, setup, cache, _CACHE)
        return sol
