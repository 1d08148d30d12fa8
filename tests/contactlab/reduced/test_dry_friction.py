"""Dry friction of joint coordinates (``JointSpec.dry_friction``, MuJoCo's ``frictionloss``).

Facts:

* a lone hinge of inertia ``I`` under a torque ``tau > f`` speeds up at exactly
  ``(tau - f) / I`` (``qdot_n = n h (tau - f) / I``), and under ``tau < f`` stays still;
* a spinning hinge with no torque stops at ``t = I w0 / f`` and stays stopped (no reversal);
* on a two-link arm whose coordinates both slip, the first step's acceleration equals
  MuJoCo's ``qacc`` (its friction-loss forces saturate at the bound, checked) to 1e-9;
* MJCF ``frictionloss`` of hinges becomes the dry friction with no warning line, URDF
  ``<dynamics friction>`` on request; a model or formulation that cannot carry it is
  refused in one line naming the joint.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

from contactlab.errors import ConfigurationError, IncompatibleError  # noqa: E402
from contactlab.reduced.mjcf import load_mjcf  # noqa: E402
from contactlab.reduced.urdf import load_urdf  # noqa: E402
from contactlab.simulator import Simulator  # noqa: E402

H = 1e-3


def _arm(frictionloss: tuple[float, float], links: int = 2) -> str:
    """Hinges about z (gravity along -z gives them no torque), links along x."""
    body = ""
    for i in range(links)[::-1]:
        body = (
            f"<body name='l{i}' pos='{0.0 if i == 0 else 0.5} 0 0'>"
            f"<joint name='j{i}' type='hinge' axis='0 0 1' frictionloss='{frictionloss[i]}'/>"
            f"<inertial pos='0.25 0 0' mass='{1.0 + i}' diaginertia='0.02 0.03 {0.03 + 0.01 * i}'/>"
            f"{body}</body>"
        )
    return f"<mujoco><option timestep='{H}'/><worldbody>{body}</worldbody></mujoco>"


def _scene(xml: str, tau: np.ndarray):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # frictionloss of hinges is carried: no warning line
        scene = load_mjcf(xml)
    return dataclasses.replace(scene, joint_torque=lambda t, q, qd: tau, collision="none")


def _run(scene, steps: int, solver: str = "pgs", qdot0=None):
    sim = Simulator(
        scene, "reduced", "box-friction", solver, dt=H, model_options={"solver_tol": 1e-12}
    )
    state = sim.initial_state()
    if qdot0 is not None:
        state = sim.formulation._state(0.0, state.q, np.asarray(qdot0, dtype=float))
    out = [state]
    for k in range(steps):
        state, _ = sim.step(state, k)
        out.append(state)
    return out


def _lone_hinge(fl: float) -> str:
    return (
        f"<mujoco><worldbody><body name='b'><joint name='j' type='hinge' axis='0 0 1' "
        f"frictionloss='{fl}'/><inertial pos='0 0 0' mass='1' diaginertia='1 1 0.5'/>"
        "</body></worldbody></mujoco>"
    )


@pytest.mark.parametrize("solver", ["pgs", "osqp"])
def test_a_lone_hinge_slips_at_tau_minus_f_over_i_and_sticks_below(solver):
    inertia, fl = 0.5, 0.3
    slip = _run(_scene(_lone_hinge(fl), np.array([0.8])), 20, solver)
    for n, state in enumerate(slip):
        assert state.qdot[0] == pytest.approx(n * H * (0.8 - fl) / inertia, rel=1e-9, abs=1e-12)
    stick = _run(_scene(_lone_hinge(fl), np.array([-0.29])), 20, solver)
    assert max(abs(s.qdot[0]) for s in stick) < 1e-12
    assert abs(stick[-1].q[0]) < 1e-12


def test_a_spinning_hinge_stops_at_i_w0_over_f_and_stays_stopped():
    inertia, fl, w0 = 0.5, 0.3, 1.2
    states = _run(_scene(_lone_hinge(fl), np.array([0.0])), 2500, qdot0=[w0])
    w = np.array([s.qdot[0] for s in states])
    t = np.array([s.t for s in states])
    stop = inertia * w0 / fl  # 2.0 s
    moving = t[w > 1e-12]
    # the step that reaches zero is the first with t >= stop (to one step)
    assert moving.max() == pytest.approx(stop - H, abs=H)
    np.testing.assert_allclose(
        w[t < stop - H / 2], w0 - fl / inertia * t[t < stop - H / 2], atol=1e-9
    )
    assert np.all(w >= -1e-12) and np.all(np.abs(w[t > stop + H / 2]) < 1e-12)
    # the angle covered is the discrete sum of the velocities (q advances by h qdot^+)
    assert states[-1].q[0] == pytest.approx(H * w[1:].sum(), rel=1e-12)


def test_two_slipping_hinges_accelerate_as_mujocos_saturated_frictionloss():
    fl = (0.4, 0.25)
    tau = np.array([3.0, -2.0])
    xml = _arm(fl)
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qfrc_applied[:] = tau
    mujoco.mj_forward(model, data)
    # premise: MuJoCo's friction-loss forces are at their bounds (both coordinates slip)
    assert model.nv == 2 and data.nefc == 2
    np.testing.assert_allclose(np.abs(data.efc_force), fl, rtol=1e-12)
    scene = _scene(xml, tau)
    for solver in ("pgs", "osqp"):
        first = _run(scene, 1, solver)[1]
        np.testing.assert_allclose(first.qdot / H, data.qacc, rtol=1e-9)
    # and without friction loss the arm accelerates faster: the bound changed the motion
    free = mujoco.MjModel.from_xml_string(_arm((0.0, 0.0)))
    fdata = mujoco.MjData(free)
    fdata.qfrc_applied[:] = tau
    mujoco.mj_forward(free, fdata)
    assert np.abs(fdata.qacc - data.qacc).max() > 0.1 * np.abs(data.qacc).max()


def test_models_and_formulations_that_cannot_carry_it_are_refused_naming_the_joint():
    scene = _scene(_lone_hinge(0.3), np.array([0.0]))
    with pytest.raises(IncompatibleError, match=r"dry friction \(j\).*--model box-friction"):
        Simulator(scene, "reduced", "coulomb", "ipm", dt=H)
    with pytest.raises(IncompatibleError, match=r"dry friction \(j\)"):
        Simulator(scene, "reduced", "box-friction", "nsgs", dt=H)
    with pytest.raises(ConfigurationError, match=r"joint 'j' has dry friction.*reduced"):
        Simulator(scene, "maximal", "box-friction", "pgs", dt=H)


def test_urdf_dynamics_friction_is_carried_on_request_and_reported_otherwise():
    text = """<robot name="r">
      <link name="a"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <link name="b"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="0.5"/></inertial></link>
      <joint name="j" type="continuous"><parent link="a"/><child link="b"/>
        <axis xyz="0 0 1"/><dynamics friction="0.3"/></joint></robot>"""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        carried = load_urdf(text, dry_friction=True, collision="none")
    assert not [str(w.message) for w in record if "friction" in str(w.message)]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        left = load_urdf(text, collision="none")
    assert [str(w.message) for w in record if "friction" in str(w.message)] == [
        "URDF robot 'r': <dynamics friction> (Coulomb joint friction) not represented "
        "(load with dry_friction=True to carry it): 'j'"
    ]
    joint = {j.name: j for j in carried.joints}["j"]
    assert joint.dry_friction.tolist() == [0.3]
    assert {j.name: j for j in left.joints}["j"].dry_friction.tolist() == [0.0]
    scene = dataclasses.replace(carried, joint_torque=lambda t, q, qd: np.array([0.8]))
    states = _run(scene, 5)
    assert states[-1].qdot[0] == pytest.approx(5 * H * (0.8 - 0.3) / 0.5, rel=1e-9)


def test_dry_friction_values_are_checked():
    from contactlab.scene import JointSpec

    with pytest.raises(ConfigurationError, match="joint 'j': dry_friction must be finite and >= 0"):
        JointSpec("j", "revolute", None, "b", axis=[0, 0, 1], dry_friction=-1.0)
