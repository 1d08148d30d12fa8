"""The ``penalty`` model: analytic rest states, the incline's stick--slip threshold, energy.

- Rest: a ball on the ground settles where ``k delta^p = m g``; the Newton step
  converges to 1e-12 of the momentum scale, so the settled penetration equals
  ``(m g / k)^(1/p)`` to 1e-9 relative (measured 1e-10), in both formulations.
- Incline below ``tan(theta) = mu``: the smooth law's friction
  ``mu f_n u/sqrt(u^2 + v_s^2)`` balances ``m g sin(theta)`` at the creep speed
  ``v_s t / sqrt(1 - t^2)``, ``t = tan(theta)/mu`` (exact for a translating box:
  every corner slips at the same speed, so the friction sums to
  ``mu s(u) m g cos(theta)``); measured to 2e-9, asserted to 1e-6.
- Incline above: the box slides with ``a = g (sin - mu cos)`` up to the law's
  deficit ``mu g cos(theta) v_s^2 / (2 u^2)`` (4e-7 relative at the slowest speed
  sampled); asserted to 1e-6 relative (measured 2e-7).
- Energy: with the forces at the end of the step, backward Euler on a convex
  potential (gravity plus ``k delta_+^(p+1)/(p+1)``) gives
  ``E^+ <= E - m |v^+ - v|^2 / 2``, and the Hunt--Crossley damping and the
  friction only remove energy; so ``E`` never grows, whatever ``h`` against
  ``sqrt(m/k)`` (checked at ``h`` 0.1 to 10 times ``sqrt(m/k)``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.models import make_model, model_names
from contactlab.problem import StepProblem
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

G = 9.81


def _settle(formulation: str, k: float, p: float) -> float:
    scene = get_scenario("ball-drop").build(height=0.01, dt=1e-3, duration=1.0)
    options = {"stiffness": k, "exponent": p, "dissipation": 5.0}
    sim = Simulator(scene, formulation, "penalty", "nsgs", dt=1e-3, model_options=options)
    state = sim.initial_state()
    for i in range(1500):
        state, record = sim.step(state, i)
        assert record.solution.status == "optimal"
    E, phi = sim.formulation.maximal(state)
    assert np.abs(phi).max() < 1e-9  # at rest
    return 0.1 - float(E[0][2, 3])  # radius 0.1, mass 1


@pytest.mark.parametrize("formulation", ["maximal", "reduced"])
def test_linear_spring_rest_penetration(formulation: str) -> None:
    k = 1e5
    delta = _settle(formulation, k, 1.0)
    assert abs(delta - G / k) <= 1e-9 * G / k


def test_hertz_rest_penetration() -> None:
    k = 1e7
    delta = _settle("maximal", k, 1.5)
    expected = (G / k) ** (1.0 / 1.5)
    assert abs(delta - expected) <= 1e-9 * expected


def _incline_speeds(angle: float, mu: float, vs: float, steps: int, h: float) -> np.ndarray:
    scene = get_scenario("box-incline").build(angle_deg=angle, mu=mu)
    options = {"stiffness": 1e6, "exponent": 1.5, "dissipation": 5.0, "stiction_velocity": vs}
    sim = Simulator(scene, "maximal", "penalty", "nsgs", dt=h, model_options=options)
    state = sim.initial_state()
    down = scene.extras["downhill"]
    out = []
    for i in range(steps):
        state, _ = sim.step(state, i)
        E, phi = sim.formulation.maximal(state)
        out.append(float((E[0][:3, :3] @ phi[0][3:]) @ down))
    return np.array(out)


@pytest.mark.parametrize("vs", [1e-3, 1e-2])
def test_incline_below_threshold_creeps_at_the_regularized_speed(vs: float) -> None:
    angle, mu = 20.0, 0.5
    u = _incline_speeds(angle, mu, vs, 400, 2e-3)
    t = np.tan(np.radians(angle)) / mu
    creep = vs * t / np.sqrt(1.0 - t * t)
    assert abs(u[-1] - creep) <= 1e-6 * creep


def test_incline_above_threshold_slides_with_coulomb_acceleration() -> None:
    angle, mu, h = 30.0, 0.3, 2e-3
    u = _incline_speeds(angle, mu, 1e-3, 500, h)
    th = np.radians(angle)
    a = (u[-1] - u[249]) / (250 * h)
    expected = G * (np.sin(th) - mu * np.cos(th))
    assert abs(a - expected) <= 1e-6 * expected


@pytest.mark.parametrize("ratio", [0.1, 1.0, 10.0])
@pytest.mark.parametrize("p", [1.0, 1.5])
def test_energy_never_grows(ratio: float, p: float) -> None:
    """A ball dropped 2 cm with no dissipation, ``h = ratio * sqrt(m / k_eff)``.

    The bound needs the contact in the step problem whenever it closes within the
    step: the collision margin must exceed the travel ``h |u_n|`` of a step (else
    the ball tunnels into the spring unseen); 5 cm here."""
    m, k = 1.0, 1e6
    k_eff = p * k * (m * G / k) ** ((p - 1.0) / p)  # stiffness at the rest penetration
    h = ratio * np.sqrt(m / k_eff)
    scene = get_scenario("ball-drop").build(height=0.02, dt=h, duration=1.0)
    # the contact must be reported before the step that closes it: margin above h |v|
    scene = replace(scene, contact=replace(scene.contact, margin=0.05))
    options = {"stiffness": k, "exponent": p, "dissipation": 0.0}
    sim = Simulator(scene, "maximal", "penalty", "nsgs", dt=h, model_options=options)
    state = sim.initial_state()

    def energy(state) -> float:
        E, phi = sim.formulation.maximal(state)
        z, w, v = E[0][2, 3], phi[0][:3], phi[0][3:]
        delta = max(0.1 - z, 0.0)
        return 0.5 * m * v @ v + 0.5 * w @ (0.004 * w) + m * G * z + k * delta ** (p + 1) / (p + 1)

    e0 = energy(state)
    energies = [e0]
    for i in range(int(0.15 / h)):
        state, _ = sim.step(state, i)
        energies.append(energy(state))
    steps = np.diff(energies)
    assert steps.max() <= 1e-12 * e0
    assert min(energies) < e0  # it hit the ground


def test_registered_and_options_checked() -> None:
    assert "penalty" in model_names()
    with pytest.raises(ConfigurationError, match="stiffness"):
        make_model("penalty", "nsgs", stiffness=-1.0)
    with pytest.raises(ConfigurationError, match="no option"):
        make_model("penalty", "nsgs", stifness=1.0)


def test_limit_rows_refused() -> None:
    import scipy.sparse as sp

    problem = StepProblem(
        h=1e-3, M=sp.identity(6, format="csc"), f=np.zeros(6), v=np.zeros(6),
        L=sp.csr_matrix(np.eye(6)[:1]), l=np.zeros(1),
    )  # fmt: skip
    with pytest.raises(IncompatibleError, match="joint-limit"):
        make_model("penalty", "nsgs").solve(problem, {})
