"""Spherical joint in exponential coordinates with Grassia's reparameterization.

``Q = [[exp([q]), 0], [0, 1]]`` (Sueda's notes, eq. 2.42).  The seed builds ``S``
from the Gallego–Yezzi derivative of ``exp`` (eq. 2.43–2.47); the same
columns are, in closed form, the right Jacobian of SO(3),

.. math::

    S = \\begin{pmatrix} J_r(q) \\\\ 0 \\end{pmatrix}, \\quad
    J_r(q) = I - b(\\theta) [q] + c(\\theta) [q]^2, \\quad
    b = \\frac{1 - \\cos\\theta}{\\theta^2}, \\; c = \\frac{\\theta - \\sin\\theta}{\\theta^3},

and ``Sdot`` differentiates it along ``qdot`` with
``d b / dt = b_1 (q . qdot)``, ``b_1 = b'(theta)/theta`` (likewise ``c_1``).
Both are checked against finite differences of ``Q`` in the tests.

The chart is singular on the shells ``|q| = 2 pi n``.  Whenever ``|q|``
exceeds pi the joint switches to the antipodal coordinates
``q (1 - 2 pi / |q|)`` (same rotation, ``|q'| = 2 pi - |q| < pi``) and maps
the velocity so the angular velocity is unchanged,
``qdot' = J_r(q')^{-1} J_r(q) qdot`` (Sueda's notes §2.4.8).
"""

from __future__ import annotations

import numpy as np

from contactlab import se3
from contactlab.joints import row_geometry
from contactlab.joints.friction_geometry import JointFriction, LocalContacts, spherical_contacts
from contactlab.joints.maps import Array, Joint
from contactlab.joints.row_geometry import Geometry

# Below this angle the derivative coefficients use their series (accurate to
# ~t^6 / 10! there); above it the closed forms lose < 1e-10 to cancellation.
_SERIES_BELOW = 1e-2


def _derivative_coefficients(theta: float) -> tuple[float, float]:
    """``b'(t)/t`` and ``c'(t)/t`` of the right-Jacobian coefficients."""
    t = theta
    if t < _SERIES_BELOW:
        t2 = t * t
        return -1.0 / 12.0 + t2 / 180.0 - t2 * t2 / 6720.0, (
            -1.0 / 60.0 + t2 / 1260.0 - t2 * t2 / 60480.0
        )
    s, c = np.sin(t), np.cos(t)
    b1 = (t * s - 2.0 * (1.0 - c)) / t**4
    c1 = ((1.0 - c) * t - 3.0 * (t - s)) / t**5
    return float(b1), float(c1)


def right_jacobian_dot(q: Array, qdot: Array) -> Array:
    """Time derivative of :func:`contactlab.se3.so3_right_jacobian` along ``qdot``."""
    theta = float(np.linalg.norm(q))
    t = max(theta, 1e-300)
    if theta < 1e-4:
        b = 0.5 - theta**2 / 24.0
        c = 1.0 / 6.0 - theta**2 / 120.0
    else:
        b = (1.0 - np.cos(t)) / t**2
        c = (t - np.sin(t)) / t**3
    b1, c1 = _derivative_coefficients(theta)
    W, Wd = se3.bracket3(q), se3.bracket3(qdot)
    qq = float(q @ qdot)
    return -b1 * qq * W - b * Wd + c1 * qq * (W @ W) + c * (Wd @ W + W @ Wd)


class SphericalExpJoint(Joint):
    """Ball joint with exponential coordinates ``q`` (rotation vector) [rad]."""

    ndof = 3

    def __init__(self, switch_angle: float = np.pi) -> None:
        self.switch_angle = float(switch_angle)

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        Q = se3.make_transform(se3.exp_so3(q))
        S = np.zeros((6, 3))
        S[:3] = se3.so3_right_jacobian(q)
        Sdot = np.zeros((6, 3))
        Sdot[:3] = right_jacobian_dot(q, qdot)
        return Q, S, Sdot

    def constraint_geometry(self) -> Geometry:
        """Origins coincide (3 rows)."""
        return row_geometry.joint_geometry(row_geometry.ORIGIN, None)

    def friction_contacts(self, friction: JointFriction) -> LocalContacts:
        """Six points on a ball about the joint origin."""
        return spherical_contacts(friction)

    def chart(self, target: Array, guess: Array) -> Array:
        """Rotation vector of ``target`` on the branch ``r + 2 pi k r/|r|`` nearest ``guess``."""
        r = se3.log_so3(target[:3, :3])
        theta = float(np.linalg.norm(r))
        if theta < 1e-12:
            return r
        u = r / theta
        k = np.round((float(guess @ u) - theta) / (2.0 * np.pi))
        return np.asarray(r + 2.0 * np.pi * k * u, dtype=float)

    def advance(self, q: Array, qdot: Array, h: float) -> tuple[Array, Array]:
        """``exp([q+]) = exp([q]) exp(h [J_r(q) qdot])``; ``J_r(q+) qdot+ = J_r(q) qdot``."""
        omega = se3.so3_right_jacobian(q) @ qdot
        R = se3.exp_so3(q) @ se3.exp_so3(h * omega)
        q_new = self.chart(se3.make_transform(R), q + h * qdot)
        qdot_new = np.linalg.solve(se3.so3_right_jacobian(q_new), omega)
        return q_new, np.asarray(qdot_new, dtype=float)

    def reparameterize(self, q: Array, qdot: Array) -> tuple[Array, Array] | None:
        theta = float(np.linalg.norm(q))
        if theta <= self.switch_angle:
            return None
        q_new = q * (1.0 - 2.0 * np.pi / theta)
        omega = se3.so3_right_jacobian(q) @ qdot
        qdot_new = np.asarray(np.linalg.solve(se3.so3_right_jacobian(q_new), omega), dtype=float)
        return q_new, qdot_new

    def chart_distance(self, q: Array) -> float:
        return self.switch_angle - float(np.linalg.norm(q))

    def sample(self, rng: np.random.Generator) -> Array:
        v = rng.standard_normal(3)
        return v / np.linalg.norm(v) * rng.uniform(0.0, 3.0)
