from __future__ import annotations

import pytest

import contactlab.scenario as scenario_module

from . import fakes


@pytest.fixture
def fake_scenarios(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``exp-fall`` visible next to the registered scenarios."""
    original = scenario_module.load_scenarios

    def load() -> dict[str, scenario_module.Scenario]:
        return {**original(), "exp-fall": fakes.exp_fall}

    monkeypatch.setattr(scenario_module, "load_scenarios", load)
