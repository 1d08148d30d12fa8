"""``contactlab optimize SCENARIO``: a least-squared-torque trajectory written as a results folder.

The folder holds ``summary.json`` (problem, cost, iterations, gradient check,
boundary error, versions), ``steps.csv`` (one row per knot: t, q, qdot,
qddot, tau), ``trajectory.npz`` (the same arrays plus body poses, so
``contactlab render`` draws it), ``plots/`` (positions, torques,
convergence) and ``animation.gif``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactlab.cli import SCRATCH
from contactlab.commands import add_set_option, parse_assignments, register_command
from contactlab.errors import ConfigurationError
from contactlab.optimize.spacetime import METHODS, SpacetimeProblem, SpacetimeResult, optimize
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.model import Model
from contactlab.results import atomic_folder, git_commit, jsonable, package_versions

_NUMBER = re.compile(r"^\s*([-+0-9.eE]+)\s*(deg)?\s*$")


#: Largest magnitude of a position or velocity given on the command line: the torques
#: square differences of them over the knot interval, which overflow far beyond it.
MAX_VALUE = 1e6


def parse_values(text: str | None, nq: int, name: str) -> np.ndarray | None:
    """``"0, 90deg, 0.1"`` -> (nq,) [rad or m]; ``deg`` converts one entry from degrees."""
    if text is None:
        return None
    values = []
    for item in text.split(","):
        match = _NUMBER.match(item)
        if not match:
            raise ConfigurationError(
                f"{name}: {item.strip()!r} is not a number (use e.g. 0.5 or 90deg)"
            )
        value = float(match.group(1))
        value = float(np.deg2rad(value)) if match.group(2) else value
        if not abs(value) <= MAX_VALUE:
            raise ConfigurationError(
                f"{name}: {item.strip()!r} is beyond the limit of {MAX_VALUE:g} in magnitude "
                "[rad, m or per second]; give a smaller value"
            )
        values.append(value)
    if len(values) == 1 and nq > 1:
        values *= nq
    if len(values) != nq:
        raise ConfigurationError(f"{name} needs {nq} comma-separated values, got {len(values)}")
    return np.array(values)


def parse_via(items: list[str] | None, nq: int) -> dict[float, np.ndarray]:
    """``["0.5:10deg,0,0", ...]`` -> ``{0.5: (nq,)}``."""
    out: dict[float, np.ndarray] = {}
    for item in items or ():
        t, sep, values = item.partition(":")
        if not sep:
            raise ConfigurationError(f"--via expects TIME:VALUES, e.g. 0.5:10deg,0,0; got {item!r}")
        out[float(t)] = parse_values(values, nq, f"--via {item}")  # type: ignore[assignment]
    return out


def _plots(folder: Path, result: SpacetimeResult, names: list[str]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    (folder / "plots").mkdir()
    for key, label in (("q", "q [rad or m]"), ("tau", "tau [N m or N]")):
        fig, ax = plt.subplots(figsize=(6, 3.5))
        for i, name in enumerate(names):
            ax.plot(result.t, getattr(result, key)[:, i], label=name)
        ax.set_xlabel("t [s]")
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(folder / "plots" / f"{key}.png", dpi=110)
        plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.semilogy(np.arange(len(result.history)), result.history)
    ax.set_xlabel("iteration")
    ax.set_ylabel("cost [N^2 m^2 s]")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(folder / "plots" / "convergence.png", dpi=110)
    plt.close(fig)


def _save_trajectory(path: Path, tree: Any, result: Any, **extra: Any) -> None:
    """An optimized trajectory as ``trajectory.npz``: ``t``, ``body_names``, the body poses
    (``position``, ``rotation``) by forward kinematics, ``q``, ``qdot``, ``qddot``, ``tau``
    and the ``extra`` arrays."""
    E = np.array([forward_kinematics(tree, q).E for q in result.q])
    np.savez_compressed(
        path,
        t=result.t,
        body_names=np.array([b.name for b in tree.scene.bodies]),
        position=E[:, :, :3, 3],
        rotation=E[:, :, :3, :3],
        q=result.q,
        qdot=result.qdot,
        qddot=result.qddot,
        tau=result.tau,
        **extra,
    )


def _outcome(result: Any) -> dict[str, Any]:
    """The summary's account of an optimization: status and message, the initial and final
    cost, iterations and function evaluations."""
    return {
        "status": result.status,
        "message": result.message,
        "cost": result.cost,
        "initial_cost": result.initial_cost,
        "iterations": result.nit,
        "function_evaluations": result.nfev,
    }


def write_results(
    folder: Path | str,
    scenario: str,
    parameters: dict[str, Any],
    problem: SpacetimeProblem,
    result: SpacetimeResult,
    command: list[str] | None = None,
    animation: bool = True,
    overwrite: bool = False,
) -> Path:
    """Write the optimized trajectory as a results folder (atomically)."""
    tree = problem.model.tree
    names = [f"q{i}" for i in range(tree.nq)]
    with atomic_folder(folder, overwrite) as tmp:
        _save_trajectory(tmp / "trajectory.npz", tree, result)
        columns: dict[str, Any] = {"t": result.t}
        for key in ("q", "qdot", "qddot", "tau"):
            for i in range(tree.nq):
                columns[f"{key}{i}"] = getattr(result, key)[:, i]
        pd.DataFrame(columns).to_csv(tmp / "steps.csv", index=False)
        summary = {
            "scenario": scenario,
            "parameters": parameters,
            "kind": "spacetime optimization",
            "problem": {
                "duration_s": problem.duration,
                "knots": problem.knots,
                "q_start": problem.q_start,
                "q_end": problem.q_end,
                "qdot_start": problem.qdot_start,
                "qdot_end": problem.qdot_end,
                "via": {str(t): q for t, q in problem.via.items()},
                "lower": problem.lower,
                "upper": problem.upper,
                "wind": problem.wind,
                "unknowns": problem.n_free,
            },
            "method": result.method,
            **_outcome(result),
            "gradient_check_initial": result.gradient_check_initial,
            "gradient_max_abs_final": result.gradient_norm,
            "boundary_error": result.boundary_error,
            "max_abs_tau": float(np.abs(result.tau).max()),
            "wall_time_s": result.wall_time_s,
            "versions": package_versions(),
            "git": git_commit(),
            "command": command,
            "files": {
                "steps.csv": "one row per knot: t [s], q, qdot, qddot, tau per coordinate",
                "trajectory.npz": "t, body_names, position, rotation (body poses), q, qdot, "
                "qddot, tau",
                "plots/": "q.png, tau.png, convergence.png",
                "animation.gif": "the optimized motion",
            },
        }
        (tmp / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
        _plots(tmp, result, names)
        if animation:
            from contactlab.experiments.render import render

            render(tmp, tmp / "animation.gif", fps=20.0, max_frames=80, azimuth=-90, elevation=0)
    return Path(folder)


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario name (see `contactlab list`)")
    add_set_option(p)
    p.add_argument(
        "--start",
        help="start positions, e.g. 0,0,0 or 90deg,0,0 (a leading minus needs --start=-10deg,...); "
        "not for a built-in transition (humanoid-squat)",
    )
    p.add_argument("--end", help="end positions")
    p.add_argument("--start-velocity", help="start velocities (default rest)")
    p.add_argument("--end-velocity", help="end velocities (default rest)")
    p.add_argument("--duration", type=float, default=1.0, help="T [s] (default 1)")
    p.add_argument("--knots", type=int, default=40, help="intervals K (default 40)")
    p.add_argument("--via", action="append", help="TIME:VALUES, a via-point on a knot")
    p.add_argument("--lower", help="lower joint limits, e.g. --lower=-120deg")
    p.add_argument("--upper", help="upper joint limits")
    p.add_argument(
        "--method",
        default="Newton",
        choices=METHODS,
        help="Newton (default) or Gauss-Newton: banded, exact derivatives, take limits; "
        "L-BFGS-B or BFGS: scipy quasi-Newton (BFGS switches to L-BFGS-B with limits)",
    )
    p.add_argument(
        "--wind",
        action="store_true",
        help="let revolute joints turn freely (Newton and Gauss-Newton otherwise keep each "
        "within half a turn of the range of its start, end and via positions)",
    )
    p.add_argument("--max-iterations", type=int, default=1000)
    p.add_argument("--out", type=Path, help="results folder (default results/scratch/...)")
    p.add_argument("--force", action="store_true", help="replace an existing results folder")
    p.add_argument("--no-animation", action="store_true", help="skip animation.gif")


def _transition(args: argparse.Namespace) -> int:
    """A built-in whole-body transition (:mod:`contactlab.optimize.examples`)."""
    from contactlab.optimize.examples import transition
    from contactlab.optimize.transition import solve

    parameters = parse_assignments(args.params, "--set")
    if args.start or args.end or args.via or args.lower or args.upper:
        raise ConfigurationError(
            f"{args.scenario} fixes its own poses and limits: drop --start/--end/--via/--lower/"
            "--upper (it takes --set knots=N, --set duration=T, --set limits=false)"
        )
    problem = transition(args.scenario, **parameters)
    result = solve(problem, max_iterations=args.max_iterations)
    out = args.out or SCRATCH / f"optimize-{args.scenario}-{time.strftime('%Y%m%d-%H%M%S')}"
    tree = problem.model.tree
    with atomic_folder(out, args.force) as tmp:
        _save_trajectory(tmp / "trajectory.npz", tree, result, wrenches=result.wrenches)
        summary = {
            "scenario": args.scenario,
            "parameters": parameters,
            "kind": "spacetime optimization, floating base with welded feet",
            "feet": list(problem.feet),
            "unknowns": problem.n_unknowns,
            **_outcome(result),
            "kkt": result.kkt,
            "feasibility": result.feasibility,
            "wall_time_s": result.wall_time_s,
            "versions": package_versions(),
            "git": git_commit(),
            "command": ["contactlab", *args.argv],
        }
        (tmp / "summary.json").write_text(json.dumps(jsonable(summary), indent=2) + "\n")
    print(
        f"{result.status}: cost {result.cost:.6g} (from {result.initial_cost:.6g}) in "
        f"{result.nit} iterations, {result.wall_time_s:.1f} s; Lagrangian gradient "
        f"{result.kkt:.1e} of the initial gradient; constraints met to "
        f"{result.feasibility:.1e}; results in {out}"
    )
    return 0


def _cmd(args: argparse.Namespace) -> int:
    from contactlab.optimize.examples import TRANSITIONS
    from contactlab.scenario import get_scenario

    if args.scenario in TRANSITIONS:
        return _transition(args)
    if args.start is None or args.end is None:
        raise ConfigurationError(
            f"optimize {args.scenario} needs --start and --end positions (or a built-in "
            f"transition: {', '.join(TRANSITIONS)})"
        )

    scenario = get_scenario(args.scenario)
    parameters = parse_assignments(args.params, "--set")
    scene = scenario.build(**parameters)
    if scene.static_shapes:
        # the spacetime problem has no contact: a trajectory would pass through these
        raise ConfigurationError(
            f"optimize plans the dynamics without contact, and scene {args.scenario!r} has "
            f"{len(scene.static_shapes)} static shape(s) (a ground or walls) its bodies could "
            "pass through; choose a scene without static shapes"
        )
    model = Model.from_scene(scene)
    nq = model.nq
    given: dict[str, Any] = {
        "qdot_start": parse_values(args.start_velocity, nq, "--start-velocity"),
        "qdot_end": parse_values(args.end_velocity, nq, "--end-velocity"),
        "lower": parse_values(args.lower, nq, "--lower"),
        "upper": parse_values(args.upper, nq, "--upper"),
    }
    problem = SpacetimeProblem(
        model,
        args.duration,
        args.knots,
        parse_values(args.start, nq, "--start"),  # type: ignore[arg-type]
        parse_values(args.end, nq, "--end"),  # type: ignore[arg-type]
        via=parse_via(args.via, nq),
        wind=args.wind,
        **{key: value for key, value in given.items() if value is not None},
    )
    limited = bool(args.lower or args.upper)
    method = "L-BFGS-B" if limited and args.method == "BFGS" else args.method
    result = optimize(problem, method=method, max_iterations=args.max_iterations)
    out = args.out or SCRATCH / f"optimize-{args.scenario}-{time.strftime('%Y%m%d-%H%M%S')}"
    write_results(
        out,
        args.scenario,
        parameters,
        problem,
        result,
        ["contactlab", *args.argv],
        animation=not args.no_animation,
        overwrite=args.force,
    )
    print(
        f"{result.status}: cost {result.cost:.6g} (from {result.initial_cost:.6g}) in "
        f"{result.nit} iterations; gradient check {result.gradient_check_initial:.1e}; "
        f"boundary error {result.boundary_error:.1e}; results in {out}"
    )
    # results written, but not an optimum that meets every constraint: exit 3, as `run`
    # does for steps that missed their tolerance
    return 0 if result.status == "optimal" else 3


register_command("optimize", "least-squared-torque trajectory between two states", _setup, _cmd)
