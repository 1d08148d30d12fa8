"""The compiled Stewart--Trinkle step of the reduced formulation by Lemke's method.

Stewart--Trinkle friction (:mod:`contactlab.models.stewart_trinkle`) solved by ``lemke``
on a robot goes, through the general layers, from the formulation's ``scipy.sparse`` rows
to the pyramid rows, the Delassus matrix by the factorised ``M``, the LCP with the
sliding-speed slack (``scipy.sparse.bmat``) and the dense tableau of
:class:`solvers.backends.lemke.LemkeBackend`.  :class:`LemkeReducedStep` takes the same
step in one compiled call after the contacts
(:func:`contactlab.reduced._lemke_step_kernels.lemke_full_step`): the box-friction step's
prologue (kinematics, ``M_r`` and the free momentum, the tree factor, the rows
``[N; T; L]``), the model's rows ``[N; D; L]`` and its LCP over
``[lambda_N; beta; lambda_L; s]`` (the same matrix, in the same order), and Lemke's
method of :mod:`solvers.numerics.lemke_kernel` with the backend's rules and settings
(``pivot_tol``, ``zero_rtol``, ``restarts``, the pivot cap ``max_iter``).  Lemke's method
takes no warm start; as on the general path, the state carries only the contacts'
identities.

The answer is judged as the solver layer judges the general route's
(:func:`solvers.verdict.verdict`): a claimed solution whose residual exceeds
``1e3 max(tol, 1e-9)`` is ``optimal_inaccurate``, beyond that times ``max(1, |q|)`` a
failed step; a walk that ends on a secondary ray fails the step with the general route's
message; one stopped at the pivot cap reports ``max_iterations``.

It applies when the formulation and the scene are in the compiled steps' scope
(:func:`contactlab.reduced.compiled_step.formulation_scope`) and the model is
``stewart-trinkle`` on its LCP route by ``lemke`` (settings among ``pivot_tol``,
``zero_rtol`` and ``restarts``, :func:`contactlab.maximal.lemke_step.model_settings`).  A
step it cannot take (a singular ``M``, an LCP beyond the backend's dense limit, joint
torques of the wrong shape) returns ``None`` and the simulator takes the general path.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from contactlab.contact import identity
from contactlab.maximal.compiled_step import step_in_scope
from contactlab.maximal.lemke_step import MAX_DENSE, LemkeSetup, model_settings
from contactlab.memory import ModelMemory
from contactlab.models.stewart_trinkle import StewartTrinkleReport
from contactlab.reduced import _lemke_step_kernels as K
from contactlab.reduced._compiled_route import RouteStep
from contactlab.reduced.compiled_step import formulation_scope
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.models.base import ContactModel
    from contactlab.reduced.formulation import ReducedFormulation
    from contactlab.simulator import Simulator

#: the solver status of each kernel code that yields a state
STATUSES = {K.OPTIMAL: "optimal", K.MAX_ITERATIONS: "max_iterations"}


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the reduced Lemke step does not apply to this set-up (empty when it does)."""
    found = model_settings(model, collide)
    return formulation_scope(formulation, found if isinstance(found, str) else "")


def lemke_step_for(
    formulation: ReducedFormulation, model: ContactModel, collide: Any
) -> LemkeReducedStep | None:
    """The reduced Lemke step of this set-up, or ``None`` when it is outside its scope."""
    return step_in_scope(LemkeReducedStep, scope, formulation, model, collide)


class LemkeReducedStep(LemkeSetup, RouteStep):
    """The Stewart--Trinkle step of a reduced formulation by ``lemke`` (module docstring);
    its :attr:`last_solution` is ``[lambda_N; beta; lambda_L; s]``."""

    def __init__(self, formulation: ReducedFormulation, model: ContactModel, collide: Any) -> None:
        super().__init__(formulation, model)
        self._read_model(formulation, model, collide)

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        start = time.perf_counter()
        contacts, track = self._contacts(state)
        collided = time.perf_counter()
        nc = len(contacts)
        ml = self._limits[0].size
        if nc * (self.directions + 2) + ml > MAX_DENSE:
            return None  # the general backend's limit and message
        tau = self._joint_torques(state)
        if tau is None:
            return None  # the general path's broadcasting and messages
        model: Any = self.model
        cap = model.options["max_iter"]
        s = self.settings
        assembled = time.perf_counter()
        q_new, v_new, v, E, phi, z, _, info, x = K.lemke_full_step(
            *self._kernel_head(state, sim.dt, tau, contacts), *self._limits,
            self._dirs, s["zero_rtol"], s["pivot_tol"], -1 if cap is None else int(cap),
            s["restarts"], sim.slip_threshold,
        )  # fmt: skip
        solved = time.perf_counter()
        f = info.tolist()
        code = int(f[K.I_STATUS])
        if code in (K.NOT_SPD, K.DECOUPLED):
            return None  # the general path's closed forms and messages
        inaccurate = self._read_answer(sim, state, index, info, K, x)
        status = "optimal_inaccurate" if inaccurate else STATUSES[code]
        out = (q_new, v_new, v, E, phi)
        self._check_finite(sim, state, index, f, K, status, out)
        # as on the general path, no impulses are kept (Lemke takes no warm start)
        carried = {identity.CACHE_KEY: track}
        cache = state.cache
        cache = cache.merged(carried) if isinstance(cache, ModelMemory) else {**cache, **carried}
        times = (start, collided, assembled, solved)
        new_state, record = self._record(
            sim, state, index, f, K, status, out, z, cache, contacts, track, times
        )
        # the model's report: the LCP's slack, the sliding speed per contact
        sliding = x[x.size - nc :].copy()
        record._solution = replace(record.solution, report=StewartTrinkleReport(sliding))
        return new_state, record


__all__ = ["LemkeReducedStep", "lemke_step_for", "scope"]
