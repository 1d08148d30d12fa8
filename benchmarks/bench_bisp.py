"""Joint friction: BISP (reduced) vs Staggered Projections on the maximal model, per step.

Scenes: ``jf-chain`` with 5, 10, 20 and 50 links (10 x 1 x 1 cm links on
revolute joints, all with joint friction mu = 0.6, r = 0.5 cm, released
with the root at 45 deg; h = 1e-2).  For each chain and model the CPU time
(thread time, one BLAS thread) of

- ``model``: the contact model's ``solve`` of one step (the friction loop:
  BISP's reduced solves, traversals, local solves and friction QPs; SP's
  contact QPs, local solves and friction QPs),
- ``step``: assembly + model + integration (the formulation's own cost
  included: reduced assembly forms ``J`` and ``M_r`` densely, and both
  formulations build the step problem's joint-friction maps — joint rows,
  BISP's effective forces and loop rows — during assembly),

median over the timed steps after a warm-up, with the outer iterations and
the solver-layer time.  Both models run the same loop
(:mod:`contactlab.models.bisp`) with the same tolerance and QP
backend; what differs is what the seed's BISP removes: no contact QP over
the joint rows (a reduced solve instead) and a friction QP over one row per
joint instead of the joint rows plus one row per joint.  Scaling exponents
are least-squares slopes of log(time) vs log(n).

Run: ``python -m benchmarks.bench_bisp`` (writes
``results/benchmarks/bisp.csv`` and ``bisp.md``).
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import pandas as pd

from contactlab.runspec import build_simulator

#: (label, formulation, model, aggregate): ``aggregate=False`` keeps one friction row per
#: joint contact point (16 per revolute joint) instead of one per joint motion
MODELS = (
    ("bisp", "reduced", "bisp", True),
    ("sp-maximal", "maximal", "joint-friction-sp", True),
    ("bisp-explicit", "reduced", "bisp", False),
    ("sp-maximal-explicit", "maximal", "joint-friction-sp", False),
)


def time_model(
    n: int, label: str, form: str, model: str, aggregate: bool, solver: str, steps: int, warm: int
) -> dict:
    """Median per-step CPU times of one chain with one model."""
    sim = build_simulator(
        "jf-chain",
        {"n_links": n},
        formulation=form,
        model=model,
        solver=solver,
        model_options={"aggregate": aggregate},
    )
    state = sim.initial_state()
    f, m, h = sim.formulation, sim.model, sim.dt
    t_model, t_step, outer, solver_time = [], [], [], []
    for i in range(warm + steps):
        t0 = time.thread_time()
        problem = f.assemble(state, h, None)
        cache = dict(state.cache)
        t1 = time.thread_time()
        sol = m.solve(problem, cache)
        t2 = time.thread_time()
        state = f.advance(state, sol, h)
        state = type(state)(state.t, state.E, state.phi, state.q, state.qdot, cache)
        t3 = time.thread_time()
        if sol.status not in ("optimal", "max_iterations"):
            return {"n_links": n, "model": label, "solver": solver, "status": sol.status}
        if i >= warm:
            t_model.append(t2 - t1)
            t_step.append(t3 - t0)
            outer.append(sol.outer_iterations)
            solver_time.append(sol.solve_time)
    return {
        "n_links": n,
        "model": label,
        "solver": solver,
        "model_ms": 1e3 * float(np.median(t_model)),
        "step_ms": 1e3 * float(np.median(t_step)),
        "solver_layer_ms": 1e3 * float(np.median(solver_time)),
        "outer_iterations": float(np.mean(outer)),
        "status": "optimal" if max(outer) < m.options["max_outer"] else "max_iterations",
    }


def slope(n: np.ndarray, t: np.ndarray) -> float:
    """Least-squares slope of log t vs log n over the measured (finite) points."""
    ok = np.isfinite(t)
    if ok.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(n[ok]), np.log(t[ok]), 1)[0])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[5, 10, 20, 50])
    parser.add_argument("--solver", default="qpsolvers:proxqp")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warm", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    parser.add_argument(
        "--budget-ms", type=float, default=1000.0, help="skip larger chains past this step time"
    )
    parser.add_argument("--from-csv", type=Path, help="only rewrite bisp.md from this CSV")
    args = parser.parse_args(argv)
    if args.from_csv:
        args.out.mkdir(parents=True, exist_ok=True)
        write_report(pd.read_csv(args.from_csv), args)
        return
    rows = []
    slow: set[str] = set()
    for n in args.links:
        for label, form, model, aggregate in MODELS:
            if label in slow:
                rows.append({"n_links": n, "model": label, "status": "skipped (too slow)"})
                continue
            row = time_model(n, label, form, model, aggregate, args.solver, args.steps, args.warm)
            rows.append(row)
            if "step_ms" not in row:
                print(f"n={n:3d} {label:11s} failed: {row['status']}", flush=True)
                slow.add(label)
                continue
            if row["step_ms"] > args.budget_ms:
                slow.add(label)
            print(
                f"n={n:3d} {label:11s} model {row['model_ms']:8.2f} ms"
                f"  step {row['step_ms']:8.2f} ms  outer {row['outer_iterations']:.1f}",
                flush=True,
            )
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "bisp.csv", index=False, float_format="%.6g")
    write_report(df, args)


def write_report(df: pd.DataFrame, args: argparse.Namespace) -> None:
    """``bisp.md`` from the measurements ``df`` (one row per chain and model)."""
    wide = df.pivot(index="n_links", columns="model", values=["model_ms", "step_ms"])
    outer = df.pivot(index="n_links", columns="model", values="outer_iterations")
    n = wide.index.to_numpy(float)
    labels = [label for label, *_ in MODELS]
    lines = [
        "# BISP vs Staggered Projections on the maximal model (joint friction)",
        "",
        f"`python -m benchmarks.bench_bisp` — {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, solver `{args.solver}`, CPU (thread) time of "
        f"the contact model per step, median of {args.steps} steps after {args.warm} "
        "warm-up steps; chains `jf-chain` (revolute, joint friction on every joint, "
        "h = 1e-2).  `-explicit`: one friction row per joint contact point (16 per joint, "
        "`aggregate=False`) instead of one per joint.",
        "",
        "| links | "
        + " | ".join(f"{label} [ms]" for label in labels)
        + " | SP/BISP | SP/BISP (explicit) | outer iterations |",
        "| --- " * (len(labels) + 4) + "|",
    ]
    for k in wide.index:
        t = {label: wide.loc[k, ("model_ms", label)] for label in labels}
        its = "/".join(f"{outer.loc[k, label]:.1f}" for label in labels)
        lines.append(
            f"| {k} | "
            + " | ".join(f"{t[label]:.2f}" for label in labels)
            + f" | {t['sp-maximal'] / t['bisp']:.2f}"
            + f" | {t['sp-maximal-explicit'] / t['bisp-explicit']:.2f} | {its} |"
        )
    lines += [
        "",
        "Scaling exponents (slope of log time vs log links), model time and whole step "
        "(assembly and integration included):",
        "",
        "| | model | step |",
        "| --- | --- | --- |",
    ]
    for label in labels:
        lines.append(
            f"| {label} | {slope(n, wide[('model_ms', label)].to_numpy()):.2f} "
            f"| {slope(n, wide[('step_ms', label)].to_numpy()):.2f} |"
        )
    ratio = (wide[("model_ms", "sp-maximal")] / wide[("model_ms", "bisp")]).to_numpy()
    ratio_x = (
        wide[("model_ms", "sp-maximal-explicit")] / wide[("model_ms", "bisp-explicit")]
    ).to_numpy()
    its_x = float(np.nanmean(outer["sp-maximal-explicit"] / outer["bisp-explicit"]))
    lines += [
        "",
        f"BISP's model time is {np.nanmin(ratio):.1f}x to {np.nanmax(ratio):.1f}x below "
        f"Staggered Projections' on the maximal model ({np.nanmin(ratio_x):.1f}x to "
        f"{np.nanmax(ratio_x):.1f}x with explicit friction rows, where SP also takes "
        f"{its_x:.0f}x the outer iterations), not the order of magnitude Sueda's notes (§2.11) "
        "reports.  With one friction row per joint both take the same number of outer "
        "iterations; per iteration BISP replaces SP's contact QP over the joint rows (5 per "
        "revolute) by a reduced solve, and its friction QP has no joint rows.  With one "
        "friction row per joint, fixed per-call costs (building and checking the QPs in "
        "the solver layer, sparse assembly) dominate at these sizes, hence exponents "
        "well below 1; with explicit rows the dense friction QP (16 rows per joint) "
        "dominates both models.",
    ]
    notes = df[df["status"] != "optimal"]
    if len(notes):
        lines += ["", "Not timed or not converged:", ""]
        lines += [f"- {r.model}, {r.n_links} links: {r.status}" for r in notes.itertuples()]
    (args.out / "bisp.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
