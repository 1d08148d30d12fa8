"""Sleeping islands (maximal formulation option ``sleep``, :mod:`contactlab.maximal.sleeping`).

Facts:

- a sleeping island is held exactly where it fell asleep (poses equal to the last awake
  step's, twists zero), and until the first island sleeps the run is the run without
  the option;
- sleeping one island leaves the others alone: two far-apart piles solved by islands,
  one settled and asleep while the other is dropped onto the ground later, give the
  dropped pile the trajectory it has without sleeping, to 1e-12, until its own first
  cube rests long enough to sleep;
- an awake body that touches a sleeping one wakes its island: a cube dropped on a
  sleeping cube lands as it does when nothing sleeps (to 1e-5 m: a cube may fall asleep
  while the contact's stabilization still removes the last micrometres of overlap);
- the option refuses scenes and settings outside its scope, in one line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from contactlab.errors import ConfigurationError
from contactlab.maximal.sleeping import Sleep
from contactlab.scenario import get_scenario
from contactlab.scene import Scene
from contactlab.simulator import Simulator

FarPiles = Callable[..., tuple[Scene, Scene, Scene]]  # conftest.far_apart_piles

pytest.importorskip("numba")


def run(
    scene: Scene,
    steps: int,
    sleep: bool,
    model: str = "box-friction",
    solver: str = "pgs",
    model_options: dict | None = None,
) -> tuple[np.ndarray, list[Sleep | None]]:
    sim = Simulator(
        scene,
        "maximal",
        model,
        solver,
        dt=0.005,
        model_options=model_options,
        formulation_options={"sleep": sleep, "compiled": False},
    )
    state = sim.initial_state()
    poses, sleeps = [state.E.copy()], [state.sleep]
    for i in range(steps):
        state, _ = sim.step(state, i)
        poses.append(state.E.copy())
        sleeps.append(state.sleep)
        assert sleep or state.sleep is None
    return np.array(poses), sleeps


def test_a_sleeping_island_is_held_where_it_fell_asleep() -> None:
    scene = get_scenario("box-pile").build(n=6, seed=1)
    awake, _ = run(scene, 240, sleep=False)
    held, sleeps = run(scene, 240, sleep=True)
    first = next(k for k, s in enumerate(sleeps) if s.asleep.any())
    # nothing sleeps before step `first`: the same run as without the option
    np.testing.assert_allclose(held[:first], awake[:first], rtol=0, atol=1e-12)
    assert sleeps[-1].asleep.all(), "the settled pile sleeps by the end"
    for body in range(6):
        k = next(k for k, s in enumerate(sleeps) if s.asleep[body])
        # held exactly: every later pose is the pose it fell asleep with
        assert np.array_equal(held[k:, body], np.broadcast_to(held[k, body], held[k:, body].shape))
    # the awake run's pile is settled too: it creeps by less than 0.1 mm meanwhile
    assert np.abs(awake[-1, :, :3, 3] - held[-1, :, :3, 3]).max() < 1e-4


def test_a_sleeping_island_leaves_the_others_alone(far_piles: FarPiles) -> None:
    _, _, both = far_piles(3, lift=8.0)  # pile B lands after pile A sleeps
    options = {"islands": True}
    awake, _ = run(both, 330, False, "coulomb", "nsgs", options)
    held, sleeps = run(both, 330, True, "coulomb", "nsgs", options)
    slept = next(k for k, s in enumerate(sleeps) if s.asleep[:3].all())
    landed = next(k for k in range(len(held)) if held[k, 3:, 2, 3].min() < 0.06)
    # pile B's first cube to land rests and sleeps in its turn: compare until then
    b_sleeps = next(k for k, s in enumerate(sleeps) if s.asleep[3:].any())
    assert slept < landed < b_sleeps, "pile A sleeps before pile B lands"
    np.testing.assert_allclose(held[:b_sleeps, 3:], awake[:b_sleeps, 3:], rtol=0, atol=1e-12)


def test_a_cube_dropped_on_a_sleeping_cube_wakes_it_and_lands_as_without_sleep() -> None:
    base = get_scenario("box-pile").build(n=2, seed=0)
    E = np.tile(np.eye(4), (2, 1, 1))
    E[0, :3, 3] = (0.0, 0.0, 0.05)  # resting on the ground
    E[1, :3, 3] = (0.02, 0.01, 0.9)  # lands on it at about 0.42 s
    scene = replace(base, initial_E=E, initial_phi=np.zeros((2, 6)))
    awake, _ = run(scene, 160, sleep=False)
    held, sleeps = run(scene, 160, sleep=True)
    asleep = [bool(s.asleep[0]) for s in sleeps]
    fell, woke = asleep.index(True), asleep.index(False, asleep.index(True))
    assert fell < woke < 100, "the lower cube sleeps, then the falling one wakes it"
    assert not sleeps[woke].asleep.any()
    assert np.abs(held[woke + 1, 0, :3, 3] - held[woke, 0, :3, 3]).max() > 0, "it moves again"
    # both cubes sleep again by the end; the upper one may fall asleep while the contact's
    # stabilization still removes the last micrometres of the landing's overlap (measured:
    # 2.9e-6 m lower than the awake run, whose cube keeps rising out of it)
    assert sleeps[-1].asleep.all()
    np.testing.assert_allclose(held[-1, :, :3, 3], awake[-1, :, :3, 3], rtol=0, atol=1e-5)


def test_sleep_refuses_what_it_does_not_cover() -> None:
    chain = get_scenario("spring-chain").build()
    with pytest.raises(ConfigurationError, match="sleeping islands apply to scenes of free bodies"):
        Simulator(chain, "maximal", formulation_options={"sleep": True})
    pile = get_scenario("box-pile").build(n=2)
    for option, match in (
        ({"sleep_speed": -1.0}, "sleep_speed must be a positive speed"),
        ({"sleep_steps": 0}, "sleep_steps must be a whole number"),
        ({"integrator": "trapezoidal"}, "default integrator"),
    ):
        with pytest.raises(ConfigurationError, match=match):
            Simulator(pile, "maximal", formulation_options={"sleep": True, **option})
    with pytest.raises(ConfigurationError, match="option sleep must be true or false"):
        Simulator(pile, "maximal", formulation_options={"sleep": "yes"})
