"""Reduced-coordinate constraints (Sueda's notes §2.8–2.9): rows, stabilization, hybrid dynamics."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.errors import ConfigurationError
from contactlab.reduced import (
    ReducedFormulation,
    Tree,
    forward_dynamics_dense,
    forward_kinematics,
    hybrid_dynamics,
    step_linearly_implicit,
)
from contactlab.reduced.constrained_dynamics import constrained_acceleration
from contactlab.reduced.constraints import (
    Coupling,
    EqualityConstraint,
    HingeLoopRows,
    PrescribedJoint,
    prescribed_forces,
    scene_constraints,
)
from contactlab.simulator import Simulator
from scenarios.redmax import (
    coupled_loop,
    gears,
    hybrid,
    joint_limits,
    loop,
    maximal_hybrid,
    prismatic,
    reduced_maximal_hybrid,
    smooth_step,
)


def _random_state(tree: Tree, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    q0, _ = tree.initial_coordinates()
    return q0 + 0.3 * rng.standard_normal(tree.nq), rng.standard_normal(tree.nq)


SCENES = {
    "loop": loop.build(),
    "prismatic-loop": prismatic.build(),
    "coupled-loop": coupled_loop.build(),
    "twist+prescribed": reduced_maximal_hybrid.build(),
}


@pytest.mark.parametrize("name", SCENES)
def test_rows_are_the_rate_of_the_error_and_bias_the_rate_of_the_rows(name: str) -> None:
    """``G qdot = dg/dt - r`` and ``Gdot qdot`` by central differences along ``q + s qdot``.

    Step 1e-6: truncation O(1e-12) relative, rounding ~1e-10 relative; tolerance 1e-7.
    """
    scene = SCENES[name]
    tree = Tree.from_scene(scene)
    cons = [c for c in scene_constraints(scene, tree) if isinstance(c, EqualityConstraint)]
    rng = np.random.default_rng(1)
    q, qdot = _random_state(tree, rng)
    eps = 1e-6
    t = 0.4
    for c in cons:
        terms = c.terms(tree, forward_kinematics(tree, q, qdot), t, 0.0)
        plus = c.terms(tree, forward_kinematics(tree, q + eps * qdot, qdot), t, 0.0)
        minus = c.terms(tree, forward_kinematics(tree, q - eps * qdot, qdot), t, 0.0)
        scale = 1.0 + np.abs(terms.G @ qdot).max()
        if terms.error is not None:
            assert plus.error is not None and minus.error is not None
            rate = (plus.error - minus.error) / (2 * eps)
            np.testing.assert_allclose(terms.G @ qdot, rate, atol=1e-7 * scale, err_msg=c.name)
        Gdot = (plus.G - minus.G) / (2 * eps)
        np.testing.assert_allclose(
            terms.bias, Gdot @ qdot, atol=1e-6 * (1 + np.abs(Gdot @ qdot).max()), err_msg=c.name
        )


def test_hinge_loop_directions_follow_eq_2_90() -> None:
    """``v1, v2`` orthonormal, normal to the axis, and ``v1`` seeded at the smallest |a_k|."""
    a = np.array([0.3, -0.1, 0.9])
    trans = HingeLoopRows.geometry(a, {})[0]
    v1, v2 = trans
    a = a / np.linalg.norm(a)
    np.testing.assert_allclose(trans @ trans.T, np.eye(2), atol=1e-15)
    np.testing.assert_allclose(trans @ a, 0.0, atol=1e-15)
    # v1 lies in the plane of a and e_y (the seed, index of the smallest |a_k|)
    assert abs(np.linalg.det(np.array([v1, a, [0.0, 1.0, 0.0]]))) < 1e-15


def _drift(scene, stabilization: str, steps: int) -> np.ndarray:  # type: ignore[no-untyped-def]
    form = ReducedFormulation(scene, stabilization=stabilization)
    run = Simulator(scene, form, "frictionless", "kkt").run(steps=steps)
    return run.steps["constraint_error"].to_numpy()


def test_loop_drift_is_bounded_with_baumgarte_and_grows_without() -> None:
    """redmax-prismatic (a loop through a slider; its closure is nonlinear in q) at h = 1e-2.

    Measured over 2 s: with gamma = 1/h the drift is what one linearized step
    leaves, O(h^2 |qdot|^2 L), at most 1.5e-4 m and not growing; without
    stabilization the step keeps only the drift *rate* at zero, and the
    error accumulates to 6e-3 m, rising from the first half-second to the last.
    """
    scene = prismatic.build(leg_deg=60.0)
    on = _drift(scene, "velocity", 200)
    off = _drift(scene, "off", 200)
    assert on.max() < 3e-4
    assert on[100:].max() < 1.5 * on[:100].max()
    assert off[150:].max() > 3 * off[:50].max()
    assert off[-1] > 10 * on.max()


def test_gear_coupling_holds_to_rounding() -> None:
    """redmax-gears: ``q_b = -q_a`` at every step; the coupling is linear, so gamma = 1/h
    removes each step's error exactly and only rounding (1e-15 rad) remains."""
    scene = gears.build()
    run = Simulator(scene, "reduced", "frictionless", "kkt").run(steps=300)
    q = run.trajectory["q"]
    assert np.abs(q[:, 1] + q[:, 0]).max() < 1e-12
    assert np.abs(q[-1, 0]) > 1.0  # the gears turned


def test_prescribed_joint_follows_its_trajectory_and_its_torque_reproduces_the_step() -> None:
    """redmax-hybrid: the root hinge sits on p(t_k) at every step (to rounding), and the
    joint forces tau = G_p^T lambda_p / h fed to the unconstrained linearly implicit
    step reproduce the constrained step (velocities to 1e-12 relative)."""
    scene = hybrid.build(duration_s=1.0)
    form = ReducedFormulation(scene)
    p = smooth_step(0.0, np.deg2rad(270.0), 1.0)
    records = []
    h = scene.dt
    run = Simulator(scene, form, "frictionless", "kkt").run(
        steps=150, callback=lambda s, r: records.append(r) and None
    )
    q, qdot, t = run.trajectory["q"], run.trajectory["qdot"], run.trajectory["t"]
    target = np.array([p(tk)[0] for tk in t])
    assert np.abs(q[:, 0] - target).max() < 1e-12
    for k in (0, 40, 80, 149):
        rec = records[k]
        forces = prescribed_forces(
            form.constraints,
            rec.problem.G_owner,
            rec.solution.lambda_G,
            h,
            form.tree.nq,
        )
        tau = forces["joint0"]
        assert np.count_nonzero(tau) == 1
        q1, qd1 = step_linearly_implicit(form.tree, q[k], qdot[k], h, tau)
        np.testing.assert_allclose(qd1, qdot[k + 1], rtol=1e-12, atol=1e-12 * np.abs(qd1).max())
        np.testing.assert_allclose(q1, q[k + 1], atol=1e-14)


def test_hybrid_kkt_dual_and_recursive_agree() -> None:
    """Acceleration level (eq. 2.102): the dense KKT, the dual solve through the recursion
    (eq. 2.118–2.120) and Kim's recursive hybrid dynamics (Alg. 6) give the same qddot and
    prescribed torque, and that torque through forward dynamics gives the same qddot."""
    scene = hybrid.build().with_(gravity=np.array([0.0, 0.0, -9.81]))
    tree = Tree.from_scene(scene)
    cons = scene_constraints(scene, tree)
    rng = np.random.default_rng(3)
    q, qdot = _random_state(tree, rng)
    t = 2.0
    pos, vel, acc = cons[0].trajectory(t)  # type: ignore[attr-defined]
    q[0], qdot[0] = pos, vel  # on the trajectory: Baumgarte terms vanish
    dense, lam = constrained_acceleration(tree, q, qdot, t, cons)
    dual, lam_d = constrained_acceleration(tree, q, qdot, t, cons, method="dual")
    qin = np.zeros(tree.nq)
    qin[0] = acc
    rec, tau_rec = hybrid_dynamics(tree, q, qdot, ["joint0"], qin)
    scale = np.abs(dense).max()
    np.testing.assert_allclose(dense[0], acc, atol=1e-12 * scale)
    np.testing.assert_allclose(dual, dense, atol=1e-9 * scale)
    np.testing.assert_allclose(rec, dense, atol=1e-9 * scale)
    np.testing.assert_allclose(lam_d, lam, rtol=1e-8)
    np.testing.assert_allclose(tau_rec[0], lam[0], rtol=1e-8)
    tau = np.zeros(tree.nq)
    tau[0] = lam[0]
    np.testing.assert_allclose(forward_dynamics_dense(tree, q, qdot, tau), dense, atol=1e-9 * scale)


def test_joint_limit_is_never_exceeded() -> None:
    """redmax-joint-limits with OSQP: the limited hinge reaches its limit (within 1e-3 rad)
    and never passes it by more than 1e-6 rad (OSQP's 1e-5-ish velocity accuracy times h)."""
    scene = joint_limits.build()
    run = Simulator(scene, "reduced", "frictionless", "osqp").run(steps=200)
    q1 = run.trajectory["q"][:, 1]
    lim = np.pi / 4
    assert np.abs(q1).max() > lim - 1e-3
    assert np.abs(q1).max() < lim + 1e-6


def test_unknown_constraint_objects_and_bad_couplings_are_refused() -> None:
    scene = gears.build()
    with pytest.raises(ConfigurationError, match="not a reduced-coordinate constraint"):
        ReducedFormulation(scene.with_(constraints=("not a constraint",)))
    with pytest.raises(ConfigurationError, match="no tree joint 'nope'"):
        ReducedFormulation(scene.with_(constraints=(Coupling("axle0", "nope", 2.0),)))
    with pytest.raises(ConfigurationError, match="loop_rows"):
        bad = loop.build()
        joints = tuple(
            j if not j.closes_loop else type(j)(**{**j.__dict__, "params": {"loop_rows": "x"}})
            for j in bad.joints
        )
        ReducedFormulation(bad.with_(joints=joints))
    limited = joint_limits.build()
    tree = Tree.from_scene(limited)
    with pytest.raises(ConfigurationError, match="inequalities"):
        constrained_acceleration(
            tree, np.zeros(2), np.zeros(2), 0.0, scene_constraints(limited, tree)
        )
    with pytest.raises(ConfigurationError, match="prescribed joint"):
        ReducedFormulation(scene.with_(constraints=(PrescribedJoint("x", smooth_step(0, 1, 1)),)))


def test_constraints_given_to_the_formulation_directly_are_bound_on_use() -> None:
    """The gears without the scene's coupling, the coupling passed to the formulation:
    the same coupled motion (to rounding)."""
    scene = gears.build()
    free = scene.with_(constraints=())
    form = ReducedFormulation(free, constraints=[Coupling("axle0", "axle1", -1.0, 0.0)])
    run = Simulator(free, form, "frictionless", "kkt").run(steps=20)
    q = run.trajectory["q"]
    assert np.abs(q[:, 1] + q[:, 0]).max() < 1e-12


def test_prescribed_twist_components_hold_in_every_step() -> None:
    """redmax-maximal-hybrid: the step's velocities give the last link the body twist
    omega_y = 2 rad/s, nu_x = nu_z = 0 through the Jacobian at the step's start
    (velocity-level rows, eq. 2.98: to rounding), while the chain's free degree of
    freedom moves."""
    scene = maximal_hybrid.build()
    form = ReducedFormulation(scene)
    run = Simulator(scene, form, "frictionless", "kkt").run(steps=40)
    q, qdot = run.trajectory["q"], run.trajectory["qdot"]
    rows = 6 * 3 + np.array([1, 3, 5])
    for k in range(40):
        J = forward_kinematics(form.tree, q[k]).J[rows]
        np.testing.assert_allclose(J @ qdot[k + 1], [2.0, 0.0, 0.0], atol=1e-12)
    assert np.ptp(q[:, 0]) > 1e-2


def test_acceleration_level_baumgarte_gives_the_critically_damped_error() -> None:
    """With alpha = beta the rows enforce g'' + 2 beta g' + beta^2 g = 0 exactly
    (Sueda's notes, eq. 1.82; holonomic rows: G qddot + Gdot qdot = g''), so a loop
    started off its manifold at rest returns as g(t) = g0 (1 + beta t) exp(-beta t).
    redmax-prismatic perturbed by 0.05 rad at the hip, beta = 10/s, DOP853 at
    rtol 1e-10: the two loop rows follow the law to 1e-6 of g0 over 1 s."""
    from contactlab.reduced.constrained_dynamics import simulate_constrained
    from contactlab.reduced.constraints import constraint_errors

    scene = prismatic.build()
    tree = Tree.from_scene(scene)
    cons = scene_constraints(scene, tree)
    q0, _ = tree.initial_coordinates()
    q0[tree.dofs("hip")] += 0.05
    g0 = constraint_errors(tree, cons, q0)
    assert np.abs(g0).max() > 1e-3
    beta = 10.0
    t = np.linspace(0.0, 1.0, 11)
    traj = simulate_constrained(
        tree,
        cons,
        q0,
        np.zeros(tree.nq),
        1.0,
        alpha=beta,
        beta=beta,
        rtol=1e-10,
        atol=1e-12,
        t_eval=t,
    )
    g = np.array([constraint_errors(tree, cons, q) for q in traj.q])
    law = g0[None, :] * ((1 + beta * t) * np.exp(-beta * t))[:, None]
    np.testing.assert_allclose(g, law, atol=1e-6 * np.abs(g0).max())
