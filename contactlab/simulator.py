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
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

import solvers
from contactlab import metrics as M
from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.divergence import DivergenceGuard, scene_bounds
from contactlab.errors import (
    ConfigurationError,
    ContactlabError,
    IncompatibleError,
    StepFailure,
    UnknownNameError,
)
from contactlab.formulation import (
    Formulation,
    check_pairing,
    formulation_class,
    make_formulation,
)
from contactlab.models.base import ContactModel, make_model
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import Scene, State
from solvers.errors import SolverError

Array = NDArray[np.float64]
Collide = Callable[[Scene, Array], Any]

#: Most steps one run may take: beyond it a run is a mistake in ``--dt``, ``--steps`` or
#: ``--duration`` (1e7 steps of the pendulum already take hours), refused before anything
#: is allocated.
MAX_STEPS = 10_000_000
#: Largest share of the available memory a run's preallocated trajectory may take.
MEMORY_SHARE = 0.5

#: Callback run after every step; returning ``True`` stops the run early.
StepCallback = Callable[[State, "StepRecord"], "bool | None"]


@dataclass
class StepRecord:
    """What one step produced.

    index : step index from 0.
    t : time at the end of the step [s].
    h : step size [s].
    metrics : the row of ``steps.csv`` (see :data:`contactlab.metrics.STEP_METRICS`).
    problem, solution : the step problem and the model's solution.
    contacts : the contact set used by the step (``None`` without collision).
    """

    index: int
    t: float
    h: float
    metrics: dict[str, Any]
    problem: StepProblem
    solution: StepSolution
    contacts: ContactSet | None = None


@dataclass
class Run:
    """A finished (or, attached to a :class:`StepFailure`, interrupted) run.

    steps : one row per step (columns of :data:`contactlab.metrics.STEP_METRICS`).
    trajectory : ``t`` (T+1,), ``body_names`` (nb,), ``position`` (T+1, nb, 3),
        ``rotation`` (T+1, nb, 3, 3), ``twist`` (T+1, nb, 6) body-frame twists
        angular first; ``q``, ``qdot`` (T+1, nq) for reduced runs.
    initial_metrics : the formulation's state metrics at t = 0.
    status : ``"ok"`` (every step optimal), ``"inaccurate"`` (some steps
        unconverged: kept with their best iterate, see the module docstring),
        ``"stopped"`` (a callback ended it), ``"diverged"`` (the divergence
        guard stopped it) or ``"failed"``.
    """

    scene: Scene
    formulation: str
    model: str
    solver: str
    dt: float
    model_options: dict[str, Any]
    steps: pd.DataFrame
    trajectory: dict[str, NDArray[Any]]
    initial_metrics: dict[str, float]
    wall_time_s: float
    status: str
    message: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    #: the choices taken from the scene's defaults and why (empty when all were given)
    defaults: dict[str, Any] = field(default_factory=dict)
    #: options of the formulation (integrator, ...); empty for its defaults
    formulation_options: dict[str, Any] = field(default_factory=dict)
    #: whether the first unconverged step was to stop the run (``Simulator(strict=)``)
    strict: bool = False

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def duration(self) -> float:
        """Simulated time [s]."""
        t = self.trajectory["t"]
        return float(t[-1] - t[0]) if len(t) else 0.0

    def aggregates(self) -> dict[str, float | None]:
        """Run aggregates (see :func:`contactlab.metrics.aggregate`)."""
        return M.aggregate(self.steps, self.initial_metrics)

    def unconverged(self) -> dict[str, Any]:
        """The steps kept short of their tolerance: ``steps`` (count), ``by_status``,
        ``first_step`` (index or ``None``) and ``max_residual`` (``None`` without any)."""
        if not len(self.steps) or "status" not in self.steps:
            return {"steps": 0, "by_status": {}, "first_step": None, "max_residual": None}
        statuses = self.steps["status"].astype(str)
        loose = statuses.isin(M.UNCONVERGED_STATUSES).to_numpy()
        residual = None
        if loose.any() and "solver_residual" in self.steps:
            values = pd.to_numeric(self.steps["solver_residual"], errors="coerce").to_numpy()
            residual = float(np.nanmax(values[loose])) if np.isfinite(values[loose]).any() else None
        return {
            "steps": int(np.count_nonzero(loose)),
            "by_status": M.unconverged_counts(statuses),
            "first_step": int(self.steps["step"].to_numpy()[loose][0]) if loose.any() else None,
            "max_residual": residual,
        }


def _collision_function(scene: Scene) -> Collide | None:
    from contactlab.scenario import can_collide

    if not can_collide(scene):
        return None
    from contactlab.collision import collide

    return collide


def jointed_pairs(scene: Scene) -> NDArray[np.int64]:
    """Codes ``a * (nb + 1) + b`` (both orders, world = -1 -> nb) of bodies joined directly.

    Bodies connected by a joint do not collide with each other (their shapes
    usually overlap at the joint by construction), unless the scene sets
    ``Scene.collide_jointed``.  A joint to the world excludes
    nothing: a floating base on a free joint, or a pendulum swinging into the
    ground, must still touch the world's geometry.
    """
    nb = scene.n_bodies
    codes = []
    for joint in scene.joints:
        a, b = scene.body_index(joint.parent), scene.body_index(joint.child)
        if a < 0 or b < 0:
            continue
        codes += [a * (nb + 1) + b, b * (nb + 1) + a]
    return np.unique(np.array(codes, dtype=np.int64))


def excluded_pairs(scene: Scene) -> NDArray[np.int64]:
    """Codes (as :func:`jointed_pairs`) of the pairs that never collide in ``scene``.

    Bodies moving as one through attachments never collide with each other
    (nor, held in the world, with the world's shapes); bodies joined directly
    do not unless ``Scene.collide_jointed``; nor do the pairs of ``Scene.exclude_pairs``.
    """
    from contactlab.attachments import attached_pairs

    nb = scene.n_bodies
    codes = [
        (nb if a < 0 else a) * (nb + 1) + (nb if b < 0 else b)
        for p, q in attached_pairs(scene)
        for a, b in ((p, q), (q, p))
    ]
    for p, q in scene.exclude_pairs:
        a, b = nb if p is None else scene.body_index(p), nb if q is None else scene.body_index(q)
        codes += [a * (nb + 1) + b, b * (nb + 1) + a]
    joined = np.zeros(0, dtype=np.int64) if scene.collide_jointed else jointed_pairs(scene)
    return np.unique(np.concatenate([joined, np.array(codes, dtype=np.int64)]))


def drop_jointed(contacts: Any, scene: Scene, excluded: NDArray[np.int64]) -> Any:
    """``contacts`` without those between bodies joined directly (see :func:`jointed_pairs`)."""
    if contacts is None or excluded.size == 0 or not hasattr(contacts, "select"):
        return contacts
    nb = scene.n_bodies
    a = np.where(contacts.body_a < 0, nb, contacts.body_a)
    b = np.where(contacts.body_b < 0, nb, contacts.body_b)
    keep = ~np.isin(a * (nb + 1) + b, excluded)
    return contacts if keep.all() else contacts.select(keep)


def scene_contacts(scene: Scene, E: Array) -> Any:
    """The contacts a step of ``scene`` with body poses ``E`` (nb, 4, 4) works with.

    The default collision (as :class:`Simulator` uses it) less the pairs that
    never collide (:func:`excluded_pairs`, applied by :func:`drop_jointed`);
    ``None`` for a scene without collision.  Drawings of a run use it, so they
    show the contacts the simulator saw.
    """
    collide = _collision_function(scene)
    if collide is None:
        return None
    return drop_jointed(collide(scene, E), scene, excluded_pairs(scene))


def check_solver(name: str) -> None:
    """Raise a clear error if ``name`` is not a usable backend of the solver layer."""
    try:
        solvers.get_backend(name)
    except solvers.SolverNotFound as err:
        known = [row["name"] for row in solvers.backend_table()]
        if err.reason is None:
            raise UnknownNameError("solver", name, known) from err
        raise IncompatibleError(
            f"solver {name!r} is unavailable: {err.reason}; available solvers: "
            f"{', '.join(solvers.available_backends()) or 'none'}"
        ) from err


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
        self.collide = collide if collide is not None else _collision_function(scene)
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
        state = self.formulation.initial_state()
        state.check_finite()
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
        problem = self.formulation.assemble(state, h, contacts)
        track = identity.identify(problem.contacts, state.cache.get(identity.CACHE_KEY))
        problem.contact_ids, problem.contact_origin = track.ids, track.origin
        assembled = time.perf_counter()
        cache = dict(state.cache)
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
        new_state = replace(new_state, cache={**new_state.cache, **cache, **solution.cache})
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
        frame = _Recorder.frame_bytes(self.scene, self.formulation)
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
        recorder = _Recorder(self.formulation, self.scene, state, n)
        try:
            guard = self._guard(state, initial, horizon=float(state.t) + n * self.dt)
            initial["energy_scale"] = guard.bounds.energy_scale
        except ConfigurationError:
            if self.divergence_guard:
                raise
            initial["energy_scale"] = float("nan")  # unbounded scene, run unguarded
        bar = _progress_bar(n) if progress is True else None
        rows = _StepTable(n)
        status = "ok"
        # Overflow and invalid-value warnings of a blowing-up step would only
        # precede the error the finiteness check and the guard raise for it.
        try:
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                for i in range(n):
                    state, record = self.step(state, i)
                    rows.append(record.metrics)
                    recorder.add(state)
                    if self.divergence_guard:
                        contacts = record.contacts
                        if contacts is None:
                            contacts = record.problem.contacts
                        guard.check(
                            i,
                            record.t,
                            record.metrics,
                            recorder.phi[i + 1],
                            contacts,
                            E=recorder.E[i + 1],
                        )
                    if bar is not None:
                        bar.update(1)
                    elif callable(progress):
                        progress(i + 1, n)
                    if callback is not None and callback(state, record):
                        status = "stopped"
                        break
        except ContactlabError as err:  # StepFailure, StateError, DivergenceError, ...
            status = getattr(err, "status", "failed")
            err.run = self._make_run(rows, recorder, initial, wall_start, status, str(err))  # type: ignore[attr-defined]
            raise
        finally:
            if bar is not None:
                bar.close()
        message = ""
        if status == "ok" and any(r["status"] != "optimal" for r in rows):
            status = "inaccurate"
            message = self._inaccurate_message(rows)
        return self._make_run(rows, recorder, initial, wall_start, status, message)

    def _inaccurate_message(self, rows: _StepTable) -> str:
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
        rows: _StepTable,
        recorder: _Recorder,
        initial: dict[str, float],
        wall_start: float,
        status: str,
        message: str = "",
    ) -> Run:
        columns = [m.name for m in M.STEP_METRICS]
        steps = rows.frame()
        ordered = [c for c in columns if c in steps] + [c for c in steps if c not in columns]
        steps = steps[ordered] if len(rows) else pd.DataFrame(columns=columns)
        form, model, solver = self.names
        return Run(
            scene=self.scene,
            formulation=form,
            model=model,
            solver=solver,
            dt=self.dt,
            model_options=dict(self.model_options),
            steps=steps,
            trajectory=recorder.arrays(),
            initial_metrics=initial,
            wall_time_s=time.perf_counter() - wall_start,
            status=status,
            message=message,
            parameters=dict(self.scene.params),
            defaults=dict(self.defaults),
            formulation_options=dict(self.formulation_options),
            strict=self.strict,
        )


def _progress_bar(total: int) -> Any:
    from contactlab.progress import progress_bar

    return progress_bar(total, unit="step")


def run_length(
    scene: Scene,
    dt: float | None = None,
    steps: int | None = None,
    duration: float | None = None,
    frame_bytes: int | None = None,
) -> int:
    """Number of steps of a run of ``scene`` (see :meth:`Simulator.n_steps`), checked.

    ``dt`` defaults to the scene's, ``duration`` to the scene's; ``frame_bytes``
    (bytes per recorded frame) to the maximal formulation's.
    """
    h = scene.dt if dt is None else dt
    if not (isinstance(h, (int, float)) and np.isfinite(h) and h > 0):
        raise ConfigurationError(f"step size dt must be a positive number [s], got {dt!r}")
    if steps is not None and duration is not None:
        raise ConfigurationError("give either steps or duration, not both")
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ConfigurationError(f"steps must be a positive integer, got {steps!r}")
        if steps > MAX_STEPS:
            raise ConfigurationError(
                f"--steps {steps} is more than the limit of {MAX_STEPS:,} steps per run; "
                "run fewer steps or use a larger --dt"
            )
        n = int(steps)
    else:
        T = scene.duration if duration is None else duration
        if not (isinstance(T, (int, float)) and np.isfinite(T) and T > 0):
            raise ConfigurationError(f"duration must be a positive number [s], got {T!r}")
        count = T / h
        if not count <= MAX_STEPS + 0.5:
            raise ConfigurationError(
                f"a duration of {T:g} s at --dt {h:g} s is {count:.3g} steps, more than the "
                f"limit of {MAX_STEPS:,} steps per run; use a larger --dt or a shorter --duration"
            )
        n = max(1, int(round(count)))
    frame = 8 * (22 * scene.n_bodies + 1) if frame_bytes is None else frame_bytes
    need = (n + 1) * frame + n * _StepTable.ROW_BYTES
    available = _available_memory()
    if available is not None and need > MEMORY_SHARE * available:
        raise ConfigurationError(
            f"{n:,} steps of {scene.n_bodies} bodies need {need / 2**30:.3g} GiB for the "
            f"trajectory, more than {MEMORY_SHARE:.0%} of the {available / 2**30:.3g} GiB of "
            "memory available; run fewer steps (a larger --dt or a shorter --duration)"
        )
    return n


def _available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``None``: unknown on this system)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        import os

        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


class _StepTable:
    """The rows of ``steps.csv`` as columns: a float64 array per numeric metric.

    A list of one dict per step costs about 2 kB per step (the dict and a
    Python float per entry); the columns cost 8 bytes per value, grown by
    doubling, and any non-numeric value (a status) is stored once per distinct
    value.  Iterating yields each row as a dict, as the list did.
    """

    #: bytes per step of a typical row (about 30 metrics), for the memory estimate
    ROW_BYTES = 8 * 40

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = max(int(capacity), 1)
        self._n = 0
        self._numeric: dict[str, NDArray[Any]] = {}
        self._other: dict[str, list[Any]] = {}
        self._order: list[str] = []
        self._interned: dict[Any, Any] = {}
        #: numeric columns whose every value so far was an integer (kept int64)
        self._ints: set[str] = set()

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def _grow(self, column: NDArray[Any]) -> NDArray[Any]:
        bigger = np.full(max(16, 2 * column.size), np.nan)
        bigger[: column.size] = column
        return bigger

    def append(self, row: Mapping[str, Any]) -> None:
        k = self._n
        for key, value in row.items():
            if key not in self._numeric and key not in self._other:
                self._order.append(key)
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, bool
                ):
                    self._numeric[key] = np.full(max(self._capacity, k + 1), np.nan)
                    if k == 0 and isinstance(value, (int, np.integer)):
                        self._ints.add(key)
                else:
                    self._other[key] = [None] * k
            if key in self._numeric:
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, bool
                ):
                    column = self._numeric[key]
                    if k >= column.size:
                        column = self._numeric[key] = self._grow(column)
                    column[k] = value
                    if not isinstance(value, (int, np.integer)):
                        self._ints.discard(key)
                    continue
                # a value that is not a number after numbers: the column becomes a list
                column = self._numeric.pop(key)
                ints = key in self._ints
                self._ints.discard(key)
                self._other[key] = [int(x) if ints else float(x) for x in column[:k]]
            values = self._other[key]
            values.extend([None] * (k - len(values)))
            values.append(self._interned.setdefault(value, value) if _hashable(value) else value)
        for values in self._other.values():
            if len(values) < k + 1:
                values.append(None)
        if len(row) < len(self._order):
            self._ints.difference_update(key for key in self._numeric if key not in row)
        self._n = k + 1

    def column(self, key: str) -> Any:
        if key in self._numeric:
            return self._numeric[key][: self._n]
        return self._other[key][: self._n]

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        out: dict[str, Any] = {}
        for key in self._order:
            if key in self._numeric:
                x = float(self._numeric[key][i])
                out[key] = int(x) if key in self._ints else x
            else:
                out[key] = self._other[key][i]
        return out

    def __iter__(self) -> Any:
        return (self[i] for i in range(self._n))

    def frame(self) -> pd.DataFrame:
        data: dict[str, Any] = {}
        for key in self._order:
            column = self.column(key)
            if key in self._ints:
                column = column.astype(np.int64)
            data[key] = column.copy() if isinstance(column, np.ndarray) else list(column)
        return pd.DataFrame(data)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


class _Recorder:
    """Preallocated trajectory arrays filled frame by frame."""

    @staticmethod
    def frame_bytes(scene: Scene, formulation: Formulation) -> int:
        """Bytes of one frame (the body transforms and twists, and q, qdot if reduced)."""
        nq = int(getattr(getattr(formulation, "tree", None), "nq", 0) or 0)
        return 8 * (scene.n_bodies * (16 + 6) + 2 * nq + 1)

    def __init__(self, formulation: Formulation, scene: Scene, state: State, n: int) -> None:
        self.formulation = formulation
        nb = scene.n_bodies
        self.names = np.array([b.name for b in scene.bodies], dtype=str)
        self.t = np.zeros(n + 1)
        self.E = np.zeros((n + 1, nb, 4, 4))
        self.phi = np.zeros((n + 1, nb, 6))
        self.q = None if state.q is None else np.zeros((n + 1, np.size(state.q)))
        self.qdot = None if state.qdot is None else np.zeros((n + 1, np.size(state.qdot)))
        self.count = 0
        self.add(state)

    def add(self, state: State) -> None:
        k = self.count
        E, phi = self.formulation.maximal(state)
        self.t[k] = state.t
        self.E[k] = E
        self.phi[k] = phi
        if self.q is not None and state.q is not None:
            self.q[k] = np.ravel(state.q)
        if self.qdot is not None and state.qdot is not None:
            self.qdot[k] = np.ravel(state.qdot)
        self.count += 1

    def arrays(self) -> dict[str, NDArray[Any]]:
        k = self.count
        out: dict[str, NDArray[Any]] = {
            "t": self.t[:k].copy(),
            "body_names": self.names,
            "position": self.E[:k, :, :3, 3].copy(),
            "rotation": self.E[:k, :, :3, :3].copy(),
            "twist": self.phi[:k].copy(),
        }
        if self.q is not None:
            out["q"] = self.q[:k].copy()
        if self.qdot is not None:
            out["qdot"] = self.qdot[:k].copy()
        return out
