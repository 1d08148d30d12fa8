"""Scenes the contactlab tests share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pytest

from contactlab.scenario import get_scenario
from contactlab.scene import Scene

FarPiles = Callable[..., tuple[Scene, Scene, Scene]]


def far_apart_piles(n: int = 6, lift: float = 0.0) -> tuple[Scene, Scene, Scene]:
    """Pile A (``n`` boxes, seed 1), pile B (``n`` boxes, seed 2, 10 m along x and
    ``lift`` higher) and both in one scene on one ground (B's bodies renamed ``b-*``)."""
    a = get_scenario("box-pile").build(n=n, seed=1)
    b0 = get_scenario("box-pile").build(n=n, seed=2)
    assert a.initial_E is not None and b0.initial_E is not None
    Eb = b0.initial_E.copy()
    Eb[:, 0, 3] += 10.0
    Eb[:, 2, 3] += lift
    b = replace(b0, bodies=tuple(replace(x, name=f"b-{x.name}") for x in b0.bodies), initial_E=Eb)
    both = replace(
        a,
        bodies=a.bodies + b.bodies,
        initial_E=np.concatenate([a.initial_E, Eb]),
        initial_phi=np.zeros((2 * n, 6)),
    )
    return a, b, both


@pytest.fixture
def far_piles() -> FarPiles:
    """:func:`far_apart_piles`: two box piles 10 m apart, alone and in one scene."""
    return far_apart_piles
