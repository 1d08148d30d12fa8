"""Vectorized kinematics of many two-point force elements at once.

Springs and straight muscles join a point on one body to a point on another
body (or the world).  Evaluating N of them one by one costs N Python calls;
this module stacks them: point Jacobians ``A = R Gamma(r)`` (Sueda's notes,
eq. 1.12) as (N, 3, 6) arrays, per-element 12x12 matrices assembled into one
sparse triplet list, wrenches scattered with ``np.add.at``.  Local 12-vectors
are ordered (body of point 1, body of point 2), each angular-first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactlab import se3
from contactlab.forces.base import Array, IntArray, Triplets


@dataclass(frozen=True)
class PairKinematics:
    """N point pairs at one state.

    b1, b2 : (N,) body indices, -1 for world points.
    x1, x2 : (N, 3) world positions [m].
    A1, A2 : (N, 3, 6) ``d x / d delta`` of each point on its body (0 for world).
    R1, R2 : (N, 3, 3) body rotations (identity for world points).
    r1, r2 : (N, 3) local coordinates [m].
    phi : (N, 12) twists of the two bodies (0 for the world).
    """

    b1: IntArray
    b2: IntArray
    x1: Array
    x2: Array
    A1: Array
    A2: Array
    R1: Array
    R2: Array
    r1: Array
    r2: Array
    phi: Array

    @property
    def B(self) -> Array:
        """(N, 3, 12) ``d (x2 - x1) / d delta``."""
        return np.concatenate([-self.A1, self.A2], axis=2)

    def generalized(self, w1: Array, w2: Array) -> Array:
        """(N, 12) ``(A1^T w1, A2^T w2)`` for world forces on the two points."""
        return np.concatenate(
            [(w1[:, None, :] @ self.A1)[:, 0], (w2[:, None, :] @ self.A2)[:, 0]], axis=1
        )

    def rotation_term(self, w1: Array, w2: Array) -> Array:
        """(N, 12, 12) ``blockdiag(Gamma^T [[R^T w], 0])``: ``d(A^T w)/d delta`` at fixed ``w``.

        Sueda's notes, eq. (1.34): ``d (R^T w) / d omega = [R^T w]``.
        """
        out = np.zeros((len(self.b1), 12, 12))
        for k, (b, R, r, w) in enumerate(
            ((self.b1, self.R1, self.r1, w1), (self.b2, self.R2, self.r2, w2))
        ):
            Rtw = (w[:, None, :] @ R)[:, 0]
            block = np.swapaxes(se3.gamma(r), 1, 2) @ se3.bracket3(Rtw)
            out[:, 6 * k : 6 * k + 6, 6 * k : 6 * k + 3] = block * (b >= 0)[:, None, None]
        return out

    def _index(self) -> tuple[IntArray, NDArray[np.bool_]]:
        six = np.arange(6)
        idx = np.concatenate([6 * self.b1[:, None] + six, 6 * self.b2[:, None] + six], axis=1)
        valid = np.concatenate(
            [np.repeat((self.b1 >= 0)[:, None], 6, 1), np.repeat((self.b2 >= 0)[:, None], 6, 1)],
            axis=1,
        )
        return idx, valid

    def triplets(self, blocks: Array) -> Triplets:
        """Sparse triplets of (N, 12, 12) per-pair matrices (world rows/columns dropped)."""
        idx, valid = self._index()
        n = len(idx)
        rows = np.broadcast_to(idx[:, :, None], (n, 12, 12))
        cols = np.broadcast_to(idx[:, None, :], (n, 12, 12))
        mask = valid[:, :, None] & valid[:, None, :]
        return rows[mask], cols[mask], blocks[mask]

    def scatter(self, local: Array, n_bodies: int) -> Array:
        """Sum (N, 12) per-pair wrenches into (nb, 6) body wrenches."""
        out = np.zeros((n_bodies, 6))
        on1, on2 = self.b1 >= 0, self.b2 >= 0
        np.add.at(out, self.b1[on1], local[on1, :6])
        np.add.at(out, self.b2[on2], local[on2, 6:])
        return out


def _point(b: IntArray, r: Array, E: Array, phi: Array) -> tuple[Array, Array, Array, Array]:
    on = b >= 0
    R = np.broadcast_to(np.eye(3), (len(b), 3, 3)).copy()
    R[on] = E[b[on], :3, :3]
    x = r.copy()
    x[on] = se3.transform_points(E[b[on]], r[on])
    A = (R @ se3.gamma(r)) * on[:, None, None]  # Sueda's notes, eq. (1.12)
    tw = np.zeros((len(b), 6))
    tw[on] = phi[b[on]]
    return R, x, A, tw


def pair_kinematics(
    b1: IntArray, r1: Array, b2: IntArray, r2: Array, E: Array, phi: Array
) -> PairKinematics:
    """Evaluate N point pairs (``b = -1``: ``r`` is a world point)."""
    R1, x1, A1, t1 = _point(b1, r1, E, phi)
    R2, x2, A2, t2 = _point(b2, r2, E, phi)
    return PairKinematics(
        b1=b1,
        b2=b2,
        x1=x1,
        x2=x2,
        A1=A1,
        A2=A2,
        R1=R1,
        R2=R2,
        r1=r1,
        r2=r2,
        phi=np.concatenate([t1, t2], axis=1),
    )
