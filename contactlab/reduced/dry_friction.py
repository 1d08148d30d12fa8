"""Dry friction of joint coordinates: a constant Coulomb bound per coordinate.

A joint coordinate ``q_i`` with dry friction ``f_i`` (``JointSpec.dry_friction``,
MuJoCo's ``frictionloss``, URDF's ``<dynamics friction>``) carries a friction
force that opposes its motion and never exceeds ``f_i``.  In the velocity-level
step of :mod:`contactlab.reduced.formulation` it is one row ``e_i^T`` of the
step problem's ``D`` with the impulse bound ``d_i = h f_i``:

.. math::

    |\\lambda_i| \\le h f_i, \\qquad
    \\dot q_i^+ > 0 \\Rightarrow \\lambda_i = -h f_i, \\qquad
    \\dot q_i^+ < 0 \\Rightarrow \\lambda_i = h f_i,

so a coordinate whose other forces stay within the bound is held still, and a
sliding one is decelerated by exactly ``f_i``: for a lone coordinate of inertia
``m`` under a force ``tau`` from rest, ``qdot^+ = h sign(tau) max(|tau| - f, 0) / m``.
This is the law MuJoCo's friction-loss constraint reaches when it saturates (its
soft-constraint regularization lets a held coordinate creep instead of holding it).
Unlike the joint-friction models (``bisp``), the bound does not grow with the
joint's load.  The box-friction model carries the rows
(:attr:`~contactlab.models.base.ContactModel.carries_dry_friction`); a scene with
dry friction paired with any other model is refused when the simulator is built.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.reduced.tree import Array, Tree
from contactlab.scene import Scene


@dataclass(frozen=True)
class DryFriction:
    """The coordinates with dry friction: ``index`` (md,) into ``qdot``, their bounds
    ``force`` (md,) [N m or N] and the owning joints' names ``owner`` (md,)."""

    index: NDArray[np.int64]
    force: Array
    owner: tuple[str, ...]

    def rows(self, n: int, h: float) -> tuple[sp.csr_matrix, Array]:
        """``D`` (md, n), one unit row per coordinate, and the impulse bounds ``h f`` (md,)."""
        md = self.index.size
        D = sp.csr_matrix((np.ones(md), (np.arange(md), self.index)), shape=(md, n))
        return D, h * self.force


def joints_with_dry_friction(scene: Scene) -> list[str]:
    """Names of the scene's joints with a positive dry-friction bound."""
    return [j.name for j in scene.joints if np.any(j.dry_friction > 0)]


def dry_friction(scene: Scene, tree: Tree) -> DryFriction | None:
    """The dry-friction coordinates of ``tree`` (``None`` when no joint has any).

    A joint gives one bound for all its coordinates or one per coordinate; a
    loop-closing joint (a constraint here, with no coordinates) cannot carry one.
    Each is one clear error.
    """
    if not joints_with_dry_friction(scene):
        return None
    for j in scene.joints:
        if j.closes_loop and np.any(j.dry_friction > 0):
            raise ConfigurationError(
                f"joint {j.name!r} closes a loop (a constraint, no coordinates of its own) and "
                "has dry_friction; put the friction on a tree joint of the loop"
            )
    index: list[int] = []
    force: list[float] = []
    owner: list[str] = []
    for i, spec in enumerate(tree.specs):
        a, k = int(tree.dof0[i]), int(tree.ndof[i])
        bound = np.asarray(spec.dry_friction, dtype=float)
        if bound.size not in (1, k):
            raise ConfigurationError(
                f"joint {spec.name!r}: dry_friction has {bound.size} values for {k} "
                f"coordinates; give one number or {k}"
            )
        bound = np.broadcast_to(bound, (k,))
        for c in range(k):
            if bound[c] > 0:
                index.append(a + c)
                force.append(float(bound[c]))
                owner.append(spec.name)
    return DryFriction(np.array(index, dtype=np.int64), np.array(force), tuple(owner))
