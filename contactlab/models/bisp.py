"""Bilateral Staggered Projections (BISP) for joint friction (seed 000, §2.11, Alg. 8).

In reduced coordinates the joints hold by construction, so the contact QP of
Staggered Projections becomes a *reduced solve*; the joint contact normal
impulses that bound the joint friction are recovered from it:

1. reduced solve with the friction impulses ``beta`` frozen (with external
   loop closures, contacts and limits a QP, eq. 2.115–2.116; otherwise
   ``qdot = M_r^{-1}(f + F^T beta)``);
2. joint impulses from constrained vs unconstrained velocities (eq. 2.112–2.113):
   per body

   .. math::

       p = M_m J (\\dot q^{con} - \\dot q^{prev}) - h(f_m - M_m \\dot J \\dot q^{prev})
           - T_{j,m}^T \\beta_j - (\\text{external impulses}),

   i.e. ``M_m (qdot_m^con - qdot_m^unc)`` with the unconstrained velocity
   ``J qdot^prev + M_m^{-1}(h(f_m - M_m Jdot qdot^prev) + friction + external)``.
   The seed's eq. 2.113 puts ``-M_m Jdot qdot`` only in the constrained
   velocity; with it on both sides ``J^T p = 0`` exactly (``p`` is a pure
   joint reaction, workless on every motion the joints allow), which
   ``tests/contactlab/test_bisp.py`` checks.  External impulses are the
   contact impulses ``N_m^T lambda_N + T_m^T beta_ext`` and the loop-closure
   reactions ``G_m^T lambda_G`` (§2.11.1);
3. one backward traversal distributes ``p`` to the joints; what a joint
   applies along its own free motion (motors, springs, prescribed motion)
   is removed, and the local regularized solves (eq. 2.114) give the joint
   contact multipliers
   (:mod:`contactlab.jointfriction.local`); loop-closing joints with friction
   take their reaction from their own multipliers;
4. the ``M^{-1}``-norm test and the friction QP (eq. 2.110) of
   :mod:`contactlab.jointfriction.staggered`, through the solver layer.

The model needs the tree: the reduced formulation puts its
:class:`~contactlab.reduced.kinematics.Kinematics` in ``StepProblem.info
["kinematics"]`` and its bilateral constraints, in row order, in
``info["constraints"]``.  With any other formulation it raises
:class:`~contactlab.errors.IncompatibleError`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.jointfriction.local import distribute_reactions, remove_joint_forces
from contactlab.jointfriction.staggered import JointFrictionModel, StaggeredSetup, solve_staggered
from contactlab.maximal import assembly as asm
from contactlab.maximal.constraints import stack_rows as maximal_rows
from contactlab.models.base import register_model
from contactlab.models.common import Array, Rows
from contactlab.problem import StepProblem, StepSolution

_CACHE = "bisp:friction"


@register_model("bisp")
class BISP(JointFrictionModel):
    """Bilateral Staggered Projections: joint friction in reduced coordinates.

    Options and ``last`` as in
    :class:`~contactlab.jointfriction.staggered.JointFrictionModel`.
    """

    #: the formulation whose step problem the model reads (checked by the experiment runner)
    formulations = ("reduced",)

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        kin = problem.info.get("kinematics")
        if kin is None:
            raise IncompatibleError(
                "model 'bisp' works in reduced coordinates and needs the tree of the step; "
                "run it with --formulation reduced"
            )
        tree = kin.tree
        scene = tree.scene
        h = problem.h
        layout = self.layout(scene)
        jrows = layout.rows(kin.E)
        J = kin.J
        nb = scene.n_bodies
        inertia = tree.scene_inertia
        f_eff = (
            asm.coriolis(inertia, kin.phi)
            + asm.gravity_wrench(inertia, scene.gravity, kin.E)
            + asm.force_wrench(scene, kin.E, kin.phi)
            - inertia * kin.bias_acceleration
        )
        N_ext = T_ext = sp.csr_matrix((0, 6 * nb))
        if problem.contacts is not None and problem.n_contacts:
            from contactlab.contact.rows import contact_rows

            N_m, _, T_m, _ = contact_rows(problem.contacts, kin.E, nb, h, scene.contact)
            N_ext, T_ext = sp.csr_matrix(N_m), sp.csr_matrix(T_m)
        loops = _loop_rows(problem, kin)
        node = {int(b): i for i, b in enumerate(tree.body)}
        loop_of = {name: k for k, (name, _, _) in enumerate(loops)}
        is_tree = np.array([not s.closes_loop for s in layout.specs], dtype=bool)
        nodes = np.array([node[int(c)] for c in layout.child[is_tree]], dtype=np.int64)
        S_tree = kin.Sb[nodes]
        rotational = np.array([s.kind != "prismatic" for s in layout.specs], dtype=bool)[is_tree]
        qdot0 = np.asarray(problem.v, dtype=float)

        def reactions(v: Array, crow: Rows, lam_C: Array, b_ext: Array, b_j: Array) -> Array:
            p = inertia * kin.J_times(v - qdot0) - h * f_eff
            ext = jrows.Tg.T @ b_j + T_ext.T @ b_ext + N_ext.T @ crow.part(lam_C, "N")
            lam_G = crow.part(lam_C, "G")
            loop_w = [np.asarray(G.T @ lam_G[sl]).reshape(nb, 6) for _, sl, G in loops]
            p -= np.asarray(ext).reshape(nb, 6) + sum(loop_w, np.zeros((nb, 6)))
            r_tree = distribute_reactions(tree.parent, kin.X, p[tree.body])
            out = np.zeros((layout.n_joints, 6))
            out[is_tree] = remove_joint_forces(r_tree[nodes], S_tree, rotational)
            for j in np.flatnonzero(~is_tree):
                spec = layout.specs[j]
                out[j] = loop_w[loop_of[spec.name]][int(layout.child[j])]
            return out

        missing = [s.name for s in layout.specs if s.closes_loop and s.name not in loop_of]
        if missing:
            raise ConfigurationError(
                f"loop-closing joints {missing} have friction but no loop-closure rows in the "
                "step problem; the reduced formulation builds them from closes_loop joints"
            )
        setup = StaggeredSetup(
            joint=jrows,
            T_joint=sp.csr_matrix(jrows.Tg @ J),
            inertia_inv=1.0 / inertia.reshape(-1),
            N_ext=N_ext,
            reactions=reactions,
        )
        sol, self.last = solve_staggered(self, problem, setup, cache, _CACHE)
        return sol


def _loop_rows(problem: StepProblem, kin: Any) -> list[tuple[str, slice, sp.csr_matrix]]:
    """``(loop joint name, rows in G, maximal rows G_m)`` of every loop closure."""
    out = []
    start = 0
    counts = problem.info.get("constraint_rows", ())
    for con, m in zip(problem.info.get("constraints", ()), counts):
        members = getattr(con, "constraints", None)
        if members is not None:
            G_m = maximal_rows(members, kin.E, kin.phi).G
            out.append((str(con.name), slice(start, start + m), sp.csr_matrix(G_m)))
        start += m
    return out
