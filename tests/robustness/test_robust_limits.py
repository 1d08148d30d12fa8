"""Bad input, second pass: limits checked before allocation, extreme parameters named,
damaged results named, options checked before any work.

Each case runs ``contactlab.cli.main`` in this process inside an empty working folder:
exit code 2 (3 where results are written but not optimal), one stderr line that names
the input, and no results or temporary folder left behind.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from .conftest import assert_one_line, call, leftovers


def _only(root: Path, *names: str) -> None:
    """``root`` holds exactly ``names`` (the case's own fixtures) and no temporaries."""
    assert sorted(p.name for p in root.iterdir()) == sorted(names)
    assert leftovers(root) == []


# -- sizes and values refused before anything is built or allocated -------------------------

LINES = [
    (
        ["run", "ball-drop", "--model", "anitescu-hart", "--model-option", "directions=100000"],
        r"directions=100000 is beyond the limit of 1024 pyramid directions",
    ),
    (["run", "pendulum", "--set", "mass=1e-308"], r"body 'link': mass 1e-308 is outside the range"),
    (["run", "pendulum", "--set", "angle_deg=nan"], r"parameter 'angle_deg' is NaN"),
    (
        ["run", "pendulum", "--set", "angle_deg=1e300"],
        r"initial state of scene 'pendulum' has non-finite E \(the parameter angle_deg=1e\+300",
    ),
    (
        ["run", "chain", "--set", "baumgarte=1e308"],
        r"step 1 .* failed: .*parameter baumgarte=1e\+308 is beyond floating-point range",
    ),
    (
        ["run", "ball-drop", "--set", "height=1e300"],
        r"too large to bound: .*the parameter height=1e\+300",
    ),
    (["run", "chain", "--set", "axes=w"], r"axes: the axis letter 'w' must be one of x, y, z"),
    (["compare", "pendulum", "--solvers", ""], r"--solvers: an empty list of names"),
    (
        ["optimize", "pendulum", "--start", "0", "--end", "30deg", "--duration", "1e300"],
        r"--duration 1e\+300 s is outside the range 1e-06 to 1e\+06 s",
    ),
    (
        ["optimize", "pendulum", "--start", "0", "--end", "30deg", "--max-iterations", "0"],
        r"--max-iterations must be an integer >= 1, got 0",
    ),
    (
        ["optimize", "pendulum", "--start", "0", "--end", "1e300"],
        r"--end: '1e300' is beyond the limit of 1e\+06 in magnitude",
    ),
    (
        ["optimize", "pendulum", "--start", "0", "--end", "1", "--start-velocity=-1e7"],
        r"--start-velocity: '-1e7' is beyond the limit",
    ),
    (
        ["run", "pendulum", "--out", "d/" + "x" * 300 + "/e"],
        r"--out name 'x{20}\.\.\.' is 300 bytes",
    ),
    (["studies", "1", "--short", "--out", "x" * 300], r"--out name 'x{20}\.\.\.' is 300 bytes"),
]


@pytest.mark.parametrize(("argv", "pattern"), LINES)
def test_limit_or_extreme_value_is_one_line(argv, pattern, workdir, capsys):
    extra = [] if argv[0] in ("compare", "studies", "optimize") else ["--steps", "5", "--quiet"]
    if argv[0] == "optimize":
        extra = ["--no-animation", "--out", "o"]
    if "--out" not in argv and argv[0] == "run":
        extra += ["--out", "r"]
    outcome = call([*argv, *extra], capsys)
    assert_one_line(outcome, 2, pattern)
    _only(workdir)


def test_nan_parameter_is_refused_but_a_word_containing_nan_is_a_type_error():
    from contactlab.errors import ParameterError
    from contactlab.scenario import get_scenario

    sc = get_scenario("pendulum")
    with pytest.raises(ParameterError, match="'mass' is NaN"):
        sc.resolve({"mass": "-nan"})
    with pytest.raises(ParameterError, match="'mass' expects float, got 'banana'"):
        sc.resolve({"mass": "banana"})


def test_body_mass_range_edges():
    from contactlab.errors import ConfigurationError
    from contactlab.scene import MASS_RANGE, Body

    lo, hi = MASS_RANGE
    Body("b", lo, np.full(3, lo))  # the edges themselves are accepted
    Body("b", hi, np.full(3, hi))
    with pytest.raises(ConfigurationError, match="inertia 1e-101 is outside"):
        Body("b", 1.0, np.full(3, lo / 10))
    # a model file's massless link (non-strict) stays allowed: zero is no magnitude
    Body("b", 0.0, np.zeros(3), strict=False)


def test_optimize_that_stops_short_writes_results_and_exits_3(workdir, capsys):
    argv = ["optimize", "pendulum", "--start", "0", "--end", "30deg", "--max-iterations", "1"]
    outcome = call([*argv, "--no-animation", "--out", "o"], capsys)
    assert outcome.code == 3, outcome.err
    summary = json.loads((workdir / "o" / "summary.json").read_text())
    assert summary["status"] != "optimal" and summary["iterations"] == 1
    assert outcome.out.startswith(summary["status"])


def test_optimize_refuses_a_scene_with_contact_shapes_it_would_pass_through(workdir, capsys):
    # the spacetime problem has no contact: the ball's path would go through the ground
    outcome = call(["optimize", "ball-drop", "--start", "0", "--end", "1", "--out", "o"], capsys)
    assert outcome.code == 2
    assert "scene 'ball-drop' has 1 static shape(s)" in outcome.err
    assert len(outcome.err.strip().splitlines()) == 1 and "Traceback" not in outcome.err
    assert not (workdir / "o").exists()


def test_sweep_grid_beyond_the_run_limit_is_refused_before_expansion(workdir, capsys):
    from contactlab.experiments.grid import MAX_RUNS

    dts = ", ".join(f"{0.001 + i * 1e-9:.12g}" for i in range(MAX_RUNS + 1))
    (workdir / "s.toml").write_text(
        f'[sweep]\nmodels = ["anitescu-hart"]\nsolvers = ["osqp"]\ndt = [{dts}]\n'
        '[[scenarios]]\nname = "ball-drop"\n'
    )
    outcome = call(["sweep", "s.toml", "--quiet", "--out", "sw"], capsys)
    assert_one_line(
        outcome, 2, rf"expands to [\d,]+ runs or more, beyond the limit of {MAX_RUNS:,}"
    )
    _only(workdir, "s.toml")


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"\xff\xfe\x00garbage", r"'s\.toml' is not text \(byte 0 is not UTF-8\)"),
        (b"", r"'s\.toml' lists no \[\[scenarios\]\]"),
    ],
)
def test_sweep_spec_that_is_not_a_grid_is_named(content, pattern, workdir, capsys):
    (workdir / "s.toml").write_bytes(content)
    outcome = call(["sweep", "s.toml", "--quiet", "--out", "sw"], capsys)
    assert_one_line(outcome, 2, pattern)
    _only(workdir, "s.toml")


# -- damaged run folders ----------------------------------------------------------------------


def _arrays(folder: Path) -> dict:
    with np.load(folder / "trajectory.npz") as data:
        return {k: data[k] for k in data.files}


def _huge_header(folder: Path) -> None:
    # each member's header claims 1e11 x 3 doubles (2.4 TB); the member holds 64 bytes
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000000000, 3), }"
    header = header.ljust(117) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    with zipfile.ZipFile(folder / "trajectory.npz", "w") as archive:
        for key in ("t", "position", "rotation"):
            archive.writestr(f"{key}.npy", member + bytes(64))


def _rotation_scaled(folder: Path) -> None:
    arrays = _arrays(folder)
    arrays["rotation"] = 2.0 * arrays["rotation"]
    np.savez(folder / "trajectory.npz", **arrays)


def _time_reversed(folder: Path) -> None:
    arrays = _arrays(folder)
    arrays["t"] = arrays["t"][::-1].copy()
    np.savez(folder / "trajectory.npz", **arrays)


def _steps_nan_time(folder: Path) -> None:
    steps = pd.read_csv(folder / "steps.csv")
    steps.loc[2, "t"] = np.nan
    steps.to_csv(folder / "steps.csv", index=False)


def _summary_without_steps(folder: Path) -> None:
    summary = json.loads((folder / "summary.json").read_text())
    summary["steps"] = "many"
    (folder / "summary.json").write_text(json.dumps(summary))


DAMAGE = {
    "npz-header-claims-terabytes": (
        _huge_header,
        r"trajectory\.npz' is unreadable or corrupt \(member 't\.npy' claims shape "
        r"\(100000000000, 3\) \(2\.4e\+12 bytes\) but holds",
    ),
    "rotation-not-orthonormal": (
        _rotation_scaled,
        r"'rotation' holds no rotation matrix at frame 0",
    ),
    "time-decreasing": (_time_reversed, r"trajectory\.npz.*'t' decreases at frame 1"),
    "steps-nan-time": (
        _steps_nan_time,
        r"steps\.csv' is unreadable or corrupt \(column 't' is not finite and increasing "
        r"at row 2\)",
    ),
    "summary-steps-not-a-count": (
        _summary_without_steps,
        r"summary\.json' is not a run summary \('steps' is 'many', not a count\)",
    ),
    "summary-empty-object": (
        lambda f: (f / "summary.json").write_text("{}"),
        r"summary\.json' is not a run summary \(no 'steps'\)",
    ),
    "steps-missing": (
        lambda f: (f / "steps.csv").unlink(),
        r"'r' is not a complete results folder: steps\.csv is missing",
    ),
}


@pytest.mark.parametrize("command", ["plot", "render"])
@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_run_folder_is_named_before_drawing(case, command, run_folder, capsys):
    damage, pattern = DAMAGE[case]
    damage(run_folder)
    before = sorted(p.name for p in run_folder.iterdir())
    argv = ["plot", "r"] if command == "plot" else ["render", "r", "--out", "a.gif"]
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    assert sorted(p.name for p in run_folder.iterdir()) == before  # no plots/ drawn
    assert not (run_folder.parent / "a.gif").exists()


def test_fclib_export_names_a_summary_whose_steps_are_not_a_count(run_folder, capsys):
    _summary_without_steps(run_folder)
    outcome = call(["fclib", "export", "r", "--out", "fc"], capsys)
    assert_one_line(outcome, 2, r"'r/summary\.json' is not a run summary \('steps' is 'many'")
    assert not (run_folder.parent / "fc").exists()


# -- damaged comparison tables ---------------------------------------------------------------


@pytest.fixture
def comparison(workdir: Path, capsys) -> Path:
    argv = ["compare", "pendulum", "--solvers", "kkt", "--duration", "0.02", "--out", "c"]
    outcome = call([*argv, "--quiet"], capsys)
    assert outcome.code == 0, outcome.err
    return workdir / "c"


def test_comparison_table_naming_a_missing_run_is_named(comparison, capsys):
    table = pd.read_csv(comparison / "comparison.csv")
    table.loc[0, "folder"] = "runs/no-such-run"
    table.to_csv(comparison / "comparison.csv", index=False)
    outcome = call(["plot", "c"], capsys)
    assert_one_line(
        outcome, 2, r"comparison\.csv' row 1 names the run folder 'runs/no-such-run', which holds"
    )


def test_comparison_table_without_rows_is_named(comparison, capsys):
    header = (comparison / "comparison.csv").read_text().splitlines()[0]
    (comparison / "comparison.csv").write_text(header + "\n")
    outcome = call(["plot", "c"], capsys)
    assert_one_line(outcome, 2, r"comparison\.csv' holds no runs")


# -- model files: the file is named, not only the link ----------------------------------------

URDF = """<robot name="r">
  <link name="base"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="l1"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0 0 0"/></geometry></collision></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/>
    <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>
"""


def test_model_file_error_names_the_file(workdir, capsys):
    (workdir / "robot.urdf").write_text(URDF)
    outcome = call(["run", "robot.urdf", "--steps", "2", "--quiet", "--out", "r"], capsys)
    assert_one_line(outcome, 2, r"model file 'robot\.urdf': .*box half extent")
    _only(workdir, "robot.urdf")


# -- fclib solve: options checked before anything is solved or written ------------------------


@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (["--tol", "-1"], r"--tol must be a positive number, got -1"),
        (["--tol", "nan"], r"--tol must be a positive number, got nan"),
        (["--max-iter", "0"], r"--max-iter must be an integer >= 1, got 0"),
        (["--solvers", "nope"], r"unknown backend 'nope'"),
    ],
)
def test_fclib_solve_options_are_checked(extra, pattern, workdir, capsys):
    pytest.importorskip("h5py")
    outcome = call(["fclib", "export", "box-stack", "--steps", "1", "--out", "f"], capsys)
    assert outcome.code == 0, outcome.err
    files = sorted(str(p.relative_to(workdir)) for p in (workdir / "f").glob("*.hdf5"))
    outcome = call(["fclib", "solve", *files, "--out", "s", *extra], capsys)
    assert_one_line(outcome, 2, pattern)
    _only(workdir, "f")


# -- a user's Python file: its own failures are one line naming the file and line ------------


@pytest.mark.parametrize(
    ("source", "pattern"),
    [
        (
            "x = 1\ny = x / 0\ndef make_scene():\n    pass\n",
            r"Python file 'scene\.py' raised ZeroDivisionError at line 2: division by zero "
            r"while it was imported",
        ),
        (
            "import sys\ndef make_scene():\n    sys.exit(0)\n",
            r"scene\.py:make_scene raised SystemExit at line 3",
        ),
        (
            "def make_scene():\n    return {}['missing']\n",
            r"scene\.py:make_scene raised KeyError at line 2: 'missing'",
        ),
    ],
)
def test_user_python_file_failure_is_one_line(source, pattern, workdir, capsys):
    (workdir / "scene.py").write_text(source)
    outcome = call(["run", "scene.py:make_scene", "--steps", "2", "--quiet", "--out", "r"], capsys)
    assert_one_line(outcome, 2, pattern)
    _only(workdir, "scene.py")


def test_model_file_without_bodies_is_refused(workdir, capsys):
    pytest.importorskip("mujoco")
    # MuJoCo compiles a URDF root too: an empty <robot> in a .xml file has no bodies
    (workdir / "robot.xml").write_text("<robot name='x'/>")
    outcome = call(["run", "robot.xml", "--steps", "2", "--quiet", "--out", "r"], capsys)
    assert_one_line(outcome, 2, r"model file 'robot\.xml' describes no bodies")
    _only(workdir, "robot.xml")


# -- Ctrl-C while the program is still starting ----------------------------------------------


def test_interrupt_during_start_up_is_exit_130_without_traceback(monkeypatch, capsys):
    import builtins

    from contactlab import launch

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "contactlab.cli":  # as if Ctrl-C came while numpy and numba load
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    code = launch.main(["list"])
    err = capsys.readouterr().err
    assert code == 130
    assert err.splitlines() == ["contactlab: interrupted; nothing was written"]


def test_sweep_whose_runs_exceed_the_step_limit_is_refused_before_any_run(workdir, capsys):
    (workdir / "s.toml").write_text(
        '[sweep]\nmodels = ["anitescu-hart"]\nsolvers = ["osqp"]\nduration = 0.05\n'
        'dt = [0.01, 1e-12]\n[[scenarios]]\nname = "ball-drop"\n'
    )
    outcome = call(["sweep", "s.toml", "--quiet", "--out", "sw"], capsys)
    assert_one_line(
        outcome, 2, r"a duration of 0\.05 s at dt = 1e-12 s is 5e\+10 steps, more than the limit"
    )
    _only(workdir, "s.toml")


def test_fclib_export_interrupted_keeps_and_counts_the_finished_files(workdir, monkeypatch, capsys):
    pytest.importorskip("h5py")
    from solvers import fclib

    real_write = fclib.write
    written = []

    def write_then_interrupt(path, *args, **kwargs):
        if len(written) == 2:
            raise KeyboardInterrupt  # Ctrl-C while the third file is due
        real_write(path, *args, **kwargs)
        written.append(path)

    monkeypatch.setattr(fclib, "write", write_then_interrupt)
    outcome = call(["fclib", "export", "box-stack", "--steps", "6", "--out", "f"], capsys)
    assert outcome.code == 130
    assert outcome.error_lines == [
        "contactlab: interrupted; the 2 FCLIB files written before it are kept in 'f'"
    ]
    assert sorted((workdir / "f").iterdir()) == sorted(workdir / p for p in written)
    assert leftovers(workdir) == []


def test_a_full_disk_inside_a_nested_results_folder_names_the_folder_asked_for(tmp_path):
    # compare writes its runs inside its own results folder while that is still a hidden
    # temporary sibling: the error names the user's --out, not the temporary path
    import errno

    from contactlab.errors import ResultsError
    from contactlab.results import atomic_folder

    out = tmp_path / "cmp"
    with pytest.raises(ResultsError) as caught:
        with atomic_folder(out) as tmp:
            with atomic_folder(tmp / "runs" / "a"):
                raise OSError(errno.ENOSPC, "No space left on device")
    message = str(caught.value)
    assert f"could not write '{out / 'runs' / 'a'}'" in message
    assert ".tmp-" not in message and "free some space" in message
    assert list(tmp_path.iterdir()) == []  # nothing half-written is left


def test_ctrl_c_inside_a_compiled_kernel_is_an_interrupt(monkeypatch, capsys):
    # numba hands a KeyboardInterrupt raised inside a kernel back as a SystemError
    # ("returned a result with an exception set") whose context is the interrupt
    import argparse

    import contactlab.cli as cli

    def kernel_interrupted(args):
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise SystemError("returned a result with an exception set")  # noqa: B904

    parser = argparse.ArgumentParser()
    parser.set_defaults(handler=kernel_interrupted)
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    assert cli.main([]) == 130
    assert (
        capsys.readouterr().err.strip() == "contactlab: interrupted; no results folder was written"
    )

    def other_fault(args):
        raise SystemError("not an interrupt")

    parser.set_defaults(handler=other_fault)
    with pytest.raises(SystemError, match="not an interrupt"):
        cli.main([])


def test_ctrl_c_while_an_extension_initialises_is_an_interrupt(monkeypatch, capsys):
    # a KeyboardInterrupt during a C extension's module initialisation (scipy's HiGHS
    # wrapper, first loaded by `import scipy.optimize`) comes back as
    # "ImportError: initialization failed" caused by the interrupt
    import builtins

    from contactlab import launch

    real_import = builtins.__import__

    def interrupted(name, *args, **kwargs):
        if name == "contactlab.cli":
            try:
                raise KeyboardInterrupt
            except KeyboardInterrupt as interrupt:
                raise ImportError("initialization failed") from interrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", interrupted)
    assert launch.main(["list"]) == 130
    assert capsys.readouterr().err.splitlines() == ["contactlab: interrupted; nothing was written"]

    def broken(name, *args, **kwargs):
        if name == "contactlab.cli":
            raise ImportError("a real missing library")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(ImportError, match="a real missing library"):
        launch.main(["list"])


def test_script_skips_the_shutdown_only_after_an_interrupted_extension_import(monkeypatch):
    # a half-initialised extension module can abort the interpreter's shutdown: the
    # script then ends the process directly with 130; any other ending is a SystemExit
    from contactlab import interrupts, launch

    exits = []
    monkeypatch.setattr(launch.os, "_exit", exits.append)
    monkeypatch.setattr(interrupts, "HALF_INITIALISED", False)
    monkeypatch.setattr(launch, "main", lambda: 130)
    with pytest.raises(SystemExit) as ended:
        launch.run()
    assert ended.value.code == 130 and exits == []

    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt as interrupt:
        try:
            raise ImportError("initialization failed") from interrupt
        except ImportError as err:
            assert interrupts.interrupted(err)
    assert interrupts.HALF_INITIALISED
    with pytest.raises(SystemExit):  # reached only because os._exit is replaced here
        launch.run()
    assert exits == [130]
