"""``compare``: one row per fitting combination, the others reported with the reason."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab.experiments import compare, load_results, plot

from . import fakes


def test_compare_rows_and_reasons(tmp_path: Path, fake_scenarios: None) -> None:
    out = tmp_path / "cmp"
    result = compare(
        "exp-fall",
        "kkt,osqp,pgs",
        models=["exp-qp"],
        set={"height": "3.0"},
        dt=0.01,
        duration=0.15,
        out=out,
        quiet=True,
    )
    table = pd.read_csv(out / "comparison.csv")
    assert sorted(table["solver"]) == ["kkt", "osqp"] and (table["model"] == "exp-qp").all()
    skipped = pd.read_csv(out / "skipped.csv")
    # pgs does not fit exp-qp (unknown names are refused before any run: test_robustness)
    assert len(skipped) == 1
    reasons = dict(zip(skipped["model"] + "/" + skipped["solver"], skipped["reason"]))
    assert "backends that fit: kkt, osqp" in reasons["exp-qp/pgs"]
    md = (out / "comparison.md").read_text()
    assert "## Combinations that do not fit" in md and "exp-qp/pgs" in md

    # the physics of each row: 15 steps of exact symplectic Euler; energy error -m g^2 h^2 n / 2
    m, h, n = 1.5, 0.01, 15
    assert (table["steps"] == n).all() and table["success"].all()
    np.testing.assert_allclose(table["energy_drift"], -m * fakes.G**2 * h**2 * n / 2, rtol=1e-9)
    for folder in table["folder"]:
        traj = load_results(out / folder).trajectory
        expected = fakes.expected_position(3.0, 0.5, h, np.arange(n + 1))
        np.testing.assert_allclose(traj["position"][:, 0], expected, rtol=0, atol=1e-9)
    # best markers: both succeed on every step; an iteration count of 0 (kkt: direct solve)
    # is not ranked, so osqp's count is the best one
    lines = [line.split(" | ") for line in md.splitlines() if line.startswith("| exp-point")]
    header = next(line for line in md.splitlines() if line.startswith("| formulation"))
    col = header.split(" | ").index("iterations_mean")
    cells = {row[2]: row for row in lines}
    assert cells["kkt"][4] == cells["osqp"][4] == "**1**"
    assert cells["kkt"][col] == "0" and cells["osqp"][col].startswith("**")
    assert result.table.shape[0] == 2

    # plot() regenerates the comparison's figures from the files alone
    for png in (out / "plots").glob("*.png"):
        png.unlink()
    written = plot(out)
    assert {p.name for p in written} >= {"solve_time.png", "energy.png", "iterations.png"}


def test_compare_rejects_bad_parameter(tmp_path: Path, fake_scenarios: None) -> None:
    from contactlab.errors import ParameterError

    with pytest.raises(ParameterError, match="has no parameter 'heigth'"):
        compare("exp-fall", "kkt", models="exp-qp", set={"heigth": "1"}, out=tmp_path / "x")
    assert not (tmp_path / "x").exists()
