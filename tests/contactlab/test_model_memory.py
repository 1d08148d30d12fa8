"""A model's memory: warm starts in a typed container, carried forward, never needed.

Facts: after a step the new state's memory holds the model's warm start as its
typed record (``ImpulseMemory`` for ``box-friction``) and the contact track,
while the state the step started from is left as it was; a record of another
type under a model's key is a cold start, not an error; and a step from an
emptied memory reaches the same velocities as the warm-started one, within the
solver tolerance (memory is never needed for correctness).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from contactlab.contact import identity
from contactlab.memory import ModelMemory
from contactlab.models.box_rows import ImpulseMemory
from contactlab.scenario import get_scenario
from contactlab.scene import State
from contactlab.simulator import Simulator

TOL = 1e-9  # the inner solves' tolerance (solver_tol), asked of Lemke


@pytest.fixture(scope="module")
def stepped() -> tuple[Simulator, list[State]]:
    scene = get_scenario("box-stack").build(n=2)
    sim = Simulator(
        scene, "maximal", "box-friction", "lemke", dt=0.01, model_options={"solver_tol": TOL}
    )
    states = [sim.initial_state()]
    for i in range(6):
        states.append(sim.step(states[-1], i)[0])
    return sim, states


def test_the_memory_holds_typed_warm_starts_and_the_old_state_keeps_its_own(stepped) -> None:
    _, states = stepped
    assert all(isinstance(s.cache, ModelMemory) for s in states)
    assert len(states[0].cache) == 0  # stepping did not write into the first state
    last = states[-1].cache
    assert isinstance(last.recall("box-friction:box", ImpulseMemory), ImpulseMemory)
    assert last.recall(identity.CACHE_KEY, identity.ContactTrack) is not None
    before = dict(states[-2].cache)
    assert all(states[-2].cache[k] is v for k, v in before.items())


def test_a_record_of_another_type_is_a_cold_start() -> None:
    memory = ModelMemory({"box-friction:box": (np.zeros(3), np.zeros(2))})
    assert memory.recall("box-friction:box", ImpulseMemory) is None
    assert memory.recall("absent", ImpulseMemory) is None
    assert isinstance(
        State(0.0, np.zeros((0, 4, 4)), np.zeros((0, 6)), cache={}).cache, ModelMemory
    )
    with pytest.raises(TypeError, match="strings"):
        memory[3] = 1.0  # type: ignore[index]


def test_a_cold_step_reaches_the_warm_steps_velocities(stepped) -> None:
    sim, states = stepped
    warm_state, warm = sim.step(states[-1], 6)
    cold_state, cold = sim.step(replace(states[-1], cache=ModelMemory()), 6)
    assert warm.solution.status == cold.solution.status == "optimal"
    scale = max(1.0, float(np.abs(warm.solution.v).max()))
    np.testing.assert_allclose(cold.solution.v, warm.solution.v, atol=1e3 * TOL * scale)
    np.testing.assert_allclose(cold_state.phi, warm_state.phi, atol=1e3 * TOL * scale)
