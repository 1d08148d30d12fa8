"""Soft constraints by regularization (ArtiSynth notes §0.11).

Facts
-----
* The augmented problem the models receive is the regularized KKT system
  ``[[M, -G^T], [G, C]] (v, lam) = (b, -gamma phi / h)`` (eq. 0.9) solved
  directly: the simulator's step velocities and multipliers agree to 1e-10.
* Zero compliance is the hard constraint: the option set to 0 gives the
  same run bit for bit, and compliance 1e-12 with ``beta = h/2`` (then
  ``gamma = 1``, the dead-beat right-hand side ``-phi/h`` of the hard rows)
  follows the hard chain to 1e-9 m over 0.2 s.
* A body hanging from a compliant ball joint sags by ``m g alpha`` (to 1e-5
  relative once the damped oscillation has settled), whatever the damping.
* A box resting on four compliant contacts sinks by ``m g alpha / 4``, with
  four contact models (frictionless, box friction, Stewart–Trinkle,
  Anitescu–Hart) to 1e-3 relative.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.scenario import get_scenario
from contactlab.scene import Body, JointSpec, Scene
from contactlab.simulator import Simulator

G = 9.81


def _hanging(mass: float = 2.0) -> Scene:
    return Scene(
        name="hang",
        bodies=(Body("a", mass=mass, inertia=[0.1, 0.2, 0.3]),),
        joints=(JointSpec("ball", "spherical", None, "a"),),
        initial_E=se3.make_transform()[None],
        initial_phi=np.zeros((1, 6)),
        dt=0.005,
    )


@pytest.mark.parametrize("beta", [0.01, 0.04])
def test_compliant_joint_sags_by_force_times_compliance(beta: float) -> None:
    """alpha = 1e-4 m/N, m = 2 kg: omega = 71 rad/s; the slowest mode decays at
    25/s (beta = 0.01) or 29/s (beta = 0.04, overdamped), so after 0.6 s what
    remains of the initial offset (the sag itself) is below e^-15 = 3e-7."""
    alpha, mass = 1e-4, 2.0
    run = Simulator(
        _hanging(mass),
        "maximal",
        "frictionless",
        "kkt",
        formulation_options={"compliance": alpha, "compliance_damping": beta},
    ).run(duration=0.6)
    assert run.status == "ok"
    z = run.trajectory["position"][-1, 0, 2]
    assert z == pytest.approx(-mass * G * alpha, rel=1e-5)
    assert run.steps["constraint_error"].iloc[-1] == pytest.approx(mass * G * alpha, rel=1e-5)


def test_augmented_step_is_the_regularized_kkt_system() -> None:
    """A 3-link chain with one soft and two hard joints, two steps in (non-zero errors)."""
    scene = get_scenario("chain").build()
    names = [j.name for j in scene.joints]
    options = {"compliance": {names[1]: 1e-3}, "compliance_damping": {names[1]: 0.004}}
    sim = Simulator(scene, "maximal", "frictionless", "kkt", dt=0.01, formulation_options=options)
    state = sim.initial_state()
    for i in range(2):
        state, _ = sim.step(state, i)
    state_next, record = sim.step(state, 2)
    p, h = record.problem, 0.01
    n = 6 * scene.n_bodies
    form = sim.formulation
    M = p.M.toarray()[:n, :n]
    b = p.f[:n]
    rows = form.rows(state.E, state.phi)
    Gm = rows.G.toarray()
    soft = np.array([o == names[1] for o in form.row_owners])
    gam = 1.0 / (0.5 + 0.004 / h)
    C = np.where(soft, gam * 1e-3 / h**2, 0.0)
    rhs = np.where(soft, -gam * rows.g / h, -rows.g / h)  # hard rows: dead-beat Baumgarte
    m = Gm.shape[0]
    kkt = np.block([[M, -Gm.T], [Gm, np.diag(C)]])
    x = np.linalg.solve(kkt, np.r_[b, rhs])
    np.testing.assert_allclose(record.solution.v[:n], x[:n], atol=1e-10)
    np.testing.assert_allclose(record.solution.lambda_G, x[n : n + m], atol=1e-10)
    np.testing.assert_allclose(state_next.phi.reshape(-1), x[:n], atol=1e-10)


def test_zero_compliance_is_the_hard_constraint() -> None:
    scene = get_scenario("chain").build()
    h = 0.01

    def run(options):
        sim = Simulator(scene, "maximal", "frictionless", "kkt", dt=h, formulation_options=options)
        return sim.run(steps=20).trajectory["position"]

    hard = run({})
    assert np.array_equal(run({"compliance": 0.0}), hard)
    nearly = run({"compliance": 1e-12, "compliance_damping": h / 2})
    assert np.abs(nearly - hard).max() < 1e-9
    assert np.abs(run({"compliance": 1e-3}) - hard).max() > 1e-4  # and compliance matters


@pytest.mark.parametrize(
    ("model", "solver"),
    [
        ("frictionless", "ppivot"),
        ("box-friction", "pgs"),
        ("stewart-trinkle", "lemke"),
        ("anitescu-hart", "osqp"),
    ],
)
def test_box_on_compliant_contacts_sinks_by_weight_times_compliance(model, solver) -> None:
    """alpha = 1e-5 m/N per contact, beta = 10 ms, 1 kg: four parallel springs of
    1e5 N/m damped at 1e3 N s/m each, overdamped (ratio 3.2), slow mode 100/s:
    settled to e^-30 after 0.3 s."""
    alpha = 1e-5
    scene = get_scenario("box-stack").build(n=1)
    mass = scene.bodies[0].mass
    run = Simulator(
        scene,
        "maximal",
        model,
        solver,
        dt=0.01,
        formulation_options={"compliance": {"contacts": alpha}, "compliance_damping": 0.01},
    ).run(duration=0.3)
    assert run.status in ("ok", "inaccurate")
    assert run.steps["n_contacts"].iloc[-1] == 4
    assert run.steps["penetration"].iloc[-1] == pytest.approx(mass * G * alpha / 4, rel=1e-3)


def test_bad_compliance_is_one_clear_line() -> None:
    scene = _hanging()
    with pytest.raises(ConfigurationError, match="neither a joint of the scene nor 'contacts'"):
        Simulator(
            scene, "maximal", "frictionless", "kkt", formulation_options={"compliance": {"x": 1.0}}
        )
    with pytest.raises(ConfigurationError, match="compliance .* must be a finite number >= 0"):
        Simulator(scene, "maximal", "frictionless", "kkt", formulation_options={"compliance": -1.0})
