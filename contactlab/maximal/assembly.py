"""Assembly of the maximal-coordinate step problem, vectorized over bodies.

Newton–Euler in body coordinates (Sueda's notes, eq. 1.21)

.. math::

    M \\dot\\phi = \\mathrm{ad}(\\phi)^\\top M \\phi + f_{body}(E),

with ``ad(phi)^T M phi = -(omega x I omega, omega x m nu)`` (eq. 1.23: the
familiar ``-omega x I omega`` gyroscopic torque, so the ``+`` sign of eq. 1.21
is right), discretized at the velocity level (eq. 1.28)

.. math::

    (M + h D - h^2 K) \\phi^+ = M \\phi + h\\,(\\mathrm{ad}(\\phi)^\\top M \\phi
        + f_{grav} + f_{forces} + D \\phi)

where the bracket on the left is the linearly implicit Euler matrix of
eq. 1.30 (``K = d f/d E`` along body twists, ``D = -d f/d phi``), used when
``implicit`` is on; the ``+ D phi`` on the right cancels the explicit part of
the damping force so that damping acts at ``phi+``.  Gravity in body
coordinates is ``(0, R^T m g)`` (eq. 1.22).

Bilateral rows ``G phi+ = rhs`` carry Baumgarte terms (eq. 1.82):

* velocity level: ``rhs = -gamma g``;
* acceleration level, ``G phidot = -Gdot phi - 2 alpha G phi - beta^2 g``
  discretized with ``phidot = (phi+ - phi)/h``:
  ``rhs = (1 - 2 h alpha) G phi - h Gdot phi - h beta^2 g``.

Defaults: ``gamma = 1/h`` for the velocity form, dead-beat for the
linearized drift (``g+ = g + h G phi+ = 0`` to first order), and
``alpha = beta = 10`` [1/s] (Baumgarte's own choice, quoted in Sueda's notes
§1.12) for the acceleration form.  The "units" choice ``alpha = beta = 1/h``
is unstable here: on the linear error model ``(h G phi, g)`` the step map
``[[1 - 2h alpha, -h^2 beta^2], [1 - 2h alpha, 1 - h^2 beta^2]]`` then has the
eigenvalue ``-(1 + sqrt 5)/2``; and even the dead-beat pair ``alpha = 1/(2h)``,
``beta = 1/h`` of that model diverges on a 3-link chain at h = 1e-2, because
the ``h Gdot phi`` term, quadratic in the velocities, feeds the correction
velocities back.  With 10 and 10 the same chain stays within 1e-2 m of drift.

The Coriolis term is applied by the implicit midpoint rule on Euler's
equations (see :func:`midpoint_momentum`); ``coriolis_form="rotated"`` turns
the body momenta instead (:func:`rotated_momentum`) and
``coriolis_form="explicit"`` keeps eq. 1.28 as printed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab import se3
from contactlab.csr import csc
from contactlab.joints.body_constraints import StackedRows
from contactlab.scene import Scene
from contactlab.se3 import _SMALL_ANGLE
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Array = NDArray[np.float64]


def mass_diagonal(scene: Scene) -> Array:
    """(nb, 6) diagonals ``(I1, I2, I3, m, m, m)`` of the mass matrices (Sueda's notes §1.7)."""
    return scene.spatial_inertia


def coriolis(mdiag: Array, phi: Array) -> Array:
    """``ad(phi)^T M phi`` (nb, 6) for diagonal ``M`` (Sueda's notes, eq. 1.23)."""
    w, v = phi[:, :3], phi[:, 3:]
    return -np.concatenate([np.cross(w, mdiag[:, :3] * w), np.cross(w, mdiag[:, 3:] * v)], axis=1)


def gravity_wrench(mdiag: Array, gravity: Array, E: Array) -> Array:
    """``(0, R^T m g)`` (nb, 6) in body coordinates (Sueda's notes, eq. 1.22)."""
    out = np.zeros((E.shape[0], 6))
    out[:, 3:] = mdiag[:, 3:4] * np.einsum("nba,b->na", E[:, :3, :3], gravity)
    return out


def gravity_energy(mdiag: Array, gravity: Array, E: Array) -> float:
    """``-sum m g . p`` [J]."""
    return float(-np.sum(mdiag[:, 3] * (E[:, :3, 3] @ gravity)))


def force_wrench(scene: Scene, E: Array, phi: Array) -> Array:
    """Sum of the scene's force-element wrenches (nb, 6), body frame (0 without forces)."""
    if not scene.forces:
        return np.zeros((E.shape[0], 6))
    from contactlab.forces.base import total_wrench

    return np.asarray(total_wrench(scene, E, phi), dtype=float)


def force_energy(scene: Scene, E: Array, phi: Array) -> float:
    """Potential energy of the force elements [J] (0 without forces)."""
    if not scene.forces:
        return 0.0
    from contactlab.forces.base import total_energy

    return float(total_energy(scene, E, phi))


def rotated_momentum(mdiag: Array, phi: Array, h: float) -> Array:
    """``exp(-h [omega]) M phi`` per body (nb, 6): body momenta turned by the step's rotation.

    First-order equal to ``M phi + h ad(phi)^T M phi`` (eq. 1.23 is
    ``-omega x`` applied to both momenta), but norm-preserving: the
    explicit form multiplies ``|m nu|`` and ``|I omega|`` by up to
    ``sqrt(1 + h^2 |omega|^2)`` every step, energy that a spinning link
    gains without bound (see the module docstring).
    """
    turn = se3.exp_so3(-h * phi[:, :3])
    p = mdiag * phi
    return np.concatenate(
        [np.einsum("nab,nb->na", turn, p[:, :3]), np.einsum("nab,nb->na", turn, p[:, 3:])], axis=1
    )


#: Newton iterations of :func:`midpoint_momentum` (quadratic convergence from ``u = omega``).
MIDPOINT_ITERATIONS = 4


def midpoint_momentum(mdiag: Array, phi: Array, h: float) -> Array:
    """Body momenta after the gyroscopic change over a step by the implicit midpoint rule (nb, 6).

    Euler's equations ``I omega' = -omega x I omega`` are stepped as
    ``I (omega+ - omega) = -h u x I u`` with ``u = (omega + omega+)/2``,
    solved by Newton's method on ``u`` (a 3 x 3 system per body).  The
    midpoint rule keeps every quadratic invariant of the flow, so the
    rotational kinetic energy ``omega . I omega / 2`` and ``|I omega|`` are
    unchanged by the gyroscopic part, and a symmetric body keeps its spin
    about its symmetry axis.  The linear momentum is turned by
    ``exp(-h [u])``.  The explicit rotation of :func:`rotated_momentum` feeds
    the spin of a thin body about its long axis by a factor
    ``1 + h^2 |omega_perp|^2 (I_max / I_min - 1) / 2`` per step (a 1 x 1 x 10
    link: about 6 % per step at h = 10 ms and 5 rad/s), which the constraint
    forces of a chain turn into an exponential energy gain.
    """
    u = midpoint_rate(mdiag, phi, h)
    angular = mdiag[:, :3] * (2.0 * u - phi[:, :3])
    linear = np.einsum("nab,nb->na", se3.exp_so3(-h * u), mdiag[:, 3:] * phi[:, 3:])
    return np.concatenate([angular, linear], axis=1)


def midpoint_rate(mdiag: Array, phi: Array, h: float) -> Array:
    """(nb, 3) the midpoint angular velocity ``u`` of :func:`midpoint_momentum`.

    ``I (u - omega) = -h/2 u x I u``: half a step of implicit Euler on Euler's
    equations, solved by Newton's method (a 3 x 3 system per body).
    """
    inertia = np.ascontiguousarray(mdiag[:, :3], dtype=float)
    w = np.ascontiguousarray(phi[:, :3], dtype=float)
    return _midpoint_rate(inertia, w, float(h), MIDPOINT_ITERATIONS)


@njit(cache=True)
def _midpoint_rate(inertia, w, h, iterations):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`midpoint_rate`'s Newton iterations, body by body (3 x 3 solves by Cramer's rule)."""
    nb = w.shape[0]
    u = w.copy()
    jac = np.empty((3, 3))
    res = np.empty(3)
    for n in range(nb):
        for _ in range(iterations):
            i0, i1, i2 = inertia[n, 0], inertia[n, 1], inertia[n, 2]
            u0, u1, u2 = u[n, 0], u[n, 1], u[n, 2]
            v0, v1, v2 = i0 * u0, i1 * u1, i2 * u2  # I u
            res[0] = 2.0 * i0 * (u0 - w[n, 0]) + h * (u1 * v2 - u2 * v1)
            res[1] = 2.0 * i1 * (u1 - w[n, 1]) + h * (u2 * v0 - u0 * v2)
            res[2] = 2.0 * i2 * (u2 - w[n, 2]) + h * (u0 * v1 - u1 * v0)
            # d/du (u x I u) = [u] I - [I u]
            jac[0, 0] = 2.0 * i0
            jac[0, 1] = h * (-u2 * i1 + v2)
            jac[0, 2] = h * (u1 * i2 - v1)
            jac[1, 0] = h * (u2 * i0 - v2)
            jac[1, 1] = 2.0 * i1
            jac[1, 2] = h * (-u0 * i2 + v0)
            jac[2, 0] = h * (-u1 * i0 + v1)
            jac[2, 1] = h * (u0 * i1 - v0)
            jac[2, 2] = 2.0 * i2
            # Cramer's rule (the Jacobian is 2 I + O(h): well conditioned)
            c00 = jac[1, 1] * jac[2, 2] - jac[1, 2] * jac[2, 1]
            c01 = jac[1, 2] * jac[2, 0] - jac[1, 0] * jac[2, 2]
            c02 = jac[1, 0] * jac[2, 1] - jac[1, 1] * jac[2, 0]
            det = jac[0, 0] * c00 + jac[0, 1] * c01 + jac[0, 2] * c02
            s0 = (
                res[0] * c00
                + jac[0, 1] * (res[2] * jac[1, 2] - res[1] * jac[2, 2])
                + jac[0, 2] * (res[1] * jac[2, 1] - res[2] * jac[1, 1])
            ) / det
            s1 = (
                jac[0, 0] * (res[1] * jac[2, 2] - res[2] * jac[1, 2])
                + res[0] * c01
                + jac[0, 2] * (res[2] * jac[1, 0] - res[1] * jac[2, 0])
            ) / det
            s2 = (
                jac[0, 0] * (res[2] * jac[1, 1] - res[1] * jac[2, 1])
                + jac[0, 1] * (res[1] * jac[2, 0] - res[2] * jac[1, 0])
                + res[0] * c02
            ) / det
            u[n, 0] = u0 - s0
            u[n, 1] = u1 - s1
            u[n, 2] = u2 - s2
    return u


@njit(cache=True, fastmath={"contract"})
def _skew_square(w0, w1, w2, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``[w] [w]`` into ``out`` (3, 3), each entry's three products summed by fused
    multiply-adds in order, as the BLAS product of :func:`contactlab.se3.exp_so3` does
    (bit for bit its ``W @ W`` on x86-64)."""
    W = np.empty((3, 3))
    W[0, 0], W[0, 1], W[0, 2] = 0.0, -w2, w1
    W[1, 0], W[1, 1], W[1, 2] = w2, 0.0, -w0
    W[2, 0], W[2, 1], W[2, 2] = -w1, w0, 0.0
    for i in range(3):
        for j in range(3):
            acc = 0.0
            for k in range(3):
                acc += W[i, k] * W[k, j]
            out[i, j] = acc
    return W


@njit(cache=True)
def _midpoint_free_momentum(mdiag, phi, E, gravity, h, iterations):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``(midpoint_momentum + h gravity_wrench).reshape(-1)``, body by body.

    The operations of the numpy construction in the same order, so the result is the
    same to the bit: Rodrigues' formula of :func:`contactlab.se3.exp_so3` (its series
    below ``_SMALL_ANGLE``), ``R (m nu)`` summed as numpy's ``einsum`` sums three
    products (first and third, then the second), the body-frame gravity ``R' g`` in
    order, and ``0`` added to the angular rows as the zero angular gravity is.
    """
    nb = phi.shape[0]
    inertia = np.ascontiguousarray(mdiag[:, :3])
    u = _midpoint_rate(inertia, np.ascontiguousarray(phi[:, :3]), h, iterations)
    f = np.empty(6 * nb)
    WW = np.empty((3, 3))
    zero = h * 0.0
    for n in range(nb):
        for j in range(3):
            f[6 * n + j] = mdiag[n, j] * (2.0 * u[n, j] - phi[n, j]) + zero
        w0, w1, w2 = -h * u[n, 0], -h * u[n, 1], -h * u[n, 2]
        theta = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        t2 = theta * theta
        if theta < _SMALL_ANGLE:
            a = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
            b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        else:
            a = np.sin(theta) / theta
            s = np.sin(0.5 * theta) / theta
            b = 2.0 * (s * s)
        W = _skew_square(w0, w1, w2, WW)
        p0, p1, p2 = mdiag[n, 3] * phi[n, 3], mdiag[n, 4] * phi[n, 4], mdiag[n, 5] * phi[n, 5]
        for i in range(3):
            r0 = ((1.0 if i == 0 else 0.0) + a * W[i, 0]) + b * WW[i, 0]
            r1 = ((1.0 if i == 1 else 0.0) + a * W[i, 1]) + b * WW[i, 1]
            r2 = ((1.0 if i == 2 else 0.0) + a * W[i, 2]) + b * WW[i, 2]
            linear = (r0 * p0 + r2 * p2) + r1 * p1
            g = E[n, 0, i] * gravity[0] + E[n, 1, i] * gravity[1] + E[n, 2, i] * gravity[2]
            f[6 * n + 3 + i] = linear + h * (mdiag[n, 3] * g)
    return f


def free_momentum(
    scene: Scene,
    mdiag: Array,
    E: Array,
    phi: Array,
    h: float,
    implicit: bool,
    coriolis_form: str = "midpoint",
) -> tuple[sp.csc_matrix, Array]:
    """Left-hand matrix and free momentum of the unconstrained step (see module docstring).

    ``mdiag`` (nb, 6) is :func:`mass_diagonal` of the scene (computed once per
    run); ``coriolis_form`` is "midpoint" (:func:`midpoint_momentum`), "explicit"
    (eq. 1.28 as printed) or "rotated" (:func:`rotated_momentum`).
    """
    n = mdiag.size
    M = csc(mdiag.reshape(-1), np.arange(n), np.arange(n + 1), (n, n))
    if coriolis_form == "midpoint":
        f = _midpoint_free_momentum(
            np.ascontiguousarray(mdiag, dtype=float),
            np.ascontiguousarray(phi, dtype=float),
            np.ascontiguousarray(E, dtype=float),
            np.ascontiguousarray(scene.gravity, dtype=float),
            float(h),
            MIDPOINT_ITERATIONS,
        )
    else:
        if coriolis_form == "explicit":
            p = mdiag * phi + h * coriolis(mdiag, phi)
        else:
            p = rotated_momentum(mdiag, phi, h)
        f = (p + h * gravity_wrench(mdiag, scene.gravity, E)).reshape(-1)
    if not scene.forces:
        return M, f
    if not implicit:
        return M, f + h * force_wrench(scene, E, phi).reshape(-1)
    from contactlab.forces.base import linearly_implicit_terms

    A, b = linearly_implicit_terms(scene.forces, scene, E, phi, h)
    return sp.csc_matrix(M + A), f + b


#: Default ``alpha`` and ``beta`` [1/s] of the acceleration-level form.
ACCELERATION_DEFAULT = 10.0


@dataclass(frozen=True)
class Baumgarte:
    """Resolved stabilization: ``form`` ("velocity"|"acceleration"|"off") and factors [1/s]."""

    form: str
    gamma: float = 0.0
    alpha: float = 0.0
    beta: float = 0.0


def resolve_baumgarte(scene: Scene, h: float, form: str) -> Baumgarte:
    """Factors of ``scene.stabilization`` for step ``h``; unset ones get the defaults above."""
    st = scene.stabilization
    if not st.enabled or form == "off":
        return Baumgarte("velocity" if form == "off" else form)
    return Baumgarte(
        form,
        gamma=1.0 / h if st.gamma is None else float(st.gamma),
        alpha=ACCELERATION_DEFAULT if st.alpha is None else float(st.alpha),
        beta=ACCELERATION_DEFAULT if st.beta is None else float(st.beta),
    )


def constraint_rhs(rows: StackedRows, phi: Array, h: float, b: Baumgarte) -> Array:
    """Right-hand side of ``G phi+ = rhs`` with Baumgarte terms (Sueda's notes, eq. 1.82)."""
    if b.form == "acceleration":
        assert rows.bias is not None
        Gphi = rows.G @ phi.reshape(-1)
        return (1.0 - 2.0 * h * b.alpha) * Gphi - h * rows.bias - h * b.beta**2 * rows.g
    return -b.gamma * rows.g
