"""``contactlab fclib export`` and ``contactlab fclib solve``: step problems as FCLIB files.

``export RUN_OR_SCENARIO`` steps a scenario (or re-runs a results folder
with the settings of its ``summary.json``) and writes every step with
contacts as an FCLIB local problem (:mod:`solvers.fclib`): the step's
frictional-contact problem (:func:`contactlab.models.fc_route.local_problem`)
under the chosen law and cone.

``solve FILES...`` solves each file with every requested backend that fits
(default: every installed one that fits) and writes, as sweeps do, the
per-run table ``runs.csv``, the solver table ``table.md`` (success at the
tolerance: status ``optimal`` with natural-map residual at most ``--tol``;
shifted geometric mean of the time, failures charged ten times the slowest
success; :func:`contactlab.experiments.aggregate.solver_table`) and the
Dolan--Moré profile ``profile.png``.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd

from contactlab.commands import (
    add_set_option,
    parse_assignments,
    parse_option_value,
    register_command,
)
from contactlab.errors import ConfigurationError, ResultsError
from contactlab.results import (
    atomic_file,
    check_summary_steps,
    check_writable,
    read_summary_file,
)


def _setup(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="fclib_command", required=True)
    exp = sub.add_parser("export", help="write a run's or scenario's step problems as FCLIB files")
    exp.add_argument("source", help="a scenario name or a results folder with summary.json")
    exp.add_argument("--out", type=Path, required=True, help="folder for the .hdf5 files")
    exp.add_argument("--model", default="box-friction", help="model stepping the scene")
    exp.add_argument("--solver", default="pgs", help="its backend")
    exp.add_argument("--law", default="coulomb", choices=["coulomb", "ccp"])
    exp.add_argument("--cone", default="soc", choices=["soc", "pyramid", "box"])
    exp.add_argument("--steps", type=int, default=None)
    exp.add_argument("--dt", type=float, default=None)
    add_set_option(exp)
    sol = sub.add_parser("solve", help="solve FCLIB files with every fitting backend")
    sol.add_argument("files", nargs="+", type=Path)
    sol.add_argument("--solvers", nargs="*", default=None, help="backends (default: all fitting)")
    sol.add_argument("--tol", type=float, default=1e-6, help="natural-map tolerance")
    sol.add_argument("--max-iter", type=int, default=None)
    sol.add_argument("--out", type=Path, required=True, help="folder for the table and plot")


def export(args: argparse.Namespace) -> list[Path]:
    """Write the step problems; returns the files."""
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    source = Path(args.source)
    params: dict[str, Any] = {
        k: parse_option_value(v) for k, v in parse_assignments(args.params, "--set").items()
    }
    model, solver, dt, steps = args.model, args.solver, args.dt, args.steps
    options: dict[str, Any] = {}
    name = args.source
    # the destination first: nothing is stepped for a folder that cannot be written
    check_writable(args.out)
    if source.is_dir():
        summary_path = source / "summary.json"
        if not summary_path.exists():
            raise ConfigurationError(
                f"{source} has no summary.json; pass a results folder or a scenario name"
            )
        s = read_summary_file(source)
        try:
            name, params = str(s["scenario"]), {**s.get("parameters", {}), **params}
            model, solver = str(s["model"]), str(s["solver"])
            options = dict(s.get("model_options") or {})
        except (KeyError, TypeError, ValueError) as err:
            raise ResultsError(
                f"{str(summary_path)!r} is not a run summary (no {err}); pass a results "
                "folder written by `contactlab run`, or a scenario name"
            ) from err
        check_summary_steps(source, s)
        recorded_dt = s.get("dt")
        if recorded_dt is not None and (
            isinstance(recorded_dt, bool)
            or not isinstance(recorded_dt, (int, float))
            or not recorded_dt > 0
        ):
            raise ResultsError(
                f"{str(summary_path)!r} is not a run summary ('dt' is {recorded_dt!r}, not a "
                "step size); pass a results folder written by `contactlab run`"
            )
        dt = dt or recorded_dt
        steps = steps or s.get("steps")
    scene = get_scenario(name).build(**params)
    sim = Simulator(scene, "maximal", model, solver, dt=dt, model_options=options)
    n_steps = sim.n_steps(steps)
    state = sim.initial_state()
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ResultsError(f"--out {str(args.out)!r} cannot be created: {err.strerror}") from err
    files: list[Path] = []
    try:
        _export_steps(args, sim, state, n_steps, name, params, model, solver, files)
    except KeyboardInterrupt as err:
        # every file written before the Ctrl-C is whole (written beside and renamed)
        raise KeyboardInterrupt(
            f"interrupted; the {len(files)} FCLIB files written before it are kept in "
            f"{str(args.out)!r}"
        ) from err
    return files


def _export_steps(
    args: argparse.Namespace,
    sim: Any,
    state: Any,
    n_steps: int,
    name: str,
    params: dict[str, Any],
    model: str,
    solver: str,
    files: list[Path],
) -> None:
    """Step ``sim`` and append each written FCLIB file to ``files``."""
    from contactlab.models.fc_route import local_problem
    from solvers import fclib

    for i in range(n_steps):
        state, record = sim.step(state, i)
        if record.problem.n_contacts == 0:
            continue
        fc, *_ = local_problem(record.problem, args.law, args.cone, record.problem.directions)
        if fc.row_lo.size:
            raise ConfigurationError(
                f"{name} has joints or limits (scalar rows), which FCLIB's local form cannot hold"
            )
        path = args.out / f"{name}-step{i:05d}.hdf5"
        fclib.write(
            path,
            fc,
            title=f"{name} step {i}",
            description=f"contactlab {name} {params}, model {model} by {solver}, h = {sim.dt}",
            math_info=f"{args.law} law, {args.cone} cone",
        )
        files.append(path)


def solve_files(args: argparse.Namespace) -> pd.DataFrame:
    """One row per (file, backend): success, time [ms], iterations, residual."""
    from solvers import fclib, solve
    from solvers.errors import SolverError, SolverNotFound
    from solvers.fc_dispatch import fitting_backends

    if not (args.tol > 0 and math.isfinite(args.tol)):
        raise ConfigurationError(f"--tol must be a positive number, got {args.tol}")
    if args.max_iter is not None and args.max_iter < 1:
        raise ConfigurationError(f"--max-iter must be an integer >= 1, got {args.max_iter}")
    problems = [(path, fclib.read(path).problem) for path in args.files]  # all read first
    rows = []
    for path, problem in problems:
        names = args.solvers or fitting_backends(problem)
        for name in names:
            t0 = time.perf_counter()
            try:
                res = solve(problem, name, tol=args.tol, max_iter=args.max_iter)
            except SolverNotFound:
                raise  # a misspelt --solvers name is the user's mistake, not a failed row
            except SolverError as err:
                # a backend that refuses this problem (a zero normal diagonal) is a failed
                # row of the table, named with its reason, not the end of the benchmark
                rows.append(
                    {
                        "file": path.name,
                        "solver": name,
                        "status": "failed",
                        "success": False,
                        "solve_time_ms": float("nan"),
                        "iterations_mean": float("nan"),
                        "natural_map": float("nan"),
                        "contacts": int(getattr(problem, "nc", 0)),
                        "message": " ".join(str(err).split()),
                    }
                )
                continue
            wall = time.perf_counter() - t0
            natural = res.residuals.get("natural_map", float("nan"))
            rows.append(
                {
                    "file": path.name,
                    "solver": name,
                    "status": res.status,
                    "success": bool(res.status == "optimal" and natural <= args.tol),
                    "solve_time_ms": 1e3 * wall,
                    "iterations_mean": float(res.iterations),
                    "natural_map": natural,
                    "contacts": int(getattr(problem, "nc", 0)),
                    "message": "",
                }
            )
    return pd.DataFrame(rows)


def _handler(args: argparse.Namespace) -> int:
    if args.fclib_command == "export":
        files = export(args)
        print(f"{len(files)} FCLIB files in {args.out}")
        return 0
    from contactlab.experiments.aggregate import solver_table
    from contactlab.experiments.plots import plot_profile

    check_writable(args.out)  # before solving anything
    runs = solve_files(args)
    table = solver_table(runs, ["solver"], ["file"])
    lines = [
        f"# FCLIB solve: {runs['file'].nunique()} problems, natural-map tolerance {args.tol:g}",
        "",
        "| solver | success | shifted geometric mean [ms] | relative | mean iterations |",
        "|---|---|---|---|---|",
    ]
    for _, r in table.iterrows():
        lines.append(
            f"| {r['solver']} | {r['success_rate']:.0%} | {r['shifted_gm']:.2f} | "
            f"{r['shifted_gm_rel']:.2f} | {r['mean_iterations']:.0f} |"
        )
    # the three files written together: each beside its place, renamed when all are done
    with (
        atomic_file(args.out / "runs.csv") as runs_tmp,
        atomic_file(args.out / "table.md") as table_tmp,
        atomic_file(args.out / "profile.png") as profile_tmp,
    ):
        runs.to_csv(runs_tmp, index=False)
        table_tmp.write_text("\n".join(lines) + "\n")
        plot_profile(runs, ["solver"], ["file"], profile_tmp)
    print("\n".join(lines))
    return 0


register_command(
    "fclib", "export step problems as FCLIB files, or solve FCLIB files", _setup, _handler
)
