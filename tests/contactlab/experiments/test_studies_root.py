"""`contactlab studies` finds the repository's reference studies from any working
directory, and a folder without them is one clear error."""

from __future__ import annotations

from pathlib import Path

import pytest

from contactlab import cli
from contactlab.errors import ConfigurationError
from contactlab.experiments.grid import load_grid
from contactlab.experiments.studies import REPOSITORY, ROOT, STUDIES, resolve_root


def test_the_default_root_is_the_repositorys_from_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # outside the repository: no results/studies here
    assert not (tmp_path / ROOT).exists()
    root = resolve_root()
    assert root == REPOSITORY / ROOT
    for study in STUDIES.values():
        spec = root / study.folder / "spec.toml"
        assert spec.is_file(), spec
    grid = load_grid(root / STUDIES[1].folder / "spec.toml", tmp_path / "sweep", short=True)
    assert grid.runs  # the specification reads and expands outside the repository


def test_a_folder_without_studies_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigurationError, match="--root FOLDER"):
        resolve_root(tmp_path / "nothing")
    code = cli.main(["studies", "1", "--short", "--root", str(tmp_path / "nothing")])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "no study specifications" in err
