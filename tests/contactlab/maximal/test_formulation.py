"""The maximal formulation on jointed chains: energy, drift, reactions, bad input.

Facts (3-link chain of 10 x 1 x 1 cm links on hinges about y, released at
45 deg, h = 1e-2, 10 s; numbers measured when the test was written)
---------------------------------------------------------------------
* Energy, velocity-level Baumgarte: the total energy never rises above its
  initial value (largest excess 0 J) and there is no secular growth: the
  chain loses 5.8e-3 J in the first 5 s and 1.2e-3 J in the next 5 s (the
  first-order projected step is dissipative at this h, whose ``h omega``
  reaches 0.25; its peak kinetic energy is 6.6e-3 J).
* Drift with velocity-level Baumgarte (gamma = 1/h): at most 1.8e-3 m in
  the first 5 s and 7.0e-4 m in the last 5 s: bounded.  Without
  stabilization it grows: 2.8e-2 m after 1 s, 6.9e-2 m after 10 s; its mean
  over the last 5 s (6.4e-2 m) is 1.6 times that of the first 5 s.
  Acceleration level (alpha = beta = 10): at most 1.7e-2 m, then 2.8e-3 m.
* A pendulum hanging at rest: the hinge's reaction wrench on the link is the
  weight reversed, to 1e-12.
* Energy loss converges at first order and drift at second order in h.
* Redundant joints raise SingularSystemError naming them.
"""

from __future__ import annotations

import numpy as np
import pytest
from maximal_stepping import kkt_step, run

from contactlab import se3
from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.formulation import make_formulation
from contactlab.maximal import MaximalFormulation
from contactlab.scene import Body, JointSpec, Scene

LINK = Body("link", 0.01, [0.01 / 12 * 2e-4, 0.01 / 12 * 0.0101, 0.01 / 12 * 0.0101])


def chain(n: int = 3, angle: float = np.pi / 4) -> Scene:
    bodies = tuple(Body(f"l{i}", LINK.mass, LINK.inertia) for i in range(n))
    end, start = se3.make_transform(None, [0.05, 0, 0]), se3.make_transform(None, [-0.05, 0, 0])
    joints = tuple(
        JointSpec(
            f"j{i}",
            "revolute",
            None if i == 0 else f"l{i - 1}",
            f"l{i}",
            frame_parent=np.eye(4) if i == 0 else end,
            frame_child=start,
            axis=(0.0, 1.0, 0.0),
            q0=[angle],
        )
        for i in range(n)
    )
    return Scene("chain3", bodies, joints)


@pytest.fixture(scope="module")
def runs() -> dict[str, dict[str, np.ndarray]]:
    out = {}
    for stab in ("velocity", "off", "acceleration"):
        _, m = run(MaximalFormulation(chain(), stabilization=stab), 1e-2, 1000, every=10)
        out[stab] = {
            k: np.array([x[k] for x in m])
            for k in ("t", "total_energy", "kinetic_energy", "constraint_error")
        }
    return out


def test_energy_has_no_secular_growth(runs) -> None:
    r = runs["velocity"]
    E, K = r["total_energy"], r["kinetic_energy"]
    assert E.max() - E[0] <= 1e-9
    first, second = E[50] - E[0], E[100] - E[50]
    assert first < 0 and second < 0
    assert abs(second) < 0.3 * abs(first)
    assert E[0] - E.min() < 1.2 * K.max()


def test_drift_bounded_with_baumgarte_and_growing_without(runs) -> None:
    d = runs["velocity"]["constraint_error"]
    assert d[:51].max() < 2e-3
    assert d[51:].max() <= d[:51].max()
    off = runs["off"]["constraint_error"]
    assert off[10] > 10 * d[:51].max()
    assert off[100] > 2 * off[10]
    assert off[51:].mean() > 1.5 * off[1:51].mean()
    acc = runs["acceleration"]["constraint_error"]
    assert acc.max() < 2e-2
    assert acc[51:].max() < acc[:51].max()


def test_hanging_pendulum_reaction_is_the_weight_reversed() -> None:
    body = Body("bob", 2.0, [0.1, 0.2, 0.25])
    hinge = JointSpec(
        "hinge",
        "revolute",
        None,
        "bob",
        frame_child=se3.make_transform(None, [0, 0, 0.5]),
        axis=(1.0, 0.0, 0.0),
    )
    form = make_formulation("maximal", Scene("hang", (body,), (hinge,)))
    state = form.initial_state()
    _, problem, solution = kkt_step(form, state, 1e-3)
    wrench = form.reaction_wrenches(problem, solution)["hinge"][0]
    R = state.E[0, :3, :3]
    assert np.allclose(R @ wrench[3:], [0.0, 0.0, 2.0 * 9.81], atol=1e-12)
    assert np.allclose(
        wrench[:3], 0.0, atol=1e-12
    )  # the support acts through the centre of mass line
    assert np.abs(solution.v).max() < 1e-12


def test_redundant_joints_raise_singular_system_error_naming_them() -> None:
    body = Body("b", 1.0, [1.0, 1.0, 1.0])
    joints = (
        JointSpec("hinge", "revolute", None, "b", axis=(0, 0, 1.0)),
        JointSpec("ball", "spherical", None, "b"),
    )
    with pytest.raises(SingularSystemError, match=r"'(hinge|ball)'.*redundant joints"):
        make_formulation("maximal", Scene("redundant", (body,), joints)).initial_state()


def test_ill_conditioned_independent_joints_are_not_called_redundant() -> None:
    """A chain of bodies 1e-12 times lighter than their neighbour (1e-12 kg against 1 kg):
    the rows are independent (pivoted QR finds none dependent) but the Schur complement's
    pivots span more than 1e10, so the error says ill-conditioned, names the pivot ratio
    and the fix, and names no joint as redundant."""
    heavy = Body("heavy", 1.0, [1.0, 1.0, 1.0])
    light = Body("light", 1e-12, [1e-12, 1e-12, 1e-12])
    joints = (
        JointSpec("top", "revolute", None, "heavy", axis=(0, 0, 1.0)),
        JointSpec("link", "revolute", "heavy", "light", axis=(0, 0, 1.0)),
    )
    with pytest.raises(SingularSystemError, match=r"ill-conditioned.*--formulation reduced") as e:
        make_formulation("maximal", Scene("disparate", (heavy, light), joints)).initial_state()
    assert "redundant" not in str(e.value)


def test_unknown_options_and_kinds_are_rejected() -> None:
    scene = chain(1)
    with pytest.raises(ConfigurationError, match="stabilization"):
        MaximalFormulation(scene, stabilization="position")
    bad = scene.with_(joints=(JointSpec("j", "screwy", None, "l0"),))
    with pytest.raises(KeyError, match="screwy"):
        MaximalFormulation(bad)


def test_metrics_report_the_largest_position_error() -> None:
    scene = chain(2)
    form = MaximalFormulation(scene)
    state = form.initial_state()
    E = state.E.copy()
    E[1, :3, 3] += [1e-3, -2e-3, 0.5e-3]  # displace link 1 off its hinge
    m = form.metrics(state.__class__(0.0, E, state.phi))
    assert m["constraint_error"] == pytest.approx(2e-3, rel=1e-12)


def test_linearly_implicit_springs_are_stable_where_explicit_ones_diverge() -> None:
    """REDMAX scene 24 with a 10x stiffer, undamped spring (k = 100 N per strain), h = 1e-2.

    With ``M + hD - h^2 K`` (Sueda's notes, eq. 1.30) the energy never exceeds its
    initial value over 1 s; the explicit force gains 2.7 J on a scene whose
    initial energy is -0.015 J (measured).
    """
    from contactlab.scenario import get_scenario

    scene = get_scenario("spring-damper").build(stiffness=100.0, damping=0.0)
    energies = {}
    for implicit in (True, False):
        _, m = run(MaximalFormulation(scene, implicit=implicit), 1e-2, 100)
        energies[implicit] = np.array([x["total_energy"] for x in m])
    E = energies[True]
    assert MaximalFormulation(scene).implicit  # on by default when the scene has forces
    assert E.max() - E[0] <= 1e-9
    assert energies[False].max() - E[0] > 1.0


def test_two_link_hanging_chain_reactions_balance_the_weights() -> None:
    """At rest, the lower hinge holds the lower link (m2 g up on it, m2 g down on the upper
    link) and the upper hinge holds both: Newton's third law in the rows' wrenches."""
    m1, m2 = 2.0, 0.5
    bodies = (Body("upper", m1, [0.1, 0.2, 0.25]), Body("lower", m2, [0.05, 0.06, 0.07]))
    down = se3.make_transform(None, [0, 0, -0.5])
    up = se3.make_transform(None, [0, 0, 0.5])
    joints = (
        JointSpec("top", "revolute", None, "upper", frame_child=up, axis=(1.0, 0, 0)),
        JointSpec(
            "mid", "revolute", "upper", "lower", frame_parent=down, frame_child=up, axis=(0, 1.0, 0)
        ),
    )
    form = make_formulation("maximal", Scene("two", bodies, joints))
    state = form.initial_state()
    _, problem, solution = kkt_step(form, state, 1e-3)
    w = form.reaction_wrenches(problem, solution, 1e-3)
    R = state.E[:, :3, :3]
    world = {k: np.einsum("nab,nb->na", R, v[:, 3:]) for k, v in w.items()}
    g = 9.81
    assert np.allclose(world["mid"], [[0, 0, -m2 * g], [0, 0, m2 * g]], atol=1e-10)
    assert np.allclose(world["top"], [[0, 0, (m1 + m2) * g], [0, 0, 0]], atol=1e-10)


def test_scene_gamma_zero_is_the_unstabilized_step() -> None:
    from contactlab.scene import StabilizationParams

    scene = chain(2)
    E = {}
    for name, sc, stab in (
        ("gamma0", scene.with_(stabilization=StabilizationParams(gamma=0.0)), "velocity"),
        ("disabled", scene.with_(stabilization=StabilizationParams(enabled=False)), "velocity"),
        ("off", scene, "off"),
        ("default", scene, "velocity"),
    ):
        state, _ = run(MaximalFormulation(sc, stabilization=stab), 1e-2, 50)
        E[name] = state.E
    assert np.array_equal(E["gamma0"], E["off"])
    assert np.array_equal(E["disabled"], E["off"])
    assert np.abs(E["default"] - E["off"]).max() > 1e-4


def test_energy_loss_is_first_order_and_drift_second_order_in_h() -> None:
    """Over 2 s of the 3-link chain: energy loss 4.09e-3 J at h = 1e-2 and 2.07e-3 J at
    h = 5e-3 (ratio 1.97: numerical dissipation of a first-order step, vanishing with h);
    largest drift 1.8e-3 m and 4.8e-4 m (ratio 3.8: the dead-beat Baumgarte leaves the
    O(h^2) error of one step)."""
    loss, drift = [], []
    for h in (1e-2, 5e-3):
        _, m = run(MaximalFormulation(chain()), h, int(round(2.0 / h)), every=int(round(0.1 / h)))
        E = np.array([x["total_energy"] for x in m])
        loss.append(E[0] - E[-1])
        drift.append(max(x["constraint_error"] for x in m))
    assert loss[0] > 0 and 1.8 < loss[0] / loss[1] < 2.2
    assert 3.3 < drift[0] / drift[1] < 4.4
