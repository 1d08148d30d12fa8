"""Sweep runs made as batches: grid points that differ only in their scene's parameters.

Runs of one scenario with the same formulation, model, solver, step size, duration,
options and strictness, whose set-up is the compiled pile step (box friction by ``pgs``
on free boxes, :func:`contactlab.maximal.batched_step.batch_scope`), are run together,
up to :data:`BATCH_COPIES` at a time, by one
:class:`~contactlab.maximal.batched_step.PileBatch` in the sweep's process: one compiled
call per step for all of them.  Each still gets its own results folder, written as
:func:`contactlab.experiments.runner.execute` writes it (the same files and metrics, the
same warm-up run and repeat of a run that loaded something, the same failure records);
its summary's ``experiment`` record adds ``batch_copies`` (the batch's size), and its
times are its share of the batch's (see :mod:`contactlab.maximal.batched_step`).  The
other runs are made one by one as before.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contactlab.experiments.runner import (
    RUN_ERRORS,
    TIMED_ATTEMPTS,
    WARMUP_STEPS,
    _scene,
    one_time_loads,
    write_outcome,
)
from contactlab.runspec import RunSpec, check_fits, simulator_for

#: the most runs one batch takes (its trajectories are held in memory until written)
BATCH_COPIES = 64


@dataclass
class BatchPlan:
    """The batches of a sweep's runs, the runs made one by one, and a line saying which."""

    batches: list[list[tuple[RunSpec, Path, Any]]] = field(default_factory=list)
    separate: list[tuple[RunSpec, Path]] = field(default_factory=list)
    note: str = ""


def _shared(spec: RunSpec) -> str:
    """What runs of one batch share: the spec without its scene parameters and seed."""
    d = spec.as_dict()
    d.pop("params", None)
    d.pop("seed", None)
    return json.dumps(d, sort_keys=True, default=str)


def plan_batches(todo: Sequence[tuple[RunSpec, Path]]) -> BatchPlan:
    """Group ``todo`` into batches (module docstring); the rest is made one by one."""
    from contactlab.maximal.batched_step import batch_scope

    plan = BatchPlan()
    groups: dict[str, list[tuple[RunSpec, Path]]] = {}
    for spec, folder in todo:
        groups.setdefault(_shared(spec), []).append((spec, folder))
    why: list[str] = []
    for members in groups.values():
        if len(members) < 2:
            plan.separate.extend(members)
            continue
        fit: dict[tuple[float, int], list[tuple[RunSpec, Path, Any]]] = {}
        for spec, folder in members:
            try:
                check_fits(spec)
                sim = simulator_for(spec, _scene(spec))
                reason = batch_scope(sim)
                steps = sim.n_steps(None, spec.duration)
            except RUN_ERRORS:  # made one by one, which records the failure
                plan.separate.append((spec, folder))
                continue
            if reason:
                why.append(reason)
                plan.separate.append((spec, folder))
                continue
            fit.setdefault((sim.dt, steps), []).append((spec, folder, sim))
        for runs in fit.values():
            for k in range(0, len(runs), BATCH_COPIES):
                chunk = runs[k : k + BATCH_COPIES]
                if len(chunk) > 1:
                    plan.batches.append(chunk)
                else:
                    plan.separate.extend((s, f) for s, f, _ in chunk)
    batched = sum(len(b) for b in plan.batches)
    if not batched:
        reason = why[0] if why else "no two runs differ only in their scene's parameters"
        plan.note = f"runs made one by one, not batched: {reason}"
    else:
        plan.note = (
            f"{batched} runs in {len(plan.batches)} batch{'es' * (len(plan.batches) != 1)} "
            "(one compiled call per step for all runs of a batch)"
        )
        if plan.separate:
            plan.note += f"; {len(plan.separate)} made one by one"
            if why:
                plan.note += f" ({why[0]})"
    return plan


def run_batch(
    runs: Sequence[tuple[RunSpec, Path, Any]], progress: Any
) -> list[tuple[RunSpec, str]]:
    """Make one batch and write each run's folder; the runs that did not finish, with why."""
    from contactlab.maximal.batched_step import PileBatch

    start = time.perf_counter()
    specs = [spec for spec, _, _ in runs]
    try:
        batch = PileBatch([sim for _, _, sim in runs])
        duration = specs[0].duration
        batch.runs(steps=WARMUP_STEPS)
        attempts = 0
        loaded = False
        outcomes: list[Any] = []
        while attempts < TIMED_ATTEMPTS:
            attempts += 1
            before = one_time_loads()
            try:
                outcomes = batch.runs(duration=duration)
            finally:
                loaded = one_time_loads() != before
            if not loaded:
                break
    except Exception as err:  # the whole batch broke: every run of it is unfinished
        progress.update(len(runs))
        return [(spec, f"{type(err).__name__}: {err}") for spec in specs]
    elapsed = time.perf_counter() - start
    failed: list[tuple[RunSpec, str]] = []
    walls = [_run_of(got).wall_time_s if _run_of(got) is not None else 0.0 for got in outcomes]
    whole = sum(walls) or 1.0
    for (spec, folder, _), got, wall in zip(runs, outcomes, walls, strict=True):
        run = _run_of(got)
        error, failure = "", "failed"
        if isinstance(got, RUN_ERRORS):
            error = f"{type(got).__name__}: {got}"
            failure = getattr(got, "status", "failed")
        share = elapsed * wall / whole if run is not None else elapsed / len(runs)
        try:
            write_outcome(
                spec, folder, run, error, failure, share, attempts, loaded,
                extra={"batch_copies": len(runs)},
            )  # fmt: skip
        except Exception as err:  # a run that could not be written: recorded, the others go on
            failed.append((spec, f"{type(err).__name__}: {err}"))
        progress.update(1)
    return failed


def _run_of(outcome: Any) -> Any:
    """The run of a batch outcome (a run, or an error carrying the run up to its failure)."""
    from contactlab.runs import Run

    return outcome if isinstance(outcome, Run) else getattr(outcome, "run", None)


__all__ = ["BATCH_COPIES", "BatchPlan", "plan_batches", "run_batch"]
