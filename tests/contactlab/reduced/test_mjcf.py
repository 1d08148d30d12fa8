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
        "<mujoco><worldbody><body name='b'><joint name='j' type='hinge' frictionloss='1'/>"
        "<geom type='ellipsoid' size='0.1 0.2 0.3'/><geom type='sphere' size='0.1'/>"
        "</body></worldbody><tendon><fixed name='t'><joint joint='j' coef='1'/></fixed>"
        "</tendon></mujoco>"
    )
    with pytest.warns(Warning) as caught:
        scene = load_mjcf(xml)
    lines = sorted(str(w.message) for w in caught)
    assert len(lines) == 3
    assert "ellipsoid geoms not imported (ellipsoid 0 of body 'b')" in lines[0]
    assert "joint frictionloss not imported ('j')" in lines[1]
    assert "tendons not imported ('t')" in lines[2]
    assert len(scene.bodies[0].shapes) == 1  # the sphere; the ellipsoid is left out
    with pytest.raises(
        ConfigurationError,
        match=r"strict=True\):\nMJCF joint frictionloss[^\n]*\nMJCF tendons[^\n]*\nMJCF ellipsoid",
    ):
        load_mjcf(xml, strict=True)
