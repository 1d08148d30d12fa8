"""``compare`` with formulation options (``--integrator``, ``--formulation-option``).

Facts: the options reach every run (its trajectory equals a direct run of the
formulation built with them, and differs from the default integrator's);
the comparison records them; a bad option is refused in one line before
anything is written, from Python and from the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab.cli import main
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.experiments import compare, load_results
from contactlab.maximal import MaximalFormulation
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

DURATION = 0.03


def _direct(**options: object) -> np.ndarray:
    scene = get_scenario("pendulum").build()
    form = MaximalFormulation(scene, **options)  # type: ignore[arg-type]
    sim = Simulator(scene, form, "frictionless", "kkt")
    return sim.run(steps=sim.n_steps(None, DURATION)).trajectory["position"]


def test_compare_passes_formulation_options_to_every_run(tmp_path: Path) -> None:
    """Trapezoidal without projection through ``compare``: the same steps as a direct run."""
    options = {"integrator": "trapezoidal", "projection": False}
    out = tmp_path / "cmp"
    result = compare(
        "pendulum",
        "kkt",
        models="frictionless",
        formulations="maximal",
        duration=DURATION,
        out=out,
        quiet=True,
        formulation_options=options,
    )
    assert len(result.table) == 1 and result.table["success"].all()
    run = out / result.table["folder"].iloc[0]
    position = load_results(run).trajectory["position"]
    assert np.abs(position - _direct(**options)).max() < 1e-12
    # the option took effect: the default integrator moves the link differently
    assert np.abs(position - _direct()).max() > 1e-6
    summary = json.loads((run / "summary.json").read_text())
    assert summary["experiment"]["spec"]["formulation_options"] == options
    md = (out / "comparison.md").read_text()
    assert "Formulation options: integrator=trapezoidal, projection=False." in md


def test_default_formulations_that_refuse_the_options_are_listed_as_not_fitting(
    tmp_path: Path,
) -> None:
    """``pendulum`` runs in maximal and reduced coordinates; only the maximal one has
    the option ``jacobian``, so without ``formulations`` the reduced runs are reported,
    not refused."""
    out = tmp_path / "cmp"
    result = compare(
        "pendulum", "kkt", models="frictionless", duration=DURATION, out=out, quiet=True,
        formulation_options={"jacobian": "symmetric"},
    )  # fmt: skip
    assert result.table["formulation"].tolist() == ["maximal"]
    skipped = result.skipped.set_index("formulation")
    assert "has no option 'jacobian'" in skipped.loc["reduced", "reason"]
    assert "reduced/frictionless/kkt" in (out / "comparison.md").read_text()


@pytest.mark.parametrize(
    ("options", "error", "needle"),
    [
        ({"integrator": "trapezoid"}, UnknownNameError, "trapezoidal"),
        ({"jacobian": "skew"}, ConfigurationError, "jacobian must be 'exact' or 'symmetric'"),
        ({"stepper": 1}, ConfigurationError, "has no option 'stepper'"),
    ],
)
def test_compare_refuses_bad_formulation_options(
    tmp_path: Path, options: dict, error: type, needle: str
) -> None:
    with pytest.raises(error) as info:
        compare("pendulum", "kkt", out=tmp_path / "x", quiet=True, formulation_options=options)
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "x").exists()


def test_compare_command_takes_integrator_and_formulation_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    args = ["compare", "pendulum", "--solvers", "kkt", "--models", "frictionless"]
    args += ["--formulations", "maximal", "--duration", str(DURATION), "--quiet"]
    code = main([*args, "--integrator", "trapezoidal", "--formulation-option",
                 "projection=false", "--out", str(out)])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    table = pd.read_csv(out / "comparison.csv")
    position = load_results(out / table["folder"].iloc[0]).trajectory["position"]
    assert np.abs(position - _direct(integrator="trapezoidal", projection=False)).max() < 1e-12

    capsys.readouterr()
    assert main([*args, "--integrator", "rk4", "--out", str(tmp_path / "y")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("contactlab: error:") and "rk4" in err and "\n" not in err
    assert main([*args, "--formulation-option", "compliance=-1", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err.strip()
    assert "compliance" in err and "\n" not in err
    assert not (tmp_path / "y").exists() and not (tmp_path / "z").exists()
