"""The compiled contact step of free bodies with the exact friction cone (``nsgs``).

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

It applies when the scene and the formulation are in the box-friction compiled step's
scope (:func:`contactlab.maximal.compiled_step.scope`: free bodies, the maximal
formulation's default step, the scene's own collision) and the model is ``coulomb`` with
``cone="soc"`` or ``anitescu-hart`` with ``cone="soc"``, without torsion or rolling,
solved by ``nsgs`` without ``omega`` and without islands.  A step the kernel cannot take
(a decoupled row) goes to the general path.  A step that reaches the sweep cap keeps the
best iterate met and reports ``max_iterations`` with its residual (under ``strict`` the
simulator's failure, as every route).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.maximal import _cone_kernels as K
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS
from contactlab.models import compiled_box_step as B
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
    if opts["cone"] != "soc" or spin_active(opts) or opts["islands"] or model.solver != "nsgs":
        return "model options or solver"
    settings = dict(opts["solver_settings"] or {})
    direct = bool(settings.pop("direct", False))
    if settings:
        return "solver settings"
    if collide is not default_collide:
        return "collision function"
    return law, direct


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the cone step does not apply to this set-up (empty when it does)."""
    from contactlab.maximal.compiled_step import scope as box_scope

    # the box-friction step's scope ends with its model test: "model" for any other model
    why = box_scope(formulation, model, collide)
    if why != "model":
        return why or "model"
    found = model_law(model, collide)
    return found if isinstance(found, str) else ""


def cone_step_for(
    formulation: MaximalFormulation, model: ContactModel, collide: Any
) -> ConeContactStep | None:
    """The cone step of this set-up, or ``None`` when it is outside its scope."""
    if collide is None or scope(formulation, model, collide):
        return None
    return ConeContactStep(formulation, model, collide)


class ConeContactStep:
    """The step of free bodies with the exact cone by ``nsgs`` (module docstring)."""

    def __init__(self, formulation: MaximalFormulation, model: ContactModel, collide: Any) -> None:
        from contactlab.contact_pairs import excluded_pairs

        found = model_law(model, collide)
        assert not isinstance(found, str)
        self.law, self.direct = found
        self.formulation = formulation
        self.model = model
        self.collide = collide
        scene = formulation.scene
        self.scene = scene
        self.key = f"fc:{'coulomb' if self.law == K.COULOMB else 'ccp'}:soc"
        self._excluded = excluded_pairs(scene)
        self._mdiag = np.ascontiguousarray(formulation.mass_diagonal, dtype=float)
        self._gravity = np.ascontiguousarray(scene.gravity, dtype=float)
        self._feedback = B.Feedback(scene.contact)
        self._no_ids = np.zeros(0, dtype=np.int64)
        self._no_normal = np.zeros(0)
        self._no_friction = np.zeros((0, 3))
        self._slices = B.RowBlocks()
        #: per step: seconds in the collision, in the compiled step, and in all
        #: (read by benchmarks; the last step only)
        self.last_times: dict[str, float] = {}

    def contacts(self, E: Array) -> ContactSet:
        """The scene's contacts at body transforms ``E``, in the kernel's array layouts."""
        from contactlab.contact_pairs import drop_jointed

        return B.kernel_contacts(
            drop_jointed(self.collide(self.scene, E), self.scene, self._excluded)
        )

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        h = sim.dt
        start = time.perf_counter()
        contacts = self.contacts(state.E)
        collided = time.perf_counter()
        track = identity.identify(contacts, state.cache.get(identity.CACHE_KEY))
        memory: Any = state.cache.get(self.key)
        nc = len(contacts)
        carry = nc > 0 and isinstance(memory, ImpulseMemory) and memory.ids is not None
        if carry:
            ids = np.ascontiguousarray(memory.ids, dtype=np.int64)
            old = (
                ids,
                np.argsort(ids, kind="stable"),
                np.ascontiguousarray(memory.normal_impulse, dtype=np.float64),
                np.ascontiguousarray(memory.friction, dtype=np.float64),
            )
        else:
            old = (self._no_ids, self._no_ids, self._no_normal, self._no_friction)
        model: Any = self.model
        cap = model.options["max_iter"]
        assembled = time.perf_counter()
        phi, E, z, friction, info = K.cone_step(
            self._mdiag, state.E, np.ascontiguousarray(state.phi, dtype=float), self._gravity,
            h, MIDPOINT_ITERATIONS, contacts.body_a, contacts.body_b, contacts.point,
            contacts.normal, contacts.distance, contacts.mu, self._feedback.beta(h),
            self._feedback.max_correction, carry, *old,
            np.ascontiguousarray(track.ids, dtype=np.int64),
            np.ascontiguousarray(track.origin, dtype=np.int64),
            self.law, self.direct, model.tol, SWEEP_CAP if cap is None else int(cap),
            sim.slip_threshold,
        )  # fmt: skip
        code = int(info[K.I_STATUS])
        if code == K.DECOUPLED:
            return None  # the general path's closed forms and messages
        solved = time.perf_counter()
        status = B.usable_status(sim, index, state.t, code, K)
        if not np.all(np.isfinite(phi)):
            raise sim._failure(index, state.t, f"non-finite velocities (status {status!r})")
        slices = self._slices(nc)
        record_z = ImpulseMemory(
            z, slices, track.ids if nc else None, z[:nc].copy() if nc else None,
            friction if nc else None,
        )  # fmt: skip
        cache = {**state.cache, identity.CACHE_KEY: track, self.key: record_z}
        new_state = State(state.t + h, E, phi, cache=cache)
        new_state.check_finite()
        row = B.step_row(
            info, K, index, float(new_state.t), h,
            (float(info[K.I_KINETIC]), float(info[K.I_POTENTIAL])),
            [*info[K.I_LINEAR : K.I_LINEAR + 3], *info[K.I_ANGULAR : K.I_ANGULAR + 3]],
            0.0, status, nc, (start, collided, assembled, solved),
        )  # fmt: skip
        self.last_times = {
            "collision": collided - start,
            "kernel": solved - assembled,
            "step": row["step_time_s"],
        }
        record = B.record_step(
            sim, self.formulation, state, contacts, track, index, row, phi.reshape(-1), z
        )
        return new_state, record


__all__ = ["SWEEP_CAP", "ConeContactStep", "cone_step_for", "model_law", "scope"]
