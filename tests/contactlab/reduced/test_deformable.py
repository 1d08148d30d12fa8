"""Mass-spring strands attached to bodies (Sueda's notes §2.7): eq. 2.85–2.88 by hand, the
linearly implicit step's dissipation, the hanging strand's sag, REDMAX scene 12."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.typing import ArrayLike

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced import (
    ReducedFormulation,
    Tree,
    energies,
    forward_kinematics,
    mass_matrix,
    reduced_forces,
)
from contactlab.reduced.deformable import (
    WORLD,
    Strand,
    attach_strands,
    line_of_nodes,
    node_positions,
)
from contactlab.reduced.dynamics import implicit_terms
from contactlab.scene import Body, JointSpec, Scene, State
from contactlab.simulator import Simulator
from scenarios import SCENARIOS
from scenarios.basic import _chain

G = 9.81


def _strands_on_a_chain(m: float = 1e-3, K: float = 1e-2) -> Scene:
    """A 2-link chain with a 3-node strand hanging from link 0 and a 2-node strand
    from link 1, each attached at its top node."""
    bodies, specs = _chain(2, "R", "y", (0.0,))
    scene = Scene("chain", tuple(bodies), tuple(specs))
    top0 = {0: "link0"}
    top1 = {0: "link1"}
    return attach_strands(
        scene,
        [
            Strand("strand0", line_of_nodes([0.05, 0, 0], [0.05, 0, -0.1], 3), m, K, 0.0, top0),
            Strand("strand1", line_of_nodes([0.2, 0, 0], [0.2, 0, -0.05], 2), m, K, 0.0, top1),
        ],
    )


def _run(scene: Scene, h: float, steps: int) -> list[State]:
    sim = Simulator(scene, ReducedFormulation(scene), dt=h)
    state = sim.initial_state()
    states = [state]
    for i in range(steps):
        state, _ = sim.step(state, i)
        states.append(state)
    return states


def _energy(tree: Tree, state: State) -> float:
    kin = forward_kinematics(tree, np.asarray(state.q), np.asarray(state.qdot))
    return energies(kin)["total_energy"]


def _with_velocity(scene: Scene, joint: str, qdot0: ArrayLike, gravity: bool) -> Scene:
    joints = tuple(
        replace(j, qdot0=np.asarray(qdot0)) if j.name == joint else j for j in scene.joints
    )
    return scene.with_(joints=joints, gravity=scene.gravity if gravity else np.zeros(3))


def test_mass_matrix_is_eq_2_88() -> None:
    """M_R = M_r + sum_a m (J_am J_mr)^T (J_am J_mr) on the rigid coordinates, m I on each
    free node's, with J_am = R Gamma(x_a) (eq. 2.83) built from the rigid tree alone
    (to 1e-12 relative, plus 2e-15 kg m^2: the two welded node bodies carry the
    inertia 0.4 m r^2 = 4e-16 of a sphere of radius 1e-6 m)."""
    scene = _strands_on_a_chain()
    tree = Tree.from_scene(scene)
    rigid = Tree.from_scene(Scene("rigid", scene.bodies[:2], scene.joints[:2]))
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


def test_attached_node_jacobian_and_its_derivative_are_eq_2_83_to_2_85() -> None:
    """The welded end node of strand 0 on link 1's tip (body point x = (5, 0, 0) cm):
    its world velocity is J_am J_mr qdot with J_am = R Gamma(x)
    (eq. 2.83), which equals R times the linear rows of the node body's tree Jacobian
    (to 1e-14), and the acceleration row of eq. 2.85, Jdot_am J_mr + J_am Jdot_mr with
    Jdot_am = R [omega] Gamma(x) (eq. 2.84), equals the central difference of
    J_am J_mr along qdot (step 1e-6 s, to 1e-7 relative)."""
    scene = SCENARIOS["redmax-mass-springs"].build()
    tree = Tree.from_scene(scene)
    rng = np.random.default_rng(7)
    q, qdot = rng.uniform(-1, 1, tree.nq), rng.uniform(-2, 2, tree.nq)
    link, node = scene.body_index("link1"), scene.body_index("strand0_node2")
    x = np.array([0.05, 0.0, 0.0])

    def JamJ(qq: np.ndarray) -> np.ndarray:
        kin = forward_kinematics(tree, qq, qdot)
        R = kin.E[link, :3, :3]
        return R @ se3.gamma(x) @ kin.J[6 * link : 6 * link + 6]

    kin = forward_kinematics(tree, q, qdot)
    R = kin.E[link, :3, :3]
    rows = slice(6 * node + 3, 6 * node + 6)
    scale = np.abs(JamJ(q)).max()
    np.testing.assert_allclose(
        JamJ(q), kin.E[node, :3, :3] @ kin.J[rows], atol=1e-14 * max(scale, 1.0)
    )
    omega = kin.phi[link, :3]
    Jl = kin.J[6 * link : 6 * link + 6]
    Jdl = kin.Jdot[6 * link : 6 * link + 6]
    analytic = R @ se3.bracket3(omega) @ se3.gamma(x) @ Jl + R @ se3.gamma(x) @ Jdl
    eps = 1e-6
    fd = (JamJ(q + eps * qdot) - JamJ(q - eps * qdot)) / (2 * eps)
    np.testing.assert_allclose(analytic, fd, rtol=1e-7, atol=1e-7 * np.abs(fd).max())


def test_strand_stiffness_on_the_free_nodes_is_the_derivative_of_the_forces() -> None:
    """On a free node's coordinates J is constant (translational joint), so the
    implicit step's K_r = J^T K_m J (eq. 2.75) must be the exact d f_r / d q there:
    central differences (step 1e-6 m) agree to 1e-6 relative at a random stretched,
    bent state of redmax-mass-springs, in every row (the links' rows too: their J
    does not depend on the node's coordinates).  The links' own columns are not
    compared: there eq. 2.75 leaves out the term (dJ^T/dq) f_m."""
    scene = SCENARIOS["redmax-mass-springs"].build()
    tree = Tree.from_scene(scene)
    rng = np.random.default_rng(4)
    q = rng.uniform(-0.3, 0.3, tree.nq)
    free = np.arange(tree.dofs("strand0_node1").start, tree.dofs("strand0_node1").stop)
    q[free] = rng.uniform(-0.02, 0.02, 3)
    K = implicit_terms(forward_kinematics(tree, q)).K
    eps = 1e-6
    fd = np.zeros((tree.nq, 3))
    for c, i in enumerate(free):
        dq = np.zeros(tree.nq)
        dq[i] = eps
        fp = reduced_forces(forward_kinematics(tree, q + dq))
        fm = reduced_forces(forward_kinematics(tree, q - dq))
        fd[:, c] = (fp - fm) / (2 * eps)
    np.testing.assert_allclose(K[:, free], fd, rtol=1e-6, atol=1e-6 * np.abs(fd).max())
    assert np.abs(fd[free]).max() > 1.0  # stiff: ~ K / L^2 = 2 N/m per spring


def test_hanging_strand_comes_to_rest_at_the_analytic_sag() -> None:
    """Five nodes 5 cm apart hang from a world point (node 0 attached).  Spring j
    carries the weight of the n - j nodes below it; V = K/2 eps^2 gives the tension
    K eps / L (eq. 2.82), so spring j stretches by (n - j) m g L^2 / K and node k
    rests at z_k = -sum_{j<=k} (L + (n - j) m g L^2 / K).  Linearly implicit Euler
    (h = 5e-2 s, 150 steps) dissipates the vertical oscillation (slowest mode 22 rad/s:
    factor 1/(1 + w^2 h^2) = 0.45 per step in energy) and stops there, since its fixed
    point is f_r = 0 exactly: to 1e-9 m, for a sag of 24 mm; the nodes stay on the
    vertical line (the sideways modes are never excited)."""
    n, L, m, K = 5, 0.05, 1e-3, 1e-2
    strand = Strand("s", line_of_nodes([0, 0, 0], [0, 0, -(n - 1) * L], n), m, K, 0.0, {0: WORLD})
    anchor = Body("anchor", 1.0, np.ones(3))
    base = Scene("hang", (anchor,), (JointSpec("weld", "fixed", None, "anchor"),))
    scene = attach_strands(base, [strand])
    final = _run(scene, 5e-2, 150)[-1]
    x = node_positions(scene, final.E, strand)
    j = np.arange(1, n)
    z = -np.cumsum(L + (n - j) * m * G * L**2 / K)
    np.testing.assert_allclose(x[1:, 2], z, atol=1e-9)
    np.testing.assert_allclose(x[:, :2], 0.0, atol=1e-12)
    assert -z[-1] - (n - 1) * L > 0.02
    assert np.abs(np.asarray(final.qdot)).max() < 1e-8


@pytest.mark.parametrize("h", [5e-3, 2e-2])
def test_linearly_implicit_step_dissipates_like_backward_euler(h: float) -> None:
    """One free node on an axial spring below a world point, no gravity, started at
    rest length with 0.1 m/s along the spring: the motion is the linear oscillator
    w^2 = K / (m L^2), and the linearly implicit step (eq. 2.73–2.75, exact stiffness)
    is backward Euler on it, whose map is normal in (w u, v) with singular values
    1/sqrt(1 + w^2 h^2): the energy is E_0 (1 + w^2 h^2)^-n after n steps, to 1e-10
    relative (w h = 0.45 and 1.8 here)."""
    L, m, K = 0.05, 1e-3, 1e-2
    strand = Strand("s", line_of_nodes([0, 0, 0], [0, 0, -L], 2), m, K, 0.0, {0: WORLD})
    anchor = Body("anchor", 1.0, np.ones(3))
    base = Scene("osc", (anchor,), (JointSpec("weld", "fixed", None, "anchor"),))
    scene = _with_velocity(attach_strands(base, [strand]), "s_node1", [0, 0, -0.1], False)
    tree = Tree.from_scene(scene)
    states = _run(scene, h, 40)
    e = np.array([_energy(tree, s) for s in states])
    w2 = K / (m * L**2)
    expected = e[0] * (1 + w2 * h * h) ** -np.arange(len(e))
    # once the energy has decayed below 1e-12 E_0 the round-off of q (~1e-17 m) dominates
    np.testing.assert_allclose(e, expected, rtol=1e-10, atol=1e-12 * e[0])
    assert e[0] == pytest.approx(0.5 * m * 0.1**2, rel=1e-12)


def test_scene_12_without_gravity_loses_energy_at_first_order_in_h() -> None:
    """redmax-mass-springs without gravity, link 0 spun at 3 rad/s, 0.05 s: the total
    energy (links + nodes + springs) never rises from one step to the next (to 1e-12 of
    E_0), and the energy the linearly implicit step removes is O(h) with an O(h^2)
    correction: for h = 2e-3, 1e-3, 5e-4 s the loss ratios of successive halvings
    (measured 1.81, 1.88; 1.94 at the next halving) rise towards 2, their gap to 2
    shrinking by about half (measured 0.60)."""
    scene = _with_velocity(SCENARIOS["redmax-mass-springs"].build(), "joint0", [3.0], False)
    tree = Tree.from_scene(scene)
    loss = []
    for h in (2e-3, 1e-3, 5e-4):
        e = np.array([_energy(tree, s) for s in _run(scene, h, round(0.05 / h))])
        assert np.diff(e).max() < 1e-12 * e[0]
        loss.append(e[0] - e[-1])
    r1, r2 = loss[0] / loss[1], loss[1] / loss[2]
    assert 1.75 < r1 < r2 < 2.0
    assert 2.0 - r2 < 0.7 * (2.0 - r1)


def test_scene_12_strands_stay_attached() -> None:
    """redmax-mass-springs with gravity over its 1 s (200 steps of 5e-3 s): every
    attached node sits on its body point (link 1's tip, the two link centres) to 1e-12
    m and the world-attached end stays at (0.3, 0, 0.1) m while the chain falls, the
    free node swings and the springs stretch; node masses are the strand mass over its
    nodes (1/3 g, 1/2 g) and the spring constants K / L."""
    scene = SCENARIOS["redmax-mass-springs"].build()
    spec = SCENARIOS["redmax-mass-springs"]
    assert spec.formulations == ("reduced",)
    masses = {b.name: b.mass for b in scene.bodies}
    assert masses["strand0_node1"] == pytest.approx(1e-3 / 3)
    assert masses["strand1_node0"] == pytest.approx(1e-3 / 2)
    final = _run(scene, scene.dt, 200)[-1]
    E = final.E

    def point(body: str, x: list[float]) -> np.ndarray:
        return (E[scene.body_index(body)] @ np.r_[x, 1.0])[:3]

    pos = {b.name: E[i, :3, 3] for i, b in enumerate(scene.bodies)}
    np.testing.assert_allclose(pos["strand0_node2"], point("link1", [0.05, 0, 0]), atol=1e-12)
    np.testing.assert_allclose(pos["strand1_node0"], point("link0", [0, 0, 0]), atol=1e-12)
    np.testing.assert_allclose(pos["strand1_node1"], point("link1", [0, 0, 0]), atol=1e-12)
    springs = scene.forces
    np.testing.assert_allclose(springs[0].point1, [0.3, 0, 0.1])
    assert springs[0].spring_constant == pytest.approx(1e-2 / springs[0].rest_length)
    assert np.linalg.norm(pos["strand0_node1"] - [0.25, 0, 0.05]) > 5e-3  # the free node moved
    assert np.linalg.norm(point("link1", [0.05, 0, 0]) - [0.2, 0, 0]) > 1e-2  # the tip fell


def test_bad_strands_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="n >= 2"):
        Strand("s", np.zeros((1, 3)), 1.0, 1.0)
    with pytest.raises(ConfigurationError, match="coincide"):
        Strand("s", np.zeros((2, 3)), 1.0, 1.0)
    with pytest.raises(ConfigurationError, match="out of range"):
        Strand("s", line_of_nodes([0, 0, 0], [1, 0, 0], 2), 1.0, 1.0, attachments={5: "b"})
    bodies, specs = _chain(1, "R", "y", (0.0,))
    scene = Scene("c", tuple(bodies), tuple(specs))
    bad = Strand("s", line_of_nodes([0, 0, 0], [1, 0, 0], 2), 1.0, 1.0, attachments={0: "nope"})
    with pytest.raises(ConfigurationError, match="no body 'nope'"):
        attach_strands(scene, [bad])
