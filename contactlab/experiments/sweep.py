"""``sweep``: run a grid of experiments in parallel, resumably, and aggregate per solver.

Execution
    Local worker processes by default (:class:`concurrent.futures.ProcessPoolExecutor`,
    nothing to set up); with ``scheduler="tcp://host:8786"`` the same tasks
    go to an existing Dask distributed cluster (:class:`dask.distributed.Client`),
    otherwise unchanged: the workers write the run folders themselves, so they
    need contactlab installed and the output folder on a shared file system.
    ``workers=1`` runs in this process.

Batches
    Runs that differ only in their scene's parameters (seeds, friction, sizes) and whose
    set-up is the compiled pile step (box friction by ``pgs`` on free boxes) run together
    in this process, one compiled call per step for up to 64 of them
    (:mod:`contactlab.experiments.batched`); each keeps its own folder, files and metrics.
    One line says how many runs were batched, or why none were.

Resuming
    Each run writes into ``OUT/runs/<scenario>-<formulation>-<model>-<solver>-<hash>``
    atomically (:func:`contactlab.experiments.runner.execute`).  A folder that
    exists and records the same spec hash and code version in ``summary.json``
    is reused (announced with the count and the reason), so re-running an
    interrupted sweep completes only the missing runs, and a change to the
    sources re-runs every run (``fresh=True`` re-runs them regardless).

Outputs (``OUT/``)
    ``sweep.parquet`` and ``sweep.csv`` (one row per run, spec columns then the
    metrics of :mod:`contactlab.experiments.run_table`), ``aggregates.csv`` and
    ``aggregates.md`` (qpbenchmark-style: success rate and the shifted geometric
    mean of total solver time [ms], shift 10, relative to the best), ``skipped.csv``,
    ``sweep.json`` (settings and counts) and ``plots/performance_profile.png``.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from contactlab.errors import ConfigurationError, ResultsError
from contactlab.experiments.aggregate import solver_table
from contactlab.experiments.batched import BatchPlan, plan_batches, run_batch
from contactlab.experiments.grid import SPEC_COLUMNS, Grid, load_grid
from contactlab.experiments.loading import load_run_folder
from contactlab.experiments.run_table import METRIC_COLUMNS, markdown_table, run_metrics
from contactlab.experiments.runner import (
    WARMUP_STEPS,
    clean_temporaries,
    execute,
    stale_reason,
)
from contactlab.progress import progress_bar
from contactlab.runspec import RunSpec

TIME_COLUMNS = ("solve_time_median_ms", "solve_time_p90_ms", "solve_time_ms", "wall_time_s")


@dataclass
class SweepResult:
    """Counts of a sweep call and where its outputs are.

    ``executed`` runs were made now, ``reused`` were found finished on disk,
    ``incomplete`` lists ``(spec, error)`` for runs that raised or whose
    worker died; re-running the sweep completes exactly those.
    """

    folder: Path
    table: pd.DataFrame
    aggregates: pd.DataFrame | None
    executed: int
    reused: int
    incomplete: list[tuple[RunSpec, str]] = field(default_factory=list)
    #: why runs were (re-)made: reason -> count
    reasons: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.incomplete


def _run_task(spec_dict: dict[str, Any], folder: str) -> dict[str, Any]:
    """Worker entry point: plain data in, plain data out (picklable for every executor)."""
    outcome = execute(RunSpec.from_dict(spec_dict), Path(folder))
    return {"folder": str(outcome.folder), "status": outcome.status, "error": outcome.error}


def _spec_row(spec: RunSpec) -> dict[str, Any]:
    d = spec.as_dict()
    row = {k: d.get(k) for k in SPEC_COLUMNS}
    row["params"] = json.dumps(d["params"], sort_keys=True)
    row["model_options"] = json.dumps(d["model_options"], sort_keys=True)
    row["formulation_options"] = json.dumps(d.get("formulation_options", {}), sort_keys=True)
    for key, value in d.get("formulation_options", {}).items():
        row[f"formulation.{key}"] = value if not isinstance(value, list) else json.dumps(value)
    for key, value in d["params"].items():
        row[f"param.{key}"] = value if not isinstance(value, list) else json.dumps(value)
    for key, value in d["model_options"].items():
        row[f"option.{key}"] = value if not isinstance(value, list) else json.dumps(value)
    return row


def _execute_all(
    todo: list[tuple[RunSpec, Path]],
    scheduler: str | None,
    workers: int | None,
    progress: Any,
) -> list[tuple[RunSpec, str]]:
    """Run ``todo``; return the runs that did not finish, with the reason."""
    failed: list[tuple[RunSpec, str]] = []

    def finish(spec: RunSpec, call: Callable[[], Any]) -> None:
        try:
            call()
        except Exception as err:  # a crashed run or worker: record it, keep the others
            failed.append((spec, f"{type(err).__name__}: {err}"))
        progress.update(1)

    if not todo:
        return failed
    if scheduler is not None:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed

        with Client(scheduler) as client:
            futures = {
                client.submit(
                    _run_task,
                    spec.as_dict(),
                    str(folder),
                    pure=False,
                    # readable task names; the random part keeps a rerun from reusing a
                    # result the cluster still holds under the same name
                    key=f"contactlab-run-{spec.digest()[:12]}-{uuid.uuid4().hex[:8]}",
                ): spec
                for spec, folder in todo
            }
            for future in dask_completed(futures):
                finish(futures[future], future.result)
        return failed
    n = workers or os.cpu_count() or 1
    if n == 1:
        for spec, folder in todo:
            finish(spec, partial(_run_task, spec.as_dict(), str(folder)))
        return failed
    pool = ProcessPoolExecutor(
        max_workers=min(n, len(todo)), initializer=_follow_parent, initargs=(os.getpid(),)
    )
    try:
        pending = {
            pool.submit(_run_task, spec.as_dict(), str(folder)): spec for spec, folder in todo
        }
        for future in as_completed(pending):
            finish(pending[future], future.result)
    except BaseException:
        # Ctrl-C: the workers got it too; drop the queued runs, let the running ones clean up
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    return failed


#: how often a worker checks that the sweep that started it is alive [s]
PARENT_POLL_S = 0.2


def _follow_parent(parent: int) -> None:
    """Worker initializer: end this worker when the sweep process that started it dies.

    A SIGKILL of the sweep gives its workers no signal; without this they
    would finish (or hang on) their runs as orphans.  A worker that ends this
    way leaves at most a temporary folder, which the next sweep removes.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()


def gather(grid: Grid, known: Mapping[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """The table of every finished run of ``grid`` (in grid order), read from disk.

    ``known``: the metrics (:func:`run_metrics`) of runs already read, by folder name
    (a resumed sweep's reused runs, :func:`_reused_metrics`); those folders are not read
    again.
    """
    known = known or {}
    rows = []
    for spec in grid.runs:
        folder = grid.out / "runs" / spec.folder_name()
        if stale_reason(spec, folder) is not None:
            continue
        row = _spec_row(spec)
        metrics = known.get(spec.folder_name())
        row.update(run_metrics(load_run_folder(folder)) if metrics is None else metrics)
        row["spec_hash"] = spec.digest()
        row["folder"] = f"runs/{spec.folder_name()}"
        rows.append(row)
    return pd.DataFrame(rows)


def write_outputs(
    grid: Grid,
    table: pd.DataFrame,
    incomplete: Iterable[tuple[RunSpec, str]],
    plots: bool = True,
) -> pd.DataFrame | None:
    """Write the tables, aggregates, metadata and (with ``plots``) the plots of a sweep.

    Returns the aggregates (``None`` without finished runs).
    """
    out = grid.out
    incomplete = list(incomplete)
    table.to_parquet(out / "sweep.parquet", index=False)
    table.to_csv(out / "sweep.csv", index=False)
    pd.DataFrame(
        grid.skipped, columns=["scenario", "formulation", "model", "solver", "reason"]
    ).to_csv(out / "skipped.csv", index=False)
    aggregates = None
    if len(table):
        aggregates = solver_table(
            table, grid.compare_by, grid.problem_columns, cost="solve_time_ms", shift=grid.shift
        )
        aggregates.to_csv(out / "aggregates.csv", index=False)
        (out / "aggregates.md").write_text(_aggregates_markdown(grid, table, aggregates))
    meta = {
        "name": grid.name,
        "description": grid.description,
        "compare_by": grid.compare_by,
        "problem_columns": grid.problem_columns,
        "shift_ms": grid.shift,
        "runs": len(grid.runs),
        "finished": len(table),
        "skipped_combinations": len(grid.skipped),
        "incomplete": [{"spec": s.as_dict(), "error": e} for s, e in incomplete],
    }
    (out / "sweep.json").write_text(json.dumps(meta, indent=2, default=str))
    if aggregates is not None and plots:
        from contactlab.experiments.plots import plot_sweep

        plot_sweep(out)
    return aggregates


def _aggregates_markdown(grid: Grid, table: pd.DataFrame, aggregates: pd.DataFrame) -> str:
    cols = grid.compare_by + ["n_problems", "success_rate", "shifted_gm_rel", "shifted_gm"]
    if "mean_iterations" in aggregates:
        cols.append("mean_iterations")
    shown = aggregates.rename(columns={"shifted_gm": "shifted_gm_ms"})
    cols = [c if c != "shifted_gm" else "shifted_gm_ms" for c in cols]
    lines = [
        f"# Sweep {grid.name}".rstrip(),
        "",
        f"{len(table)} runs; compared by {', '.join(grid.compare_by)}; a problem is one value "
        f"of ({', '.join(grid.problem_columns)}).",
        "",
        "Success: the run completed and every step's solver status was `optimal`. Time: the "
        "run's total solver time [ms], without one-time loading (each run follows a discarded "
        f"{WARMUP_STEPS}-step run, and a run that compiled or loaded a kernel or imported a "
        "module is made again and the repeat timed); shifted geometric mean with shift "
        f"{grid.shift:g} ms, "
        "failures charged ten times the slowest successful run, `shifted_gm_rel` relative to "
        "the best (1 = best). Best per column in bold, among the rows that succeeded on "
        "every problem (a row with failures is never best). The performance profile "
        "(`plots/performance_profile.png`) ranks backends within each model only, since two "
        "models pose different problems on the same scene.",
        "",
        markdown_table(shown, cols),
    ]
    return "\n".join(lines)


def sweep(
    spec_path: Path | str,
    scheduler: str | None = None,
    workers: int | None = None,
    out: Path | str | None = None,
    quiet: bool = False,
    short: bool = False,
    fresh: bool = False,
    strict: bool | None = None,
) -> SweepResult:
    """Run the sweep described by the TOML file ``spec_path`` (see :mod:`.grid`).

    Parameters
    ----------
    spec_path : the TOML specification.
    scheduler : address of a running Dask scheduler; ``None`` for local processes.
    workers : local worker processes (default: CPU count; 1 = in this process).
    out : output folder, overriding the specification's ``out``.
    quiet : no progress bar.
    short : apply the specification's ``[short]`` overrides (a quick version).
    fresh : re-run every run instead of reusing those on disk.
    strict : ``True`` stops every run at its first step that misses its tolerance (the
        run is recorded as failed), overriding the specification's ``strict`` key;
        ``None`` keeps the specification's (default ``false``).
    """
    grid = load_grid(spec_path, out, short)
    if strict is not None:
        grid.runs = [replace(spec, strict=bool(strict)) for spec in grid.runs]
    return run_grid(grid, scheduler=scheduler, workers=workers, quiet=quiet, fresh=fresh)


#: seconds to wait for a Dask scheduler to answer before calling it unreachable
SCHEDULER_TIMEOUT_S = 5.0


def check_execution(workers: int | None, scheduler: str | None) -> None:
    """Refuse a worker count below 1 or a scheduler address nothing answers at."""
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ConfigurationError(
            f"--workers must be a positive number of processes, got {workers} (1 runs in this "
            "process; leave it out for one per CPU)"
        )
    if scheduler is None:
        return
    import socket
    from urllib.parse import urlsplit

    address = scheduler if "://" in scheduler else f"tcp://{scheduler}"
    parts = urlsplit(address)
    try:
        host, port = parts.hostname, parts.port or 8786
    except ValueError as err:
        raise ConfigurationError(
            f"--scheduler {scheduler!r} is not an address ({err}); give tcp://HOST:PORT"
        ) from err
    network = parts.scheme in ("tcp", "tls")
    if network and not host:
        raise ConfigurationError(
            f"--scheduler {scheduler!r} is not an address; give tcp://HOST:PORT"
        )
    try:
        if network:  # a quick refusal when nothing listens
            with socket.create_connection((host, port), timeout=SCHEDULER_TIMEOUT_S):
                pass
        # something answers: it must speak Dask (a proxy or another service may accept too)
        from dask.distributed import Client

        with Client(address, timeout=SCHEDULER_TIMEOUT_S):
            pass
    except ImportError as err:
        raise ConfigurationError(
            f"--scheduler needs dask.distributed, which is not installed ({err}); pip install "
            "'dask[distributed]' or leave --scheduler out"
        ) from err
    except Exception as err:  # OSError, TimeoutError, or a garbled reply (MemoryError)
        if isinstance(err, OSError) and not isinstance(err, TimeoutError):
            reason = " ".join((err.strerror or str(err)).split())
        elif isinstance(err, (TimeoutError, OSError)):
            reason = f"no reply within {SCHEDULER_TIMEOUT_S:g} s"
        else:
            reason = f"it answers, but not as a Dask scheduler ({type(err).__name__})"
        raise ConfigurationError(
            f"no Dask scheduler answers at --scheduler {scheduler!r} ({reason}); start one "
            "(`dask scheduler`) or leave --scheduler out to run local processes"
        ) from err


def run_grid(
    grid: Grid,
    scheduler: str | None = None,
    workers: int | None = None,
    quiet: bool = False,
    fresh: bool = False,
) -> SweepResult:
    """Execute an expanded grid (see :func:`sweep`); ``fresh`` re-runs every run.

    The output folder is locked for the whole call (see :mod:`contactlab.locks`):
    a second sweep into it stops at once with one line naming the holder.

    Raises
    ------
    ResultsError
        When the output folder cannot be written or another sweep holds it.
    KeyboardInterrupt
        On Ctrl-C, with a message saying how many finished runs are kept.
    """
    from contactlab.locks import folder_lock
    from contactlab.results import check_writable

    check_execution(workers, scheduler)
    check_writable(grid.out)
    with folder_lock(grid.out):
        return _run_locked(grid, scheduler, workers, quiet, fresh)


def _run_locked(
    grid: Grid, scheduler: str | None, workers: int | None, quiet: bool, fresh: bool
) -> SweepResult:
    runs_dir = grid.out / "runs"
    _check_layout(grid, runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    # leftovers of runs whose process died (those of live processes are left alone)
    clean_temporaries(runs_dir)
    todo = []
    reasons: dict[str, int] = {}
    known: dict[str, dict[str, Any]] = {}  # the metrics of the reused runs, read once
    for spec in grid.runs:
        folder = runs_dir / spec.folder_name()
        reason = "--fresh asks for it" if fresh else stale_reason(spec, folder)
        if reason is None:
            metrics = _reused_metrics(folder)
            if metrics is None:
                reason = "its files are damaged"
            else:
                known[spec.folder_name()] = metrics
        if reason is not None:
            todo.append((spec, folder))
            reasons[reason] = reasons.get(reason, 0) + 1
    reused = len(grid.runs) - len(todo)
    name = grid.name or grid.out.name
    if not quiet:
        print(reuse_line(name, reused, reasons), file=sys.stderr)
    plan = BatchPlan(separate=todo)
    if scheduler is None and len(todo) > 1:
        plan = plan_batches(todo)
    elif len(todo) > 1:
        plan.note = "runs made one by one, not batched: they go to the Dask cluster"
    if not quiet and plan.note:
        print(f"sweep {name}: {plan.note}", file=sys.stderr)
    with progress_bar(
        len(grid.runs),
        desc=f"sweep {grid.name or grid.out.name}",
        unit="run",
        initial=reused,
        disable=quiet,
    ) as progress:
        try:
            incomplete = []
            for batch in plan.batches:
                incomplete += run_batch(batch, progress)
            incomplete += _execute_all(plan.separate, scheduler, workers, progress)
        except KeyboardInterrupt:
            kept = len(gather(grid, known))
            raise KeyboardInterrupt(
                f"interrupted; {kept} of {len(grid.runs)} runs are finished and kept in "
                f"{str(runs_dir)!r} (no tables were written); run the same command again to "
                "finish the others"
            ) from None
        finally:
            # a worker killed while writing leaves its temporary folder; the pool
            # has shut down here, so such folders are stale and are removed
            clean_temporaries(runs_dir)
    table = gather(grid, known)
    replot = bool(todo) or not (grid.out / "plots" / "performance_profile.png").exists()
    aggregates = write_outputs(grid, table, incomplete, plots=replot)
    return SweepResult(
        grid.out, table, aggregates, len(todo) - len(incomplete), reused, incomplete, reasons
    )


#: the files a sweep writes next to ``runs/`` (see :func:`write_outputs`)
_TABLES = ("sweep.parquet", "sweep.csv", "skipped.csv", "aggregates.csv", "aggregates.md")


def _check_layout(grid: Grid, runs_dir: Path) -> None:
    """Refuse, before any run, a file where the sweep keeps a folder and the reverse."""
    folders = {runs_dir: "its run folders", grid.out / "plots": "its plots"}
    folders.update({runs_dir / spec.folder_name(): "a run's folder" for spec in grid.runs})
    for path, what in folders.items():
        if path.exists() and not path.is_dir():
            raise ResultsError(
                f"{str(path)!r} is a file where the sweep keeps {what}; remove it or choose "
                "another --out"
            )
    for name in (*_TABLES, "sweep.json"):
        if (grid.out / name).is_dir():
            raise ResultsError(
                f"{str(grid.out / name)!r} is a folder where the sweep writes a table; remove it "
                "or choose another --out"
            )


def _reused_metrics(folder: Path) -> dict[str, Any] | None:
    """The table metrics of a finished run, read from its folder once; ``None`` when its
    files no longer load (the run is then made again)."""
    try:
        run = load_run_folder(folder)
    except (ResultsError, ConfigurationError):
        return None
    return run_metrics(run)


def reuse_line(name: str, reused: int, reasons: dict[str, int], kind: str = "sweep") -> str:
    """One line saying how many runs are reused and why the others run."""
    from contactlab.codeversion import code_version

    parts = []
    if reused:
        parts.append(
            f"{reused} run{'s' * (reused != 1)} reused (same specification and code "
            f"version {code_version()}; --fresh recomputes them)"
        )
    for reason, count in sorted(reasons.items()):
        parts.append(f"{count} to run ({reason})")
    return f"{kind} {name}: " + (", ".join(parts) or "nothing to run")


def comparable(table: pd.DataFrame) -> pd.DataFrame:
    """The table without wall-clock columns (which differ between otherwise equal runs)."""
    return table.drop(columns=[c for c in TIME_COLUMNS if c in table]).reset_index(drop=True)


__all__ = ["METRIC_COLUMNS", "SweepResult", "comparable", "gather", "run_grid", "sweep"]
