"""The platform on built-in scenarios: two independent formulations agree through ``compare``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contactlab.experiments import compare, load_results
from contactlab.scenario import load_scenarios


@pytest.mark.skipif("pendulum" not in load_scenarios(), reason="pendulum scenario not installed")
def test_pendulum_maximal_and_reduced_agree(tmp_path: Path) -> None:
    result = compare(
        "pendulum",
        "kkt",
        models="frictionless",
        formulations="maximal,reduced",
        set={"angle_deg": "10"},
        dt=1e-3,
        duration=0.1,
        out=tmp_path,
        quiet=True,
    )
    assert sorted(result.table["formulation"]) == ["maximal", "reduced"]
    assert result.table["success"].all()
    a, b = (load_results(tmp_path / f).trajectory for f in result.table["folder"])
    np.testing.assert_array_equal(a["t"], b["t"])
    # both are semi-implicit Euler steps of the same pendulum (h = 1 ms): the tip paths agree
    # to 1e-5 m, a ten-thousandth of the 0.17 m swing (measured difference: ~1e-6 m)
    np.testing.assert_allclose(a["position"], b["position"], rtol=0, atol=1e-5)
    # the maximal formulation keeps the hinge within round-off (Baumgarte on); the reduced has
    # no joint drift by construction
    maximal = result.table.set_index("formulation").loc["maximal"]
    assert maximal["max_drift"] < 1e-9
