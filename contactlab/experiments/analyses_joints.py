"""The measurements of the joint studies (5, 6, 7) of :mod:`contactlab.experiments.studies`.

Same conventions as :mod:`contactlab.experiments.analyses`: each analysis takes
the sweep table, the sweep folder and the report folder, draws its plots into
``report/plots`` and returns ``(measurements, markdown)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactlab.experiments.analyses import finished_runs, plt, table_markdown
from contactlab.experiments.plots import save_figure
from contactlab.results import RunData

# -- study 5 -------------------------------------------------------------------------

EXPECTED_5 = (
    "Without stabilization (gamma = 0) the joint drift of the maximal-coordinate chain grows "
    "with time; with gamma > 0 it stays bounded, and shrinks as gamma grows toward 1/h "
    "(gamma h <= 1 keeps the correction stable)."
)


def baumgarte(table: pd.DataFrame, sweep_dir: Path, report: Path) -> tuple[pd.DataFrame, str]:
    """Largest and final drift per (gamma, h); drift over time at the largest h."""
    rows = []
    series = {}
    for row, run in finished_runs(table, sweep_dir):
        drift = run.steps["constraint_error"].to_numpy(float)
        t = run.steps["t"].to_numpy(float)
        quarter = max(1, len(drift) // 4)
        rows.append(
            {
                "gamma_per_s": row["param.baumgarte"],
                "h_s": float(run.summary["dt"]),
                "gamma_h": row["param.baumgarte"] * float(run.summary["dt"]),
                "status": row["status"],
                "t_end_s": float(t[-1]),
                "max_drift": float(np.max(drift)),
                "final_drift": float(drift[-1]),
                "growth_last_vs_first_quarter": float(
                    np.max(drift[-quarter:]) / max(np.max(drift[:quarter]), 1e-300)
                ),
            }
        )
        series[(rows[-1]["h_s"], rows[-1]["gamma_per_s"])] = (t, drift)
    if not rows:
        return pd.DataFrame(), "No run finished.\n"
    m = pd.DataFrame(rows).sort_values(["h_s", "gamma_per_s"])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for h, g in m.groupby("h_s"):
        ax1.plot(g["gamma_per_s"], g["max_drift"], "o-", label=f"h = {h:g} s")
    ax1.set_xscale("symlog", linthresh=1.0)
    ax1.set_yscale("log")
    ax1.set_xlabel("gamma [1/s]")
    ax1.set_ylabel("largest joint drift [m or rad]")
    ax1.legend(fontsize=8)
    h_max = m["h_s"].max()
    for (h, gamma), (t, drift) in sorted(series.items()):
        if h == h_max:
            ax2.plot(t, np.maximum(drift, 1e-18), label=f"gamma = {gamma:g}")
    ax2.set_yscale("log")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("joint drift")
    ax2.set_title(f"h = {h_max:g} s")
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    save_figure(fig, report / "plots" / "drift.png")
    text = (
        "Drift = largest position-level joint error (`constraint_error`); growth = largest "
        "drift in the last quarter of the run over the first quarter "
        "(`measurements.csv`, `plots/drift.png`).\n\n" + table_markdown(m, list(m.columns))
    )
    return m, text


# -- study 6 -------------------------------------------------------------------------

EXPECTED_6 = (
    "BISP (reduced coordinates) and Staggered Projections with joint friction (maximal "
    "coordinates) give the same motion on the joint-friction scenes up to their tolerances "
    "and discretization, BISP with less solver time per step (smaller problems)."
)


def bisp_vs_staggered(
    table: pd.DataFrame, sweep_dir: Path, report: Path
) -> tuple[pd.DataFrame, str]:
    """Per scene and backend: median solver time per step of each model, position agreement."""
    runs: dict[tuple[str, str], dict[str, tuple[pd.Series, RunData]]] = {}
    for row, run in finished_runs(table, sweep_dir):
        runs.setdefault((row["scenario"], row["solver"]), {})[row["model"]] = (row, run)
    rows = []
    for (scenario, solver), pair in sorted(runs.items()):
        entry: dict[str, Any] = {"scenario": scenario, "solver": solver}
        for model, (row, _) in pair.items():
            entry[f"{model}_median_ms"] = float(row["solve_time_median_ms"])
            entry[f"{model}_status"] = row["status"]
        if {"bisp", "joint-friction-sp"} <= set(pair):
            a, b = pair["bisp"][1].trajectory, pair["joint-friction-sp"][1].trajectory
            k = min(len(a["t"]), len(b["t"]))
            entry["max_position_difference_m"] = float(
                np.max(np.abs(a["position"][:k] - b["position"][:k]))
            )
            entry["time_ratio_sp_over_bisp"] = (
                entry["joint-friction-sp_median_ms"] / entry["bisp_median_ms"]
            )
        rows.append(entry)
    m = pd.DataFrame(rows)
    if m.empty:
        return m, "No run finished.\n"
    if "time_ratio_sp_over_bisp" in m:
        fig, ax = plt.subplots(figsize=(8, 4))
        for solver, g in m.groupby("solver"):
            ax.plot(g["scenario"], g["time_ratio_sp_over_bisp"], "o", label=solver)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel("median time per step: SP / BISP")
        ax.tick_params(axis="x", rotation=30)
        ax.legend()
        ax.grid(alpha=0.3)
        save_figure(fig, report / "plots" / "time_ratio.png")
    text = (
        "Median solver time per step [ms] of each model, their ratio, and the largest "
        "difference of any body position between the two runs (`measurements.csv`, "
        "`plots/time_ratio.png`).\n\n" + table_markdown(m, list(m.columns))
    )
    return m, text


# -- study 7 -------------------------------------------------------------------------

EXPECTED_7 = (
    "The REDMAX reference scenes (chains, branching, spring chain, spring-damper) give the "
    "same motion in maximal and reduced coordinates (differences of the order of the "
    "discretization error) and an energy at the end that differs from the initial energy by "
    "the dissipation of the first-order integrator only."
)


def redmax_scenes(table: pd.DataFrame, sweep_dir: Path, report: Path) -> tuple[pd.DataFrame, str]:
    """Energy at the start and end per formulation, and the largest position difference."""
    runs: dict[tuple[str, str], dict[str, RunData]] = {}
    for row, run in finished_runs(table, sweep_dir):
        runs.setdefault((row["scenario"], row["params"]), {})[row["formulation"]] = run
    rows = []
    n_scenes = max(1, len(runs))
    fig, axes = plt.subplots(1, n_scenes, figsize=(4.2 * n_scenes, 3.6), squeeze=False)
    for ax, ((scenario, params), pair) in zip(axes[0], sorted(runs.items())):
        entry: dict[str, Any] = {"scenario": scenario, "params": params}
        for form, run in pair.items():
            e = run.steps["total_energy"].to_numpy(float)
            e0 = float(run.summary["initial_metrics"]["total_energy"])
            entry[f"E0_{form}_J"], entry[f"E_end_{form}_J"] = e0, float(e[-1])
            entry[f"t_end_{form}_s"] = float(run.steps["t"].iloc[-1])
            ax.plot(run.steps["t"], e, label=form)
        if {"maximal", "reduced"} <= set(pair):
            a, b = pair["maximal"].trajectory, pair["reduced"].trajectory
            k = min(len(a["t"]), len(b["t"]))
            entry["max_position_difference_m"] = float(
                np.max(np.abs(a["position"][:k] - b["position"][:k]))
            )
        rows.append(entry)
        ax.set_title(f"{scenario}\n{params}", fontsize=7)
        ax.set_xlabel("t [s]")
        ax.set_ylabel("total energy [J]")
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    save_figure(fig, report / "plots" / "energy.png")
    m = pd.DataFrame(rows)
    text = (
        "Energy at t = 0 and at the end per formulation, and the largest difference of "
        "any body position between the two formulations over the run "
        "(`measurements.csv`, `plots/energy.png`).\n\n" + table_markdown(m, list(m.columns))
    )
    return m, text
