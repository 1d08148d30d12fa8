"""Bad command lines: each ends with exit 2 and one stderr line naming the input, nothing written.

Every case runs ``contactlab.cli.main`` in this process inside an empty
working folder; after it the folder must hold no results folder and no
temporary leftovers (only the fixtures the case made itself).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from contactlab import registry

from .conftest import assert_one_line, call, leftovers

SCENARIOS = registry.catalog()["scenarios"]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder of conftest's, holding a file ``afile`` where a folder is asked."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("not a folder\n")
    return tmp_path


def _untouched(root: Path, *extra: str) -> None:
    names = sorted(p.name for p in root.iterdir())
    assert names == sorted(["afile", *extra]), names
    assert leftovers(root) == []


# (argv, regex of the one error line)
RUN_CASES = [
    (["run", "no-such-scene"], r"unknown scenario 'no-such-scene'"),
    (["run", "pendulum", "--formulation", "nope"], r"unknown formulation 'nope'"),
    (["run", "pendulum", "--model", "nope"], r"unknown (contact )?model 'nope'"),
    (["run", "pendulum", "--solver", "osqpp"], r"unknown solver 'osqpp'"),
    (["run", "pendulum", "--dt", "0"], r"--dt must be a positive number"),
    (["run", "pendulum", "--dt", "-1"], r"--dt must be a positive number"),
    (["run", "pendulum", "--dt", "nan"], r"--dt must be a positive number"),
    (["run", "pendulum", "--dt", "inf"], r"--dt must be a positive number"),
    (["run", "pendulum", "--dt", "abc"], r"argument --dt: invalid float value: 'abc'"),
    (["run", "pendulum", "--steps", "0"], r"steps must be a positive integer"),
    (["run", "pendulum", "--steps", "-3"], r"steps must be a positive integer"),
    (["run", "pendulum", "--steps", "1.5"], r"argument --steps: invalid int value"),
    (["run", "pendulum", "--duration", "0"], r"duration must be a positive number"),
    (["run", "pendulum", "--duration", "-1"], r"duration must be a positive number"),
    (["run", "pendulum", "--steps", "3", "--duration", "1"], r"not allowed with argument"),
    (["run", "pendulum", "--set", "length"], r"--set expects KEY=VALUE, got 'length'"),
    (["run", "pendulum", "--set", "=3"], r"--set expects KEY=VALUE"),
    (["run", "pendulum", "--model-option", "x"], r"--model-option expects KEY=VALUE"),
    (["run", "pendulum", "--steps", "2", "--out", "afile"], r"'afile' already exists"),
    (["run", "pendulum", "--steps", "2", "--out", "afile", "--force"], r"'afile' .*not a folder"),
    (["run", "pendulum", "--steps", "2", "--out", "afile/x"], r"'afile' is a file, not a folder"),
    (["run", "pendulum", "--steps", "2", "--out", "afile/x/y"], r"'afile' is a file"),
    (["run", "pendulum", "--steps", "2", "--out", "/proc/no/such"], r"cannot be written"),
    (["run", "box-pile", "--set", "seed=-1"], r"seed must be an integer >= 0, got -1"),
    (["run", "box-pile", "--set", "n=0"], r"box-pile needs n >= 1"),
    (["run", "box-slide", "--set", "v0=1e200"], r"'box-slide' cannot be built with v0="),
    (["run", "box-slide", "--set", "v0=-1"], r"v0 must be >= 0"),
    (["run", "pendulum", "--set", "mass=-1"], r"mass"),
    (["run", "pendulum", "--set", "mass=true"], r"mass"),
    (["run", "chain", "--set", "n_links=2.5"], r"n_links"),
    (["run", "chain", "--set", "n_links=0"], r"n_links"),
    (["run", "pendulum", "--formulation", "reduced", "--model", "bisp", "--solver", "kkt"], "bisp"),
    (["run", "box-stack", "--model", "frictionless", "--solver", "kkt", "--out", "r"], r"'kkt'"),
    (["run"], r"the following arguments are required: scenario"),
    (["no-such-command"], r"invalid choice: 'no-such-command'"),
]


@pytest.mark.parametrize(("argv", "pattern"), RUN_CASES, ids=lambda v: " ".join(v)[:60])
def test_bad_run_line(argv, pattern, workdir, capsys):
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    _untouched(workdir)


# every registered scenario: an unknown parameter and a wrongly typed one are named
@pytest.mark.parametrize("row", SCENARIOS, ids=lambda r: r["name"])
def test_unknown_parameter_is_named(row, workdir, capsys):
    outcome = call(["run", row["name"], "--set", "no_such_parameter=1"], capsys)
    line = assert_one_line(outcome, 2, r"no_such_parameter")
    # the line lists what exists, so the fix is in it
    if row["parameters"]:
        assert row["parameters"][0]["name"] in line
    _untouched(workdir)


NUMERIC = [
    (r["name"], p["name"])
    for r in SCENARIOS
    for p in r["parameters"][:1]
    if p["type"] in ("float", "int")
]


@pytest.mark.parametrize(("scenario", "param"), NUMERIC, ids=lambda v: str(v))
def test_wrongly_typed_parameter_is_named(scenario, param, workdir, capsys):
    outcome = call(["run", scenario, "--set", f"{param}=abc"], capsys)
    assert_one_line(outcome, 2, rf"{param}.*'abc'|'abc'.*{param}")
    _untouched(workdir)


# blow-ups of issue 13: exit 2, the step, the quantity, the bound, the fix; no folder
BLOW_UPS = [
    ["chain", "--set", "n_links=3", "--set", "baumgarte=1e9", "--dt", "0.1", "--duration", "2"],
    ["redmax-spherical", "--dt", "5"],
    ["pendulum", "--dt", "100"],
    ["spring-damper", "--dt", "10"],
    ["ball-drop", "--dt", "1", "--solver", "osqp"],
    ["box-pile", "--set", "n=5", "--dt", "1", "--solver", "osqp"],
]


@pytest.mark.parametrize("argv", BLOW_UPS, ids=lambda v: v[0])
def test_blow_up_exits_2_naming_step_quantity_and_bound(argv, workdir, capsys):
    outcome = call(["run", *argv, "--quiet", "--no-plots", "--out", "r"], capsys)
    assert_one_line(outcome, 2, r"step \d+ \(t = .* s\) diverged: .* = .* exceeds the bound .*--dt")
    assert "RuntimeWarning" not in outcome.err
    _untouched(workdir)


def test_blow_up_kept_going_with_the_option(workdir, capsys):
    outcome = call(
        ["run", "pendulum", "--dt", "100", "--quiet", "--no-plots", "--no-divergence-guard"]
        + ["--out", "r"],
        capsys,
    )
    assert outcome.code == 0, outcome.err
    summary = json.loads((workdir / "r" / "summary.json").read_text())
    # the run ends, and its relative energy drift shows the blow-up (energy scale m g L)
    assert summary["aggregates"]["energy_drift_relative"] > 10


COMPARE_CASES = [
    (["compare", "pendulum", "--solvers", "osqpp,kkt"], r"unknown solver 'osqpp'"),
    (["compare", "pendulum", "--solvers", "kkt", "--models", "nope"], r"unknown model 'nope'"),
    (["compare", "pendulum", "--solvers", "kkt", "--formulations", "x"], r"unknown formulation"),
    (["compare", "pendulum", "--solvers", ","], r"empty list of names"),
    (["compare", "pendulum", "--solvers", "kkt", "--models", "bisp"], r"no combination .* fits"),
    (["compare", "nope", "--solvers", "kkt"], r"unknown scenario 'nope'"),
    (["compare", "pendulum", "--solvers", "kkt", "--out", "afile"], r"'afile' already exists"),
    (["compare", "pendulum", "--solvers", "kkt", "--out", "afile/c"], r"'afile' is a file"),
    (["compare", "pendulum", "--solvers", "kkt", "--set", "nope=1"], r"nope"),
    (["compare", "pendulum"], r"--solvers"),
]


@pytest.mark.parametrize(("argv", "pattern"), COMPARE_CASES, ids=lambda v: " ".join(v)[:60])
def test_bad_compare_line(argv, pattern, workdir, capsys):
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    _untouched(workdir)


def test_compare_refuses_a_folder_that_is_not_a_comparison(workdir, capsys):
    run = workdir / "somerun"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    for extra in ([], ["--force"]):
        argv = ["compare", "pendulum", "--solvers", "kkt", "--out", "somerun", *extra]
        outcome = call(argv, capsys)
        assert_one_line(outcome, 2, r"somerun")
    assert sorted(p.name for p in run.iterdir()) == ["summary.json"]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


SWEEP_SPECS = {
    "empty-solvers": ('solvers = []\nmodels = ["frictionless"]', r"solvers is an empty list"),
    "empty-models": ('solvers = ["kkt"]\nmodels = []', r"models is an empty list"),
    "empty-dt": ('solvers = ["kkt"]\nmodels = ["frictionless"]\ndt = []', r"dt is an empty"),
    "empty-seeds": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nseeds = []', r"seeds is"),
    "dt-zero": ('solvers = ["kkt"]\nmodels = ["frictionless"]\ndt = 0', r"dt = 0 is not"),
    "dt-negative": ('solvers = ["kkt"]\nmodels = ["frictionless"]\ndt = [0.01, -1]', r"dt = -1"),
    "dt-text": ('solvers = ["kkt"]\nmodels = ["frictionless"]\ndt = "fast"', r"dt = 'fast'"),
    "dt-bool": ('solvers = ["kkt"]\nmodels = ["frictionless"]\ndt = true', r"dt = True"),
    "duration-neg": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nduration = -1', r"duration"),
    "duration-long": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nduration = "long"', r"'long'"),
    "duration-nan": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nduration = nan', r"duration"),
    "seed-text": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nseeds = ["a"]', r"seeds must"),
    "unknown-key": ('solvers = ["kkt"]\nmodels = ["frictionless"]\nspeed = 3', r"unknown keys"),
    "no-solvers": ('models = ["frictionless"]', r"needs solvers"),
    "nothing-fits": ('solvers = ["kkt"]\nmodels = ["bisp"]', r"no run of the sweep fits"),
    # a typo beside a good name refuses the grid (it used to run kkt and skip the typo)
    "unknown-solver": (
        'solvers = ["kkt", "osqpp"]\nmodels = ["frictionless"]',
        r"scenario 'pendulum': unknown solver 'osqpp'; known solvers: .*\bkkt\b.*\bosqp\b",
    ),
    "unknown-model": (
        'solvers = ["kkt"]\nmodels = ["frictionless", "frictionles"]',
        r"unknown model 'frictionles'; known models: .*\bfrictionless\b",
    ),
    "unknown-formulation": (
        'solvers = ["kkt"]\nmodels = ["frictionless"]\nformulations = ["maximal", "maximum"]',
        r"unknown formulation 'maximum'; known formulations: .*\bmaximal\b.*\breduced\b",
    ),
    "solver-not-a-name": ('solvers = ["kkt", 3]\nmodels = ["frictionless"]', r"solvers must"),
    "compare-by": (
        'solvers = ["kkt"]\nmodels = ["frictionless"]\ncompare_by = ["x"]',
        r"compare_by names unknown",
    ),
}


@pytest.mark.parametrize("case", sorted(SWEEP_SPECS))
def test_bad_sweep_grid_is_refused_before_any_run(case, workdir, capsys):
    body, pattern = SWEEP_SPECS[case]
    spec = _write(workdir / "s.toml", f'[sweep]\n{body}\n\n[[scenarios]]\nname = "pendulum"\n')
    outcome = call(["sweep", str(spec), "--quiet", "--workers", "1"], capsys)
    assert_one_line(outcome, 2, pattern)
    _untouched(workdir, "s.toml")


def test_sweep_grid_keeps_a_known_but_missing_solver_as_unavailable(workdir, monkeypatch):
    # honest, not refused as unknown: the grid runs what is installed and says why not the rest
    import solvers.backend_registry as SR
    from contactlab.experiments.grid import load_grid

    osqp = SR.backend_class("osqp")
    monkeypatch.setattr(SR, "_instances", {})
    monkeypatch.setattr(osqp, "availability", classmethod(lambda cls: (False, "no osqp here")))
    spec = _write(
        workdir / "s.toml",
        '[sweep]\nsolvers = ["kkt", "osqp"]\nmodels = ["frictionless"]\n'
        '[[scenarios]]\nname = "pendulum"\n',
    )
    grid = load_grid(spec)
    assert {r.solver for r in grid.runs} == {"kkt"} and len(grid.runs) == 2  # both formulations
    assert "osqp" not in SR.available_backends()
    assert {(r["solver"], r["reason"]) for r in grid.skipped} == {
        (
            "osqp",
            "solver 'osqp' is unavailable: no osqp here; available solvers: "
            + ", ".join(SR.available_backends()),
        )
    }


SWEEP_FILES = {
    "missing": (None, r"does not exist"),
    "bad-toml": ("[sweep\n", r"not valid TOML"),
    "no-scenarios": ('[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\n', r"no \[\[scen"),
    "unknown-table": ('[swep]\n[[scenarios]]\nname = "pendulum"\n', r"unknown tables"),
    "unknown-scenario": (
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\n[[scenarios]]\nname = "x"\n',
        r"unknown scenario 'x'",
    ),
    "scenario-no-name": (
        '[sweep]\nsolvers = ["kkt"]\n[[scenarios]]\nparams = {}\n',
        "needs a name",
    ),
    "params-not-table": (
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\n[[scenarios]]\nname = "pendulum"'
        "\nparams = 3\n",
        r"params must be a table",
    ),
    "empty-param-axis": (
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\n[[scenarios]]\nname = "pendulum"'
        "\nparams = { mass = [] }\n",
        r"params.mass is an empty list",
    ),
    "bad-param": (
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\n[[scenarios]]\nname = "pendulum"'
        "\nparams = { masss = 1.0 }\n",
        r"masss",
    ),
}


@pytest.mark.parametrize("case", sorted(SWEEP_FILES))
def test_bad_sweep_file(case, workdir, capsys):
    text, pattern = SWEEP_FILES[case]
    spec = workdir / "s.toml"
    if text is not None:
        spec.write_text(text)
    outcome = call(["sweep", str(spec), "--quiet", "--workers", "1"], capsys)
    assert_one_line(outcome, 2, pattern)
    _untouched(workdir, *(["s.toml"] if text is not None else []))


def test_sweep_out_below_a_file(workdir, capsys):
    spec = _write(
        workdir / "s.toml",
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\nduration = 0.01\n'
        '[[scenarios]]\nname = "pendulum"\n',
    )
    outcome = call(["sweep", str(spec), "--out", "afile/sw", "--quiet", "--workers", "1"], capsys)
    assert_one_line(outcome, 2, r"'afile' is a file")
    _untouched(workdir, "s.toml")


CORRUPTIONS = {
    "summary-garbage": ("summary.json", b"{not json"),
    "summary-empty": ("summary.json", b""),
    "summary-list": ("summary.json", b"[1, 2]"),
    "trajectory-garbage": ("trajectory.npz", b"PK\x03\x04 broken"),
    "trajectory-empty": ("trajectory.npz", b""),
    "trajectory-text": ("trajectory.npz", b"hello"),
}


# plot reads summary and steps only; render reads the trajectory too
CORRUPT_CASES = [
    (case, command)
    for case in sorted(CORRUPTIONS)
    for command in ("plot", "render")
    if command == "render" or CORRUPTIONS[case][0] != "trajectory.npz"
]


@pytest.mark.parametrize(("case", "command"), CORRUPT_CASES)
def test_corrupt_run_folder_is_named(case, command, run_folder, capsys):
    name, data = CORRUPTIONS[case]
    (run_folder / name).write_bytes(data)
    argv = ["plot", "r"] if command == "plot" else ["render", "r", "--out", "a.gif"]
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, name.replace(".", r"\."))
    assert not (run_folder.parent / "a.gif").exists()
    assert leftovers(run_folder.parent) == []


def test_load_run_on_corrupt_trajectory_raises_results_error(run_folder):
    from contactlab.errors import ResultsError
    from contactlab.results import load_run

    (run_folder / "trajectory.npz").write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(ResultsError, match=r"trajectory\.npz' is unreadable or corrupt"):
        load_run(run_folder)


RENDER_CASES = [
    (["render", "r", "--out", "a.txt"], r"cannot tell the animation format"),
    (["render", "r", "--out", "afile/a.gif"], r"'afile' is a file"),
    (["render", "missing", "--out", "a.gif"], r"'missing' does not exist|missing"),
    (["render", "afile", "--out", "a.gif"], r"'afile' is a file"),
    (["plot", "afile"], r"'afile' is a file, not a results folder"),
    (["plot", "missing"], r"'missing' does not exist"),
]


@pytest.mark.parametrize(("argv", "pattern"), RENDER_CASES, ids=lambda v: " ".join(v)[:60])
def test_bad_render_and_plot_lines(argv, pattern, run_folder, capsys):
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    assert leftovers(run_folder.parent) == []
    assert not (run_folder.parent / "a.gif").exists()


def test_render_out_is_a_folder(run_folder, capsys):
    (run_folder.parent / "v.gif").mkdir()
    outcome = call(["render", "r", "--out", "v.gif"], capsys)
    assert_one_line(outcome, 2, r"'v.gif' is a folder")


def _fake_ffmpeg(bindir: Path, script: str) -> None:
    bindir.mkdir()
    exe = bindir / "ffmpeg"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)


MP4 = ["render", "r", "--out", "x.mp4", "--max-frames", "3", "--size", "60"]


def test_render_mp4_without_ffmpeg_is_refused_before_drawing(run_folder, monkeypatch, capsys):
    import sys

    import contactlab.experiments.render as R

    (run_folder.parent / "bin").mkdir()
    monkeypatch.setenv("PATH", str(run_folder.parent / "bin"))  # no ffmpeg on PATH
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # nor the pip-shipped one
    drawn = []
    monkeypatch.setattr(R, "draw_frames", lambda *a, **k: drawn.append(1) or [])
    outcome = call(MP4, capsys)
    assert_one_line(outcome, 2, r"writing MP4 needs ffmpeg, which is not installed; install")
    assert drawn == []  # refused before any frame was drawn
    assert not (run_folder.parent / "x.mp4").exists() and leftovers(run_folder.parent) == []


def test_render_mp4_when_ffmpeg_fails_leaves_nothing_half_written(run_folder, monkeypatch, capsys):
    # an ffmpeg that reads its input, writes half a file at its output, complains and fails
    script = 'for last; do :; done\ncat >/dev/null\nprintf partial > "$last"\n'
    script += "echo \"Unknown encoder 'libx264'\" >&2\nexit 1\n"
    _fake_ffmpeg(run_folder.parent / "bin", script)
    monkeypatch.setenv("PATH", str(run_folder.parent / "bin"))
    (run_folder.parent / "x.mp4").write_bytes(b"an earlier animation")
    outcome = call(MP4, capsys)
    pattern = r"ffmpeg failed \(exit status 1: Unknown encoder 'libx264'\)"
    line = assert_one_line(outcome, 2, pattern)
    assert "'x.mp4'" in line and "nothing was written there" in line
    assert (run_folder.parent / "x.mp4").read_bytes() == b"an earlier animation"
    assert leftovers(run_folder.parent) == []


def test_render_mp4_when_ffmpeg_cannot_start_is_one_line(run_folder, monkeypatch, capsys):
    import contactlab.experiments.render as R

    # found when checked, gone when launched
    monkeypatch.setattr(R, "ffmpeg_path", lambda: str(run_folder.parent / "gone" / "ffmpeg"))
    outcome = call(MP4, capsys)
    assert_one_line(outcome, 2, r"ffmpeg '.*gone/ffmpeg' could not be started \(No such file")
    assert not (run_folder.parent / "x.mp4").exists() and leftovers(run_folder.parent) == []


def test_render_keeps_a_good_folder_readable(run_folder):
    # the folder the corruption cases start from is itself complete
    from contactlab.results import load_run

    data = load_run(run_folder)
    assert data.steps.shape[0] == 3 and np.isfinite(data.trajectory["position"]).all()


def test_compare_and_sweep_record_a_diverged_run_as_a_failure(workdir, capsys):
    import pandas as pd

    argv = ["compare", "pendulum", "--solvers", "kkt", "--models", "frictionless"]
    outcome = call(
        [*argv, "--formulations", "maximal", "--dt", "100", "--quiet", "--out", "c"], capsys
    )
    # results written, not every run complete: exit code 3 (docs/commands.md, "Exit codes")
    assert outcome.code == 3, outcome.err
    assert "1 combinations run (1 failed, 0 with unconverged steps)" in outcome.out
    table = pd.read_csv(workdir / "c" / "comparison.csv")
    assert list(table["status"]) == ["diverged"] and not table["success"].any()
    assert "energy gain" in (workdir / "c" / "comparison.md").read_text()

    spec = _write(
        workdir / "s.toml",
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["frictionless"]\nformulations = ["maximal"]\n'
        'dt = [100.0, 0.01]\nduration = 0.02\n[[scenarios]]\nname = "pendulum"\n',
    )
    outcome = call(["sweep", str(spec), "--quiet", "--workers", "1"], capsys)
    assert outcome.code == 3, outcome.err
    rows = pd.read_csv(workdir / "s" / "sweep.csv").set_index("dt")
    assert rows.loc[100.0, "status"] == "diverged" and not rows.loc[100.0, "success"]
    assert rows.loc[0.01, "status"] == "ok" and rows.loc[0.01, "success"]
