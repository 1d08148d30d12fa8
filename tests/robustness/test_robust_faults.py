"""Faults of issue 29's second pass: interrupts inside backends, sizes, torn small mechanisms.

Each case ends with the exit status it must have, one stderr line naming the
input and the limit (or the interrupt and what was kept), and nothing
half-written in the working folder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab.results import load_run

from .conftest import assert_one_line, call, leftovers


def _empty(root: Path, *extra: str) -> None:
    assert sorted(p.name for p in root.iterdir()) == sorted(extra)
    assert leftovers(root) == []


# -- Ctrl-C inside a backend ---------------------------------------------------------

#: a QP OSQP cannot finish (tolerance 1e-15, no iteration cap): it runs until interrupted
OSQP_FOREVER = textwrap.dedent(
    """
    import numpy as np, scipy.sparse as sp
    from solvers.dispatch import solve
    from solvers.problems import QP
    n = 2000
    A = sp.random(n, n, density=0.002, random_state=1, format="csc")
    P = (A @ A.T + 1e-6 * sp.eye(n)).tocsc()
    q = np.random.default_rng(0).standard_normal(n)
    qp = QP(P, q, sp.eye(n, format="csc"), -np.ones(n), np.ones(n))
    solve(qp, "osqp", tol=1e-3)  # loads osqp
    print("ready", flush=True)
    result = solve(qp, "osqp", tol=1e-15, max_iter=10**9)
    print("returned", result.status, result.message, flush=True)
    """
)


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="needs process groups")
def test_ctrl_c_inside_osqp_is_an_interrupt_not_a_solver_status(tmp_path):
    pytest.importorskip("osqp")
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen(
        [sys.executable, "-c", OSQP_FOREVER],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    # OSQP's own SIGINT handler is in place for the whole solve; wait until it runs
    import time

    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    # OSQP returned "interrupted"; the layer turned it into the KeyboardInterrupt it is
    assert "returned" not in out, out
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt", err
    assert proc.returncode in (-signal.SIGINT, 130)


def _interrupting_osqp(monkeypatch: pytest.MonkeyPatch, after: int = 0) -> list[int]:
    """OSQP's backend answering as OSQP does when Ctrl-C reaches it, after ``after`` solves."""
    from solvers.backends.osqp_ import OSQPBackend
    from solvers.result import RawSolution

    calls = [0]
    real = OSQPBackend.solve_qp

    def solve_qp(self, qp, opts):
        calls[0] += 1
        if calls[0] > after:
            return RawSolution(
                np.full(qp.n, np.nan), np.full(qp.m, np.nan), "numerical_error", "osqp: interrupted"
            )
        return real(self, qp, opts)

    monkeypatch.setattr(OSQPBackend, "solve_qp", solve_qp)
    return calls


def test_run_interrupted_inside_osqp_exits_130_and_writes_nothing(workdir, monkeypatch, capsys):
    pytest.importorskip("osqp")
    _interrupting_osqp(monkeypatch, after=3)
    argv = [
        "run",
        "box-stack",
        "--solver",
        "osqp",
        "--model",
        "anitescu-hart",
        "--steps",
        "20",
        "--no-plots",
        "--out",
        "r",
    ]
    outcome = call([*argv, "--quiet"], capsys)
    assert_one_line(outcome, 130, r"^contactlab: interrupted; no results folder was written$")
    assert "smaller --dt" not in outcome.err and "numerical_error" not in outcome.err
    _empty(workdir)


def test_compare_interrupted_inside_osqp_keeps_the_finished_runs(workdir, monkeypatch, capsys):
    pytest.importorskip("osqp")
    import importlib

    C = importlib.import_module("contactlab.experiments.compare")

    real = C.execute
    done: list[str] = []

    def execute(spec, folder, **kw):
        if spec.model == "anitescu-hart":
            _interrupting_osqp(monkeypatch)  # Ctrl-C reaches OSQP in the second run
        result = real(spec, folder, **kw)
        done.append(spec.model)
        return result

    monkeypatch.setattr(C, "execute", execute)
    argv = ["compare", "box-stack", "--solvers", "osqp", "--models", "frictionless,anitescu-hart"]
    argv += ["--formulations", "maximal", "--duration", "0.1", "--quiet", "--out", "c"]
    outcome = call(argv, capsys)
    line = assert_one_line(outcome, 130, r"^contactlab: interrupted; 1 of 2 runs are finished")
    assert "'c'" in line and "--force" in line
    assert done == ["frictionless"]  # the interrupted run never finished, nothing blamed osqp
    table = pd.read_csv(workdir / "c" / "comparison.csv")
    assert list(table["model"]) == ["frictionless"]
    assert sorted(p.name for p in (workdir / "c" / "runs").iterdir()) == [
        "maximal-frictionless-osqp"
    ]
    data = load_run(workdir / "c" / "runs" / "maximal-frictionless-osqp")
    assert len(data.steps) == 20
    assert leftovers(workdir) == []


def test_compare_interrupted_in_its_first_run_writes_nothing(workdir, monkeypatch, capsys):
    pytest.importorskip("osqp")
    _interrupting_osqp(monkeypatch)
    argv = ["compare", "box-stack", "--solvers", "osqp", "--models", "anitescu-hart"]
    argv += ["--formulations", "maximal", "--duration", "0.02", "--quiet", "--out", "c"]
    outcome = call(argv, capsys)
    assert_one_line(outcome, 130, r"^contactlab: interrupted; no results folder was written$")
    _empty(workdir)


# -- sizes checked before anything is allocated ---------------------------------------

SIZE_CASES = [
    (["run", "pendulum", "--dt", "1e-12"], r"5e\+12 steps, more than the limit of 10,000,000"),
    (["run", "pendulum", "--steps", "1000000000"], r"more than the limit of 10,000,000 steps"),
    (["run", "pendulum", "--duration", "1e300"], r"1e\+303 steps, more than the limit"),
    (["run", "chain", "--set", "n_links=1000000"], r"'n_links' = 1000000 .* limit of 10,000"),
    (["run", "box-pile", "--set", "n=20000"], r"'n' = 20000 is more than the limit of 10,000"),
    (["run", "pendulum", "--set", "mass=1e308"], r"'pendulum' cannot be built with mass="),
    (["run", "ball-drop", "--set", "height=1e300"], r"too large to bound: its length scale"),
    (["compare", "pendulum", "--solvers", "kkt", "--dt", "1e-12"], r"limit of 10,000,000"),
]


@pytest.mark.parametrize(("argv", "pattern"), SIZE_CASES, ids=lambda v: " ".join(v)[:50])
def test_sizes_are_refused_before_allocation(argv, pattern, workdir, capsys):
    import tracemalloc

    tracemalloc.start()
    try:
        outcome = call([*argv, "--quiet", "--out", "r"], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_one_line(outcome, 2, pattern)
    assert "Warning" not in outcome.err
    assert peak < 200e6  # nothing of the refused size was allocated
    _empty(workdir)


def test_memory_limit_names_the_need_and_what_is_available(workdir, monkeypatch, capsys):
    from contactlab import trajectory

    monkeypatch.setattr(trajectory, "available_memory", lambda: 2**30)  # 1 GiB free
    # 4e6 frames of one body and their metrics: 4e6 * (185 + 320) B = 1.9 GiB > 0.5 GiB
    outcome = call(["run", "pendulum", "--steps", "4000000", "--out", "r"], capsys)
    assert_one_line(outcome, 2, r"4,000,000 steps of 1 bodies need 1.\d+ GiB .* of the 1 GiB")
    _empty(workdir)


def test_unguarded_overflowing_scene_is_not_refused_by_the_guard(workdir, capsys):
    argv = ["run", "ball-drop", "--set", "height=1e300", "--steps", "3", "--quiet"]
    outcome = call([*argv, "--no-plots", "--no-divergence-guard", "--out", "r"], capsys)
    # no guard to switch off silently: the user asked for none, the run goes as far as it can
    assert "too large to bound" not in outcome.err
    assert outcome.code in (0, 2)


# -- the divergence guard at the scale of the mechanism -------------------------------

SMALL_BLOW_UPS = [
    (["spring-chain", "--dt", "100"], r"separation of joint 'joint\d' \[m\] = 0.1\d+ exceeds"),
    (["jf-crank", "--dt", "0.5"], r"separation of joint 'loop_joint' \[m\] = 0.\d+ exceeds"),
]


@pytest.mark.parametrize(("argv", "pattern"), SMALL_BLOW_UPS, ids=lambda v: v[0])
def test_torn_10_cm_mechanisms_stop(argv, pattern, workdir, capsys):
    outcome = call(["run", *argv, "--quiet", "--no-plots", "--out", "r"], capsys)
    line = assert_one_line(outcome, 2, rf"step \d+ \(t = .* s\) diverged: {pattern}")
    assert "--dt" in line and "RuntimeWarning" not in outcome.err
    _empty(workdir)


# -- fclib: the destination first, files written whole, sizes refused before reading ------


def _fclib_matrix_file(path: Path, m: int, x_entries: int) -> Path:
    """A local FCLIB file whose W claims ``m`` rows and whose ``x`` holds ``x_entries``."""
    import h5py

    with h5py.File(path, "w") as f:
        g = f.create_group("fclib_local")
        W = g.create_group("W")
        W["m"], W["n"], W["nz"] = np.array([m]), np.array([m]), np.array([-2])
        W["p"] = np.zeros(4, dtype=np.int32)
        W["i"] = np.zeros(0, dtype=np.int32)
        # chunked and compressed: claiming 1e12 entries costs the file a few bytes
        W.create_dataset(
            "x", shape=(x_entries,), dtype="f8", chunks=(min(1000, x_entries),), compression="gzip"
        )
        v = g.create_group("vectors")
        v["q"], v["mu"] = np.zeros(3), np.zeros(1)
    return path


@pytest.mark.parametrize(
    ("m", "entries", "pattern"),
    [
        (10**12, 1, r"claims a 1000000000000 x 1000000000000 matrix, beyond the limit"),
        (3, 10**12, r"/x: claims 1e\+12 entries, more than the limit of 100,000,000"),
    ],
)
def test_fclib_file_claiming_huge_sizes_is_refused_before_reading(
    m, entries, pattern, workdir, capsys
):
    pytest.importorskip("h5py")
    import tracemalloc

    _fclib_matrix_file(workdir / "huge.hdf5", m, entries)
    tracemalloc.start()
    try:
        outcome = call(["fclib", "solve", "huge.hdf5", "--out", "s"], capsys)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert_one_line(outcome, 2, rf"huge\.hdf5: /fclib_local/W.*{pattern}")
    assert peak < 100e6
    _empty(workdir, "huge.hdf5")


@pytest.fixture
def fclib_files(workdir: Path, capsys) -> list[Path]:
    pytest.importorskip("h5py")
    outcome = call(["fclib", "export", "box-stack", "--steps", "2", "--out", "f"], capsys)
    assert outcome.code == 0, outcome.err
    return sorted((workdir / "f").iterdir())


FCLIB_OUT_CASES = [
    (["fclib", "export", "box-stack", "--steps", "2", "--out", "afile/x"], r"'afile' is a file"),
    (["fclib", "export", "box-stack", "--steps", "2", "--out", "/proc/no/x"], r"cannot be written"),
    (["fclib", "solve", "f/box-stack-step00000.hdf5", "--out", "afile/x"], r"'afile' is a file"),
    (["fclib", "solve", "f/box-stack-step00000.hdf5", "--out", "afile"], r"'afile' is a file"),
]


@pytest.mark.parametrize(("argv", "pattern"), FCLIB_OUT_CASES, ids=lambda v: " ".join(v)[:60])
def test_fclib_checks_its_destination_before_any_work(
    argv, pattern, fclib_files, workdir, monkeypatch, capsys
):
    from contactlab import simulator
    from solvers import dispatch

    (workdir / "afile").write_text("a file\n")
    # neither a step nor a solve happens before the refusal
    monkeypatch.setattr(simulator.Simulator, "step", lambda *a, **k: pytest.fail("stepped"))
    monkeypatch.setattr(dispatch, "_call", lambda *a, **k: pytest.fail("solved"))
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    _empty(workdir, "afile", "f")
    assert sorted((workdir / "f").iterdir()) == fclib_files


def test_fclib_export_of_a_corrupt_run_folder_is_one_line(workdir, capsys):
    run = workdir / "r"
    run.mkdir()
    (run / "summary.json").write_text("{not json")
    outcome = call(["fclib", "export", "r", "--out", "f"], capsys)
    assert_one_line(outcome, 2, r"'r/summary\.json' is unreadable or corrupt")
    (run / "summary.json").write_text('{"model": "box-friction"}')
    outcome = call(["fclib", "export", "r", "--out", "f"], capsys)
    assert_one_line(outcome, 2, r"'r/summary\.json' is not a run summary \(no 'scenario'\)")
    _empty(workdir, "r")


def test_fclib_export_on_a_full_disk_leaves_no_half_written_file(workdir, monkeypatch, capsys):
    pytest.importorskip("h5py")
    import errno

    from solvers import fclib

    real = fclib._write_file
    written = []

    def full_disk(h5py, path, *args):
        if written:  # the second file: half of it reaches the disk, then the disk is full
            path.write_bytes(b"\x89HDF\r\n\x1a\n half")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(h5py, path, *args)
        written.append(path)

    monkeypatch.setattr(fclib, "_write_file", full_disk)
    outcome = call(["fclib", "export", "box-stack", "--steps", "3", "--out", "f"], capsys)
    line = assert_one_line(outcome, 2, r"box-stack-step00001\.hdf5: could not be written")
    assert "No space left on device" in line and "nothing was written there" in line
    # the file finished before the failure is whole; nothing of the failed one is left
    assert sorted(p.name for p in (workdir / "f").iterdir()) == ["box-stack-step00000.hdf5"]
    assert fclib.read(workdir / "f" / "box-stack-step00000.hdf5").problem.nc > 0
    assert leftovers(workdir) == []


def test_fclib_solve_writes_its_table_whole(fclib_files, workdir, monkeypatch, capsys):
    from contactlab.experiments import plots

    (workdir / "s").mkdir()
    (workdir / "s" / "runs.csv").write_text("an earlier table\n")

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(plots, "plot_profile", broken)
    argv = ["fclib", "solve", *[str(p.relative_to(workdir)) for p in fclib_files]]
    outcome = call([*argv, "--solvers", "pgs", "--out", "s"], capsys)
    assert_one_line(outcome, 2, r"No space left on device")
    # the earlier table is untouched and no new file or temporary is left
    assert (workdir / "s" / "runs.csv").read_text() == "an earlier table\n"
    assert sorted(p.name for p in (workdir / "s").iterdir()) == ["runs.csv"]
    assert leftovers(workdir) == []


# -- options: one line naming the option and its range, before any work ---------------------


SWEEP = """[sweep]
duration = 0.01
formulations = ["maximal"]
models = ["frictionless"]
solvers = ["kkt"]

[[scenarios]]
name = "pendulum"
"""

LONG = "x" * 300

OPTION_CASES = [
    (["render", "r", "--out", "a.gif", "--size", "100000"], r"--size must be .* 16 to 4096 px"),
    (["render", "r", "--out", "a.gif", "--size", "0"], r"--size must be .* 16 to 4096 px, got 0"),
    (["render", "r", "--out", "a.gif", "--azimuth", "nan"], r"--azimuth must be a finite angle"),
    (["render", "r", "--out", "a.gif", "--elevation", "inf"], r"--elevation must be a finite"),
    (["render", "r", "--out", "a.gif", "--max-frames", "0"], r"--max-frames must be from 1"),
    (["render", "r", "--out", "a.gif", "--fps", "nan"], r"--fps must be a positive number"),
    (["render", "r", "--out", f"{LONG}.gif"], r"name 'x{20}\.\.\.' is 304 bytes, longer than"),
    (["sweep", "s.toml", "--workers", "-1"], r"--workers must be a positive number .* got -1"),
    (["sweep", "s.toml", "--workers", "0"], r"--workers must be a positive number .* got 0"),
    (["sweep", "s.toml", "--scheduler", "tcp://127.0.0.1:1"], r"no Dask scheduler answers at"),
    (["sweep", "s.toml", "--scheduler", "nonsense::"], r"'nonsense::' is not an address"),
    (["sweep", "s.toml", "--out", LONG], r"--out name 'x{20}\.\.\.' is 300 bytes, longer than"),
    (["run", "pendulum", "--steps", "2", "--out", LONG], r"--out name .* 300 bytes, longer than"),
    (["compare", "pendulum", "--solvers", "kkt", "--out", LONG], r"300 bytes, longer than"),
]


@pytest.mark.parametrize(("argv", "pattern"), OPTION_CASES, ids=lambda v: " ".join(v)[:50])
def test_bad_options_are_one_line(argv, pattern, run_folder, workdir, capsys):
    (workdir / "s.toml").write_text(SWEEP)
    outcome = call([*argv, "--quiet"] if argv[0] == "sweep" else argv, capsys)
    assert_one_line(outcome, 2, pattern)
    _empty(workdir, "r", "s.toml")


def test_a_scheduler_that_is_not_dask_is_refused(workdir, capsys):
    import socket
    import threading

    # a service that accepts the connection and answers garbage
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]

    def answer() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + b"\xff" * 64)

    threading.Thread(target=answer, daemon=True).start()
    (workdir / "s.toml").write_text(SWEEP)
    try:
        argv = ["sweep", "s.toml", "--quiet", "--scheduler", f"tcp://127.0.0.1:{port}"]
        outcome = call(argv, capsys)
    finally:
        server.close()
    assert_one_line(outcome, 2, rf"no Dask scheduler answers at .*:{port}' \(")
    _empty(workdir, "s.toml")


# -- optimize: sizes, and a constraint that cannot be met is never "optimal" ------------------

OPTIMIZE = ["optimize", "pendulum", "--start", "0", "--no-animation", "--out", "o"]


@pytest.mark.parametrize(
    ("extra", "pattern"),
    [
        (
            ["--end", "170deg", "--upper", "90deg"],
            r"the end position of coordinate 0 \(2.96706, 170 deg\) is above --upper "
            r"\(1.5708, 90 deg\): no trajectory meets both",
        ),
        (
            ["--end", "10deg", "--lower=-5deg", "--via", "0.5:-10deg"],
            r"via-point at 0.5 s position of coordinate 0 .* is below --lower",
        ),
        (["--end", "10deg", "--knots", "100000"], r"--knots 100000 .* 99,999 unknowns, more than"),
    ],
)
def test_optimize_refuses_what_it_cannot_meet(extra, pattern, workdir, capsys):
    outcome = call([*OPTIMIZE, *extra], capsys)
    assert_one_line(outcome, 2, pattern)
    _empty(workdir)


def test_optimize_measures_its_constraints_on_the_returned_knots():
    from contactlab.optimize import spacetime as S
    from contactlab.reduced.model import Model
    from contactlab.scenario import get_scenario

    model = Model.from_scene(get_scenario("pendulum").build())
    upper = np.deg2rad(60.0)
    problem = S.SpacetimeProblem(model, 1.0, 10, [0.0], [np.deg2rad(50.0)], upper=[upper])
    result = S.optimize(problem, method="L-BFGS-B")
    # met: every knot within the limit, the end where asked, and then it may be optimal
    assert S.limit_violation(problem, result.q) <= S.CONSTRAINT_TOL
    assert result.boundary_error <= S.CONSTRAINT_TOL and result.status == "optimal"
    # a knot 0.1 rad beyond the limit is measured as such
    knots = result.q.copy()
    knots[4, 0] = upper + 0.1
    assert S.limit_violation(problem, knots) == pytest.approx(0.1)


# -- corrupt or partial results: one line naming the file, never a silent plot ---------------


def _rewrite_trajectory(folder: Path, change) -> None:
    with np.load(folder / "trajectory.npz") as data:
        arrays = {k: data[k] for k in data.files}
    change(arrays)
    np.savez(folder / "trajectory.npz", **arrays)


def _nan_position(arrays) -> None:
    arrays["position"] = arrays["position"].copy()
    arrays["position"][2, 0, 2] = np.nan


PARTIAL = {
    "no-position": (lambda a: a.pop("position"), r"trajectory\.npz.*no array 'position'"),
    "short-rotation": (
        lambda a: a.update(rotation=a["rotation"][:-1]),
        r"trajectory\.npz.*'rotation' has shape \(3, 1, 3, 3\), expected \(4, 1, 3, 3\)",
    ),
    "flat-position": (
        lambda a: a.update(position=a["position"].reshape(-1)),
        r"trajectory\.npz.*'position' has shape \(12,\)",
    ),
    "nan-position": (_nan_position, r"'position' holds non-finite numbers from frame 2"),
}


@pytest.mark.parametrize("command", ["plot", "render"])
@pytest.mark.parametrize("case", sorted(PARTIAL))
def test_a_damaged_trajectory_is_named(case, command, run_folder, workdir, capsys):
    change, pattern = PARTIAL[case]
    _rewrite_trajectory(run_folder, change)
    argv = ["plot", "r"] if command == "plot" else ["render", "r", "--out", "a.gif"]
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, pattern)
    assert not (workdir / "a.gif").exists() and leftovers(workdir) == []


@pytest.mark.parametrize("command", ["plot", "render"])
def test_a_truncated_steps_table_is_named(command, run_folder, workdir, capsys):
    lines = (run_folder / "steps.csv").read_text().splitlines(keepends=True)
    (run_folder / "steps.csv").write_text("".join(lines[:-1]))  # the last step lost
    argv = ["plot", "r"] if command == "plot" else ["render", "r", "--out", "a.gif"]
    outcome = call(argv, capsys)
    assert_one_line(outcome, 2, r"steps\.csv' .*it has 2 rows, the summary records 3 steps")
    assert not (workdir / "a.gif").exists()


@pytest.fixture
def comparison(workdir: Path, capsys) -> Path:
    argv = ["compare", "pendulum", "--solvers", "kkt", "--models", "frictionless"]
    outcome = call([*argv, "--formulations", "maximal", "--quiet", "--out", "c"], capsys)
    assert outcome.code == 0, outcome.err
    return workdir / "c"


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        (b"\x00\xff\xfe garbage \x00\n\x01,\x02\n", r"comparison\.csv' is unreadable or corrupt"),
        (b"a,b\n1,2\n", r"comparison\.csv' is not a results table: it has no column"),
        (b"", r"comparison\.csv' is unreadable or corrupt"),
    ],
)
def test_a_garbage_comparison_table_is_named(content, pattern, comparison, capsys):
    from contactlab.errors import ResultsError
    from contactlab.experiments.loading import load_results

    (comparison / "comparison.csv").write_bytes(content)
    outcome = call(["plot", "c"], capsys)
    assert_one_line(outcome, 2, pattern)
    with pytest.raises(ResultsError, match=pattern):
        load_results(comparison)


# -- loaders linear in the model's size (counted operations, not wall time) ------------------


class _CountingName(str):
    """A link name that counts how often a dict or set looks it up (each lookup hashes it)."""

    lookups = [0]

    def __hash__(self) -> int:
        _CountingName.lookups[0] += 1
        return str.__hash__(self)


def _chain_robot(n: int):
    from types import SimpleNamespace

    names = [_CountingName(f"l{i}") for i in range(n)]
    links = [SimpleNamespace(name=name) for name in names]
    joints = [
        SimpleNamespace(name=f"j{i}", parent=names[i - 1], child=names[i]) for i in range(1, n)
    ]
    return SimpleNamespace(links=links, joints=joints)


def test_urdf_tree_check_is_linear_in_the_links():
    from contactlab.reduced.urdf import _check_tree

    counts = []
    for n in (200, 400, 800):
        robot = _chain_robot(n)
        _CountingName.lookups[0] = 0
        _check_tree(robot, "chain.urdf")
        counts.append(_CountingName.lookups[0])
    # a walk to the root from every link made it quadratic in lookups (cubic in time)
    assert counts[1] / counts[0] == pytest.approx(2.0, rel=0.05)
    assert counts[2] / counts[1] == pytest.approx(2.0, rel=0.05)


def test_urdf_cycle_is_one_line_naming_it(workdir):
    from contactlab.errors import ConfigurationError
    from contactlab.reduced.urdf import load_urdf

    inertia = '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'
    link = '<link name="{}"><inertial><mass value="1"/>' + inertia + "</inertial></link>"
    joint = (
        '<joint name="{}" type="revolute"><parent link="{}"/><child link="{}"/>'
        '<axis xyz="0 1 0"/></joint>'
    )
    text = (
        '<robot name="loop">'
        + link.format("base")
        + "".join(link.format(n) for n in "abc")
        + joint.format("j0", "base", "a")
        + joint.format("j1", "b", "c")
        + joint.format("j2", "c", "b")
        + "</robot>"
    )
    with pytest.raises(
        ConfigurationError, match=r"the joints form a cycle \((b -> c -> b|c -> b -> c)\)"
    ):
        load_urdf(text)


def test_body_lookup_scans_the_bodies_once():
    from contactlab.scenario import get_scenario

    scene = get_scenario("chain").build(n_links=50)

    class Counting(tuple):
        scans = 0

        def __iter__(self):
            Counting.scans += 1
            return super().__iter__()

    object.__setattr__(scene, "bodies", Counting(scene.bodies))
    scene.__dict__.pop("_body_indices", None)
    names = [b.name for b in tuple.__iter__(scene.bodies)]
    assert [scene.body_index(name) for name in names] == list(range(50))
    assert Counting.scans == 1  # one table, then a lookup per name (was a scan per name)
