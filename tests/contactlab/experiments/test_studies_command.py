"""A study report's "Regenerate" command writes that same report folder again."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from contactlab.cli import build_parser
from contactlab.experiments.studies import ROOT, STUDIES, get_study, regenerate_command


def _report_folder(command: str) -> tuple[Path, bool]:
    """The report folder and short flag ``contactlab studies`` would use (as _cmd_studies)."""
    args = build_parser().parse_args(shlex.split(command)[1:])
    (number,) = args.numbers
    folder = get_study(number).folder
    return (args.root / folder if args.out is None else args.out / folder), args.short


@pytest.mark.parametrize(
    ("root", "out"),
    [
        (ROOT, None),  # next to the specification
        (ROOT, "results/demo/studies"),  # make demo
        (Path("elsewhere/specs"), "reports"),
    ],
)
@pytest.mark.parametrize("short", [False, True])
def test_regenerate_command_names_the_same_report_folder(root, out, short) -> None:
    for number in STUDIES:
        report = (
            Path(root) / get_study(number).folder
            if out is None
            else Path(out) / (get_study(number).folder)
        )
        command = regenerate_command(number, short, root, None if out is None else report)
        assert _report_folder(command) == (report, short), command


def test_demo_study_command_reads_as_the_makefile_writes_it() -> None:
    report = Path("results/demo/studies") / get_study(1).folder
    assert regenerate_command(1, True, ROOT, report) == (
        "contactlab studies 1 --short --out results/demo/studies"
    )
