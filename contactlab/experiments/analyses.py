"""The measurements of the contact studies (1-4) of :mod:`contactlab.experiments.studies`.

Each analysis takes the sweep table, the sweep folder (runs are read from
it) and the report folder, draws its plots into ``report/plots`` and returns
``(measurements, markdown)``.  The predictions are the closed forms of the
scenes (documented in ``scenarios/contact.py``), evaluated for the discrete
scheme where it matters: with semi-implicit Euler a constant acceleration
``a`` moves a body ``a h^2 n (n + 1) / 2`` in ``n`` steps of ``h``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from contactlab.experiments.loading import load_run_folder  # noqa: E402
from contactlab.experiments.plots import save_figure  # noqa: E402
from contactlab.experiments.run_table import markdown_table  # noqa: E402
from contactlab.results import RunData  # noqa: E402

G = 9.81
#: smallest value drawn on logarithmic axes (exact zeros are drawn there)
FLOOR = 1e-15


def _label(row: pd.Series) -> str:
    options = json.loads(row.get("model_options", "{}") or "{}")
    text = f"{row['model']}/{row['solver']}"
    return text + (" " + ",".join(f"{k}={v}" for k, v in options.items()) if options else "")


def finished_runs(table: pd.DataFrame, sweep_dir: Path) -> Iterator[tuple[pd.Series, RunData]]:
    """Rows of the table with their runs; runs that failed before stepping are skipped."""
    for _, row in table.iterrows():
        run = load_run_folder(sweep_dir / str(row["folder"]))
        if run.trajectory:
            yield row, run


def _discrete_distance(a: float, h: float, n: int) -> float:
    return a * h * h * n * (n + 1) / 2


def table_markdown(df: pd.DataFrame, columns: list[str]) -> str:
    return markdown_table(df.reset_index(drop=True), columns) if len(df) else "(no runs)\n"


# -- study 1 -------------------------------------------------------------------------

EXPECTED_1 = (
    "A cube released on an incline with friction coefficient mu stays at rest while "
    "tan(theta) <= mu (displacement below 1e-4 m after 1 s) and slides with "
    "a = g (sin theta - mu cos theta) above (within 1 %), for every friction model. "
    "Here mu = 0.5, so the threshold is theta = 26.57 deg."
)


def stick_slip(table: pd.DataFrame, sweep_dir: Path, report: Path) -> tuple[pd.DataFrame, str]:
    """Displacement along the slope after the run versus the incline angle."""
    rows = []
    for row, run in finished_runs(table, sweep_dir):
        th, mu = np.radians(row["param.angle_deg"]), float(row["param.mu"])
        down = np.array([np.cos(th), 0.0, -np.sin(th)])
        p = run.trajectory["position"][:, 0]
        n, h = len(p) - 1, float(run.summary["dt"])
        slides = np.tan(th) > mu
        a = G * (np.sin(th) - mu * np.cos(th)) if slides else 0.0
        rows.append(
            {
                "combination": _label(row),
                "angle_deg": row["param.angle_deg"],
                "mu": mu,
                "slides": bool(slides),
                "displacement_m": float((p[-1] - p[0]) @ down),
                "predicted_m": _discrete_distance(a, h, n),
                "t_end_s": n * h,
            }
        )
    m = pd.DataFrame(rows)
    if m.empty:
        return m, "No run finished.\n"
    m["relative_error"] = np.where(
        m["slides"],
        (m["displacement_m"] - m["predicted_m"]) / m["predicted_m"].where(m["predicted_m"] > 0),
        np.nan,
    )
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    mu = float(m["mu"].iloc[0])
    grid = np.linspace(m["angle_deg"].min(), m["angle_deg"].max(), 200)
    th = np.radians(grid)
    T = float(m["t_end_s"].max())
    pred = np.where(np.tan(th) > mu, 0.5 * G * (np.sin(th) - mu * np.cos(th)) * T * T, 0.0)
    for ax, log in zip(axes, (False, True)):
        for name, g in m.groupby("combination"):
            y = np.maximum(g["displacement_m"].abs(), FLOOR) if log else g["displacement_m"]
            ax.plot(g["angle_deg"], y, "o-", ms=4, label=name)
        ax.plot(
            grid, np.maximum(pred, FLOOR) if log else pred, "k--", lw=1, label="Coulomb, 1/2 a t^2"
        )
        ax.axvline(np.degrees(np.arctan(mu)), color="0.5", lw=0.8, ls=":")
        ax.set_xlabel("incline angle [deg]")
        ax.set_ylabel("|displacement| [m]" if log else "displacement along slope [m]")
        if log:
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Box on incline, mu = {mu}: displacement after {T:g} s")
    save_figure(fig, report / "plots" / "displacement_vs_angle.png")
    summary = (
        m.groupby("combination")
        .agg(
            max_stick_displacement_m=(
                "displacement_m",
                lambda s: s[~m.loc[s.index, "slides"]].abs().max(),
            ),
            max_slide_relative_error=("relative_error", lambda s: s.abs().max()),
        )
        .reset_index()
    )
    summary["respects_coulomb"] = (summary["max_stick_displacement_m"].fillna(0) < 1e-4) & (
        summary["max_slide_relative_error"].fillna(0) < 0.01
    )
    text = (
        "Displacement along the slope after the run against the discrete prediction "
        "(`measurements.csv`; plot `plots/displacement_vs_angle.png`). Per combination: the "
        "largest displacement below the threshold and the largest relative error above it.\n\n"
        + table_markdown(summary, list(summary.columns))
    )
    return m, text


# -- study 2 -------------------------------------------------------------------------

EXPECTED_2 = (
    "A box held sliding at speed v rides above the ground under the Anitescu–Hart relaxation "
    "at a gap of h mu v (within 10 %); Staggered Projections and Stewart–Trinkle keep it on "
    "the ground (gap 0)."
)


def anitescu_hart_gap(
    table: pd.DataFrame, sweep_dir: Path, report: Path
) -> tuple[pd.DataFrame, str]:
    """Steady-state gap (mean over the last 30 % of the run) versus h mu v."""
    rows = []
    for row, run in finished_runs(table, sweep_dir):
        params = run.summary["parameters"]
        z = run.trajectory["position"][:, 0, 2]
        tail = z[int(0.7 * len(z)) :]
        h, mu, v = float(run.summary["dt"]), float(params["mu"]), float(params["v"])
        speed = run.trajectory["twist"][int(0.7 * len(z)) :, 0, 3]
        rows.append(
            {
                "combination": _label(row),
                "h": h,
                "mu": mu,
                "v": v,
                "h_mu_v_m": h * mu * v,
                "gap_m": float(np.mean(tail) - float(params["half_extents"][2])),
                "mean_speed_m_s": float(np.mean(speed)),
            }
        )
    m = pd.DataFrame(rows)
    if m.empty:
        return m, "No run finished.\n"
    m["gap_over_h_mu_v"] = m["gap_m"] / m["h_mu_v_m"]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    for name, g in m.groupby("combination"):
        ax.plot(g["h_mu_v_m"], g["gap_m"], "o", label=name)
    x = np.linspace(0, m["h_mu_v_m"].max() * 1.05, 10)
    ax.plot(x, x, "k--", lw=1, label="predicted (Anitescu–Hart): h mu v")
    ax.axhline(0, color="0.5", lw=0.8)
    ax.set_xlabel("h mu v [m]")
    ax.set_ylabel("steady gap [m]")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    save_figure(fig, report / "plots" / "gap_vs_h_mu_v.png")
    summary = (
        m.groupby("combination")
        .agg(
            runs=("gap_m", "size"),
            min_gap_ratio=("gap_over_h_mu_v", "min"),
            max_gap_ratio=("gap_over_h_mu_v", "max"),
            max_abs_gap_m=("gap_m", lambda s: s.abs().max()),
        )
        .reset_index()
    )
    text = (
        "Gap = mean height of the box's bottom face over the last 30 % of the run; ratio = "
        "gap / (h mu v) (`measurements.csv`, `plots/gap_vs_h_mu_v.png`).\n\n"
        + table_markdown(summary, list(summary.columns))
    )
    return m, text


# -- study 3 -------------------------------------------------------------------------

EXPECTED_3 = (
    "With the exact (second-order) cone a sliding or pushed box moves along its initial "
    "velocity or the push; a k-direction pyramid bends the path toward its nearest edge "
    "(largest at 22.5 deg for k = 4) and, at 45 deg for k = 4, lets the free slide run "
    "sqrt(2) times farther (the inscribed square gives mu / sqrt(2) along its diagonal). The "
    "error shrinks as k grows. Box friction (bounds mu lambda_n on each tangent direction) is "
    "the circumscribed square: it bends the path the other way and stops the 45 deg slide "
    "after 1 / sqrt(2) of the distance. The disc (exact cone) has no error."
)


def cone_discretization(
    table: pd.DataFrame, sweep_dir: Path, report: Path
) -> tuple[pd.DataFrame, str]:
    """Heading error and distance ratio of the slides and pushes per cone representation."""
    rows = []
    for row, run in finished_runs(table, sweep_dir):
        params = run.summary["parameters"]
        p = run.trajectory["position"][:, 0]
        d = p[-1, :2] - p[0, :2]
        n, h = len(p) - 1, float(run.summary["dt"])
        direction = float(params["direction_deg"])
        mu = float(params["mu"])
        if row["scenario"] == "box-slide":
            reference = float(params["v0"]) ** 2 / (2 * mu * G)
        else:
            a = float(params["force"]) / float(params.get("mass", 1.0)) - mu * G
            reference = _discrete_distance(a, h, n)
        heading = float(np.degrees(np.arctan2(d[1], d[0])))
        rows.append(
            {
                "scenario": row["scenario"],
                "combination": _label(row),
                "direction_deg": direction,
                "heading_deg": heading,
                "heading_error_deg": heading - direction,
                "distance_m": float(np.linalg.norm(d)),
                "distance_ratio": float(np.linalg.norm(d)) / reference,
            }
        )
    m = pd.DataFrame(rows)
    if m.empty:
        return m, "No run finished.\n"
    scenarios = sorted(m["scenario"].unique())
    fig, axes = plt.subplots(1, len(scenarios), figsize=(5.5 * len(scenarios), 4), squeeze=False)
    for ax, sc in zip(axes[0], scenarios):
        for name, g in m[m["scenario"] == sc].groupby("combination"):
            ax.plot(g["direction_deg"], g["heading_error_deg"], "o-", ms=4, label=name)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(sc)
        ax.set_xlabel("direction of the initial velocity / push [deg]")
        ax.set_ylabel("heading error [deg]")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    save_figure(fig, report / "plots" / "heading_error.png")
    wide = m.pivot_table(
        index=["scenario", "combination"],
        columns="direction_deg",
        values=["heading_error_deg", "distance_ratio"],
    ).reset_index()
    wide.columns = [
        c if isinstance(c, str) else (f"{c[0]}@{c[1]:g}" if c[1] != "" else c[0])
        for c in wide.columns
    ]
    text = (
        "Heading error = direction of the displacement minus the initial direction; "
        "distance ratio = distance / exact-cone distance (free slide: v0^2 / (2 mu g); push: "
        "the discrete distance of a = F/m - mu g) (`measurements.csv`, "
        "`plots/heading_error.png`).\n\n" + table_markdown(wide, list(wide.columns))
    )
    return m, text


# -- study 4 -------------------------------------------------------------------------

EXPECTED_4 = (
    "Every model/backend pair that fits solves the stacks and piles; the table ranks them by "
    "success rate and by the shifted geometric mean of solver time (1 = fastest), and the "
    "performance profile shows how often each is within a factor tau of the fastest."
)


def solver_comparison(
    table: pd.DataFrame, sweep_dir: Path, report: Path
) -> tuple[pd.DataFrame, str]:
    """Per scene and model/backend: success, solver time and iterations; the aggregates."""
    if table.empty:
        return table, "No run finished.\n"
    m = table.assign(
        combination=table.apply(_label, axis=1), scene=table["scenario"] + " " + table["params"]
    )
    cols = [
        "scene",
        "combination",
        "status",
        "step_success_rate",
        "solve_time_median_ms",
        "solve_time_ms",
        "iterations_mean",
        "max_penetration",
        "steps",
    ]
    aggregates = (
        (sweep_dir / "aggregates.md").read_text() if (sweep_dir / "aggregates.md").exists() else ""
    )
    text = (
        "Aggregates over all scenes (from `aggregates.md`; performance profile in "
        "`plots/performance_profile.png`):\n\n"
        + aggregates.split("\n\n", 3)[-1]
        + "\n\nPer scene (`measurements.csv`):\n\n"
        + table_markdown(m[cols], cols)
    )
    return m[cols], text
