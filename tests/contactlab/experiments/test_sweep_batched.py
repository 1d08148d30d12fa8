"""A sweep over a pile's seeds and friction on the compiled route runs as one batch, and
every grid point's folder holds what the point run on its own holds: the same files, the
same steps (besides times), the same trajectory and the same table row; a second call
reuses them all."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab.experiments import batched
from contactlab.experiments.batched import BatchPlan
from contactlab.experiments.sweep import comparable, sweep

from .specs import write_sweep

pytest.importorskip("numba")
# the module (the package exports its function of the same name)
sweep_module = importlib.import_module("contactlab.experiments.sweep")

SWEEP = {
    "name": "piles",
    "duration": 0.35,
    "seeds": [3, 4],
    "formulations": ["maximal"],
    "models": ["box-friction"],
    "solvers": ["pgs"],
}
PILES = [{"name": "box-pile", "params": {"n": 6, "mu": [0.3, 0.8]}}]


def _one_by_one(todo):  # type: ignore[no-untyped-def]
    return BatchPlan(separate=list(todo))


def test_batched_sweep_writes_each_point_as_its_own_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_sweep(tmp_path / "piles.toml", SWEEP, PILES, model_options={"max_iter": 200})
    together = sweep(spec, workers=1, out=tmp_path / "batched")
    said = capsys.readouterr().err
    assert "4 runs in 1 batch (one compiled call per step" in said
    with monkeypatch.context() as m:
        m.setattr(sweep_module, "plan_batches", _one_by_one)
        alone = sweep(spec, workers=1, out=tmp_path / "alone", quiet=True)
    assert together.executed == alone.executed == 4 and together.complete
    pd.testing.assert_frame_equal(comparable(together.table), comparable(alone.table))
    for folder in together.table["folder"]:
        mine, ref = tmp_path / "batched" / folder, tmp_path / "alone" / folder
        assert sorted(p.name for p in mine.iterdir()) == sorted(p.name for p in ref.iterdir())
        a, b = pd.read_csv(mine / "steps.csv"), pd.read_csv(ref / "steps.csv")
        assert list(a.columns) == list(b.columns)
        timeless = [c for c in a.columns if not c.endswith("_time_s")]
        pd.testing.assert_frame_equal(a[timeless], b[timeless], rtol=0, atol=1e-10)
        assert a["n_contacts"].iloc[-10:].min() > 0  # the cubes landed
        ta, tb = np.load(mine / "trajectory.npz"), np.load(ref / "trajectory.npz")
        for key in ("position", "rotation", "twist"):
            np.testing.assert_allclose(ta[key], tb[key], rtol=0, atol=1e-10)
        sa = json.loads((mine / "summary.json").read_text())
        sb = json.loads((ref / "summary.json").read_text())
        assert sa["experiment"]["batch_copies"] == 4 and "batch_copies" not in sb["experiment"]
        assert (sa["status"], sa.get("message")) == (sb["status"], sb.get("message"))
        assert sa["experiment"]["spec_hash"] == sb["experiment"]["spec_hash"]
    again = sweep(spec, workers=1, out=tmp_path / "batched", quiet=True)
    assert (again.executed, again.reused) == (0, 4)


def test_a_grid_that_cannot_be_batched_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    coulomb = {**SWEEP, "models": ["coulomb"], "solvers": ["nsgs"], "duration": 0.01}
    spec = write_sweep(tmp_path / "coulomb.toml", coulomb, PILES)
    result = sweep(spec, workers=1, out=tmp_path / "out")
    assert result.executed == 4 and result.complete
    said = capsys.readouterr().err
    assert "runs made one by one, not batched: the route is not the compiled pile step" in said
    for folder in result.table["folder"]:
        summary = json.loads((tmp_path / "out" / folder / "summary.json").read_text())
        assert "batch_copies" not in summary["experiment"]
    assert batched.BATCH_COPIES == 64
