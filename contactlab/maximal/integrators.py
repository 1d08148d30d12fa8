"""Time integrators of the maximal formulation (ArtiSynth notes §0.9–0.10, §0.5).

Every integrator poses the velocity-level problem of §0.10: a matrix
``Mhat`` and a free momentum ``b`` such that the contact model solves

.. math::

    \\hat M v^+ = b + G^T \\lambda + N^T z + T^T \\beta ,\\qquad
    G v^+ = g,\\quad N v^+ \\ge c, \\quad \\text{friction on } T,

and then moves the bodies.  With ``f`` the wrench of the force elements plus
gravity at ``(E^k, v^k)``, ``K = d f / d delta`` (body perturbations
``E exp([delta])``) and ``D = -d f / d v`` (the signs of
:mod:`contactlab.forces.base`; the notes' ``df/dx = K`` and ``df/dxdot = -D``),
``p = C_h(v)`` the momentum ``M v`` turned by the Coriolis treatment
``C_h`` of the formulation over a step ``h`` (``coriolis`` option), ``f_g``
gravity and ``f_e`` the force elements,

* ``linearly-implicit``: ``Mhat = M + h D - h^2 K_sym``, ``b = p + h (f + D v)``,
  ``E+ = E exp(h [v+])``;
* ``symplectic-euler``: ``Mhat = M``, ``b = p + h f``, ``E+ = E exp(h [v+])``;
* ``implicit-euler``: ``Mhat = M + h D - h^2 K``, ``b = p + h (f + D v)``,
  ``E+ = E exp(h [v+])``;
* ``trapezoidal``: ``Mhat = M + h/2 D - h^2/4 K``,
  ``b = C_h(v + M^-1 (h f_g + h/2 f_e)) + h/2 f_e + h/2 D v + h^2/4 K v``,
  ``E+ = E exp(h/2 [v + v+])``;
* ``bridson-marino``: ``Mhat = M + h/2 D``, ``b = C_{h/2}(v + M^-1 h/2 f) + h/2 D v``
  (the first half of the gyroscopic step) gives ``v^{k+1/2}``,
  ``E+ = E exp(h [v^{k+1/2}])``, then a second half-kick.

``linearly-implicit`` is the formulation's historical step (Sueda's notes
eq. 1.30, ``K`` symmetrized, explicit forces when the formulation's
``implicit`` flag is off); it stays the default, bit for bit.

Derivations (the transcription's formulas re-derived):

* implicit Euler: ``M (v+ - v) = h f(E^{k+1}, v+)`` with
  ``f(E^{k+1}, v+) ~ f + K h v+ - D (v+ - v)``.
* trapezoidal: ``M (v+ - v) = h/2 (f^k + f(E^{k+1}, v+))`` with
  ``f(E^{k+1}, v+) ~ f + K h/2 (v + v+) - D (v+ - v)`` (the position moves
  by the mean velocity) gives the row above, the notes' §0.9.3.  Body-frame
  momenta are turned by the body's rotation over the step (the gyroscopic
  term); the impulse ``h/2 f^k``, expressed in the frame of step k, is turned
  with them (a Strang split), and so is gravity's whole impulse, which is
  fixed in the world, so that ``R^{k+1} b`` is the world impulse to O(h^3).
  Adding ``h f^k`` after the turn instead (the Euler steps) is first order:
  a spinning body in free fall lands 0.29 m off after 1 s at h = 20 ms.
  With ``coriolis="midpoint"`` (``C_h``: the implicit midpoint rule on
  Euler's equations) the step is second order on a tumbling body; the
  "rotated" and "explicit" forms are first-order in the gyroscopic term.
* Bridson–Marino (§0.9.4): half a step implicit in damping gives
  ``v^{k+1/2}``, which the contact model constrains; the bodies move with it;
  then ``f' = f(E^{k+1}, v^k)`` and
  ``(M + h/2 D) v+ = (M + h/2 D) v^k + h/2 (f^k + f')``, i.e. (keeping the
  constraint impulse of the first half) ``v+ = v^{k+1/2} + (M + h/2 D)^{-1} h/2 f'``.
  The gyroscopic term is split the same way: implicit Euler over ``h/2``
  (the midpoint rate ``u``) before the positions move, explicit over ``h/2``
  at ``v^{k+1/2}`` in the second half-kick, which together are the implicit
  midpoint rule (``omega+ = 2 u - omega``), second order; the second
  half-kick stays in the null space of the bilateral rows at ``E^{k+1}``
  (RATTLE's constrained half-kick).  The position Jacobian is not used, so
  stiff springs are explicit.  The
  notes write the last solve from ``v^k``, which would drop the constraint
  impulse from ``v+``; the next step's constraint solve would then re-apply
  it and a sliding contact would see 1.5 times its friction.  Kept as above
  (leapfrog form), the next solve meets the second half-kick and applies the
  whole step's impulse, so friction is exact; the price is that ``v+`` of a
  body resting on a support points ``h/2 |g|`` into it (kinetic energy
  ``m (h g)^2 / 8`` while positions stay put).

The exact ``K`` of a rigid-body force is not symmetric (§0.23) while every
contact model needs a symmetric ``Mhat`` (QP backends).  ``implicit-euler``
and ``trapezoidal`` keep the exact ``K`` (``jacobian="exact"``, default) by
one defect correction: with ``Mhat = S + A`` (symmetric and skew parts), the
problem gets ``S`` and ``b - A u`` where ``u = Mhat^{-1} b`` is the
unconstrained solution.  Without active constraints the model's answer is
exactly ``u``, the solution of the non-symmetric system; with constraints the
error is ``S^{-1} A (v+ - u)``, of order ``h^2 |K_skew| / m`` times the
constraint's velocity change.  ``jacobian="symmetric"`` uses ``K_sym`` instead.

Position correction (§0.5): after the positions move, the bilateral errors
``g(E)`` are removed by mass-weighted projection, ``delta = -M^{-1} G^T (G
M^{-1} G^T)^{-1} g``, ``E <- E exp([delta])``, repeated (Newton) until
``|g| <= 1e-12`` or eight times (simplified Newton: the rows and the
factorization of the first iteration are reused).  It is on by default for every integrator
but ``linearly-implicit`` (``projection`` option).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.maximal import assembly as asm
from contactlab.maximal.attachment_map import AttachmentMap as Attachments
from contactlab.scene import Scene

Array = NDArray[np.float64]

#: integrator name -> one-line description (``contactlab list`` and the docs)
INTEGRATORS: dict[str, str] = {
    "linearly-implicit": "linearly implicit Euler, symmetrized K (Sueda eq. 1.30; default)",
    "symplectic-euler": "symplectic Euler: explicit forces, positions from v+ (ArtiSynth 0.9.1)",
    "implicit-euler": "linearized implicit Euler with the exact non-symmetric K (0.9.2, 0.23)",
    "trapezoidal": "linearized trapezoidal rule, second order (0.9.3)",
    "bridson-marino": "Bridson-Marino velocity/position split with projection (0.9.4)",
}
DEFAULT = "linearly-implicit"
#: position-projection tolerance on the bilateral errors [m or rad] and Newton steps
PROJECTION_TOL = 1e-12
PROJECTION_ITERATIONS = 8


def check_integrator(name: str) -> str:
    """``name`` if it is an integrator, else :class:`UnknownNameError` (one line)."""
    if name not in INTEGRATORS:
        raise UnknownNameError("integrator", str(name), list(INTEGRATORS))
    return name


def check_jacobian(value: str) -> str:
    if value not in ("exact", "symmetric"):
        raise ConfigurationError(f"jacobian must be 'exact' or 'symmetric', got {value!r}")
    return value


@dataclass
class FreeStep:
    """The unconstrained part of a step.

    M : symmetric step matrix handed to the model (``Mhat``, or its symmetric
        part when the exact one is not symmetric).
    f : free momentum (defect-corrected when ``M`` is the symmetric part).
    half_kick : Bridson–Marino's ``M + h/2 D`` (second half-kick), else ``None``.
    """

    M: sp.csc_matrix
    f: Array
    half_kick: sp.csc_matrix | None = None


def _diag(mdiag: Array) -> sp.csc_matrix:
    n = mdiag.size
    return sp.csc_matrix((mdiag.reshape(-1), np.arange(n), np.arange(n + 1)), shape=(n, n))


def _momentum(mdiag: Array, phi: Array, h: float, coriolis: str) -> Array:
    """(6 nb,) the momenta ``M phi`` after the gyroscopic change over a step ``h``."""
    if coriolis == "explicit":
        return (mdiag * phi + h * asm.coriolis(mdiag, phi)).reshape(-1)
    if coriolis == "midpoint":
        return asm.midpoint_momentum(mdiag, phi, h).reshape(-1)
    return asm.rotated_momentum(mdiag, phi, h).reshape(-1)


def _first_half_momentum(mdiag: Array, phi: Array, h: float, coriolis: str) -> Array:
    """(6 nb,) the momenta after the gyroscopic change over the first half of a step.

    "midpoint": implicit Euler over ``h/2`` (``I u`` with the midpoint rate
    ``u``, linear momenta turned by ``exp(-h/2 [u])``), the first half of the
    implicit midpoint rule; the other forms over ``h/2``.
    """
    if coriolis == "midpoint":
        u = asm.midpoint_rate(mdiag, phi, h)
        linear = np.einsum("nab,nb->na", se3.exp_so3(-0.5 * h * u), mdiag[:, 3:] * phi[:, 3:])
        return np.concatenate([mdiag[:, :3] * u, linear], axis=1).reshape(-1)
    return _momentum(mdiag, phi, 0.5 * h, coriolis)


def _second_half_change(mdiag: Array, phi_half: Array, h: float, coriolis: str) -> Array:
    """(nb, 6) gyroscopic momentum change over the second half of a step, explicit in ``v^{k+1/2}``.

    "midpoint": ``-h/2 omega x I omega`` and linear momenta turned by
    ``exp(-h/2 [omega])``; with the first half this is the implicit midpoint
    rule on Euler's equations (``omega+ = 2 u - omega``).
    """
    p = mdiag * phi_half
    if coriolis == "midpoint":
        w = phi_half[:, :3]
        angular = -0.5 * h * np.cross(w, p[:, :3])
        linear = np.einsum("nab,nb->na", se3.exp_so3(-0.5 * h * w), p[:, 3:]) - p[:, 3:]
        return np.concatenate([angular, linear], axis=1)
    return _momentum(mdiag, phi_half, 0.5 * h, coriolis).reshape(-1, 6) - p


def _wrenches(scene: Scene, mdiag: Array, E: Array, phi: Array) -> tuple[Array, Array]:
    """Gravity and force-element wrenches at ``(E, phi)``, each (nb, 6), body frame."""
    gravity = asm.gravity_wrench(mdiag, scene.gravity, E)
    return gravity, asm.force_wrench(scene, E, phi)


def applied_wrench(scene: Scene, mdiag: Array, E: Array, phi: Array) -> Array:
    """Gravity plus force elements at ``(E, phi)``, (6 nb,) body frame."""
    gravity, elements = _wrenches(scene, mdiag, E, phi)
    return (gravity + elements).reshape(-1)


def _jacobians(
    scene: Scene, E: Array, phi: Array, symmetric: bool
) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    from contactlab.forces.base import total_damping, total_stiffness

    return (
        total_stiffness(scene.forces, scene, E, phi, symmetric=symmetric),
        total_damping(scene.forces, scene, E, phi),
    )


def _defect_corrected(Mhat: sp.spmatrix, b: Array) -> tuple[sp.csc_matrix, Array]:
    """Symmetric part of ``Mhat`` and ``b - A u`` with ``u = Mhat^{-1} b`` (module docstring)."""
    Mhat = sp.csc_matrix(Mhat)
    skew = sp.csc_matrix(0.5 * (Mhat - Mhat.T))
    skew.eliminate_zeros()
    if skew.nnz == 0:
        return Mhat, b
    u = spla.splu(Mhat).solve(b)
    return sp.csc_matrix(0.5 * (Mhat + Mhat.T)), b - skew @ u


def free_step(
    scene: Scene,
    mdiag: Array,
    E: Array,
    phi: Array,
    h: float,
    integrator: str,
    coriolis: str = "midpoint",
    jacobian: str = "exact",
) -> FreeStep:
    """``Mhat`` and ``b`` of ``integrator`` (table of the module docstring), not the default."""
    M = _diag(mdiag)
    gravity, elements = _wrenches(scene, mdiag, E, phi)
    v = phi.reshape(-1)
    if integrator == "trapezoidal":  # forces of step k enter before the turn (docstring)
        p = _momentum(mdiag, phi + (h * gravity + 0.5 * h * elements) / mdiag, h, coriolis)
        if not scene.forces:
            return FreeStep(M, p)
        K, D = _jacobians(scene, E, phi, symmetric=jacobian == "symmetric")
        Mhat = M + 0.5 * h * D - 0.25 * h * h * K
        b = p + 0.5 * h * elements.reshape(-1) + 0.5 * h * (D @ v) + 0.25 * h * h * (K @ v)
        return FreeStep(*_defect_corrected(Mhat, b))
    if integrator == "bridson-marino":  # the first half-kick, to the midpoint frame
        p = _first_half_momentum(mdiag, phi + 0.5 * h * (gravity + elements) / mdiag, h, coriolis)
        if not scene.forces:
            return FreeStep(M, p, M)
        _, D = _jacobians(scene, E, phi, symmetric=True)
        Mhat = sp.csc_matrix(M + 0.5 * h * D)
        return FreeStep(Mhat, p + 0.5 * h * (D @ v), Mhat)
    p = _momentum(mdiag, phi, h, coriolis)
    f = (gravity + elements).reshape(-1)
    if integrator == "symplectic-euler" or not scene.forces:
        return FreeStep(M, p + h * f)
    K, D = _jacobians(scene, E, phi, symmetric=jacobian == "symmetric")
    if integrator == "implicit-euler":
        Mhat = M + h * D - h * h * K
        return FreeStep(*_defect_corrected(Mhat, p + h * (f + D @ v)))
    raise UnknownNameError("integrator", integrator, list(INTEGRATORS))


def second_half_kick(
    scene: Scene,
    mdiag: Array,
    E_new: Array,
    phi_old: Array,
    phi_half: Array,
    h: float,
    half_kick: sp.spmatrix,
    attach: Attachments | None = None,
    coriolis: str = "midpoint",
    rows: sp.spmatrix | None = None,
) -> Array:
    """Bridson–Marino's ``v+ = v^{k+1/2} + dv``, ``(M + h/2 D) dv = h/2 f(E^{k+1}, v^k) + g``.

    ``g`` is the gyroscopic momentum change of the second half step at
    ``v^{k+1/2}`` (:func:`_second_half_change`).  With the bilateral ``rows``
    at ``E^{k+1}`` the kick stays in their null space (``rows dv = 0``, the
    constrained second half-kick of RATTLE): a jointed body is not kicked
    across its joint, and bodies welded by joints move as the same bodies
    attached.  With attachments the kick is solved in the active twists
    (``P^T H P``, ``P^T f``, ``rows P``).
    """
    f = applied_wrench(scene, mdiag, E_new, phi_old)
    f = f + (2.0 / h) * _second_half_change(mdiag, phi_half, h, coriolis).reshape(-1)
    H, r = sp.csc_matrix(half_kick), 0.5 * h * f
    G = None if rows is None or rows.shape[0] == 0 else sp.csr_matrix(rows)
    if attach is not None:
        P = attach.P
        H, r = sp.csc_matrix(P.T @ H @ P), np.asarray(P.T @ r)
        G = None if G is None else sp.csr_matrix(G @ P)
    if G is None:
        kick = spla.splu(H).solve(r)
    else:
        n, m = H.shape[0], G.shape[0]
        K = sp.bmat([[H, G.T], [G, None]], format="csc")
        rhs = np.concatenate([r, np.zeros(m)])
        try:
            kick = spla.splu(K).solve(rhs)[:n]
        except RuntimeError:  # dependent rows (attachment or redundant joints): least squares
            kick = np.linalg.lstsq(K.toarray(), rhs, rcond=None)[0][:n]
    if attach is None:
        return phi_half + kick.reshape(-1, 6)
    return phi_half + attach.expand(kick)


def project_positions(
    E: Array,
    mdiag: Array,
    rows_at: Callable[[Array], tuple],
    attach: Attachments | None = None,
    errors_at: Callable[[Array], Array] | None = None,
    t: float = 0.0,
) -> Array:
    """Remove the bilateral errors by mass-weighted projection (§0.5), Newton-iterated.

    ``rows_at(E)`` returns ``(G, g)`` at ``E``; ``errors_at(E)`` only ``g``
    (cheaper; defaults to ``rows_at``).  Each iteration moves the bodies by
    ``delta = -M^{-1} G^T (G M^{-1} G^T)^{-1} g`` (body frame), the smallest
    kinetic-metric change that zeroes the linearized errors.  ``G`` and the
    factorization of ``G M^{-1} G^T`` are those of the first iteration
    (simplified Newton: the correction of one step is small, so the rows
    barely turn).  With attachments it works in the active twists (``G P``,
    ``P^T M P``) and puts the attached bodies back on their masters (driven
    ones on their trajectories at time ``t`` [s]).
    """
    G, g = rows_at(E)
    if g.size == 0 or float(np.max(np.abs(g))) <= PROJECTION_TOL:
        return E
    errors = errors_at if errors_at is not None else (lambda X: rows_at(X)[1])
    G = sp.csr_matrix(G)
    if attach is None:
        minv = sp.diags(1.0 / mdiag.reshape(-1))
        MinvGt = sp.csc_matrix(minv @ G.T)
        S = sp.csc_matrix(G @ MinvGt)
        try:
            solve_S = spla.splu(S).solve
        except RuntimeError:  # dependent rows: least squares
            dense = S.toarray()
            solve_S = lambda r: np.linalg.lstsq(dense, r, rcond=None)[0]  # noqa: E731

        def move(X: Array, r: Array) -> Array:
            return se3.integrate(X, -(MinvGt @ solve_S(r)).reshape(-1, 6), 1.0)

    else:
        P = attach.P
        Mp = (P.T @ sp.diags(mdiag.reshape(-1)) @ P).toarray()
        Gp = np.asarray((G @ P).todense())
        MinvGtp = np.linalg.solve(Mp, Gp.T)
        Sp = Gp @ MinvGtp

        def move(X: Array, r: Array) -> Array:
            y = np.linalg.lstsq(Sp, r, rcond=None)[0]
            return attach.place(se3.integrate(X, attach.expand(-(MinvGtp @ y)), 1.0), t)

    for _ in range(PROJECTION_ITERATIONS):
        E = move(E, g)
        g = errors(E)
        if float(np.max(np.abs(g))) <= PROJECTION_TOL:
            break
    return E
