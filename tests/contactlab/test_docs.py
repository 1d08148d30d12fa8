"""The documentation: every command-line example in it runs, and the command reference
lists every command and option of the parsers."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from doc_commands import page_commands

from contactlab import cli
from contactlab.cliref import _subparsers

ROOT = Path(cli.__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def examples(page: Path) -> list[str]:
    """``contactlab ...`` command lines of the page's ```bash blocks (continuations joined)."""
    return [command for _, command, block in page_commands(page) if block == "bash"]


PAGES = sorted(p for p in DOCS.rglob("*.md") if examples(p))


def test_the_docs_hold_examples_of_every_main_command():
    commands = {shlex.split(e, comments=True)[1] for p in PAGES for e in examples(p)}
    assert {"run", "compare", "render", "plot", "warmup"} <= commands


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_every_command_line_example_runs(page, tmp_path, monkeypatch, capsys):
    # the examples of a page run in order in a fresh folder (later ones may read
    # what earlier ones wrote, e.g. render after run)
    monkeypatch.chdir(tmp_path)
    # examples may name the model files the repository ships (scenarios/data/...)
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios", target_is_directory=True)
    for example in examples(page):
        argv = shlex.split(example, comments=True)[1:]
        code = cli.main(argv)
        assert code == 0, f"{example!r} failed: {capsys.readouterr().err}"


def test_command_reference_lists_every_command_and_option():
    text = (DOCS / "commands.md").read_text()
    for name, sub in _subparsers(cli.build_parser()).items():
        assert f"## `contactlab {name}`" in text, name
        section = text.split(f"## `contactlab {name}`", 1)[1].split("\n## ", 1)[0]
        for action in sub._actions:
            for option in action.option_strings:
                assert option in section, f"{name} {option}"
