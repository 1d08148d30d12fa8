"""Sleeping islands in the compiled pile step (the maximal formulation's option ``sleep``,
:mod:`contactlab.maximal.sleeping`, off by default).

Facts:

* with the option on, the compiled step takes the general path's step: the same contacts
  left out, the same held bodies, the same islands falling asleep.  Without its subspace
  finish and islands (the general path's method), a 6-box pile's run of 240 steps (drop,
  landing, the pile falling asleep) has the general run's sleeping bodies at every step
  and its poses within 1e-8 (the two runs' rounding, carried through the pile's dynamics,
  as in ``tests/contactlab/test_compiled_maximal_step.py``; measured 4.7e-10, the first
  island asleep at step 78, the whole pile at step 147);
* on its default method a sleeping body is held exactly where it fell asleep, and the
  settled pile sleeps by the end.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.maximal.compiled_step import CompiledContactStep
from contactlab.maximal.sleeping import Sleep
from contactlab.scenario import get_scenario
from contactlab.scene import Scene
from contactlab.simulator import Simulator

pytest.importorskip("numba")
STEPS = 240
#: agreement of two whole runs, each from its own states
RUN_AGREE = 1e-8


def run(scene: Scene, compiled: bool, general_method: bool) -> tuple[np.ndarray, list, Simulator]:
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=0.005,
        formulation_options={"sleep": True, "compiled": compiled},
    )  # fmt: skip
    if compiled:
        assert isinstance(sim.compiled, CompiledContactStep)
        if general_method:
            sim.compiled.finish = False
            sim.compiled.islands = False
    else:
        assert sim.compiled is None
    state = sim.initial_state()
    assert isinstance(state.sleep, Sleep)
    poses, asleep = [state.E.copy()], [state.sleep.asleep.copy()]
    for i in range(STEPS):
        state, record = sim.step(state, i)
        assert isinstance(state.sleep, Sleep)
        assert record.metrics["sleeping_bodies"] == state.sleep.sleeping
        poses.append(state.E.copy())
        asleep.append(state.sleep.asleep.copy())
    return np.array(poses), asleep, sim


def test_compiled_sleeping_equals_the_general_path() -> None:
    scene = get_scenario("box-pile").build(n=6, seed=1)
    fast, fast_asleep, _ = run(scene, True, True)
    slow, slow_asleep, _ = run(scene, False, False)
    assert slow_asleep[-1].all()  # the pile sleeps by the end
    for a, b in zip(fast_asleep, slow_asleep, strict=True):
        assert np.array_equal(a, b)
    assert np.abs(fast - slow).max() <= RUN_AGREE


def test_a_sleeping_body_is_held_where_it_fell_asleep() -> None:
    scene = get_scenario("box-pile").build(n=6, seed=1)
    poses, asleep, _ = run(scene, True, False)
    assert asleep[-1].all()
    for body in range(6):
        k = next(k for k, s in enumerate(asleep) if s[body])
        assert np.array_equal(
            poses[k:, body], np.broadcast_to(poses[k, body], poses[k:, body].shape)
        )


def test_sleep_is_not_batched() -> None:
    from contactlab.maximal.batched_step import batch_scope

    scene = get_scenario("box-pile").build(n=3, seed=0)
    sim = Simulator(scene, formulation_options={"sleep": True})
    assert isinstance(sim.compiled, CompiledContactStep)
    assert "sleep" in batch_scope(sim)
