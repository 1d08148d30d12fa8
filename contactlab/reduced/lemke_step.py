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
(:func:`contactlab.reduced.cone_step.formulation_scope`) and the model is
``stewart-trinkle`` on its LCP route by ``lemke`` (settings among ``pivot_tol``,
``zero_rtol`` and ``restarts``, :func:`contactlab.maximal.lemke_step.model_settings`).  A
step it cannot take (a singular ``M``, an LCP beyond the backend's dense limit, joint
torques of the wrong shape) returns ``None`` and the simulator takes the general path.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.contact import identity
from contactlab.contact.friction_cone import pyramid_directions
from contactlab.maximal.lemke_step import ACCURACY, IMPLAUSIBLE_FACTOR, MAX_DENSE, model_settings
from contactlab.memory import ModelMemory
from contactlab.models import compiled_box_step as B
from contactlab.models.stewart_trinkle import StewartTrinkleReport
from contactlab.reduced import _lemke_step_kernels as K
from contactlab.reduced.compiled_step import CompiledContactStep
from contactlab.reduced.cone_step import formulation_scope
from contactlab.runs import StepRecord
from contactlab.scene import State
from solvers.numerics import lemke_kernel as LK

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
    if collide is None or scope(formulation, model, collide):
        return None
    return LemkeReducedStep(formulation, model, collide)


class LemkeReducedStep(CompiledContactStep):
    """The Stewart--Trinkle step of a reduced formulation by ``lemke`` (module docstring)."""

    def __init__(self, formulation: ReducedFormulation, model: ContactModel, collide: Any) -> None:
        found = model_settings(model, collide)
        assert not isinstance(found, str)
        super().__init__(formulation, model)
        self.settings = found
        k = model.options["directions"] or formulation.scene.contact.directions
        self.directions = int(k)
        self._dirs = np.ascontiguousarray(pyramid_directions(self.directions))
        #: the last step's message of Lemke's method (the general backend's wording) and
        #: its LCP's solution ``[lambda_N; beta; lambda_L; s]`` (NaN on a ray)
        self.last_message = ""
        self.last_solution = np.zeros(0)

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        h = sim.dt
        start = time.perf_counter()
        previous = state.cache.get(identity.CACHE_KEY)
        contacts, track = self._tracked(state.E, previous)
        if track is None:
            track = identity.identify(contacts, previous)
        collided = time.perf_counter()
        nc = len(contacts)
        ml = self._limits[0].size
        if nc * (self.directions + 2) + ml > MAX_DENSE:
            return None  # the general backend's limit and message
        if self._torque is None:
            tau = self._no_tau
        else:
            q, qdot = np.asarray(state.q, dtype=float), np.asarray(state.qdot, dtype=float)
            tau = np.asarray(self._torque(state.t, q, qdot), dtype=float)
            if tau.shape != (self._nq,):
                return None  # the general path's broadcasting and messages
            tau = np.ascontiguousarray(tau)
        model: Any = self.model
        cap = model.options["max_iter"]
        s = self.settings
        assembled = time.perf_counter()
        q_new, v_new, v, E, phi, z, friction, info, x = K.lemke_full_step(
            *self._step_head, np.ascontiguousarray(state.q, dtype=float),
            np.ascontiguousarray(state.qdot, dtype=float), h, tau, *self._bodies,
            contacts.body_a, contacts.body_b, contacts.point, contacts.normal, contacts.distance,
            contacts.mu, self._feedback.beta(h), self._feedback.max_correction, *self._limits,
            self._dirs, s["zero_rtol"], s["pivot_tol"], -1 if cap is None else int(cap),
            s["restarts"], sim.slip_threshold,
        )  # fmt: skip
        solved = time.perf_counter()
        f = info.tolist()
        code = int(f[K.I_STATUS])
        if code in (K.NOT_SPD, K.DECOUPLED):
            return None  # the general path's closed forms and messages
        self.last_message = LK.message(info[K.I_LEMKE :])
        self.last_solution = x
        if code == K.RAY:
            raise sim._failure(
                index, state.t, f"solver status 'ray_termination' ({self.last_message})"
            )
        status = STATUSES[code]
        residual = max(f[K.I_PRIMAL], f[K.I_DUAL], f[K.I_COMP])
        limit = IMPLAUSIBLE_FACTOR * max(float(model.tol), ACCURACY)
        if code == K.OPTIMAL and not (
            np.isfinite(residual) and residual <= limit * max(1.0, f[K.I_QSCALE])
        ):
            raise sim._failure(index, state.t, "solver status 'numerical_error'")
        if code == K.OPTIMAL and residual > limit:
            status = "optimal_inaccurate"
        if not f[K.I_FINITE]:
            if not np.all(np.isfinite(v)):
                raise sim._failure(index, state.t, f"non-finite velocities (status {status!r})")
            State(state.t + h, E, phi, q_new, v_new).check_finite()
        # as on the general path, no impulses are kept (Lemke takes no warm start)
        carried = {identity.CACHE_KEY: track}
        cache = state.cache
        cache = cache.merged(carried) if isinstance(cache, ModelMemory) else {**cache, **carried}
        new_state = State(state.t + h, E, phi, q_new, v_new, cache)
        row = B.step_row(
            f, K, index, float(new_state.t), h,
            (f[K.I_KINETIC], f[K.I_GRAVITY] + f[K.I_SPRING]),
            f[K.I_MOMENTUM : K.I_MOMENTUM + 6], f[K.I_LIMIT], status, nc,
            (start, collided, assembled, solved),
        )  # fmt: skip
        record = B.record_step(sim, self.formulation, state, contacts, track, index, row, v, z)
        # the model's report: the LCP's slack, the sliding speed per contact
        sliding = x[x.size - nc :].copy()
        record._solution = replace(record.solution, report=StewartTrinkleReport(sliding))
        return new_state, record


__all__ = ["LemkeReducedStep", "lemke_step_for", "scope"]
