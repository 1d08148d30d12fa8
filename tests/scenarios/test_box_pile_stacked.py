"""The ``stacked`` layout of ``box-pile`` is a pile at rest at exact contact.

Facts: the cubes touch (every contact at distance 0 to round-off, none
overlapping, no contact of the margin alone), the top layer is the fourth (a
pile of the dropped pile's height) and one step of the frictionless contact
QP leaves every cube at rest with normal impulses that carry exactly the
weight over the step: the ground's contacts take ``sum lambda_N = n m g h``
(vertical momentum balance of the whole pile at ``v = 0``).  Interior point
(Clarabel) solves the QP to about 1e-9, hence the tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.collision import collide
from contactlab.errors import ConfigurationError
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator


@pytest.mark.parametrize("n", [1, 14, 40])
def test_stacked_pile_touches_at_exact_contact(n: int) -> None:
    scene = get_scenario("box-pile").build(n=n, layout="stacked")
    contacts = collide(scene, scene.initial_E)
    assert np.all(np.abs(contacts.distance) < 1e-12)
    # every cube rests on the ground or on four cubes below (4 points per patch)
    z = scene.initial_E[:, 2, 3]
    assert len(contacts) == 4 * (np.sum(z < 0.1) + 4 * np.sum(z > 0.1))
    assert z.max() <= 3.5 * 0.1 + 1e-12


def test_stacked_pile_is_at_rest() -> None:
    n, h = 30, 0.005
    scene = get_scenario("box-pile").build(n=n, layout="stacked")
    sim = Simulator(scene, "maximal", "frictionless", "qpsolvers:clarabel", dt=h)
    state, record = sim.step(sim.initial_state(), 0)
    assert record.solution.status == "optimal"
    assert np.max(np.abs(state.phi)) < 1e-8  # [m/s, rad/s]
    weight_impulse = n * 1.0 * 9.81 * h  # 1 kg cubes [N s]
    contacts = record.problem.contacts
    ground = (contacts.body_a == -1) | (contacts.body_b == -1)
    assert 0 < ground.sum() < len(contacts)
    assert np.sum(record.solution.lambda_N[ground]) == pytest.approx(weight_impulse, rel=1e-8)


def test_unknown_layout_is_one_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="layout must be 'drop' or 'stacked'"):
        get_scenario("box-pile").build(n=4, layout="tower")
