"""Subcommands ``compare``, ``sweep``, ``plot`` and ``render`` of the ``contactlab`` command.

They are registered with :func:`contactlab.commands.register_command` when the
command line loads this module.  ``plot`` replaces the run-only version: it
takes a run, comparison or sweep folder (runs are drawn by
:func:`contactlab.results.plot_run` as before).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from contactlab.commands import (
    EXIT_UNCONVERGED,
    add_assignment_options,
    add_formulation_options,
    add_strict_option,
    formulation_options,
    parse_assignments,
    parse_option_value,
    register_command,
)


def _setup_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenario", help="scenario name (see `contactlab list`)")
    p.add_argument("--solvers", required=True, help="comma-separated solver backends")
    p.add_argument("--models", default=None, help="comma-separated contact models (default all)")
    p.add_argument(
        "--formulations",
        default=None,
        help="comma-separated formulations (default: the scenario's)",
    )
    add_assignment_options(p)
    add_formulation_options(p)
    p.add_argument("--dt", type=float, default=None, help="step size h [s] (scene default)")
    p.add_argument("--duration", type=float, default=None, help="simulated time [s]")
    p.add_argument("--out", type=Path, default=None, help="output folder")
    p.add_argument(
        "--force",
        action="store_true",
        help="replace an existing comparison folder (its runs with the same specification "
        "and code version are reused)",
    )
    p.add_argument("--fresh", action="store_true", help=FRESH_HELP)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_strict_option(p)


def outcome_counts(table: Any) -> tuple[int, int]:
    """``(failed or diverged runs, finished runs with unconverged steps)`` of a run table."""
    import pandas as pd

    from contactlab.experiments.run_table import FAILED_STATUSES

    if not len(table):
        return 0, 0
    failed = table["status"].isin(FAILED_STATUSES)
    loose = pd.Series(False, index=table.index)
    if "unconverged_steps" in table:
        loose = pd.to_numeric(table["unconverged_steps"], errors="coerce").fillna(0) > 0
    return int(failed.sum()), int((loose & ~failed).sum())


def _cmd_compare(args: argparse.Namespace) -> int:
    from contactlab.experiments.compare import compare
    from contactlab.runspec import RunSpec

    options = {
        k: parse_option_value(v)
        for k, v in parse_assignments(args.model_options, "--model-option").items()
    }
    shared = RunSpec(
        args.scenario,
        parse_assignments(args.params, "--set"),
        dt=args.dt,
        duration=args.duration,
        model_options=options,
        formulation_options=formulation_options(args),
        strict=args.strict,
    )
    result = compare(
        shared,
        args.solvers,
        args.models,
        args.formulations,
        out=args.out,
        quiet=args.quiet,
        force=args.force,
        fresh=args.fresh,
    )
    ran = len(result.table)
    failed, loose = outcome_counts(result.table)
    print(
        f"{ran} combinations run ({failed} failed, {loose} with unconverged steps), "
        f"{len(result.skipped)} do not fit"
    )
    if failed or loose:
        print("  failed runs and runs with unconverged steps are not ranked in comparison.md")
    if result.reused:
        print(f"  {result.reused} of them reused from the comparison replaced (--fresh recomputes)")
    if len(result.skipped):
        names = ", ".join(
            f"{r.formulation}/{r.model}/{r.solver}" for r in result.skipped.itertuples()
        )
        print(f"  not run (reasons in comparison.md): {names}")
    print(f"results: {result.folder / 'comparison.md'}")
    return EXIT_UNCONVERGED if failed or loose else 0


FRESH_HELP = (
    "re-run every run (by default a run on disk with the same specification and code "
    "version is reused)"
)


def _setup_sweep(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", type=Path, help="sweep specification (TOML)")
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="address of a running Dask scheduler (default: local processes)",
    )
    p.add_argument(
        "--workers", type=int, default=None, help="local worker processes (default: CPU count)"
    )
    p.add_argument("--out", type=Path, default=None, help="output folder (overrides the spec)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--fresh", action="store_true", help=FRESH_HELP)
    add_strict_option(p)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from contactlab.experiments.sweep import sweep

    result = sweep(
        args.spec,
        scheduler=args.scheduler,
        workers=args.workers,
        out=args.out,
        quiet=args.quiet,
        fresh=args.fresh,
        strict=args.strict or None,
    )
    failed, loose = outcome_counts(result.table)
    print(
        f"{result.executed} runs made, {result.reused} reused, "
        f"{len(result.incomplete)} did not finish; of the finished, {failed} failed and "
        f"{loose} have unconverged steps"
    )
    print(f"results: {result.folder}")
    if result.incomplete:
        for spec, error in result.incomplete[:10]:
            print(f"  unfinished: {spec.folder_name()}: {error}", file=sys.stderr)
        print(
            "contactlab: the sweep is incomplete; run the same command again to finish the "
            "missing runs (finished runs are kept)",
            file=sys.stderr,
        )
        return 1
    return EXIT_UNCONVERGED if failed or loose else 0


def _setup_plot(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", type=Path, help="a run, comparison or sweep folder")


def _cmd_plot(args: argparse.Namespace) -> int:
    from contactlab.experiments.plots import plot

    for path in plot(args.folder):
        print(path)
    return 0


def _setup_render(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, help="a run folder")
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="animation file: .gif, .mp4 (needs ffmpeg) or .html (interactive viewer)",
    )
    p.add_argument("--fps", type=float, default=25.0, help="frames per simulated second")
    p.add_argument("--max-frames", type=int, default=150, help="cap on the frames drawn")
    p.add_argument("--contacts", action="store_true", help="draw contact points and normals")
    p.add_argument("--azimuth", type=float, default=-60.0, help="view azimuth [deg]")
    p.add_argument("--elevation", type=float, default=25.0, help="view elevation [deg]")
    p.add_argument("--size", type=int, default=480, help="image width [px]")


def _cmd_render(args: argparse.Namespace) -> int:
    from contactlab.experiments.render import render

    path = render(
        args.run_dir,
        args.out,
        fps=args.fps,
        max_frames=args.max_frames,
        contacts=args.contacts,
        azimuth=args.azimuth,
        elevation=args.elevation,
        size_px=args.size,
    )
    print(path)
    return 0


def _setup_studies(p: argparse.ArgumentParser) -> None:
    p.add_argument("numbers", type=int, nargs="*", help="study numbers (default: all)")
    p.add_argument("--short", action="store_true", help="the quick versions (the demo)")
    p.add_argument(
        "--root",
        type=Path,
        default=Path("results/studies"),
        help="folder of the study specifications (default: the repository's results/studies, "
        "from any working directory)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="write the reports under this folder instead of next to the specs",
    )
    p.add_argument("--workers", type=int, default=None, help="local worker processes")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--fresh", action="store_true", help=FRESH_HELP)


def _cmd_studies(args: argparse.Namespace) -> int:
    from contactlab.experiments.studies import STUDIES, get_study, run_study
    from contactlab.results import check_writable

    numbers = args.numbers or list(STUDIES)
    # every study named and every report folder writable before the first run
    folders = [get_study(number).folder for number in numbers]
    if args.out is not None:
        for folder in folders:
            check_writable(args.out / folder)
    for number in numbers:
        out = None if args.out is None else args.out / get_study(number).folder
        report = run_study(
            number,
            root=args.root,
            out=out,
            short=args.short,
            workers=args.workers,
            scheduler=args.scheduler,
            quiet=args.quiet,
            fresh=args.fresh,
        )
        print(f"study {number}: {report / 'README.md'}")
    return 0


register_command(
    "compare",
    "run every fitting formulation x model x solver on a scenario",
    _setup_compare,
    _cmd_compare,
)
register_command(
    "sweep", "run a TOML grid of experiments (local processes or Dask)", _setup_sweep, _cmd_sweep
)
register_command(
    "plot", "redraw the plots of a run, comparison or sweep folder", _setup_plot, _cmd_plot
)
register_command(
    "render",
    "animate a run (GIF, MP4) or write an interactive HTML viewer",
    _setup_render,
    _cmd_render,
)
register_command(
    "studies",
    "run the reproduced studies (results/studies); --short for the demo versions",
    _setup_studies,
    _cmd_studies,
)
