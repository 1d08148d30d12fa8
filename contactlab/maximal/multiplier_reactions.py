"""Joint friction maps of the maximal formulation: reactions from the joints' own multipliers.

The maximal formulation keeps every joint as bilateral rows ``G``; a friction
joint's reaction on its child is ``G_j^T lambda_j`` restricted to the child's
columns (Sueda's notes, eq. 1.74 in this package's sign convention).  With the
joint-contact rows of :mod:`contactlab.jointfriction.joint_contact_rows` this is what the
staggered joint-friction model (:mod:`contactlab.models.bisp`)
needs; it is an independent computation of the reactions that BISP recovers
by a traversal in reduced coordinates (:mod:`contactlab.reduced.traversal_reactions`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.jointfriction.joint_contact_rows import JointContactLayout
from contactlab.problem import Array, JointFrictionMaps


def multiplier_maps(
    layout: JointContactLayout,
    E: Array,
    G: sp.spmatrix,
    owners: NDArray[np.str_],
    M: sp.spmatrix,
    N: sp.spmatrix,
) -> JointFrictionMaps:
    """The maps at body transforms ``E`` for bilateral rows ``G`` owned by ``owners``.

    ``M`` is the step's (diagonal) mass matrix and ``N`` the contact normal rows.
    """
    name_to_j = {s.name: j for j, s in enumerate(layout.specs)}
    joint_of_row = np.array([name_to_j.get(str(o), -1) for o in owners], dtype=np.int64)
    sel = np.flatnonzero(joint_of_row >= 0)
    jr = joint_of_row[sel]
    cols = 6 * layout.child[jr][:, None] + np.arange(6)
    blocks = np.asarray(sp.csr_matrix(G)[sel].toarray()[np.arange(sel.size)[:, None], cols])
    n_joints = layout.n_joints

    def reactions(v: Array, lam_G: Array, lam_N: Array, beta_T: Array, p_joint: Array) -> Array:
        out = np.zeros((n_joints, 6))
        np.add.at(out, jr, blocks * lam_G[sel][:, None])
        return out

    return JointFrictionMaps(
        rows=layout.rows(E),
        J=None,
        inertia_inv=1.0 / M.diagonal(),
        N_contact=sp.csr_matrix(N),
        reactions=reactions,
        method="multipliers",
    )
