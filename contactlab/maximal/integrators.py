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
``p`` the momentum ``M v^k`` turned by the Coriolis treatment of the
formulation (``coriolis`` option; it is the same for every integrator),

* ``linearly-implicit``: ``Mhat = M + h D - h^2 K_sym``, ``b = p + h (f + D v)``,
  ``E+ = E exp(h [v+])``;
* ``symplectic-euler``: ``Mhat = M``, ``b = p + h f``, ``E+ = E exp(h [v+])``;
* ``implicit-euler``: ``Mhat = M + h D - h^2 K``, ``b = p + h (f + D v)``,
  ``E+ = E exp(h [v+])``;
* ``trapezoidal``: ``Mhat = M + h/2 D - h^2/4 K``,
  ``b = p + h f + h/2 D v + h^2/4 K v``, ``E+ = E exp(h/2 [v + v+])``;
* ``bridson-marino``: ``Mhat = M + h/2 D``, ``b = p + h/2 (f + D v)`` gives
  ``v^{k+1/2}``, ``E+ = E exp(h [v^{k+1/2}])``, then a second half-kick.

``linearly-implicit`` is the formulation's historical step (Sueda's notes
eq. 1.30, ``K`` symmetrized, explicit forces when the formulation's
``implicit`` flag is off); it stays the default, bit for bit.

Derivations (the transcription's formulas re-derived):

* implicit Euler: ``M (v+ - v) = h f(E^{k+1}, v+)`` with
  ``f(E^{k+1}, v+) ~ f + K h v+ - D (v+ - v)``.
* trapezoidal: ``M (v+ - v) = h/2 (f^k + f(E^{k+1}, v+))`` with
  ``f(E^{k+1}, v+) ~ f + K h/2 (v + v+) - D (v+ - v)`` (the position moves
  by the mean velocity) gives the row above, the notes' §0.9.3.
* Bridson–Marino (§0.9.4): half a step implicit in damping gives
  ``v^{k+1/2}``, which the contact model constrains; the bodies move with it;
  then ``f' = f(E^{k+1}, v^k)`` and
  ``(M + h/2 D) v+ = (M + h/2 D) v^k + h/2 (f^k + f')``, i.e. (keeping the
  constraint impulse of the first half) ``v+ = v^{k+1/2} + (M + h/2 D)^{-1} h/2 f'``.
  The position Jacobian is not used, so stiff springs are explicit.  The
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
from contactlab.attachments import AttachmentMap as Attachments
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.maximal import assembly as asm
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
    if coriolis == "explicit":
        return (mdiag * phi + h * asm.coriolis(mdiag, phi)).reshape(-1)
    if coriolis == "midpoint":
        return asm.midpoint_momentum(mdiag, phi, h).reshape(-1)
    return asm.rotated_momentum(mdiag, phi, h).reshape(-1)


def applied_wrench(scene: Scene, mdiag: Array, E: Array, phi: Array) -> Array:
    """Gravity plus force elements at ``(E, phi)``, (6 nb,) body frame."""
    w = asm.gravity_wrench(mdiag, scene.gravity, E)
    if scene.forces:
        w = w + asm.force_wrench(scene, E, phi)
    return w.reshape(-1)


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
    p = _momentum(mdiag, phi, h, coriolis)
    f = applied_wrench(scene, mdiag, E, phi)
    v = phi.reshape(-1)
    if integrator == "symplectic-euler" or not scene.forces:
        if integrator == "bridson-marino":
            return FreeStep(M, p + 0.5 * h * f, M)
        return FreeStep(M, p + h * f)
    K, D = _jacobians(scene, E, phi, symmetric=jacobian == "symmetric")
    if integrator == "implicit-euler":
        Mhat = M + h * D - h * h * K
        return FreeStep(*_defect_corrected(Mhat, p + h * (f + D @ v)))
    if integrator == "trapezoidal":
        Mhat = M + 0.5 * h * D - 0.25 * h * h * K
        b = p + h * f + 0.5 * h * (D @ v) + 0.25 * h * h * (K @ v)
        return FreeStep(*_defect_corrected(Mhat, b))
    if integrator == "bridson-marino":
        Mhat = sp.csc_matrix(M + 0.5 * h * D)
        return FreeStep(Mhat, p + 0.5 * h * (f + D @ v), Mhat)
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
) -> Array:
    """Bridson–Marino's ``v+ = v^{k+1/2} + (M + h/2 D)^{-1} h/2 f(E^{k+1}, v^k)``.

    With attachments the kick is solved in the active twists (``P^T H P``, ``P^T f``).
    """
    f = applied_wrench(scene, mdiag, E_new, phi_old)
    if attach is None:
        kick = spla.splu(sp.csc_matrix(half_kick)).solve(0.5 * h * f)
        return phi_half + kick.reshape(-1, 6)
    P = attach.P
    kick = spla.splu(sp.csc_matrix(P.T @ half_kick @ P)).solve(0.5 * h * (P.T @ f))
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
