"""Integrators of the reduced formulation: exact linearization, order, energy, dop853."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.special

from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.forces import ZeroLengthSpring
from contactlab.formulation import make_formulation
from contactlab.reduced import dynamics as dyn
from contactlab.reduced import simulate_adaptive
from contactlab.reduced.formulation import ReducedFormulation
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.linearization import exact_terms
from contactlab.reduced.steppers import INTEGRATORS, lagrangian_force, step_midpoint
from contactlab.reduced.tree import Tree

from .conftest import random_coordinates, random_tree_scene
from .scenes import (
    LINK,
    chain,
    gimbal_pendulum,
    run_without_contacts,
    spherical_double_pendulum,
)
from .test_model import ANALYTIC

SECOND_ORDER = ["trapezoidal", "bridson-marino", "midpoint"]


def _springy_scene(seed: int, kinds: list[str]):  # noqa: ANN202
    """A random tree with joint springs/dampers, zero-length springs between bodies, gravity."""
    rng = np.random.default_rng(200 + seed)
    scene = random_tree_scene(seed, kinds)
    joints = tuple(
        dataclasses.replace(j, stiffness=rng.uniform(0, 5), damping=rng.uniform(0, 2))
        for j in scene.joints
    )
    names = [b.name for b in scene.bodies]
    springs = tuple(
        ZeroLengthSpring(
            names[i],
            rng.uniform(-0.3, 0.3, 3),
            None if i == 0 else names[int(rng.integers(0, i))],
            rng.uniform(-0.3, 0.3, 3),
            float(rng.uniform(5, 50)),
        )
        for i in range(len(names))
    )
    return scene.with_(joints=joints, forces=springs)


def _central(f, x: np.ndarray, step: float = 1e-6) -> np.ndarray:  # noqa: ANN001
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = step
        cols.append((f(x + e) - f(x - e)) / (2 * step))
    return np.array(cols).T


@pytest.mark.parametrize(
    "kinds",
    [ANALYTIC + ["revolute", "prismatic"], ["revolute", "prismatic", "revolute", "revolute"]],
    ids=["every-compiled-joint", "screw-joints"],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_exact_stiffness_is_the_derivative_of_the_reduced_forces(
    kinds: list[str], seed: int
) -> None:
    """K_r = df_r/dq and D_r = -df_r/dqdot to 1e-7 of their size (central differences:
    truncation ~1e-12 |f'''|, rounding ~1e-16 |f| / 1e-6 ~ 1e-10); the stiffness of
    eq. 2.75 (springs and force elements only) misses the geometric and gravity terms."""
    tree = Tree.from_scene(_springy_scene(seed, kinds))
    q, qdot = random_coordinates(tree, np.random.default_rng(seed))
    kin = forward_kinematics(tree, q, qdot)
    terms = exact_terms(kin)

    def forces(qq: np.ndarray, vv: np.ndarray) -> np.ndarray:
        return dyn.reduced_forces(forward_kinematics(tree, qq, vv))

    K = _central(lambda x: forces(x, qdot), q)
    D = -_central(lambda x: forces(q, x), qdot)
    assert np.abs(terms.K - K).max() <= 1e-7 * np.abs(K).max()
    assert np.abs(terms.D - D).max() <= 1e-7 * np.abs(D).max()
    # the linearization of eq. 2.75 is not the derivative: off by O(1) of it
    assert np.abs(dyn.implicit_terms(kin).K - K).max() > 0.1 * np.abs(K).max()


def test_lagrangian_force_is_the_rate_of_the_momentum() -> None:
    """g = f_r + Mdot qdot equals d(M qdot)/dt along the exact motion (central differences
    in time of the adaptive solution at rtol 1e-12)."""
    scene = spherical_double_pendulum()
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    dt = 1e-4
    traj = simulate_adaptive(
        tree,
        q0,
        v0,
        0.05 + dt,
        rtol=1e-12,
        atol=1e-14,
        t_eval=np.array([0.05 - dt, 0.05, 0.05 + dt]),
    )
    p = [dyn.mass_matrix(forward_kinematics(tree, q)) @ v for q, v in zip(traj.q, traj.qdot)]
    rate = (p[2] - p[0]) / (2 * dt)
    g = lagrangian_force(forward_kinematics(tree, traj.q[1], traj.qdot[1]))
    assert np.abs(g - rate).max() <= 1e-6 * np.abs(g).max()


def _pendulum_angle(theta0: float, omega: float, t: float) -> float:
    """Exact angle from the bottom of a pendulum released at rest from ``theta0``:
    ``sin(theta/2) = k sn(K(k) - omega t; k)``, ``k = sin(theta0/2)``."""
    m = np.sin(theta0 / 2) ** 2
    sn = scipy.special.ellipj(scipy.special.ellipk(m) - omega * t, m)[0]
    return float(2 * np.arcsin(np.sqrt(m) * sn))


@pytest.mark.parametrize(
    ("integrator", "order"), [("implicit-euler", 1)] + [(name, 2) for name in SECOND_ORDER]
)
def test_order_on_the_exact_pendulum(integrator: str, order: int) -> None:
    """A 0.1 m link on a revolute joint released 1.5 rad from the bottom, against the
    elliptic-function solution: the angle error falls by 2^order per halving of h
    (4 +- 0.4 for second order, 2 +- 0.2 for first order), at T = 0.5 s (about one
    period) for second order and at T = 0.2 s for first order (whose error, 1e-2 rad
    at 0.5 s, is past the asymptotic range there)."""
    theta0 = 1.5
    scene = chain(1, q0=[np.pi / 2 + theta0])  # q = pi/2 hangs down (link along x, axis y)
    body = scene.bodies[0]
    pivot = body.inertia[1] + body.mass * (LINK / 2) ** 2
    omega = np.sqrt(body.mass * 9.81 * LINK / 2 / pivot)
    T = 0.5 if order == 2 else 0.2
    exact = np.pi / 2 + _pendulum_angle(theta0, omega, T)
    errors = [
        abs(run_without_contacts(scene, integrator, h, T)[1].q[0] - exact)
        for h in (4e-3, 2e-3, 1e-3)
    ]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0**order
    assert np.all(np.abs(ratios - expected) <= 0.1 * expected), ratios


@pytest.mark.parametrize("integrator", SECOND_ORDER)
def test_second_order_on_a_spherical_double_pendulum(integrator: str) -> None:
    """Varying M, Coriolis forces and chart switches: body positions at T = 0.2 s against
    the adaptive solution (rtol 1e-12) fall by 4 +- 0.4 per halving of h."""
    scene = spherical_double_pendulum()
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    T = 0.2
    ref = simulate_adaptive(tree, q0, v0, T, rtol=1e-12, atol=1e-13, t_eval=np.array([T]))
    p_ref = forward_kinematics(tree, ref.q[-1]).E[:, :3, 3]
    errors = [
        np.abs(run_without_contacts(scene, integrator, h, T)[1].E[:, :3, 3] - p_ref).max()
        for h in (4e-3, 2e-3, 1e-3)
    ]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(np.abs(ratios - 4.0) <= 0.4), ratios


def test_midpoint_energy_stays_bounded_over_ten_thousand_steps() -> None:
    """A conservative (chaotic) double pendulum over 1e4 steps of 10 ms (h omega = 0.12):
    the symplectic midpoint rule's energy error stays within 5 % of m g l all along
    (measured 1.7-2.3 %, the same in the first and the last thousand steps up to
    the chaotic motion's spread), while implicit Euler with the exact K loses more
    than a tenth of m g l in the first thousand steps."""
    tree = Tree.from_scene(chain(2, q0=[0.3, 1.2]))
    q, v = tree.initial_coordinates()

    def energy(q: np.ndarray, v: np.ndarray) -> float:
        return dyn.energies(forward_kinematics(tree, q, v))["total_energy"]

    E0 = energy(q, v)
    mgl = 2 * 9.81 * LINK  # two 1 kg links of length LINK
    h, n = 1e-2, 10_000
    err = np.empty(n // 10)
    for k in range(n):
        q, v = step_midpoint(tree, q, v, h)
        if k % 10 == 9:
            err[k // 10] = energy(q, v) - E0
    assert np.abs(err).max() <= 0.05 * mgl
    _, euler = run_without_contacts(chain(2, q0=[0.3, 1.2]), "implicit-euler", h, 10.0)
    assert energy(np.asarray(euler.q), np.asarray(euler.qdot)) - E0 < -0.1 * mgl


@pytest.mark.parametrize(("order", "bound"), [(2, 1e-3), (4, 1e-4)])
@pytest.mark.parametrize("spin", [1.0, 0.1])
def test_midpoint_substeps_keep_the_energy_through_a_pass_near_a_singular_chart(
    spin: float, order: int, bound: float
) -> None:
    """The gimbal pendulum (a rod on z- then y-revolutes at one point) falls from horizontal
    past the chart's singular configuration, the rod along the z axis: ``qdot0`` races
    to 227-275 rad/s (conservation of the z momentum, ``I_z`` down to the rod's axial
    inertia) and its acceleration grows as ``|qdot|^2 / theta`` at a distance ``theta``
    from that configuration.  Over 0.2 s at h = 2 ms with substep_angle 0.05 the midpoint
    rule keeps ``|E(t) - E(0)|`` within 1e-3 of the rod's potential drop ``m g L / 2``
    (measured 4.9e-4 at spin 1, 1.4e-4 at spin 0.1) and its triple jump within 1e-4
    (3.0e-6, 4.2e-7; 5.1e-5 and 1.1e-5 when it bounded the velocity's relative change by
    ``sqrt(angle)``); halving the angle cuts the error by more than 3 (measured 4.3 and
    3.8; 18 and 15): the substep rule bounds the velocity's relative change,
    ``hs |qddot| / |qdot| = hs |qdot| / theta``, as well as the angle, so the substeps'
    angle shrinks with ``theta``.  Bounding the angle alone left the midpoint rule 2.6e-3
    and 4.1e-3 of the drop, growing as the pass nears the singular configuration (the
    triple jump 6.2e-5 at spin 0.1)."""
    scene = gimbal_pendulum(spin)
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    drop = 9.81 * LINK / 2

    def energy(q: np.ndarray, v: np.ndarray) -> float:
        return dyn.energies(forward_kinematics(tree, q, v))["total_energy"]

    E0 = energy(q0, v0)
    worst = {}
    for angle in (0.05, 0.025):
        q, v, err, fastest = q0, v0, 0.0, 0.0
        for _ in range(100):
            q, v = step_midpoint(tree, q, v, 2e-3, angle, order=order)
            err, fastest = max(err, abs(energy(q, v) - E0)), max(fastest, abs(v[0]))
        worst[angle] = err
        assert fastest > 200.0  # the pass is close to the singular configuration
    assert worst[0.05] <= bound * drop, worst
    assert worst[0.025] <= worst[0.05] / 3.0, worst


def test_formulation_midpoint_is_the_midpoint_step() -> None:
    scene = spherical_double_pendulum()
    tree = Tree.from_scene(scene)
    q, v = tree.initial_coordinates()
    for _ in range(5):
        q, v = step_midpoint(tree, q, v, 5e-3)
    _, state = run_without_contacts(scene, "midpoint", 5e-3, 0.025)
    np.testing.assert_allclose(state.q, q, atol=1e-10)
    np.testing.assert_allclose(state.qdot, v, atol=1e-8)


def test_dop853_steps_match_the_adaptive_solution() -> None:
    scene = chain(3, q0=[np.pi / 4, np.pi / 2, -np.pi / 3])
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    ref = simulate_adaptive(tree, q0, v0, 0.5, rtol=1e-12, atol=1e-13, t_eval=np.array([0.5]))
    _, state = run_without_contacts(scene, "dop853", 1e-2, 0.5)
    np.testing.assert_allclose(state.q, ref.q[-1], atol=1e-5)


def test_dop853_refuses_contacts_and_unknown_integrators_are_named() -> None:
    scene = chain(2)
    with pytest.raises(UnknownNameError, match="integrator"):
        make_formulation("reduced", scene, integrator="leapfrog")
    form = ReducedFormulation(scene, integrator="dop853")
    state = form.initial_state()
    kin = forward_kinematics(form.tree, np.asarray(state.q), np.asarray(state.qdot))
    assert form.stepper is not None
    with pytest.raises(ConfigurationError, match="dop853.*contacts"):
        form.stepper.free_step(state, kin, 1e-3, True)
    assert set(INTEGRATORS) >= {"implicit-euler", *SECOND_ORDER, "dop853"}


def test_substep_angle_defaults_and_bad_values() -> None:
    """``midpoint4`` takes substeps of 0.025 rad unless told otherwise, ``midpoint`` one
    step; ``inf`` asks for one step; a non-positive or non-numeric angle is one clear error
    that names the option."""
    scene = chain(2)
    assert make_formulation("reduced", scene, integrator="midpoint4").substep_angle == 0.025
    assert make_formulation("reduced", scene, integrator="midpoint").substep_angle is None
    one = make_formulation("reduced", scene, integrator="midpoint4", substep_angle=float("inf"))
    assert one.substep_angle is None
    for bad in (0.0, -0.1, "fine", float("nan")):
        with pytest.raises(ConfigurationError, match="substep_angle must be a positive angle"):
            make_formulation("reduced", scene, integrator="midpoint4", substep_angle=bad)


def test_command_line_runs_a_reduced_scene_with_dop853(tmp_path) -> None:  # noqa: ANN001
    """`contactlab run ... --integrator dop853 --formulation-option rtol=1e-10`: the
    spherical double pendulum keeps its energy to 1e-7 of its scale over 0.2 s (the
    default linearly implicit step loses percents), and a reduced-only name is refused
    by the maximal formulation with one line."""
    import pandas as pd

    from contactlab import cli

    out = tmp_path / "run"
    argv = ["run", "redmax-spherical", "--formulation", "reduced", "--integrator", "dop853"]
    argv += ["--formulation-option", "rtol=1e-10", "--formulation-option", "atol=1e-12"]
    argv += ["--duration", "0.2", "--out", str(out), "--quiet", "--no-plots"]
    assert cli.main(argv) == 0
    steps = pd.read_csv(out / "steps.csv")
    E = steps["total_energy"].to_numpy()
    scale = max(abs(E[0]), steps["kinetic_energy"].max())
    assert steps["kinetic_energy"].max() > 0.01 * scale  # it moves
    assert np.abs(E - E[0]).max() <= 1e-7 * scale
    bad = ["run", "redmax-spherical", "--formulation", "maximal", "--integrator", "dop853"]
    assert cli.main([*bad, "--steps", "1", "--out", str(tmp_path / "bad"), "--quiet"]) == 2
