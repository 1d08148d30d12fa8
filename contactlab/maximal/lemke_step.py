"""The compiled Stewart--Trinkle step of free bodies by Lemke's method.

Stewart--Trinkle friction (:mod:`contactlab.models.stewart_trinkle`) solved by ``lemke``
goes, through the general layers, from ``scipy.sparse`` rows to the pyramid rows, the
Delassus matrix, the LCP with the sliding-speed slack (``scipy.sparse.bmat``) and the
dense tableau of :class:`solvers.backends.lemke.LemkeBackend`.
:class:`LemkeContactStep` takes the same step in one compiled call
(:func:`contactlab.maximal._lemke_kernels.lemke_step`): the collision, the contact rows
and the integration of the box-friction compiled step
(:mod:`contactlab.maximal.compiled_step`), the same LCP formed densely from the contact
rows (the blocks of ``C M^-1 C^T`` of the contacts that share a body), and Lemke's
method of :mod:`solvers.numerics.lemke_kernel`, with the backend's rules (lexicographic
ratio test with Harris's bound and stability filter, clamps, the end at ``z0 = 0``,
re-solves of the tableau, the final basic values re-solved from the data, restarts
after a ray) and settings (``pivot_tol``, ``zero_rtol``, ``restarts``, the pivot cap
``max_iter``).  Lemke's method takes no warm start, so none is carried.

The answer is judged as the solver layer judges the general route's
(:func:`solvers.verdict.verdict` on the residuals of
:func:`solvers.residuals.lcp_residuals`): a claimed solution whose residual exceeds
``1e3 max(tol, 1e-9)`` is ``optimal_inaccurate``, beyond that times ``max(1, |q|)`` a
failed step.  A walk that ends on a secondary ray fails the step with the general route's
message; one stopped at the pivot cap reports ``max_iterations`` with its residual
(under ``strict`` the simulator's failure, as every route).

It applies when the scene and the formulation are in the box-friction compiled step's
scope (:func:`contactlab.maximal.compiled_step.scope`: free bodies, the maximal
formulation's default step, the scene's own collision) and the model is
``stewart-trinkle`` on its LCP route solved by ``lemke`` (settings among ``pivot_tol``,
``zero_rtol`` and ``restarts``).  A step whose LCP is beyond the backend's dense limit
goes to the general path, which says so.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.contact.friction_cone import pyramid_directions
from contactlab.maximal import _lemke_kernels as K
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS
from contactlab.maximal.compiled_step import (
    FreeBodyStep,
    model_found,
    narrowed_scope,
    step_in_scope,
)
from contactlab.models.stewart_trinkle import StewartTrinkleReport
from contactlab.runs import StepRecord
from contactlab.scene import State
from solvers.numerics import lemke_kernel as LK

if TYPE_CHECKING:
    from contactlab.maximal.formulation import MaximalFormulation
    from contactlab.models.base import ContactModel
    from contactlab.simulator import Simulator

#: the general backend's largest dense problem (``solvers.backends.lemke._MAX_DENSE``)
MAX_DENSE = 3000
#: the backend's declared accuracy and the verdict's factor (:mod:`solvers.verdict`)
ACCURACY, IMPLAUSIBLE_FACTOR = LK.ACCURACY, 1e3
#: the settings of ``lemke`` this step takes, with the backend's defaults
SETTINGS = {"pivot_tol": 1e-12, "zero_rtol": 1e-11, "restarts": True}


def model_settings(model: Any, collide: Any) -> dict[str, Any] | str:
    """The Lemke settings of a model this step takes, else why it does not (a string)."""
    from contactlab.collision import collide as default_collide
    from contactlab.models.stewart_trinkle import StewartTrinkle

    if type(model) is not StewartTrinkle or model.route != ("pivot_lcp",):
        return "model"
    if model.solver != "lemke":
        return "solver"
    given = dict(model.options["solver_settings"] or {})
    if set(given) - set(SETTINGS):
        return "solver settings"
    settings = {**SETTINGS, **given}
    try:
        pivot_tol = float(settings["pivot_tol"])
        zero_rtol = float(settings["zero_rtol"])
    except (TypeError, ValueError):
        return "solver settings"
    if not (np.isfinite(zero_rtol) and 0.0 <= zero_rtol < 1e-3 and np.isfinite(pivot_tol)):
        return "solver settings (the general path names the bad value)"
    if collide is not default_collide:
        return "collision function"
    return {"pivot_tol": pivot_tol, "zero_rtol": zero_rtol, "restarts": bool(settings["restarts"])}


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the Lemke step does not apply to this set-up (empty when it does)."""
    return narrowed_scope(formulation, model, collide, model_settings)


def lemke_step_for(
    formulation: MaximalFormulation, model: ContactModel, collide: Any
) -> LemkeContactStep | None:
    """The Lemke step of this set-up, or ``None`` when it is outside its scope."""
    return step_in_scope(LemkeContactStep, scope, formulation, model, collide)


class LemkeSetup:
    """What the Stewart--Trinkle steps by Lemke's method share, on free bodies
    (:class:`LemkeContactStep`) and in reduced coordinates
    (:class:`contactlab.reduced.lemke_step.LemkeReducedStep`): the method's settings and the
    friction pyramid read from the model, and the reading of a step's answer."""

    #: the model's settings of Lemke's method (:func:`model_settings`)
    settings: dict[str, Any]
    #: the number of the friction pyramid's directions, and the directions
    directions: int
    _dirs: np.ndarray
    #: the last step's message of Lemke's method (the general backend's wording) and its
    #: LCP's solution (the model's unknowns, NaN on a ray)
    last_message: str
    last_solution: np.ndarray

    def _read_model(self, formulation: Any, model: Any, collide: Any) -> None:
        """The settings and the pyramid of a model the step's scope took."""
        self.settings = model_found(model_settings(model, collide))
        k = model.options["directions"] or formulation.scene.contact.directions
        self.directions = int(k)
        self._dirs = np.ascontiguousarray(pyramid_directions(self.directions))
        self.last_message = ""
        self.last_solution = np.zeros(0)

    def _read_answer(
        self, sim: Simulator, state: State, index: int, info: np.ndarray, kernels: Any,
        x: np.ndarray,
    ) -> bool:  # fmt: skip
        """The kernel's answer (``info`` in the layout of ``kernels``, the LCP's solution
        ``x``) kept as the last message and solution; the simulator's failure on a ray or on
        an optimal status whose residual is implausible (not finite, or above
        :data:`IMPLAUSIBLE_FACTOR` times the tolerance, at least :data:`ACCURACY`, scaled
        by the problem's size).  Returns whether an optimal answer is inaccurate (its residual
        above that limit unscaled)."""
        self.last_message = LK.message(info[kernels.I_LEMKE :])
        self.last_solution = x
        code = int(info[kernels.I_STATUS])
        if code == kernels.RAY:
            raise sim._failure(
                index, state.t, f"solver status 'ray_termination' ({self.last_message})"
            )
        residual = float(max(info[kernels.I_PRIMAL], info[kernels.I_DUAL], info[kernels.I_COMP]))
        model: Any = getattr(self, "model")  # noqa: B009
        limit = IMPLAUSIBLE_FACTOR * max(float(model.tol), ACCURACY)
        if code == kernels.OPTIMAL and not (
            np.isfinite(residual) and residual <= limit * max(1.0, float(info[kernels.I_QSCALE]))
        ):
            raise sim._failure(index, state.t, "solver status 'numerical_error'")
        return code == kernels.OPTIMAL and residual > limit


class LemkeContactStep(LemkeSetup, FreeBodyStep):
    """The Stewart--Trinkle step of free bodies by ``lemke`` (module docstring); its
    :attr:`last_solution` is ``[lambda_N; beta; s]``."""

    kernels = K
    key = "stewart-trinkle:lemke"

    def __init__(self, formulation: MaximalFormulation, model: ContactModel, collide: Any) -> None:
        super().__init__(formulation, model, collide)
        self._read_model(formulation, model, collide)

    def _carries(self, memory: Any) -> bool:
        return False  # Lemke's method takes no warm start

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        h = sim.dt
        contacts, track, _, _, start, collided = self._begin(state)
        if len(contacts) * (self.directions + 2) > MAX_DENSE:
            return None  # the general backend's limit and message
        model: Any = self.model
        cap = model.options["max_iter"]
        s = self.settings
        assembled = time.perf_counter()
        phi, E, z, friction, info, x = K.lemke_step(
            self._mdiag, state.E, np.ascontiguousarray(state.phi, dtype=float), self._gravity,
            h, MIDPOINT_ITERATIONS, contacts.body_a, contacts.body_b, contacts.point,
            contacts.normal, contacts.distance, contacts.mu, self._feedback.beta(h),
            self._feedback.max_correction, self._dirs, s["zero_rtol"], s["pivot_tol"],
            -1 if cap is None else int(cap), s["restarts"], sim.slip_threshold,
        )  # fmt: skip
        solved = time.perf_counter()
        inaccurate = self._read_answer(sim, state, index, info, K, x)
        solution = (phi, E, z, friction, info)
        new_state, record = self._end(
            sim, state, index, contacts, track, solution, (start, collided, assembled, solved)
        )
        self.last_times["pivots"] = float(info[K.I_SWEEPS])
        self.last_times["size"] = float(info[K.I_SIZE])
        if inaccurate:
            record.metrics["status"] = "optimal_inaccurate"
            if sim.strict:
                raise sim._strict_failure(index, state.t, record.metrics, record.solution)
        # the model's report: the LCP's slack, the sliding speed per contact
        nc = len(contacts)
        sliding = x[nc * (self.directions + 1) :].copy()
        compiled: Any = record  # a CompiledRecord: its solution built now, with the report
        compiled._solution = replace(
            record.solution, report=StewartTrinkleReport(sliding_speed=sliding)
        )
        return new_state, record


__all__ = ["LemkeContactStep", "LemkeSetup", "lemke_step_for", "model_settings", "scope"]
