"""Bad inputs through the Python API, URDF and the solver layer, and faults while writing.

Each case asserts the exception type and that its message is one line naming
the input; the solver cases assert the status a caller sees and the words
that tell the reason; the fault cases assert that nothing half-written is
left and that nothing already finished is lost.
"""

from __future__ import annotations

import errno
import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import solvers
from contactlab.errors import (
    ConfigurationError,
    ContactlabError,
    ModelFileWarning,
    ParameterError,
    ResultsError,
    UnknownNameError,
)
from contactlab.runspec import build_simulator, simulate
from contactlab.scene import Body
from solvers.problems import QP

from .conftest import assert_one_line, call, leftovers


def _one_line(err: BaseException, *words: str) -> None:
    text = str(err)
    assert "\n" not in text.strip(), text
    for word in words:
        assert word in text, (word, text)


API_CASES = [
    (lambda: Body("b", mass="abc", inertia=[1, 1, 1]), ConfigurationError, ["'b'", "'abc'"]),
    (lambda: Body("b", mass=-1.0, inertia=[1, 1, 1]), ConfigurationError, ["'b'", "mass"]),
    (lambda: Body("b", mass=float("nan"), inertia=[1, 1, 1]), ConfigurationError, ["mass"]),
    (lambda: Body("b", mass=True, inertia=[1, 1, 1]), ConfigurationError, ["mass"]),
    (lambda: Body("b", mass=1.0, inertia=[1, 1]), ConfigurationError, ["inertia"]),
    (lambda: Body("b", mass=1.0, inertia=[1, 1, 5]), ConfigurationError, ["triangle"]),
    (lambda: Body("b", mass=1.0, inertia="xyz"), ConfigurationError, ["inertia"]),
    (lambda: simulate("pendulum", [1, 2]), ConfigurationError, ["mapping", "[1, 2]"]),
    (lambda: simulate("pendulum", "length=1"), ConfigurationError, ["mapping"]),
    (lambda: simulate("no-such"), UnknownNameError, ["no-such"]),
    (lambda: simulate("pendulum", {"nope": 1}), ParameterError, ["nope"]),
    (lambda: simulate("pendulum", {"length": "long"}), ParameterError, ["length"]),
    (lambda: simulate("pendulum", model="nope"), UnknownNameError, ["nope"]),
    (lambda: simulate("pendulum", solver="nope"), UnknownNameError, ["nope"]),
    (lambda: simulate("pendulum", formulation="nope"), UnknownNameError, ["nope"]),
    (lambda: simulate("pendulum", dt=0.0), ConfigurationError, ["dt"]),
    (lambda: simulate("pendulum", dt=-1e-3), ConfigurationError, ["dt"]),
    (lambda: simulate("pendulum", dt="0.01"), ConfigurationError, ["dt"]),
    (lambda: simulate("pendulum", steps=0), ConfigurationError, ["steps"]),
    (lambda: simulate("pendulum", steps=2.5), ConfigurationError, ["steps"]),
    (lambda: simulate("pendulum", duration=-1.0), ConfigurationError, ["duration"]),
    (lambda: simulate("pendulum", steps=2, duration=1.0), ConfigurationError, ["steps"]),
    (lambda: simulate("box-pile", {"seed": -1}), ConfigurationError, ["seed", "-1"]),
    (lambda: simulate("box-slide", {"v0": 1e200}), ParameterError, ["box-slide", "v0"]),
    (lambda: build_simulator("pendulum", (("length", 1.0),)), ConfigurationError, ["mapping"]),
]


@pytest.mark.parametrize(("make", "kind", "words"), API_CASES, ids=range(len(API_CASES)))
def test_bad_api_input(make, kind, words):
    with pytest.raises(kind) as err:
        make()
    _one_line(err.value, *words)


def _link(name: str, mass: str = "1.0") -> str:
    return (
        f'<link name="{name}"><inertial><mass value="{mass}"/><inertia ixx="1" iyy="1" izz="1" '
        'ixy="0" ixz="0" iyz="0"/></inertial></link>'
    )


def _joint(name: str, parent: str, child: str, kind: str = "revolute") -> str:
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        '<axis xyz="0 0 1"/></joint>'
    )


def _robot(*parts: str) -> str:
    return '<robot name="r">' + "".join(parts) + "</robot>"


URDF_CASES = {
    "malformed": ('<robot name="r"><link name="a"></robot>', ["not well-formed XML", "line 1"]),
    "not-xml": ("<<<", ["not well-formed XML"]),
    "negative-mass": (_robot(_link("a"), _link("b", "-1"), _joint("j", "a", "b")), ["'b'", "-1"]),
    "nan-mass": (_robot(_link("a"), _link("b", "nan"), _joint("j", "a", "b")), ["'b'", "nan"]),
    "missing-child": (_robot(_link("a"), _joint("j", "a", "zz")), ["'j'", "'zz'", "not a <link>"]),
    "missing-parent": (_robot(_link("a"), _joint("j", "zz", "a")), ["'zz'", "parent"]),
    "cycle": (
        _robot(_link("a"), _link("b"), _joint("j1", "a", "b"), _joint("j2", "b", "a")),
        ["cycle", "a -> b"],
    ),
    "two-parents": (
        _robot(_link("a"), _link("b"), _link("c"))[:-8]
        + _joint("j1", "a", "c")
        + _joint("j2", "b", "c")
        + "</robot>",
        ["'c'", "'j1'", "'j2'"],
    ),
    "two-roots": (_robot(_link("a"), _link("b")), ["one root link", "'a'", "'b'"]),
    "nameless-robot": ("<robot>" + _link("a") + "</robot>", ["<robot>", "name"]),
    "not-a-robot": ('<model name="m"/>', ["<model>", "<robot name=...>"]),
    "no-link": ('<robot name="r"/>', ["no <link>"]),
    "missing-file": ("/no/such/robot.urdf", ["/no/such/robot.urdf"]),
}


@pytest.mark.parametrize("case", sorted(URDF_CASES))
def test_bad_urdf(case, capfd):
    pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy")
    from contactlab.reduced.urdf import load_urdf

    text, words = URDF_CASES[case]
    with pytest.raises(ConfigurationError) as err:
        load_urdf(text)
    _one_line(err.value, *words)
    out, errout = capfd.readouterr()
    assert out == "" and errout == "", (out, errout)  # no stray lines from the parser


def test_massless_moving_link_loads_with_one_warning_line(capfd):
    """Pinocchio loads a link that moves but carries nothing; so does the loader, and one
    warning line names the link and says the mass matrix is singular there."""
    pytest.importorskip("yourdfpy", reason="URDF import needs yourdfpy")
    from contactlab.reduced.urdf import load_urdf

    with pytest.warns(ModelFileWarning) as record:
        scene = load_urdf(_robot(_link("a"), '<link name="b"/>', _joint("j", "a", "b")))
    assert [b.name for b in scene.bodies] == ["a", "b"] and scene.bodies[1].mass == 0.0
    singular = [str(w.message) for w in record if "singular" in str(w.message)]
    assert len(singular) == 1
    _one_line(singular[0], "'b'", "mass matrix")
    out, errout = capfd.readouterr()
    assert out == "" and errout == "", (out, errout)


def _qp(P, q, A, lo, hi) -> QP:
    return QP(
        sp.csc_matrix(P),
        np.asarray(q, float),
        sp.csc_matrix(A),
        np.asarray(lo, float),
        np.asarray(hi, float),
    )


def test_indefinite_P_through_osqp_is_one_status_and_no_output(capfd):
    result = solvers.solve(_qp(np.diag([1.0, -1.0]), [0, 0], np.eye(2), [-1, -1], [1, 1]), "osqp")
    assert result.status == "numerical_error"
    _one_line(
        result,
    )
    assert "not positive semi-definite" in result.message
    out, _ = capfd.readouterr()
    assert out == ""


@pytest.mark.parametrize(
    ("rhs", "kind"), [([1.0, 2.0], "contradictory"), ([1.0, 1.0], "redundant")]
)
def test_kkt_dependent_equalities_name_the_rows_not_P(rhs, kind):
    A = np.array([[1.0, 0.0], [1.0, 0.0]])
    result = solvers.solve(_qp(np.eye(2), [0, 0], A, rhs, rhs), "kkt")
    assert result.status == "numerical_error"
    assert f"1 of them is {kind}" in result.message and "P must" not in result.message


INFEASIBLE = _qp(np.eye(1), [0.0], [[1.0], [1.0]], [1.0, -np.inf], [np.inf, -1.0])
UNBOUNDED = _qp(np.zeros((1, 1)), [-1.0], [[1.0]], [0.0], [np.inf])
# the wrapped solvers that say why they failed (their own status reaches us)
TELLING = ["qpsolvers:clarabel", "qpsolvers:osqp", "qpsolvers:proxqp", "qpsolvers:piqp"]


MODULES = {"clarabel": "clarabel", "osqp": "osqp", "proxqp": "proxsuite", "piqp": "piqp"}


@pytest.mark.parametrize("backend", TELLING)
def test_qpsolvers_infeasible_is_infeasible(backend):
    name = MODULES[backend.split(":")[1]]
    pytest.importorskip(name, reason=f"{backend} needs {name}")
    result = solvers.solve(INFEASIBLE, backend)
    assert result.status == "infeasible", result.message


@pytest.mark.parametrize("backend", ["qpsolvers:clarabel", "qpsolvers:osqp"])
def test_qpsolvers_unbounded_is_unbounded(backend):
    name = MODULES[backend.split(":")[1]]
    pytest.importorskip(name, reason=f"{backend} needs {name}")
    result = solvers.solve(UNBOUNDED, backend)
    assert result.status == "unbounded", result.message


def test_redundant_loop_closure_does_not_advise_a_smaller_dt():
    from dataclasses import replace

    from contactlab.errors import StepFailure
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("redmax-loop").build()
    closing = next(j for j in scene.joints if j.closes_loop)
    scene = scene.with_(joints=(*scene.joints, replace(closing, name="close_again")))
    with pytest.raises(StepFailure) as err:
        Simulator(scene, "reduced", "frictionless", "kkt").run(steps=2)
    _one_line(err.value, "redundant", "remove the duplicate")
    assert "try a smaller --dt" not in str(err.value)


# -- faults while writing -----------------------------------------------------------------


def _enospc(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(
    "where", ["numpy.savez_compressed", "pandas.DataFrame.to_csv", "json.dumps"]
)
def test_full_disk_during_run_writing(where, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "old"
    argv = ["run", "pendulum", "--steps", "3", "--quiet", "--no-plots", "--out", "old"]
    assert call(argv, capsys).code == 0
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    module, _, attr = where.rpartition(".")
    if module == "pandas.DataFrame":
        import pandas as pd

        monkeypatch.setattr(pd.DataFrame, "to_csv", _enospc)
    elif module == "json":
        import contactlab.results as R

        monkeypatch.setattr(R.json, "dumps", _enospc)
    else:
        monkeypatch.setattr(np, attr, _enospc)
    for out, extra in (("new", []), ("old", ["--force"])):
        argv = ["run", "pendulum", "--steps", "3", "--quiet", "--no-plots", "--out", out, *extra]
        assert_one_line(call(argv, capsys), 2, rf"could not write '{out}': No space left")
    assert not (tmp_path / "new").exists()
    # the finished folder it would have replaced is intact
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before
    assert leftovers(tmp_path) == []


def test_full_disk_during_compare_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    # the module (the package exports a function of the same name), imported whatever ran before
    C = importlib.import_module("contactlab.experiments.compare")

    monkeypatch.setattr(C, "comparison_markdown", _enospc)
    argv = ["compare", "pendulum", "--solvers", "kkt", "--models", "frictionless"]
    outcome = call([*argv, "--duration", "0.003", "--quiet", "--out", "c"], capsys)
    assert_one_line(outcome, 2, r"could not write 'c': No space left")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_full_disk_during_render(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["run", "pendulum", "--steps", "3", "--quiet", "--no-plots", "--out", "r"]
    assert call(argv, capsys).code == 0
    import contactlab.experiments.viewer as V

    monkeypatch.setattr(Path, "write_text", _enospc)
    outcome = call(["render", "r", "--out", "v.html"], capsys)
    assert_one_line(outcome, 2, r"could not write 'v.html': No space left")
    assert not (tmp_path / "v.html").exists() and leftovers(tmp_path) == []
    assert V  # the viewer module is what writes the page


def test_unwritable_destination_is_refused_before_any_step(tmp_path, monkeypatch, capsys):
    # root may write anywhere, so the refusal is simulated where the probe creates its folder
    import contactlab.results as R

    def denied(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(R.tempfile, "mkdtemp", denied)
    stepped = []
    from contactlab.simulator import Simulator

    original = Simulator.step
    monkeypatch.setattr(Simulator, "step", lambda *a, **k: stepped.append(1) or original(*a, **k))
    outcome = call(["run", "pendulum", "--steps", "3", "--out", "x/y"], capsys)
    assert_one_line(outcome, 2, r"'x/y' cannot be written: .*Permission denied")
    assert stepped == [] and not (tmp_path / "x").exists()


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_dead_processes_are_cleaned_live_ones_kept(tmp_path, capsys):
    from contactlab.results import _host

    host = _host()
    dead = tmp_path / f".r.tmp-{host}-{_dead_pid()}-0123abcd"
    live = tmp_path / f".r.tmp-{host}-{os.getppid()}-89abcdef"
    other_host = tmp_path / f".r.tmp-elsewhere-{_dead_pid()}-00000000"
    for folder in (dead, live, other_host):
        folder.mkdir()
        (folder / "summary.json").write_text("{}")
    os.chdir(tmp_path)
    try:
        argv = ["run", "pendulum", "--steps", "2", "--quiet", "--no-plots", "--out", "r"]
        assert call(argv, capsys).code == 0
    finally:
        os.chdir("/")
    assert not dead.exists()
    assert live.exists() and other_host.exists()
    assert (tmp_path / "r" / "summary.json").is_file()


def test_a_folder_moved_aside_by_a_dead_writer_is_put_back(tmp_path):
    from contactlab.results import _host, clean_stale_temporaries

    aside = tmp_path / f".r.old-{_host()}-{_dead_pid()}-0123abcd"
    aside.mkdir()
    (aside / "summary.json").write_text('{"finished": true}')
    assert clean_stale_temporaries(tmp_path) == 1
    assert (tmp_path / "r" / "summary.json").read_text() == '{"finished": true}'


def test_errors_are_contactlab_errors():
    # every error above derives from the package's root, so callers can catch one type
    for kind in (ConfigurationError, ParameterError, ResultsError, UnknownNameError):
        assert issubclass(kind, ContactlabError)
