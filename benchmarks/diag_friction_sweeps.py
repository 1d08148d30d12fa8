"""Why first-order frictional-contact solvers need thousands of iterations on piles.

Takes a step problem of a landed box pile (the piles of
:mod:`benchmarks.bench_friction`), posed as the local frictional-contact
problem of a model, warm-started from the previous step's impulses, and runs
``nsgs`` one sweep at a time from that start (a memoryless iteration, so one
call per sweep is the same iteration as one call for all), logging after selected
iterations the natural-map residual (the stopping test), the change of the
contact velocities ``u = W r + q`` and of the impulses ``r`` in that iteration,
and the distance of ``u`` to the velocities of a reference solve (``ipm`` to
1e-9).  Then the same problem by ``ipm``: its iterations and residual.

Run: ``python -m benchmarks.diag_friction_sweeps --n 100``
(prints a Markdown table; numbers quoted in ``results/benchmarks/friction.md``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.bench_friction import landed, posed_problems
from contactlab.simulator import Simulator
from solvers import solve
from solvers.frictional import fc_residuals

CHECKS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)


def step_problem(n: int, model: str, options: dict[str, Any], steps: int) -> tuple[Any, Any]:
    """The local problem of the ``steps``-th step of the landed pile and its warm start."""
    scene, state = landed(n, 2.0, 5e-3, Path("results/scratch/friction-piles"))
    sim = Simulator(scene, "maximal", model, "ipm", dt=5e-3, model_options=options)
    return posed_problems(sim, state, steps)[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args(argv)
    problem, warm = step_problem(args.n, "anitescu-hart", {"cone": "soc"}, args.steps)
    r = np.zeros(problem.n) if warm is None else np.array(warm, dtype=float)
    ref = solve(problem, "ipm", tol=1e-9)
    u_ref = problem.velocity(ref.x)
    u = problem.velocity(r)
    print(f"{problem}; ||q|| = {np.linalg.norm(problem.q):.3g} m/s")
    print("| iteration | natural map | ‖Δu‖ per iteration | ‖Δr‖ per iteration | max |u - u_ref| |")
    print("|---|---|---|---|---|")
    for k in range(1, args.iterations + 1):
        res = solve(problem, "nsgs", tol=1e-300, max_iter=1, warm_start=r)
        u_new = problem.velocity(res.x)
        if k in CHECKS or k == args.iterations:
            nat = fc_residuals(problem, res.x)["natural_map"]
            print(
                f"| {k} | {nat:.2e} | {np.linalg.norm(u_new - u):.2e} | "
                f"{np.linalg.norm(res.x - r):.2e} | {np.abs(u_new - u_ref).max():.2e} |"
            )
        r, u = res.x, u_new
    hot = solve(problem, "ipm", tol=1e-6)
    print(f"\nipm: {hot.status}, {hot.iterations} iterations, {hot.message}")


if __name__ == "__main__":
    main()
