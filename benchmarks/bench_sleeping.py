"""Sleeping islands (the maximal formulation's option ``sleep``) on a box pile.

A ``box-pile`` of ``--boxes`` cubes (default 200) dropped at t = 0 and stepped by the
default model and solver (box friction, ``pgs``; h = 5 ms) for ``--duration`` seconds
(default 3: the fall, the landing, the pile at rest), three ways through
:func:`contactlab.runspec.build_simulator`, as ``contactlab run`` builds them:

- ``default``: the user's default (the compiled maximal contact step, nothing sleeps);
- ``general``: the general layers (``compiled=False``), nothing sleeps;
- ``sleep``: ``sleep=true`` (which takes the general layers: the compiled step does not
  carry sleeping).

Per route and phase (``--rest-from`` splits the run, default 2 s): the median step's
thread CPU time, the contacts posed, the sleeping bodies at the end, capped steps; and the
largest distance between a cube's final position with and without sleeping.

Run: ``python -m benchmarks.bench_sleeping [--boxes 200 --duration 3]``; writes
``results/benchmarks/sleeping.md``. Times are thread CPU time on a shared machine: the load
average before and after is recorded.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "sleeping.md"
ROUTES = {
    "default": {},
    "general": {"compiled": False},
    "sleep": {"sleep": True},
}


def run_route(boxes: int, duration: float, options: dict[str, Any]) -> dict[str, Any]:
    from contactlab.runspec import RunSpec, build_simulator

    spec = RunSpec(
        scenario="box-pile",
        params={"n": boxes},
        dt=0.005,
        duration=duration,
        formulation_options=options,
    )
    sim = build_simulator(spec)
    state = sim.initial_state()
    steps = int(round(duration / 0.005))
    cpu = np.zeros(steps)
    contacts = np.zeros(steps, dtype=int)
    capped = np.zeros(steps, dtype=bool)
    sleeping = np.zeros(steps, dtype=int)
    for i in range(steps):
        t0 = time.thread_time()
        state, record = sim.step(state, i)
        cpu[i] = time.thread_time() - t0
        contacts[i] = record.metrics["n_contacts"]
        capped[i] = record.metrics["status"] != "optimal"
        sleeping[i] = record.metrics.get("sleeping_bodies", 0)
    return {
        "cpu": cpu,
        "contacts": contacts,
        "capped": capped,
        "sleeping": sleeping,
        "final": state.E[:, :3, 3].copy(),
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boxes", type=int, default=200)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--rest-from", type=float, default=2.0)
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    load0 = os.getloadavg()[0]
    runs = {name: run_route(args.boxes, args.duration, opts) for name, opts in ROUTES.items()}
    load1 = os.getloadavg()[0]
    split = int(round(args.rest_from / 0.005))
    lines = [
        "# Sleeping islands",
        "",
        "Written by `benchmarks/bench_sleeping.py`.",
        "",
        f"`box-pile` of {args.boxes} cubes dropped at t = 0, box friction by `pgs` (the "
        f"default), h = 5 ms, {args.duration:g} s; phases split at {args.rest_from:g} s. "
        f"Load average {load0:.2f} before, {load1:.2f} after (2 cores, shared). Times are "
        "thread CPU time per step.",
        "",
        "| route | phase | steps | median ms | mean ms | contacts posed (median) | "
        "sleeping bodies at the end | capped steps |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in runs.items():
        for phase, sl in (
            (f"0–{args.rest_from:g} s", slice(0, split)),
            (f"{args.rest_from:g}–{args.duration:g} s", slice(split, None)),
        ):
            cpu = r["cpu"][sl]
            lines.append(
                f"| {name} | {phase} | {cpu.size} | {1e3 * np.median(cpu):.2f} | "
                f"{1e3 * cpu.mean():.2f} | {int(np.median(r['contacts'][sl]))} | "
                f"{int(r['sleeping'][sl][-1])} | {int(r['capped'][sl].sum())} |"
            )
    moved = np.abs(runs["sleep"]["final"] - runs["general"]["final"]).max()
    lines += [
        "",
        f"Largest distance between a cube's final position with and without sleeping "
        f"(general layers both): {moved:.2e} m.",
        "",
        f"Command: `python -m benchmarks.bench_sleeping --boxes {args.boxes} --duration "
        f"{args.duration:g}`.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
