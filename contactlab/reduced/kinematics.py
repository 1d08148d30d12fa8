"""Forward kinematics of a tree: maximal transforms, twists, ``J_mr`` and ``Jdot_mr``.

``phi = J_mr qdot`` stacks the body twists (Sueda's notes, eq. 2.14; REDMAX supplement,
eq. 17–18): a body's twist is its parent's, carried over by
``Ad(E_i^{-1} E_p)``, plus its joint's ``Ad(frame_child) S qdot``.
``Jdot_mr`` is the time derivative (REDMAX supplement, eq. 19–20).  Dense matrices
come from Alg. 1; the O(n) products ``J x``, ``Jdot x`` and ``J^T y`` from
Alg. 2–3.  Rows and wrench/twist stacks are in *scene body order* (6 rows
per body, angular first), coordinates in tree order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.reduced import _kernels
from contactlab.reduced.tree import Array, Tree


@dataclass(frozen=True, eq=False)
class Kinematics:
    """Kinematic quantities of a tree at ``(q, qdot)``; arrays of tree nodes in tree order."""

    tree: Tree
    q: Array
    qdot: Array
    E_tree: Array
    X: Array
    Sb: Array
    Sbd: Array
    V: Array

    # -- maximal quantities in scene order ------------------------------
    def _to_scene(self, a: Array) -> Array:
        nb = self.tree.scene.n_bodies
        out = np.zeros((nb,) + a.shape[1:])
        if a.shape[1:] == (4, 4):
            out[:] = np.eye(4)
        out[self.tree.body] = a
        return out

    @cached_property
    def E(self) -> Array:
        """(nb, 4, 4) body transforms, body to world."""
        return self._to_scene(self.E_tree)

    @cached_property
    def phi(self) -> Array:
        """(nb, 6) body twists in body coordinates."""
        return self._to_scene(self.V)

    @cached_property
    def _rows(self) -> Array:
        return (6 * self.tree.body[:, None] + np.arange(6)).reshape(-1)

    def _args(self) -> tuple[Array, ...]:
        t = self.tree
        return t.parent, self.X, self.Sb, self.Sbd, t.ndof, t.dof0, self.qdot

    # -- dense Jacobians (REDMAX supplement, Alg. 1) -------------------------------
    @cached_property
    def _dense(self) -> tuple[Array, Array]:
        J, Jd = _kernels.jacobians(*self._args(), self.tree.nq)  # type: ignore[call-arg]
        nb = self.tree.scene.n_bodies
        Js = np.zeros((6 * nb, self.tree.nq))
        Jds = np.zeros_like(Js)
        Js[self._rows], Jds[self._rows] = J, Jd
        return Js, Jds

    @property
    def J(self) -> Array:
        """(6 nb, nq) ``J_mr``: stacked body twists per unit joint rate."""
        return self._dense[0]

    @property
    def Jdot(self) -> Array:
        """(6 nb, nq) ``Jdot_mr`` along the current ``qdot``."""
        return self._dense[1]

    # -- O(n) products (REDMAX supplement, Alg. 2-3) -------------------------------
    def J_times(self, x: Array) -> Array:
        """``J x`` as (nb, 6) body twists."""
        y = _kernels.jacobian_products(*self._args(), np.asarray(x, float))  # type: ignore[call-arg]
        return self._to_scene(y[0])

    def Jdot_times(self, x: Array) -> Array:
        """``Jdot x`` as (nb, 6)."""
        z = _kernels.jacobian_products(*self._args(), np.asarray(x, float))  # type: ignore[call-arg]
        return self._to_scene(z[1])

    def JT_times(self, y: Array) -> Array:
        """``J^T y`` for body wrenches ``y`` (nb, 6) (or stacked (6 nb,)) -> (nq,)."""
        y = np.asarray(y, dtype=float).reshape(-1, 6)
        if y.shape[0] != self.tree.scene.n_bodies:
            raise ConfigurationError(
                f"J^T y needs one 6-vector per body ({self.tree.scene.n_bodies}), got {y.shape}"
            )
        t = self.tree
        return _kernels.jacobian_transpose_product(
            t.parent, self.X, self.Sb, t.ndof, t.dof0, np.ascontiguousarray(y[t.body]), t.nq
        )

    @property
    def bias_acceleration(self) -> Array:
        """``Jdot qdot`` (nb, 6): body accelerations when ``qddot = 0``."""
        return self.Jdot_times(self.qdot)


def forward_kinematics(
    tree: Tree, q: Array, qdot: Array | None = None, step: bool = False
) -> Kinematics:
    """Kinematics of ``tree`` at coordinates ``q`` and velocities ``qdot`` (default 0).

    With ``step=True``, ``Jdot`` is the time derivative along the motion the
    time step realizes (:meth:`Tree.advance`): subgroup joints (free,
    spherical, ...) hold their joint twist constant, so their chart's ``Sdot``
    is left out; ``J``, transforms and twists are the same.  The step's bias
    acceleration ``Jdot qdot`` must be this one (docs/reduced-integration.md).
    """
    q = tree.check_coordinates(q, "q")
    qdot = np.zeros(tree.nq) if qdot is None else tree.check_coordinates(qdot, "qdot")
    Q, S, Sd = tree.evaluate_joints(q, qdot, step=step)
    E, X, Sb, Sbd, V = _kernels.kinematics(
        tree.parent,
        tree.frame_parent,
        tree.frame_child_inv,
        tree.ad_frame_child,
        Q,
        S,
        Sd,
        tree.ndof,
        tree.dof0,
        qdot,
    )
    return Kinematics(tree, q, qdot, E, X, Sb, Sbd, V)
