"""`contactlab fclib export` writes a scenario's steps; `fclib solve` compares backends on them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab.cli import main
from solvers import fclib

pytest.importorskip("h5py")
pytest.importorskip("numba")


def test_export_then_solve(tmp_path: Path) -> None:
    files = tmp_path / "files"
    assert main(["fclib", "export", "box-stack", "--steps", "2", "--out", str(files)]) == 0
    written = sorted(files.glob("*.hdf5"))
    assert len(written) == 2
    problem = fclib.read(written[0]).problem
    # a 3-box stack: four corner contacts per face, two faces and the ground
    assert problem.nc == 12 and problem.law == "coulomb" and problem.cone == "soc"
    np.testing.assert_allclose(problem.mu, 0.5)
    out = tmp_path / "solve"
    args = ["fclib", "solve", *map(str, written), "--solvers", "nsgs", "admm", "--out", str(out)]
    assert main([*args, "--tol", "1e-4"]) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 4 and set(runs["solver"]) == {"nsgs", "admm"}
    # success means optimal status and the natural map within the tolerance
    assert (
        runs["success"] == ((runs["status"] == "optimal") & (runs["natural_map"] <= 1e-4))
    ).all()
    assert (out / "table.md").exists() and (out / "profile.png").exists()
