"""Joint friction maps of the reduced formulation: BISP's reactions (Sueda's notes, §2.11, Alg. 8).

In reduced coordinates the joints hold by construction and have no
multipliers; the joint impulses that bound the joint friction are recovered
from the velocities (eq. 2.112–2.113).  Per body

.. math::

    p = M_m J (\\dot q^{con} - \\dot q^{prev}) - h(f_m - M_m \\dot J \\dot q^{prev})
        - T_{j,m}^T \\beta_j - (\\text{external impulses}),

i.e. ``M_m (qdot_m^con - qdot_m^unc)`` with the unconstrained velocity
``J qdot^prev + M_m^{-1}(h(f_m - M_m Jdot qdot^prev) + friction + external)``.
The seed's eq. 2.113 puts ``-M_m Jdot qdot`` only in the constrained
velocity; with it on both sides ``J^T p = 0`` exactly (``p`` is a pure joint
reaction, workless on every motion the joints allow), which
``tests/contactlab/test_bisp.py`` checks.  External impulses are the contact
impulses ``N_m^T lambda_N + T_m^T beta_ext`` and the loop-closure reactions
``G_m^T lambda_G`` (§2.11.1).  One backward traversal distributes ``p`` to the
joints; what a joint applies along its own free motion (motors, springs,
prescribed motion) is removed (:mod:`contactlab.jointfriction.local`);
loop-closing joints with friction take their reaction from their own
multipliers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.errors import ConfigurationError
from contactlab.jointfriction.joint_contact_rows import JointContactLayout
from contactlab.jointfriction.local import distribute_reactions, remove_joint_forces
from contactlab.joints.body_constraints import stack_rows as maximal_rows
from contactlab.maximal import assembly as asm
from contactlab.problem import Array, JointFrictionMaps
from contactlab.reduced.kinematics import Kinematics
from contactlab.reduced.tree import Tree


def traversal_maps(
    layout: JointContactLayout,
    tree: Tree,
    kin: Kinematics,
    h: float,
    qdot0: Array,
    N_m: sp.spmatrix,
    T_m: sp.spmatrix,
    bilateral: Sequence[Any],
    sizes: Sequence[int],
) -> JointFrictionMaps:
    """The maps at ``kin`` for the step from ``qdot0`` of size ``h`` [s].

    ``N_m``, ``T_m`` are the contact rows in maximal coordinates; ``bilateral``
    the formulation's equality constraints in row order with their row counts
    ``sizes`` (loop closures carry their maximal joints in ``constraints``).
    """
    scene = tree.scene
    jrows = layout.rows(kin.E)
    nb = scene.n_bodies
    inertia = tree.scene_inertia
    f_eff = (
        asm.coriolis(inertia, kin.phi)
        + asm.gravity_wrench(inertia, scene.gravity, kin.E)
        + asm.force_wrench(scene, kin.E, kin.phi)
        - inertia * kin.bias_acceleration
    )
    N_ext, T_ext = sp.csr_matrix(N_m), sp.csr_matrix(T_m)
    loops = _loop_rows(bilateral, sizes, kin)
    node = {int(b): i for i, b in enumerate(tree.body)}
    loop_of = {name: k for k, (name, _, _) in enumerate(loops)}
    missing = [s.name for s in layout.specs if s.closes_loop and s.name not in loop_of]
    if missing:
        raise ConfigurationError(
            f"loop-closing joints {missing} have friction but no loop-closure rows in the "
            "step problem; the reduced formulation builds them from closes_loop joints"
        )
    is_tree = np.array([not s.closes_loop for s in layout.specs], dtype=bool)
    nodes = np.array([node[int(c)] for c in layout.child[is_tree]], dtype=np.int64)
    S_tree = kin.Sb[nodes]
    rotational = layout.rotational[is_tree]

    def reactions(v: Array, lam_G: Array, lam_N: Array, beta_T: Array, p_joint: Array) -> Array:
        p = inertia * kin.J_times(v - qdot0) - h * f_eff
        ext = p_joint + T_ext.T @ beta_T + N_ext.T @ lam_N
        loop_w = [np.asarray(G.T @ lam_G[sl]).reshape(nb, 6) for _, sl, G in loops]
        p -= np.asarray(ext).reshape(nb, 6) + sum(loop_w, np.zeros((nb, 6)))
        r_tree = distribute_reactions(tree.parent, kin.X, p[tree.body])
        out = np.zeros((layout.n_joints, 6))
        out[is_tree] = remove_joint_forces(r_tree[nodes], S_tree, rotational)
        for j in np.flatnonzero(~is_tree):
            spec = layout.specs[j]
            out[j] = loop_w[loop_of[spec.name]][int(layout.child[j])]
        return out

    return JointFrictionMaps(
        rows=jrows,
        J=kin.J,
        inertia_inv=1.0 / inertia.reshape(-1),
        N_contact=N_ext,
        reactions=reactions,
        method="traversal",
    )


def _loop_rows(
    bilateral: Sequence[Any], sizes: Sequence[int], kin: Kinematics
) -> list[tuple[str, slice, sp.csr_matrix]]:
    """``(loop joint name, rows in G, maximal rows G_m)`` of every loop closure."""
    out = []
    start = 0
    for con, m in zip(bilateral, sizes):
        members = getattr(con, "constraints", None)
        if members is not None:
            G_m = maximal_rows(members, kin.E, kin.phi).G
            out.append((str(con.name), slice(start, start + m), sp.csr_matrix(G_m)))
        start += m
    return out
