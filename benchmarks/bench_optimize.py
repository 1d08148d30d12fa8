"""Spacetime optimization: iterations and time against the number of DOF.

Problem: a hanging ``n``-link chain (``chain``, ``joints=R``, ``axes=y``;
q0 = 90 deg hangs straight down) swung at rest to a bent pose, the first
three joints moved by (0.4, -0.3, 0.2) rad, in 0.6 s over 10 intervals
(``(K - 1) n`` unknowns).  Each method starts from the straight-line guess;
``optimal`` means the predicted decrease fell below 1e-12 of the initial
cost.  Times are wall-clock on a shared 2-core machine (one process).

Run: ``python -m benchmarks.bench_optimize [--sizes 3 6 10 20 30] [--bfgs-sizes 3 6 10]``
(writes ``results/optimize/scaling.csv`` and ``scaling.md``, and the section
"Spacetime optimization" of ``results/benchmarks/dynamics.md``; with ``--out DIR`` the
tables and the section go to ``DIR``);
``python -m benchmarks.bench_optimize --transition`` runs the floating-base
``humanoid-squat`` transition (G1, 35 coordinates, feet welded) instead and writes
``results/optimize/transition.md``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import harness
from contactlab.optimize import SpacetimeProblem, optimize
from contactlab.optimize.gauss_newton import projected_gradient
from contactlab.reduced.model import Model
from contactlab.scenario import get_scenario

#: Where the optimizer's tables go (its section of ``dynamics.md`` to :data:`harness.RESULTS`).
OUT = Path("results/optimize")


def problem_for(n: int, duration: float = 0.6, knots: int = 10) -> SpacetimeProblem:
    model = Model.from_scene(get_scenario("chain").build(n_links=n, joints="R", axes="y"))
    start = np.zeros(n)
    start[0] = np.pi / 2
    end = start.copy()
    end[:3] += np.array([0.4, -0.3, 0.2])[: min(3, n)]
    return SpacetimeProblem(model, duration, knots, start, end)


def run(n: int, method: str, max_iterations: int) -> dict[str, object]:
    problem = problem_for(n)
    optimize(problem, method=method, max_iterations=1, check_gradient=False)  # warm kernels
    load = harness.load_average()
    cpu = time.process_time()
    start = time.perf_counter()
    result = optimize(problem, method=method, max_iterations=max_iterations, check_gradient=False)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu
    mask = ~problem._fixed
    low, high = (
        problem.turn_bounds()
        if method in ("Newton", "Gauss-Newton")
        else (problem.lower, problem.upper)
    )
    x = result.q[mask]
    g = problem.cost_and_gradient(x)[1]
    x0 = problem.initial_guess()
    g0 = problem.cost_and_gradient(x0)[1]
    pg = projected_gradient(
        g, x, np.broadcast_to(low, mask.shape)[mask], np.broadcast_to(high, mask.shape)[mask]
    )
    return {
        "dof": n,
        "unknowns": problem.n_free,
        "method": method,
        "status": result.status,
        "iterations": result.nit,
        "cost_evaluations": result.nfev,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "load": round(load, 1),
        "cost": result.cost,
        "initial_cost": result.initial_cost,
        "stationarity": float(np.abs(pg).max() / np.abs(g0).max()),
        "max_abs_q_deg": float(np.rad2deg(np.abs(result.q).max())),
    }


def transition_rows(
    knots: list[int], max_iterations: int, limits_options: list[bool], methods: list[str]
) -> list[dict[str, object]]:
    """The ``humanoid-squat`` transition (1 s) at each knot count: iterations, time, KKT.

    ``methods``: ``hybrid`` (the default solver: Gauss-Newton, then the exact Hessian
    with negative curvature flipped, bounds by the QP subproblem's active set) and
    ``gauss-newton`` (Gauss-Newton throughout with the primal active set, as before).
    """
    from contactlab.optimize.examples import humanoid_squat
    from contactlab.optimize.transition import solve

    options: dict[str, dict[str, Any]] = {
        "hybrid": {},
        "gauss-newton": {"newton_below": 0.0, "qp": False},
    }
    rows: list[dict[str, object]] = []
    for k in knots:
        for limits in limits_options:
            problem = humanoid_squat(knots=k, duration=1.0, limits=limits)
            for method in methods:
                load = harness.load_average()
                cpu = time.process_time()
                result = solve(problem, max_iterations=max_iterations, **options[method])
                cpu = time.process_time() - cpu
                rows.append(
                    {
                        "limits": "URDF" if limits else "none",
                        "method": method,
                        "dof": problem.model.nq,
                        "knots": k,
                        "unknowns": problem.n_unknowns,
                        "status": result.status,
                        "iterations": result.nit,
                        "wall_s": round(result.wall_time_s, 2),
                        "cpu_s": round(cpu, 2),
                        "load": round(load, 1),
                        "cost": result.cost,
                        "initial_cost": result.initial_cost,
                        "kkt": result.kkt,
                        "feasibility": result.feasibility,
                        "max_abs_joint_deg": float(
                            np.rad2deg(np.abs(result.q[:, problem.joints]).max())
                        ),
                    }
                )
                print(rows[-1], flush=True)
    return rows


def write_transition(rows: list[dict[str, object]], out: Path = OUT) -> None:
    """``transition.md`` and ``.csv`` in ``out`` from ``rows`` and the earlier rows of
    ``transition.csv`` for the (knots, limits, method) not run now."""
    key = ("knots", "limits", "method")
    if (out / "transition.csv").is_file():
        new = {tuple(r[k] for k in key) for r in rows}
        old = pd.read_csv(out / "transition.csv").to_dict("records")
        rows = [r for r in old if tuple(r[k] for k in key) not in new] + rows
        rows.sort(key=lambda r: (int(r["knots"]), r["limits"], r["method"] != "hybrid"))  # type: ignore[call-overload]
    lines = [
        "# Floating-base transition with welded feet (humanoid-squat)",
        "",
        f"{harness.machine()}; 2 cores (shared), wall-clock, one process. Generated by "
        "`python -m benchmarks.bench_optimize --transition`.",
        "",
        "Unitree G1 (29 joints + floating base = 35 coordinates) from a light stance to a "
        "deeper one with arms raised and waist turned, 1 s, both feet welded (6-component "
        "contact wrench each), with the URDF's joint limits (the default); 10 intervals are "
        "the command's default (`--set knots=N`); SQP with "
        "constraint restoration (`contactlab/optimize/transition.py`): `hybrid` = the default "
        "(Gauss-Newton until the Lagrangian gradient is below 1e-2 of its initial value, then "
        "the exact Lagrangian Hessian with negative curvature flipped; bounds by the active set "
        "of the convex QP subproblem), `gauss-newton` = Gauss-Newton throughout with a primal "
        "active set (the solver before). load = 1-minute load average at the start of the run "
        "(the 2 cores are shared; run with OPENBLAS_NUM_THREADS=1, so the process's CPU time "
        "is what an idle core would take). kkt = max |Lagrangian gradient| / max |cost "
        "gradient at the initial guess|; feasibility = largest foot-pose [m, rad] or base-wrench "
        "[N, N m] error. Targets: converged (kkt <= 1e-6, feasibility <= 1e-8) within 60 s.",
        "",
        "| DOF | knots | limits | method | unknowns | status | iterations "
        "| time [s] (target 60) | CPU time [s] | load "
        "| cost (initial) [N² m² s] | kkt (target 1e-6) | feasibility (target 1e-8) "
        "| max abs joint [deg] |",
        "| ---: | ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: "
        "| ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r['dof']} | {r['knots']} | {r['limits']} | {r['method']} | {r['unknowns']} "
            f"| {r['status']} | {r['iterations']} "
            f"| {r['wall_s']:.1f} | {r['cpu_s']:.1f} | {r['load']} "
            f"| {r['cost']:.4g} ({r['initial_cost']:.4g}) "
            f"| {r['kkt']:.1e} "
            f"| {r['feasibility']:.1e} | {r['max_abs_joint_deg']:.0f} |"
        )
    harness.write(out, "transition", pd.DataFrame(rows), lines)


SECTION = "## Spacetime optimization"


def _num(value: object, fmt: str = ".2f") -> str:
    """``value`` formatted, or a dash where the run did not record it."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "-"
    return "-" if np.isnan(number) else format(number, fmt)


def write_benchmark_section(out: Path = OUT, md: Path = harness.RESULTS / "dynamics.md") -> None:
    """Replace (or append) the optimizer section of ``md`` from ``scaling.csv`` and
    ``transition.csv`` in ``out``, leaving the rest of the file as it is."""
    lines = [
        SECTION,
        "",
        "Least squared joint torque (`contactlab optimize`), iterations and time against the "
        "number of DOF; details and every column in `results/optimize/scaling.md` (chains) and "
        "`results/optimize/transition.md` (G1 humanoid, feet welded). Generated by "
        "`benchmarks/bench_optimize.py`. Targets (issue 28): the 10-link chain in <= 10 s, a "
        "30+ DOF robot transition in <= 60 s, first-order conditions to 1e-6.",
        "",
        "| problem | DOF | unknowns | method | status | iterations | time [s] | CPU [s] "
        "| load | first-order residual |",
        "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, chain in (("scaling.csv", True), ("transition.csv", False)):
        if not (out / name).is_file():
            continue
        digits = ".2f" if chain else ".1f"
        for r in pd.read_csv(out / name).to_dict("records"):
            problem = (
                "hanging chain, 10 intervals"
                if chain
                else f"humanoid-squat, {r['knots']} intervals, {r['limits']} limits"
            )
            residual = r["stationarity" if chain else "kkt"]
            cells = [problem, r["dof"], r["unknowns"], r["method"], r["status"], r["iterations"]]
            cells += [_num(r["wall_s"], digits), _num(r.get("cpu_s"), digits)]
            cells += [_num(r.get("load"), ".1f"), f"{residual:.1e}"]
            lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    text = md.read_text() if md.is_file() else ""
    block = "\n".join(lines) + "\n"
    pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: block + "\n", text).rstrip("\n") + "\n"
    else:
        text = text.rstrip("\n") + "\n\n" + block
    md.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__)
    parser.set_defaults(out=OUT)
    parser.add_argument("--transition", action="store_true", help="run humanoid-squat instead")
    parser.add_argument("--transition-knots", type=int, nargs="+", default=[4, 10])
    parser.add_argument(
        "--transition-limits", nargs="+", choices=["urdf", "none"], default=["urdf"]
    )
    parser.add_argument(
        "--transition-methods",
        nargs="+",
        choices=["hybrid", "gauss-newton"],
        default=["hybrid", "gauss-newton"],
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 6, 10, 20, 30])
    parser.add_argument("--bfgs-sizes", type=int, nargs="*", default=[3, 6, 10])
    parser.add_argument("--max-iterations", type=int, default=1000)
    parser.add_argument(
        "--keep-other-sizes",
        action="store_true",
        help="keep the rows of scaling.csv for the sizes not run now",
    )
    parser.add_argument(
        "--table-only",
        action="store_true",
        help="rewrite scaling.md from the committed scaling.csv (no runs)",
    )
    args = parser.parse_args(argv)
    out: Path = args.out
    md = harness.RESULTS / "dynamics.md" if out == OUT else out / "dynamics.md"
    if args.transition:
        limits = [name == "urdf" for name in args.transition_limits]
        write_transition(
            transition_rows(
                args.transition_knots, args.max_iterations, limits, args.transition_methods
            ),
            out,
        )
        write_benchmark_section(out, md)
        return 0
    rows: list[dict[str, object]] = []
    if args.table_only:
        rows = pd.read_csv(out / "scaling.csv").to_dict("records")  # type: ignore[assignment]
    else:
        for n in args.sizes:
            rows.append(run(n, "Newton", args.max_iterations))
            print(rows[-1], flush=True)
            if n in args.bfgs_sizes:
                rows.append(run(n, "BFGS", args.max_iterations))
                print(rows[-1], flush=True)
        if args.keep_other_sizes and (out / "scaling.csv").is_file():
            # rows of the sizes not run now stay from the earlier run
            old = pd.read_csv(out / "scaling.csv")
            rows = old[~old["dof"].isin(args.sizes)].to_dict("records") + rows  # type: ignore[operator]
            rows.sort(key=lambda r: (int(r["dof"]), r["method"] != "Newton"))  # type: ignore[call-overload]
    lines = [
        "# Spacetime optimization against the number of DOF",
        "",
        f"{harness.machine()}; 2 cores (shared), wall-clock, one process. Generated by "
        "`benchmarks/bench_optimize.py`.",
        "",
        "Hanging n-link chain (10 cm, 10 g links) swung at rest to a bent pose (first three "
        "joints +0.4, -0.3, +0.2 rad) in 0.6 s over 10 intervals; straight-line initial guess; "
        "stationarity = max |projected gradient| / max |gradient at the initial guess|; "
        "load = 1-minute load average at the start of the run (2 shared cores; CPU time is "
        "the process's, what an idle core would take; - where the run did not record it). "
        "Targets (issue 28): the 10-link chain converged in <= 10 s, first-order conditions "
        "to 1e-6; 30+ DOF: see transition.md (a robot transition in <= 60 s).",
        "",
        "| DOF | unknowns | method | status | iterations | cost evaluations | time [s] "
        "(target) | CPU time [s] | load | cost (initial) [N² m² s] | stationarity (target 1e-6) "
        "| max abs q [deg] |",
        "| ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
    ]
    for r in rows:
        target = " (<= 10)" if r["dof"] == 10 else ""
        lines.append(
            f"| {r['dof']} | {r['unknowns']} | {r['method']} | {r['status']} | {r['iterations']} "
            f"| {r['cost_evaluations']} | {r['wall_s']:.2f}{target} | {_num(r.get('cpu_s'))} "
            f"| {_num(r.get('load'), '.1f')} | {r['cost']:.4g} "
            f"({r['initial_cost']:.3g}) | {r['stationarity']:.1e} | {r['max_abs_q_deg']:.0f} |"
        )
    harness.write(out, "scaling", pd.DataFrame(rows), lines)
    write_benchmark_section(out, md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
