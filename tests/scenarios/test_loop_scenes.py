"""Loop scenes in both formulations: the 2-row hinge closure (Sueda's notes, eq. 2.90-2.91) is one
description that the maximal formulation stacks with its joints and the reduced formulation
maps through ``J``."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.simulator import Simulator
from scenarios import SCENARIOS


@pytest.mark.parametrize("name", ["redmax-loop", "redmax-prismatic"])
def test_loop_scenes_agree_in_both_formulations_to_first_order(name: str) -> None:
    """REDMAX scenes 4 and 15 close a planar loop with the 2-row hinge rows (eq. 2.90-2.91),
    now in both formulations.  Over 0.3 s the largest body-position gap between the maximal
    and the reduced run shrinks with the step at least as fast as the maximal run's O(h)
    error (measured over 0.5 s: 2.9e-5 -> 1.5e-5 m for scene 4, 2.0e-4 -> 1.0e-4 m for
    scene 15 at h = 10 -> 5 ms, ratios 0.53; over 0.3 s scene 4 gives 1.5e-5 -> 4.8e-6 m,
    ratio 0.32)."""
    scene = SCENARIOS[name].build()
    gaps = []
    for h in (1e-2, 5e-3):
        runs = [
            Simulator(scene, form, "frictionless", "kkt", dt=h).run(duration=0.3)
            for form in ("maximal", "reduced")
        ]
        assert all(r.status == "ok" for r in runs)
        pm, pr = (r.trajectory["position"] for r in runs)
        assert np.ptp(pr, axis=0).max() > 0.01  # the mechanism moves by centimetres
        gaps.append(float(np.abs(pm - pr).max()))
    assert gaps[1] < 0.65 * gaps[0]
    assert gaps[0] < 5e-4
