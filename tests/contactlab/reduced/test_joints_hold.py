"""Reduced coordinates hold a tree's joints exactly: the divergence guard of a reduced run
does not measure the joints' separation, which stays at rounding along the run."""

from __future__ import annotations

import numpy as np

from contactlab.divergence import body_radii, joint_frames
from contactlab.runspec import build_simulator


def _transforms(run) -> np.ndarray:  # noqa: ANN001
    traj = run.trajectory
    k, nb = traj["position"].shape[:2]
    E = np.zeros((k, nb, 4, 4))
    E[:, :, :3, :3] = traj["rotation"]
    E[:, :, :3, 3] = traj["position"]
    E[:, :, 3, 3] = 1.0
    return E


def test_robot_joints_stay_coincident_along_a_reduced_run() -> None:
    # solo12 falling on its knees: 12 revolute joints under contact impulses
    sim = build_simulator("solo12-collapse", {"duration": 0.1})
    assert sim.names[0] == "reduced" and sim._joints_hold()
    run = sim.run(steps=100)
    E = _transforms(run)
    frames = joint_frames(sim.scene, E[0], body_radii(sim.scene))
    assert len(frames.names) == 12  # every revolute joint of the legs
    worst = max(float(np.max(frames.separation(Ek))) for Ek in E)
    # the bodies move by centimetres; their joint origins agree to rounding of metres
    assert worst <= 1e-12
    assert worst < 1e-9 * float(np.min(frames.bound))


def test_guard_still_measures_joints_that_may_open() -> None:
    # a loop closure (reduced coordinates keep it by a constraint) and maximal coordinates
    assert not build_simulator("jf-crank", formulation="reduced")._joints_hold()
    assert not build_simulator("spring-chain", formulation="maximal")._joints_hold()
