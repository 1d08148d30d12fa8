"""Execute one :class:`~contactlab.runspec.RunSpec` into a results folder.

This is the code path of ``contactlab run``: the scene is built from the
registered scenario, stepped by :class:`contactlab.simulator.Simulator` and
written by :mod:`contactlab.results`.  Two things are added for experiments:

* the spec, its hash and the code version go into ``summary.json`` (key
  ``"experiment"``), so a sweep can tell a finished run of the same code from
  a different or stale one in the same folder (:func:`stale_reason`);
* the folder appears atomically: everything is written into a hidden
  temporary sibling and renamed into place, so an interrupted sweep leaves
  either a complete run or nothing.

A run that fails in a way the framework reports (a solver failure, a
diverged state, an incompatible model/solver) is a *result*: a folder is
still written, with ``status`` ``"failed"`` (``"diverged"`` when the
divergence guard stopped it) and the error message, so a
sweep records it and does not retry it.  Any other exception propagates and
leaves no folder.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contactlab.errors import (
    ContactlabError,
)
from contactlab.runspec import RunSpec, check_fits, simulator_for
from solvers.errors import SolverError

SUMMARY = "summary.json"
#: steps of the discarded warm-up run that precedes every run, so that one-time
#: costs (imports, JIT compilation, first-call set-up) are not timed
WARMUP_STEPS = 2
#: how often a run is made at most: a run during which something was loaded for the
#: first time (:func:`one_time_loads`) is made again and the repeat is timed
TIMED_ATTEMPTS = 2
#: step statuses counted as a successful step
SUCCESS_STATUSES = frozenset({"optimal"})

#: errors a run reports as its outcome instead of aborting the experiment
RUN_ERRORS: tuple[type[BaseException], ...] = (ContactlabError, SolverError)


@dataclass(frozen=True)
class RunOutcome:
    """Where a run was written and how it ended."""

    spec: RunSpec
    folder: Path
    status: str
    wall_time_s: float
    error: str = ""


def read_summary(folder: Path) -> dict[str, Any] | None:
    """The parsed ``summary.json`` of ``folder``, or ``None`` if absent or unreadable."""
    path = Path(folder) / SUMMARY
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def recorded_hash(folder: Path) -> str | None:
    """The spec hash recorded in ``folder``'s summary, or ``None``."""
    summary = read_summary(folder)
    if not summary:
        return None
    return (summary.get("experiment") or {}).get("spec_hash")


def stale_reason(spec: RunSpec, folder: Path) -> str | None:
    """Why the run in ``folder`` cannot stand for ``spec`` now, or ``None`` if it can.

    A run is reusable when its summary records the same spec hash and the
    same code version (:func:`contactlab.codeversion.code_version`).
    """
    from contactlab.codeversion import code_version

    summary = read_summary(folder)
    if not summary:
        return "not run yet"
    experiment = summary.get("experiment") or {}
    if experiment.get("spec_hash") != spec.digest():
        return "its specification changed"
    if experiment.get("code_version") != code_version():
        return "the code changed since it was made"
    return None


def one_time_loads() -> tuple[int, int, int]:
    """Counters that grow when the process loads something once: kernel signatures
    compiled or loaded from the cache, entries into numba's compiler (generated
    kernels included), and imported modules.

    A run during which they grow paid a one-time cost (kernel loading happens at
    the first step that needs a kernel, which may be late in a run: the first
    contact, the first sliding contact); :func:`execute` makes such a run again.
    """
    import sys

    from solvers.jit import compiled_signatures, compiler_activity

    return compiled_signatures(), compiler_activity(), len(sys.modules)


def _scene(spec: RunSpec) -> Any:
    from contactlab.scenario import get_scenario

    scenario = get_scenario(spec.scenario)
    params = dict(spec.params)
    if "seed" in scenario.parameters and "seed" not in params:
        params["seed"] = spec.seed
    return scenario.build(**params)


def execute(spec: RunSpec, folder: Path | str, plots: bool = False) -> RunOutcome:
    """Run ``spec`` and write its results folder ``folder`` atomically (replacing any).

    The timed run is preceded by a discarded run of :data:`WARMUP_STEPS` steps, and a
    run that completes after loading something for the first time (a kernel first
    needed late in the run, a module imported) is made again and the repeat is kept
    (at most :data:`TIMED_ATTEMPTS` runs; a deterministic run gives the same steps),
    so that its times exclude one-time loading.  ``summary.json``'s ``experiment``
    records ``wall_time_s`` (the kept run's own wall time), ``elapsed_s`` (the whole
    call), ``timed_attempts`` and ``one_time_loading`` (whether the kept run still
    loaded something: then its times include it).

    The run is written by :func:`contactlab.results.write_run` with the
    experiment record (spec, spec hash, wall time) added to ``summary.json``.
    A run the framework reports as failed is written too (see the module
    docstring); any other exception propagates and leaves ``folder`` as it was.
    """
    from contactlab.simulator import Simulator

    folder = Path(folder)
    start = time.perf_counter()
    run = None
    error = ""
    failure = "failed"
    attempts = 0
    loaded = False

    def simulator() -> Simulator:
        return simulator_for(spec, scene)

    try:
        check_fits(spec)
        scene = _scene(spec)
        simulator().run(steps=WARMUP_STEPS)
        while attempts < TIMED_ATTEMPTS:
            sim = simulator()
            attempts += 1
            before = one_time_loads()
            try:
                run = sim.run(duration=spec.duration)
            finally:
                loaded = one_time_loads() != before
            if not loaded:
                break
    except RUN_ERRORS as err:
        run = getattr(err, "run", None)
        error = f"{type(err).__name__}: {err}"
        failure = getattr(err, "status", "failed")
    elapsed = time.perf_counter() - start
    return write_outcome(spec, folder, run, error, failure, elapsed, attempts, loaded, plots)


def write_outcome(
    spec: RunSpec,
    folder: Path,
    run: Any,
    error: str,
    failure: str,
    elapsed: float,
    attempts: int,
    loaded: bool,
    plots: bool = False,
    extra: dict[str, Any] | None = None,
) -> RunOutcome:
    """Write the results folder of ``spec``'s run (``None`` when it failed before a step)
    as :func:`execute` does; ``extra`` adds keys to the summary's ``experiment`` record."""
    from contactlab.codeversion import code_version
    from contactlab.results import atomic_folder, jsonable, write_run

    wall = float(run.wall_time_s) if run is not None else elapsed
    record = {
        "experiment": {
            "spec": spec.as_dict(),
            "spec_hash": spec.digest(),
            "code_version": code_version(),
            "wall_time_s": wall,
            "elapsed_s": elapsed,
            "timed_attempts": attempts,
            "one_time_loading": loaded,
            "error": error,
            **(extra or {}),
        }
    }
    if run is not None:
        write_run(run, folder, overwrite=True, plots=plots, extra=record)
        status = failure if error else run.status
    else:
        status = "failed"
        summary = {
            "scenario": spec.scenario,
            "parameters": dict(spec.params),
            "formulation": spec.formulation,
            "model": spec.model,
            "solver": spec.solver,
            "model_options": dict(spec.model_options),
            "dt": spec.dt,
            "status": status,
            "message": error,
            **record,
        }
        with atomic_folder(folder, overwrite=True) as tmp:
            (tmp / SUMMARY).write_text(json.dumps(jsonable(summary), indent=2) + "\n")
    return RunOutcome(spec, folder, status, wall, error)


def clean_temporaries(root: Path | str) -> int:
    """Remove temporary folders left under ``root`` by runs whose process is gone.

    Those of live processes (another sweep's runs in flight) are never touched
    (see :func:`contactlab.results.clean_stale_temporaries`).
    """
    from contactlab.results import clean_stale_temporaries

    return clean_stale_temporaries(root)
