"""Contact stepping speed: the exact Coulomb law's solvers against MuJoCo, and batched runs.

Sections (``results/benchmarks/contact_speed.md``):

``coulomb``
    A ``box-pile`` of ``--boxes`` cubes (default 200) dropped from t = 0 and stepped by
    ``coulomb`` / ``ipm`` (h = 5 ms) for ``--steps`` steps; every posed problem is kept
    with its warm start and solved again, in the same process, by each other backend
    (``padmm``, ``nsgs``) from the same warm start, and the pose of every step is stepped
    once by MuJoCo (Newton, elliptic cones; the scene of :func:`bench_friction.mujoco_step`).
    Per backend: steps, steps that met the tolerance (1e-6, natural map), median and
    90 % solve time [ms], µs per contact, median iterations, largest velocity difference
    to ``ipm`` over the steps both met [m/s]; MuJoCo's median step time on the same poses.
    The solve is the whole of the difference between two routes' steps (collision and
    assembly are shared), so ``ipm``'s full step time is reported beside it.

``batch``
    ``--copies`` copies (default 64) of a 20-box pile (seeds 0.., ``coulomb`` / ``nsgs``,
    islands on) for ``--batch-steps`` steps (default 100: the cubes land from step 20 on):
    one :class:`contactlab.batch.Batch` in this process against the same number of
    separate ``contactlab run`` processes and of separate simulators run one after another
    in this process (each measured on ``--separate`` of them, default 8, and scaled):
    steps per second of all copies.

Run: ``python -m benchmarks.bench_contact_speed [--boxes 200 --steps 40] [--only coulomb]``.
Times are wall clock on a shared machine: the load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "contact_speed.md"
TOL = 1e-6


def record_drop(boxes: int, steps: int) -> tuple[Any, list[dict[str, Any]]]:
    """Step the drop with ``coulomb`` / ``ipm``; per step its state, posed problem, warm
    start, ``ipm``'s result and step time."""
    from contactlab.models.base import SolvingModel
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=boxes)
    sim = Simulator(scene, "maximal", "coulomb", "ipm")
    state = sim.initial_state()
    posed: list[tuple[Any, Any, Any]] = []
    original = SolvingModel.run

    def recording(self: SolvingModel, problem: Any, warm: Any = None) -> Any:
        res = original(self, problem, warm)
        posed.append((problem, warm, res))
        return res

    rows: list[dict[str, Any]] = []
    SolvingModel.run = recording  # type: ignore[method-assign]
    try:
        for i in range(steps):
            posed.clear()
            before = state
            t0 = time.perf_counter()
            state, _ = sim.step(state, i)
            dt = time.perf_counter() - t0
            for problem, warm, res in posed:
                rows.append(
                    {"step": i, "state": before, "problem": problem, "warm": warm,
                     "ipm": res, "step_ms": 1e3 * dt}
                )  # fmt: skip
    finally:
        SolvingModel.run = original  # type: ignore[method-assign]
    return scene, rows


def coulomb_section(boxes: int, steps: int, backends: list[str]) -> str:
    import solvers
    from benchmarks.bench_friction import mujoco_step

    load0 = os.getloadavg()[0]
    scene, rows = record_drop(boxes, steps)
    rows = [r for r in rows if r["problem"].nc > 0]
    per: dict[str, list[tuple[str, float, int, float, int]]] = {}
    for r in rows:
        p, ref = r["problem"], r["ipm"]
        per.setdefault("ipm", []).append(
            (ref.status, 1e3 * (ref.setup_time + ref.solve_time), ref.iterations, 0.0, p.nc)
        )
        for name in backends:
            t0 = time.perf_counter()
            res = solvers.solve(p, name, tol=TOL, warm_start=r["warm"])
            ms = 1e3 * (time.perf_counter() - t0)
            du = (
                float(np.max(np.abs(res.w - ref.w)))
                if res.status == "optimal" and ref.status == "optimal"
                else float("nan")
            )
            per.setdefault(name, []).append((res.status, ms, res.iterations, du, p.nc))
    mj = []
    for r in rows:
        m = mujoco_step(scene, r["state"], scene.dt, 1)
        if m is not None:
            mj.append((m["step_ms"], m["contacts"]))
    load1 = os.getloadavg()[0]
    lines = [
        f"## Exact Coulomb law: {boxes}-box pile drop, {len(rows)} steps with contacts "
        f"(of {steps} from t = 0), h = 5 ms, tol {TOL:g}",
        "",
        f"Load average {load0:.2f} before, {load1:.2f} after (2 cores, shared).",
        "",
        "| solver | steps met tol | median ms | p90 ms | µs / contact | median iterations "
        "| max ‖u − u_ipm‖∞ [m/s] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, vals in per.items():
        ok = sum(v[0] == "optimal" for v in vals)
        ms = np.array([v[1] for v in vals])
        nc = np.array([v[4] for v in vals])
        du = np.array([v[3] for v in vals])
        du_max = float(np.nanmax(du)) if np.isfinite(du).any() else float("nan")
        lines.append(
            f"| {name} | {ok} / {len(vals)} | {np.median(ms):.1f} | {np.quantile(ms, 0.9):.1f} "
            f"| {1e3 * np.median(ms / nc):.1f} | {np.median([v[2] for v in vals]):.0f} "
            f"| {du_max:.1e} |"
        )
    step_ms = np.array([r["step_ms"] for r in rows])
    lines += [
        "",
        f"`ipm`'s whole step (collision, assembly, solve, integration): median "
        f"{np.median(step_ms):.1f} ms.",
    ]
    if mj:
        ms = np.array([m[0] for m in mj])
        nc = np.array([max(m[1], 1.0) for m in mj])
        lines.append(
            f"MuJoCo (Newton, elliptic) on the same poses: median {np.median(ms):.2f} ms per "
            f"step, {1e3 * np.median(ms / nc):.1f} µs per contact "
            f"({np.median(nc):.0f} contacts)."
        )
    return "\n".join(lines) + "\n"


def batch_section(copies: int, steps: int, separate: int) -> str:
    from contactlab.batch import Batch
    from contactlab.commands import EXIT_UNCONVERGED
    from contactlab.scenario import get_scenario

    load0 = os.getloadavg()[0]
    scenes = [get_scenario("box-pile").build(n=20, seed=s) for s in range(copies)]
    Batch(scenes[:1], "maximal", "coulomb", "nsgs").run(steps=2)  # kernels loaded
    t0 = time.perf_counter()
    Batch(scenes, "maximal", "coulomb", "nsgs").run(steps=steps)
    batch_s = time.perf_counter() - t0
    from contactlab.simulator import Simulator

    t0 = time.perf_counter()
    for scene in scenes[:separate]:
        Simulator(scene, "maximal", "coulomb", "nsgs", model_options={"islands": True}).run(
            steps=steps
        )
    in_process = (time.perf_counter() - t0) / separate
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for s in range(separate):
            t0 = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "contactlab", "run", "box-pile", "--set", "n=20",
                 "--set", f"seed={s}", "--model", "coulomb", "--solver", "nsgs",
                 "--model-option", "islands=true", "--steps", str(steps), "--quiet",
                 "--no-plots", "--out", str(Path(tmp) / f"run{s}")],
                check=False, env=env, capture_output=True,
            )  # fmt: skip
            if done.returncode not in (0, EXIT_UNCONVERGED):  # 3: some steps capped
                raise RuntimeError(f"separate run {s} failed: {done.stderr.decode()[-500:]}")
            times.append(time.perf_counter() - t0)
    one = float(np.mean(times))
    load1 = os.getloadavg()[0]
    total = copies * steps
    return (
        "\n".join(
            [
                f"## Batched runs: {copies} copies of a 20-box pile, {steps} steps each "
                "(`coulomb` / `nsgs`, islands)",
                "",
                f"Load average {load0:.2f} before, {load1:.2f} after.",
                "",
                "| route | wall [s] | copy-steps per second |",
                "| --- | ---: | ---: |",
                f"| one batch in one process | {batch_s:.1f} | {total / batch_s:.0f} |",
                f"| {copies} separate `contactlab run` (mean of {separate} measured: "
                f"{one:.1f} s each) | {copies * one:.1f} | {total / (copies * one):.0f} |",
                f"| {copies} separate simulators one after another in this process (mean of "
                f"{separate} measured: {in_process:.2f} s each) | {copies * in_process:.1f} "
                f"| {total / (copies * in_process):.0f} |",
                "",
                f"Throughput ratio: {copies * one / batch_s:.1f}x against separate processes, "
                f"{copies * in_process / batch_s:.2f}x against separate simulators in one process.",
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=200)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--backends", default="padmm")
    ap.add_argument("--copies", type=int, default=64)
    ap.add_argument("--batch-steps", type=int, default=100)
    ap.add_argument("--separate", type=int, default=8)
    ap.add_argument("--only", choices=("coulomb", "batch"))
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    parts = ["# Contact stepping speed\n", "Written by `benchmarks/bench_contact_speed.py`.\n"]
    if args.only in (None, "coulomb"):
        parts.append(coulomb_section(args.boxes, args.steps, args.backends.split(",")))
    if args.only in (None, "batch"):
        parts.append(batch_section(args.copies, args.batch_steps, args.separate))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(parts))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
