"""The compiled contact step of free bodies with the exact friction cone (``nsgs``,
``apgd``, ``admm``).

The exact Coulomb law (model ``coulomb``, De Saxcé's problem) and Anitescu--Hart with the
exact cone (``anitescu-hart``, ``cone="soc"``) solved by ``nsgs`` go, through the general
layers, from ``scipy.sparse`` rows to the local frictional-contact problem
(:mod:`contactlab.models.fc_route`) and block Gauss--Seidel over the CSR rows of ``W``.
:class:`ConeContactStep` takes the same step in one compiled call
(:func:`contactlab.maximal._cone_kernels.cone_step`): the collision, the contact rows and
the integration of the box-friction compiled step
(:mod:`contactlab.maximal.compiled_step`), and block nonsmooth Gauss--Seidel on the
bodies' twists (``W`` never formed), each contact's cone problem solved exactly, the
contacts from the lowest point up, the same natural-map residual and tolerance as the
general route's ``nsgs``.  The warm start is the general route's record
(``fc:coulomb:soc`` or ``fc:ccp:soc`` in the state's memory, carried over by contact
identity), so the two paths share it.

Coulomb's shift.  By default the shifts ``mu ||u_t||`` are frozen over sweeps and
refreshed when the frozen cone problem is solved to a tenth of Coulomb's residual (the
general ``nsgs``'s rule); ``solver_settings={"direct": True}`` solves each contact's
one-contact Coulomb problem exactly instead (the general ``nsgs``'s ``direct=True``).

First-order methods.  With ``apgd`` or ``admm`` the same step (collision, rows, warm start,
integration) solves the contacts' problem by the general backends' accelerated projected
gradient or ADMM (:mod:`contactlab.maximal._cone_fom_kernels`): the iterations, step-size
and penalty rules, De Saxcé's shift rule for Coulomb's law (APGD keeping its momentum
over a refresh of the shift and refreshing it once the shifted problem is solved as well
as Coulomb's, where the general backend waits for a tenth), the natural-map stopping test
and the iteration caps (20,000 and 5,000) of :func:`solvers.numerics.fc_methods.apgd` and
:func:`solvers.numerics.fc_methods.admm`, with ``W x`` read through the contact rows and
the diagonal inverse mass (``W`` never formed).  ``admm`` takes its ``rho`` setting (the
initial penalty).

Islands.  By default each step's contacts are grouped by the bodies they join
(:func:`contactlab.maximal._pile_kernels.island_contacts`; the world joins nothing) and
each island is solved alone, from arrays of its own (its rows in the step's height order
restricted to it, its bodies' twists), with its own stopping test (the natural-map
residual relative to its own ``||q_k||``), its own iteration cap, and for ``apgd`` and
``admm`` its own step size and penalty: the general route's option ``islands``
(:func:`solvers.islands.solve_islands`).  The islands share no row and
``sum_k ||q_k||^2 = ||q||^2``, so every island within the tolerance is the whole step
within it; the step reports the whole problem's residual, the largest island's
iterations, and the number of islands and the iterations weighted by rows in
``last_times`` (``islands``, ``row_sweeps``).  A single island is solved on the step's
own arrays; ``islands = False`` on the step object solves the whole step as one problem.

It applies when the scene and the formulation are in the box-friction compiled step's
scope (:func:`contactlab.maximal.compiled_step.scope`: free bodies, the maximal
formulation's default step, the scene's own collision) and the model is ``coulomb`` with
``cone="soc"`` or ``anitescu-hart`` with ``cone="soc"``, without torsion or rolling and
without the model option ``islands`` (it keeps the general route's ``solve_islands``, on
which the batched runner steps its copies), solved by ``nsgs`` (settings: ``direct`` only,
no ``omega``), ``apgd`` (no settings) or ``admm`` (settings: ``rho`` only); any other
setting keeps the general path (which reports the settings it does not know).  A step
the kernel cannot take (a decoupled row) goes to the general path.  A step that reaches
the iteration cap (an island at it) keeps the best iterate met (``nsgs``, ``admm``;
``apgd``'s last, as the general backend) and, when the whole problem's residual is above
the tolerance, reports ``max_iterations`` with it (under ``strict`` the simulator's
failure, as every route).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.maximal import _cone_fom_kernels as F
from contactlab.maximal import _cone_kernels as K
from contactlab.maximal import _pile_kernels as P
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS
from contactlab.maximal.compiled_step import (
    FreeBodyStep,
    model_found,
    narrowed_scope,
    step_in_scope,
)
from contactlab.models.box_rows import ImpulseMemory
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.maximal.formulation import MaximalFormulation
    from contactlab.models.base import ContactModel
    from contactlab.simulator import Simulator

Array = np.ndarray

#: the general ``nsgs`` sweep cap (:class:`solvers.backends.fc_nsgs.NSGSBackend`)
SWEEP_CAP = 10000
#: the general backends' iteration caps (:mod:`solvers.backends.fc_apgd`, ``fc_admm``)
ITERATION_CAPS = {"nsgs": SWEEP_CAP, "apgd": 20000, "admm": 5000}
#: the solver settings each method's kernel takes (the general backend's own)
SETTINGS = {"nsgs": ("direct",), "apgd": (), "admm": ("rho",)}


def model_law(model: Any, collide: Any) -> tuple[int, bool] | str:
    """``(law, direct)`` of a model this step takes, else why it does not (a string)."""
    from contactlab.collision import collide as default_collide
    from contactlab.models.anitescu_hart import AnitescuHart
    from contactlab.models.coulomb import Coulomb
    from contactlab.models.spin import spin_active

    if type(model) is Coulomb:
        law = K.COULOMB
    elif type(model) is AnitescuHart and model.route[0].startswith("fc_"):
        law = K.CCP
    else:
        return "model"
    opts = model.options
    # the model option islands keeps the general route's solve_islands: the batched runner
    # steps copies on it (a merged scene with its own collision), and a copy equals its
    # separate run with that option bit for bit only if both take the same route
    if opts["cone"] != "soc" or spin_active(opts) or opts["islands"]:
        return "model options"
    if model.solver not in SETTINGS:
        return f"solver {model.solver!r} (the compiled cone step takes nsgs, apgd, admm)"
    settings = dict(opts["solver_settings"] or {})
    unknown = sorted(set(settings) - set(SETTINGS[model.solver]))
    if unknown:
        return f"solver settings {unknown} of {model.solver} (the compiled step's: " + (
            f"{', '.join(SETTINGS[model.solver]) or 'none'})"
        )
    rho = settings.get("rho", 1.0)
    if not isinstance(rho, (int, float)) or isinstance(rho, bool) or not rho > 0.0:
        return "solver setting rho not a positive number (the general backend reports it)"
    direct = bool(settings.pop("direct", False))
    if collide is not default_collide:
        return "collision function"
    return law, direct


def cone_settings(model: Any, coulomb: bool) -> tuple[str, str, float]:
    """What the exact-cone steps (free bodies and reduced) read from a model they took: the
    general route's memory key of the warm start (:func:`contactlab.models.fc_route.solve_as_fc`;
    ``coulomb``: Coulomb's law, else the CCP), the solver's name and ADMM's initial penalty
    (``0``: the general backend's default)."""
    key = f"fc:{'coulomb' if coulomb else 'ccp'}:soc"
    settings = dict(model.options["solver_settings"] or {})
    return key, str(getattr(model, "solver", "nsgs")), float(settings.get("rho", 0.0))


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the cone step does not apply to this set-up (empty when it does)."""
    return narrowed_scope(formulation, model, collide, model_law)


def cone_step_for(
    formulation: MaximalFormulation, model: ContactModel, collide: Any
) -> ConeContactStep | None:
    """The cone step of this set-up, or ``None`` when it is outside its scope."""
    return step_in_scope(ConeContactStep, scope, formulation, model, collide)


class ConeContactStep(FreeBodyStep):
    """The step of free bodies with the exact cone by ``nsgs``, ``apgd`` or ``admm`` (module
    docstring)."""

    kernels = P

    def __init__(self, formulation: MaximalFormulation, model: ContactModel, collide: Any) -> None:
        super().__init__(formulation, model, collide)
        self.law, self.direct = model_found(model_law(model, collide))
        self.key, solver, self.rho = cone_settings(model, self.law == K.COULOMB)
        #: the iterative method: ``-1`` block NSGS, else ``F.APGD`` or ``F.ADMM``
        self.method = {"apgd": F.APGD, "admm": F.ADMM}.get(solver, -1)
        #: solve the step island by island, each with its own stopping test and cap
        #: (``False``: the whole step's contacts as one problem, the general path's)
        self.islands = True

    def _carries(self, memory: Any) -> bool:
        return isinstance(memory, ImpulseMemory) and memory.ids is not None

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        h = sim.dt
        contacts, track, carry, old, start, collided = self._begin(state)
        model: Any = self.model
        cap = model.options["max_iter"]
        if self.method in (F.APGD, F.ADMM):
            assembled = time.perf_counter()
            solution = F.cone_fom_step(
                self._mdiag, state.E, np.ascontiguousarray(state.phi, dtype=float),
                self._gravity, h, MIDPOINT_ITERATIONS, contacts.body_a, contacts.body_b,
                contacts.point, contacts.normal, contacts.distance, contacts.mu,
                self._feedback.beta(h), self._feedback.max_correction, carry, *old,
                np.ascontiguousarray(track.ids, dtype=np.int64),
                np.ascontiguousarray(track.origin, dtype=np.int64),
                self.law, self.method, model.tol,
                ITERATION_CAPS[model.solver] if cap is None else int(cap), self.rho,
                sim.slip_threshold, self.islands,
            )  # fmt: skip
            if int(solution[4][F.I_STATUS]) == F.DECOUPLED:
                return None
            solved = time.perf_counter()
            return self._finish(
                sim, state, index, contacts, track, solution, (start, collided, assembled, solved)
            )
        assembled = time.perf_counter()
        solution = K.cone_step(
            self._mdiag, state.E, np.ascontiguousarray(state.phi, dtype=float), self._gravity,
            h, MIDPOINT_ITERATIONS, contacts.body_a, contacts.body_b, contacts.point,
            contacts.normal, contacts.distance, contacts.mu, self._feedback.beta(h),
            self._feedback.max_correction, carry, *old,
            np.ascontiguousarray(track.ids, dtype=np.int64),
            np.ascontiguousarray(track.origin, dtype=np.int64),
            self.law, self.direct, model.tol, SWEEP_CAP if cap is None else int(cap),
            sim.slip_threshold, self.islands,
        )  # fmt: skip
        if int(solution[4][K.I_STATUS]) == K.DECOUPLED:
            return None  # the general path's closed forms and messages
        solved = time.perf_counter()
        return self._finish(
            sim, state, index, contacts, track, solution, (start, collided, assembled, solved)
        )

    def _finish(
        self,
        sim: Simulator,
        state: State,
        index: int,
        contacts: Any,
        track: Any,
        solution: tuple[Array, Array, Array, Array, Array],
        clock: tuple[float, float, float, float],
    ) -> tuple[State, StepRecord]:
        """:meth:`_end`, then the number of islands and the iterations weighted by rows in
        :attr:`last_times` (``islands``, ``row_sweeps``)."""
        out = self._end(sim, state, index, contacts, track, solution, clock)
        info = solution[4]
        self.last_times["islands"] = float(info[K.I_ISLANDS])
        self.last_times["row_sweeps"] = float(info[K.I_WORK])
        return out


__all__ = [
    "ITERATION_CAPS",
    "SETTINGS",
    "SWEEP_CAP",
    "ConeContactStep",
    "cone_settings",
    "cone_step_for",
    "model_law",
    "scope",
]
