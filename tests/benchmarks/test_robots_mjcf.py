"""The MJCF robots of the benchmark (a UR5e-like arm with rotor armature, a quadruped and a
humanoid on floating bases with several hinges per body) have MuJoCo's mass matrix, bias,
joint springs and dampers and accelerations to 1e-9 relative (round-off: 1e-15 measured),
with the floating base compared through the exact velocity map, not finite differences."""

from __future__ import annotations

import pytest

pytest.importorskip("mujoco", reason="MJCF import needs the mjcf extra (mujoco)")

from benchmarks.bench_robots_mjcf import MODELS, ROBOTS, compare  # noqa: E402


@pytest.mark.parametrize("robot", ROBOTS)
def test_robot_dynamics_equal_mujocos(robot):
    result = compare(MODELS / f"{robot}.xml", states=4, seed=11)
    assert result.mass_matrix < 1e-9
    assert result.bias < 1e-9
    assert result.passive < 1e-9
    assert result.qacc < 1e-9
    # nothing is dropped: the arm's hinge frictionloss is carried as dry friction
    # (tests/contactlab/reduced/test_dry_friction.py), so no feature is reported
    assert not result.warnings
