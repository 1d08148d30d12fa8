"""MJCF import (MuJoCo's compiler): the same pendulum from MJCF and URDF has the same
mass matrix and the same trajectory; MuJoCo's own M(q) agrees; bad models get one
clear error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="MJCF import needs the mjcf extra (mujoco)")

import scenarios  # noqa: E402
from contactlab.errors import ConfigurationError  # noqa: E402
from contactlab.reduced.mjcf import load_mjcf  # noqa: E402
from contactlab.reduced.model import Model  # noqa: E402
from contactlab.reduced.urdf import load_urdf  # noqa: E402
from contactlab.simulator import Simulator  # noqa: E402

DATA = Path(scenarios.__file__).parent / "data"


def test_mjcf_and_urdf_pendulums_have_the_same_mass_matrix_and_trajectory():
    from_mjcf = load_mjcf(DATA / "pendulum.xml")
    from_urdf = load_urdf(DATA / "pendulum.urdf")
    a, b = Model.from_scene(from_mjcf), Model.from_scene(from_urdf)
    # M(q) of a rod about its end: I_yy + m (L/2)^2 = 0.0835417 + 0.25, at every angle
    for q in np.linspace(-3.0, 3.0, 7):
        Ma, Mb = a.mass_matrix(np.array([q])), b.mass_matrix(np.array([q]))
        np.testing.assert_allclose(Ma, Mb, rtol=1e-12, atol=0)
        np.testing.assert_allclose(Ma, [[0.0835417 + 0.25]], rtol=1e-12)
    runs = [
        Simulator(scene, "reduced", "frictionless", "kkt", dt=1e-3).run(steps=500)
        for scene in (from_mjcf, from_urdf)
    ]
    qa, qb = (r.trajectory["q"][:, 0] for r in runs)
    assert abs(qa[-1]) > 0.5  # it swung: the comparison is not of two resting rods
    np.testing.assert_allclose(qa, qb, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        runs[0].trajectory["position"], runs[1].trajectory["position"], rtol=0, atol=1e-12
    )


def test_mass_matrix_agrees_with_mujocos_own():
    # MuJoCo computes M(q) by its own CRB algorithm from the same compiled model
    model = mujoco.MjModel.from_xml_path(str(DATA / "pendulum.xml"))
    data = mujoco.MjData(model)
    ours = Model.from_scene(load_mjcf(DATA / "pendulum.xml"))
    for q in (0.0, 0.7, -2.0):
        data.qpos[:] = q
        mujoco.mj_forward(model, data)
        M = np.zeros((model.nv, model.nv))
        try:  # mujoco >= 3.4: (model, data, dst); earlier: (model, dst, data.qM)
            mujoco.mj_fullM(model, data, M)
        except TypeError:
            mujoco.mj_fullM(model, M, data.qM)
        np.testing.assert_allclose(ours.mass_matrix(np.array([q])), M, rtol=1e-9)


def test_scene_from_mjcf_keeps_bodies_geoms_and_gravity():
    scene = load_mjcf(DATA / "tumble.xml")
    names = [b.name for b in scene.bodies]
    assert names == ["box", "ball", "paddle"]
    box = scene.bodies[0]
    # a 10 cm cube of density 1000: 1 kg, I = m a^2 / 6 about every axis
    np.testing.assert_allclose(box.mass, 1.0, rtol=1e-12)
    np.testing.assert_allclose(box.inertia, np.full(3, 0.01 / 6), rtol=1e-9)
    assert [j.kind for j in scene.joints] == ["free", "free", "revolute"]
    assert len(scene.static_shapes) == 1 and scene.dt == 0.005
    np.testing.assert_allclose(scene.gravity, [0, 0, -9.81])
    # the compiled pose at q = 0 is MuJoCo's
    model = mujoco.MjModel.from_xml_path(str(DATA / "tumble.xml"))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    state = Simulator(scene, "maximal").initial_state()
    np.testing.assert_allclose(state.E[:, :3, 3], data.xipos[1:], atol=1e-12)
    np.testing.assert_allclose(state.E[:, :3, :3], data.ximat[1:].reshape(-1, 3, 3), atol=1e-12)


@pytest.mark.parametrize(
    ("xml", "match"),
    [
        (
            "<mujoco><worldbody><body><joint typo='hinge'/></body></worldbody></mujoco>",
            "cannot compile MJCF",
        ),
        (
            "<mujoco><worldbody><body><joint type='hinge'/><body pos='0 0 1'>"
            "<geom type='sphere' size='0.1'/></body>"
            "<body pos='0 0 -1'><geom type='sphere' size='0.1'/></body></body></worldbody>"
            "</mujoco>",
            r"'body1' has no mass and moves on joints, with 2 bodies with mass welded to it "
            r"\['body2', 'body3'\]",
        ),
    ],
)
def test_bad_models_get_one_clear_error(xml, match):
    with pytest.raises(ConfigurationError, match=match):
        load_mjcf(xml)


def test_unsupported_features_warn_once_each_and_strict_refuses():
    xml = (
        "<mujoco><worldbody><body name='b'><joint name='j' type='hinge'/>"
        "<geom type='ellipsoid' size='0.1 0.2 0.3'/><geom type='sphere' size='0.1'/>"
        "<body name='c' pos='0 0 -0.5'><joint name='jb' type='ball' frictionloss='1'/>"
        "<geom type='sphere' size='0.1'/></body>"
        "</body></worldbody><tendon><fixed name='t' stiffness='10'><joint joint='j' coef='1'/>"
        "</fixed>"
        "</tendon></mujoco>"
    )
    with pytest.warns(Warning) as caught:
        scene = load_mjcf(xml)
    lines = sorted(str(w.message) for w in caught)
    assert len(lines) == 3
    assert "ellipsoid geoms not imported (ellipsoid 0 of body 'b')" in lines[0]
    assert "frictionloss of ball and free joints not imported ('jb')" in lines[1]
    assert (
        "tendon stiffness, damping, frictionloss, armature and limits not imported ('t')"
        in (lines[2])
    )
    assert len(scene.bodies[0].shapes) == 1  # the sphere; the ellipsoid is left out
    with pytest.raises(
        ConfigurationError,
        match=r"strict=True\):\nMJCF frictionloss of ball[^\n]*\n"
        r"MJCF tendon stiffness[^\n]*\nMJCF ellipsoid",
    ):
        load_mjcf(xml, strict=True)


def test_geom_friction_is_the_contact_coefficient_with_mujocos_max_rule():
    xml = (
        "<mujoco><worldbody><geom type='plane' size='1 1 0.1' friction='0.4'/>"
        "<body name='a' pos='0 0 1'><joint type='hinge'/>"
        "<geom type='capsule' fromto='0 0 0 0.3 0 0' size='0.03' friction='0.4'/>"
        "<body name='b' pos='0.3 0 0'><joint type='hinge'/>"
        "<geom type='sphere' size='0.05' friction='0.9 0.01 0.001'/></body></body>"
        "</worldbody></mujoco>"
    )
    scene = load_mjcf(xml)
    a, b = (body.material for body in scene.bodies)
    assert scene.contact.friction(a, "world") == 0.4  # not the default 0.5
    assert scene.contact.friction(b, "world") == 0.9
    assert scene.contact.friction(a, b) == 0.9


def test_contype_conaffinity_filters_that_contactlab_cannot_keep_are_reported():
    body = "<body name='{0}' pos='{1} 0 1'><freejoint/><geom type='sphere' size='0.1' {2}/></body>"
    compatible = body.format("p", 0, "") + body.format("q", 1, "contype='1' conaffinity='3'")
    load_mjcf(f"<mujoco><worldbody>{compatible}</worldbody></mujoco>")  # no warning
    apart = body.format("p", 0, "contype='2' conaffinity='2'") + body.format("q", 1, "")
    with pytest.warns(Warning, match=r"contype/conaffinity filtering not imported \(sphere 0 of"):
        load_mjcf(f"<mujoco><worldbody>{apart}</worldbody></mujoco>")


def test_keyframe_sets_the_initial_pose_and_velocity_of_mujocos_key():
    xml = """<mujoco><worldbody>
      <body name="base" pos="0 0 1"><freejoint/><geom type="box" size="0.2 0.1 0.05"/>
        <body name="leg" pos="0.2 0 0"><joint name="hip" type="hinge" axis="0 1 0" ref="0.3"/>
          <joint name="twist" type="hinge" axis="1 0 0"/>
          <geom type="capsule" fromto="0 0 0 0 0 -0.3" size="0.03"/>
          <body name="foot" pos="0 0 -0.3"><joint name="ball" type="ball"/>
            <geom type="sphere" size="0.05" pos="0.05 0 0"/></body></body></body>
      </worldbody><keyframe>
      <key name="kick" qpos="0.1 -0.2 1.3 0.9 0.1 -0.3 0.2 1.0 -0.4 0.8 0.2 0.4 0.3"
           qvel="0.5 -1 2 0.3 -0.2 0.7 1.5 -2 0.4 -0.6 0.9"/></keyframe></mujoco>"""
    scene = load_mjcf(xml, keyframe="kick")
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    mujoco.mj_resetDataKeyframe(model, data, 0)
    mujoco.mj_forward(model, data)
    state = Simulator(scene, "reduced").initial_state()
    np.testing.assert_allclose(state.E[:, :3, 3], data.xipos[1:], atol=1e-12)
    np.testing.assert_allclose(state.E[:, :3, :3], data.ximat[1:].reshape(-1, 3, 3), atol=1e-12)
    for b in range(1, model.nbody):  # body twists at the centre of mass, body axes
        twist = np.zeros(6)
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_BODY, b, twist, 1)
        np.testing.assert_allclose(state.phi[b - 1], twist, atol=1e-12)
    with pytest.raises(ConfigurationError, match=r"no keyframe 'stand'; keyframes are \['kick'\]"):
        load_mjcf(xml, keyframe="stand")


def test_mesh_geom_becomes_its_convex_hull_and_reports_name_body_and_mesh():
    cube = " ".join(f"{x} {y} {z}" for x in (-1, 1) for y in (-1, 1) for z in (-1, 1))
    inside = "0 0 0 0.5 0.5 0.5"  # interior points: not on the hull
    xml = (
        f"<mujoco><asset><mesh name='cube' vertex='{cube} {inside}' scale='0.1 0.1 0.1'/>"
        "</asset><worldbody>"
        "<body name='block' pos='0 0 1'><freejoint/><geom type='mesh' mesh='cube'/></body>"
        "</worldbody></mujoco>"
    )
    scene = load_mjcf(xml)
    (hull,) = scene.bodies[0].shapes
    assert len(hull.vertices) == 8 and len(hull.faces) == 12
    # 0.2^3 m^3 of water; MuJoCo keeps mesh vertices in float32 (7 digits)
    assert hull.mass_properties(1000.0).mass == pytest.approx(8.0, rel=1e-6)
    # a report names the body and the mesh, not an automatic geom name
    rolling = xml.replace("mesh='cube'/>", "mesh='cube' condim='6'/>")
    with pytest.warns(
        Warning, match=r"\(condim 4, 6\) not imported \(mesh 'cube' of body 'block'\)"
    ):
        load_mjcf(rolling)


def test_unsupported_actuators_are_reported_by_name():
    xml = (
        "<mujoco><worldbody><body><joint name='j' type='hinge'/><geom type='sphere' "
        "size='0.1'/></body></worldbody><actuator><motor name='m' joint='j'/>"
        "<general name='filtered' joint='j' dyntype='filter' dynprm='0.1'/></actuator></mujoco>"
    )
    with pytest.warns(Warning, match=r"MJCF actuators not imported \('filtered'\)"):
        scene = load_mjcf(xml, keyframe=None)
    assert scene.joint_torque is not None  # the motor is kept


def test_armature_and_damping_of_free_and_ball_joints_are_reported():
    xml = (
        "<mujoco><worldbody><body name='b'><freejoint name='root'/><geom type='sphere' "
        "size='0.1'/><body pos='0 0 0.3'><joint name='neck' type='ball' damping='0.1'/>"
        "<geom type='sphere' size='0.1'/></body></body></worldbody></mujoco>"
    )
    with pytest.warns(
        Warning, match=r"armature and damping of ball and free joints not imported \('neck'\)"
    ):
        scene = load_mjcf(xml)
    assert scene.joints[1].damping == 0.0
