"""The compiled contact step of the maximal formulation for free rigid bodies.

A maximal-coordinate step with box friction solved by ``pgs`` poses and solves,
through the general layers, one LCP per step: the formulation assembles ``M``,
the free momentum and the contact rows as ``scipy.sparse`` matrices, the model
builds the Delassus matrix ``C M^-1 C^T`` and permutes it to the height order, the
solver layer classifies the rows and runs the sweeps over the CSR rows of ``W``.
On a pile of a few hundred cubes that costs several times MuJoCo's whole step.

:class:`CompiledContactStep` takes the same step with the scene's collision (its
compiled narrow phases), the contact identities (:mod:`contactlab.contact.identity`)
and one compiled call over flat arrays (:mod:`contactlab.maximal._pile_kernels`):
the free momentum, the contact rows, the 3x3 diagonal blocks of ``W``, the warm
start, projected Gauss--Seidel on the bodies' twists (each row update twelve
products to read its ``w`` and twelve to move the two twists; ``W`` is never
formed), the residuals and the contact metrics, ``E <- E exp(h [phi])`` and the state's
energies and momenta.  It
poses the same problem as the general path (the tests compare ``W`` and ``q``) and
solves it by the same method, in the same row order, with the same stopping rule
and tolerance, from the same warm start (the impulses recorded under the model's
cache key, carried over by contact identity): the solutions agree to the solver's
tolerance.  A step it cannot take (a decoupled row) returns ``None`` and the
simulator takes the general path for that step; the two share their warm starts.

Subspace finish.  On the steps of a landing, Gauss--Seidel stalls on the redundant
contacts of a pile (a singular ``W``) and stops at its sweep cap.  A step that its first
:data:`~contactlab.maximal._pile_kernels.PLAIN_SWEEPS` sweeps do not solve is finished
by projected Gauss--Seidel with subspace minimization (rounds of sweeps, each followed
by conjugate gradients on the rows off their bounds,
:func:`~contactlab.maximal._pile_kernels._pgs_sm`), with the same residual, stopping
rule, tolerance and cap (sweeps plus products with ``W``); a step that still does not
converge keeps the best iterate met and reports ``max_iterations`` with its residual.
Steps Gauss--Seidel solves in its first sweeps (a pile at rest) are unchanged.
``finish = False`` on the step object keeps plain Gauss--Seidel to the cap, the general
path's method.

Islands.  The step's contacts are solved island by island (the bodies joined by
contacts; the ground joins nothing), each island with its own stopping test (the same
residual, a maximum over rows, and tolerance) and its own sweep cap: every island within
the tolerance is the whole step within it.  The status is the worst island's, the
``iterations`` column the largest island's sweeps and products with ``W``; the number of
islands and their sweeps weighted by rows are in :attr:`~FreeBodyStep.last_times`
(``islands``, ``row_sweeps``).  This is the default, and the model option ``islands``
takes it too; ``islands = False`` on the step object solves the whole step as one problem
(with ``finish = False``, the general path's method).

Sleeping.  With the formulation's option ``sleep`` the step leaves out the contacts the
general layers leave out and holds the sleeping bodies (no free momentum, their poses
kept), then lets the islands at rest fall asleep (:mod:`contactlab.maximal.sleeping`).

It applies when, at set-up, the scene, formulation, model and solver are all in its
scope (:func:`compiled_step_for`): bodies without joints, constraints, attachments,
force elements or restitution; the maximal formulation's default step (linearly
implicit, midpoint gyroscopic term, no compliance); ``box-friction`` with the box
cone and the height order solved by ``pgs`` with its default settings; the scene's
own collision.  Otherwise nothing changes.  The records keep their columns; a
record's ``problem`` and ``solution`` are built on first access (the problem by the
formulation's own :meth:`~MaximalFormulation.assemble`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.errors import ConfigurationError
from contactlab.maximal import _pile_kernels as K
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS
from contactlab.models import compiled_box_step as B
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.maximal.formulation import MaximalFormulation
    from contactlab.models.base import ContactModel
    from contactlab.simulator import Simulator

Array = np.ndarray
Step = TypeVar("Step")
Found = TypeVar("Found")


def scene_bodies(formulation: Any) -> int:
    """The number of bodies of the formulation's scene."""
    return int(np.asarray(formulation.mass_diagonal).reshape(-1, 6).shape[0])


def scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the compiled step does not apply to this set-up (empty when it does)."""
    from contactlab.maximal import integrators as integ

    f = formulation
    if f.integrator != integ.DEFAULT or f.coriolis != "midpoint" or f.projection:
        return "formulation options"
    if f.constraints or f.limits is not None or f.joint_layout is not None or f.soft.any:
        return "constraints, joint limits, joint friction or compliance"
    scene = f.scene
    if scene.joints or scene.constraints or scene.attachments or f.attach is not None:
        return "joints, constraints or attachments"
    if scene.forces or scene.joint_torque is not None:
        return "force elements or joint torques"
    if scene.contact.restitution > 0.0 or scene.contact.restitution_pairs:
        return "restitution"
    beta, cap = scene.contact.stabilization, scene.contact.max_correction
    if (beta is not None and not (np.isfinite(beta) and beta >= 0.0)) or not cap >= 0.0:
        return "contact parameters (the general path names the bad value)"
    return B.model_scope(model, collide)


def compiled_step_for(
    formulation: MaximalFormulation, model: ContactModel, collide: Any
) -> CompiledContactStep | None:
    """The compiled step of this set-up, or ``None`` when it is outside its scope."""
    if collide is None or scope(formulation, model, collide):
        return None
    return CompiledContactStep(formulation, model, collide)


class FreeBodyStep:
    """What the compiled steps of free bodies share: the set-up, the collision in the
    kernels' layouts, the warm start carried by contact identity, and the step's record.

    A subclass names its kernel module (``kernels``: the ``I_*`` indices of its ``info``,
    ``DECOUPLED``), its warm start's cache key (``key``) and calls its kernel in
    :meth:`step` between :meth:`_begin` and :meth:`_end`."""

    kernels: Any = K
    key: str = B.MEMORY_KEY

    def __init__(self, formulation: MaximalFormulation, model: ContactModel, collide: Any) -> None:
        from contactlab.contact_pairs import excluded_pairs

        self.formulation = formulation
        self.model = model
        self.collide = collide
        scene = formulation.scene
        self.scene = scene
        self._excluded = excluded_pairs(scene)
        self._mdiag = np.ascontiguousarray(formulation.mass_diagonal, dtype=float)
        self._gravity = np.ascontiguousarray(scene.gravity, dtype=float)
        self._feedback = B.Feedback(scene.contact)
        self._no_ids = np.zeros(0, dtype=np.int64)
        self._no_normal = np.zeros(0)
        self._no_friction = np.zeros((0, 3))
        #: the row blocks of the impulses (box_rows: no G and L rows)
        self._slices = B.RowBlocks()
        #: per step: seconds in the collision, in the compiled step, and in all
        #: (read by benchmarks; the last step only)
        self.last_times: dict[str, float] = {}
        #: the sleep state the step is posed with (the formulation's option ``sleep``)
        self._posed_sleep: Any = None

    def contacts(self, E: Array) -> ContactSet:
        """The scene's contacts at body transforms ``E``, in the kernel's array layouts."""
        from contactlab.contact_pairs import drop_jointed

        return B.kernel_contacts(
            drop_jointed(self.collide(self.scene, E), self.scene, self._excluded)
        )

    def _carries(self, memory: Any) -> bool:
        """Whether ``memory`` (the state's record under :attr:`key`) is a warm start."""
        return getattr(memory, "ids", None) is not None

    def _begin(
        self, state: State, sleep: Any = None
    ) -> tuple[ContactSet, Any, bool, tuple[Array, ...], float, float]:
        """The step's contacts, their identities, whether a warm start is carried, the
        kernel's warm-start arrays (ids, their order, normal impulses, friction), and the
        clock at the start and after the collision.  With a ``sleep`` state
        (:mod:`contactlab.maximal.sleeping`) the contacts are those the step keeps
        (:func:`~contactlab.maximal.sleeping.before_step`), the step's sleep state in
        :attr:`_posed_sleep`."""
        start = time.perf_counter()
        contacts = self.contacts(state.E)
        if sleep is not None:
            from contactlab.maximal.sleeping import before_step

            sleep, kept = before_step(sleep, contacts)
            contacts = kept if kept is contacts else B.kernel_contacts(kept)
            self._posed_sleep = sleep
        collided = time.perf_counter()
        track = identity.identify(contacts, state.cache.get(identity.CACHE_KEY))
        memory: Any = state.cache.get(self.key)
        carry = len(contacts) > 0 and self._carries(memory)
        if carry:
            ids = np.ascontiguousarray(memory.ids, dtype=np.int64)
            old: tuple[Array, ...] = (
                ids,
                np.argsort(ids, kind="stable"),
                np.ascontiguousarray(memory.normal_impulse, dtype=np.float64),
                np.ascontiguousarray(memory.friction, dtype=np.float64),
            )
        else:
            old = (self._no_ids, self._no_ids, self._no_normal, self._no_friction)
        return contacts, track, carry, old, start, collided

    def _end(
        self,
        sim: Simulator,
        state: State,
        index: int,
        contacts: ContactSet,
        track: Any,
        solution: tuple[Array, Array, Array, Array, Array],
        clock: tuple[float, float, float, float],
    ) -> tuple[State, StepRecord]:
        """The new state and the step's record from the kernel's ``solution`` (twists,
        transforms, impulses, friction, info; a step the kernel took), ``clock`` the times
        at the start, after the collision, before and after the kernel."""
        Kn = self.kernels
        phi, E, z, friction, info = solution
        nc = len(contacts)
        status = B.usable_status(sim, index, state.t, int(info[Kn.I_STATUS]), Kn)
        if not np.all(np.isfinite(phi)):
            raise sim._failure(index, state.t, f"non-finite velocities (status {status!r})")
        cache = B.carried_cache(state, track, z, friction, self._slices(nc), self.key)
        rule = getattr(self.formulation, "sleep", None)
        sleep = None
        if rule is not None:
            from contactlab.maximal.sleeping import after_step

            # held bodies keep their poses; the islands at rest fall asleep
            held = self._posed_sleep.asleep
            phi = np.where(held[:, None], 0.0, phi)
            E = np.where(held[:, None, None], state.E, E)
            sleep, phi = after_step(self._posed_sleep, rule, phi, contacts)
        new_state = State(state.t + sim.dt, E, phi, cache=cache, sleep=sleep)
        new_state.check_finite()
        row = B.step_row(
            info, Kn, index, float(new_state.t), sim.dt,
            (float(info[Kn.I_KINETIC]), float(info[Kn.I_POTENTIAL])),
            [*info[Kn.I_LINEAR : Kn.I_LINEAR + 3], *info[Kn.I_ANGULAR : Kn.I_ANGULAR + 3]],
            0.0, status, nc, clock,
        )  # fmt: skip
        if sleep is not None:
            row.update(self.formulation.metrics(new_state))  # the twists of the sleepers
        start, collided, assembled, solved = clock
        self.last_times = {
            "collision": collided - start,
            "kernel": solved - assembled,
            "step": row["step_time_s"],
        }
        record = B.record_step(
            sim, self.formulation, state, contacts, track, index, row, phi.reshape(-1), z
        )
        return new_state, record


class CompiledContactStep(FreeBodyStep):
    """The step of free bodies with box friction by ``pgs`` (module docstring)."""

    def __init__(self, formulation: MaximalFormulation, model: ContactModel, collide: Any) -> None:
        super().__init__(formulation, model, collide)
        #: finish a step Gauss--Seidel has not solved in its first sweeps by subspace
        #: minimization (``False``: plain Gauss--Seidel to the cap, the general path's)
        self.finish = True
        #: solve the step island by island, each with its own stopping test and sweep cap
        #: (``False``: the whole step's contacts as one problem, the general path's)
        self.islands = True
        self._awake = np.zeros(scene_bodies(formulation), dtype=np.bool_)

    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        h = sim.dt
        held = self._awake
        if self.formulation.sleep is not None:
            from contactlab.maximal.sleeping import Sleep

            if not isinstance(state.sleep, Sleep):
                raise ConfigurationError(
                    "sleep=true: the state carries no sleep record; start from "
                    "initial_state() of this formulation"
                )
            contacts, track, carry, old, start, collided = self._begin(state, state.sleep)
            held = np.ascontiguousarray(self._posed_sleep.asleep, dtype=np.bool_)
        else:
            contacts, track, carry, old, start, collided = self._begin(state)
        beta = self._feedback.beta(h)
        model: Any = self.model
        cap = model.options["max_iter"]
        assembled = time.perf_counter()
        solution = K.contact_step(
            self._mdiag, state.E, np.ascontiguousarray(state.phi, dtype=float), self._gravity,
            h, MIDPOINT_ITERATIONS, contacts.body_a, contacts.body_b, contacts.point,
            contacts.normal, contacts.distance, contacts.mu, beta, self._feedback.max_correction,
            carry, *old,
            np.ascontiguousarray(track.ids, dtype=np.int64),
            np.ascontiguousarray(track.origin, dtype=np.int64),
            model.tol, 10000 if cap is None else int(cap), 1.0, 8, sim.slip_threshold, self.finish,
            self.islands, held,
        )  # fmt: skip
        if int(solution[4][K.I_STATUS]) == K.DECOUPLED:
            return None  # the general path's closed forms and messages
        solved = time.perf_counter()
        out = self._end(
            sim, state, index, contacts, track, solution, (start, collided, assembled, solved)
        )
        info = solution[4]
        self.last_times["units"] = float(info[K.I_UNITS])
        self.last_times["islands"] = float(info[K.I_ISLANDS])
        self.last_times["row_sweeps"] = float(info[K.I_WORK])
        return out


def narrowed_scope(
    formulation: Any, model: Any, collide: Any, model_test: Callable[[Any, Any], object]
) -> str:
    """Why a compiled step that takes the box-friction step's set-ups with models of its own
    does not apply (empty when it does): :func:`scope`'s reasons but its model test, then
    ``model_test(model, collide)`` (a string: why not; anything else: the model fits)."""
    # the box-friction step's scope ends with its model test: "model" for any other model
    why = scope(formulation, model, collide)
    if why != "model":
        return why or "model"
    found = model_test(model, collide)
    return found if isinstance(found, str) else ""


def step_in_scope(
    step: Callable[[Any, Any, Any], Step], scope_of: Callable[[Any, Any, Any], str],
    formulation: Any, model: Any, collide: Any,
) -> Step | None:  # fmt: skip
    """``step(formulation, model, collide)``, the compiled step of this set-up, or ``None``
    when it is outside the step's scope (no collision function, or ``scope_of`` gives a
    reason): the ``*_step_for`` factories of the compiled steps with a model test of their
    own."""
    if collide is None or scope_of(formulation, model, collide):
        return None
    return step(formulation, model, collide)


def model_found(found: Found | str) -> Found:
    """What a model test (:func:`narrowed_scope`'s ``model_test``) read from a model the
    step's scope already took: never a reason (a string)."""
    assert not isinstance(found, str)
    return found


__all__ = [
    "CompiledContactStep",
    "FreeBodyStep",
    "compiled_step_for",
    "model_found",
    "narrowed_scope",
    "scope",
    "step_in_scope",
]
