"""Every `contactlab ...` command the README and docs show is one the command line takes.

``test_docs.py`` runs the examples of the ```bash blocks.  The other code blocks
(sketches with placeholders such as ``RUN_DIR``) and the inline code spans hold
commands too; here each is parsed by the real argument parser, and the names
in it (command, scenario, its ``--set`` parameters, models, solvers,
formulations, study numbers) are looked up, so a renamed option or scenario
shows up as a failing example instead of a wrong page.  Parsing only: fast.
"""

from __future__ import annotations

import argparse
import re
import shlex
from pathlib import Path

import pytest
from doc_commands import page_commands

from contactlab import cli
from contactlab.cliref import _subparsers
from contactlab.commands import parse_assignments

ROOT = Path(cli.__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: template notation: alternatives, optional parts, elided arguments, <names>
TEMPLATE = re.compile(r"[\[\]|<>]|\.\.\.")


def commands(page: Path) -> list[tuple[int, str]]:
    """``(line, command)`` of every ``contactlab`` command in the page's code blocks that
    are not ```bash (those run in test_docs.py) and in its inline code spans."""
    return [(number, command) for number, command, block in page_commands(page) if block != "bash"]


EXAMPLES = [
    pytest.param(command, id=f"{page.relative_to(ROOT)}:{number}")
    for page in PAGES
    for number, command in commands(page)
]


class _Refused(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = cli.build_parser()

    def refuse(message: str) -> None:
        raise _Refused(message)

    parser.error = refuse  # type: ignore[method-assign,assignment]
    for sub in _subparsers(parser).values():
        sub.error = refuse  # type: ignore[method-assign,assignment]
        for inner in _subparsers(sub).values():
            inner.error = refuse  # type: ignore[method-assign,assignment]
    return parser


def _check_names(args: argparse.Namespace) -> None:
    """The names an example uses exist (scenario, parameters, models, solvers, studies)."""
    from contactlab.runspec import check_names
    from contactlab.scenario import get_scenario, load_scenarios

    scenario = getattr(args, "scenario", None)
    if scenario is None and getattr(args, "source", None) in load_scenarios():
        scenario = args.source  # fclib export takes a scenario or a run folder
    # a model file or a page's own Python file (``sliding.py:build``) is not in the repository
    if scenario is not None and not re.search(r"[/\\]|\.(urdf|xml)$|\.py:\w+$", scenario):
        from contactlab.optimize.examples import TRANSITIONS

        if scenario in TRANSITIONS:  # ``contactlab optimize`` also takes a built-in transition
            return
        get_scenario(scenario).resolve(parse_assignments(getattr(args, "params", []), "--set"))

    def names(*keys: str) -> list[str]:
        for key in keys:
            value = getattr(args, key, None)
            if value is not None:
                return [v for v in str(value).split(",") if v] if isinstance(value, str) else value
        return []

    check_names(
        names("solvers", "solver"), names("models", "model"), names("formulations", "formulation")
    )
    if args.command == "studies":
        from contactlab.experiments.studies import get_study

        for number in args.numbers:
            get_study(number)


def test_the_pages_hold_sketched_and_inline_commands() -> None:
    shown = [e.values[0] for e in EXAMPLES]
    # the README's inline example, a sketch with placeholders, an example outside ```bash
    assert "contactlab run box-stack --steps 20" in shown
    assert any(c.startswith("contactlab render RUN_DIR --out run.gif") for c in shown)
    assert any(c.startswith("contactlab optimize chain --set n_links=3") for c in shown)
    parsed = [c for c in shown if not TEMPLATE.search(re.sub(r"\[([^\[\]|]*)\]", r"\1", c))]
    assert any(c.startswith("contactlab optimize chain") for c in parsed)


@pytest.mark.parametrize("command", EXAMPLES)
def test_every_shown_command_parses_and_names_what_exists(command: str) -> None:
    # optional parts "[--flag VALUE]" are parsed as given
    command = re.sub(r"\[([^\[\]|]*)\]", r"\1", command)
    argv = shlex.split(command, comments=True)[1:]
    if argv[:1] == ["..."]:
        return  # "contactlab ..." stands for any command
    known = _subparsers(cli.build_parser())
    assert argv and argv[0] in known, f"{command!r}: no command {argv[:1]}"
    if TEMPLATE.search(command) or len(argv) == 1:
        # a sketch of the syntax or the bare name of a command: the command exists
        return
    try:
        args = _parser().parse_args(argv)
    except _Refused as err:
        pytest.fail(f"{command!r} is refused by the parser: {err}")
    _check_names(args)


@pytest.mark.parametrize(
    "command",
    [
        "contactlab run box-stak --steps 20",  # no such scenario
        "contactlab run box-stack --set heigth=1",  # no such parameter
        "contactlab run box-stack --modle frictionless",  # no such option
        "contactlab compare box-stack --solvers pgs --models box-frict",  # no such model
        "contactlab studies 99",  # no such study
    ],
)
def test_a_wrong_command_fails_the_check(command: str) -> None:
    from contactlab.errors import ContactlabError

    with pytest.raises((_Refused, ContactlabError)):
        _check_names(_parser().parse_args(shlex.split(command)[1:]))
