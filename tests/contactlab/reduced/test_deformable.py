"""Mass-spring strands attached to bodies (seed 000 §2.7) against eq. 2.85–2.88 by hand."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced import Tree, forward_kinematics, mass_matrix, reduced_forces
from contactlab.reduced.deformable import Strand, attach_strands, line_of_nodes
from contactlab.scene import Scene
from scenarios.basic import _chain
from scenarios.redmax import mass_springs


def test_mass_matrix_is_eq_2_88() -> None:
    """M_R = M_r + sum_a m (J_am J_mr)^T (J_am J_mr) on the rigid coordinates, m I on each
    free node's, with J_am = R Gamma(x_a) (eq. 2.83) built from the rigid tree alone
    (to 1e-12 relative, plus 2e-15 kg m^2: the two welded node bodies carry the
    inertia 0.4 m r^2 = 4e-16 of a sphere of radius 1e-6 m)."""
    scene = mass_springs.build()
    tree = Tree.from_scene(scene)
    rigid_scene = Scene("rigid", scene.bodies[:2], scene.joints[:2])
    rigid = Tree.from_scene(rigid_scene)
    rng = np.random.default_rng(2)
    q = rng.uniform(-1, 1, tree.nq) * 0.1
    qr = np.r_[q[tree.dofs("joint0")], q[tree.dofs("joint1")]]
    kin_r = forward_kinematics(rigid, qr)
    M_ref = mass_matrix(kin_r)
    m = 1e-3
    for body, x in ((0, [0.05, 0, 0]), (1, [0.2, 0, 0])):
        E0 = forward_kinematics(rigid, np.zeros(2)).E[body]
        x_body = (se3.inverse(E0) @ np.r_[x, 1.0])[:3]
        R = kin_r.E[body, :3, :3]
        Jam = R @ se3.gamma(x_body) @ kin_r.J[6 * body : 6 * body + 6]
        M_ref += m * Jam.T @ Jam
    M = mass_matrix(forward_kinematics(tree, q))
    rig = np.r_[tree.dofs("joint0").start, tree.dofs("joint1").start]
    np.testing.assert_allclose(M[np.ix_(rig, rig)], M_ref, rtol=1e-12, atol=2e-15)
    for node in ("strand0_node1", "strand0_node2", "strand1_node1"):
        s = tree.dofs(node)
        np.testing.assert_allclose(M[s, s], m * np.eye(3), rtol=1e-12)
        others = np.setdiff1d(np.arange(tree.nq), np.arange(s.start, s.stop))
        assert np.abs(M[s][:, others]).max() == 0.0  # identity block of eq. 2.85


def test_hanging_node_rests_where_the_strain_force_balances_gravity() -> None:
    """One free node under a welded body: V = K/2 eps^2 gives the tension K eps / L
    (eq. 2.82), so the node rests at a stretch delta = m g L^2 / K; the reduced
    force on its coordinates vanishes there (to 1e-12 of m g) and not 1 % away."""
    bodies, specs = _chain(1, "F", "y", (0.0,))
    scene = Scene("hang", tuple(bodies), tuple(specs))
    L, K, m, g = 0.05, 2e-2, 1e-3, 9.81
    strand = Strand(
        "s", line_of_nodes([0.05, 0, 0], [0.05, 0, -L], 2), m, K, attachments={0: "link0"}
    )
    tree = Tree.from_scene(attach_strands(scene, [strand]))
    delta = m * g * L**2 / K
    q = np.zeros(tree.nq)
    s = tree.dofs("s_node1")
    q[s] = [0, 0, -delta]
    f = reduced_forces(forward_kinematics(tree, q))
    assert np.abs(f[s]).max() < 1e-12 * m * g
    q[s] = [0, 0, -1.01 * delta]
    f = reduced_forces(forward_kinematics(tree, q))
    np.testing.assert_allclose(f[s], [0, 0, 0.01 * m * g], rtol=1e-9)


def test_bad_strands_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="n >= 2"):
        Strand("s", np.zeros((1, 3)), 1.0, 1.0)
    with pytest.raises(ConfigurationError, match="coincide"):
        Strand("s", np.zeros((2, 3)), 1.0, 1.0)
    with pytest.raises(ConfigurationError, match="out of range"):
        Strand("s", line_of_nodes([0, 0, 0], [1, 0, 0], 2), 1.0, 1.0, attachments={5: "b"})
