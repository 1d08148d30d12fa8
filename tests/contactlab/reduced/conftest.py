"""Shared fixtures: one joint of every kind, in a random pose."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.reduced.joints import Joint
from contactlab.reduced.registry import make_joint


def _curve_frames(rng: np.random.Generator, m: int = 5) -> np.ndarray:
    return se3.make_transform(
        se3.exp_so3(0.6 * rng.standard_normal((m, 3))), rng.standard_normal((m, 3))
    )


def every_joint(seed: int = 0) -> dict[str, Joint]:
    """One joint per registered kind (composites chained three deep)."""
    rng = np.random.default_rng(seed)
    axis = rng.standard_normal(3)
    surface = np.zeros((5, 4, 6))
    surface[..., :3] = rng.standard_normal((5, 4, 3))
    surface[..., 3:] = 0.3 * rng.standard_normal((5, 4, 3))
    return {
        "fixed": make_joint("fixed"),
        "revolute": make_joint("revolute", axis),
        "prismatic": make_joint("prismatic", axis),
        "planar": make_joint("planar", axis),
        "planar_z": make_joint("planar"),
        "translational": make_joint("translational"),
        "universal": make_joint("universal"),
        "universal_axes": make_joint("universal", params={"axes": rng.standard_normal((2, 3))}),
        "spherical": make_joint("spherical"),
        "spherical_euler": make_joint("spherical_euler"),
        "free": make_joint("free"),
        "free_translation_first": make_joint("free", params={"order": "translation_first"}),
        "cylindrical": make_joint("cylindrical", axis),
        "composite3": make_joint(
            "composite",
            params={
                "joints": [
                    {"kind": "universal"},
                    {"kind": "prismatic", "axis": axis},
                    {"kind": "spherical"},
                ]
            },
        ),
        "spline_curve": make_joint("spline_curve", params={"frames": _curve_frames(rng)}),
        "spline_curve_cyclic": make_joint(
            "spline_curve", params={"frames": _curve_frames(rng, 4), "cyclic": True}
        ),
        "spline_surface": make_joint("spline_surface", params={"values": surface}),
    }


JOINTS = every_joint()


@pytest.fixture(params=sorted(JOINTS))
def joint(request: pytest.FixtureRequest) -> Joint:
    return JOINTS[request.param]
