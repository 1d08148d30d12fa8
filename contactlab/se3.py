"""The Lie groups SO(3) and SE(3) and their algebras, batched over leading axes.

Conventions (Sueda's notes §1.1–1.5): a transform is ``E = [[R, p], [0, 1]]``; a
twist ``phi = (omega, nu)`` is in body coordinates, angular part first, and
``Edot = E [phi]`` (eq. 1.8).  Every function accepts stacks: an array of
shape ``(..., 3)``, ``(..., 6)``, ``(..., 3, 3)`` or ``(..., 4, 4)`` and
returns the matching stack, so assembly over many bodies is one call.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]

# Below this angle the closed forms are replaced by their Taylor series; the
# series are accurate to machine precision there (next term ~ theta^6).
_SMALL_ANGLE = 1e-4


def _as(x: ArrayLike) -> Array:
    return np.asarray(x, dtype=np.float64)


# ----------------------------------------------------------------------------
# brackets
# ----------------------------------------------------------------------------
def bracket3(w: ArrayLike) -> Array:
    """Cross-product matrix ``[w]`` with ``[w] b = w x b`` (Sueda's notes, eq. 1.7).

    Parameters
    ----------
    w : (..., 3) vectors.

    Returns
    -------
    (..., 3, 3) skew-symmetric matrices.
    """
    w = _as(w)
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1] = -w[..., 2]
    out[..., 0, 2] = w[..., 1]
    out[..., 1, 0] = w[..., 2]
    out[..., 1, 2] = -w[..., 0]
    out[..., 2, 0] = -w[..., 1]
    out[..., 2, 1] = w[..., 0]
    return out


def unbracket3(W: ArrayLike) -> Array:
    """Inverse of :func:`bracket3`: the vector of a (..., 3, 3) skew matrix.

    The skew part is taken, so slightly non-skew input (round-off) is
    projected rather than rejected.
    """
    W = _as(W)
    return 0.5 * np.stack(
        [W[..., 2, 1] - W[..., 1, 2], W[..., 0, 2] - W[..., 2, 0], W[..., 1, 0] - W[..., 0, 1]],
        axis=-1,
    )


def bracket6(phi: ArrayLike) -> Array:
    """The 4x4 matrix ``[phi] = [[ [omega], nu ], [0, 0]]`` (Sueda's notes, eq. 1.6)."""
    phi = _as(phi)
    out = np.zeros(phi.shape[:-1] + (4, 4))
    out[..., :3, :3] = bracket3(phi[..., :3])
    out[..., :3, 3] = phi[..., 3:]
    return out


def unbracket6(Phi: ArrayLike) -> Array:
    """Inverse of :func:`bracket6`: (..., 4, 4) -> (..., 6), angular first."""
    Phi = _as(Phi)
    return np.concatenate([unbracket3(Phi[..., :3, :3]), Phi[..., :3, 3]], axis=-1)


# ----------------------------------------------------------------------------
# SO(3)
# ----------------------------------------------------------------------------
def _sinc_coefficients(theta: Array) -> tuple[Array, Array, Array]:
    """``a = sin t / t``, ``b = (1 - cos t) / t^2``, ``c = (t - sin t) / t^3``."""
    small = theta < _SMALL_ANGLE
    t = np.where(small, 1.0, theta)
    t2 = theta * theta
    a = np.where(small, 1.0 - t2 / 6.0 + t2 * t2 / 120.0, np.sin(t) / t)
    # 1 - cos t = 2 sin^2(t/2) without cancellation
    b = np.where(small, 0.5 - t2 / 24.0 + t2 * t2 / 720.0, 2.0 * (np.sin(0.5 * t) / t) ** 2)
    c = np.where(small, 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0, (t - np.sin(t)) / (t**3))
    return a, b, c


def exp_so3(w: ArrayLike) -> Array:
    """Rotation ``exp([w])`` by Rodrigues' formula; (..., 3) -> (..., 3, 3)."""
    w = _as(w)
    theta = np.linalg.norm(w, axis=-1)
    a, b, _ = _sinc_coefficients(theta)
    W = bracket3(w)
    I = np.broadcast_to(np.eye(3), W.shape)
    return I + a[..., None, None] * W + b[..., None, None] * (W @ W)


def rotation_to_quaternion(R: ArrayLike) -> Array:
    """Unit quaternion ``(w, x, y, z)`` with ``w >= 0`` of a rotation matrix.

    Shepperd's method: the largest of the four diagonal combinations is used
    as the pivot, so the result is accurate for every angle including pi.
    """
    R = _as(R)
    tr = R[..., 0, 0] + R[..., 1, 1] + R[..., 2, 2]
    cands = np.stack(
        [tr, R[..., 0, 0], R[..., 1, 1], R[..., 2, 2]], axis=-1
    )  # proportional to 4q_i^2 - 1 (up to offsets)
    k = np.argmax(cands, axis=-1)
    # pivot w
    s = np.sqrt(np.maximum(1.0 + tr, 1e-300)) * 2.0
    qw = np.stack(
        [
            0.25 * s,
            (R[..., 2, 1] - R[..., 1, 2]) / s,
            (R[..., 0, 2] - R[..., 2, 0]) / s,
            (R[..., 1, 0] - R[..., 0, 1]) / s,
        ],
        axis=-1,
    )
    s = np.sqrt(np.maximum(1.0 + R[..., 0, 0] - R[..., 1, 1] - R[..., 2, 2], 1e-300)) * 2.0
    qx = np.stack(
        [
            (R[..., 2, 1] - R[..., 1, 2]) / s,
            0.25 * s,
            (R[..., 0, 1] + R[..., 1, 0]) / s,
            (R[..., 0, 2] + R[..., 2, 0]) / s,
        ],
        axis=-1,
    )
    s = np.sqrt(np.maximum(1.0 - R[..., 0, 0] + R[..., 1, 1] - R[..., 2, 2], 1e-300)) * 2.0
    qy = np.stack(
        [
            (R[..., 0, 2] - R[..., 2, 0]) / s,
            (R[..., 0, 1] + R[..., 1, 0]) / s,
            0.25 * s,
            (R[..., 1, 2] + R[..., 2, 1]) / s,
        ],
        axis=-1,
    )
    s = np.sqrt(np.maximum(1.0 - R[..., 0, 0] - R[..., 1, 1] + R[..., 2, 2], 1e-300)) * 2.0
    qz = np.stack(
        [
            (R[..., 1, 0] - R[..., 0, 1]) / s,
            (R[..., 0, 2] + R[..., 2, 0]) / s,
            (R[..., 1, 2] + R[..., 2, 1]) / s,
            0.25 * s,
        ],
        axis=-1,
    )
    allq = np.stack([qw, qx, qy, qz], axis=-2)
    q = np.take_along_axis(allq, k[..., None, None], axis=-2)[..., 0, :]
    q = q * np.where(q[..., :1] < 0.0, -1.0, 1.0)
    return q / np.linalg.norm(q, axis=-1, keepdims=True)


def quaternion_to_rotation(q: ArrayLike) -> Array:
    """Rotation matrix of a quaternion ``(w, x, y, z)`` (normalised first)."""
    q = _as(q)
    n = np.linalg.norm(q, axis=-1, keepdims=True)
    if np.any(n == 0.0):
        raise ConfigurationError("quaternion has zero norm; give a non-zero (w, x, y, z)")
    w, x, y, z = np.moveaxis(q / n, -1, 0)
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
            np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
            np.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
        ],
        axis=-2,
    )


def log_so3(R: ArrayLike) -> Array:
    """Rotation vector ``w`` with ``exp([w]) = R`` and ``|w| <= pi``.

    Computed through the quaternion, which stays accurate at theta = 0 and
    theta = pi where the trace formula loses all precision.
    """
    q = rotation_to_quaternion(R)
    v = q[..., 1:]
    s = np.linalg.norm(v, axis=-1)
    theta = 2.0 * np.arctan2(s, q[..., 0])
    small = s < 1e-12
    scale = np.where(small, 2.0 / np.maximum(q[..., 0], 1e-300), theta / np.where(small, 1.0, s))
    return scale[..., None] * v


def so3_right_jacobian(w: ArrayLike) -> Array:
    """Right Jacobian of SO(3): ``[exp(w)^T d exp(w)/dw_k]^vee`` as columns.

    ``J_r(w) = I - b [w] + c [w]^2`` with ``b = (1-cos t)/t^2`` and
    ``c = (t - sin t)/t^3``.  It maps exponential-coordinate rates to body
    angular velocity: ``omega = J_r(w) w_dot``.
    """
    w = _as(w)
    theta = np.linalg.norm(w, axis=-1)
    _, b, c = _sinc_coefficients(theta)
    W = bracket3(w)
    I = np.broadcast_to(np.eye(3), W.shape)
    return I - b[..., None, None] * W + c[..., None, None] * (W @ W)


def is_rotation(R: ArrayLike, tol: float = 1e-9) -> bool:
    """Whether every matrix in the stack is orthonormal with determinant +1."""
    R = _as(R)
    if R.shape[-2:] != (3, 3):
        return False
    I = np.eye(3)
    ortho = np.abs(np.swapaxes(R, -1, -2) @ R - I).max(axis=(-1, -2)) <= tol
    det = np.abs(np.linalg.det(R) - 1.0) <= tol * 10
    return bool(np.all(ortho & det))


def unit_axis(v: ArrayLike | None, default: ArrayLike, what: str) -> Array:
    """The unit vector along ``v`` (3,), or ``default`` when ``v`` is ``None``.

    Raises
    ------
    ConfigurationError
        If ``v`` is not a non-zero finite 3-vector; the message names ``what``.
    """
    a = _as(default) if v is None else _as(v).reshape(-1)
    n = float(np.linalg.norm(a))
    if a.shape != (3,) or not np.isfinite(n) or n == 0.0:
        raise ConfigurationError(f"{what} must be a non-zero finite 3-vector, got {v!r}")
    return a / n


# ----------------------------------------------------------------------------
# SE(3)
# ----------------------------------------------------------------------------
def make_transform(R: ArrayLike | None = None, p: ArrayLike | None = None) -> Array:
    """Build ``E = [[R, p], [0, 1]]`` from a rotation and a translation."""
    R = np.eye(3) if R is None else _as(R)
    p = np.zeros(R.shape[:-2] + (3,)) if p is None else _as(p)
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    E = np.zeros(shape + (4, 4))
    E[..., :3, :3] = R
    E[..., :3, 3] = p
    E[..., 3, 3] = 1.0
    return E


def inverse(E: ArrayLike) -> Array:
    """``E^{-1} = [[R^T, -R^T p], [0, 1]]`` (Sueda's notes, eq. 1.4)."""
    E = _as(E)
    Rt = np.swapaxes(E[..., :3, :3], -1, -2)
    return make_transform(Rt, -(Rt @ E[..., :3, 3, None])[..., 0])


def compose(*Es: ArrayLike) -> Array:
    """Product ``E1 E2 ... En`` of transforms (stacks broadcast)."""
    out = _as(Es[0])
    for E in Es[1:]:
        out = out @ _as(E)
    return out


def transform_points(E: ArrayLike, x: ArrayLike) -> Array:
    """World positions ``R x + p`` of local points ``x`` (Sueda's notes, eq. 1.2)."""
    E = _as(E)
    return (E[..., :3, :3] @ _as(x)[..., None])[..., 0] + E[..., :3, 3]


def exp_se3(phi: ArrayLike) -> Array:
    """``exp([phi])`` for twists (..., 6), closed form; -> (..., 4, 4)."""
    phi = _as(phi)
    w, v = phi[..., :3], phi[..., 3:]
    theta = np.linalg.norm(w, axis=-1)
    a, b, c = _sinc_coefficients(theta)
    W = bracket3(w)
    W2 = W @ W
    I = np.broadcast_to(np.eye(3), W.shape)
    R = I + a[..., None, None] * W + b[..., None, None] * W2
    V = I + b[..., None, None] * W + c[..., None, None] * W2
    return make_transform(R, (V @ v[..., None])[..., 0])


def log_se3(E: ArrayLike) -> Array:
    """Twist ``phi`` with ``exp([phi]) = E``, rotation angle in [0, pi]."""
    E = _as(E)
    w = log_so3(E[..., :3, :3])
    theta = np.linalg.norm(w, axis=-1)
    small = theta < _SMALL_ANGLE
    t = np.where(small, 1.0, theta)
    # V^{-1} = I - W/2 + d W^2, d = (1 - t sin t / (2 (1 - cos t))) / t^2.
    # Written with t sin t / (2 (1 - cos t)) = (t/2) cot(t/2): the form with
    # 1 - cos t loses ~1e-16/t^4 in d (1e-8 in nu at t = 1e-4).
    half = 0.5 * t
    d = np.where(
        small,
        1.0 / 12.0 + theta**2 / 720.0,
        (1.0 - half * np.cos(half) / np.sin(half)) / (t * t),
    )
    W = bracket3(w)
    I = np.broadcast_to(np.eye(3), W.shape)
    Vinv = I - 0.5 * W + d[..., None, None] * (W @ W)
    return np.concatenate([w, (Vinv @ E[..., :3, 3, None])[..., 0]], axis=-1)


def adjoint(E: ArrayLike) -> Array:
    """``Ad(E) = [[R, 0], [[p] R, R]]`` mapping body twists to the parent frame.

    Sueda's notes, eq. 1.14: ``phi_world = Ad(E) phi_body``.
    """
    E = _as(E)
    R = E[..., :3, :3]
    out = np.zeros(E.shape[:-2] + (6, 6))
    out[..., :3, :3] = R
    out[..., 3:, 3:] = R
    out[..., 3:, :3] = bracket3(E[..., :3, 3]) @ R
    return out


def adjoint_inverse(E: ArrayLike) -> Array:
    """``Ad(E)^{-1} = Ad(E^{-1})`` without forming the inverse transform."""
    return adjoint(inverse(E))


def ad(phi: ArrayLike) -> Array:
    """Spatial cross-product matrix ``ad(phi) = [[[w], 0], [[v], [w]]]`` (eq. 1.19)."""
    phi = _as(phi)
    W = bracket3(phi[..., :3])
    out = np.zeros(phi.shape[:-1] + (6, 6))
    out[..., :3, :3] = W
    out[..., 3:, 3:] = W
    out[..., 3:, :3] = bracket3(phi[..., 3:])
    return out


def adjoint_dot(E: ArrayLike, phi: ArrayLike) -> Array:
    """Time derivative of ``Ad(E)`` when ``Edot = E [phi]``: ``Ad(E) ad(phi)`` (eq. 1.19)."""
    return adjoint(E) @ ad(phi)


def gamma(x: ArrayLike) -> Array:
    """Material Jacobian ``Gamma(x) = [ [x]^T, I ]`` (3x6) of a body point (Sueda's notes §1.4).

    The world velocity of the local point ``x`` is ``R Gamma(x) phi`` (eq. 1.12).
    """
    x = _as(x)
    out = np.zeros(x.shape[:-1] + (3, 6))
    out[..., :, :3] = -bracket3(x)
    out[..., :, 3:] = np.eye(3)
    return out


def integrate(E: ArrayLike, phi: ArrayLike, h: float) -> Array:
    """Position update ``E exp(h [phi])`` on SE(3) (Sueda's notes §1.8)."""
    return _as(E) @ exp_se3(h * _as(phi))


# ----------------------------------------------------------------------------
# sampling (tests, scenarios with random initial conditions)
# ----------------------------------------------------------------------------
def random_rotation(rng: np.random.Generator, size: int | tuple[int, ...] = ()) -> Array:
    """Rotations uniformly distributed on SO(3) (normalised Gaussian quaternions)."""
    shape = (size,) if isinstance(size, int) else tuple(size)
    q = rng.standard_normal(shape + (4,))
    return quaternion_to_rotation(q)


def random_transform(
    rng: np.random.Generator, size: int | tuple[int, ...] = (), scale: float = 1.0
) -> Array:
    """Transforms with uniform rotation and Gaussian translation of std ``scale`` [m]."""
    shape = (size,) if isinstance(size, int) else tuple(size)
    return make_transform(random_rotation(rng, shape), scale * rng.standard_normal(shape + (3,)))
