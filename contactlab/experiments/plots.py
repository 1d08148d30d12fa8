"""Plots of runs, comparisons and sweeps (matplotlib, Agg backend, PNG files).

:func:`plot` looks at a folder and regenerates the plots that belong to it:

* run: ``plots/`` drawn by :func:`contactlab.results.plot_run`;
* comparison: the same five, one line per combination;
* sweep: the Dolan–Moré performance profile and the success/time bars of
  the solver aggregates, plus one time-series set per scenario × model when
  the sweep is small.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import LogLocator, NullFormatter  # noqa: E402

from contactlab.experiments.aggregate import (  # noqa: E402
    cost_matrix,
    key_column,
    performance_profile,
    profile_taus,
)
from contactlab.experiments.loading import (  # noqa: E402
    folder_kind,
    load_run_folder,
    load_table,
)

#: (file stem, steps.csv column, y label, log scale)
SERIES = (
    ("solve_time", "solve_time_s", "solve time per step [s]", True),
    ("energy", "total_energy", "total energy [J]", False),
    ("penetration", "penetration", "deepest penetration [m]", False),
    ("drift", "constraint_error", "bilateral drift [m or rad]", True),
    ("iterations", "iterations", "solver iterations per step", False),
)


#: quantities drawn only when some run has a non-zero value (no empty penetration plot
#: for a scene without contact, no drift plot for one without joints)
NONZERO_ONLY = ("penetration", "drift")


def plot_series(
    runs: Mapping[str, pd.DataFrame],
    out: Path,
    title: str = "",
    initial_energy: Mapping[str, float] | None = None,
) -> list[Path]:
    """One figure per quantity of :data:`SERIES`, one line per entry of ``runs``.

    With ``initial_energy`` (``E(0)`` [J] per entry) the energy figure gains a
    second panel, ``E(t) - E(0)`` on its own scale, where a drift too small to
    see beside the energy itself shows.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, column, ylabel, log in SERIES:
        change = stem == "energy" and bool(initial_energy)
        if change:
            fig, (ax, ax_change) = plt.subplots(2, 1, figsize=(7, 6.5), sharex=True)
        else:
            fig, ax = plt.subplots(figsize=(7, 4))
        drawn = False
        for label, steps in runs.items():
            if steps.empty or column not in steps or "t" not in steps:
                continue
            y = pd.to_numeric(steps[column], errors="coerce").to_numpy(float)
            t = steps["t"].to_numpy(float)
            if log:
                y = np.where(y > 0, y, np.nan)
            if np.all(~np.isfinite(y)) or (stem in NONZERO_ONLY and not np.any(y != 0)):
                continue
            ax.plot(t, y, label=label, lw=1.2)
            if change and initial_energy is not None and label in initial_energy:
                ax_change.plot(t, y - initial_energy[label], label=label, lw=1.2)
            drawn = True
        if not drawn:
            plt.close(fig)
            continue
        if log:
            ax.set_yscale("log")
        if change:
            ax_change.axhline(0.0, color="0.5", lw=0.6)
            ax_change.set_xlabel("t [s]")
            ax_change.set_ylabel("E(t) − E(0) [J]")
            ax_change.grid(alpha=0.3)
        else:
            ax.set_xlabel("t [s]")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if len(runs) > 1:
            ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        path = out / f"{stem}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def plot_comparison(folder: Path) -> list[Path]:
    """Time-series plots of every run of a comparison, one line per combination."""
    from contactlab.errors import ResultsError

    res = load_table(folder)
    table_path = Path(folder) / "comparison.csv"
    if res.table.empty:
        raise ResultsError(
            f"{str(table_path)!r} holds no runs; run the comparison again with `contactlab "
            "compare ... --force`"
        )
    runs = {}
    initial_energy = {}
    for i, row in enumerate(res.table.itertuples()):
        label = f"{row.formulation}/{row.model}/{row.solver}"
        run_folder = Path(folder) / str(row.folder)
        if not isinstance(row.folder, str) or not (run_folder / "summary.json").is_file():
            raise ResultsError(
                f"{str(table_path)!r} row {i + 1} names the run folder {str(row.folder)!r}, "
                "which holds no run (a damaged table?); run the comparison again with "
                "`contactlab compare ... --force` (finished runs are reused)"
            )
        run = load_run_folder(run_folder)
        runs[label] = run.steps
        e0 = (run.summary.get("initial_metrics") or {}).get("total_energy")
        if e0 is not None:
            initial_energy[label] = float(e0)
    return plot_series(runs, Path(folder) / "plots", initial_energy=initial_energy)


def draw_profile(
    ax: Any,
    table: pd.DataFrame,
    solver_cols: list[str],
    problem_cols: list[str],
    cost: str = "solve_time_ms",
) -> int:
    """Draw the Dolan–Moré profile of ``cost`` on ``ax``; return the number of problems.

    The profile is drawn over the problems every solver was run on (a sweep may
    run some solvers on some scenes only); failures count as never solved.
    """
    costs = cost_matrix(table, solver_cols, problem_cols, cost=cost)
    common = costs.notna().all(axis=1)
    if common.any():
        costs = costs[common]
    values = np.where(costs.to_numpy(float) > 0, costs.to_numpy(float), 1e-12)
    taus = profile_taus(values)
    rho = performance_profile(values, taus)
    for j, name in enumerate(costs.columns):
        style = ("-", "--", ":", "-.")[(j // 10) % 4]
        ax.step(taus, rho[:, j], where="post", label=str(name), lw=1.4, ls=style)
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(r"performance ratio $\tau$ (time / best time on the problem)")
    ax.set_ylabel(r"fraction of problems solved within $\tau$")
    ax.grid(alpha=0.3, which="both")
    return len(costs)


def plot_profile(
    table: pd.DataFrame,
    solver_cols: list[str],
    problem_cols: list[str],
    path: Path,
    cost: str = "solve_time_ms",
    what: str = "",
) -> Path:
    """The performance profile of every compared solver, as one figure (``what`` is
    added to the title, e.g. " of model coulomb")."""
    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    n = draw_profile(ax, table, solver_cols, problem_cols, cost)
    ax.set_title(f"Performance profile{what} ({n} problems every solver was run on)")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    save_figure(fig, path)
    return path


def profile_groups(
    table: pd.DataFrame, solver_cols: list[str], problem_cols: list[str]
) -> list[tuple[str, list[str], list[str], pd.DataFrame]]:
    """The performance profiles a table allows: ``(title, solver_cols, problem_cols, rows)``.

    A profile ranks solvers on the same problems.  Two contact models pose
    different problems on the same scene (different friction laws, cones,
    unknowns), so when the compared combinations include the ``model`` and
    something else (the backend), there is one profile per model, over that
    model's runs, comparing the rest; otherwise one profile of the whole table.
    """
    others = [c for c in solver_cols if c != "model"]
    if "model" not in solver_cols or not others or "model" not in table:
        return [("", list(solver_cols), list(problem_cols), table)]
    return [
        (str(model), others, list(problem_cols) + ["model"], table[table["model"] == model])
        for model in sorted(table["model"].dropna().unique(), key=str)
    ]


def plot_profiles_by(
    table: pd.DataFrame,
    by: str,
    solver_cols: list[str],
    problem_cols: list[str],
    path: Path,
    cost: str = "solve_time_ms",
) -> Path:
    """One performance profile per value of column ``by`` (e.g. the backends of each model)."""
    groups = sorted(table[by].unique())
    cols = min(3, len(groups))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax, value in zip(axes.flat, groups):
        n = draw_profile(
            ax, table[table[by] == value], [c for c in solver_cols if c != by], problem_cols, cost
        )
        ax.set_title(f"{by} {value} ({n} problems)", fontsize=9)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[len(groups) :]:
        ax.axis("off")
    fig.suptitle("Performance profiles, one per model (each model poses its own problems)")
    save_figure(fig, path)
    return path


def save_figure(fig: Any, path: Path) -> None:
    """Lay out, write (110 dpi) and close ``fig``."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_aggregates(aggregates: pd.DataFrame, solver_cols: list[str], path: Path) -> Path:
    """Bars of success rate and relative shifted geometric mean of time per solver."""
    labels = key_column(aggregates, solver_cols, "/")
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 0.4 * len(labels) + 2))
    ax1.barh(labels, aggregates["success_rate"] * 100)
    ax1.set_xlabel("success rate [%]")
    ax1.set_xlim(0, 100)
    ax2.barh(labels, aggregates["shifted_gm_rel"])
    ax2.set_xlabel("shifted geometric mean of time (1 = best)")
    ax2.set_xscale("log")
    # decades only, labelled without overlap however wide the range
    ax2.xaxis.set_major_locator(LogLocator(base=10.0, numticks=6))
    ax2.xaxis.set_minor_formatter(NullFormatter())
    ax2.set_yticklabels([])
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_sweep(folder: Path) -> list[Path]:
    """Performance profile and aggregate bars of a sweep, from its saved tables."""
    import json

    folder = Path(folder)
    res = load_table(folder)
    meta_path = folder / "sweep.json"
    try:
        meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
        if not isinstance(meta, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as err:
        from contactlab.errors import ResultsError

        raise ResultsError(
            f"{str(meta_path)!r} is unreadable or corrupt ({' '.join(str(err).split())}); "
            "run the sweep again (its finished runs are reused)"
        ) from err
    solver_cols = meta.get("compare_by", ["model", "solver"])
    problem_cols = meta.get("problem_columns", ["scenario", "params", "formulation", "dt", "seed"])
    out = folder / "plots"
    out.mkdir(parents=True, exist_ok=True)
    table = res.table
    profile = out / "performance_profile.png"
    groups = profile_groups(table, solver_cols, problem_cols)
    if len(groups) == 1:
        title, cols, problems, rows = groups[0]
        what = f" of model {title}" if title else ""
        written = [plot_profile(rows, cols, problems, profile, what=what)]
    else:
        # models solve different problems: their backends are ranked per model only
        written = [plot_profiles_by(table, "model", solver_cols, problem_cols, profile)]
    stale = out / "performance_profile_by_model.png"  # the name of the per-model figure before
    if stale.exists():
        stale.unlink()
    if res.aggregates is not None and len(res.aggregates):
        written.append(plot_aggregates(res.aggregates, solver_cols, out / "aggregates.png"))
    return written


def plot(folder: Path | str) -> list[Path]:
    """Regenerate the plots of a run, comparison or sweep folder; return the files written."""
    folder = Path(folder)
    kind = folder_kind(folder)
    if kind == "run":
        from contactlab.results import plot_run

        return plot_run(folder)
    if kind == "comparison":
        return plot_comparison(folder)
    return plot_sweep(folder)
