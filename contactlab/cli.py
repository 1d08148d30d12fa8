"""The ``contactlab`` command line: ``list``, ``run``, ``demo`` (and the experiment commands).

Every mistake in the input (an unknown name, a wrongly typed parameter, a
non-finite state, a singular system, a failed step) ends the command with
one line on stderr naming the thing and the fix, exit code 2, and no results
folder left behind.  Success exits with 0 and prints where the results are;
a run written with steps that missed their tolerance exits with 3
(:data:`~contactlab.commands.EXIT_UNCONVERGED`), and with ``--strict`` the
first such step is a failed step (exit code 2).

More subcommands plug in through :mod:`contactlab.commands` (the built-in
:mod:`contactlab.experiments.subcommands` registers ``compare``, ``sweep``, ``plot``,
``render`` and ``studies``; other packages use the ``contactlab.commands``
entry-point group).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from contactlab import interrupts
from contactlab.commands import (
    COMMANDS,
    EXIT_UNCONVERGED,
    add_assignment_options,
    add_formulation_options,
    add_strict_option,
    formulation_options,
    parse_assignments,
    parse_option_value,
    register_command,
)
from contactlab.errors import ConfigurationError, ContactlabError
from contactlab.interrupts import INTERRUPTED
from contactlab.runspec import DEMO_RUNS, RunSpec, as_spec

#: Default root of scratch runs (ignored by git).
SCRATCH = Path("results") / "scratch"
#: Default folder of `contactlab demo`.
DEMO = Path("results") / "demo"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)


def default_out(scenario: str, formulation: str, model: str, solver: str) -> Path:
    """``results/scratch/<scenario>-<formulation>-<model>-<solver>-<UTC timestamp>`` (unique)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = SCRATCH / _slug(f"{scenario}-{formulation}-{model}-{solver}-{stamp}")
    out, k = base, 1
    while out.exists():
        k += 1
        out = base.with_name(f"{base.name}-{k}")
    return out


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


# -- list -----------------------------------------------------------------------


def _setup_list(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the catalogue as JSON")


def _cmd_list(args: argparse.Namespace) -> int:
    from contactlab import registry

    cat = registry.catalog()
    if args.json:
        from contactlab.results import jsonable

        print(json.dumps(jsonable(cat), indent=2))
        return 0
    errors = cat["errors"]
    print("Scenarios (parameters with defaults; set with --set KEY=VALUE):")
    if not cat["scenarios"]:
        print("  (none registered)")
    for row in cat["scenarios"]:
        print(f"  {row['name']:<22} {row['description']}")
        print(f"  {'':<22} formulations: {', '.join(row['formulations'])}")
        default = row.get("default")
        if default:
            print(
                f"  {'':<22} default: {default['formulation']} / {default['model']} / "
                f"{default['solver']} ({default['reason']})"
            )
        for p in row["parameters"]:
            doc = f"  {p['doc']}" if p["doc"] else ""
            print(f"      {p['name']} = {p['default']!r} ({p['type']}){doc}")
    for section, title in (
        ("formulations", "Formulations (options: --formulation-option KEY=VALUE, --integrator)"),
        ("models", "Contact models"),
        ("constraints", "Constraint kinds (maximal)"),
        ("joints", "Joint kinds (reduced)"),
    ):
        print(f"\n{title}:")
        for row in cat[section]:
            forms = f" [{', '.join(row['forms'])}]" if row.get("forms") else ""
            origin = row.get("origin", "contactlab")
            plugin = f" (from {origin})" if origin != "contactlab" else ""
            print(f"  {row['name']:<22}{forms} {row['description']}{plugin}")
            for option in row.get("options", ()):
                doc = f"  {option['doc']}" if option["doc"] else ""
                print(f"      {option['name']} = {option['default']!r}{doc}")
    print("\nSolvers:")
    for row in cat["solvers"]:
        plugin = f" (from {row['origin']})" if row.get("origin", "solvers") != "solvers" else ""
        if row["available"]:
            print(f"  {row['name']:<22} available    {row['description']}{plugin}")
        else:
            extra = f" (pip install 'contactlab[{row['extra']}]')" if row["extra"] else ""
            print(f"  {row['name']:<22} unavailable  {row['reason']}{extra}")
    for section, message in errors.items():
        print(f"\n{section}: could not be loaded: {message}", file=sys.stderr)
    return 0


# -- run ------------------------------------------------------------------------


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--formulation",
        default=None,
        help="formulation name (default: the scenario's first, see `contactlab list`)",
    )
    p.add_argument(
        "--model",
        default=None,
        help="contact model (default: the one that fits the scene, see `contactlab list`)",
    )
    p.add_argument(
        "--solver",
        default=None,
        help="solver backend (default: the one that fits the scene and model)",
    )
    p.add_argument("--dt", type=float, default=None, help="step size h [s] (scene default)")
    span = p.add_mutually_exclusive_group()
    span.add_argument("--steps", type=int, default=None, help="number of steps")
    span.add_argument("--duration", type=float, default=None, help="simulated time [s]")
    add_assignment_options(p)
    add_formulation_options(p)


def _setup_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario name (see `contactlab list`)")
    _add_run_options(p)
    p.add_argument("--out", type=Path, default=None, help="results folder")
    p.add_argument("--force", action="store_true", help="replace an existing results folder")
    p.add_argument("--quiet", action="store_true", help="no progress bar, print only the folder")
    p.add_argument("--no-plots", action="store_true", help="skip the plots")
    p.add_argument(
        "--no-divergence-guard",
        action="store_true",
        help="keep stepping a run whose state is physically absurd (docs/reliability.md)",
    )
    add_strict_option(p)


def run_to_folder(
    spec: RunSpec,
    out: Path | None,
    *,
    steps: int | None = None,
    force: bool = False,
    quiet: bool = False,
    plots: bool = True,
    command: Sequence[str] | None = None,
    divergence_guard: bool = True,
) -> tuple[Path, Any]:
    """Validate everything, run ``spec``, and write the results folder; return
    ``(folder, run)``.

    Every check that can fail (names, parameters, the target folder) happens
    before the first step, and the folder is written atomically after the last.
    """
    from contactlab.results import check_target, check_writable, write_run
    from contactlab.runspec import build_simulator

    sim = build_simulator(spec, divergence_guard=divergence_guard)
    n = sim.n_steps(steps, spec.duration)
    target = out if out is not None else default_out(spec.scenario, *sim.names)
    check_target(target, force)
    check_writable(target)
    run = sim.run(steps=n, progress=not quiet)
    write_run(run, target, overwrite=force, plots=plots, command=command)
    return target, run


def spec_of(args: argparse.Namespace) -> RunSpec:
    """The :class:`RunSpec` of ``contactlab run``'s options (the one place they are read)."""
    if args.dt is not None and not (np.isfinite(args.dt) and args.dt > 0):
        raise ConfigurationError(f"--dt must be a positive number of seconds, got {args.dt}")
    options = {
        k: parse_option_value(v)
        for k, v in parse_assignments(args.model_options, "--model-option").items()
    }
    return as_spec(
        args.scenario,
        parse_assignments(args.params, "--set"),
        formulation=args.formulation,
        model=args.model,
        solver=args.solver,
        dt=args.dt,
        duration=args.duration,
        model_options=options,
        formulation_options=formulation_options(args),
        strict=args.strict,
    )


def _report(folder: Path, run: Any, quiet: bool) -> None:
    if quiet:
        print(folder)
        return
    agg = run.aggregates()
    change = agg.get("energy_change")
    drift_text = "n/a" if change is None else f"{change:+.3g} J"
    if run.defaults:
        print(
            f"{run.scene.name}: {run.formulation} / {run.model} / {run.solver} "
            f"({', '.join(run.defaults['defaulted'])} by default: {run.defaults['reason']})"
        )
    print(
        f"{run.scene.name}: {run.n_steps} steps of {run.dt:g} s, status {run.status}, "
        f"energy change E(T) - E(0) {drift_text}, max constraint error "
        f"{agg.get('max_constraint_error') or 0:.3g} m, wall time {run.wall_time_s:.2f} s"
    )
    loose = run.unconverged()
    if loose["steps"]:
        statuses = ", ".join(f"{n} {name}" for name, n in loose["by_status"].items())
        largest = loose["max_residual"]
        print(
            f"{run.scene.name}: {loose['steps']} of {run.n_steps} steps unconverged "
            f"({statuses}; largest residual "
            f"{'n/a' if largest is None else f'{largest:.3g}'}), kept with their best "
            f"iterate; exit code {EXIT_UNCONVERGED} (--strict stops at the first)"
        )
    if run.message:
        print(f"{run.scene.name}: {run.message}")
    print(f"results: {folder}")


def exit_code(run: Any) -> int:
    """0, or :data:`~contactlab.commands.EXIT_UNCONVERGED` when a step was left unconverged."""
    return EXIT_UNCONVERGED if run.unconverged()["steps"] else 0


def _cmd_run(args: argparse.Namespace) -> int:
    folder, run = run_to_folder(
        spec_of(args),
        args.out,
        steps=args.steps,
        force=args.force,
        quiet=args.quiet,
        plots=not args.no_plots,
        command=["contactlab", *args.argv],
        divergence_guard=not args.no_divergence_guard,
    )
    _report(folder, run, args.quiet)
    return exit_code(run)


# -- demo and plot ----------------------------------------------------------------


def _setup_demo(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=DEMO, help=f"folder of the demo runs ({DEMO})")
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def _cmd_demo(args: argparse.Namespace) -> int:
    worst = 0
    for scenario, duration in DEMO_RUNS:
        folder, run = run_to_folder(
            RunSpec(scenario, duration=duration),
            args.out / scenario,
            force=True,
            quiet=args.quiet,
            command=["contactlab", *args.argv],
        )
        _report(folder, run, args.quiet)
        worst = max(worst, exit_code(run))
    print(f"demo results: {args.out}")
    return worst


def _setup_warmup(p: argparse.ArgumentParser) -> None:
    from contactlab.warmup import default_jobs

    p.add_argument("--quiet", action="store_true", help="print nothing but errors")
    p.add_argument(
        "--only",
        choices=("all", "demo"),
        default="all",
        help="all: every kernel (default); demo: just what `make demo` runs",
    )
    p.add_argument(
        "--jobs",
        type=int,
        default=default_jobs(),
        help=f"processes compiling at once (default: the cores, here {default_jobs()})",
    )


def _cmd_warmup(args: argparse.Namespace) -> int:
    from contactlab.warmup import warmup
    from solvers.jit import cache_dir

    if args.jobs < 1:
        raise ConfigurationError(f"--jobs {args.jobs}: give 1 or more processes")
    report = (lambda line: None) if args.quiet else print
    report(f"compiling kernels into {cache_dir()} (once per machine)")
    missing = warmup(report, only=args.only, jobs=args.jobs)
    if missing:
        print(
            f"contactlab: warning: {len(missing)} kernels were not compiled by the warm-up: "
            f"{', '.join(missing)}; they compile at their first use",
            file=sys.stderr,
        )
    return 0


register_command("list", "list scenarios, formulations, models and solvers", _setup_list, _cmd_list)
register_command(
    "warmup", "compile every numba kernel ahead into the user cache", _setup_warmup, _cmd_warmup
)
register_command("run", "run a scenario and write a results folder", _setup_run, _cmd_run)
register_command("demo", "run the demo scenarios into results/demo", _setup_demo, _cmd_demo)


class _Parser(argparse.ArgumentParser):
    """Argument errors as one line (with a pointer to --help), exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = _Parser(
        prog="contactlab",
        description="Rigid-body dynamics with joints, contact and friction.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for cmd in COMMANDS.items().values():
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.setup(p)
        p.set_defaults(handler=cmd.handler)
    return parser


def _user_error_types() -> tuple[type[BaseException], ...]:
    from solvers.errors import SolverError

    return (ContactlabError, np.linalg.LinAlgError, SolverError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``contactlab``; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(arguments)
    args.argv = arguments
    interrupts.install()
    try:
        return int(args.handler(args))
    except _user_error_types() as err:
        print(f"contactlab: error: {_one_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        # commands that keep finished work say so in the interrupt's message
        message = _one_line(err) if str(err) else "interrupted; no results folder was written"
        print(f"contactlab: {message}", file=sys.stderr)
        return 130
    except Exception as err:
        # a Ctrl-C inside a compiled kernel or an extension module's initialisation comes
        # back as another exception with the KeyboardInterrupt in its chain
        if not interrupts.interrupted(err):
            raise
        print("contactlab: interrupted; no results folder was written", file=sys.stderr)
        return INTERRUPTED
