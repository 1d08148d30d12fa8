"""The subcommands of the ``contactlab`` command line, and the helpers they share.

:data:`COMMANDS` is a :class:`solvers.plugins.Registry`: the built-in commands
register themselves when :mod:`contactlab.cli`, :mod:`contactlab.experiments.subcommands`
and :mod:`contactlab.optimize.command` are imported, and another package adds its
own through the ``contactlab.commands`` entry-point group (a value is a
:class:`Command`, or a module whose import calls :func:`register_command`).
"""

from __future__ import annotations

import argparse
import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contactlab.errors import ConfigurationError
from solvers.plugins import Registry

Handler = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], None]

#: Exit code of ``run``, ``compare`` and ``sweep`` when every result was written but not
#: every step met its tolerance: ``run``, a step kept unconverged (status
#: ``max_iterations``, ``stalled``, ...); ``compare`` and ``sweep``, a run with such steps,
#: or one that failed or diverged (its folder says why).  docs/commands.md, "Exit codes".
EXIT_UNCONVERGED = 3

STRICT_HELP = (
    "stop a run at the first step that misses its solver tolerance (by default such a step "
    "keeps its best iterate, the run goes on and the summary counts it; docs/reliability.md)"
)


def add_strict_option(p: argparse.ArgumentParser) -> None:
    """``--strict``: the first unconverged step stops the run."""
    p.add_argument("--strict", action="store_true", help=STRICT_HELP)


@dataclass(frozen=True)
class Command:
    """A subcommand: help text, argument set-up and handler returning the exit code."""

    name: str
    help: str
    setup: Setup
    handler: Handler


COMMANDS: Registry[Command] = Registry(
    "command",
    "contactlab.commands",
    builtin=(
        "contactlab.cli",
        "contactlab.experiments.subcommands",
        "contactlab.experiments.fclib_cli",
        "contactlab.optimize.command",
    ),
    accept=lambda value: isinstance(value, Command),
)


def register_command(name: str, help: str, setup: Setup, handler: Handler) -> None:
    """Add the subcommand ``name`` (a name registered twice keeps its first command)."""
    COMMANDS.register(name, Command(name, help, setup, handler))


def parse_assignments(pairs: Sequence[str] | None, flag: str) -> dict[str, str]:
    """``["k=v", ...]`` to ``{"k": "v"}``; values stay strings (typed by their consumer)."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigurationError(f"{flag} expects KEY=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def parse_option_value(text: str) -> Any:
    """A model option's value: Python literal (number, bool, tuple, string), else the text."""
    low = text.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def add_set_option(p: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (repeatable): scenario parameters into ``args.params``, read by
    :func:`parse_assignments`."""
    p.add_argument(
        "--set",
        dest="params",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="scenario parameter (repeatable)",
    )


def add_assignment_options(p: argparse.ArgumentParser) -> None:
    """``--set KEY=VALUE`` (scenario parameters) and ``--model-option KEY=VALUE``."""
    add_set_option(p)
    p.add_argument(
        "--model-option",
        dest="model_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="contact-model option, e.g. directions=8 (repeatable)",
    )


def add_formulation_options(p: argparse.ArgumentParser) -> None:
    """``--integrator NAME`` and ``--formulation-option KEY=VALUE`` (repeatable)."""
    p.add_argument(
        "--integrator",
        default=None,
        help="time integrator: linearly-implicit (default), implicit-euler, trapezoidal, "
        "bridson-marino; maximal also symplectic-euler (docs/artisynth.md); reduced also "
        "midpoint, midpoint4 (--formulation-option substep_angle=...) and dop853 "
        "(tolerances: --formulation-option rtol=..., atol=...; "
        "docs/reduced-integration.md)",
    )
    p.add_argument(
        "--formulation-option",
        dest="formulation_options",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="formulation option, e.g. jacobian=symmetric or projection=false (repeatable)",
    )


def formulation_options(args: argparse.Namespace) -> dict[str, Any]:
    """``--formulation-option`` pairs and ``--integrator`` as formulation options."""
    out = {
        k: parse_option_value(v)
        for k, v in parse_assignments(
            getattr(args, "formulation_options", []), "--formulation-option"
        ).items()
    }
    if getattr(args, "integrator", None) is not None:
        out["integrator"] = args.integrator
    return out
