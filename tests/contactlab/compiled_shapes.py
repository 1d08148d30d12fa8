"""The shapes of a compiled reduced step (:class:`contactlab.reduced.compiled_step`) for
the tests of its collision parts: the robot marker, the step of a scenario, its shape
arrays, random turns of shape poses and the exact distance of two of its shapes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from contactlab.collision.convex import no_hull, signed_distance_v
from contactlab.reduced import _step_kernels as K
from contactlab.simulator import Simulator


def _robots_installed() -> bool:
    from scenarios.robots import ROBOTS

    return ROBOTS is not None


robots = pytest.mark.skipif(not _robots_installed(), reason="example-robot-data not installed")


def reduced_step(name: str) -> Simulator:
    """The scenario ``name`` on the compiled reduced step (box friction, ``pgs``)."""
    from contactlab.scenario import get_scenario

    sim = Simulator(get_scenario(name).build(), "reduced", "box-friction", "pgs")
    assert sim.compiled is not None
    return sim


def shape_data(cs: Any) -> tuple:
    """``kind, size, hull, radius, hv, hvs, hns, hnb`` of the compiled step ``cs``."""
    (_, kind, _, size, hull, radius, _, hv, hvs, _, _, _, _, hns, hnb, *_rest) = cs._shape_args
    return kind, size, hull, radius, hv, hvs, hns, hnb


def turned(rng: np.random.Generator, W: np.ndarray, angle: float) -> np.ndarray:
    """``W`` with each shape turned by up to ``angle`` and moved by up to ``angle`` m."""
    from scipy.spatial.transform import Rotation

    out = W.copy()
    for s in range(W.shape[0]):
        turn = Rotation.from_rotvec(rng.uniform(-angle, angle, size=3)).as_matrix()
        out[s, :3, :3] = turn @ W[s, :3, :3]
        out[s, :3, 3] += rng.uniform(-angle, angle, size=3)
    return out


def shape_distance(cs: Any) -> Callable[[np.ndarray, int, int], tuple[bool, float, np.ndarray]]:
    """``distance(W, a, b)``: whether GJK found it, the signed distance of shapes ``a`` and
    ``b`` of ``cs`` at poses ``W`` (spheres' and capsules' radii taken off their cores)
    and GJK's direction."""
    kind, size, hull, _, hv, hvs, hns, hnb = shape_data(cs)

    def distance(W: np.ndarray, a: int, b: int) -> tuple[bool, float, np.ndarray]:
        H = [
            (hv[hvs[hull[s]] : hvs[hull[s] + 1]], hns[hvs[hull[s]] : hvs[hull[s] + 1] + 1], hnb)
            if kind[s] == K.MESH
            else no_hull()
            for s in (a, b)
        ]
        cores = sum(size[s, 0] if kind[s] in (K.SPHERE, K.CAPSULE) else 0.0 for s in (a, b))
        found, d, v, _, _ = signed_distance_v(
            kind[a], W[a, :3, :3].copy(), W[a, :3, 3].copy(), size[a], H[0],
            kind[b], W[b, :3, :3].copy(), W[b, :3, 3].copy(), size[b], H[1], np.inf,
        )  # fmt: skip
        return found, d - cores, v

    return distance
