"""Reports say what they mean: the energy change is ranked only where energy is
conserved, columns carry units, plots are chosen by what the run has."""

from __future__ import annotations

import pandas as pd
import pytest

from contactlab import results
from contactlab.experiments.compare import comparison_markdown
from contactlab.runspec import build_simulator
from contactlab.scenario import conserves_energy, get_scenario


@pytest.mark.parametrize(
    ("name", "conserves"),
    [
        ("pendulum", True),
        ("chain", True),
        ("redmax-loop", True),  # a closed loop is a bilateral, workless constraint
        ("box-stack", False),  # contact and friction
        ("spring-damper", False),  # a damper
        ("jf-pendulum", False),  # joint friction
        ("redmax-joint-limits", False),  # inelastic limits
        ("redmax-hybrid", False),  # a prescribed joint does work
    ],
)
def test_which_scenes_conserve_energy(name, conserves):
    assert conserves_energy(get_scenario(name).build()) is conserves


def _table():
    return pd.DataFrame(
        {
            "formulation": ["maximal", "maximal"],
            "model": ["a", "b"],
            "solver": ["x", "y"],
            "status": ["ok", "ok"],
            "energy_drift": [-2.0, -0.5],
            "max_penetration": [1e-3, 2e-3],
        }
    )


def _cells(md: str, column: str) -> list[str]:
    lines = [line.strip("| ").split(" | ") for line in md.splitlines() if line.startswith("|")]
    col = lines[0].index(column)
    return [row[col] for row in lines[2:]]


def test_energy_change_is_ranked_only_where_energy_is_conserved():
    empty = pd.DataFrame(columns=["formulation", "model", "solver", "reason"])
    energy = "energy change E(T) − E(0) [J]"
    dissipative = comparison_markdown("s", {}, _table(), empty, 0.005, 1.0, False, (False, True))
    assert _cells(dissipative, energy) == ["-2", "-0.5"]  # reported, no best marked
    assert _cells(dissipative, "max penetration [m]") == ["**0.001**", "0.002"]
    assert "Step size h = 0.005 s (the scene's default); simulated time 1 s (given)." in (
        dissipative
    )
    assert "dt = scene default" not in dissipative
    conservative = comparison_markdown("s", {}, _table(), empty, 0.005, 1.0, True)
    assert _cells(conservative, energy) == ["-2", "**-0.5**"]


def test_plots_are_chosen_by_what_the_run_has(tmp_path):
    # a pendulum has no contact: no penetration plot; its joint drift is plotted only
    # when it rises above round-off
    run = build_simulator("pendulum").run(steps=20)
    folder = results.write_run(run, tmp_path / "pendulum")
    names = {p.name for p in (folder / results.PLOTS).iterdir()}
    drift = run.steps["constraint_error"].abs().max()
    expected = {"energy.png", "solve_time.png"}
    if drift > results.ROUNDOFF_DRIFT:
        expected.add("constraint_error.png")
    assert names == expected
    assert run.steps["n_contacts"].max() == 0
