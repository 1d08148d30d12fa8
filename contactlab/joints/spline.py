"""Spline joints of Lee and Terzopoulos: uniform cubic B-spline curves and surfaces.

Curve (REDMAX supplement §5.2, Alg. 4): with control frames ``C_i`` in SE(3), the
cumulative basis ``B~_i`` (Sueda's notes, eq. 2.61) and twists
``dC_i = log(C_{i-1}^{-1} C_i)``, segment ``s`` at local parameter ``u`` is

.. math::

    Q(q) = C_s \\exp([dC_{s+1}] \\tilde B_2(u)) \\exp([dC_{s+2}] \\tilde B_3(u))
           \\exp([dC_{s+3}] \\tilde B_4(u)).

Surface (REDMAX supplement §5.3, Alg. 5): six tensor-product scalar splines
``f_k(q_1, q_2) = b(u_1)^T C_k b(u_2)``, ``b(u) = B (1, u, u^2, u^3)``,
weight the basis twists (x, y, z translation first, then rotations about
x, y, z; the transcription of Sueda's notes, eq. 2.66 repeats a row),
``Q = prod_k exp([e_k] f_k)``.

Both are :class:`~contactlab.joints.maps.ProductOfExponentialsJoint`
subclasses: they declare their factors and inherit ``S`` and ``Sdot``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.maps import Array, ProductOfExponentialsJoint

# Uniform cubic B-spline basis, rows B_1..B_4 over (1, u, u^2, u^3) (Sueda's notes, eq. 2.57).
BASIS = (
    np.array(
        [[1.0, -3.0, 3.0, -1.0], [4.0, 0.0, -6.0, 3.0], [1.0, 3.0, 3.0, -3.0], [0.0, 0.0, 0.0, 1.0]]
    )
    / 6.0
)
# Cumulative sums from the end: B~_i = B_i + ... + B_4 (eq. 2.61).
CUMULATIVE = np.triu(np.ones((4, 4))) @ BASIS


def _powers(u: float) -> tuple[Array, Array, Array]:
    """``(1, u, u^2, u^3)`` and its first and second derivatives."""
    return (
        np.array([1.0, u, u * u, u**3]),
        np.array([0.0, 1.0, 2.0 * u, 3.0 * u * u]),
        np.array([0.0, 0.0, 2.0, 6.0 * u]),
    )


def _segment(q: float, n_segments: int, cyclic: bool) -> tuple[int, float]:
    """Segment index and local parameter; outside the range the end segment extrapolates."""
    s = int(np.floor(q))
    if cyclic:
        return s % n_segments, q - s
    s = min(max(s, 0), n_segments - 1)
    return s, q - s


class SplineCurveJoint(ProductOfExponentialsJoint):
    """One coordinate sliding the joint frame along a B-spline of frames.

    Parameters
    ----------
    frames : (m, 4, 4) control frames, ``m >= 4``.
    cyclic : close the curve (m segments) instead of m - 3 open segments.
    """

    ndof = 1

    def __init__(self, frames: ArrayLike, cyclic: bool = False) -> None:
        C = np.asarray(frames, dtype=float)
        if C.ndim != 3 or C.shape[1:] != (4, 4) or len(C) < 4:
            raise ConfigurationError(
                f"spline curve joint needs (m, 4, 4) control frames with m >= 4, got {C.shape}"
            )
        if not se3.is_rotation(C[:, :3, :3], tol=1e-6):
            raise ConfigurationError("spline curve control frames must hold proper rotations")
        self.frames, self.cyclic = C, bool(cyclic)
        m = len(C)
        self.n_segments = m if cyclic else m - 3
        prev = np.roll(C, 1, axis=0)
        # twists[i] = log(C_{i-1}^{-1} C_i); twists[0] only exists for cyclic curves
        self.twists = se3.log_se3(se3.inverse(prev) @ C)

    def factors(self, q: Array) -> tuple[Array, Array, Array, Array, Array]:
        s, u = _segment(float(q[0]), self.n_segments, self.cyclic)
        m = len(self.frames)
        idx = [(s + k) % m for k in (1, 2, 3)]
        p, dp, d2p = _powers(u)
        theta = (CUMULATIVE @ p)[1:]
        dtheta = (CUMULATIVE @ dp)[1:, None]
        d2theta = (CUMULATIVE @ d2p)[1:, None, None]
        return self.frames[s], self.twists[idx], theta, dtheta, d2theta

    def sample(self, rng: np.random.Generator) -> Array:
        return rng.uniform(0.0, self.n_segments, 1)


_SURFACE_TWISTS = np.vstack([np.hstack([np.zeros((3, 3)), np.eye(3)]), np.eye(3, 6)])


def frames_to_surface_values(frames: ArrayLike) -> Array:
    """(n1, n2, 4, 4) control frames -> (n1, n2, 6) values (x, y, z, a, b, c).

    The rotation is decomposed as ``Rx(a) Ry(b) Rz(c)``, the order of the
    surface joint's factors.
    """
    F = np.asarray(frames, dtype=float)
    R, p = F[..., :3, :3], F[..., :3, 3]
    b = np.arcsin(np.clip(R[..., 0, 2], -1.0, 1.0))
    a = np.arctan2(-R[..., 1, 2], R[..., 2, 2])
    c = np.arctan2(-R[..., 0, 1], R[..., 0, 0])
    return np.concatenate([p, np.stack([a, b, c], axis=-1)], axis=-1)


class SplineSurfaceJoint(ProductOfExponentialsJoint):
    """Two coordinates moving the joint frame over a bicubic B-spline surface of frames.

    Parameters
    ----------
    values : (n1, n2, 6) control values per grid point: translation (x, y, z)
        [m] and XYZ Euler angles (a, b, c) [rad]; ``n1, n2 >= 4``.  Rotations
        should stay small (< pi/4): the factors act as Euler angles.
    """

    ndof = 2

    def __init__(self, values: ArrayLike) -> None:
        V = np.asarray(values, dtype=float)
        if V.ndim != 3 or V.shape[2] != 6 or V.shape[0] < 4 or V.shape[1] < 4:
            raise ConfigurationError(
                f"spline surface joint needs (n1, n2, 6) control values with n1, n2 >= 4, "
                f"got {V.shape}"
            )
        self.values = V
        self.n_segments = (V.shape[0] - 3, V.shape[1] - 3)

    def factors(self, q: Array) -> tuple[Array, Array, Array, Array, Array]:
        s1, u1 = _segment(float(q[0]), self.n_segments[0], False)
        s2, u2 = _segment(float(q[1]), self.n_segments[1], False)
        C = self.values[s1 : s1 + 4, s2 : s2 + 4, :]  # (4, 4, 6)
        b1 = [BASIS @ v for v in _powers(u1)]
        b2 = [BASIS @ v for v in _powers(u2)]

        def f(i: int, j: int) -> Array:
            return np.einsum("a,abk,b->k", b1[i], C, b2[j])

        theta = f(0, 0)
        dtheta = np.stack([f(1, 0), f(0, 1)], axis=1)
        d2theta = np.empty((6, 2, 2))
        d2theta[:, 0, 0] = f(2, 0)
        d2theta[:, 1, 1] = f(0, 2)
        d2theta[:, 0, 1] = d2theta[:, 1, 0] = f(1, 1)
        return np.eye(4), _SURFACE_TWISTS, theta, dtheta, d2theta

    def sample(self, rng: np.random.Generator) -> Array:
        return rng.uniform(0.0, 1.0, 2) * np.array(self.n_segments)
