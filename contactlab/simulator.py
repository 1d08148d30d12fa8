"""The simulator loop: collision, assembly, contact model, integration, metrics.

One step (DESIGN.md, "One step, as data flows")::

    contacts = collide(scene, E)                    # when the scene has geometry
    problem  = formulation.assemble(state, h, contacts)
    solution = model.solve(problem, cache)          # through the solver layer
    state    = formulation.advance(state, solution, h)

followed by a finiteness check and the per-step metrics of
:mod:`contactlab.metrics`.

One policy for a step that misses its tolerance, whatever the backend: the
step keeps the solver's best iterate, its status (``max_iterations``,
``stalled``, ``time_limit``, ``optimal_inaccurate``: the *unconverged*
statuses, :data:`~contactlab.metrics.UNCONVERGED_STATUSES`) and its residual,
and the run goes on; the run ends ``"inaccurate"`` and its summary counts such
steps.  With ``strict=True`` the first such step stops the run with
:class:`~contactlab.errors.StepFailure`.  A genuine failure (a non-finite
result, an infeasible problem, a backend that breaks down without an
iterate) always stops the run, and a blow-up is stopped by the divergence
guard.  Nothing in the loop is random, so the same inputs give the same run
bit for bit.

This module holds the step loop only: what a run produces is in
:mod:`contactlab.runs`, the per-step table in :mod:`contactlab.step_table`, the
trajectory and the run's length in :mod:`contactlab.trajectory`, the pairs that
never collide in :mod:`contactlab.contact_pairs`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contactlab import interrupts
from contactlab import metrics as M
from contactlab._guard_kernels import OK as GK_OK
from contactlab.contact import identity
from contactlab.contact_pairs import (
    collision_function,
    drop_jointed,
    excluded_pairs,
    jointed_pairs,
    scene_contacts,
)
from contactlab.divergence import (
    DivergenceGuard,
    extreme_parameters,
    scene_bounds,
    suspect_parameters,
)
from contactlab.errors import (
    ConfigurationError,
    ContactlabError,
    IncompatibleError,
    StateError,
    StepFailure,
)
from contactlab.formulation import (
    Formulation,
    check_pairing,
    formulation_class,
    make_formulation,
)
from contactlab.memory import ModelMemory
from contactlab.models import compiled_box_step as B
from contactlab.models.base import ContactModel, check_solver, make_model
from contactlab.problem import StepSolution
from contactlab.progress import progress_bar
from contactlab.runs import Run, StepCallback, StepRecord
from contactlab.scene import Scene, State
from contactlab.spec import RunSpec
from contactlab.step_table import StepTable
from contactlab.trajectory import MAX_STEPS, MEMORY_SHARE, TrajectoryRecorder, run_length
from solvers.errors import SolverError

Array = NDArray[np.float64]
Collide = Callable[[Scene, Array], Any]

#: Names that lived here before the run's pieces moved to modules of their own.
__all__ = [
    "MAX_STEPS",
    "MEMORY_SHARE",
    "Run",
    "Simulator",
    "StepCallback",
    "StepRecord",
    "check_solver",
    "drop_jointed",
    "excluded_pairs",
    "jointed_pairs",
    "run_length",
    "scene_contacts",
]


class Simulator:
    """Steps a scene with a chosen formulation, contact model and solver.

    Parameters
    ----------
    scene : the scene to simulate.
    formulation : formulation name (``"maximal"``, ``"reduced"``) or instance.
    model : contact model name (``"frictionless"``, ``"anitescu-hart"``, ...) or instance.
    solver : solver-layer backend name (``"kkt"``, ``"osqp"``, ``"pgs"``, ...);
        ignored when ``model`` is an instance.
        A formulation, model or solver left ``None`` is chosen from what the
        scene contains (:func:`contactlab.scenario.complete_setup`).
    dt : step size [s]; the scene's ``dt`` when ``None``.
    model_options : keyword options of the model (``cone``, ``directions``, ...).
    collide : collision function ``(scene, E) -> contacts``; by default
        :func:`contactlab.collision.collide` when the scene has geometry.
    slip_threshold : [m/s] slip speed above which a contact counts as sliding.
    divergence_guard : stop the run with status ``"diverged"`` at the first
        physically absurd state (see :mod:`contactlab.divergence`); ``False``
        keeps stepping, for those who study the blow-up.
    formulations : the formulations the scene supports, first preferred (used
        when ``formulation`` is ``None``).
    formulation_options : keyword options of the formulation (maximal:
        ``integrator``, ``jacobian``, ``projection``, ``coriolis``, ...);
        ignored when ``formulation`` is an instance.
    strict : stop the run with :class:`~contactlab.errors.StepFailure` at the
        first step that misses its tolerance (an unconverged status); by
        default such a step keeps its best iterate and the run goes on.
    """

    def __init__(
        self,
        scene: Scene,
        formulation: str | Formulation | None = None,
        model: str | ContactModel | None = None,
        solver: str | None = None,
        dt: float | None = None,
        model_options: Mapping[str, Any] | None = None,
        collide: Collide | None = None,
        slip_threshold: float = M.SLIP_THRESHOLD,
        divergence_guard: bool = True,
        formulations: tuple[str, ...] = ("maximal",),
        formulation_options: Mapping[str, Any] | None = None,
        strict: bool = False,
    ) -> None:
        from contactlab.scenario import complete_setup

        self.scene = scene
        self.divergence_guard = bool(divergence_guard)
        self.strict = bool(strict)
        setup, defaulted = complete_setup(
            scene,
            formulations,
            formulation.name if isinstance(formulation, Formulation) else formulation,
            model.name if isinstance(model, ContactModel) else model,
            model.solver if isinstance(model, ContactModel) else solver,
            model_options,
        )
        #: the choices taken from the scene's defaults, and why (recorded in summaries)
        self.defaults: dict[str, Any] = (
            {"defaulted": defaulted, "reason": setup.reason} if defaulted else {}
        )
        formulation = setup.formulation if formulation is None else formulation
        model = setup.model if model is None else model
        solver = setup.solver
        h = scene.dt if dt is None else dt
        if not (isinstance(h, (int, float)) and np.isfinite(h) and h > 0):
            raise ConfigurationError(f"step size dt must be a positive number [s], got {dt!r}")
        self.dt = float(h)
        self.model_options = dict(model_options or {})
        self.formulation_options = (
            {} if isinstance(formulation, Formulation) else dict(formulation_options or {})
        )
        if isinstance(model, ContactModel):
            self.model = model
            self.solver = model.solver
        else:
            check_solver(solver)
            self.model = make_model(model, solver, **self.model_options)
            self.solver = solver
        # a model that needs what the formulation does not provide is refused before either runs
        if isinstance(formulation, Formulation):
            check_pairing(formulation.name, formulation.provides, self.model.name, self.model.needs)
            self.formulation = formulation
        else:
            provides = formulation_class(formulation).provides
            check_pairing(formulation, provides, self.model.name, self.model.needs)
            self.formulation = make_formulation(formulation, scene, **self.formulation_options)
        if getattr(self.formulation, "dry_friction", None) is not None and not getattr(
            self.model, "carries_dry_friction", False
        ):
            raise IncompatibleError(
                f"scene {scene.name!r} has joints with dry friction "
                f"({', '.join(j.name for j in scene.joints if np.any(j.dry_friction > 0))}), "
                f"which model {self.model.name!r} does not carry; run it with --model box-friction"
            )
        self.collide = collide if collide is not None else collision_function(scene)
        self._excluded = excluded_pairs(scene)
        self.slip_threshold = slip_threshold
        # a formulation may take whole steps in compiled code for this model and collision
        compiled = getattr(self.formulation, "compiled_step", None)
        self.compiled = None if compiled is None else compiled(self.model, self.collide)

    @property
    def names(self) -> tuple[str, str, str]:
        """``(formulation, model, solver)`` names."""
        return self.formulation.name, self.model.name, self.solver

    def initial_state(self) -> State:
        """The formulation's state at t = 0 (checked finite)."""
        # a scene whose numbers overflow (a body placed at 1e300 m, an angle of 1e300
        # degrees) gives a non-finite state: one error naming the scene, not NumPy warnings
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                state = self.formulation.initial_state()
            state.check_finite()
        except StateError as err:
            if "non-finite" not in str(err):
                raise
            key = str(err).split("non-finite ", 1)[-1].split(";", 1)[0]
            raise ConfigurationError(
                f"the initial state of scene {self.scene.name!r} has non-finite {key} "
                f"({suspect_parameters(self.scene)}); choose parameters in range"
            ) from err
        return state

    def _failure(self, index: int, t: float, what: str) -> StepFailure:
        form, model, solver = self.names
        structural = ("singular", "rank", "redundant", "contradictory", "dependent")
        if any(word in what for word in structural):
            # a property of the scene's constraints, not of the step size
            hint = (
                "the scene's constraint rows are redundant or contradictory (a joint or "
                "loop closure given twice?); remove the duplicate (a smaller --dt does not help)"
            )
        elif extreme := extreme_parameters(self.scene):
            # a scene built from numbers beyond floating-point range fails whatever the step
            hint = (
                f"the scene's parameter {', '.join(extreme)} is beyond floating-point range; "
                "choose parameters in range"
            )
        else:
            hint = (
                "try a smaller --dt, another --solver, or model options such as a looser tolerance"
            )
        return StepFailure(
            f"step {index} (t = {t:.6g} s) failed: {what} (formulation {form!r}, model "
            f"{model!r}, solver {solver!r}); {hint}"
        )

    def step(self, state: State, index: int = 0) -> tuple[State, StepRecord]:
        """Advance ``state`` by one step of size ``dt``; return the new state and the record.

        Raises
        ------
        StepFailure
            If the solver's velocities are unusable (failed status or non-finite).
        StateError
            If the new state holds non-finite numbers.
        """
        if self.compiled is not None:
            done = self.compiled.step(self, state, index)
            if done is not None:  # else a step the compiled path leaves to the general one
                return done  # type: ignore[no-any-return]
        h = self.dt
        start = time.perf_counter()
        contacts = None
        if self.collide is not None:
            E, _ = self.formulation.maximal(state)
            contacts = drop_jointed(self.collide(self.scene, E), self.scene, self._excluded)
        collided = time.perf_counter()
        assembled_problem = self.formulation.assemble(state, h, contacts)
        track = identity.identify(assembled_problem.contacts, state.cache.get(identity.CACHE_KEY))
        # the stable ids are part of the problem the model receives (a new, checked problem)
        problem = replace(assembled_problem, contact_ids=track.ids, contact_origin=track.origin)
        assembled = time.perf_counter()
        cache = ModelMemory(state.cache)  # the model writes into its own copy
        cache[identity.CACHE_KEY] = track
        try:
            solution = self.model.solve(problem, cache)
        except SolverError as err:
            raise self._failure(index, state.t, f"the solver layer raised: {err}") from err
        solved = time.perf_counter()
        if solution.status not in M.USABLE_STATUSES:
            said = next(
                (
                    str(getattr(r, "message", ""))
                    for r in solution.results
                    if getattr(r, "status", "optimal") not in M.USABLE_STATUSES
                ),
                "",
            )
            detail = f" ({' '.join(said.split())})" if said else ""
            raise self._failure(index, state.t, f"solver status {solution.status!r}{detail}")
        if not np.all(np.isfinite(solution.v)):
            raise self._failure(
                index, state.t, f"non-finite velocities (status {solution.status!r})"
            )
        new_state = self.formulation.advance(state, solution, h)
        new_state = replace(
            new_state, cache=ModelMemory(new_state.cache).merged(cache, solution.cache)
        )
        new_state.check_finite()
        row: dict[str, Any] = {"step": index, "t": float(new_state.t), "h": h}
        row.update(self.formulation.metrics(new_state))
        row.update(
            status=str(solution.status),
            solve_time_s=solved - assembled,
            model_setup_time_s=max(solved - assembled - float(solution.solve_time), 0.0),
            iterations=int(solution.iterations),
            outer_iterations=int(solution.outer_iterations),
            n_contacts=problem.n_contacts,
            penetration=M.penetration(contacts if contacts is not None else problem.contacts),
        )
        row.update(M.contact_metrics(problem, solution, self.slip_threshold))
        row["solver_residual"] = M.solver_residual(solution)
        row["collision_time_s"] = collided - start
        row["assembly_time_s"] = assembled - collided
        row["step_time_s"] = time.perf_counter() - start
        if self.strict and solution.status in M.UNCONVERGED_STATUSES:
            raise self._strict_failure(index, state.t, row, solution)
        record = StepRecord(index, float(new_state.t), h, row, problem, solution, contacts)
        return new_state, record

    def _strict_failure(
        self, index: int, t: float, row: dict[str, Any], solution: StepSolution
    ) -> StepFailure:
        """The error of an unconverged step under ``strict``: which step, status, residual."""
        form, model, solver = self.names
        said = next(
            (
                " ".join(str(getattr(r, "message", "")).split())
                for r in solution.results
                if getattr(r, "status", "optimal") != "optimal"
            ),
            "",
        )
        detail = f" ({said})" if said else ""
        return StepFailure(
            f"step {index} (t = {t:.6g} s) was not solved to its tolerance: status "
            f"{solution.status!r} at residual {row['solver_residual']:.3g} after "
            f"{row['iterations']} iterations{detail} (formulation {form!r}, model {model!r}, "
            f"solver {solver!r}); --strict stops at the first such step: without it the step "
            "keeps its best iterate and the run goes on, or raise the iteration cap "
            "(--model-option max_iter=N), loosen --model-option solver_tol, use a smaller "
            "--dt or another --solver"
        )

    def n_steps(self, steps: int | None = None, duration: float | None = None) -> int:
        """Number of steps for ``steps`` or ``duration`` [s] (the scene's duration by default).

        A duration is rounded to the nearest whole number of steps (at least one).
        More than :data:`MAX_STEPS` steps, or a trajectory larger than
        :data:`MEMORY_SHARE` of the available memory, is refused (before any
        allocation) with a :class:`~contactlab.errors.ConfigurationError`.
        """
        frame = TrajectoryRecorder.frame_bytes(self.scene, self.formulation)
        return run_length(self.scene, self.dt, steps, duration, frame)

    def run(
        self,
        steps: int | None = None,
        duration: float | None = None,
        progress: bool | Callable[[int, int], None] | None = None,
        callback: StepCallback | None = None,
        state: State | None = None,
    ) -> Run:
        """Run ``steps`` steps (or ``duration`` seconds) from ``state`` (t = 0 by default).

        Parameters
        ----------
        progress : ``True`` for a progress bar on stderr shown once the run has
            taken a second; a callable ``(done, total)`` called after each step.
        callback : called as ``callback(state, record)`` after each step;
            returning ``True`` stops the run.

        Raises
        ------
        StepFailure, StateError, SingularSystemError, DivergenceError
            When a step's solution is unusable, the state stops being finite,
            the system is singular or (with the divergence guard on) the state
            is physically absurd; the exception's ``run`` attribute holds the
            run up to and including the failed step (status ``"failed"``, or
            ``"diverged"`` for a :class:`~contactlab.errors.DivergenceError`).
        """
        n = self.n_steps(steps, duration)
        wall_start = time.perf_counter()
        state = self.initial_state() if state is None else state
        state.check_finite()
        initial = dict(self.formulation.metrics(state))
        recorder = TrajectoryRecorder(self.formulation, self.scene, state, n)
        guard = self._run_guard(state, initial, n)
        bar = progress_bar(n, unit="step") if progress is True else None
        rows = StepTable(n)
        status = "ok"
        # reduced coordinates hold a tree's joints by construction (their frames coincide
        # to rounding): the guard measures the joints' separation when some may open
        joints_hold = self._joints_hold()
        # Overflow and invalid-value warnings of a blowing-up step would only
        # precede the error the finiteness check and the guard raise for it.
        # the loop's callables and arrays looked up once
        step, append, add = self.step, rows.append, recorder.add
        append_values, keys, types, lazy = rows.append_values, B.ROW_KEYS, B.ROW_TYPES, B.RowRecord
        energy_at, drift_at = B.I_TOTAL_ENERGY, B.I_CONSTRAINT_ERROR
        guarded = self.divergence_guard and guard is not None
        verdict = guard.verdict if guarded else None  # type: ignore[union-attr]
        lean = guard.verdict_of_arrays if guarded else None  # type: ignore[union-attr]
        twists, transforms = recorder.phi, None if joints_hold else recorder.E
        tick = bar.update if bar is not None else None
        report = progress if bar is None and callable(progress) else None
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                for i in range(n):
                    if interrupts.PENDING:  # a Ctrl-C that other code swallowed
                        raise KeyboardInterrupt
                    state, record = step(state, i)
                    # a compiled step's row goes into the table as its values (its dict
                    # built only when read); the guard takes the two values it reads and
                    # the step's contact arrays as they are
                    values = record.unread_values() if type(record) is lazy else None
                    if values is None:
                        metrics = record.metrics
                        append(metrics)
                    else:
                        append_values(keys, values, types)
                    add(state)
                    if verdict is not None and lean is not None:
                        phi = twists[i + 1]
                        frames = None if transforms is None else transforms[i + 1]
                        if values is not None and frames is None:
                            broken = lean(
                                record.t, values[energy_at], values[drift_at], phi,
                                *record.contact_arrays(),  # type: ignore[attr-defined]
                            )  # fmt: skip
                        else:
                            contacts = record.contacts
                            if contacts is None:
                                contacts = record.problem.contacts
                            broken = verdict(i, record.t, record.metrics, phi, contacts, frames)
                        if broken != GK_OK:
                            contacts = record.contacts
                            if contacts is None:
                                contacts = record.problem.contacts
                            guard.check_reference(  # type: ignore[union-attr]
                                i, record.t, record.metrics, phi, contacts, frames
                            )
                    if tick is not None:
                        tick(1)
                    elif report is not None:
                        report(i + 1, n)
                    if callback is not None and callback(state, record):
                        status = "stopped"
                        break
        except ContactlabError as err:  # StepFailure, StateError, DivergenceError, ...
            status = getattr(err, "status", "failed")
            err.run = self._make_run(rows, recorder, initial, wall_start, n, status, str(err))  # type: ignore[attr-defined]
            raise
        finally:
            if bar is not None:
                bar.close()
        message = ""
        if status == "ok" and rows and any(x != "optimal" for x in rows.column("status")):
            status = "inaccurate"
            message = self._inaccurate_message(rows)
        return self._make_run(rows, recorder, initial, wall_start, n, status, message)

    def _joints_hold(self) -> bool:
        """Whether the formulation keeps every joint of the scene exactly: reduced
        coordinates of a tree (no joint closes a loop), whose joints' frames coincide by
        construction."""
        return getattr(self.formulation, "tree", None) is not None and not any(
            j.closes_loop for j in self.scene.joints
        )

    def _inaccurate_message(self, rows: StepTable) -> str:
        """Which steps were not solved to optimality, the first one's cause, and a hint."""
        bad = [r for r in rows if r["status"] != "optimal"]
        first = bad[0]
        counts: dict[str, int] = {}
        for r in bad:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
        statuses = ", ".join(f"{n} {name}" for name, n in sorted(counts.items()))
        form, model, solver = self.names
        cause = first["status"]
        if cause == "max_iterations":
            hint = (
                f"raise the iteration cap (--model-option max_iter=N; step {first['step']} "
                f"used {first['iterations']}), loosen --model-option solver_tol, "
                "use a smaller --dt, or try --solver osqp"
            )
        elif cause == "time_limit":
            hint = "raise the backend's time limit, use a smaller --dt, or try another --solver"
        elif cause == "stalled":
            hint = (
                "the solver stopped short without progress: loosen --model-option "
                "solver_tol, use a smaller --dt, or try another --solver"
            )
        else:
            hint = "tighten --model-option solver_tol, use a smaller --dt, or try another --solver"
        return (
            f"{len(bad)} of {len(rows)} steps were not solved to optimality ({statuses}); "
            f"the first is step {first['step']} (t = {first['t']:.6g} s, "
            f"{first['n_contacts']} contacts): solver {solver!r} of model {model!r} "
            f"({form}) ended with status {cause!r} at residual "
            f"{first.get('solver_residual', float('nan')):.3g}; {hint}"
        )

    def _run_guard(
        self, state: State, initial: dict[str, float], steps: int
    ) -> DivergenceGuard | None:
        """The divergence guard of a run of ``steps`` steps from ``state`` (``None`` for a
        scene without bounds when the guard is off); ``initial["energy_scale"]`` set to its
        energy scale (NaN without a guard)."""
        try:
            guard = self._guard(state, initial, horizon=float(state.t) + steps * self.dt)
        except ConfigurationError:
            if self.divergence_guard:
                raise
            initial["energy_scale"] = float("nan")  # unbounded scene, run unguarded
            return None
        initial["energy_scale"] = guard.bounds.energy_scale
        return guard

    def _guard(
        self, state: State, initial: dict[str, float], horizon: float | None = None
    ) -> DivergenceGuard:
        E, phi = self.formulation.maximal(state)
        masses = np.array([b.mass for b in self.scene.bodies], dtype=float)
        gravity_energy = -float(masses @ (E[:, :3, 3] @ np.asarray(self.scene.gravity)))
        force_energy = float(initial.get("potential_energy", 0.0)) - gravity_energy
        bounds = scene_bounds(self.scene, E, phi, initial, force_energy, horizon)
        return DivergenceGuard(bounds, float(initial.get("total_energy", 0.0)))

    def _make_run(
        self,
        rows: StepTable,
        recorder: TrajectoryRecorder,
        initial: dict[str, float],
        wall_start: float,
        planned: int,
        status: str,
        message: str = "",
    ) -> Run:
        columns = [m.name for m in M.STEP_METRICS]
        steps = rows.frame()
        ordered = [c for c in columns if c in steps] + [c for c in steps if c not in columns]
        steps = steps[ordered] if len(rows) else pd.DataFrame(columns=columns)
        form, model, solver = self.names
        spec = RunSpec(
            scenario=self.scene.name,
            params=dict(self.scene.params),
            formulation=form,
            model=model,
            solver=solver,
            dt=self.dt,
            duration=planned * self.dt,
            model_options=dict(self.model_options),
            formulation_options=dict(self.formulation_options),
            strict=self.strict,
        )
        return Run(
            spec=spec,
            scene=self.scene,
            steps=steps,
            trajectory=recorder.arrays(),
            initial_metrics=initial,
            wall_time_s=time.perf_counter() - wall_start,
            status=status,
            message=message,
            defaults=dict(self.defaults),
        )
