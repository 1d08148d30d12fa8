"""The compiled contact step of the reduced formulation with the exact friction cone.

The exact Coulomb law (model ``coulomb``, De Saxcé's problem) and Anitescu--Hart with
the exact cone (``anitescu-hart``, ``cone="soc"``) on a robot go, through the general
layers, from the formulation's ``scipy.sparse`` rows to the local frictional-contact
problem of :mod:`contactlab.models.fc_route` (``W = C M^-1 C^T`` by the factorised
``M``) and the general backend.  :class:`ConeContactStep` takes the same step in one
compiled call after the contacts (:func:`contactlab.reduced._cone_step_kernels.cone_full_step`):
the kinematics, ``M_r`` and the free momentum, the rows ``[N; T; L]``, the tree factor
``M = L^T L`` for ``M^-1 C^T``, ``W`` and ``q`` in the general route's local order (each
contact's three rows from the lowest point up, then the joint limits' rows), the general
route's warm start (the impulses recorded under ``fc:coulomb:soc`` or ``fc:ccp:soc``,
carried over by contact identity, the limit impulses when the rows are as many), the
general backend's own solver on it (:func:`solvers.numerics.fc_kernels.nsgs`,
:func:`solvers.numerics.fc_methods.apgd` or :func:`solvers.numerics.fc_methods.admm`:
the same iterations, stopping test and caps), the velocity and the position update.
The contacts and their identities are those of the box-friction compiled step
(:class:`~contactlab.reduced.compiled_step.CompiledContactStep`).  The two paths pose
the same problem and solve it by the same method from the same start: their solutions
agree to the solver's tolerance, and the two share their warm starts.

It applies when the formulation and the scene are in the compiled step's scope (a tree of
fixed, revolute, prismatic and free joints, joint limits as the only constraints, no
force elements or restitution, planes as the only static shapes, the linearly implicit
step) and the model is ``coulomb`` or ``anitescu-hart`` with ``cone="soc"``, without
torsion or rolling and without islands, solved by ``nsgs`` (setting ``direct`` only),
``apgd`` (no settings) or ``admm`` (setting ``rho`` only).  A step it cannot take (a
decoupled row, a singular ``M``, joint torques of the wrong shape) returns ``None`` and
the simulator takes the general path for that step.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.maximal.compiled_step import model_found, step_in_scope
from contactlab.maximal.cone_step import ITERATION_CAPS, cone_settings, model_law
from contactlab.metrics import USABLE_STATUSES
from contactlab.models import compiled_box_step as B
from contactlab.models.box_rows import ImpulseMemory
from contactlab.reduced import _cone_step_kernels as K
from contactlab.reduced._compiled_route import RouteStep
from contactlab.reduced.compiled_step import formulation_scope
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.models.base import ContactModel
    from contactlab.reduced.formulation import ReducedFormulation
    from contactlab.simulator import Simulator

Array = np.ndarray

#: the kernel's method of each solver
METHODS = {"nsgs": K.NSGS, "apgd": K.APGD, "admm": K.ADMM}
#: the solver status of each kernel code (a numerical error raises the simulator's failure)
STATUSES = {
    K.OPTIMAL: "optimal",
    K.MAX_ITERATIONS: "max_iterations",
    K.STALLED: "stalled",
    K.NUMERICAL_ERROR: "numerical_error",
}


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the reduced exact-cone step does not apply to this set-up (empty when it does)."""
    found = model_law(model, collide)
    return formulation_scope(formulation, "" if not isinstance(found, str) else found)


def cone_step_for(
    formulation: ReducedFormulation, model: ContactModel, collide: Any
) -> ConeContactStep | None:
    """The reduced exact-cone step of this set-up, or ``None`` when it is outside its scope."""
    return step_in_scope(ConeContactStep, scope, formulation, model, collide)


class ConeContactStep(RouteStep):
    """The step of a reduced formulation with the exact cone (module docstring)."""

    def __init__(self, formulation: ReducedFormulation, model: ContactModel, collide: Any) -> None:
        super().__init__(formulation, model)
        law, direct = model_found(model_law(model, collide))
        self.law = K.COULOMB if law == 1 else K.CCP
        self.direct = bool(direct)
        #: the general route's memory key of the warm start, the solver, ADMM's initial
        #: penalty (``0``: the general backend's default)
        self.key, self.solver, self.rho = cone_settings(model, self.law == K.COULOMB)
        self.method = METHODS[self.solver]
        self._no_z = np.zeros(0)

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        start = time.perf_counter()
        contacts, track = self._contacts(state)
        collided = time.perf_counter()
        memory = state.cache.get(self.key)
        nc = len(contacts)
        ml = self._limits[0].size
        old_z, old_l, same_l = self._no_z, 0, False
        carry = False
        old = self._no_old
        if isinstance(memory, ImpulseMemory):
            old_z = np.ascontiguousarray(memory.z, dtype=float)
            part = memory.slices.get("L")
            if part is not None:
                old_l, same_l = int(part.start), part.stop - part.start == ml
            if nc > 0 and memory.ids is not None:
                carry = True
                old = (
                    np.ascontiguousarray(memory.ids, dtype=np.int64),
                    np.ascontiguousarray(memory.normal_impulse, dtype=float),
                    np.ascontiguousarray(memory.friction, dtype=float),
                )
        model: Any = self.model
        cap = model.options["max_iter"]
        tau = self._joint_torques(state)
        if tau is None:
            return None  # the general path's broadcasting and messages
        assembled = time.perf_counter()
        q_new, v_new, v, E, phi, z, friction, info = K.cone_full_step(
            *self._kernel_head(state, sim.dt, tau, contacts), carry, *old,
            np.ascontiguousarray(track.ids, dtype=np.int64),
            np.ascontiguousarray(track.origin, dtype=np.int64),
            *self._limits, old_z, old_l, same_l, self.law, self.method, self.direct, self.rho,
            model.tol, ITERATION_CAPS[self.solver] if cap is None else int(cap),
            sim.slip_threshold,
        )  # fmt: skip
        solved = time.perf_counter()
        f = info.tolist()
        code = int(f[K.I_STATUS])
        if code in (K.NOT_SPD, K.DECOUPLED):
            return None  # the general path's closed forms and messages
        status = STATUSES[code]
        if status not in USABLE_STATUSES:
            raise sim._failure(index, state.t, f"solver status {status!r}")
        out = (q_new, v_new, v, E, phi)
        self._check_finite(sim, state, index, f, K, status, out)
        cache = B.carried_cache(state, track, z, friction, self._slices(nc), self.key)
        times = (start, collided, assembled, solved)
        return self._record(sim, state, index, f, K, status, out, z, cache, contacts, track, times)


__all__ = ["METHODS", "ConeContactStep", "cone_step_for", "scope"]
