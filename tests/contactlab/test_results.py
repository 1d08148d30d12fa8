"""Results folders: exact round trip, atomic writes, plots regenerated from the files."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from contactlab import results
from contactlab.errors import ResultsError
from contactlab.simulator import Simulator

try:
    import particle_fakes as pf
except ImportError:  # tests/contactlab imported as a package
    from . import particle_fakes as pf

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def run():
    scene = pf.falling_spheres.build(n=2, ground=True, z0=0.15, vz0=0.0)
    with pf.registered():
        return Simulator(scene, "test-particle", "test-free", "kkt").run(steps=120)


def _siblings(path):
    return sorted(p.name for p in path.parent.iterdir())


def test_round_trip_gives_the_same_arrays_and_table(run, tmp_path):
    folder = results.write_run(run, tmp_path / "r", plots=False, command=["contactlab", "x"])
    data = results.load_run(folder)
    assert set(data.trajectory) == set(run.trajectory)
    for key, value in run.trajectory.items():
        assert data.trajectory[key].dtype == value.dtype, key
        assert np.array_equal(data.trajectory[key], value), key
    assert list(data.steps.columns) == list(run.steps.columns)
    for column in run.steps:
        if column == "status":
            assert list(data.steps[column]) == list(run.steps[column])
        else:  # the CSV keeps full float precision: equal, not just close
            assert np.array_equal(
                data.steps[column].to_numpy(float), run.steps[column].to_numpy(float)
            ), column
    # Contacts were found and penetration recorded, so the table is not trivially zero.
    assert data.steps["n_contacts"].max() == 2 and data.steps["penetration"].max() > 0


def test_summary_describes_the_run(run, tmp_path):
    folder = results.write_run(run, tmp_path / "r", plots=False, command=["contactlab", "run"])
    s = json.loads((folder / results.SUMMARY).read_text())
    assert s["scenario"] == "test-fall"
    assert s["parameters"]["n"] == 2 and s["parameters"]["vz0"] == 0.0
    assert (s["formulation"], s["model"], s["solver"]) == ("test-particle", "test-free", "kkt")
    assert s["dt"] == 1e-3 and s["steps"] == 120 and s["duration"] == pytest.approx(0.12)
    assert s["status"] == "ok" and s["command"] == ["contactlab", "run"]
    assert {"numpy", "scipy", "osqp", "qpsolvers", "cvxpy", "contactlab"} <= set(s["versions"])
    assert s["versions"]["numpy"] == np.__version__
    commit = s["git"]["commit"]
    assert commit is None or re.fullmatch(r"[0-9a-f]{40}", commit)
    agg = run.aggregates()
    for key, value in agg.items():
        assert s["aggregates"][key] == (pytest.approx(value) if value is not None else None), key
    assert set(run.steps.columns) <= set(s["columns"])  # every column explained


def test_json_has_no_nan(tmp_path):
    value = results.jsonable({"a": float("nan"), "b": np.float32(1.5), "c": (np.int64(2),)})
    assert value == {"a": None, "b": 1.5, "c": [2]}
    json.dumps(value, allow_nan=False)


def test_failure_while_writing_leaves_nothing(run, tmp_path, monkeypatch):
    def broken(folder):
        raise RuntimeError("disk full")

    monkeypatch.setattr(results, "plot_run", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        results.write_run(run, tmp_path / "r")
    assert list(tmp_path.iterdir()) == []


def test_existing_folder_is_never_clobbered_silently(run, tmp_path, monkeypatch):
    target = tmp_path / "r"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    with pytest.raises(ResultsError, match="already exists.*--force"):
        results.write_run(run, target, plots=False)
    assert _siblings(target) == ["r"] and (target / "notes.txt").read_text() == "keep me"

    # Overwrite requested but the write fails: the old folder survives intact.
    monkeypatch.setattr(results, "plot_run", lambda folder: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        results.write_run(run, target, overwrite=True)
    assert _siblings(target) == ["r"] and (target / "notes.txt").read_text() == "keep me"
    monkeypatch.undo()

    results.write_run(run, target, overwrite=True, plots=False)
    assert _siblings(target) == ["r"]
    assert not (target / "notes.txt").exists() and (target / results.STEPS).is_file()


def test_plots_are_regenerated_from_the_files(run, tmp_path):
    folder = results.write_run(run, tmp_path / "r")
    # free spheres landing on the ground: contacts, and no joint whose drift to plot
    assert run.steps["n_contacts"].max() > 0 and run.steps["constraint_error"].abs().max() == 0
    names = {"energy.png", "penetration.png", "solve_time.png"}
    assert {p.name for p in (folder / results.PLOTS).iterdir()} == names
    for p in (folder / results.PLOTS).iterdir():
        p.unlink()
    paths = results.plot_run(folder)
    assert {p.name for p in paths} == names
    for p in paths:
        assert p.read_bytes()[:8] == PNG_SIGNATURE and p.stat().st_size > 5000


def test_loading_an_incomplete_folder_names_the_missing_file(run, tmp_path):
    folder = results.write_run(run, tmp_path / "r", plots=False)
    (folder / results.TRAJECTORY).unlink()
    with pytest.raises(ResultsError, match="trajectory.npz is missing"):
        results.load_run(folder)
    with pytest.raises(ResultsError, match="does not exist"):
        results.load_run(tmp_path / "nowhere")
