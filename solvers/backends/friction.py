"""Frictional-contact backends: ``nsgs``, ``apgd``, ``admm`` and ``ipm`` (compiled, numba).

Each takes a :class:`~solvers.frictional.FrictionalContact` natively
(``accepts_fc``), reports the natural-map residual of
:func:`solvers.frictional.fc_residuals` (Siconos / FCLIB's ``fc3d`` error,
``||r - P_K(r - û)||_2 / ||q||_2``) as its stopping test, and returns
``max_iterations`` (never ``optimal``) when its cap is reached first.

- ``nsgs``: block nonsmooth Gauss--Seidel over the 3x3 diagonal blocks with an
  exact local solver per law and cone (:mod:`solvers.numerics.fc_local`),
  over-relaxation ``omega`` (default 1), scalar rows in the same sweep, warm
  start.  ``max_iter`` counts sweeps (default 10000).  Both laws, every cone.
  For the Coulomb law the sweeps solve the CCP with De Saxcé's shift frozen
  and update the shift as an outer fixed point (:func:`~solvers.numerics.fc_kernels.nsgs`);
  ``direct=True`` applies the exact one-contact Coulomb solver in the sweep
  instead, as Siconos's NSGS does.  Measured on the 20-degree incline's step
  problems (a box on four redundant contacts, Delassus blocks with
  normal-tangent coupling 1.5 against a diagonal of 4): the direct sweep
  cycles (natural map 2e-2 after 5000 sweeps, at every ``omega`` tried from
  0.3 to 1), the shifted one converges.
- ``apgd``: Nesterov's accelerated projected gradient with backtracking and
  gradient restart on the CCP; the Coulomb law (not the optimality condition
  of one minimisation) through the same outer fixed point on De Saxcé's shift
  as ``nsgs`` (:func:`~solvers.numerics.fc_methods.apgd`).  ``max_iter``
  default 20000.
- ``admm``: ADMM with residual-balancing penalty ``rho`` (setting ``rho``,
  default ``1e-3 mean(diag W)``, then balanced) and conjugate-gradient ``W + rho I`` solves; both
  laws (De Saxcé's fixed point inside the splitting for Coulomb).
  ``max_iter`` default 5000.

- ``ipm``: primal-dual interior point on the velocity form (Mehrotra, Nesterov--Todd
  scaling; :mod:`solvers.backends.fc_ipm`), one sparse Cholesky of ``M + Ĉ'ΘĈ`` per
  iteration (by 6x6 blocks, or ``qdldl``'s LDL' with bilateral rows), 17--23 iterations
  on 10- to 200-box pile steps where the first-order methods take thousands.  Needs
  ``FrictionalContact.factor`` (the models pass it in maximal coordinates) or a ``W``
  of at most 600 rows; bilateral rows in a
  quasi-definite border of the normal matrix.  Warm start: impulses that meet the
  tolerance are returned as they are (both laws), others (natural map up to 0.1) become
  an interior point pushed 3x their natural map inside the cones
  (:meth:`~solvers.backends.fc_ipm.VelocityForm.impulse_point`; 0-2 iterations per CCP
  step on the 1000-box pile at rest, cold 6); on the exact cone the Coulomb fixed point
  starts from them too (first shift from their velocities, see :class:`IPMBackend`;
  landed 200-box ``coulomb`` steps 33 iterations median, cold 55).  The Coulomb
  law through De Saxcé's fixed point ``x = h(u_t(x))`` on the per-contact shift ``x``
  (one CCP per round with ``q_n + x`` frozen, started from the previous round's
  interior point), by Newton's steps on the exact cone: ``(I - J) δ = h(u_t) - x`` by
  GMRES, ``J`` from the interior point's own normal matrix (:meth:`IPMBackend._linearise`);
  on polyhedral cones (box friction) by Anderson's mixing (:class:`_Anderson`).  On ten
  stored 200-box ``coulomb`` steps: median 7 rounds, 61 iterations (the relaxed plain
  iteration: 46 rounds, 249).  Setting ``acceleration`` (``"newton"``, ``"anderson"``,
  ``"none"``) and ``memory`` (Anderson's).  ``max_iter`` counts
  interior-point iterations (default 100, 500 for the Coulomb law); a run stalled
  short of ``tol`` near the cones' boundary is finished by at most 200 ``nsgs`` sweeps.
  The box and pyramid laws (``cone="box"``, ``"pyramid"``): the fixed point stops once it
  stalls, and semismooth Newton on the law's min-function finishes
  (:mod:`solvers.backends.fc_newton`; setting ``newton``, its iteration cap, default 300,
  0 for none).

All of them need the diagonal of ``W`` positive on contact normal rows; a
contact whose 3x3 block is singular is still handled by the local solvers'
closed forms only if its normal entry is positive.

The backends live one per module (this module keeps their names importable):
:mod:`solvers.backends.fc_base` (the shared base class and helpers),
:mod:`~solvers.backends.fc_nsgs`, :mod:`~solvers.backends.fc_apgd`,
:mod:`~solvers.backends.fc_admm` and :mod:`~solvers.backends.fc_ipm_backend`.
"""

from __future__ import annotations

from solvers.backends.base import Backend
from solvers.backends.fc_admm import ADMMBackend
from solvers.backends.fc_apgd import APGDBackend
from solvers.backends.fc_base import (
    FrictionBackend,
    _codes,
    _csr,
    _no_settings,
    _start,
    _status,
    _wide,
    floored,
    rounding_floor,
    within_rounding,
)
from solvers.backends.fc_ipm_backend import IPMBackend, _Anderson, shift_note
from solvers.backends.fc_nsgs import NSGSBackend

__all__ = [
    "ADMMBackend",
    "APGDBackend",
    "FRICTION_BACKENDS",
    "FrictionBackend",
    "IPMBackend",
    "NSGSBackend",
    "_Anderson",
    "_codes",
    "_csr",
    "_no_settings",
    "_start",
    "_status",
    "_wide",
    "floored",
    "rounding_floor",
    "shift_note",
    "within_rounding",
]

FRICTION_BACKENDS: list[type[Backend]] = [NSGSBackend, APGDBackend, ADMMBackend, IPMBackend]
