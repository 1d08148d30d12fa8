"""Contact step time on a pile of boxes: collision, assembly and solve, per model and backend.

Scene: the ``box-pile`` scenario (n cubes of 10 cm, 1 kg, mu = 0.5, dropped
from a column of jittered, randomly turned poses), n = 10, 100, 200, 500,
h = 5 ms.  Each pile is first dropped and left to land with box friction
solved by PGS at a loose tolerance (``solver_tol = 1e-4``) for ``settle``
seconds (2 s: the pile has come to rest; the top layers fall for ~0.4 s), so
the timed steps have the contacts of a resting pile, not of a fall.
From that landed state every model x backend pair is stepped ``steps``
times through :meth:`contactlab.simulator.Simulator.step`'s own parts:

- ``collision``: broad phase (uniform hash grid) and narrow phase (box-box
  manifolds, box-plane corners), :func:`contactlab.collision.collide`;
- ``assembly``: :meth:`MaximalFormulation.assemble` (mass matrix, free
  momentum, contact rows ``N``, ``T`` with their right-hand sides);
- ``solve``: the model's :meth:`solve` through the solver layer (its own
  set-up of the Delassus matrix included);

starting from the landed state's cache (box friction's impulses of the
last landing step, the warm start of its first timed step), each timed in
thread CPU time (robust to other load on the machine); the
table reports medians over the steps.  Pairs: box friction and the
frictionless contact problem by PGS at a ladder of tolerances (PGS's
declared accuracy ``solver_tol = 1e-6`` down to ``1e-3``: how many sweeps
each accuracy costs), the frictionless contact QP and Anitescu-Hart by OSQP,
Staggered Projections (box cone) by PGS and (pyramid) by OSQP up to n = 100,
and Stewart-Trinkle by Lemke at n = 10 only (dense pivoting).  The scaling
exponents of collision and assembly are the slopes of log time against log
number of contacts.

Run: ``python -m benchmarks.bench_contact`` (writes
``results/benchmarks/contact.{csv,md}`` and the coverage table
``contact_coverage.{csv,md}``; ``--pairs LABEL ...`` runs a subset of the
main table, ``--coverage-only`` / ``--no-coverage`` one of the two tables,
``--sizes``, ``--steps`` and ``--settle`` change the set-up).
"""

from __future__ import annotations

import argparse
import platform
import signal
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactlab.collision import collide
from contactlab.metrics import USABLE_STATUSES
from contactlab.scenario import get_scenario
from contactlab.scene import State
from contactlab.simulator import Simulator

SIZES = (10, 100, 200, 500)

#: Timed steps of the slow pairs (seconds per step on piles), taken without warm-up.
SLOW_STEPS = 3

# (label, model, solver, options, largest n, slow: timed for SLOW_STEPS steps without warm-up)
PAIRS: list[tuple[str, str, str, dict[str, Any], int, bool]] = [
    ("box-friction / pgs (tol 1e-6)", "box-friction", "pgs", {"solver_tol": 1e-6}, 500, False),
    ("box-friction / pgs (tol 1e-5)", "box-friction", "pgs", {"solver_tol": 1e-5}, 200, False),
    ("box-friction / pgs (tol 1e-4)", "box-friction", "pgs", {"solver_tol": 1e-4}, 500, False),
    ("box-friction / pgs (tol 1e-3)", "box-friction", "pgs", {"solver_tol": 1e-3}, 500, False),
    ("frictionless / pgs (tol 1e-6)", "frictionless", "pgs", {"solver_tol": 1e-6}, 500, False),
    ("frictionless / pgs (tol 1e-4)", "frictionless", "pgs", {"solver_tol": 1e-4}, 500, False),
    ("frictionless / osqp", "frictionless", "osqp", {}, 500, False),
    ("anitescu-hart / osqp", "anitescu-hart", "osqp", {}, 500, False),
    (
        "staggered-projections box / pgs (tol 1e-7)",
        "staggered-projections",
        "pgs",
        {"cone": "box", "solver_tol": 1e-7},
        100,
        True,
    ),
    ("staggered-projections / osqp", "staggered-projections", "osqp", {}, 100, True),
    ("stewart-trinkle / lemke", "stewart-trinkle", "lemke", {}, 10, True),
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


class StepUnusable(Exception):
    """A step whose velocities the simulator would not use (failed status or non-finite)."""


def measure(
    scene: Any,
    start: State,
    model: str,
    solver: str,
    options: dict[str, Any],
    steps: int,
    h: float,
    warmup: int = 0,
) -> dict[str, float]:
    """Thread CPU times [ms] of collision, assembly and solve over ``steps`` steps.

    ``warmup`` steps are taken first with the same model and solver and not
    timed, so the timed steps start from this pair's own warm start (its
    previous step's impulses) rather than from the landing's.  Reported: the
    medians of the parts, the median and the largest whole step, and the
    medians of the contacts and iterations.
    """
    sim = Simulator(scene, "maximal", model, solver, dt=h, model_options=options)
    state = start
    parts: dict[str, list[float]] = {"collision": [], "assembly": [], "solve": []}
    contacts_n, iters, outer, statuses = [], [], [], []
    warm_bad = 0
    for i in range(warmup + steps):
        t0 = time.thread_time()
        E, _ = sim.formulation.maximal(state)
        contacts = collide(scene, E)  # the pile has no joints: nothing to drop
        t1 = time.thread_time()
        problem = sim.formulation.assemble(state, h, contacts)
        t2 = time.thread_time()
        cache = dict(state.cache)
        solution = sim.model.solve(problem, cache)
        t3 = time.thread_time()
        if solution.status not in USABLE_STATUSES or not np.all(np.isfinite(solution.v)):
            # the simulator's own rule: such a step ends a run (no state is advanced)
            raise StepUnusable(
                f"step {i + 1} unusable: status {solution.status!r}"
                + ("" if np.all(np.isfinite(solution.v)) else ", non-finite velocities")
            )
        new = sim.formulation.advance(state, solution, h)
        state = replace(new, cache={**new.cache, **cache, **solution.cache})
        if i < warmup:
            warm_bad += solution.status != "optimal"
            continue
        parts["collision"].append(t1 - t0)
        parts["assembly"].append(t2 - t1)
        parts["solve"].append(t3 - t2)
        contacts_n.append(problem.n_contacts)
        iters.append(solution.iterations)
        outer.append(solution.outer_iterations)
        statuses.append(solution.status)
    row = {k: 1e3 * float(np.median(v)) for k, v in parts.items()}
    whole = 1e3 * (np.array(parts["collision"]) + parts["assembly"] + parts["solve"])
    row["step"] = float(np.median(whole))
    row["step_max"] = float(whole.max())
    row.update(
        contacts=float(np.median(contacts_n)),
        iterations=float(np.median(iters)),
        outer=float(np.median(outer)),
        not_optimal=sum(s != "optimal" for s in statuses),
        steps=steps,
        warmup=warmup,
        warmup_not_optimal=warm_bad,
    )
    return row


def slope(x: np.ndarray, y: np.ndarray) -> float:
    """Slope of log y against log x (NaN with fewer than two distinct x)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.unique(x).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def write_markdown(df: pd.DataFrame, path: Path, h: float, settle: float) -> None:
    geo = df.groupby("bodies")[["contacts", "collision", "assembly"]].median().reset_index()
    big = geo[geo["bodies"] >= 100]
    lines = [
        "# Contact step time on a box pile (collision, assembly, solve)",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy "
        f"{np.__version__}; thread CPU time at h = {h:g} s on the pile landed after "
        f"{settle:g} s; per pair `warm-up` untimed steps, then the timed steps (medians of "
        "the parts and of the whole step, and the largest step).  Generated by "
        "`benchmarks/bench_contact.py`.",
        "",
        "| bodies | model / backend | contacts | collision [ms] | assembly [ms] | solve [ms] "
        "| step [ms] | largest step [ms] | iterations | outer | not optimal (timed) "
        "| warm-up not optimal |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in df.itertuples():
        lines.append(
            f"| {r.bodies} | {r.pair} | {r.contacts:.0f} | {r.collision:.2f} | {r.assembly:.2f} "
            f"| {r.solve:.1f} | {r.step:.1f} | {r.step_max:.1f} | {r.iterations:.0f} "
            f"| {r.outer:.0f} | {r.not_optimal}/{r.steps} "
            f"| {r.warmup_not_optimal}/{r.warmup} |"
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
        "on QP backends); `not optimal` counts steps whose status was not `optimal` "
        "(PGS stopping at its 10000-sweep cap: `max_iterations`).",
        "",
    ]
    path.write_text("\n".join(lines))


#: The maximal-coordinate contact models of the coverage table.
COVERAGE_MODELS = (
    "frictionless",
    "anitescu-hart",
    "box-friction",
    "stewart-trinkle",
    "staggered-projections",
)
#: Coverage sizes, and the step time [s] at the smaller size above which a pair is
#: not run at the larger one.
COVERAGE_SIZES = (10, 100)
COVERAGE_BUDGET = 1.0
#: Models run at the smallest coverage size only: tens of seconds per step on the
#: 100-box pile (Staggered Projections' outer cap, dense Lemke pivoting; main table).
COVERAGE_SMALL_ONLY = ("staggered-projections", "stewart-trinkle")
#: Wall-clock limit [s] of one pair on one pile (its warm-up and timed steps together).
COVERAGE_LIMIT = 60.0


class PairTimeout(Exception):
    """A coverage pair ran past :data:`COVERAGE_LIMIT`."""


def _limited(seconds: float, fn: Any, *args: Any) -> Any:
    """``fn(*args)``, interrupted by :class:`PairTimeout` after ``seconds`` of wall time.

    Uses ``SIGALRM`` (Unix, main thread): the exception is raised between
    Python operations, so a single long call into a compiled solver finishes first.
    """

    def stop(signum: int, frame: Any) -> None:
        raise PairTimeout(f"stopped after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def coverage(piles: dict[int, tuple[Any, State]], h: float, steps: int = 2) -> list[dict[str, Any]]:
    """Every model of :data:`COVERAGE_MODELS` with every installed backend that fits it.

    Each pair takes one untimed step and ``steps`` timed steps on each pile
    (smallest first); a pair whose median step exceeded :data:`COVERAGE_BUDGET`
    on a smaller pile, or that did not finish within :data:`COVERAGE_LIMIT` of
    wall time, is recorded as not run on the larger ones.  A pair that
    raises (a backend refusing a step's problem) is recorded with its error.
    """
    from contactlab.models.base import model_class, model_names

    rows: list[dict[str, Any]] = []
    names = [m for m in COVERAGE_MODELS if m in model_names()]
    for model in names:
        cls = model_class(model)
        solvers_ = cls.compatible_solvers(**dict(getattr(cls, "defaults", {})))
        for solver in solvers_:
            too_slow = False
            for n in sorted(piles):
                scene, state = piles[n]
                base = {"bodies": n, "model": model, "backend": solver}
                if model in COVERAGE_SMALL_ONLY and n > min(piles):
                    rows.append({**base, "outcome": "not run (seconds per step; main table)"})
                    continue
                if too_slow:
                    rows.append({**base, "outcome": "not run (slow at a smaller pile)"})
                    continue
                try:
                    row = _limited(
                        COVERAGE_LIMIT, measure, scene, state, model, solver, {}, steps, h, 1
                    )
                except PairTimeout as exc:
                    rows.append({**base, "outcome": f"not finished: {exc} (slow)"})
                    too_slow = True
                    continue
                except StepUnusable as exc:
                    rows.append({**base, "outcome": f"run stopped: {exc}"})
                    continue
                except Exception as exc:  # recorded, the table goes on
                    rows.append({**base, "outcome": f"error: {type(exc).__name__}: {exc}"[:160]})
                    break
                rows.append({**base, **row, "outcome": "ran"})
                too_slow = row["step"] > 1e3 * COVERAGE_BUDGET
                print(
                    f"  {n:4d} {model:22s} {solver:20s} step {row['step']:9.1f} ms "
                    f"not optimal {row['not_optimal']}/{steps}",
                    flush=True,
                )
    return rows


def write_coverage(cov: pd.DataFrame, path: Path, settle: float) -> None:
    """Write the coverage table (one row per model, backend and pile) to ``path``."""
    lines = [
        "# Every maximal contact model with every backend that fits, on box piles",
        "",
        f"Piles landed for {settle:g} s as in `contact.md`.  Generated by "
        "`benchmarks/bench_contact.py` (`--coverage-only` runs this table alone).  Models "
        "use their default options (PGS is asked for its default tolerance 1e-6, the others "
        "for 1e-9).",
        "",
        "One untimed step, then the median of two timed steps (thread CPU time) on "
        f"the landed piles; a pair slower than {COVERAGE_BUDGET:g} s per step on the "
        "smaller pile is not run on the larger one, and a pair is stopped after "
        f"{COVERAGE_LIMIT:g} s of wall time on one pile.",
        "",
        "| bodies | model | backend | step [ms] | solve [ms] | iterations | outer "
        "| not optimal | outcome |",
        "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in cov.to_dict("records"):
        if r["outcome"] == "ran":
            lines.append(
                f"| {r['bodies']} | {r['model']} | {r['backend']} | {r['step']:.1f} "
                f"| {r['solve']:.1f} | {r['iterations']:.0f} | {r['outer']:.0f} "
                f"| {int(r['not_optimal'])}/{int(r['steps'])} | ran |"
            )
        else:
            outcome = str(r["outcome"]).replace("|", "/")
            lines.append(f"| {r['bodies']} | {r['model']} | {r['backend']} | | | | | | {outcome} |")
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=list(SIZES))
    ap.add_argument("--steps", type=int, default=20, help="timed steps per pair")
    ap.add_argument("--warmup", type=int, default=20, help="untimed steps before")
    ap.add_argument("--settle", type=float, default=2.0, help="landing time [s]")
    ap.add_argument("--dt", type=float, default=5e-3)
    ap.add_argument("--out", default="results/benchmarks/contact")
    ap.add_argument(
        "--pairs", nargs="*", default=None, help="labels of the pairs to run (default: all)"
    )
    ap.add_argument(
        "--no-coverage", action="store_true", help="skip the every-model-every-backend table"
    )
    ap.add_argument(
        "--coverage-only", action="store_true", help="only the every-model-every-backend table"
    )
    args = ap.parse_args(argv)
    rows = []
    piles: dict[int, tuple[Any, State]] = {}
    for n in args.sizes:
        t0 = time.perf_counter()
        scene, state = landed_pile(n, args.settle, args.dt)
        if n in COVERAGE_SIZES:
            piles[n] = (scene, state)
        print(f"n = {n}: landed in {time.perf_counter() - t0:.1f} s", flush=True)
        if args.coverage_only:
            continue
        for label, model, solver, options, largest, slow in PAIRS:
            if n > largest or (args.pairs is not None and label not in args.pairs):
                continue
            steps, warmup = (SLOW_STEPS, 0) if slow else (args.steps, args.warmup)
            row = measure(scene, state, model, solver, options, steps, args.dt, warmup)
            rows.append({"bodies": n, "pair": label, **row})
            print(
                f"  {label:34s} contacts {row['contacts']:5.0f}  collision "
                f"{row['collision']:7.2f}  assembly {row['assembly']:7.2f}  solve "
                f"{row['solve']:9.1f} ms  it {row['iterations']:.0f}",
                flush=True,
            )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not args.coverage_only:
        df = pd.DataFrame(rows)
        df.to_csv(out.with_suffix(".csv"), index=False)
        write_markdown(df, out.with_suffix(".md"), args.dt, args.settle)
        print(out.with_suffix(".md").read_text())
    if not args.no_coverage and piles:
        cov = pd.DataFrame(coverage(piles, args.dt))
        cov_out = out.parent / (out.name + "_coverage")
        cov.to_csv(cov_out.with_suffix(".csv"), index=False)
        write_coverage(cov, cov_out.with_suffix(".md"), args.settle)
        print(cov_out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
