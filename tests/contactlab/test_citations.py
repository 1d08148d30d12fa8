"""Sources are cited by their paper or authors (docs/bibliography.md), never by the numbers
or folder of private transcriptions that are not in the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from contactlab import cli

ROOT = Path(cli.__file__).resolve().parent.parent
TEXT = {".py", ".md", ".toml", ".csv", ".json", ".txt", ".yml", ".yaml", ".cfg", ".ini", ""}
FOLDERS = ("contactlab", "solvers", "scenarios", "benchmarks", "tests", "docs", "results", ".ci")
FORBIDDEN = re.compile(r"(?<![a-z])seed[ _-]?\d{3}(?!\d)|(?<![a-z])seeds/", re.IGNORECASE)


def committed_text_files() -> list[Path]:
    """The repository's text files: ``git ls-files`` in a checkout, else the source folders."""
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split("\n")
        paths = [ROOT / name for name in listed if name]
    except (OSError, subprocess.CalledProcessError):
        paths = [p for folder in FOLDERS for p in (ROOT / folder).rglob("*") if p.is_file()]
        paths += [ROOT / name for name in ("README.md", "pyproject.toml", "Makefile", "mkdocs.yml")]
    return [p for p in paths if p.is_file() and p.suffix.lower() in TEXT]


def test_pattern_catches_the_forms_it_guards_against() -> None:
    bad = ["as in seed 002, eq. 3", "SEED_002_MS", "seed001 Table 1", "see seeds/README.md"]
    bad += ["kernel_over_seed002", "(Seed-000)"]
    good = ["seed = 3", "seeds = [0, 1]", "--set seed=-1", "default_rng(seed)", '"seed": 123']
    assert all(FORBIDDEN.search(text) for text in bad)
    assert not any(FORBIDDEN.search(text) for text in good)


def test_no_reference_to_transcription_numbers_or_folder() -> None:
    files = committed_text_files()
    names = {p.relative_to(ROOT).as_posix() for p in files}
    assert "README.md" in names and "docs/bibliography.md" in names and len(files) > 200
    hits = []
    for path in files:
        if path.resolve() == Path(__file__).resolve():
            continue  # its examples of the forbidden forms
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert hits == [], (
        "cite the paper or its authors (docs/bibliography.md) instead:\n" + "\n".join(hits)
    )
