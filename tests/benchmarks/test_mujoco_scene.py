"""The benchmark's MuJoCo copy of a scene (``benchmarks/mujoco_scene.py``) is the same model.

On the Allegro hand (fixed palm, 16 hinges, joint springs and dampers) at random
states, MuJoCo's mass matrix (``mj_fullM``) and bias forces (``qfrc_bias``, gravity
and velocity products, less the passive forces) equal contactlab's to 1e-10
relative, and its passive forces (``qfrc_passive``) equal the PD drives'
``kp (rest - q) - kd qdot``.
"""

from __future__ import annotations

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")
robots = pytest.importorskip("scenarios.robots")
if robots.ROBOTS is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)


def test_allegro_hand_has_the_same_dynamics_in_mujoco():
    from benchmarks.mujoco_scene import mujoco_model, mujoco_state
    from contactlab.reduced.model import Model

    hand = robots.load_robot(
        "allegro_hand_description/urdf/allegro_right_hand.urdf", fixed_base=True
    )
    rng = np.random.default_rng(3)
    rest = {j.name: float(rng.uniform(-0.5, 0.5)) for j in hand.joints if j.kind == "revolute"}
    hand = robots.set_joints(hand, rest, kp=0.7, kd=0.02)
    model = Model.from_scene(hand)
    mj, _ = mujoco_model(hand)
    data = mujoco.MjData(mj)
    # MuJoCo's dof of each contactlab coordinate
    order = [
        mj.jnt_dofadr[mujoco.mj_name2id(mj, mujoco.mjtObj.mjOBJ_JOINT, j.name)]
        for j in sorted(
            (j for j in hand.joints if j.kind == "revolute"),
            key=lambda j: model.tree.dofs(j.name).start,
        )
    ]
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, model.nq)
        qdot = rng.uniform(-2.0, 2.0, model.nq)
        mujoco_state(hand, mj, data, q, qdot)
        M = np.zeros((mj.nv, mj.nv))
        mujoco.mj_fullM(mj, data, M)
        ours = model.mass_matrix(q)
        np.testing.assert_allclose(M[np.ix_(order, order)], ours, atol=1e-10 * np.abs(ours).max())
        # contactlab's h holds the joint springs and dampers, MuJoCo's passive forces
        h = model.bias_forces(q, qdot)
        theirs = data.qfrc_bias[order] - data.qfrc_passive[order]
        np.testing.assert_allclose(theirs, h, atol=1e-10 * np.abs(h).max())
        r = np.array([rest[j.name] for j in hand.joints if j.kind == "revolute"])
        passive = 0.7 * (r - q) - 0.02 * qdot
        np.testing.assert_allclose(data.qfrc_passive[order], passive, atol=1e-12)
