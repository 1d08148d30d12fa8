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
import pandas as pd
import pytest

from contactlab.batch import Batch, merge
from contactlab.errors import ConfigurationError, ContactlabError
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


# -- the compiled route: box friction by pgs, one compiled call per step for all copies ---

LANDING = 70  # 5 ms steps: the cubes touch the ground from about step 25


def _lone(scene, **options):
    sim = Simulator(scene, **options)
    assert sim.compiled is not None  # the default route of a box pile: the compiled step
    try:
        return sim.run(steps=LANDING)
    except ContactlabError as err:
        return err


def _same_run(mine, ref) -> None:
    """Two runs of one scene: same trajectory (to 1e-10), same table besides times."""
    for key in ("position", "rotation", "twist"):
        np.testing.assert_allclose(mine.trajectory[key], ref.trajectory[key], rtol=0, atol=1e-10)
    np.testing.assert_array_equal(mine.trajectory["t"], ref.trajectory["t"])
    assert list(mine.steps.columns) == list(ref.steps.columns)
    timeless = [c for c in ref.steps.columns if not c.endswith("_time_s")]
    pd.testing.assert_frame_equal(
        mine.steps[timeless], ref.steps[timeless], check_exact=False, rtol=0, atol=1e-10
    )
    assert (mine.status, mine.message) == (ref.status, ref.message)
    assert mine.initial_metrics == ref.initial_metrics
    assert mine.spec == ref.spec


def test_compiled_batch_gives_each_copy_its_own_run() -> None:
    pile = get_scenario("box-pile")
    scenes = [
        pile.build(n=8, seed=seed, mu=mu) for seed, mu in ((3, 0.3), (4, 0.5), (5, 0.7), (6, 0.9))
    ]
    batch = Batch(scenes)
    assert batch.route == "compiled"
    runs = batch.run(steps=LANDING)
    for k, scene in enumerate(scenes):
        ref = _lone(scene)
        _same_run(runs[k], ref)
        assert ref.steps["n_contacts"].iloc[-20:].min() > 0  # landed: contacts solved
        np.testing.assert_array_equal(
            batch.trajectory(runs, k)["twist"], runs[k].trajectory["twist"]
        )


def test_a_capped_step_is_reported_for_its_copy_only() -> None:
    # a single cube converges where a landing pile's steps stop at the cap of 50 sweeps
    pile = get_scenario("box-pile")
    scenes = [pile.build(n=1, seed=2), pile.build(n=8, seed=4), pile.build(n=6, seed=7, mu=0.8)]
    options = {"max_iter": 50}
    runs = Batch(scenes, model_options=options).run(steps=LANDING)
    statuses = []
    for k, scene in enumerate(scenes):
        ref = _lone(scene, model_options=options)
        _same_run(runs[k], ref)
        statuses.append(runs[k].steps["status"].to_numpy())
    capped = [np.flatnonzero(s == "max_iterations") for s in statuses]
    assert any(len(c) for c in capped)
    # at some step one copy was capped while another converged
    assert any(statuses[j][i] == "optimal" for c in capped for i in c for j in range(len(scenes)))


def test_strict_stops_the_capped_copy_and_no_other() -> None:
    pile = get_scenario("box-pile")
    scenes = [pile.build(n=1, seed=2), pile.build(n=8, seed=4)]
    options = {"model_options": {"max_iter": 50}, "strict": True}
    outcomes = Batch(scenes, **options).run(steps=LANDING)
    stopped = 0
    for k, scene in enumerate(scenes):
        ref = _lone(scene, **options)
        mine = outcomes[k]
        assert type(mine) is type(ref)
        if isinstance(ref, ContactlabError):
            stopped += 1
            assert str(mine) == str(ref)
            _same_run(mine.run, ref.run)
        else:
            _same_run(mine, ref)
    assert stopped == 1  # the pile's first capped step stops it; the lone cube runs on


def test_batch_of_other_models_takes_the_islands_route() -> None:
    scenes = [get_scenario("box-pile").build(n=2, seed=s) for s in range(2)]
    batch = Batch(scenes, "maximal", "coulomb", "nsgs")
    assert batch.route == "islands"
    with pytest.raises(ConfigurationError, match="compiled route"):
        batch.runs(steps=1)


def test_a_copy_the_divergence_guard_stops_ends_as_its_run_does() -> None:
    # one cube of copy 1 starts sunk 0.2 m into the ground: deeper than its own size, which
    # the guard's penetration bound refuses at the first step; copy 0 runs on
    pile = get_scenario("box-pile")
    sunk = pile.build(n=3, seed=1)
    E = np.array(sunk.initial_E, dtype=float)
    E[0, 2, 3] = -0.2
    scenes = [pile.build(n=3, seed=0), replace(sunk, initial_E=E)]
    outcomes = Batch(scenes).run(steps=LANDING)
    refs = [_lone(scene) for scene in scenes]
    _same_run(outcomes[0], refs[0])
    assert type(outcomes[1]) is type(refs[1]) and refs[1].status == "diverged"
    assert str(outcomes[1]) == str(refs[1])
    _same_run(outcomes[1].run, refs[1].run)
