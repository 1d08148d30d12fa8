"""The divergence guard: absurd states stop the run, normal ones do not.

Two kinds of facts:

* the bounds, on both sides: a synthetic state just inside each bound passes
  and one just outside it stops, with the quantity, value and bound named;
* the blow-ups of issue 13 (each verified to be absurd: energy growing by
  orders of magnitude, joints metres apart, a ball 8.8 m into the floor) stop
  at their first absurd step, and run to the end with the guard off.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import divergence as D
from contactlab.errors import DivergenceError
from contactlab.runspec import build_simulator, simulate


def _guard(scenario: str, **params) -> tuple[D.DivergenceGuard, object]:
    sim = build_simulator(scenario, params, solver="osqp")
    state = sim.initial_state()
    initial = dict(sim.formulation.metrics(state))
    return sim._guard(state, initial), sim


def test_pendulum_scales_are_its_size_and_weight():
    guard, sim = _guard("pendulum")
    b = guard.bounds
    scene = sim.scene
    # one body hinged at the origin: L spans the hinge and the body frame, or the body's size
    com = np.linalg.norm(sim.formulation.maximal(sim.initial_state())[0][0, :3, 3])
    assert b.length_scale >= com
    m = scene.bodies[0].mass
    assert b.energy_scale == pytest.approx(9.81 * b.length_scale * m, rel=1e-12)
    assert b.energy_bound == pytest.approx(D.ENERGY_FACTOR * b.energy_scale)
    assert b.drift_bound == max(b.length_scale, D.DRIFT_FLOOR)
    # the hinge at the world: the link may move off it by its own diameter
    assert b.joints.bound == pytest.approx([2 * D.body_radii(scene)[0]])


@pytest.mark.parametrize("side", [-1, 1])
def test_energy_bound_on_both_sides(side):
    guard, _ = _guard("pendulum")
    bound = guard.bounds.energy_bound
    row = {"total_energy": guard.initial_energy + bound * (1 + side * 1e-9), "constraint_error": 0}
    phi = np.zeros((1, 6))
    if side < 0:
        guard.check(3, 0.1, row, phi, None)
        return
    with pytest.raises(DivergenceError, match=r"step 3 \(t = 0.1 s\) diverged: energy gain") as e:
        guard.check(3, 0.1, row, phi, None)
    assert e.value.status == "diverged" and e.value.step == 3
    assert e.value.value == pytest.approx(bound * (1 + 1e-9)) and e.value.bound == bound
    assert "--dt" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("side", [-1, 1])
def test_drift_bound_on_both_sides(side):
    guard, _ = _guard("pendulum")
    bound = guard.bounds.drift_bound
    row = {"total_energy": guard.initial_energy, "constraint_error": bound * (1 + side * 1e-9)}
    if side < 0:
        guard.check(0, 0.001, row, np.zeros((1, 6)), None)
        return
    with pytest.raises(DivergenceError, match="joint/loop drift"):
        guard.check(0, 0.001, row, np.zeros((1, 6)), None)


class _Contacts:
    def __init__(self, depth, a, b):
        self.distance = -np.asarray(depth, dtype=float)
        self.body_a = np.asarray(a)
        self.body_b = np.asarray(b)


@pytest.mark.parametrize("side", [-1, 1])
def test_penetration_bound_is_the_smaller_body(side):
    guard, sim = _guard("box-stack", n=2)
    r = D.body_radii(sim.scene)
    # box on box: the smaller of the two radii (its centre crossed the other's surface);
    # box on the world: its own radius
    bound = min(r[0], r[1])
    deep = bound * (1 + side * 1e-9)
    contacts = _Contacts([0.0, deep], [0, 1], [-1, 0])
    row = {"total_energy": guard.initial_energy, "constraint_error": 0.0}
    phi = np.zeros((2, 6))
    if side < 0:
        guard.check(0, 0.001, row, phi, contacts)
        return
    with pytest.raises(DivergenceError, match="penetration depth") as e:
        guard.check(0, 0.001, row, phi, contacts)
    assert e.value.bound == pytest.approx(bound)


def test_box_radius_is_its_half_diagonal():
    _, sim = _guard("box-stack", n=1)
    box = sim.scene.bodies[0].shapes[0]
    assert D.body_radii(sim.scene)[0] == pytest.approx(np.linalg.norm(box.half_extents))


@pytest.mark.parametrize("side", [-1, 1])
def test_speed_bound_is_the_energy_budget(side):
    guard, sim = _guard("pendulum")
    b = guard.bounds
    t = 0.5
    m = b.masses[0]
    fall = b.gravity * m * (0.5 * b.gravity * t * t)  # released at rest
    v_bound = np.sqrt(2 * ((D.ENERGY_FACTOR + 1) * b.energy_scale + fall) / m)
    phi = np.zeros((1, 6))
    phi[0, 3] = v_bound * (1 + side * 1e-9)
    row = {"total_energy": guard.initial_energy, "constraint_error": 0.0}
    if side < 0:
        guard.check(0, t, row, phi, None)
        return
    with pytest.raises(DivergenceError, match="speed of body 'link") as e:
        guard.check(0, t, row, phi, None)
    assert e.value.bound == pytest.approx(v_bound)


def test_active_scenes_have_no_energy_bound():
    for name in ("redmax-joint-torque", "redmax-hybrid", "sheath"):
        sim = build_simulator(name, formulation="reduced" if name != "sheath" else "maximal")
        assert D.has_active_inputs(sim.scene), name
    _, pendulum = _guard("pendulum")
    assert not D.has_active_inputs(pendulum.scene)
    # joint torques supply energy of unknown amount: no energy bound
    torque = build_simulator("redmax-joint-torque", formulation="reduced")
    state = torque.initial_state()
    guard = torque._guard(state, dict(torque.formulation.metrics(state)))
    assert guard.bounds.energy_bound is None


def test_a_drive_bounds_the_energy_by_what_it_can_supply():
    # jf-crank: the crank turns at |rate| = 4 pi rad/s; every body moving at w L and
    # spinning at w holds K_d, which is added to the scale S of the passive scene
    sim = build_simulator("jf-crank")
    state = sim.initial_state()
    initial = dict(sim.formulation.metrics(state))
    guard = sim._guard(state, initial)
    b = guard.bounds
    w = 4 * np.pi
    m = np.array([body.mass for body in sim.scene.bodies])
    inertia = np.array([np.max(body.inertia) for body in sim.scene.bodies])
    k_d = 0.5 * m.sum() * (w * b.length_scale) ** 2 + 0.5 * inertia.sum() * w**2
    assert D.drive_speeds(sim.scene, 1.0) == (0.0, pytest.approx(w, rel=1e-12))
    passive = initial["kinetic_energy"] + 9.81 * b.length_scale * m.sum()
    assert b.energy_scale == pytest.approx(passive + k_d, rel=1e-9)
    assert b.energy_bound == pytest.approx(D.ENERGY_FACTOR * b.energy_scale)


@pytest.mark.parametrize("side", [-1, 1])
def test_joint_separation_bound_is_the_larger_body(side):
    # spring-chain: 10 x 1 x 1 cm links, each hinge may open by one link diameter
    sim = build_simulator("spring-chain")
    state = sim.initial_state()
    guard = sim._guard(state, dict(sim.formulation.metrics(state)))
    joints = guard.bounds.joints
    r = D.body_radii(sim.scene)
    assert joints.names == tuple(j.name for j in sim.scene.joints)
    assert np.allclose(joints.bound, 2 * r.max()) and np.allclose(joints.initial, 0, atol=1e-12)
    assert 2 * r.max() == pytest.approx(np.linalg.norm([0.1, 0.01, 0.01]))
    E = state.E.copy()
    E[2, :3, 3] += np.array([0.0, 0.0, 1.0]) * joints.bound[2] * (1 + side * 1e-6)
    row = {"total_energy": guard.initial_energy, "constraint_error": 0.0}
    phi = np.zeros((len(E), 6))
    if side < 0:
        guard.check(0, 0.01, row, phi, None, E=E)
        return
    with pytest.raises(DivergenceError, match=r"separation of joint 'joint[23]' \[m\]") as e:
        guard.check(0, 0.01, row, phi, None, E=E)
    assert e.value.bound == pytest.approx(joints.bound[2])


@pytest.mark.parametrize(
    ("scenario", "params", "dt", "what"),
    [
        ("spring-chain", {}, 100.0, "separation of joint"),
        ("jf-crank", {}, 0.5, "separation of joint 'loop_joint'"),
    ],
)
def test_torn_small_mechanisms_stop(scenario, params, dt, what):
    # 10-cm links: joints 0.18-0.21 m apart were "ok" under the former 1 m drift floor
    with pytest.raises(DivergenceError, match=what) as e:
        simulate(scenario, params, dt=dt, steps=4)
    assert e.value.value > e.value.bound


def test_overflowing_scene_is_refused_unless_unguarded():
    from contactlab.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match=r"too large to bound: its length scale"):
        simulate("ball-drop", {"height": 1e300}, steps=2)


# The blow-ups of issue 13, each with the quantity that stops it.
BLOW_UPS = [
    ("chain", {"n_links": 3, "baumgarte": 1e9}, "maximal", "kkt", 0.1, 2.0, "energy gain"),
    ("redmax-spherical", {}, "maximal", "kkt", 5.0, None, "joint/loop drift"),
    ("pendulum", {}, "maximal", "kkt", 100.0, None, "energy gain"),
    ("spring-damper", {}, "maximal", "kkt", 10.0, None, "energy gain"),
    ("ball-drop", {}, "maximal", "osqp", 1.0, None, "penetration depth"),
    ("box-pile", {"n": 5}, "maximal", "osqp", 1.0, None, "penetration depth"),
]


@pytest.mark.parametrize(
    ("scenario", "params", "form", "solver", "dt", "duration", "what"), BLOW_UPS
)
def test_issue_blow_ups_stop(scenario, params, form, solver, dt, duration, what):
    with pytest.raises(DivergenceError, match=what) as e:
        simulate(scenario, params, formulation=form, solver=solver, dt=dt, duration=duration)
    run = e.value.run
    assert run.status == "diverged" and run.n_steps == e.value.step + 1
    assert e.value.value > e.value.bound
    # kept going, the same run reaches its end with an absurd state
    kept = simulate(
        scenario,
        params,
        formulation=form,
        solver=solver,
        dt=dt,
        duration=duration,
        divergence_guard=False,
    )
    assert kept.status != "diverged" and kept.n_steps >= run.n_steps


def test_relative_energy_drift_does_not_hide_a_blow_up():
    # chain, baumgarte 1e9, h = 0.1 s: energy from -0.04 J to ~1e21 J; the old scale (the
    # run's own largest kinetic energy) read ~1; the scene's scale reads ~1e22
    run = simulate(
        "chain",
        {"n_links": 3, "baumgarte": 1e9},
        dt=0.1,
        duration=2.0,
        divergence_guard=False,
    )
    agg = run.aggregates()
    assert agg["energy_drift"] > 1e12
    assert agg["energy_drift_relative"] == pytest.approx(
        agg["energy_drift"] / run.initial_metrics["energy_scale"]
    )
    assert agg["energy_drift_relative"] > 1e10


def test_a_normal_pendulum_is_not_stopped_and_drifts_little():
    run = simulate("pendulum", steps=300)
    assert run.status == "ok"
    assert run.aggregates()["energy_drift_relative"] < 0.05
