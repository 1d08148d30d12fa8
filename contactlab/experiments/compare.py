"""``compare``: one scenario, every combination of formulation × model × solver that fits.

Each combination runs through the same code path as ``contactlab run``
(:func:`contactlab.experiments.runner.execute`) into its own folder
``OUT/runs/<formulation>-<model>-<solver>/``.  Then

* ``comparison.csv`` — one row per combination that was run (the columns of
  :mod:`contactlab.experiments.run_table`);
* ``comparison.md`` — the same as a readable table, the best value per
  column in bold, followed by the combinations that do not fit and why;
* ``skipped.csv`` — the combinations that do not fit, with the reason;
* ``plots/`` — solve time per step, energy, penetration, drift and
  iterations, one line per combination.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from dataclasses import replace as replace_spec
from pathlib import Path
from typing import Any

import pandas as pd

from contactlab.errors import (
    ConfigurationError,
    IncompatibleError,
    ResultsError,
    UnknownNameError,
)
from contactlab.experiments.loading import load_run_folder
from contactlab.experiments.run_table import (
    ENERGY_COLUMNS,
    FAILED_STATUSES,
    METRIC_COLUMNS,
    markdown_table,
    rankable,
    run_metrics,
)
from contactlab.experiments.runner import WARMUP_STEPS, execute, stale_reason
from contactlab.progress import progress_bar
from contactlab.runspec import RunSpec, as_spec, check_fits, check_names

KEY_COLUMNS = ["formulation", "model", "solver"]
MD_COLUMNS = KEY_COLUMNS + [
    "status",
    "step_success_rate",
    "unconverged_steps",
    "steps",
    "solve_time_median_ms",
    "solve_time_p90_ms",
    "wall_time_s",
    "iterations_mean",
    "max_penetration",
    "max_drift",
    "energy_drift",
    "max_cone_violation",
    "max_dissipation_violation",
]


@dataclass
class Comparison:
    """What :func:`compare` produced: the table, the skipped combinations, the folder."""

    folder: Path
    table: pd.DataFrame
    skipped: pd.DataFrame
    #: runs taken over from the comparison being replaced (same specification and code)
    reused: int = 0


def _names(
    value: str | Sequence[str] | None, default: Sequence[str], option: str = "names"
) -> list[str]:
    if value is None:
        return list(default)
    if isinstance(value, str):
        value = value.split(",")
    names = [v.strip() for v in value if v.strip()]
    if not names:
        raise ConfigurationError(
            f"{option}: an empty list of names was given; name at least one"
            " (comma-separated, see `contactlab list`)"
        )
    return names


def compare(
    scenario: RunSpec | str,
    solvers: str | Sequence[str],
    models: str | Sequence[str] | None = None,
    formulations: str | Sequence[str] | None = None,
    set: Mapping[str, Any] | None = None,  # noqa: A002  (mirrors the --set option)
    *,
    out: Path | str | None = None,
    quiet: bool = False,
    run_plots: bool = False,
    force: bool = False,
    fresh: bool = False,
    **given: Any,
) -> Comparison:
    """Run every fitting combination on ``scenario`` and write the comparison into ``out``.

    Parameters
    ----------
    scenario : the :class:`RunSpec` every combination shares (scenario, parameters,
        step size, duration, model and formulation options, strictness), or a
        scenario name with the parameters ``set`` and the spec's fields ``given``
        (``dt=``, ``duration=``, ``model_options=``, ``formulation_options=``,
        ``strict=``; :func:`contactlab.runspec.as_spec`).  Each combination is this
        spec with its formulation, model and solver.
    solvers : backend names (list or comma-separated string).
    models : contact model names; default the spec's model, else every registered model.
    formulations : default the spec's formulation, else those the scenario supports.
    set : scenario parameters (strings are parsed like ``--set KEY=VALUE``).
    out : output folder; default ``results/scratch/compare-<scenario>-<time>``.
    quiet : no progress bar.
    run_plots : also draw each run's own plots (``contactlab plot`` draws them later).
    force : replace an existing comparison folder ``out``.  A run of the comparison
        being replaced whose specification and code version are unchanged is
        reused (copied), not recomputed; the count is announced on stderr.
    fresh : recompute every run even when it could be reused.

    The spec's ``formulation_options`` are checked before the first run: a
    formulation given in ``formulations`` that does not take them is an error; one
    of the scenario's (the default list) is listed as not fitting, unless none takes
    them.  With ``strict`` a run stops (and is recorded as failed) at its first step
    that misses its tolerance; by default such steps are kept and counted in the
    ``unconverged_steps`` column.

    The folder appears whole or not at all: everything is written into a
    temporary sibling that is renamed into place after the last run (an
    interruption leaves ``out`` as it was).  Every name is checked and the
    destination tested for writing before the first run.

    Raises
    ------
    UnknownNameError
        For a solver, model or formulation name that does not exist.
    IncompatibleError
        When no combination fits (the reasons are listed).
    ResultsError
        When ``out`` exists (without ``force``), is not a comparison folder,
        or cannot be written.
    """
    from contactlab.models.base import model_names
    from contactlab.results import (
        atomic_folder,
        check_name_length,
        check_target,
        check_writable,
    )
    from contactlab.scenario import conserves_energy, get_scenario

    base = as_spec(scenario, set, **given)
    scenario = base.scenario
    dt, duration = base.dt, base.duration
    sc = get_scenario(scenario)
    params = sc.resolve(base.params)
    solver_list = _names(solvers, [base.solver] if base.solver else [], "--solvers")
    model_list = _names(models, [base.model] if base.model else model_names(), "--models")
    form_list = _names(
        formulations, [base.formulation] if base.formulation else sc.formulations, "--formulations"
    )
    check_names(solver_list, model_list, form_list)
    form_options = dict(base.formulation_options)
    # the scenario's formulations that do not take the options, with the reason
    refused: dict[str, ConfigurationError | UnknownNameError] = {}
    if form_options:
        from contactlab.formulation import formulation_class

        for form in form_list:
            try:
                formulation_class(form).check_options(form_options)
            except (ConfigurationError, UnknownNameError) as err:
                if formulations is not None:
                    raise
                refused[form] = err
        if len(refused) == len(form_list):
            raise next(iter(refused.values()))
    folder = (
        Path(out)
        if out
        else Path("results/scratch") / (f"compare-{scenario}-{time.strftime('%Y%m%d-%H%M%S')}")
    )
    check_name_length(folder)
    # an existing empty folder (made ready for the output) counts as free
    replace = force or (folder.is_dir() and not any(folder.iterdir()))
    check_target(folder, replace)
    if folder.is_dir() and any(folder.iterdir()) and not (folder / "comparison.csv").is_file():
        raise ResultsError(
            f"--out {str(folder)!r} is not a comparison folder (no comparison.csv); --force "
            "replaces only a comparison; choose another --out"
        )
    check_writable(folder)

    fitting: list[RunSpec] = []
    skipped: list[dict[str, str]] = []
    for form, model, solver in itertools.product(form_list, model_list, solver_list):
        if form in refused:
            why_not = str(refused[form])
            skipped.append(
                {"formulation": form, "model": model, "solver": solver, "reason": why_not}
            )
            continue
        spec = replace_spec(
            base,
            params=params,
            formulation=form,
            model=model,
            solver=solver,
            model_options=dict(base.model_options),
            formulation_options=form_options,
        )
        try:
            check_fits(spec)
        except (IncompatibleError, UnknownNameError) as err:
            skipped.append(
                {"formulation": form, "model": model, "solver": solver, "reason": str(err)}
            )
            continue
        fitting.append(spec)
    if not fitting:
        reasons = "; ".join(
            f"{r['formulation']}/{r['model']}/{r['solver']}: {r['reason']}" for r in skipped[:3]
        )
        more = f" (and {len(skipped) - 3} more)" if len(skipped) > 3 else ""
        raise IncompatibleError(
            f"no combination of the given solvers, models and formulations fits scenario "
            f"{scenario!r}: {reasons}{more}; choose other --solvers or --models"
        )

    from contactlab.experiments.plots import plot_comparison
    from contactlab.experiments.sweep import reuse_line

    # the run length and its memory, checked before any run (the same for every run)
    from contactlab.trajectory import run_length

    run_length(sc.build(**params), dt, None, duration)
    skipped_df = pd.DataFrame(skipped, columns=KEY_COLUMNS + ["reason"])
    earlier = folder / "runs" if (folder / "comparison.csv").is_file() else None
    plan = []
    why: dict[str, int] = {}
    for spec in fitting:
        name = f"{spec.formulation}-{spec.model}-{spec.solver}".replace(":", "_")
        previous = None if earlier is None else earlier / name
        if fresh:
            reason: str | None = "--fresh asks for it"
        else:
            reason = "not run yet" if previous is None else stale_reason(spec, previous)
        if reason is not None:
            why[reason] = why.get(reason, 0) + 1
        plan.append((spec, name, None if reason is not None else previous))
    reused = sum(1 for *_, previous in plan if previous is not None)
    if not quiet:
        print(reuse_line(folder.name, reused, why, kind="compare"), file=sys.stderr)
    interrupted = False
    with (
        atomic_folder(folder, overwrite=replace) as tmp,
        progress_bar(len(plan), desc=f"compare {scenario}", unit="run", disable=quiet) as bar,
    ):
        rows = []
        try:
            for spec, name, previous in plan:
                if previous is not None:
                    shutil.copytree(previous, tmp / "runs" / name)
                    run_folder = tmp / "runs" / name
                else:
                    run_folder = execute(spec, tmp / "runs" / name, plots=run_plots).folder
                row: dict[str, Any] = {
                    "formulation": spec.formulation,
                    "model": spec.model,
                    "solver": spec.solver,
                }
                row.update(run_metrics(load_run_folder(run_folder)))
                row["folder"] = f"runs/{name}"
                rows.append(row)
                bar.update(1)
        except KeyboardInterrupt:
            # Ctrl-C: keep the finished runs (a later compare reuses them), never the one cut
            if not rows:
                raise
            interrupted = True
            kept = {Path(r["folder"]).name for r in rows}
            for path in (tmp / "runs").iterdir():
                if path.name not in kept:
                    shutil.rmtree(path, ignore_errors=True)
        table = pd.DataFrame(rows, columns=KEY_COLUMNS + list(METRIC_COLUMNS) + ["folder"])
        table.to_csv(tmp / "comparison.csv", index=False)
        skipped_df.to_csv(tmp / "skipped.csv", index=False)
        scene = sc.build(**params)
        h = dt if dt is not None else scene.dt
        (tmp / "comparison.md").write_text(
            comparison_markdown(
                scenario,
                params,
                table,
                skipped_df,
                h,
                duration if duration is not None else scene.duration,
                conserves_energy=conserves_energy(scene),
                given=(dt is not None, duration is not None),
                formulation_options=form_options,
            )
        )
        plot_comparison(tmp)
    if interrupted:
        raise KeyboardInterrupt(
            f"interrupted; {len(rows)} of {len(plan)} runs are finished and kept in "
            f"{str(folder)!r} (the same command with --force reuses them and runs the others)"
        )
    return Comparison(folder, table, skipped_df, reused)


def comparison_markdown(
    scenario: str,
    params: Mapping[str, Any],
    table: pd.DataFrame,
    skipped: pd.DataFrame,
    dt: float,
    duration: float,
    conserves_energy: bool = False,
    given: tuple[bool, bool] = (True, True),
    formulation_options: Mapping[str, Any] | None = None,
) -> str:
    """The readable report: settings, the table with best values in bold, what did not fit.

    ``dt`` and ``duration`` [s] are the step size and simulated time every run
    used; ``given`` says whether each was asked for or is the scene's default.
    The energy change is ranked only when the scene ``conserves_energy``.
    """
    settings = ", ".join(f"{k}={v}" for k, v in params.items()) or "defaults"
    options = ", ".join(f"{k}={v}" for k, v in (formulation_options or {}).items())
    source = ["given" if g else "the scene's default" for g in given]
    energy = (
        "the scene conserves energy, so the energy change is a numerical error and is ranked"
        if conserves_energy
        else "the scene dissipates or receives energy (contact, friction, damping, limits, "
        "forces or prescribed motion), so the energy change is reported but not ranked"
    )
    lines = [
        f"# Comparison on `{scenario}`",
        "",
        f"Parameters: {settings}. Step size h = {dt:g} s ({source[0]}); simulated time "
        f"{duration:g} s ({source[1]})." + (f" Formulation options: {options}." if options else ""),
        "",
        "Times are per step [ms] (median and 90th percentile) and per run (wall time [s] of "
        "the timed steps); they exclude one-time loading: every run is preceded by a "
        f"discarded run of {WARMUP_STEPS} steps, and a run during which kernels were compiled "
        "or loaded, or modules imported, is run again and the repeat is timed. Best value per "
        "column in **bold**, among the runs that completed with every step `optimal` (a "
        f"failed or partly unsolved run is never best); {energy}.",
        "",
    ]
    if len(table):
        unranked = () if conserves_energy else ENERGY_COLUMNS
        lines.append(
            markdown_table(table, [c for c in MD_COLUMNS if c in table], unranked=unranked)
        )
    else:
        lines.append("No combination fits.\n")
    failed = table[table["status"].isin(FAILED_STATUSES)] if len(table) else table
    if len(failed):
        lines += ["", "## Runs that failed", ""]
        lines += [
            f"- {r.formulation}/{r.model}/{r.solver}: {r.message}" for r in failed.itertuples()
        ]
    unsolved = (
        table[~table["status"].isin(FAILED_STATUSES) & ~rankable(table)] if len(table) else table
    )
    if len(unsolved):
        lines += ["", "## Runs that completed with unsolved steps (not ranked)", ""]
        lines += [
            f"- {r.formulation}/{r.model}/{r.solver}: {r.message or r.status}"
            for r in unsolved.itertuples()
        ]
    if len(skipped):
        lines += ["", "## Combinations that do not fit", ""]
        lines += [
            f"- {r.formulation}/{r.model}/{r.solver}: {r.reason}" for r in skipped.itertuples()
        ]
    return "\n".join(lines) + "\n"
