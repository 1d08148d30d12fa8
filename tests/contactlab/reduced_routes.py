"""What the tests of the reduced compiled steps with their own kernels share
(``test_reduced_cone_step.py``, ``test_reduced_lemke_step.py``): the agreement of a
compiled run with the general path's, the robot marker, the small tree both throw onto the
ground, the two runs' state difference, the two runs side by side and a run whose kernel
declines every other step."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest

from contactlab.simulator import Simulator

try:
    from compiled_shapes import robots
except ImportError:  # tests/contactlab imported as a package
    from .compiled_shapes import robots

#: agreement of the two trajectories (q and qdot) [rad, m, rad/s, m/s]
AGREE = 1e-10


def diff(a: Any, b: Any) -> float:
    """The largest difference of two states' ``q`` and ``qdot``."""
    return float(
        max(
            np.abs(np.asarray(a.q) - np.asarray(b.q)).max(),
            np.abs(np.asarray(a.qdot) - np.asarray(b.qdot)).max(),
        )
    )


def small_tree(qdot0: Any = None) -> Any:
    """A box on a free joint, tilted 12 cm above the ground, with a sphere on a sprung
    hinge; ``qdot0`` the free joint's initial velocity (``None``: at rest)."""
    from contactlab import se3
    from contactlab.bodies import body_from_shape
    from contactlab.scene import JointSpec, Scene
    from contactlab.shapes import Box, Plane, Sphere

    base, _ = body_from_shape("base", Box(half_extents=np.array([0.1, 0.08, 0.05])), mass=1.0)
    ball, _ = body_from_shape("ball", Sphere(radius=0.05), mass=0.2)
    joints = (
        JointSpec(
            "root", "free", None, "base",
            frame_parent=se3.make_transform(se3.exp_so3([0.1, 0.2, 0.0]), [0, 0, 0.12]),
            qdot0=qdot0,
        ),
        JointSpec(
            "hinge", "revolute", "base", "ball", axis=[0.0, 1.0, 0.0],
            frame_parent=se3.make_transform(None, [0.2, 0.0, 0.0]), stiffness=1.0, damping=0.1,
        ),
    )  # fmt: skip
    return Scene("tilted-box-and-ball", (base, ball), joints=joints, static_shapes=(Plane(),))


def side_by_side(fast: Simulator, general: Simulator, steps: int) -> tuple[float, int]:
    """Run ``fast`` and ``general`` from their initial states for ``steps`` steps, checking
    that each step finds as many contacts on both.  Returns the largest difference of the
    two runs' states and the number of steps with contacts."""
    a, b = fast.initial_state(), general.initial_state()
    worst = 0.0
    contacts = 0
    for i in range(steps):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        contacts += ra.metrics["n_contacts"] > 0
        worst = max(worst, diff(a, b))
    return worst, contacts


def declining_run(
    monkeypatch: pytest.MonkeyPatch, K: ModuleType, kernel: str, code: int,
    fast: Simulator, general: Simulator, steps: int = 60,
) -> tuple[int, float]:  # fmt: skip
    """Run ``fast`` and ``general`` side by side for ``steps`` steps, ``fast``'s kernel
    ``K.<kernel>`` reporting the status ``code`` (a step it declines) on every other call.
    Returns the kernel's calls and the largest difference of the two runs' states."""
    original = getattr(K, kernel)
    calls = [0]

    def declining(*args: Any) -> Any:
        out = original(*args)
        calls[0] += 1
        if calls[0] % 2:  # every other step declined
            out[7][K.I_STATUS] = code
        return out

    monkeypatch.setattr(K, kernel, declining)
    a, b = fast.initial_state(), general.initial_state()
    worst = 0.0
    for i in range(steps):
        a, _ = fast.step(a, i)
        b, _ = general.step(b, i)
        worst = max(worst, diff(a, b))
    return calls[0], worst


__all__ = ["AGREE", "declining_run", "diff", "robots", "side_by_side", "small_tree"]
