"""Step cost of the maximal formulation's integrators and of soft constraints.

Scenes: ``spring-chain`` (hinged links joined by zero-length springs, so the
implicit integrators form K and D) and ``chain`` (hinges only, ``joints=R``),
n = 10, 100, 1000 links.  For each integrator (and, on ``chain``, with every
joint soft at compliance 1e-6) the simulation is stepped from the placed
state and each step's parts are timed in thread CPU time (robust to other
load): ``assembly`` (:meth:`MaximalFormulation.assemble`), ``solve`` (the KKT
system through ``solvers.solve(..., "kkt")``) and ``advance`` (positions,
projection, Bridson–Marino's second half-kick).  The table reports medians
and the ratio of the whole step to ``linearly-implicit`` on the same scene.

Run: ``python -m benchmarks.bench_integrators`` (writes
``results/benchmarks/integrators.csv`` and ``integrators.md``).
"""

from __future__ import annotations

import platform

import pandas as pd

from benchmarks import harness
from benchmarks.bench_maximal import timed_kkt_steps
from contactlab.maximal import MaximalFormulation
from contactlab.maximal.integrators import INTEGRATORS
from contactlab.scenario import get_scenario

SIZES = (10, 100, 1000)


def measure(scenario: str, n: int, integrator: str, steps: int, **options: float) -> dict:
    """Median thread CPU times [ms] of one step's parts."""
    params = {"n_links": n} if scenario == "spring-chain" else {"n_links": n, "joints": "R"}
    scene = get_scenario(scenario).build(**params)
    form = MaximalFormulation(scene, integrator=integrator, **options)
    state = form.initial_state()
    out, _, state = timed_kkt_steps(form, state, 1e-2, steps)
    out.update(
        scenario=scenario,
        n_links=n,
        integrator=integrator,
        compliance=float(options.get("compliance", 0.0)),
        drift=form.metrics(state)["constraint_error"],
    )
    return out


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args(argv)
    rows = []
    for scenario, options in (("spring-chain", {}), ("chain", {}), ("chain", {"compliance": 1e-6})):
        for n in SIZES:
            for integrator in INTEGRATORS:
                rows.append(measure(scenario, n, integrator, args.steps, **options))
    df = pd.DataFrame(rows)
    base = df[df["integrator"] == "linearly-implicit"].set_index(
        ["scenario", "n_links", "compliance"]
    )["step"]
    df["ratio_to_default"] = [
        r.step / base[(r.scenario, r.n_links, r.compliance)] for r in df.itertuples()
    ]
    cols = [
        "scenario",
        "n_links",
        "compliance",
        "integrator",
        "assembly",
        "solve",
        "advance",
        "step",
        "ratio_to_default",
        "drift",
    ]
    df = df[cols]
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "integrators.csv", index=False)
    lines = [
        "# Integrators: step cost (thread CPU time, median ms)",
        "",
        f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, "
        f"{args.steps} steps of 10 ms from the placed state; "
        "`python -m benchmarks.bench_integrators`.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    for r in df.itertuples(index=False):
        lines.append(
            "| " + " | ".join(f"{v:.3g}" if isinstance(v, float) else str(v) for v in r) + " |"
        )
    (args.out / "integrators.md").write_text("\n".join(lines) + "\n")
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()
