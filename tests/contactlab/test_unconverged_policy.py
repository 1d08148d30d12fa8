"""One policy for a step that misses its solver tolerance, whatever the backend.

Facts, per backend family (LCP: ``pgs``, ``lemke``; QP: ``osqp``; frictional
contact: ``nsgs``, ``apgd``, ``admm``, ``ipm``):

* a step stopped short of its tolerance keeps its best iterate, finite, with
  an unconverged status (``max_iterations``; ``stalled`` when the solver
  stops before its cap) and its residual; the run goes on to its last step
  and ends ``inaccurate``;
* the run summary (``summary.json``) counts those steps, by status, with the
  largest residual among them;
* with ``strict`` the first such step stops the run with one error naming
  the step, the status and the residual.

Each unconverged step is made so by construction, not by rounding: a stack of
three cubes resting on the ground has twelve contacts from the first step,
coupled through the cubes' masses, and the solver is given a one-iteration
cap (one sweep, one pivot, one ADMM or interior-point iteration).  A single
Gauss--Seidel sweep from zero cannot solve coupled rows (each later row's
update changes the ``w`` of the rows before it), one Lemke pivot makes at
most one contact active where the stack needs all its bottom contacts, and
one interior-point or ADMM iteration from the cold start is not a solution.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from contactlab import cli
from contactlab.errors import StepFailure
from contactlab.metrics import UNCONVERGED_STATUSES
from contactlab.results import summarize
from contactlab.runspec import simulate

STEPS = 4

#: (model, solver, family): one combination per backend, all capped at one iteration
CAPPED = [
    ("box-friction", "pgs", "LCP"),
    ("stewart-trinkle", "lemke", "LCP"),
    ("anitescu-hart", "osqp", "QP"),
    ("coulomb", "nsgs", "frictional contact"),
    ("coulomb", "apgd", "frictional contact"),
    ("coulomb", "admm", "frictional contact"),
    ("anitescu-hart", "ipm", "frictional contact"),
]


@pytest.fixture
def no_ipm_polish(monkeypatch):
    """ipm's Gauss--Seidel polish (200 sweeps after the interior point) is switched off, so
    that its one-iteration cap is the whole solve."""
    from solvers.backends.friction import IPMBackend

    monkeypatch.setattr(IPMBackend, "polish_sweeps", 0)


def _capped(model: str, solver: str, **kw):
    return simulate(
        "box-stack",
        formulation="maximal",
        model=model,
        solver=solver,
        steps=STEPS,
        model_options={"max_iter": 1},
        **kw,
    )


@pytest.mark.parametrize(("model", "solver", "family"), CAPPED)
def test_capped_steps_keep_their_iterate_and_the_run_goes_on(model, solver, family, no_ipm_polish):
    run = _capped(model, solver)
    assert run.n_steps == STEPS and run.status == "inaccurate", (family, run.message)
    statuses = run.steps["status"].astype(str)
    assert (statuses == "max_iterations").all(), (family, list(statuses))
    # the best iterate is kept: finite states and residuals, all above zero
    assert np.isfinite(run.trajectory["position"]).all()
    residual = run.steps["solver_residual"].to_numpy(float)
    assert np.isfinite(residual).all() and (residual > 0).all()
    summary = summarize(run)
    assert summary["unconverged"] == {
        "steps": STEPS,
        "by_status": {"max_iterations": STEPS},
        "first_step": 0,
        "max_residual": pytest.approx(float(residual.max())),
    }
    assert summary["aggregates"]["unconverged_steps"] == STEPS
    assert summary["aggregates"]["success_rate"] == 0.0
    json.dumps(summary, allow_nan=False)  # what write_run stores


@pytest.mark.parametrize(("model", "solver", "family"), CAPPED)
def test_strict_stops_at_the_first_unconverged_step(model, solver, family, no_ipm_polish):
    with pytest.raises(StepFailure) as caught:
        _capped(model, solver, strict=True)
    message = str(caught.value)
    assert "step 0 " in message and "'max_iterations'" in message, (family, message)
    assert "residual" in message and "--strict" in message
    assert caught.value.run.n_steps == 0 and caught.value.run.status == "failed"


def test_a_stalled_ipm_solve_keeps_its_iterate_and_the_run_goes_on(monkeypatch, no_ipm_polish):
    """An interior point that stops before its cap (a stall on the cone boundary, here
    made by stopping every solve after one iteration and reporting that reason) was a
    ``numerical_error`` that ended the run; it is now ``stalled``, counted, and the run
    goes on (``strict`` stops it)."""
    import solvers.backends.fc_ipm as fc_ipm

    real = fc_ipm.ipm_ccp

    def stalls(form, q, tol, max_iter, *args, **kw):
        r, it, res, _ = real(form, q, tol, 1, *args, **kw)
        return r, it, res, "stalled on the cone boundary" if res > tol else "converged"

    monkeypatch.setattr(fc_ipm, "ipm_ccp", stalls)
    run = simulate(
        "box-stack", formulation="maximal", model="anitescu-hart", solver="ipm", steps=STEPS
    )
    statuses = run.steps["status"].astype(str)
    assert run.n_steps == STEPS and run.status == "inaccurate"
    assert (statuses == "stalled").all(), list(statuses)
    assert run.unconverged()["by_status"] == {"stalled": STEPS}
    assert "stalled" in run.message
    with pytest.raises(StepFailure, match=r"step 0 .*'stalled'"):
        simulate(
            "box-stack",
            formulation="maximal",
            model="anitescu-hart",
            solver="ipm",
            steps=STEPS,
            strict=True,
        )


def test_unconverged_statuses_are_the_usable_ones_short_of_optimal():
    assert UNCONVERGED_STATUSES == {
        "optimal_inaccurate",
        "max_iterations",
        "stalled",
        "time_limit",
    }


def _code(capsys, argv):
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_run_exit_code_and_printed_count(tmp_path, capsys):
    argv = ["run", "box-stack", "--solver", "pgs", "--steps", str(STEPS), "--no-plots"]
    argv += ["--model-option", "max_iter=1", "--out"]
    code, out, _ = _code(capsys, [*argv, str(tmp_path / "a")])
    assert code == cli.EXIT_UNCONVERGED == 3
    assert f"{STEPS} of {STEPS} steps unconverged ({STEPS} max_iterations" in out
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert summary["unconverged"]["steps"] == STEPS and summary["strict"] is False
    code, _, err = _code(capsys, [*argv, str(tmp_path / "b"), "--strict"])
    assert code == 2 and "step 0 " in err and "'max_iterations'" in err
    assert not (tmp_path / "b").exists()
    code, _, _ = _code(capsys, ["run", "box-stack", "--steps", "2", "--no-plots", "--quiet",
                                "--out", str(tmp_path / "c")])  # fmt: skip
    assert code == 0


def test_compare_and_sweep_count_unconverged_runs(tmp_path, capsys, monkeypatch):
    import pandas as pd

    monkeypatch.chdir(tmp_path)
    argv = ["compare", "box-stack", "--solvers", "pgs,osqp", "--models", "box-friction"]
    argv += ["--formulations", "maximal", "--duration", "0.02", "--quiet"]
    code, out, _ = _code(capsys, [*argv, "--out", "c", "--model-option", "max_iter=1"])
    assert code == 3 and "2 combinations run (0 failed, 2 with unconverged steps)" in out
    table = pd.read_csv(tmp_path / "c" / "comparison.csv")
    assert list(table["unconverged_steps"]) == [4, 4]
    assert list(table["status"]) == ["inaccurate", "inaccurate"]
    assert "unconverged steps" in (tmp_path / "c" / "comparison.md").read_text()
    code, out, _ = _code(capsys, [*argv, "--out", "d", "--model-option", "max_iter=1", "--strict"])
    assert code == 3 and "2 combinations run (2 failed, 0 with unconverged steps)" in out
    strict = pd.read_csv(tmp_path / "d" / "comparison.csv")
    assert list(strict["status"]) == ["failed", "failed"]
    assert strict["message"].str.contains("was not solved to its tolerance").all()
    code, out, _ = _code(capsys, [*argv, "--out", "e"])
    assert code == 0 and "(0 failed, 0 with unconverged steps)" in out

    spec = tmp_path / "s.toml"
    spec.write_text(
        '[sweep]\nsolvers = ["pgs"]\nmodels = ["box-friction"]\nformulations = ["maximal"]\n'
        'duration = 0.02\n[model_options]\nmax_iter = 1\n[[scenarios]]\nname = "box-stack"\n'
    )
    code, out, _ = _code(capsys, ["sweep", str(spec), "--workers", "1", "--quiet"])
    assert code == 3 and "0 failed and 1 have unconverged steps" in out
    rows = pd.read_csv(tmp_path / "s" / "sweep.csv")
    assert list(rows["unconverged_steps"]) == [4] and list(rows["status"]) == ["inaccurate"]
    code, out, _ = _code(capsys, ["sweep", str(spec), "--workers", "1", "--quiet", "--strict"])
    assert code == 3 and "1 failed and 0 have unconverged steps" in out


def test_strict_enters_the_specification_only_when_set():
    """A spec without ``strict`` has the canonical form (and so the hash and results
    folder) it had before the field existed; ``strict=True`` is a different run."""
    from contactlab.errors import ConfigurationError
    from contactlab.runspec import RunSpec

    plain, strict = RunSpec("box-stack"), RunSpec("box-stack", strict=True)
    assert "strict" not in plain.as_dict() and strict.as_dict()["strict"] is True
    assert plain.digest() != strict.digest()
    assert RunSpec.from_dict(strict.as_dict()) == strict
    assert RunSpec.from_dict(plain.as_dict()) == plain
    with pytest.raises(ConfigurationError, match="strict must be true or false"):
        RunSpec.from_dict({**plain.as_dict(), "strict": "yes"})
