"""Tree kinematics: phi = J qdot against finite differences of E(q), Jdot, O(n) products."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.tree import Tree
from contactlab.scene import JointSpec, Scene

from .conftest import JOINTS, box_body, random_coordinates, random_tree_scene

EPS = 1e-6


@pytest.fixture(params=[0, 1])
def tree(request: pytest.FixtureRequest) -> Tree:
    # every joint kind plus extra revolute/prismatic nodes, random topology
    kinds = sorted(JOINTS)
    return Tree.from_scene(
        random_tree_scene(request.param, kinds + ["revolute", "prismatic", "revolute"])
    )


def test_depth_first_order_puts_parents_first(tree: Tree) -> None:
    assert all(p < i for i, p in enumerate(tree.parent))
    # depth first: each node's subtree is contiguous
    for i in range(tree.n):
        sub = [k for k in range(tree.n) if _is_descendant(tree, k, i)]
        assert sub == list(range(i, i + len(sub)))


def _is_descendant(tree: Tree, k: int, i: int) -> bool:
    while k >= 0:
        if k == i:
            return True
        k = tree.parent[k]
    return False


def test_J_qdot_is_the_derivative_of_the_maximal_configuration(tree: Tree) -> None:
    rng = np.random.default_rng(1)
    q, qdot = random_coordinates(tree, rng)
    kin = forward_kinematics(tree, q, qdot)
    Ep = forward_kinematics(tree, q + EPS * qdot).E
    Em = forward_kinematics(tree, q - EPS * qdot).E
    Einv = se3.inverse(kin.E)
    fd = (se3.log_se3(Einv @ Ep) - se3.log_se3(Einv @ Em)) / (2 * EPS)
    np.testing.assert_allclose(kin.phi, fd, atol=1e-6)
    np.testing.assert_allclose(kin.J @ qdot, fd.reshape(-1), atol=1e-6)


def test_Jdot_is_the_time_derivative_of_J(tree: Tree) -> None:
    rng = np.random.default_rng(2)
    q, qdot = random_coordinates(tree, rng)
    kin = forward_kinematics(tree, q, qdot)
    fd = forward_kinematics(tree, q + EPS * qdot).J - forward_kinematics(tree, q - EPS * qdot).J
    np.testing.assert_allclose(kin.Jdot, fd / (2 * EPS), atol=1e-6)


def test_linear_time_products_match_dense_matrices(tree: Tree) -> None:
    rng = np.random.default_rng(3)
    q, qdot = random_coordinates(tree, rng)
    kin = forward_kinematics(tree, q, qdot)
    x = rng.standard_normal(tree.nq)
    y = rng.standard_normal((tree.scene.n_bodies, 6))
    np.testing.assert_allclose(kin.J_times(x).reshape(-1), kin.J @ x, atol=1e-12)
    np.testing.assert_allclose(kin.Jdot_times(x).reshape(-1), kin.Jdot @ x, atol=1e-12)
    np.testing.assert_allclose(kin.JT_times(y), kin.J.T @ y.reshape(-1), atol=1e-12)


def test_child_frame_follows_the_joint_spec_convention() -> None:
    """E_child = E_parent frame_parent Q(q) frame_child^-1 (contactlab.scene)."""
    rng = np.random.default_rng(4)
    fp, fc = se3.random_transform(rng), se3.random_transform(rng)
    scene = Scene(
        "two",
        (box_body("a", 1.0, (1, 1, 1)), box_body("b", 1.0, (1, 1, 1))),
        (
            JointSpec("ja", "revolute", None, "a", axis=(1, 0, 0)),
            JointSpec("jb", "revolute", "a", "b", frame_parent=fp, frame_child=fc, axis=(0, 1, 0)),
        ),
    )
    tree = Tree.from_scene(scene)
    E = forward_kinematics(tree, np.array([0.3, -0.7])).E
    Qb = se3.make_transform(se3.exp_so3(np.array([0, -0.7, 0])))
    np.testing.assert_allclose(E[1], E[0] @ fp @ Qb @ se3.inverse(fc), atol=1e-14)


def test_tree_errors_name_the_problem() -> None:
    bodies = (box_body("a", 1.0, (1, 1, 1)), box_body("b", 1.0, (1, 1, 1)))
    with pytest.raises(ConfigurationError, match=r"bodies \['b'\] have no joint"):
        Tree.from_scene(Scene("s", bodies, (JointSpec("ja", "revolute", None, "a"),)))
    twice = (
        JointSpec("ja", "revolute", None, "a"),
        JointSpec("jb", "revolute", "a", "b"),
        JointSpec("jc", "revolute", None, "b"),
    )
    with pytest.raises(ConfigurationError, match="closes_loop=True"):
        Tree.from_scene(Scene("s", bodies, twice))
    loop = twice[:2] + (JointSpec("jc", "revolute", None, "b", closes_loop=True),)
    tree = Tree.from_scene(Scene("s", bodies, loop))
    assert [j.name for j in tree.loop_joints] == ["jc"] and tree.nq == 2
