"""The batched runner (:mod:`contactlab.batch`): each copy steps as its own run, bit for bit.

Three 8-box piles of other seeds and friction coefficients (0.3, 0.5, 0.7), stepped as
one merged scene for 40 steps of 5 ms with ``coulomb`` / ``nsgs`` and ``padmm``: every
copy's positions, rotations and twists equal those of its separate run (islands on, as
the batch sets them) exactly, although the copies overlap in space (they are never
collided with each other) and are solved in one step loop.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from contactlab.batch import Batch, merge
from contactlab.errors import ConfigurationError
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")
STEPS = 40


@pytest.mark.parametrize("solver", ["nsgs", "padmm"])
def test_each_copy_is_its_separate_run_bit_for_bit(solver: str) -> None:
    scenes = [
        get_scenario("box-pile").build(n=8, seed=seed, mu=mu)
        for seed, mu in ((3, 0.3), (4, 0.5), (5, 0.7))
    ]
    batch = Batch(scenes, "maximal", "coulomb", solver)
    run = batch.run(steps=STEPS)
    moved = 0.0
    for k, scene in enumerate(scenes):
        alone = Simulator(scene, "maximal", "coulomb", solver, model_options={"islands": True})
        ref = alone.run(steps=STEPS).trajectory
        mine = batch.trajectory(run, k)
        for key in ("position", "rotation", "twist"):
            assert np.array_equal(mine[key], ref[key]), (k, key)
        moved = max(moved, float(np.max(np.abs(ref["position"][-1] - ref["position"][0]))))
    assert moved > 0.05  # the piles fell and landed: contacts were solved


def test_copies_must_share_the_step_and_have_no_joints() -> None:
    a = get_scenario("box-pile").build(n=2)
    with pytest.raises(ConfigurationError, match="share both"):
        merge([a, replace(a, dt=1e-3)])
    pendulum = get_scenario("pendulum").build()
    with pytest.raises(ConfigurationError, match="free bodies only"):
        merge([a, pendulum])
