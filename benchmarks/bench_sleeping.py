"""Sleeping islands (the maximal formulation's option ``sleep``) on a box pile.

A ``box-pile`` of ``--boxes`` cubes (default 200) dropped at t = 0 and stepped by the
default model and solver (box friction, ``pgs``; h = 5 ms) for ``--duration`` seconds
(default 3: the fall, the landing, the pile at rest), four ways, each a
:class:`~contactlab.runspec.RunSpec` built by :func:`contactlab.runspec.build_simulator`
and run by :meth:`~contactlab.simulator.Simulator.run` (as ``contactlab run box-pile
--set n=200 --duration 3 [--formulation-option sleep=true] [--formulation-option
compiled=false]`` runs it):

- ``compiled``: the user's default (the compiled pile step, solved island by island),
  nothing sleeps;
- ``compiled sleep``: ``sleep=true``, which the compiled pile step carries;
- ``general``: the general layers (``compiled=false``), nothing sleeps;
- ``general sleep``: the general layers with ``sleep=true``.

Per route and phase (``--rest-from`` splits the run, default 2 s): the median and mean
step's thread CPU time (measured between the run's per-step callbacks, so the run loop's
own work per step, its table and trajectory, is counted), the contacts posed, the capped
steps (status not ``optimal``); the sleeping bodies over time; and the largest distance
between a cube's final position with and without sleeping, on each route and across them.

Every route runs once on an 8-cube pile first, so that no step's time holds the
kernels' compilation. ``--routes`` runs some of the routes (comma-separated names).

Run: ``python -m benchmarks.bench_sleeping [--boxes 200 --duration 3]``; writes
``results/benchmarks/sleeping.md`` and ``sleeping.csv`` (a row per route and phase;
``--out`` another folder, :mod:`benchmarks.harness`). Times are thread CPU time on a
shared machine: the load average before and after is recorded.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import harness

DT = 0.005
ROUTES: dict[str, dict[str, Any]] = {
    "compiled": {},
    "compiled sleep": {"sleep": True},
    "general": {"compiled": False},
    "general sleep": {"compiled": False, "sleep": True},
}
#: the command line of each route (besides the scene, step and duration)
FLAGS = {
    "compiled": "",
    "compiled sleep": " --formulation-option sleep=true",
    "general": " --formulation-option compiled=false",
    "general sleep": " --formulation-option compiled=false --formulation-option sleep=true",
}


def run_route(boxes: int, duration: float, options: dict[str, Any]) -> dict[str, Any]:
    """One run of the pile with formulation ``options``: per-step thread CPU and the table."""
    from contactlab.runspec import RunSpec, build_simulator

    spec = RunSpec(
        scenario="box-pile",
        params={"n": boxes},
        dt=DT,
        duration=duration,
        formulation_options=options,
    )
    sim = build_simulator(spec)
    stamps: list[float] = []

    def tick(state: Any, record: Any) -> bool:
        stamps.append(time.thread_time())
        return False

    stamps.append(time.thread_time())
    run = sim.run(duration=duration, callback=tick)
    table = run.steps
    sleeping = (
        table["sleeping_bodies"].to_numpy(dtype=int)
        if "sleeping_bodies" in table
        else np.zeros(len(table), dtype=int)
    )
    return {
        "step": type(sim.compiled).__name__ if sim.compiled is not None else "general layers",
        "cpu": np.diff(np.asarray(stamps)),
        "contacts": table["n_contacts"].to_numpy(dtype=int),
        "capped": (table["status"] != "optimal").to_numpy(),
        "sleeping": sleeping,
        "final": np.asarray(run.trajectory["position"][-1]).copy(),
        "status": run.status,
    }


def first_time(mask: np.ndarray) -> str:
    """The end time of the first step where ``mask`` holds, or ``never``."""
    hit = np.flatnonzero(mask)
    return f"{DT * (hit[0] + 1):.3f} s" if hit.size else "never"


def main(argv: list[str] | None = None) -> None:
    p = harness.parser(__doc__)
    p.add_argument("--boxes", type=int, default=200)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--rest-from", type=float, default=2.0)
    p.add_argument(
        "--routes",
        default=",".join(ROUTES),
        help="comma-separated routes to run (default all: " + ", ".join(ROUTES) + ")",
    )
    args = p.parse_args(argv)
    chosen = [r.strip() for r in args.routes.split(",") if r.strip()]
    unknown = [r for r in chosen if r not in ROUTES]
    if unknown or not chosen:
        p.error(f"unknown route(s) {unknown}; choose among {', '.join(ROUTES)}")
    # every route once on a small pile first: the kernels' compilation (or loading from
    # the cache) is not a step's time
    for name in chosen:
        run_route(8, 0.5, ROUTES[name])
    load0 = harness.load_average()
    runs: dict[str, dict[str, Any]] = {}
    for name in chosen:
        runs[name] = run_route(args.boxes, args.duration, ROUTES[name])
        print(f"{name}: {runs[name]['cpu'].sum():.1f} s CPU", flush=True)
    span = harness.load_span(load0)
    split = int(round(args.rest_from / DT))
    lines = [
        "# Sleeping islands",
        "",
        "Written by `benchmarks/bench_sleeping.py`.",
        "",
        f"`box-pile` of {args.boxes} cubes dropped at t = 0, box friction by `pgs` (the "
        f"default), h = 5 ms, {args.duration:g} s; phases split at {args.rest_from:g} s. "
        "Each route is a `RunSpec` run by `Simulator.run`, as `contactlab run` runs it. "
        f"{span} Times are "
        "thread CPU time per step, measured between the run's per-step callbacks.",
        "",
        "| route | step | phase | steps | median ms | mean ms | contacts posed (median) | "
        "sleeping bodies at the end | capped steps |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    rows = []
    for name, r in runs.items():
        for phase, sl in (
            (f"0–{args.rest_from:g} s", slice(0, split)),
            (f"{args.rest_from:g}–{args.duration:g} s", slice(split, None)),
        ):
            cpu = r["cpu"][sl]
            row = {
                "route": name,
                "step": r["step"],
                "phase": phase,
                "steps": cpu.size,
                "median_ms": 1e3 * np.median(cpu),
                "mean_ms": 1e3 * cpu.mean(),
                "contacts_median": int(np.median(r["contacts"][sl])),
                "sleeping_at_end": int(r["sleeping"][sl][-1]),
                "capped_steps": int(r["capped"][sl].sum()),
            }
            rows.append(row)
            lines.append(
                f"| {name} | {r['step']} | {phase} | {cpu.size} | {row['median_ms']:.2f} | "
                f"{row['mean_ms']:.2f} | {row['contacts_median']} | "
                f"{row['sleeping_at_end']} | {row['capped_steps']} |"
            )
    n = len(next(iter(runs.values()))["cpu"])
    marks = [k for k in range(int(round(0.5 / DT)) - 1, n, int(round(0.5 / DT)))]
    lines += [
        "",
        "Sleeping bodies over time (at the end of the step ending at t):",
        "",
        "| route | " + " | ".join(f"{DT * (k + 1):g} s" for k in marks) + " | first asleep "
        "| all asleep |",
        "| --- | " + " | ".join("---:" for _ in marks) + " | ---: | ---: |",
    ]
    for name in [r for r in ("compiled sleep", "general sleep") if r in runs]:
        s = runs[name]["sleeping"]
        lines.append(
            f"| {name} | "
            + " | ".join(str(int(s[k])) for k in marks)
            + f" | {first_time(s > 0)} | {first_time(s == args.boxes)} |"
        )

    def apart(a: str, b: str) -> float:
        return float(np.linalg.norm(runs[a]["final"] - runs[b]["final"], axis=1).max())

    pairs = [
        ("compiled sleep", "compiled", "with and without sleeping"),
        ("general sleep", "general", "with and without sleeping"),
        ("compiled", "general", "without sleeping"),
        ("compiled sleep", "general sleep", "with sleeping"),
    ]
    lines += [
        "",
        "Largest distance between a cube's final positions:",
        "",
        "| runs | distance [m] |",
        "| --- | ---: |",
    ]
    lines += [
        f"| {a} and {b} ({what}) | {apart(a, b):.2e} |"
        for a, b, what in pairs
        if a in runs and b in runs
    ]
    lines += [
        "",
        "Run statuses: "
        + ", ".join(f"{name} {r['status']}" for name, r in runs.items())
        + ". Total thread CPU: "
        + ", ".join(f"{name} {r['cpu'].sum():.1f} s" for name, r in runs.items())
        + ".",
        "",
        "Commands (one per route): "
        + "; ".join(
            f"`contactlab run box-pile --set n={args.boxes} --duration {args.duration:g}"
            f"{FLAGS[name]}`"
            for name in runs
        )
        + ".",
        "",
        f"Benchmark: `python -m benchmarks.bench_sleeping --boxes {args.boxes} --duration "
        f"{args.duration:g}"
        + ("" if len(runs) == len(ROUTES) else f" --routes '{','.join(runs)}'")
        + "`.",
    ]
    harness.write(args.out, "sleeping", pd.DataFrame(rows), lines)


if __name__ == "__main__":
    main()
