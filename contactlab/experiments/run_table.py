"""One row of metrics per run: what ``comparison.csv`` and the sweep table hold.

Every number comes from the run's ``summary.json`` (its run aggregates,
defined once in :mod:`contactlab.metrics`) and ``steps.csv``, so a table can
be rebuilt from the folders at any time.

Columns
-------
status : the run's status (``"failed"`` or ``"diverged"`` when it did not complete).
step_success_rate : fraction of steps whose solver status is ``"optimal"``.
unconverged_steps : steps kept with their best iterate short of the tolerance
    (``max_iterations``, ``stalled``, ``time_limit``, ``optimal_inaccurate``).
solve_time_median_ms, solve_time_p90_ms : per-step solver time [ms].
solve_time_ms : total solver time of the run [ms].
wall_time_s : wall time of the timed run [s] (its steps and metrics; the build, the
    warm-up and any repeat for one-time loading left out, see
    :func:`contactlab.experiments.runner.execute`).
iterations_mean, iterations_max : solver iterations per step.
max_penetration : deepest penetration over the run [m].
max_drift : largest position-level bilateral drift [m or rad].
energy_drift : energy change, total energy at the end minus at t = 0 [J] (signed, as
    ``energy_change`` in summary.json);
    a numerical error only where the scene conserves energy (ranked only there).
max_energy_deviation : largest ``|E(t) - E(0)|`` [J].
max_complementarity, max_cone_violation, max_dissipation_violation : the
    largest per-step normal complementarity [N s m/s], friction-cone
    violation [N s] and maximal-dissipation violation [N s].
success : the run completed and every step succeeded.
message : why the run stopped, when it failed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contactlab.experiments.runner import SUCCESS_STATUSES
from contactlab.metrics import UNCONVERGED_STATUSES
from contactlab.results import RunData

#: run statuses of runs that did not complete
FAILED_STATUSES = frozenset({"failed", "diverged"})

METRIC_COLUMNS = (
    "status",
    "step_success_rate",
    "unconverged_steps",
    "solve_time_median_ms",
    "solve_time_p90_ms",
    "solve_time_ms",
    "wall_time_s",
    "iterations_mean",
    "iterations_max",
    "max_penetration",
    "max_drift",
    "energy_drift",
    "max_energy_deviation",
    "max_complementarity",
    "max_cone_violation",
    "max_dissipation_violation",
    "steps",
    "success",
    "message",
)

#: how "best" is judged per column in readable tables; iteration counts of 0 mean "direct
#: solve or not reported by the backend", so they are not ranked
BEST = {
    "success_rate": "max",
    "shifted_gm_rel": "min",
    "shifted_gm_ms": "min",
    "mean_iterations": "min_positive",
    "step_success_rate": "max",
    "solve_time_median_ms": "min",
    "solve_time_p90_ms": "min",
    "solve_time_ms": "min",
    "wall_time_s": "min",
    "iterations_mean": "min_positive",
    "max_penetration": "min",
    "max_drift": "min",
    "energy_drift": "absmin",
    "max_energy_deviation": "min",
    "max_complementarity": "min",
    "max_cone_violation": "min",
    "max_dissipation_violation": "min",
}


#: columns copied from the run aggregates of summary.json (contactlab.metrics.RUN_AGGREGATES)
FROM_AGGREGATES = {
    "step_success_rate": ("success_rate", 1.0),
    "solve_time_median_ms": ("median_solve_time_s", 1e3),
    "solve_time_p90_ms": ("p90_solve_time_s", 1e3),
    "solve_time_ms": ("total_solve_time_s", 1e3),
    "max_penetration": ("max_penetration", 1.0),
    "max_drift": ("max_constraint_error", 1.0),
    "max_energy_deviation": ("max_energy_deviation", 1.0),
    "max_complementarity": ("max_normal_complementarity", 1.0),
    "max_cone_violation": ("max_cone_violation", 1.0),
    "max_dissipation_violation": ("max_dissipation_violation", 1.0),
}


def run_metrics(run: RunData) -> dict[str, Any]:
    """The metric columns (module docstring) of one run."""
    summary, steps = run.summary, run.steps
    status = str(summary.get("status", "unknown"))
    row: dict[str, Any] = dict.fromkeys(METRIC_COLUMNS, float("nan"))
    row.update(
        status=status,
        steps=int(len(steps)),
        success=False,
        step_success_rate=0.0,
        unconverged_steps=0,
        message=str(summary.get("message") or ""),
    )
    row["wall_time_s"] = float((summary.get("experiment") or {}).get("wall_time_s", np.nan))
    aggregates = summary.get("aggregates") or {}
    for column, (key, scale) in FROM_AGGREGATES.items():
        value = aggregates.get(key)
        if value is not None:
            row[column] = float(value) * scale
    if steps.empty:
        return row
    if "status" in steps:
        row["unconverged_steps"] = int(steps["status"].astype(str).isin(UNCONVERGED_STATUSES).sum())
    iters = pd.to_numeric(steps["iterations"], errors="coerce")
    row["iterations_mean"] = float(iters.mean())
    row["iterations_max"] = float(iters.max())
    e0 = (summary.get("initial_metrics") or {}).get("total_energy")
    energy = pd.to_numeric(steps["total_energy"], errors="coerce").to_numpy(float)
    if e0 is not None and energy.size:
        # signed, E(T) - E(0), as summary.json's energy_change and `contactlab run` print it
        row["energy_drift"] = float(energy[-1] - e0)
    completed = status not in FAILED_STATUSES
    all_ok = bool(steps["status"].astype(str).isin(SUCCESS_STATUSES).all())
    row["success"] = completed and all_ok
    return row


#: how readable tables head each column: its meaning and unit
HEADERS = {
    "steps": "steps made",
    "step_success_rate": "optimal steps [fraction]",
    "unconverged_steps": "unconverged steps",
    "solve_time_median_ms": "solve time median [ms]",
    "solve_time_p90_ms": "solve time p90 [ms]",
    "solve_time_ms": "solve time total [ms]",
    "wall_time_s": "wall time [s]",
    "iterations_mean": "iterations mean",
    "iterations_max": "iterations max",
    "max_penetration": "max penetration [m]",
    "max_drift": "max joint drift [m or rad]",
    "energy_drift": "energy change E(T) − E(0) [J]",
    "max_energy_deviation": "max abs(E(t) − E(0)) [J]",
    "max_complementarity": "max complementarity [N s·m/s]",
    "max_cone_violation": "max cone violation [N s]",
    "max_dissipation_violation": "max dissipation violation [N s]",
    "success_rate": "success rate [fraction]",
    "shifted_gm_ms": "shifted geometric mean [ms]",
    "shifted_gm_rel": "shifted geometric mean [× best]",
}

#: columns that measure an energy error: ranked only where the scene conserves energy
ENERGY_COLUMNS = ("energy_drift", "max_energy_deviation")


def rankable(table: pd.DataFrame) -> np.ndarray:
    """Which rows may hold a best value: the runs that completed with every step solved.

    A failed, diverged or partly unsolved run is never "best": its few solved
    steps would otherwise win the time, penetration and violation columns.
    Read from ``success`` when the table has it, else from ``status`` (not in
    :data:`FAILED_STATUSES`) and ``step_success_rate`` (1 when present); a
    table of solvers (aggregates) ranks the rows whose ``success_rate`` is 1.
    """
    n = len(table)
    ok = np.ones(n, dtype=bool)
    if "success" in table:
        ok &= table["success"].map(_truthy).to_numpy(bool)
    if "status" in table:
        ok &= ~table["status"].astype(str).isin(FAILED_STATUSES).to_numpy(bool)
    for rate in ("step_success_rate", "success_rate"):
        if rate in table:
            ok &= pd.to_numeric(table[rate], errors="coerce").to_numpy(float) >= 1.0
    return ok


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if value is not None and value == value else False


def best_marks(table: pd.DataFrame, unranked: tuple[str, ...] = ()) -> dict[str, set[int]]:
    """Row positions holding the best value of each column of :data:`BEST` present,
    among the :func:`rankable` rows only (no column has a best when none is)."""
    marks: dict[str, set[int]] = {}
    eligible = rankable(table)
    for col, how in BEST.items():
        if col not in table or col in unranked:
            continue
        values = pd.to_numeric(table[col], errors="coerce").to_numpy(float)
        values = np.where(eligible, values, np.nan)
        if how == "absmin":
            values = np.abs(values)
        if how == "min_positive":
            values = np.where(values > 0, values, np.nan)
        finite = np.isfinite(values)
        if not finite.any():
            continue
        target = values[finite].max() if how == "max" else values[finite].min()
        tol = 1e-12 * max(1.0, abs(target))
        marks[col] = {int(i) for i in np.flatnonzero(finite) if abs(values[i] - target) <= tol}
    return marks


def markdown_table(
    table: pd.DataFrame, columns: list[str], digits: int = 4, unranked: tuple[str, ...] = ()
) -> str:
    """A GitHub markdown table of ``columns`` headed with their units (:data:`HEADERS`);
    the best value per column in bold, except in the ``unranked`` columns."""
    marks = best_marks(table, unranked)
    heads = [HEADERS.get(c, c) for c in columns]
    lines = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for pos in range(len(table)):
        cells = []
        for col in columns:
            value = table.iloc[pos][col]
            if isinstance(value, (float, np.floating)):
                text = "—" if not np.isfinite(value) else f"{value:.{digits}g}"
            else:
                text = str(value)
            if pos in marks.get(col, set()):
                text = f"**{text}**"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
