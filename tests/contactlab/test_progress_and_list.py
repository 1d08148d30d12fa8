"""Logs carry no progress spam, and `contactlab list` prints whole descriptions."""

from __future__ import annotations

import io

import pytest

from contactlab import cli, progress, registry
from contactlab.docstrings import parameter_docs, summary
from contactlab.runspec import build_simulator


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_in_a_log_is_whole_lines_and_a_final_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    log = io.StringIO()
    bar = progress.progress_bar(500, desc="run", unit="step", file=log)
    for _ in range(500):
        bar.update(1)
    bar.close()
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    # one line at the first update, then none within LOG_INTERVAL_S, and the final summary
    assert len(lines) == 2
    assert lines[-1].startswith("run: 500/500 steps") and lines[-1].endswith("(done)")


def test_progress_on_a_terminal_redraws_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    tty = _Terminal()
    with progress.progress_bar(50, desc="run", unit="step", file=tty) as bar:
        for _ in range(50):
            bar.update(1)
    assert "\r" in tty.getvalue()


def test_quiet_shows_nothing() -> None:
    log = io.StringIO()
    with progress.progress_bar(10, file=log, disable=True) as bar:
        bar.update(10)
    assert log.getvalue() == ""


def test_a_run_whose_stderr_is_not_a_terminal_writes_no_carriage_returns(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    run = build_simulator("pendulum").run(steps=300, progress=True)
    err = capfd.readouterr().err
    assert "\r" not in err
    assert err.splitlines()[-1].startswith(f"{run.n_steps}/{run.n_steps} steps")


def test_parameter_descriptions_are_read_whole() -> None:
    doc = """Summary on
    two lines.

    alpha : first line
        continued (with a parenthesis
        closed here).
    beta, gamma : shared.
    delta : one line.

    Prose afterwards: not an entry of alpha.
    """
    import inspect

    doc = inspect.cleandoc(doc)
    assert summary(doc) == "Summary on two lines."
    docs = parameter_docs(doc)
    assert docs["alpha"] == "first line continued (with a parenthesis closed here)."
    assert docs["beta"] == docs["gamma"] == "shared."
    assert docs["delta"] == "one line."


def test_list_prints_whole_descriptions_joint_kinds_and_formulation_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    # a two-line parameter description, whole
    assert (
        "direction_deg = 0.0 (float)  horizontal direction of the push from +x [deg] (oblique "
        "pushes: away from the pyramid axes)." in out
    )
    cat = registry.catalog()
    for row in cat["scenarios"]:
        for p in row["parameters"]:
            assert p["doc"].count("(") == p["doc"].count(")"), (row["name"], p)
            assert p["doc"].count("``") % 2 == 0, (row["name"], p)
    # every joint kind is described
    assert cat["joints"] and all(row["description"] for row in cat["joints"])
    assert "revolute               Rotation about one axis" in out
    # each formulation lists its options with their defaults: compliance, the integrators
    options = {row["name"]: {o["name"]: o for o in row["options"]} for row in cat["formulations"]}
    maximal = options["maximal"]
    assert (
        maximal["compliance"]["default"] == 0.0
        and "soft constraints" in (maximal["compliance"]["doc"])
    )
    for integrator in ("symplectic-euler", "implicit-euler", "trapezoidal", "bridson-marino"):
        assert integrator in maximal["integrator"]["doc"]
    assert "integrator = 'linearly-implicit'" in out and "compliance = 0.0" in out
    # the hyper-reduced formulation passes its options on to the reduced one: both listed
    assert {"basis", "implicit", "stabilization"} <= set(options["hyper-reduced"])
