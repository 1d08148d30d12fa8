"""The separation pre-test of the compiled reduced collision
(:func:`contactlab.reduced._step_kernels._separated`).

Facts: a shape's extents along a direction are its largest and smallest ``u . x``; a
pair the pre-test declares more than ``gap`` apart along a direction kept at other poses
is more than ``gap`` apart by the GJK distance; and the contacts a humanoid's
links find with the directions kept from step to step are those found without them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.reduced import _step_kernels as K

try:
    from compiled_shapes import reduced_step, robots, shape_data, shape_distance, turned
except ImportError:  # tests/contactlab imported as a package
    from .compiled_shapes import reduced_step, robots, shape_data, shape_distance, turned


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.normal(size=(3, 3)))
    q = q * np.sign(np.diag(r))
    return q if np.linalg.det(q) > 0 else -q


def _poses(rng: np.random.Generator, ns: int, spread: float) -> np.ndarray:
    W = np.tile(np.eye(4), (ns, 1, 1))
    for s in range(ns):
        W[s, :3, :3] = _rotation(rng)
        W[s, :3, 3] = rng.normal(size=3) * spread
    return W


@robots
def test_extents_are_the_shapes_extremes() -> None:
    """A hull's extents along a direction are the largest and smallest ``u . (x - o)``
    over its vertices (to rounding, 1e-12 m on shapes of a metre's scale); a sphere's and a
    cylinder's are their closed forms, never exceeded by dense samples of their surfaces
    and reached by them to 1e-6 m (the samples' spacing)."""
    sim = reduced_step("humanoid-topple")
    kind, size, hull, _, hv, hvs, _, _ = shape_data(sim.compiled)
    rng = np.random.default_rng(3)
    ns = kind.size
    t = np.linspace(0, 2 * np.pi, 20001)
    for _ in range(20):
        W = _poses(rng, ns, 1.0)
        u = rng.normal(size=3)
        u /= np.linalg.norm(u)
        for s in range(ns):
            hi, lo, *local = K._extent(W, s, kind[s], size[s], hull[s], hv, hvs, u)
            R = W[s, :3, :3]
            np.testing.assert_allclose(local, R.T @ u, rtol=0, atol=1e-14)
            if kind[s] == K.MESH:
                values = (hv[hvs[hull[s]] : hvs[hull[s] + 1]] @ R.T) @ u
                assert abs(hi - values.max()) <= 1e-12 and abs(lo - values.min()) <= 1e-12
            elif kind[s] == K.SPHERE:
                assert abs(hi - size[s, 0]) <= 1e-15 and abs(lo + size[s, 0]) <= 1e-15
            elif kind[s] == K.CYLINDER:
                r, hh = size[s, 0], size[s, 1]
                rim = np.stack([r * np.cos(t), r * np.sin(t), np.zeros_like(t)], axis=1)
                values = (np.concatenate([rim + [0, 0, hh], rim - [0, 0, hh]]) @ R.T) @ u
                assert values.max() <= hi + 1e-12 and hi - values.max() <= 1e-6
                assert values.min() >= lo - 1e-12 and values.min() - lo <= 1e-6


@robots
@pytest.mark.parametrize("angle", [0.0, 0.01, 0.1])
def test_declared_separations_hold(angle: float) -> None:
    """A direction kept for two of the humanoid's shapes at some poses (GJK's, as the
    step keeps it), then the shapes turned and moved by up to ``angle`` (rad, m): whenever
    the pre-test declares them more than ``gap`` apart, their GJK distance (surfaces,
    radii included) exceeds ``gap``.  Most far pairs are declared apart."""
    sim = reduced_step("humanoid-topple")
    kind, size, hull, radius, hv, hvs, hns, hnb = shape_data(sim.compiled)
    rng = np.random.default_rng(5)
    ns = kind.size
    declared = 0
    sep = (np.zeros((1, 3)), np.zeros((1, 2, 3)), np.zeros((1, 2)))

    distance = shape_distance(sim.compiled)
    for _ in range(300):
        a, b = (int(x) for x in rng.choice(ns, size=2, replace=False))
        W = _poses(rng, ns, 0.3)
        _, _, v = distance(W, a, b)
        K._keep_direction(W, a, b, kind, size, hull, hv, hvs, v, *sep, 0)
        W1 = turned(rng, W, angle)
        found, d, _ = distance(W1, a, b)
        for gap in (0.0, 0.005, 0.05):
            if K._separated(W1, a, b, kind, size, hull, radius, hv, hvs, *sep, 0, gap):
                declared += 1
                assert found and d > gap
    assert declared > 100


@robots
def test_kept_directions_leave_the_contacts_unchanged() -> None:
    """Along 150 steps of the humanoid's fall, the contacts found with the directions kept
    from the previous steps are those found with none kept (every pair measured): the
    pre-test only drops pairs that have no contact."""
    sim = reduced_step("humanoid-topple")
    cs: Any = sim.compiled
    state = sim.initial_state()
    skipped = 0
    for i in range(150):
        kept = cs._separation  # type: ignore[union-attr]
        before = kept[0].copy()
        kept = tuple(x.copy() for x in kept)
        with_kept = K.tracked_contacts(state.E, *cs._contact_args, *_fresh_track(cs), *kept)  # type: ignore[union-attr]
        fresh = tuple(np.zeros_like(x) for x in kept)
        without = K.tracked_contacts(state.E, *cs._contact_args, *_fresh_track(cs), *fresh)  # type: ignore[union-attr]
        skipped += int(np.sum(np.any(before != 0.0, axis=1)))
        for x, y in zip(with_kept[:10], without[:10], strict=True):
            np.testing.assert_array_equal(x, y)
        state, _ = sim.step(state, i)
    assert skipped > 0


def _fresh_track(cs: Any) -> tuple:
    old = cs._no_track  # type: ignore[attr-defined]
    return old.pair, old.point, old.ids, old.next_id, cs._radius2  # type: ignore[attr-defined]
