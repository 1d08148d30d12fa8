"""Contact step time on a pile of boxes: collision, assembly and solve, per model and backend.

Scene: the ``box-pile`` scenario (n cubes of 10 cm, 1 kg, mu = 0.5, dropped
from a column of jittered, randomly turned poses), n = 10, 100, 200, 500,
h = 5 ms.  Each pile is first dropped and left to land with box friction
solved by PGS at a loose tolerance (``solver_tol = 1e-4``) for ``settle``
seconds, so the timed steps have the contacts of a pile, not of a fall.
From that landed state every model x backend pair is stepped ``steps``
times through :meth:`contactlab.simulator.Simulator.step`'s own parts:

- ``collision``: broad phase (sweep and prune) and narrow phase (box-box
  manifolds, box-plane corners), :func:`contactlab.collision.collide`;
- ``assembly``: :meth:`MaximalFormulation.assemble` (mass matrix, free
  momentum, contact rows ``N``, ``T`` with their right-hand sides);
- ``solve``: the model's :meth:`solve` through the solver layer (its own
  set-up of the Delassus matrix included);

starting from the landed state's cache (box friction's impulses of the
last landing step, the warm start of its first timed step), each timed in
thread CPU time (robust to other load on the machine); the
table reports medians over the steps.  Pairs: box friction by PGS (at PGS's
declared accuracy, ``solver_tol = 1e-6``, and at ``1e-4``), the frictionless
contact QP and Anitescu-Hart by OSQP, Staggered Projections (box cone) by
PGS and (pyramid) by OSQP up to n = 100 (at their default caps they take
tens of seconds per step beyond), and Stewart-Trinkle by Lemke at n = 10
only (dense pivoting).  The scaling exponents of collision and assembly are the
slopes of log time against log number of contacts.

Run: ``python -m benchmarks.bench_contact`` (writes
``results/benchmarks/contact.csv`` and ``contact.md``).
"""

from __future__ import annotations

import argparse
import platform
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactlab.collision import collide
from contactlab.scenario import get_scenario
from contactlab.scene import State
from contactlab.simulator import Simulator

SIZES = (10, 100, 200, 500)

# (label, model, solver, options, largest n)
PAIRS: list[tuple[str, str, str, dict[str, Any], int]] = [
    ("box-friction / pgs (tol 1e-6)", "box-friction", "pgs", {"solver_tol": 1e-6}, 500),
    ("box-friction / pgs (tol 1e-4)", "box-friction", "pgs", {"solver_tol": 1e-4}, 500),
    ("frictionless / osqp", "frictionless", "osqp", {}, 500),
    ("anitescu-hart / osqp", "anitescu-hart", "osqp", {}, 500),
    ("staggered-projections box / pgs", "staggered-projections", "pgs", {"cone": "box"}, 100),
    ("staggered-projections / osqp", "staggered-projections", "osqp", {}, 100),
    ("stewart-trinkle / lemke", "stewart-trinkle", "lemke", {}, 10),
]


def landed_pile(n: int, settle: float, h: float) -> tuple[Any, State]:
    """The box-pile scene and its state after ``settle`` seconds of falling and landing."""
    scene = get_scenario("box-pile").build(n=n)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=h, model_options={"solver_tol": 1e-4}
    )
    state = sim.initial_state()
    for i in range(int(round(settle / h))):
        state, _ = sim.step(state, i)
    return scene, state


def measure(
    scene: Any, start: State, model: str, solver: str, options: dict[str, Any], steps: int, h: float
) -> dict[str, float]:
    """Median thread CPU times [ms] of collision, assembly and solve over ``steps`` steps."""
    sim = Simulator(scene, "maximal", model, solver, dt=h, model_options=options)
    state = start
    parts: dict[str, list[float]] = {"collision": [], "assembly": [], "solve": []}
    contacts_n, iters, outer, statuses = [], [], [], []
    for _ in range(steps):
        t0 = time.thread_time()
        E, _ = sim.formulation.maximal(state)
        contacts = collide(scene, E)  # the pile has no joints: nothing to drop
        t1 = time.thread_time()
        problem = sim.formulation.assemble(state, h, contacts)
        t2 = time.thread_time()
        cache = dict(state.cache)
        solution = sim.model.solve(problem, cache)
        t3 = time.thread_time()
        parts["collision"].append(t1 - t0)
        parts["assembly"].append(t2 - t1)
        parts["solve"].append(t3 - t2)
        contacts_n.append(problem.n_contacts)
        iters.append(solution.iterations)
        outer.append(solution.outer_iterations)
        statuses.append(solution.status)
        new = sim.formulation.advance(state, solution, h)
        state = replace(new, cache={**new.cache, **cache, **solution.cache})
    row = {k: 1e3 * float(np.median(v)) for k, v in parts.items()}
    row["step"] = row["collision"] + row["assembly"] + row["solve"]
    row.update(
        contacts=float(np.median(contacts_n)),
        iterations=float(np.median(iters)),
        outer=float(np.median(outer)),
        not_optimal=sum(s != "optimal" for s in statuses),
    )
    return row


def slope(x: np.ndarray, y: np.ndarray) -> float:
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def write_markdown(df: pd.DataFrame, path: Path, steps: int, h: float, settle: float) -> None:
    geo = df.groupby("bodies")[["contacts", "collision", "assembly"]].median().reset_index()
    big = geo[geo["bodies"] >= 100]
    lines = [
        "# Contact step time on a box pile (collision, assembly, solve)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}; thread CPU time, median of {steps} steps at h = {h:g} s from the "
        f"pile landed after {settle:g} s.  Generated by `benchmarks/bench_contact.py`.",
        "",
        "| bodies | model / backend | contacts | collision [ms] | assembly [ms] | solve [ms] "
        "| step [ms] | iterations | outer | steps not optimal |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.bodies} | {r.pair} | {r.contacts:.0f} | {r.collision:.2f} | {r.assembly:.2f} "
            f"| {r.solve:.1f} | {r.step:.1f} | {r.iterations:.0f} | {r.outer:.0f} "
            f"| {r.not_optimal}/{steps} |"
        )
    lines += [
        "",
        "Collision and assembly against the number of contacts (median over the pairs):",
        "",
        "| bodies | contacts | collision [ms] | assembly [ms] |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for r in geo.itertuples():
        lines.append(f"| {r.bodies} | {r.contacts:.0f} | {r.collision:.2f} | {r.assembly:.2f} |")
    lines += [
        "",
        "Scaling exponents (slope of log time vs log contacts):",
        "",
        "| part | all sizes | n >= 100 |",
        "| --- | ---: | ---: |",
    ]
    for part in ("collision", "assembly"):
        lines.append(
            f"| {part} | {slope(geo['contacts'], geo[part]):.2f} "
            f"| {slope(big['contacts'], big[part]):.2f} |"
        )
    lines += [
        "",
        "`iterations` are the solver's (PGS sweeps, OSQP/ADMM iterations, Lemke pivots, "
        "summed over the inner solves of a step); `outer` the model's outer iterations "
        "(Staggered Projections' contact/friction alternations, box friction's fixed point "
        "on QP backends); `steps not optimal` counts steps whose status was not `optimal` "
        "(PGS stopping at its 10000-sweep cap: `max_iterations`).",
        "",
    ]
    path.write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--settle", type=float, default=0.6, help="landing time [s]")
    ap.add_argument("--dt", type=float, default=5e-3)
    ap.add_argument("--out", default="results/benchmarks/contact")
    args = ap.parse_args(argv)
    rows = []
    for n in args.sizes:
        t0 = time.perf_counter()
        scene, state = landed_pile(n, args.settle, args.dt)
        print(f"n = {n}: landed in {time.perf_counter() - t0:.1f} s", flush=True)
        for label, model, solver, options, largest in PAIRS:
            if n > largest:
                continue
            row = measure(scene, state, model, solver, options, args.steps, args.dt)
            rows.append({"bodies": n, "pair": label, **row})
            print(
                f"  {label:34s} contacts {row['contacts']:5.0f}  collision "
                f"{row['collision']:7.2f}  assembly {row['assembly']:7.2f}  solve "
                f"{row['solve']:9.1f} ms  it {row['iterations']:.0f}",
                flush=True,
            )
    df = pd.DataFrame(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out.with_suffix(".csv"), index=False)
    write_markdown(df, out.with_suffix(".md"), args.steps, args.dt, args.settle)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
