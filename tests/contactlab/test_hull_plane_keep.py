"""The kept vertex sets of the compiled reduced collision's hull--plane contacts
(:func:`contactlab.reduced._step_kernels._hull_plane_points`).

Facts: the contacts found with the vertices kept from earlier poses (and the separation
directions) are exactly those of a full scan of every hull's vertices, along the runs of
the robot scenarios and at many random poses near a kept one, and the kept sets are used
(a step scans fewer vertices) on most steps of a standing robot.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.reduced import _step_kernels as K
from contactlab.simulator import Simulator


def _robots_installed() -> bool:
    from scenarios.robots import ROBOTS

    return ROBOTS is not None


robots = pytest.mark.skipif(not _robots_installed(), reason="example-robot-data not installed")


def _sim(name: str) -> Simulator:
    from contactlab.scenario import get_scenario

    sim = Simulator(get_scenario(name).build(), "reduced", "box-friction", "pgs")
    assert sim.compiled is not None
    return sim


def _contacts(cs: Any, E: np.ndarray, kept: tuple) -> tuple:
    old = cs._no_track
    args = (old.pair, old.point, old.ids, old.next_id, cs._radius2)
    return K.tracked_contacts(E, *cs._contact_args, *args, *kept)[:10]


def _same(cs: Any, E: np.ndarray, kept: tuple) -> None:
    """The contacts with ``kept`` (updated in place) equal those of a full scan."""
    fresh = tuple(np.zeros_like(x) for x in kept)
    for x, y in zip(_contacts(cs, E, kept), _contacts(cs, E, fresh), strict=True):
        np.testing.assert_array_equal(x, y)


@robots
@pytest.mark.parametrize(
    ("name", "steps"), [("solo12-stand", 150), ("solo12-collapse", 200), ("humanoid-topple", 150)]
)
def test_kept_vertices_give_the_full_scans_contacts_along_a_run(name: str, steps: int) -> None:
    sim = _sim(name)
    cs: Any = sim.compiled
    state = sim.initial_state()
    reused = 0
    for i in range(steps):
        kept = tuple(x.copy() for x in cs._separation)
        before = kept[3].copy()
        _same(cs, state.E, kept)
        rows = (before[..., 0] > 0) & np.all(before == kept[3], axis=-1)
        reused += int(np.any(rows))
        state, _ = sim.step(state, i)
    if name == "solo12-stand":  # the feet stand still: their kept sets serve
        assert reused > steps // 2


def _moved(rng: np.random.Generator, E: np.ndarray, angle: float, shift: float) -> np.ndarray:
    from scipy.spatial.transform import Rotation

    out = E.copy()
    for k in range(E.shape[0]):
        R = Rotation.from_rotvec(rng.normal(size=3) * angle).as_matrix()
        out[k, :3, :3] = R @ E[k, :3, :3]
        out[k, :3, 3] = E[k, :3, 3] + rng.normal(size=3) * shift
    return out


@robots
@pytest.mark.parametrize("name", ["solo12-collapse", "humanoid-topple"])
def test_kept_vertices_give_the_full_scans_contacts_at_random_poses(name: str) -> None:
    """From the sets kept at a pose of the run, 400 random nearby poses (turned by about
    0.2 to 20 mrad, moved by about 0.1 to 3 mm: on both sides of the bound that decides
    whether a kept set serves) find the full scan's contacts."""
    sim = _sim(name)
    cs: Any = sim.compiled
    state = sim.initial_state()
    for i in range(60):
        state, _ = sim.step(state, i)
    rng = np.random.default_rng(7)
    kept0 = tuple(x.copy() for x in cs._separation)
    _contacts(cs, state.E, kept0)
    n_contacts = 0
    for _ in range(400):
        angle = 10.0 ** rng.uniform(-3.7, -1.7)
        shift = 10.0 ** rng.uniform(-4.0, -2.5)
        E = _moved(rng, state.E, angle, shift)
        kept = tuple(x.copy() for x in kept0)
        _same(cs, E, kept)
        n_contacts += len(_contacts(cs, E, kept)[0])
    assert n_contacts > 400
