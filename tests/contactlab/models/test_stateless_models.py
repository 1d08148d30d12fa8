"""A model object keeps nothing between steps: one object may step several simulators.

Warm starts travel in ``State.cache`` and the inner solves of a step are logged for
that ``solve`` call only (:class:`contactlab.models.base.SolvingModel`), so stepping
two simulators in turn with one model object gives, bit for bit, the runs each
simulator gives alone with its own model object (warm-started PGS box friction on
two sliding boxes; BISP on two joint-friction chains, whose step report comes with
the step's solution).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.models.base import make_model
from contactlab.simulator import Simulator
from scenarios import SCENARIOS

CASES = [
    # (scenario, parameters of the two scenes, formulation, model, solver, steps)
    (
        "box-slide",
        ({"v0": 2.0, "mu": 0.3}, {"v0": 1.0, "mu": 0.5}),
        "maximal",
        "box-friction",
        "pgs",
        25,
    ),
    ("jf-chain", ({"n_links": 2}, {"n_links": 3}), "reduced", "bisp", "pgs", 10),
]


def _steps(sims, steps):  # type: ignore[no-untyped-def]
    """Step the simulators in turn; per simulator and step: E, v, iterations, reactions."""
    states = [sim.initial_state() for sim in sims]
    out = [[] for _ in sims]
    for i in range(steps):
        for k, sim in enumerate(sims):
            states[k], record = sim.step(states[k], i)
            report = record.solution.report
            out[k].append(
                (
                    states[k].E if hasattr(states[k], "E") else None,
                    np.asarray(record.solution.v),
                    record.solution.iterations,
                    None if report is None else report.reactions,
                )
            )
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_model_object_steps_two_simulators_interleaved(case) -> None:  # type: ignore[no-untyped-def]
    name, params, form, model_name, solver, steps = case
    scenes = [SCENARIOS[name].build(**p) for p in params]
    alone = []
    for scene in scenes:
        alone += _steps([Simulator(scene, form, make_model(model_name, solver), solver)], steps)
    shared = make_model(model_name, solver)
    together = _steps([Simulator(scene, form, shared, solver) for scene in scenes], steps)
    assert max(i for _, _, i, _ in together[0]) > 0
    for a, b in zip(alone, together):
        for (Ea, va, ia, ra), (Eb, vb, ib, rb) in zip(a, b):
            np.testing.assert_array_equal(va, vb)
            assert ia == ib
            if Ea is not None:
                np.testing.assert_array_equal(Ea, Eb)
            if ra is not None:
                np.testing.assert_array_equal(ra, rb)
