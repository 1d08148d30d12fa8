"""Step timing columns account for the whole step: the model's solve includes its own set-up."""

from __future__ import annotations

import numpy as np

from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator


def test_solve_time_covers_the_model_and_splits_off_its_setup() -> None:
    """On a 3-box stack by box friction (PGS) through the general layers: per step,
    ``solve_time_s`` is the model's set-up plus the solver layer's time, and the three
    parts fit inside the step."""
    scene = get_scenario("box-stack").build(n=3)
    # the general layers (the default route of this scene is the compiled step, which has
    # no model set-up and no solver layer)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=0.01, formulation_options={"compiled": False}
    )
    state = sim.initial_state()
    for i in range(5):
        state, rec = sim.step(state, i)
        m = rec.metrics
        layer = sum(r.setup_time + r.solve_time for r in rec.solution.results)
        assert m["model_setup_time_s"] > 0.0
        assert np.isclose(m["solve_time_s"], m["model_setup_time_s"] + rec.solution.solve_time)
        assert np.isclose(rec.solution.solve_time, layer)
        parts = m["collision_time_s"] + m["assembly_time_s"] + m["solve_time_s"]
        assert parts <= m["step_time_s"]
