"""MJCF dynamics against MuJoCo's own: armature, joint springs and dampers, actuators,
several joints in one body and massless intermediate bodies give the mass matrix of
``mj_fullM``, the bias of ``qfrc_bias`` and the accelerations of ``mj_forward`` at matched
states, to round-off (1e-9 relative)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="MJCF import needs the mjcf extra (mujoco)")

from contactlab.errors import ConfigurationError  # noqa: E402
from contactlab.reduced import dynamics as dyn  # noqa: E402
from contactlab.reduced.kinematics import forward_kinematics  # noqa: E402
from contactlab.reduced.mjcf import load_mjcf  # noqa: E402
from contactlab.reduced.mjcf_parts import MJCFWarning  # noqa: E402
from contactlab.reduced.model import COMPILED_AHEAD, Model  # noqa: E402
from contactlab.reduced.recursive import forward_dynamics_recursive  # noqa: E402
from contactlab.reduced.tree import Tree  # noqa: E402
from contactlab.simulator import Simulator  # noqa: E402

ARM = Path(__file__).parents[3] / "benchmarks" / "models" / "arm.xml"
KERNELS = ["numba"] + (["c"] if COMPILED_AHEAD else [])


def _mujoco(path_or_xml: str | Path) -> tuple[object, object]:
    text = str(path_or_xml)
    if text.lstrip().startswith("<"):
        model = mujoco.MjModel.from_xml_string(text)
    else:
        model = mujoco.MjModel.from_xml_path(text)
    # the smooth dynamics are compared: no contacts or joint limits; frictionloss is
    # reported, not imported, so MuJoCo's is switched off too
    bits = mujoco.mjtDisableBit
    model.opt.disableflags |= int(
        bits.mjDSBL_FRICTIONLOSS | bits.mjDSBL_CONTACT | bits.mjDSBL_LIMIT
    )
    return model, mujoco.MjData(model)


def _full_mass(model: object, data: object) -> np.ndarray:
    M = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, M)
    return M


def _quiet_load(source: str | Path, **options: object):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MJCFWarning)
        return load_mjcf(source, **options)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("kernels", KERNELS)
def test_arm_with_armature_has_mujocos_mass_matrix_bias_and_accelerations(kernels):
    # a UR5e-like arm: armature 0.02-0.1 on every joint (12 % of M's diagonal at the wrist),
    # damping, a joint spring with springref, servos with and without force ranges, motors
    scene = _quiet_load(ARM)
    model, data = _mujoco(ARM)
    ours = Model.from_scene(scene, kernels=kernels)
    tree = Tree.from_scene(scene)
    rng = np.random.default_rng(7)
    armature_share = []
    for _ in range(5):
        q, qd = rng.uniform(-2.5, 2.5, 6), rng.uniform(-2, 2, 6)
        data.qpos[:], data.qvel[:] = q, qd
        mujoco.mj_forward(model, data)
        M = _full_mass(model, data)
        assert _rel(ours.mass_matrix(q), M) < 1e-9
        assert _rel(dyn.mass_matrix(forward_kinematics(tree, q, qd)), M) < 1e-9
        armature_share.append(np.max(model.dof_armature / np.diag(M)))
        # bias: Coriolis and gravity, plus the springs, dampers and actuators contactlab
        # keeps as joint forces (MuJoCo's qfrc_passive and qfrc_actuator)
        tau = scene.joint_torque(0.0, q, qd)
        mine = ours.bias_forces(q, qd) - tau
        theirs = data.qfrc_bias - data.qfrc_passive - data.qfrc_actuator
        assert _rel(mine, theirs) < 1e-9
        assert _rel(ours.forward_dynamics(q, qd, tau), data.qacc) < 1e-9
        assert _rel(forward_dynamics_recursive(tree, q, qd, tau), data.qacc) < 1e-9
    assert max(armature_share) > 0.1  # the armature is a real part of M here


def test_armature_is_rotor_kinetic_energy_in_the_reduced_step():
    # the reduced step's M and momentum carry the armature: with gravity off and no drive,
    # a single hinge with rotor inertia a keeps (I + a) qdot constant
    xml = """<mujoco><option gravity="0 0 0" timestep="0.001"/><worldbody><body>
      <joint type="hinge" axis="0 0 1" armature="0.3"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/></body></worldbody></mujoco>"""
    scene = load_mjcf(xml)
    model, data = _mujoco(xml)
    mujoco.mj_forward(model, data)
    I_total = _full_mass(model, data)[0, 0]
    np.testing.assert_allclose(I_total, 2 * (0.4**2 + 0.2**2) / 12 + 0.3, rtol=1e-12)
    spec = scene.joints[0]
    scene = scene.with_(joints=(type(spec)(**{**spec.__dict__, "qdot0": [2.0]}),))
    run = Simulator(scene, "reduced", "frictionless", "kkt").run(steps=50)
    np.testing.assert_allclose(run.trajectory["qdot"][-1], [2.0], rtol=1e-12)


def test_maximal_formulation_refuses_armature_naming_the_joint():
    scene = _quiet_load(ARM)
    with pytest.raises(ConfigurationError, match="joint 'shoulder_pan' has armature"):
        Simulator(scene, "maximal")


#: a body on two hinges about different points and a slide, then a chain split by hand
#: through a light link (1 mg) with a hinge, and a body with two hinges
CHAINS = """<mujoco><option gravity="0 -3 -9.81"/>
  <default><joint damping="0.2" armature="0.01"/></default>
  <worldbody>
    <body name="hip" pos="0.1 0 1" quat="0.9 0.1 0.3 0">
      <joint name="hx" type="hinge" axis="1 0 0" pos="0 0 0.1"/>
      <joint name="hy" type="hinge" axis="0 1 0.2" pos="0.05 0 0" stiffness="3" springref="0.2"/>
      <joint name="hs" type="slide" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.4" size="0.05"/>
      <body name="knee_frame" pos="0 0.02 -0.4" quat="0.8 0 0.6 0">
        <inertial pos="0 0 0" mass="1e-6" diaginertia="1e-9 1e-9 1e-9"/>
        <joint name="knee" type="hinge" axis="0 1 0" pos="0 0 0.01"/>
        <body name="shin" pos="0.03 0 0">
          <joint name="twist" type="hinge" axis="0 0 1"/>
          <joint name="roll" type="hinge" axis="1 0 0" pos="0 0.01 -0.1"/>
          <geom type="box" size="0.04 0.05 0.2" pos="0 0 -0.2"/>
        </body>
      </body>
    </body>
  </worldbody></mujoco>"""


@pytest.mark.parametrize("kernels", KERNELS)
def test_several_joints_in_a_body_and_massless_links_move_as_in_mujoco(kernels):
    scene = load_mjcf(CHAINS)
    assert [(j.name, j.child) for j in scene.joints] == [
        ("hx+hy+hs", "hip"),
        ("knee", "knee_frame"),
        ("twist+roll", "shin"),
    ]
    model, data = _mujoco(CHAINS)
    ours = Model.from_scene(scene, kernels=kernels)
    assert not ours.has_other_joints  # expanded to compiled revolute and prismatic nodes
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd = rng.uniform(-1.5, 1.5, 6), rng.uniform(-2, 2, 6)
        data.qpos[:], data.qvel[:] = q, qd
        mujoco.mj_forward(model, data)
        assert _rel(ours.mass_matrix(q), _full_mass(model, data)) < 1e-9
        assert _rel(ours.bias_forces(q, qd), data.qfrc_bias - data.qfrc_passive) < 1e-9
        assert _rel(ours.forward_dynamics(q, qd), data.qacc) < 1e-9
        # the bodies are where MuJoCo puts them
        E = forward_kinematics(Tree.from_scene(scene), q, qd).E
        np.testing.assert_allclose(E[:, :3, 3], data.xipos[1:], atol=1e-12)
        np.testing.assert_allclose(E[:, :3, :3], data.ximat[1:].reshape(-1, 3, 3), atol=1e-12)


#: a massless body on a hinge with one body welded to it (MuJoCo compiles it: the welded
#: body gives the joint mass) and a pendulum hanging from the massless body
MASSLESS = """<mujoco><worldbody>
  <body name="arm" pos="0 0 1">
    <joint name="shoulder" type="hinge" axis="0 1 0" pos="0 0 0.05" armature="0.02"/>
    <body name="weight" pos="0.3 0 0" quat="0.9 0 0.2 0.1">
      <geom type="box" size="0.05 0.04 0.03" mass="1.5"/></body>
    <body name="link" pos="0 0.1 -0.2">
      <joint name="elbow" type="hinge" axis="1 0 0"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/></body>
  </body></worldbody></mujoco>"""


@pytest.mark.parametrize("kernels", KERNELS)
def test_massless_body_on_a_joint_moves_the_body_welded_to_it_as_in_mujoco(kernels):
    scene = load_mjcf(MASSLESS)
    assert [(j.name, j.parent, j.child) for j in scene.joints] == [
        ("shoulder", None, "weight"),
        ("elbow", "weight", "link"),
    ]
    model, data = _mujoco(MASSLESS)
    ours = Model.from_scene(scene, kernels=kernels)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd = rng.uniform(-2, 2, 2), rng.uniform(-2, 2, 2)
        data.qpos[:], data.qvel[:] = q, qd
        mujoco.mj_forward(model, data)
        assert _rel(ours.mass_matrix(q), _full_mass(model, data)) < 1e-9
        assert _rel(ours.bias_forces(q, qd), data.qfrc_bias) < 1e-9
        E = forward_kinematics(Tree.from_scene(scene), q, qd).E
        np.testing.assert_allclose(E[:, :3, 3], data.xipos[[2, 3]], atol=1e-12)


def _constrained(scene, q, qd, tau=None):
    from contactlab.reduced.constrained_dynamics import constrained_acceleration
    from contactlab.reduced.constraints import scene_constraints

    tree = Tree.from_scene(scene)
    cons = scene_constraints(scene, tree, "off")
    return constrained_acceleration(tree, q, qd, 0.0, cons, tau)[0]


#: the hardest constraint MuJoCo makes: impedance 0.9999 (its maximum), so its
#: constraint force is that of the hard constraint within (1 - d)/d = 1e-4 relative
HARD = 'solref="0.002 1" solimp="0.9999 0.9999 0.001 0.5 2"'


def test_joint_equality_is_a_coupling_with_mujocos_constrained_accelerations():
    xml = f"""<mujoco><worldbody>
      <body name="a" pos="0 0 1"><joint name="ja" type="hinge" axis="0 1 0" ref="0.2"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="b" pos="0.3 0 0"><joint name="jb" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/></body></body>
      </worldbody><equality>
      <joint joint1="jb" joint2="ja" polycoef="0.1 -0.5 0 0 0" {HARD}/></equality></mujoco>"""
    scene = load_mjcf(xml)
    (coupling,) = scene.constraints
    assert (coupling.joint_a, coupling.joint_b, coupling.ratio, coupling.offset) == (
        "ja",
        "jb",
        -0.5,
        0.1,
    )
    model, data = _mujoco(xml)
    q = np.array([0.4, 0.1 - 0.5 * 0.4])  # on the constraint: q_b = 0.1 - 0.5 q_a
    qd = np.array([1.0, -0.5])
    data.qpos[:], data.qvel[:] = q + model.qpos0, qd
    mujoco.mj_forward(model, data)
    qdd = _constrained(scene, q, qd)
    assert abs(qdd[1] + 0.5 * qdd[0]) < 1e-12  # the coupling holds at acceleration level
    np.testing.assert_allclose(qdd, data.qacc, rtol=1e-3)


def test_connect_equality_closes_a_loop_with_mujocos_constrained_accelerations():
    # a spatial loop: a crank on a hinge, a coupler on a crossed hinge, connected back to a
    # rocker on a ball joint; gravity loads it from rest
    xml = f"""<mujoco><worldbody>
      <body name="crank" pos="0 0 0"><joint name="j1" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.4" size="0.02"/>
        <body name="coupler" pos="0 0 0.4"><joint name="j2" type="hinge" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0.5 0 0.1" size="0.02"/></body></body>
      <body name="rocker" pos="0.5 0.1 0"><joint name="j3" type="ball"/>
        <geom type="capsule" fromto="0 0 0 0 -0.1 0.5" size="0.02"/></body>
      </worldbody><equality>
      <connect body1="coupler" body2="rocker" anchor="0.5 0 0.1" {HARD}/></equality></mujoco>"""
    scene = load_mjcf(xml)
    loop = scene.joints[-1]
    assert (loop.kind, loop.parent, loop.child, loop.closes_loop) == (
        "spherical",
        "coupler",
        "rocker",
        True,
    )
    model, data = _mujoco(xml)
    mujoco.mj_forward(model, data)
    qdd = _constrained(scene, np.zeros(5), np.zeros(5))
    assert np.abs(qdd).max() > 1.0  # the linkage falls: the constraint carries load
    np.testing.assert_allclose(qdd, data.qacc, rtol=0, atol=1e-3 * np.abs(qdd).max())


def test_keyframe_controls_drive_the_actuators_as_in_mujoco():
    # the arm's "home" key: servo targets, a motor command and a velocity servo's target
    # speed (a constant force besides its damper: applied as a joint torque)
    scene = _quiet_load(ARM, keyframe="home")
    model, data = _mujoco(ARM)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    ours = Model.from_scene(scene)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q, qd = rng.uniform(-2.5, 2.5, 6), rng.uniform(-2, 2, 6)
        data.qpos[:], data.qvel[:] = q, qd
        mujoco.mj_forward(model, data)
        assert np.abs(data.qfrc_actuator).max() > 1.0
        tau = scene.joint_torque(0.0, q, qd)
        assert _rel(ours.forward_dynamics(q, qd, tau), data.qacc) < 1e-9


def test_tendon_equality_of_a_fixed_tendon_couples_three_joints_as_in_mujoco():
    # a fixed tendon L = q1 - 2 q2 + 0.5 q3 held at its compiled length (a differential)
    xml = f"""<mujoco><worldbody>
      <body name="a" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
        <body name="b" pos="0.3 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
          <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03"/>
          <body name="c" pos="0.3 0 0"><joint name="j3" type="slide" axis="1 0 0"/>
            <geom type="box" size="0.05 0.05 0.05"/></body></body></body>
      </worldbody>
      <tendon><fixed name="diff"><joint joint="j1" coef="1"/><joint joint="j2" coef="-2"/>
        <joint joint="j3" coef="0.5"/></fixed></tendon>
      <equality><tendon tendon1="diff" {HARD}/></equality></mujoco>"""
    scene = load_mjcf(xml)  # no warning: the tendon has no dynamics of its own
    (constraint,) = scene.constraints
    np.testing.assert_array_equal(constraint.coefficients, [[1.0, -2.0, 0.5]])
    model, data = _mujoco(xml)
    qd = np.array([1.0, 0.25, -1.0])  # on the constraint: 1 - 0.5 - 0.5 = 0
    data.qvel[:] = qd
    mujoco.mj_forward(model, data)
    qdd = _constrained(scene, np.zeros(3), qd)
    assert abs(qdd @ [1.0, -2.0, 0.5]) < 1e-12
    np.testing.assert_allclose(qdd, data.qacc, rtol=0, atol=1e-3 * np.abs(qdd).max())


def test_armature_agrees_with_pinocchios_crba_and_aba():
    pin = pytest.importorskip("pinocchio", reason="Pinocchio is the second peer here")
    from contactlab.reduced.pinocchio_ import to_pinocchio

    xml = """<mujoco><worldbody><body pos="0 0 1">
      <joint type="hinge" axis="0 1 0" armature="0.3"/>
      <geom type="capsule" fromto="0 0 0 .3 0 0" size=".03"/>
      <body pos=".3 0 0"><joint type="slide" axis="1 0 0" armature="0.7"/>
        <geom type="box" size=".05 .05 .05"/></body></body></worldbody></mujoco>"""
    scene = load_mjcf(xml)
    tree = Tree.from_scene(scene)
    peer = to_pinocchio(tree)
    data = peer.createData()
    ours = Model.from_scene(scene)
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, qd, tau = rng.uniform(-1, 1, 2), rng.uniform(-2, 2, 2), rng.uniform(-1, 1, 2)
        M = pin.crba(peer, data, q)
        M = np.triu(M) + np.triu(M, 1).T
        assert _rel(ours.mass_matrix(q), M) < 1e-12
        assert _rel(ours.forward_dynamics(q, qd, tau), pin.aba(peer, data, q, qd, tau)) < 1e-12


def test_joint_ranges_of_a_two_hinge_body_hold_in_a_run():
    # a hip with two limited hinges (one with a ref) falls against its limits under gravity
    xml = """<mujoco><compiler angle="radian"/><option timestep="0.002"/><worldbody>
      <body name="leg" pos="0 0 1">
      <joint name="a" type="hinge" axis="1 0 0" range="-0.3 0.2" ref="0.1"/>
      <joint name="b" type="hinge" axis="0 1 0" range="-0.25 0.4"/>
      <geom type="capsule" fromto="0 0 0 0.2 0.1 -0.4" size="0.03"/></body></worldbody>
      </mujoco>"""
    scene = load_mjcf(xml, joint_limits=True)
    (limit,) = scene.constraints
    np.testing.assert_allclose(limit.lower, [-0.4, -0.25])  # range - ref
    np.testing.assert_allclose(limit.upper, [0.1, 0.4])
    run = Simulator(scene, "reduced", "frictionless", "lemke").run(steps=400)
    q = run.trajectory["q"]
    assert np.all(q >= limit.lower - 1e-6) and np.all(q <= limit.upper + 1e-6)
    assert np.any(
        np.isclose(q[-1], limit.lower, atol=1e-3) | np.isclose(q[-1], limit.upper, atol=1e-3)
    )


def test_weld_equality_holds_a_body_at_its_compiled_pose():
    # a free box welded to the world where it was compiled: the hard weld keeps it still;
    # MuJoCo's weld is soft and lets it sag (by 1.2 % of the free fall here)
    xml = f"""<mujoco><worldbody>
      <body name="box" pos="0.2 0 1" euler="10 20 30"><freejoint/>
        <geom type="box" size="0.1 0.2 0.05" pos="0.05 0 0"/></body>
      </worldbody><equality><weld body1="box" {HARD}/></equality></mujoco>"""
    scene = load_mjcf(xml)
    weld = scene.joints[-1]
    assert (weld.kind, weld.parent, weld.child, weld.closes_loop) == ("fixed", None, "box", True)
    free_fall = forward_dynamics_recursive(Tree.from_scene(scene), np.zeros(6), np.zeros(6))
    qdd = _constrained(scene, np.zeros(6), np.zeros(6))
    np.testing.assert_allclose(qdd, 0.0, atol=1e-12)
    model, data = _mujoco(xml)
    mujoco.mj_forward(model, data)
    assert np.abs(data.qacc).max() < 2e-2 * np.abs(free_fall).max()
