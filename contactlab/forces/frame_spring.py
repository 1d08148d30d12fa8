"""Frame springs: six-degree-of-freedom springs between two frames (ArtiSynth notes §0.22).

Frame 1 is fixed on body A (``X_1A``), frame 2 on body B (``X_2B``); either
body may be ``None`` (the frame is then fixed in the world).  With
``x_1, x_2`` the frames' origins in world coordinates, ``R_21 = R_1^T R_2`` the
rotation from 2 to 1 and ``v = log(R_21) = phi u`` (in frame 1), the spring
stores

.. math::

    V = \\tfrac12 k_t |x_2 - x_1|^2 + \\tfrac12 k_r |v|^2 ,

and, with the relative velocity ``s = xdot_2 - xdot_1`` and the relative
angular velocity ``r = omega_2 - omega_1`` (both world), dissipates through
the Rayleigh function ``P = 1/2 d_t |s|^2 + 1/2 d_r |r|^2``.  The wrenches
on A and B in their body frames, angular part first, are (ArtiSynth notes,
eqs. 0.39–0.40, mapped from frames 1, 2 to the bodies' centres of mass)

.. math::

    f_A = R_A^T (k_t \\Delta + d_t s),\\quad
    \\tau_A = k_r R_{1A} v + d_r R_A^T r + p_1 \\times f_A,

    f_B = -R_B^T (k_t \\Delta + d_t s),\\quad
    \\tau_B = -k_r R_{2B} v - d_r R_B^T r + p_2 \\times f_B,

``Delta = x_2 - x_1``, ``p_1, p_2`` the frames' origins in the body frames.
The rotational term is the exact gradient of ``V``: the variation of ``v``
under a relative rotation ``omega`` (frame 1) is ``U omega`` with
``U = J_l^{-1}(v)`` (ArtiSynth notes eq. 0.45, the inverse left Jacobian of SO(3))
and ``U^T v = v``.

The stiffness ``K = d wrench / d delta`` (bodies perturbed as
``E <- E exp([delta])``, twists fixed) is exact and **not symmetric**: it
carries the terms ``[f] d theta`` from forces seen in rotating frames and
``k_r R_1A U (...)`` from the rotation's chart (ArtiSynth notes eqs. 0.43–0.53; the
seed's own ``J_p`` there is written for ArtiSynth's force-first order and is
re-derived here in the project's conventions).  ``D = -d wrench / d phi =
B^T diag(d_t, d_r) B`` is symmetric positive semi-definite, ``B`` mapping the
two twists to ``(s, r)``.  :func:`world_jacobians` gives both in world
coordinates (ArtiSynth notes §0.22.3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.forces.base import Array, Force, IntArray, body_indices, nonnegative
from contactlab.scene import Scene

_I3 = np.eye(3)


def so3_left_jacobian_inverse(v: ArrayLike) -> Array:
    """``J_l^{-1}(v)``: ``d log(exp([w]) R) / d w`` at ``w = 0`` for ``R = exp([v])``.

    .. math::

        J_l^{-1}(v) = I - \\tfrac12 [v] + c(\\phi) [v]^2,\\qquad
        c = \\frac{1}{\\phi^2} - \\frac{1 + \\cos\\phi}{2 \\phi \\sin\\phi},

    with ``phi = |v|`` (``c -> 1/12`` as ``phi -> 0``); ArtiSynth notes's ``U`` (eq. 0.45).
    """
    v = np.asarray(v, dtype=float)
    theta = float(np.linalg.norm(v))
    if theta < 1e-4:
        c = 1.0 / 12.0 + theta**2 / 720.0
    else:
        c = 1.0 / theta**2 - (1.0 + np.cos(theta)) / (2.0 * theta * np.sin(theta))
    V = se3.bracket3(v)
    return _I3 - 0.5 * V + c * (V @ V)


def _frame(value: ArrayLike | None, what: str) -> Array:
    X = np.eye(4) if value is None else np.array(value, dtype=float)
    if X.shape != (4, 4) or not np.all(np.isfinite(X)):
        raise ConfigurationError(f"FrameSpring {what} must be a finite 4x4 transform")
    if not se3.is_rotation(X[:3, :3], tol=1e-9) or not np.allclose(X[3], [0, 0, 0, 1]):
        raise ConfigurationError(
            f"FrameSpring {what} is not a rigid transform (orthonormal rotation, bottom row "
            "0 0 0 1); build it with contactlab.se3.make_transform"
        )
    X.setflags(write=False)
    return X


@dataclass(frozen=True)
class _Side:
    """One end: body pose, frame offset and twist (identity pose for the world)."""

    R: Array  # body rotation (3, 3)
    p_body: Array  # body origin, world (3,)
    R_off: Array  # frame rotation in the body, R_1A or R_2B
    p: Array  # frame origin in the body (3,)
    omega: Array  # body angular velocity, body frame
    nu: Array  # body linear velocity, body frame


@dataclass(frozen=True)
class FrameSpring(Force):
    """Six-degree-of-freedom spring-damper between two frames (ArtiSynth notes §0.22).

    Parameters
    ----------
    body_a, body_b : body names, ``None`` for a frame fixed in the world.
    frame_a, frame_b : 4x4 transforms ``X_1A``, ``X_2B`` of the frames in the
        bodies' frames (or in the world) [m]; identity by default.
    k_t : translational stiffness [N/m].
    k_r : rotational stiffness [N m/rad].
    d_t : translational damping [N s/m].
    d_r : rotational damping [N m s/rad].
    """

    body_a: str | None
    body_b: str | None
    frame_a: Array | None = None
    frame_b: Array | None = None
    k_t: float = 0.0
    k_r: float = 0.0
    d_t: float = 0.0
    d_r: float = 0.0

    def __post_init__(self) -> None:
        if self.body_a is None and self.body_b is None:
            raise ConfigurationError("FrameSpring: both frames are in the world; name a body")
        if self.body_a == self.body_b:
            raise ConfigurationError(
                f"FrameSpring: both frames are on body {self.body_a!r}; a spring between two "
                "frames of one body exerts no net wrench: name two different bodies"
            )
        object.__setattr__(self, "frame_a", _frame(self.frame_a, "frame_a"))
        object.__setattr__(self, "frame_b", _frame(self.frame_b, "frame_b"))
        units = {"k_t": "N/m", "k_r": "N m/rad", "d_t": "N s/m", "d_r": "N m s/rad"}
        for name, unit in units.items():
            nonnegative(getattr(self, name), f"FrameSpring {name} [{unit}]")

    # -- kinematics ------------------------------------------------------------
    def _indices(self, scene: Scene) -> IntArray:
        return body_indices(scene, [self.body_a, self.body_b])

    def bodies(self, scene: Scene) -> IntArray:
        idx = self._indices(scene)
        return idx[idx >= 0]

    def _sides(self, scene: Scene, E: Array, phi: Array) -> tuple[_Side, _Side]:
        out = []
        for i, X in zip(self._indices(scene), (self.frame_a, self.frame_b)):
            assert X is not None
            if i < 0:
                R, p0, w, nu = _I3, np.zeros(3), np.zeros(3), np.zeros(3)
            else:
                R, p0, w, nu = E[i][:3, :3], E[i][:3, 3], phi[i][:3], phi[i][3:]
            out.append(_Side(R, p0, X[:3, :3], X[:3, 3], w, nu))
        return out[0], out[1]

    @staticmethod
    def _relative(a: _Side, b: _Side) -> tuple[Array, Array, Array, Array, Array]:
        """``Delta``, ``v``, ``R_21``, ``s`` and ``r`` (see the module docstring)."""
        x1 = a.p_body + a.R @ a.p
        x2 = b.p_body + b.R @ b.p
        R21 = (a.R @ a.R_off).T @ (b.R @ b.R_off)
        v = se3.log_so3(R21)
        s = b.R @ (b.nu + np.cross(b.omega, b.p)) - a.R @ (a.nu + np.cross(a.omega, a.p))
        r = b.R @ b.omega - a.R @ a.omega
        return x2 - x1, v, R21, s, r

    # -- energy and wrench -----------------------------------------------------
    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        a, b = self._sides(scene, E, phi)
        delta, v, _, _, _ = self._relative(a, b)
        return 0.5 * self.k_t * float(delta @ delta) + 0.5 * self.k_r * float(v @ v)

    def _full_wrench(self, a: _Side, b: _Side) -> tuple[Array, Array]:
        delta, v, _, s, r = self._relative(a, b)
        lin = self.k_t * delta + self.d_t * s
        f_a = a.R.T @ lin
        t_a = self.k_r * a.R_off @ v + self.d_r * a.R.T @ r + np.cross(a.p, f_a)
        f_b = -b.R.T @ lin
        t_b = -self.k_r * b.R_off @ v - self.d_r * b.R.T @ r + np.cross(b.p, f_b)
        return np.concatenate([t_a, f_a]), np.concatenate([t_b, f_b])

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        a, b = self._sides(scene, E, phi)
        w = self._full_wrench(a, b)
        return np.array([w[k] for k, i in enumerate(self._indices(scene)) if i >= 0])

    # -- Jacobians -----------------------------------------------------------
    def _select(self, scene: Scene, J: Array) -> Array:
        keep = np.concatenate(
            [np.arange(6 * k, 6 * k + 6) for k, i in enumerate(self._indices(scene)) if i >= 0]
        )
        return J[np.ix_(keep, keep)]

    def full_stiffness(self, a: _Side, b: _Side) -> Array:
        """Exact (12, 12) ``d (w_A, w_B) / d (delta_A, delta_B)`` of both ends."""
        delta, v, R21, s, r = self._relative(a, b)
        B = se3.bracket3
        # variations as linear maps of (dtheta_A, dx_A, dtheta_B, dx_B): 3 x 12 blocks
        Z = np.zeros((3, 3))
        d_delta = np.hstack([a.R @ B(a.p), -a.R, -b.R @ B(b.p), b.R])
        # relative rotation (frame 1, left): omega = R21 R_2B^T dth_B - R_1A^T dth_A
        d_v = so3_left_jacobian_inverse(v) @ np.hstack([-a.R_off.T, Z, R21 @ b.R_off.T, Z])
        ua = a.nu + np.cross(a.omega, a.p)
        ub = b.nu + np.cross(b.omega, b.p)
        d_s = np.hstack([a.R @ B(ua), Z, -b.R @ B(ub), Z])
        d_r = np.hstack([a.R @ B(a.omega), Z, -b.R @ B(b.omega), Z])
        lin = self.k_t * delta + self.d_t * s
        d_lin = self.k_t * d_delta + self.d_t * d_s
        sel_a = np.hstack([_I3, Z, Z, Z])  # picks dtheta_A
        sel_b = np.hstack([Z, Z, _I3, Z])  # picks dtheta_B
        # d(R^T c) = [R^T c] dtheta + R^T dc   (Sueda's notes eq. 1.34)
        f_a = a.R.T @ lin
        d_f_a = B(f_a) @ sel_a + a.R.T @ d_lin
        rot_a = a.R.T @ r
        d_t_a = (
            self.k_r * a.R_off @ d_v + self.d_r * (B(rot_a) @ sel_a + a.R.T @ d_r) + B(a.p) @ d_f_a
        )
        f_b = -b.R.T @ lin
        d_f_b = B(f_b) @ sel_b - b.R.T @ d_lin
        rot_b = -b.R.T @ r
        d_t_b = (
            -self.k_r * b.R_off @ d_v + self.d_r * (B(rot_b) @ sel_b - b.R.T @ d_r) + B(b.p) @ d_f_b
        )
        return np.vstack([d_t_a, d_f_a, d_t_b, d_f_b])

    def full_damping(self, a: _Side, b: _Side) -> Array:
        """(12, 12) ``D = -d (w_A, w_B) / d (phi_A, phi_B) = B^T diag(d_t, d_r) B``."""
        B = se3.bracket3
        Z = np.zeros((3, 3))
        # s = R_b (nu_b - [p_b] w_b) - R_a (nu_a - [p_a] w_a);  r = R_b w_b - R_a w_a
        ds = np.hstack([a.R @ B(a.p), -a.R, -b.R @ B(b.p), b.R])
        dr = np.hstack([-a.R, Z, b.R, Z])
        return self.d_t * ds.T @ ds + self.d_r * dr.T @ dr

    def local_stiffness(self, scene: Scene, E: Array, phi: Array) -> Array:
        return self._select(scene, self.full_stiffness(*self._sides(scene, E, phi)))

    def local_damping(self, scene: Scene, E: Array, phi: Array) -> Array | None:
        if self.d_t == 0.0 and self.d_r == 0.0:
            return None
        return self._select(scene, self.full_damping(*self._sides(scene, E, phi)))


def world_jacobians(E: Array, wrench: Array, K: Array, D: Array) -> tuple[Array, Array]:
    """Stiffness and damping of body-frame quantities re-expressed in world coordinates.

    For bodies ``E`` (m, 4, 4) with body-frame wrenches ``wrench`` (m, 6) and
    their body-coordinate ``K``, ``D`` (6m, 6m), returns ``(K_w, D_w)`` for the
    world-frame wrenches ``(R tau, R f)`` (torque about the centre of mass)
    under world perturbations ``(R dtheta, R dx)`` and world twists
    ``(R omega, R nu)`` (ArtiSynth notes §0.22.3):

    .. math::

        D_w = \\hat R D \\hat R^T,\\qquad
        K_w = \\hat R K \\hat R^T - \\operatorname{blockdiag}_i
        \\begin{pmatrix} [R_i \\tau_i] & 0 \\\\ [R_i f_i] & 0 \\end{pmatrix},

    the last term being the turning of a body-fixed wrench with its body
    (``d(R a) = -[R a] R dtheta``).
    """
    E = np.asarray(E, dtype=float)
    m = E.shape[0]
    Rhat = np.zeros((6 * m, 6 * m))
    corr = np.zeros((6 * m, 6 * m))
    for i in range(m):
        R = E[i][:3, :3]
        Rhat[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] = R
        Rhat[6 * i + 3 : 6 * i + 6, 6 * i + 3 : 6 * i + 6] = R
        corr[6 * i : 6 * i + 3, 6 * i : 6 * i + 3] = se3.bracket3(R @ wrench[i][:3])
        corr[6 * i + 3 : 6 * i + 6, 6 * i : 6 * i + 3] = se3.bracket3(R @ wrench[i][3:])
    return Rhat @ K @ Rhat.T - corr, Rhat @ D @ Rhat.T
