"""Sweeps: local processes and a Dask cluster agree, resuming skips finished runs,
an interrupted sweep loses no finished run, and the runs are physically right."""

from __future__ import annotations

import importlib
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from contactlab.experiments import load_results
from contactlab.experiments.runner import recorded_hash
from contactlab.experiments.sweep import comparable, sweep

from . import fakes
from .specs import write_sweep

# the module (the package exports its function of the same name)
sweep_module = importlib.import_module("contactlab.experiments.sweep")

SWEEP = {
    "name": "fall",
    "duration": 0.1,
    "dt": [0.01, 0.005],
    "models": ["exp-qp"],
    "solvers": ["kkt", "osqp", "pgs"],
    "compare_by": ["solver"],
}
FALLS = {"name": "exp-fall", "params": {"height": [1.0, 2.0]}}


def write_spec(tmp_path: Path, *extra: dict[str, Any]) -> Path:
    """The two heights at two step sizes, and any ``extra`` scenario entries."""
    return write_sweep(tmp_path / "fall.toml", SWEEP, [FALLS, *extra])


def test_local_and_dask_sweeps_give_the_same_table(tmp_path: Path, fake_scenarios: None) -> None:
    from dask.distributed import LocalCluster

    spec = write_spec(tmp_path)
    local = sweep(spec, workers=2, out=tmp_path / "local", quiet=True)
    # the real scheduler path: a cluster with its own scheduler, reached by address
    with LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        remote = sweep(spec, scheduler=cluster.scheduler_address, out=tmp_path / "dask", quiet=True)
    # 2 heights x 2 step sizes x {kkt, osqp}; pgs does not fit the model
    assert local.executed == remote.executed == 8 and local.complete and remote.complete
    pd.testing.assert_frame_equal(comparable(local.table), comparable(remote.table))
    skipped = pd.read_csv(tmp_path / "local" / "skipped.csv")
    # one row for the combination, not one per height and step size
    assert len(skipped) == 1 and set(skipped["solver"]) == {"pgs"}
    assert skipped["reason"].str.contains("backends that fit: kkt, osqp").all()

    # every run is the exact symplectic-Euler free fall, and Parquet == CSV
    table = load_results(tmp_path / "dask").table
    assert len(table) == 8
    for _, row in table.iterrows():
        traj = load_results(tmp_path / "dask" / row["folder"]).trajectory
        n = np.round(traj["t"] / row["dt"])
        expected = fakes.expected_position(row["param.height"], 0.5, row["dt"], n)
        np.testing.assert_allclose(traj["position"][:, 0], expected, rtol=0, atol=1e-9)
    csv = pd.read_csv(tmp_path / "dask" / "sweep.csv")
    assert list(csv.columns) == list(table.columns) and len(csv) == len(table)

    # aggregates: both solvers solve every problem (4 problems each)
    agg = load_results(tmp_path / "local").aggregates.set_index("solver")
    assert agg.loc["kkt", "success_rate"] == agg.loc["osqp", "success_rate"] == 1.0
    assert (agg["n_problems"] == 4).all() and agg["shifted_gm_rel"].min() == 1.0
    assert (tmp_path / "local" / "plots" / "performance_profile.png").stat().st_size > 0


def test_resume_skips_finished_runs(tmp_path: Path, fake_scenarios: None) -> None:
    spec = write_spec(tmp_path)
    first = sweep(spec, workers=1, quiet=True)
    assert (first.executed, first.reused) == (8, 0)
    stamps = {p: p.stat().st_mtime_ns for p in (first.folder / "runs").glob("*/summary.json")}
    again = sweep(spec, workers=1, quiet=True)
    assert (again.executed, again.reused) == (0, 8)
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps  # nothing rewritten
    # one more step size: only its 4 runs are new
    write_sweep(spec, {**SWEEP, "dt": [0.01, 0.005, 0.02]}, [FALLS])
    more = sweep(spec, workers=1, quiet=True)
    assert (more.executed, more.reused) == (4, 8) and len(more.table) == 12


def test_a_resumed_sweep_reads_each_reused_run_once(
    tmp_path: Path, fake_scenarios: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = write_spec(tmp_path)
    first = sweep(spec, workers=1, quiet=True)
    reads: Counter[str] = Counter()
    load = sweep_module.load_run_folder

    def counted(folder: Path | str) -> Any:
        reads[Path(folder).name] += 1
        return load(folder)

    monkeypatch.setattr(sweep_module, "load_run_folder", counted)
    again = sweep(spec, workers=1, quiet=True)
    assert (again.executed, again.reused) == (0, 8)
    # the check that a reused run still loads is the read its table row comes from
    assert reads == Counter({Path(folder).name: 1 for folder in first.table["folder"]})
    pd.testing.assert_frame_equal(comparable(first.table), comparable(again.table))
    on_disk = pd.read_csv(again.folder / "sweep.csv")
    pd.testing.assert_frame_equal(
        comparable(on_disk), comparable(pd.read_csv(first.folder / "sweep.csv"))
    )


@pytest.mark.parametrize("damaged", ["trajectory.npz", "steps.csv"])
def test_resume_makes_a_run_with_damaged_files_again(
    tmp_path: Path, fake_scenarios: None, damaged: str
) -> None:
    spec = write_spec(tmp_path)
    first = sweep(spec, workers=1, quiet=True)
    runs = sorted(p for p in (first.folder / "runs").iterdir())
    (runs[0] / damaged).write_text("garbage")  # a finished run whose file was damaged
    again = sweep(spec, workers=1, quiet=True)
    assert (again.executed, again.reused) == (1, 7) and again.complete
    assert again.reasons == {"its files are damaged": 1}
    pd.testing.assert_frame_equal(comparable(first.table), comparable(again.table))


@pytest.mark.parametrize("where", ["runs", "run", "plots"])
def test_a_file_where_the_sweep_keeps_a_folder_is_refused_before_any_run(
    tmp_path: Path, fake_scenarios: None, where: str
) -> None:
    from contactlab.errors import ResultsError

    spec = write_spec(tmp_path)
    first = sweep(spec, workers=1, quiet=True)
    runs = first.folder / "runs"
    victim = {"runs": runs, "plots": first.folder / "plots"}.get(where) or sorted(runs.iterdir())[0]
    kept = {p: p.stat().st_mtime_ns for p in runs.glob("*/summary.json")} if where == "run" else {}
    if victim.is_dir():
        import shutil

        shutil.rmtree(victim)
    victim.write_text("not a folder")
    with pytest.raises(ResultsError, match="is a file where the sweep keeps .*remove it"):
        sweep(spec, workers=1, quiet=True)
    assert victim.read_text() == "not a folder"
    assert {p: p.stat().st_mtime_ns for p in kept if p.exists()} == {
        p: t for p, t in kept.items() if p.exists()
    }


@pytest.mark.parametrize("how", ["crash_file", "kill_file"])
def test_interrupted_sweep_loses_no_finished_run(
    tmp_path: Path, fake_scenarios: None, how: str
) -> None:
    flag = tmp_path / "flag"
    flag.touch()
    flagged = {"name": "exp-fall", "params": {"height": 3.0}, "model_options": {how: flag}}
    spec = write_spec(tmp_path, flagged)
    first = sweep(spec, workers=2, quiet=True)
    # the 4 flagged runs raise (or kill their worker, which breaks the pool)
    assert not first.complete and len(first.incomplete) >= 4
    # a worker killed mid-write leaves no temporary folder behind once the sweep returns
    assert not [p.name for p in (first.folder / "runs").iterdir() if p.name.startswith(".")]
    finished = sorted(p.parent.name for p in (first.folder / "runs").glob("*/summary.json"))
    assert len(finished) == len(first.table) == 12 - len(first.incomplete)
    flag.unlink()
    second = sweep(spec, workers=2, quiet=True)
    assert second.complete and second.executed == 12 - len(finished)
    assert second.reused == len(finished) and len(second.table) == 12
    runs = second.folder / "runs"
    assert not list(runs.glob(".*"))  # no temporary folder left behind
    for row in second.table.itertuples():
        assert recorded_hash(runs / Path(row.folder).name) == row.spec_hash


def test_grid_expansion_overrides_and_short_version(tmp_path: Path, fake_scenarios: None) -> None:
    from contactlab.experiments.grid import load_grid

    spec = tmp_path / "grid.toml"
    spec.write_text(
        '[sweep]\nmodels = ["exp-qp"]\nsolvers = ["kkt", "osqp"]\nseeds = [0, 1]\n'
        '[[scenarios]]\nname = "exp-fall"\nparams = { height = [1, 2], v0x = 0.0 }\n'
        '[[scenarios]]\nname = "exp-fall"\nsolvers = ["kkt"]\n'
        'model_options = { crash_file = ["a", "b", "c"] }\n'
        "[short.sweep]\nseeds = 0\n"
        '[[short.scenarios]]\nname = "exp-fall"\n'
    )
    grid = load_grid(spec)
    # 2 heights x 2 solvers x 2 seeds, then 3 option values x 1 solver x 2 seeds
    assert len(grid.runs) == 8 + 6 and grid.out == tmp_path / "grid"
    first = grid.runs[0]
    assert first.params == {"height": 1.0, "v0x": 0.0, "mass": 1.5, "box": False}
    assert isinstance(first.params["height"], float)  # parsed to the parameter's type
    assert {r.model_options.get("crash_file") for r in grid.runs[8:]} == {"a", "b", "c"}
    assert len({r.digest() for r in grid.runs}) == 14  # every run its own folder
    short = load_grid(spec, short=True)
    assert len(short.runs) == 2  # defaults, 2 solvers, one seed


def test_spec_round_trip_keeps_hash_and_tuple_parameters() -> None:
    from contactlab.runspec import RunSpec

    spec = RunSpec("sheath", {"half_extents": (0.2, 0.2, 0.05), "v": 1.0}, dt=0.01, seed=3)
    back = RunSpec.from_dict(spec.as_dict())
    assert back == spec and back.digest() == spec.digest()
    assert isinstance(back.params["half_extents"], tuple)
    # the hash does not depend on the order the parameters were given in
    same = RunSpec("sheath", {"v": 1.0, "half_extents": (0.2, 0.2, 0.05)}, dt=0.01, seed=3)
    assert same.digest() == spec.digest()
    assert RunSpec("sheath", {"v": 1.0}, dt=0.01, seed=4).digest() != spec.digest()
