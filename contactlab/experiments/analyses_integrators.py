"""Study 8: the ArtiSynth integrators and soft constraints on friction scenes.

Every run of the sweep is one scene stepped with one integrator
(``formulation_options.integrator``) and one compliance (``compliance``,
applied to every joint and contact normal, with ``compliance_damping``).  The
analysis reads the runs back and measures energy behaviour, joint drift,
penetration and time per step, and for the incline the sliding acceleration
against ``g (sin theta - mu cos theta)``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import numpy as np
import pandas as pd

from contactlab.experiments.analyses import finished_runs, table_markdown

G = 9.81

EXPECTED_8 = (
    "The notes (§0.9–0.11) give no explicit recommendation; what they imply is: "
    "the position Jacobian (implicit Euler, trapezoidal) is what keeps stiff force "
    "elements stable, Bridson–Marino 'does not use the position Jacobian' (so it is "
    "explicit in stiffness, like symplectic Euler), implicit Euler dissipates, the "
    "trapezoidal rule does not, and damping on soft unilateral constraints 'might "
    "introduce some anomalous results'. Expected here: on the friction scenes (gravity, "
    "contact and joints only, no force elements) every integrator gives the same "
    "friction result (sliding acceleration within 1 %, stacks at rest) because the "
    "velocity step is the same MLCP; they differ in joint drift (projection) and in "
    "where positions are taken; on the stiff spring chain the explicit two blow up; "
    "penetration at rest grows with compliance as m g alpha per contact."
)


def _option(row: pd.Series, key: str, default: object) -> object:
    value = row.get(f"formulation.{key}", default)
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return default
    return value


def integrators(table: pd.DataFrame, sweep_dir: Path, report: Path) -> tuple[pd.DataFrame, str]:
    """One row per run: energy, drift, penetration, time per step (and the incline's rate)."""
    rows = []
    for row, run in finished_runs(table, sweep_dir):
        steps = run.steps
        e = steps["total_energy"].to_numpy(float)
        e0 = float((run.summary.get("initial_metrics") or {}).get("total_energy", e[0]))
        scale = max(abs(e0), float(np.max(np.abs(e))), 1e-12)
        out = {
            "scenario": row["scenario"],
            "params": row["params"],
            "integrator": _option(row, "integrator", "linearly-implicit"),
            "compliance": float(cast(float, _option(row, "compliance", 0.0))),
            "status": row["status"],
            "steps": len(steps),
            "max_energy_gain_J": float(np.max(e) - e0),
            "final_energy_change_J": float(e[-1] - e0),
            "relative_final_energy_change": float((e[-1] - e0) / scale),
            "max_drift": float(steps["constraint_error"].max()),
            "max_penetration_m": float(steps["penetration"].max()),
            "final_penetration_m": float(steps["penetration"].iloc[-1]),
            "step_time_median_ms": 1e3 * float(steps["step_time_s"].median()),
            "slide_acceleration_error": np.nan,
            "h": float(run.summary["dt"]),
        }
        if row["scenario"] == "box-incline":
            th = np.radians(float(row["param.angle_deg"]))
            mu = float(row["param.mu"])
            down = np.array([np.cos(th), 0.0, -np.sin(th)])
            p = run.trajectory["position"][:, 0]
            t = run.trajectory["t"]
            skip = max(1, len(t) // 10)
            a = 2.0 * np.polyfit(t[skip:], (p[skip:] - p[0]) @ down, 2)[0]
            a_pred = G * (np.sin(th) - mu * np.cos(th))
            out["slide_acceleration_error"] = float(a / a_pred - 1.0) if a_pred > 0 else a
        rows.append(out)
    if not rows:
        return pd.DataFrame(), "No run finished.\n"
    m = pd.DataFrame(rows).sort_values(["scenario", "params", "compliance", "integrator"])
    return m, _findings(m)


SPRING_READING = (
    "- **Reading of the spring chain.** The notes' implicit steps linearize the forces; the "
    "exact K of a spring acting on rotating links has a geometric part (force times lever) "
    "that is indefinite. On the 10 g links of `spring-chain`, once h^2 times that part "
    "exceeds the links' inertia, the linearized step matrix restricted to the joints' "
    "null space Z (columns spanning G v = 0) has a negative eigenvalue (listed below): the "
    "implicit step is then not a minimization and amplifies motion, while the explicit "
    "steps, whose limit is omega h < 2, can still be stable. Stability of the "
    "linearized implicit integrators holds for positive semi-definite -K, not in general."
)


def step_matrix_eigenvalue(stiffness: float, h: float) -> tuple[float, float]:
    """Smallest eigenvalues of ``Z^T (M - h^2 sym K) Z`` and ``Z^T M Z`` (spring-chain, t = 0)."""
    import scipy.linalg as la

    from contactlab.forces.base import total_stiffness
    from contactlab.maximal import MaximalFormulation
    from contactlab.scenario import get_scenario

    scene = get_scenario("spring-chain").build(stiffness=stiffness)
    form = MaximalFormulation(scene)
    state = form.initial_state()
    M = np.diag(scene.spatial_inertia.reshape(-1))
    K = total_stiffness(scene.forces, scene, state.E, state.phi).toarray()
    Z = la.null_space(form.rows(state.E, state.phi).G.toarray())
    return (
        float(np.linalg.eigvalsh(Z.T @ (M - h * h * K) @ Z).min()),
        float(np.linalg.eigvalsh(Z.T @ M @ Z).min()),
    )


def _findings(m: pd.DataFrame) -> str:
    lines = []
    inc = m[m["scenario"] == "box-incline"]
    if len(inc):
        err = inc["slide_acceleration_error"].abs()
        lines.append(
            f"- **Incline** (30 deg, mu = 0.5): sliding acceleration within "
            f"{100 * err.max():.2g} % of g (sin - mu cos) for every integrator and compliance "
            f"(largest {inc.loc[err.idxmax(), 'integrator']}, compliance "
            f"{inc.loc[err.idxmax(), 'compliance']:g})."
        )
    for scenario in ("box-stack", "box-pile", "chain-floor"):
        s = m[m["scenario"] == scenario]
        if not len(s):
            continue
        per = s.groupby("compliance")["final_penetration_m"].agg(["min", "max"])
        pen = "; ".join(
            f"compliance {c:g}: {r['min']:.3g}–{r['max']:.3g} m" for c, r in per.iterrows()
        )
        hard = s[s["compliance"] == 0.0]  # soft joints sag by design: no drift to compare
        default = hard["integrator"] == "linearly-implicit"
        lines.append(
            f"- **{scenario}**: final penetration by compliance ({pen}); largest joint drift at "
            f"compliance 0: {hard.loc[default, 'max_drift'].max():.3g} with linearly-implicit "
            f"(Baumgarte only), {hard.loc[~default, 'max_drift'].max():.3g} with the projecting "
            "integrators; largest "
            f"energy gain {s['max_energy_gain_J'].max():.3g} J "
            f"({s.loc[s['max_energy_gain_J'].idxmax(), 'integrator']})."
        )
    stack = m[(m["scenario"] == "box-stack") & (m["compliance"] > 0)]
    for r in stack.itertuples():
        p = json.loads(r.params)
        predicted = p["n"] * p["mass"] * G * r.compliance / 4  # bottom box, four contacts
        lines.append(
            f"- **box-stack compliance {r.compliance:g}, {r.integrator}**: the bottom contacts "
            f"carry the whole stack, predicted sink n m g alpha / 4 = {predicted:.4g} m, "
            f"measured {r.final_penetration_m:.4g} m."
        )
    sc = m[m["scenario"] == "spring-chain"]
    if len(sc):
        lines.append(SPRING_READING)
        for params, g in sc.groupby("params"):
            g0 = g[g["compliance"] == 0.0]
            k = float(json.loads(params)["stiffness"])
            lam, lam_m = step_matrix_eigenvalue(k, float(g0["h"].iloc[0]))
            ok = g0[g0["status"].isin(["ok", "inaccurate"])]["integrator"].tolist()
            bad = g0[~g0["status"].isin(["ok", "inaccurate"])]["integrator"].tolist()
            lines.append(
                f"- **spring-chain, k = {k:g} N/m**: smallest eigenvalue of Z'(M - h^2 sym K)Z "
                f"at t = 0: {lam:.3g} (of Z'MZ: {lam_m:.3g}); "
                f"finished {', '.join(ok) or 'none'}; "
                f"stopped (diverged/failed) {', '.join(bad) or 'none'}; relative energy "
                "change at the end: "
                + ", ".join(
                    f"{r.integrator} {r.relative_final_energy_change:+.2g}" for r in g0.itertuples()
                )
                + "."
            )
    if len(sc):
        hard = sc[sc["compliance"] == 0.0]
        usable = hard["status"].isin(["ok", "inaccurate"])
        implicit = hard["integrator"].isin(["implicit-euler", "trapezoidal", "linearly-implicit"])
        contradicted = sorted(
            {
                float(json.loads(p)["stiffness"])
                for p in hard.loc[~usable & implicit, "params"]
                if (usable & ~implicit & (hard["params"] == p)).any()
            }
        )
        lines.append(
            "- **Notes against measurement**: the friction results do not depend on the "
            "integrator (one velocity-level MLCP per step); the projection removes joint drift; "
            "soft contacts sink as predicted. The implied rule that the integrators using the "
            "position Jacobian are the stable ones "
            + (
                "fails on the spring chain at k = "
                + ", ".join(f"{k:g}" for k in contradicted)
                + " N/m, where an explicit integrator finished and an implicit one stopped "
                "(indefinite linearized step, see the reading)."
                if contradicted
                else "holds on every spring chain run here."
            )
        )
    timing = m.groupby("integrator")["step_time_median_ms"].median()
    lines.append(
        "- **Time per step** (median over runs of the median step, ms): "
        + ", ".join(f"{k} {v:.3g}" for k, v in timing.items())
        + "."
    )
    columns = [
        "scenario",
        "params",
        "integrator",
        "compliance",
        "status",
        "final_energy_change_J",
        "max_drift",
        "max_penetration_m",
        "final_penetration_m",
        "step_time_median_ms",
        "slide_acceleration_error",
    ]
    return "\n".join(lines) + "\n\n" + table_markdown(m, columns)
