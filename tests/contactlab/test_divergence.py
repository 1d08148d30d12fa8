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
    # box on box: the smaller of the two diameters; box on the world: its own diameter
    bound = 2 * min(r[0], r[1])
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
