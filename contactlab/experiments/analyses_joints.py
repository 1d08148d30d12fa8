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
    "Without stabilization (gamma = 0) the joint drift of the maximal-coordinate chain "
    "grows with time; with gamma > 0 it stays bounded, and shrinks as gamma grows toward 1/h "
    "(gamma h <= 1 keeps the correction stable). The loop closure of the reduced-coordinate "
    "four-bar (redmax-loop) does not drift at any gamma beyond the solver's residual: the "
    "four-bar is a parallelogram (see the reading below)."
)

#: why the parallelogram four-bar's loop cannot drift in reduced coordinates
LOOP_READING_5 = (
    "**Why the reduced four-bar does not drift.** `redmax-loop` is a parallelogram "
    "(legs of 10 cm hinged 20 cm apart on the top bar and on the lower bar). Its closure set "
    "in joint space is the straight line hip0 = hip1 = -knee0, and at every point of that "
    "line the null space of the velocity-level loop rows `G(q) qdot+ = 0` is the line's "
    "direction. The reduced position update of revolute joints, q + h qdot+, is exact along a "
    "straight line, so a step that satisfies the velocity rows lands on the closure set again: "
    "no O(h^2) curvature term feeds the drift, which is only the velocity rows' residual "
    "times h (OSQP's ~1e-9 tolerance: the 1e-12 to 1e-10 measured here). With the direct KKT "
    "backend (gamma = 0, h = 5 ms, 2 s) the legs swing by +-0.145 rad while hip0 - hip1 and "
    "hip0 + knee0 stay below 5e-17 and the closure error below 6e-17. A loop whose "
    "closure set is curved in joint space (a four-bar that is not a parallelogram, or the "
    "maximal-coordinate chain above) drifts by O(h^2) per step without stabilization.\n\n"
)


def _drift_plot(m: pd.DataFrame, series: dict, scenario: str, path: Path) -> None:
    """Largest drift versus gamma per h, and drift over time at the largest h, of one scenario."""
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for h, g in m.groupby("h_s"):
        ax1.plot(g["gamma_per_s"], g["max_drift"], "o-", label=f"h = {h:g} s")
    ax1.set_xscale("symlog", linthresh=1.0)
    ax1.set_yscale("log")
    ax1.set_xlabel("gamma [1/s]")
    ax1.set_ylabel("largest joint drift [m or rad]")
    ax1.set_title(scenario)
    ax1.legend(fontsize=8)
    h_max = m["h_s"].max()
    for (h, gamma), (t, drift) in sorted(series.items()):
        if h == h_max:
            ax2.plot(t, np.maximum(drift, 1e-18), label=f"gamma = {gamma:g}")
    ax2.set_yscale("log")
    ax2.set_xlabel("t [s]")
    ax2.set_ylabel("joint drift")
    ax2.set_title(f"{scenario}, h = {h_max:g} s")
    ax2.legend(fontsize=7)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
    save_figure(fig, path)


def baumgarte(table: pd.DataFrame, sweep_dir: Path, report: Path) -> tuple[pd.DataFrame, str]:
    """Largest and final drift per (scenario, gamma, h); drift over time at the largest h.

    ``chain`` runs in maximal coordinates (joint drift, ``plots/drift.png``);
    ``redmax-loop`` in reduced coordinates, where the only drift is the loop
    closure's (``plots/drift_redmax-loop.png``).
    """
    rows = []
    series: dict[str, dict] = {}
    for row, run in finished_runs(table, sweep_dir):
        drift = run.steps["constraint_error"].to_numpy(float)
        t = run.steps["t"].to_numpy(float)
        quarter = max(1, len(drift) // 4)
        rows.append(
            {
                "scenario": row["scenario"],
                "formulation": row["formulation"],
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
        key = (rows[-1]["h_s"], rows[-1]["gamma_per_s"])
        series.setdefault(row["scenario"], {})[key] = (t, drift)
    if not rows:
        return pd.DataFrame(), "No run finished.\n"
    m = pd.DataFrame(rows).sort_values(["scenario", "h_s", "gamma_per_s"])
    for scenario, g in m.groupby("scenario"):
        name = "drift.png" if scenario == "chain" else f"drift_{scenario}.png"
        _drift_plot(g, series[scenario], str(scenario), report / "plots" / name)
    off = m[m["gamma_per_s"] == 0]
    summary = "".join(
        f"- `{sc}` without stabilization (gamma = 0): largest drift "
        f"{g['max_drift'].min():.3g}–{g['max_drift'].max():.3g}, growth "
        f"{g['growth_last_vs_first_quarter'].min():.3g}–"
        f"{g['growth_last_vs_first_quarter'].max():.3g} over the step sizes.\n"
        for sc, g in off.groupby("scenario")
    )
    text = (
        summary
        + "\n"
        + LOOP_READING_5
        + (
            "Drift = largest position-level joint error (`constraint_error`; for `redmax-loop` in "
            "reduced coordinates, the loop closure's); growth = largest drift in the last quarter "
            "of the run over the first quarter (`measurements.csv`, `plots/drift.png`, "
            "`plots/drift_redmax-loop.png`).\n\n" + table_markdown(m, list(m.columns))
        )
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
    "same motion in maximal and reduced coordinates: their difference shrinks at first order "
    "with h and is of the size of the maximal run's own O(h) error, also for spherical, "
    "universal and free joints (a tumbling box, a rolling ball). Energy at the end differs "
    "from the initial energy by the dissipation of the first-order integrator only. In "
    "reduced coordinates, the adaptive integrator conserves the energy of the conservative "
    "scenes to about its tolerance with either forward dynamics (dense and recursive "
    "trajectories agree to about the tolerance), while linearly implicit Euler at h = 1e-2 s "
    "loses energy, less at smaller h; with the explicit gyroscopic terms of eq. 2.73 as "
    "printed it can gain energy instead (the method's, not the code's: see the gyroscopic "
    "forms table)."
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
    integrators, integrator_text = reduced_integrators(report)
    integrators.to_csv(report / "integrators.csv", index=False)
    return m, text + "\n" + integrator_text + "\n" + reduced_fidelity(report)


def reduced_fidelity(report: Path) -> str:
    """Study 7's convergence, gyroscopic-form and scene-0 backend tables (CSV + markdown)."""
    from contactlab.experiments import analyses_reduced as R

    conv = R.convergence()
    conv.to_csv(report / "convergence.csv", index=False)
    forms = R.gyroscopic_forms(INTEGRATOR_SCENES, INTEGRATOR_T, (INTEGRATOR_H, INTEGRATOR_H / 2))
    forms.to_csv(report / "gyroscopic_forms.csv", index=False)
    backends = R.scene0_backends()
    backends.to_csv(report / "scene0_backends.csv", index=False)
    hs = ", ".join(f"{h:g}" for h in R.CONVERGENCE_H)
    return (
        "### Maximal versus reduced as h shrinks\n\n"
        f"Each scene stepped for {R.CONVERGENCE_T:g} s in both formulations at h = {hs} s "
        "(frictionless/KKT; the ball by box friction/PGS). `diff_h`: largest distance of "
        "any body position between the two runs (sampled every 4 ms); `order`: log2 of the "
        "mean ratio of consecutive `diff_h` (1 = first order); `maximal_self_h`: the maximal "
        "run's own change from h to h/2, the size of its O(h) error (`convergence.csv`).\n\n"
        + R.markdown(conv)
        + "\n### Gyroscopic terms of linearly implicit Euler\n\n"
        f"E(T) - E(0) [J] at T = {INTEGRATOR_T:g} s of linearly implicit Euler with the "
        "explicit gyroscopic wrench `h ad(phi)^T M phi` of eq. 2.73 as printed, and with the "
        "default form that turns each body's linear momentum by its step rotation "
        "(`contactlab.reduced.dynamics.free_momentum`), at h and h/2 "
        "(`gyroscopic_forms.csv`). The explicit linear term multiplies each body's "
        "|m v| by sqrt(1 + h^2 |omega|^2) every step; the two forms differ only in that "
        "O(h^2) term, so where the explicit form gains and the turned form loses, the gain is "
        "that term's, a property of the printed method.\n\n"
        + R.markdown(forms)
        + "\n### Scene 0 in reduced coordinates with every backend\n\n"
        "The 5-link chain (scene 0, 2 s) in reduced coordinates, frictionless model, with "
        "every installed backend that takes its problem (`scene0_backends.csv`).\n\n"
        + R.markdown(backends)
    )


# -- study 7: reduced-coordinate integrators --------------------------------------------

#: conservative tree scenes of study 7 compared across the reduced integrators:
#: (label, scenario, parameters)
INTEGRATOR_SCENES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("chain (scene 0)", "chain", {}),
    (
        "chain zyz (scene 1)",
        "chain",
        {"n_links": 3, "joints": "R", "axes": "zyz", "angles_deg": (0.0, 90.0, 90.0)},
    ),
    ("branching", "branching", {}),
    ("spring-chain", "spring-chain", {}),
    ("redmax-spherical", "redmax-spherical", {}),
    ("redmax-universal", "redmax-universal", {}),
    ("redmax-free2d", "redmax-free2d", {}),
)
#: integration time [s], relative tolerance of the adaptive runs, implicit Euler step [s]
INTEGRATOR_T, INTEGRATOR_RTOL, INTEGRATOR_H = 2.0, 1e-8, 1e-2


def reduced_integrators(report: Path) -> tuple[pd.DataFrame, str]:
    """Total energy at ``INTEGRATOR_T`` relative to the start for three reduced integrators.

    Adaptive DOP853 (``rtol = 1e-8``, ``atol = 1e-10``) with dense and with recursive
    O(n) forward dynamics, and linearly implicit Euler at ``h = 1e-2`` s (Sueda's notes,
    eq. 2.73–2.75); also the largest difference of ``q`` between the two adaptive runs
    sampled every 10 ms. Writes ``plots/integrator_energy.png``.
    """
    from contactlab.reduced import Tree, simulate_adaptive, step_linearly_implicit
    from contactlab.reduced.dynamics import energies
    from contactlab.reduced.kinematics import forward_kinematics
    from contactlab.scenario import get_scenario

    def total(tree: Tree, q: np.ndarray, qdot: np.ndarray) -> float:
        return energies(forward_kinematics(tree, q, qdot))["total_energy"]

    rows = []
    t_eval = np.linspace(0.0, INTEGRATOR_T, int(round(INTEGRATOR_T / INTEGRATOR_H)) + 1)
    for label, name, params in INTEGRATOR_SCENES:
        tree = Tree.from_scene(get_scenario(name).build(**params))
        q0, qdot0 = tree.initial_coordinates()
        e0 = total(tree, q0, qdot0)
        entry: dict[str, Any] = {"scene": label, "nq": tree.nq, "E0_J": e0}
        adaptive = {}
        for method in ("dense", "recursive"):
            tr = simulate_adaptive(
                tree,
                q0,
                qdot0,
                INTEGRATOR_T,
                method=method,
                rtol=INTEGRATOR_RTOL,
                atol=1e-10,
                t_eval=t_eval,
            )
            adaptive[method] = tr
            entry[f"dE_rel_adaptive_{method}"] = (total(tree, tr.q[-1], tr.qdot[-1]) - e0) / abs(e0)
        q, qdot = q0.copy(), qdot0.copy()
        for _ in range(len(t_eval) - 1):
            q, qdot = step_linearly_implicit(tree, q, qdot, INTEGRATOR_H)
        entry["dE_rel_implicit_euler"] = (total(tree, q, qdot) - e0) / abs(e0)
        entry["max_q_diff_dense_vs_recursive"] = float(
            np.max(np.abs(adaptive["dense"].q - adaptive["recursive"].q))
        )
        entry["chart_switches"] = adaptive["dense"].chart_switches
        rows.append(entry)
    m = pd.DataFrame(rows)
    cols = ["dE_rel_adaptive_dense", "dE_rel_adaptive_recursive", "dE_rel_implicit_euler"]
    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    x = np.arange(len(m))
    for k, col in enumerate(cols):
        ax.bar(
            x + (k - 1) * 0.27, np.abs(m[col]).clip(lower=1e-18), 0.27, label=col[len("dE_rel_") :]
        )
    ax.set_yscale("log")
    ax.set_xticks(x, m["scene"], rotation=20, fontsize=7)
    ax.set_ylabel(f"|E(T) - E(0)| / |E(0)| at T = {INTEGRATOR_T:g} s")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, axis="y")
    save_figure(fig, report / "plots" / "integrator_energy.png")
    text = (
        f"### Reduced-coordinate integrators\n\nTotal energy at t = {INTEGRATOR_T:g} s "
        "relative to the start, (E(T) - E(0)) / |E(0)|, for the conservative tree scenes: "
        f"adaptive DOP853 (rtol = {INTEGRATOR_RTOL:g}, atol = 1e-10) with dense REDMAX "
        "forward dynamics and with the recursive O(n) forward dynamics, and linearly "
        f"implicit Euler at h = {INTEGRATOR_H:g} s (default gyroscopic form); "
        "`max_q_diff_dense_vs_recursive` is the "
        "largest difference of any coordinate between the two adaptive runs, sampled every "
        f"{INTEGRATOR_H:g} s (`integrators.csv`, `plots/integrator_energy.png`).\n\n"
        + table_markdown(m, list(m.columns))
    )
    gain = m.loc[m["dE_rel_implicit_euler"] > 0, "scene"].tolist()
    if gain:
        text += (
            "\nLinearly implicit Euler *gains* energy in: "
            + ", ".join(gain)
            + " (relative to |E(0)|, whose size depends on the zero of the gravity energy).\n"
        )
    return m, text
