"""What the compiled box-friction steps of the two formulations share.

The maximal formulation's step of free bodies (:mod:`contactlab.maximal.compiled_step`)
and the reduced formulation's step of robots on the ground
(:mod:`contactlab.reduced.compiled_step`) pose the box-friction LCP of
:func:`~contactlab.models.box_rows.box_rows` and solve it by projected Gauss--Seidel in
one compiled call each.  Around that call they do the same things: hand the contacts to
the kernel in its array layouts, keep the step's impulses as the model's warm start
(:class:`~contactlab.models.box_rows.ImpulseMemory` under the model's cache key, the
contact identities beside it), write the row of ``steps.csv`` from the kernel's
measurements, and record the step with its problem and solution built on first access.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from contactlab import metrics as M
from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.memory import ModelMemory
from contactlab.models.box_rows import ImpulseMemory
from contactlab.problem import StepProblem, StepSolution
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.simulator import Simulator

Array = np.ndarray

#: the box-friction model's cache key of its recorded impulses (box cone)
MEMORY_KEY = "box-friction:box"

_new = object.__new__


class _Assembles(Protocol):
    def assemble(self, state: State, h: float, contacts: ContactSet | None) -> StepProblem: ...


def model_scope(model: Any, collide: Any) -> str:
    """Why a compiled step does not take this model, solver or collision (empty when it
    does): ``box-friction`` with the box cone and the height order, solved by ``pgs`` with
    its default settings, and the scene's own collision."""
    from contactlab.collision import collide as default_collide
    from contactlab.models.box_friction import BoxFriction

    if type(model) is not BoxFriction or model.route != ("block_lcp",):
        return "model"
    opts = model.options
    if opts["cone"] != "box" or opts["row_order"] != "height" or model.solver != "pgs":
        return "model options or solver"
    if opts["solver_settings"]:
        return "solver settings"
    if collide is not default_collide:
        return "collision function"
    return ""


class Feedback:
    """The contact rows' Baumgarte feedback of a scene: ``beta(h)`` (the scene's
    stabilization, else the default fraction ``/ h``) and the cap on the correction."""

    def __init__(self, params: Any) -> None:
        from contactlab.contact.rows import DEFAULT_FEEDBACK_FRACTION

        self.given = params.stabilization
        self.fraction = DEFAULT_FEEDBACK_FRACTION
        self.max_correction = float(params.max_correction)

    def beta(self, h: float) -> float:
        return float(self.given) if self.given is not None else self.fraction / h


def usable_status(sim: Simulator, index: int, t: float, code: int, K: Any) -> str:
    """The solver status of the kernel's code (``K.OPTIMAL``, ``K.MAX_ITERATIONS``, else a
    numerical error); a status without a usable answer raises the simulator's failure."""
    status = {K.OPTIMAL: "optimal", K.MAX_ITERATIONS: "max_iterations"}.get(code, "numerical_error")
    if status not in M.USABLE_STATUSES:
        raise sim._failure(index, t, f"solver status {status!r}")
    return status


def kernel_contacts(found: ContactSet) -> ContactSet:
    """``found`` in the compiled kernels' array layouts (one compiled signature):
    contiguous float64 points, normals, distances and friction coefficients, int64
    bodies."""
    c = np.ascontiguousarray
    return ContactSet(
        point=c(found.point, dtype=float),
        normal=c(found.normal, dtype=float),
        distance=c(found.distance, dtype=float),
        body_a=c(found.body_a, dtype=np.int64),
        body_b=c(found.body_b, dtype=np.int64),
        shape_a=found.shape_a,
        shape_b=found.shape_b,
        mu=c(found.mu, dtype=float),
    )


class RowBlocks:
    """The row blocks of :func:`~contactlab.models.box_rows.box_rows` for ``nc`` contacts
    and ``n_limits`` limit rows after them (no ``G`` rows), kept per ``nc``."""

    def __init__(self, n_limits: int = 0) -> None:
        self.n_limits = n_limits
        self._cache: dict[int, dict[str, slice]] = {}

    def __call__(self, nc: int) -> dict[str, slice]:
        s = self._cache.get(nc)
        if s is None:
            s = {
                "G": slice(0, 0),
                "N": slice(0, nc),
                "T": slice(nc, 3 * nc),
                "L": slice(3 * nc, 3 * nc + self.n_limits),
            }
            self._cache[nc] = s
        return dict(s)


def carried_cache(
    state: State,
    track: Any,
    z: Array,
    friction: Array,
    slices: dict[str, slice],
    key: str = MEMORY_KEY,
) -> Mapping[str, Any]:
    """The next state's cache: ``state``'s with the contact identities ``track`` and the
    impulses ``z`` (normal ones first) and ``friction`` (world vectors) as the model's
    warm start (under ``key``)."""
    nc = slices["N"].stop
    # ImpulseMemory(z, slices, ids, normal, friction) set as contact_set sets its set; the
    # normal impulses a view of z (neither is ever written)
    memory = _new(ImpulseMemory)
    memory.__dict__.update(
        z=z, slices=slices, ids=track.ids if nc else None,
        normal_impulse=z[:nc] if nc else None, friction=friction if nc else None,
    )  # fmt: skip
    cache = state.cache
    carried = {identity.CACHE_KEY: track, key: memory}
    if isinstance(cache, ModelMemory):  # one copy, already the state's kind of memory
        return cache.merged(carried)
    return {**cache, **carried}


def kernel_columns(info: Array, K: Any, nc: int) -> dict[str, Any]:
    """The columns of ``steps.csv`` a compiled step's kernel measures: its sweeps, the
    contacts and the contact metrics and residual of the solution (``info`` at the indices
    ``K.I_*`` of the kernel's module ``K``), in the columns' order."""
    return {
        "iterations": int(info[K.I_SWEEPS]),
        "outer_iterations": 0,
        "n_contacts": nc,
        "penetration": float(info[K.I_PENETRATION]),
        "normal_complementarity": float(info[K.I_NORMAL_COMP]),
        "normal_feasibility": float(info[K.I_NORMAL_FEAS]),
        "cone_violation": float(info[K.I_CONE]),
        "dissipation_violation": float(info[K.I_DISSIPATION]),
        "n_sliding": float(info[K.I_SLIDING]),
        "solver_residual": float(max(info[K.I_PRIMAL], info[K.I_DUAL], info[K.I_COMP])),
    }


def step_row(  # noqa: PLR0913
    info: Array,
    K: Any,
    index: int,
    t: float,
    h: float,
    energies: tuple[float, float],
    momentum: Sequence[float],
    constraint_error: float,
    status: str,
    nc: int,
    times: tuple[float, float, float, float],
) -> dict[str, Any]:
    """The row of ``steps.csv`` of a compiled step ending at time ``t``.

    ``info`` the kernel's measurements at the indices ``K.I_*`` of its module ``K``;
    ``energies`` the kinetic and potential energy, ``momentum`` the world linear then
    angular momentum; ``times`` the clock (``time.perf_counter``) at the step's start,
    after the collision, after the set-up and after the solve."""
    start, collided, assembled, solved = times
    kinetic, potential = energies
    m0, m1, m2, m3, m4, m5 = momentum
    row: dict[str, Any] = {  # one literal, the columns in their order (kernel_columns')
        "step": index,
        "t": t,
        "h": h,
        "kinetic_energy": kinetic,
        "potential_energy": potential,
        "total_energy": kinetic + potential,
        "linear_momentum_x": float(m0),
        "linear_momentum_y": float(m1),
        "linear_momentum_z": float(m2),
        "angular_momentum_x": float(m3),
        "angular_momentum_y": float(m4),
        "angular_momentum_z": float(m5),
        "constraint_error": constraint_error,
        "status": status,
        "solve_time_s": solved - assembled,
        "model_setup_time_s": 0.0,
        "iterations": int(info[K.I_SWEEPS]),
        "outer_iterations": 0,
        "n_contacts": nc,
        "penetration": float(info[K.I_PENETRATION]),
        "normal_complementarity": float(info[K.I_NORMAL_COMP]),
        "normal_feasibility": float(info[K.I_NORMAL_FEAS]),
        "cone_violation": float(info[K.I_CONE]),
        "dissipation_violation": float(info[K.I_DISSIPATION]),
        "n_sliding": float(info[K.I_SLIDING]),
        "solver_residual": float(max(info[K.I_PRIMAL], info[K.I_DUAL], info[K.I_COMP])),
        "collision_time_s": collided - start,
        "assembly_time_s": assembled - collided,
    }
    row["step_time_s"] = time.perf_counter() - start
    return row


#: the columns of ``steps.csv`` a compiled step writes, in their order (:func:`step_row`'s)
ROW_KEYS = (
    "step", "t", "h", "kinetic_energy", "potential_energy", "total_energy",
    "linear_momentum_x", "linear_momentum_y", "linear_momentum_z",
    "angular_momentum_x", "angular_momentum_y", "angular_momentum_z",
    "constraint_error", "status", "solve_time_s", "model_setup_time_s", "iterations",
    "outer_iterations", "n_contacts", "penetration", "normal_complementarity",
    "normal_feasibility", "cone_violation", "dissipation_violation", "n_sliding",
    "solver_residual", "collision_time_s", "assembly_time_s", "step_time_s",
)  # fmt: skip
#: the types of the row's values (:func:`row_values` makes them so; ``step`` an ``int``
#: when the step's index is, as a run's is)
ROW_TYPES = (int, *[float] * 12, str, float, float, int, int, int, *[float] * 10)
#: positions in :data:`ROW_KEYS` of the values the divergence guard reads
I_TOTAL_ENERGY = ROW_KEYS.index("total_energy")
I_CONSTRAINT_ERROR = ROW_KEYS.index("constraint_error")
I_STATUS = ROW_KEYS.index("status")


class RowIndex:
    """The positions of a kernel module's measurements (``K.I_*``) in its ``info``, read
    once, for :func:`row_values`."""

    def __init__(self, K: Any) -> None:
        self.at = (
            K.I_SWEEPS, K.I_PENETRATION, K.I_NORMAL_COMP, K.I_NORMAL_FEAS, K.I_CONE,
            K.I_DISSIPATION, K.I_SLIDING, K.I_PRIMAL, K.I_DUAL, K.I_COMP,
        )  # fmt: skip


def row_values(  # noqa: PLR0913
    f: list[float],
    at: RowIndex,
    index: int,
    t: float,
    h: float,
    kinetic: float,
    potential: float,
    momentum: Sequence[float],
    constraint_error: float,
    status: str,
    nc: int,
    times: tuple[float, float, float, float],
) -> tuple[Any, ...]:
    """The values of :func:`step_row`'s row, in the order of :data:`ROW_KEYS`, from the
    kernel's measurements ``f`` (``info.tolist()``: Python floats) at the positions ``at``;
    ``momentum`` Python floats. Its types are :func:`step_row`'s."""
    start, collided, assembled, solved = times
    sweeps, pen, ncomp, nfeas, cone, diss, sliding, primal, dual, comp = at.at
    m0, m1, m2, m3, m4, m5 = momentum
    return (
        index, t, h, kinetic, potential, kinetic + potential, m0, m1, m2, m3, m4, m5,
        constraint_error, status, solved - assembled, 0.0, int(f[sweeps]), 0, nc, f[pen],
        f[ncomp], f[nfeas], f[cone], f[diss], f[sliding], max(f[primal], f[dual], f[comp]),
        collided - start, assembled - collided, time.perf_counter() - start,
    )  # fmt: skip


def contact_set(  # noqa: PLR0913
    point: Array,
    normal: Array,
    distance: Array,
    body_a: Array,
    body_b: Array,
    shape_a: Array,
    shape_b: Array,
    mu: Array,
) -> ContactSet:
    """``ContactSet(point, normal, ...)`` from columns already in its layout, set as its
    generated ``__init__`` sets them (the frozen class's ``__init__`` sets field by field
    through ``object.__setattr__``: a third of a compiled robot step's Python)."""
    contacts = _new(ContactSet)
    contacts.__dict__.update(
        point=point, normal=normal, distance=distance, body_a=body_a, body_b=body_b,
        shape_a=shape_a, shape_b=shape_b, mu=mu,
    )  # fmt: skip
    return contacts


def contact_columns(contacts: ContactSet) -> tuple[Array, ...]:
    """The columns of ``contacts`` in the order of its fields (:func:`contact_set`'s
    arguments)."""
    c = contacts
    return (c.point, c.normal, c.distance, c.body_a, c.body_b, c.shape_a, c.shape_b, c.mu)


def contact_track(
    ids: Array, origin: Array, pair: Array, point: Array, next_id: int
) -> identity.ContactTrack:
    """``ContactTrack(ids, origin, pair, point, next_id)``, as :func:`contact_set` makes
    its set."""
    track = _new(identity.ContactTrack)
    track.__dict__.update(ids=ids, origin=origin, pair=pair, point=point, next_id=next_id)
    return track


def new_state(  # noqa: PLR0913
    t: float,
    E: Array,
    phi: Array,
    q: Array | None,
    qdot: Array | None,
    cache: Mapping[str, Any],
) -> State:
    """``State(t, E, phi, q, qdot, cache)``, as :func:`contact_set` makes its set (the
    ``cache`` made a :class:`~contactlab.memory.ModelMemory` as the state's
    ``__post_init__`` makes it)."""
    if not isinstance(cache, ModelMemory):
        cache = ModelMemory(cache)
    state = _new(State)
    state.__dict__.update(t=t, E=E, phi=phi, q=q, qdot=qdot, cache=cache, sleep=None)
    return state


class CompiledRecord(StepRecord):
    """A step record whose problem and solution are built when first read: the problem by
    the formulation's own ``assemble`` (the same problem), the solution from the compiled
    step's velocities ``v`` and impulses ``z`` (rows of :func:`box_rows`)."""

    def __init__(  # noqa: PLR0913
        self,
        formulation: _Assembles,
        state: State,
        contacts: ContactSet,
        track: Any,
        index: int,
        h: float,
        row: dict[str, Any],
        v: Array,
        z: Array,
    ) -> None:
        self.index, self.t, self.h, self.metrics = index, float(row["t"]), h, row
        self.contacts = contacts
        self._from = (formulation, state, track, v, z)
        self._problem: StepProblem | None = None
        self._solution: StepSolution | None = None

    @property
    def problem(self) -> StepProblem:  # type: ignore[override]
        if self._problem is None:
            formulation, state, track, _, _ = self._from
            problem = formulation.assemble(state, self.h, self.contacts)
            self._problem = replace(problem, contact_ids=track.ids, contact_origin=track.origin)
        return self._problem

    @property
    def solution(self) -> StepSolution:  # type: ignore[override]
        if self._solution is None:
            v, z = self._from[3], self._from[4]
            nc = len(self.contacts) if self.contacts is not None else 0
            row = self.metrics
            self._solution = StepSolution(
                v=v, lambda_G=np.zeros(0), lambda_N=z[:nc].copy(),
                lambda_T=z[nc : 3 * nc].copy(), lambda_L=z[3 * nc :].copy(),
                status=row["status"], iterations=row["iterations"],
                solve_time=row["solve_time_s"], residual=row["solver_residual"],
            )  # fmt: skip
        return self._solution


class RowRecord(CompiledRecord):
    """A :class:`CompiledRecord` whose ``metrics`` (the row of ``steps.csv``) is built as a
    dict when first read, from the row's values in the order of :data:`ROW_KEYS`, and its
    ``contacts`` from their columns (:func:`contact_columns`' order); a run writes the
    values into its step table without the dict (:meth:`unread_values`) and hands the
    contact arrays to its divergence guard (:meth:`contact_arrays`)."""

    def __init__(  # noqa: PLR0913
        self,
        formulation: _Assembles,
        state: State,
        columns: tuple[Array, ...],
        track: Any,
        index: int,
        h: float,
        values: tuple[Any, ...],
        v: Array,
        z: Array,
    ) -> None:
        self.index, self.t, self.h = index, values[1], h
        self._values = values
        self._row: dict[str, Any] | None = None
        self._columns = columns
        self._contacts: ContactSet | None = None
        self._from = (formulation, state, track, v, z)
        self._problem = None
        self._solution = None

    @property  # type: ignore[override]
    def contacts(self) -> ContactSet:
        contacts = self._contacts
        if contacts is None:
            contacts = self._contacts = contact_set(*self._columns)
        return contacts

    @contacts.setter
    def contacts(self, contacts: ContactSet) -> None:
        self._contacts = contacts
        self._columns = contact_columns(contacts)

    def contact_arrays(self) -> tuple[Array, Array, Array]:
        """The contacts' distances and body indices (C-contiguous float64 and int64)."""
        columns = self._columns
        return columns[2], columns[3], columns[4]

    @property  # type: ignore[override]
    def metrics(self) -> dict[str, Any]:
        row = self._row
        if row is None:
            row = self._row = dict(zip(ROW_KEYS, self._values, strict=True))
        return row

    @metrics.setter
    def metrics(self, row: dict[str, Any]) -> None:
        self._row = row

    def unread_values(self) -> tuple[Any, ...] | None:
        """The row's values in the order of :data:`ROW_KEYS` while ``metrics`` was never
        read (``None`` once it was: the dict, which a reader may have changed, is the row)."""
        return self._values if self._row is None else None


def record_row(  # noqa: PLR0913
    sim: Simulator,
    formulation: _Assembles,
    state: State,
    columns: tuple[Array, ...],
    track: Any,
    index: int,
    values: tuple[Any, ...],
    v: Array,
    z: Array,
) -> RowRecord:
    """:func:`record_step` of a row given by its values (:func:`row_values`) and of the
    contacts given by their columns (:func:`contact_columns`)."""
    record = RowRecord(formulation, state, columns, track, index, sim.dt, values, v, z)
    if sim.strict and values[I_STATUS] in M.UNCONVERGED_STATUSES:
        raise sim._strict_failure(index, state.t, record.metrics, record.solution)
    return record


def record_step(  # noqa: PLR0913
    sim: Simulator,
    formulation: _Assembles,
    state: State,
    contacts: ContactSet,
    track: Any,
    index: int,
    row: dict[str, Any],
    v: Array,
    z: Array,
) -> CompiledRecord:
    """The step's record; under ``sim.strict`` an unconverged step raises the simulator's
    failure, as the general path does."""
    record = CompiledRecord(formulation, state, contacts, track, index, sim.dt, row, v, z)
    if sim.strict and row["status"] in M.UNCONVERGED_STATUSES:
        raise sim._strict_failure(index, state.t, row, record.solution)
    return record


__all__ = [
    "MEMORY_KEY",
    "I_CONSTRAINT_ERROR",
    "I_STATUS",
    "I_TOTAL_ENERGY",
    "ROW_KEYS",
    "ROW_TYPES",
    "CompiledRecord",
    "Feedback",
    "RowBlocks",
    "RowIndex",
    "RowRecord",
    "carried_cache",
    "contact_columns",
    "contact_set",
    "contact_track",
    "kernel_columns",
    "kernel_contacts",
    "model_scope",
    "new_state",
    "record_row",
    "record_step",
    "row_values",
    "step_row",
    "usable_status",
]
