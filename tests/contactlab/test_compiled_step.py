"""The compiled reduced contact step (:mod:`contactlab.reduced.compiled_step`).

Facts: it is the same step as the general path (the formulation's problem solved by
the same method), so the two trajectories agree to 1e-10 when both solve every LCP
to 1e-12 (each solution is then exact to its tolerance; the difference left is the
rounding of two summation orders carried through the run); its plane contacts are the
general collider's; its solutions satisfy the box-friction conditions; it is taken
exactly for the set-ups in its scope.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.scene import ContactParams, JointSpec, Scene
from contactlab.shapes import Box, Capsule, Plane, Sphere
from contactlab.simulator import Simulator, drop_jointed, excluded_pairs

#: both paths solve every LCP to this natural-map residual
TIGHT = {"solver_tol": 1e-12}
#: agreement of the two trajectories (q and qdot) [rad, m, rad/s, m/s]
AGREE = 1e-10


def _robots_installed() -> bool:
    from scenarios.robots import ROBOTS

    return ROBOTS is not None


robots = pytest.mark.skipif(not _robots_installed(), reason="example-robot-data not installed")


def _pair(scene: Scene, **kw: object) -> tuple[Simulator, Simulator]:
    args = {"formulation": "reduced", "model": "box-friction", "solver": "pgs", "dt": 1e-3}
    fast = Simulator(scene, model_options=TIGHT, **args, **kw)  # type: ignore[arg-type]
    general = Simulator(
        scene,
        model_options=TIGHT,
        formulation_options={"compiled": False},
        **args,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )
    return fast, general


def _agree(scene: Scene, steps: int) -> tuple[float, int, list[np.ndarray]]:
    """Largest difference of ``(q, qdot)`` over ``steps`` steps, the most contacts of a
    step, and the compiled run's coordinates."""
    fast, general = _pair(scene)
    assert fast.compiled is not None and general.compiled is None
    a, b = fast.initial_state(), general.initial_state()
    worst, most, qs = 0.0, 0, []
    for i in range(steps):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        most = max(most, ra.metrics["n_contacts"])
        qa, qb = np.asarray(a.q), np.asarray(b.q)
        worst = max(worst, np.abs(qa - qb).max(), np.abs(np.asarray(a.qdot) - b.qdot).max())
        qs.append(qa)
    return worst, most, qs


@robots
@pytest.mark.parametrize(
    ("name", "steps"), [("solo12-stand", 60), ("solo12-collapse", 60), ("allegro-grasp", 80)]
)
def test_robot_trajectories_equal_the_general_path(name: str, steps: int) -> None:
    """The robot scenes step as on the general path: q and qdot within 1e-10."""
    from contactlab.scenario import get_scenario

    scene = get_scenario(name).build()
    worst, most, _ = _agree(scene, steps)
    assert most > 0  # the run has contacts
    assert worst <= AGREE


def _plane_points(scene: Scene, points: int) -> Scene:
    """``scene`` with at most ``points`` contacts of a hull against a plane."""
    return dataclasses.replace(
        scene, contact=dataclasses.replace(scene.contact, hull_plane_points=points)
    )


@robots
def test_earlier_plane_rule_equals_the_general_path() -> None:
    """With the earlier rule (8 points of a hull against a plane, farthest-point picks)
    the compiled step still steps as the general path: q and qdot within 1e-10."""
    from contactlab.scenario import get_scenario

    worst, most, _ = _agree(_plane_points(get_scenario("solo12-stand").build(), 8), 40)
    assert most == 32
    assert worst <= AGREE


@robots
@pytest.mark.parametrize("name", ["solo12-stand", "solo12-collapse"])
def test_four_points_per_foot_take_the_steps_of_eight(name: str) -> None:
    """Solo-12's feet are rounded: of the ~121 hull vertices of a foot within the margin
    only the lowest carry load, so 4 contacts per foot (16, the default) take the same
    200 steps as 8 per foot (32, the earlier rule): q and qdot within 1e-10, every LCP
    solved to 1e-12 (measured 1e-14 and 1e-11)."""
    from contactlab.scenario import get_scenario

    scene = get_scenario(name).build()
    four, eight = (
        Simulator(_plane_points(scene, k), "reduced", "box-friction", "pgs", dt=1e-3,
                  model_options=TIGHT)
        for k in (4, 8)
    )  # fmt: skip
    a, b = four.initial_state(), eight.initial_state()
    worst = 0.0
    for i in range(200):
        a, ra = four.step(a, i)
        b, rb = eight.step(b, i)
        assert ra.metrics["status"] == rb.metrics["status"] == "optimal"
        assert ra.metrics["n_contacts"] <= 16 and rb.metrics["n_contacts"] <= 32
        worst = max(
            worst,
            np.abs(np.asarray(a.q) - b.q).max(),
            np.abs(np.asarray(a.qdot) - np.asarray(b.qdot)).max(),
        )
    assert (ra.metrics["n_contacts"], rb.metrics["n_contacts"]) == (16, 32)
    assert worst <= AGREE


def _tree_scene() -> Scene:
    """A floating box with a capsule arm (revolute, PD drive, armature), a sphere on a
    prismatic slider at the arm's end and a box leg (revolute, damped), spinning about z
    through the chart switch of its rotation coordinates and dropping onto the ground."""
    base, _ = body_from_shape("base", Box(half_extents=np.array([0.15, 0.1, 0.05])), mass=2.0)
    arm, _ = body_from_shape("arm", Capsule(radius=0.03, half_height=0.08), mass=0.3)
    ball, _ = body_from_shape("ball", Sphere(radius=0.04), mass=0.2)
    leg, _ = body_from_shape("leg", Box(half_extents=np.array([0.02, 0.02, 0.07])), mass=0.25)
    t = se3.make_transform
    joints = (
        JointSpec(
            "root", "free", None, "base", frame_parent=t(None, [0.0, 0.0, 0.45]),
            q0=[0.0, 0.0, 3.0, 0.0, 0.0, 0.0], qdot0=[0.0, 0.0, 9.0, 0.2, 0.0, -1.0],
        ),
        JointSpec(
            "shoulder", "revolute", "base", "arm", axis=[0.0, 1.0, 0.0],
            frame_parent=t(None, [0.15, 0.0, 0.0]), frame_child=t(None, [0.0, 0.0, 0.11]),
            q0=[0.3], stiffness=5.0, damping=0.1, rest=[0.3], armature=0.01,
        ),
        JointSpec(
            "slider", "prismatic", "arm", "ball", axis=[0.0, 0.0, 1.0],
            frame_parent=t(None, [0.0, 0.0, -0.12]), stiffness=50.0, damping=1.0,
        ),
        JointSpec(
            "hip", "revolute", "base", "leg", axis=[1.0, 0.0, 0.0],
            frame_parent=t(None, [-0.12, 0.0, -0.05]), frame_child=t(None, [0.0, 0.0, 0.08]),
            q0=[-0.4], damping=0.05, armature=0.02,
        ),
    )  # fmt: skip
    return Scene(
        "tree-on-ground",
        (base, arm, ball, leg),
        joints=joints,
        static_shapes=(Plane(),),
        contact=ContactParams(mu=0.6),
    )


def test_hand_built_tree_equals_the_general_path() -> None:
    """A tree of boxes, a capsule and a sphere on free, revolute and prismatic joints
    (springs, dampers, armature) lands as on the general path, through a chart switch."""
    worst, most, qs = _agree(_tree_scene(), 250)
    assert most >= 3
    assert worst <= AGREE
    # the rotation coordinates went past pi and were switched to the antipodal chart
    r = np.array([q[:3] for q in qs])
    assert np.any(np.einsum("ij,ij->i", r[1:], r[:-1]) < 0.0)


def test_plane_contacts_equal_the_general_collider() -> None:
    """The compiled contacts with the ground are the collider's: same bodies, points,
    normals and distances, in the same order, at every state of a run."""
    scene = _tree_scene()
    sim = Simulator(scene, "reduced", "box-friction", "pgs", dt=1e-3)
    assert sim.compiled is not None
    from contactlab.collision import collide

    state = sim.initial_state()
    checked = 0
    for i in range(250):
        ours, plain = sim.compiled.contacts(state.E)
        theirs = drop_jointed(collide(scene, state.E), scene, excluded_pairs(scene))
        if plain:
            assert len(ours) == len(theirs)
            np.testing.assert_array_equal(ours.body_a, theirs.body_a)
            np.testing.assert_array_equal(ours.body_b, theirs.body_b)
            np.testing.assert_array_equal(ours.shape_a, theirs.shape_a)
            np.testing.assert_array_equal(ours.shape_b, theirs.shape_b)
            np.testing.assert_allclose(ours.point, theirs.point, rtol=0, atol=1e-15)
            np.testing.assert_allclose(ours.normal, theirs.normal, rtol=0, atol=0)
            np.testing.assert_allclose(ours.distance, theirs.distance, rtol=0, atol=1e-15)
            np.testing.assert_array_equal(ours.mu, theirs.mu)
            checked += len(ours) > 0
        state, _ = sim.step(state, i)
    assert checked > 50


def test_solutions_satisfy_box_friction() -> None:
    """Each step's impulses and velocities solve the box-friction LCP of the formulation's
    own problem (the record's ``problem``): ``lambda_N >= 0``, ``N v >= c`` and their
    product zero, ``|lambda_T,k| <= mu lambda_N`` with ``T v`` zero inside the box, all to
    the solver's tolerance scaled by the problem."""
    scene = _tree_scene()
    sim = Simulator(scene, "reduced", "box-friction", "pgs", dt=1e-3, model_options=TIGHT)
    state = sim.initial_state()
    seen = 0
    for i in range(200):
        state, rec = sim.step(state, i)
        nc = rec.metrics["n_contacts"]
        if nc == 0 or rec.metrics["status"] != "optimal":
            continue
        seen += 1
        p, s = rec.problem, rec.solution
        assert p.N is not None and p.T is not None and p.c is not None and p.mu is not None
        gap = p.N @ s.v - p.c
        lam_n, lam_t = s.lambda_N, s.lambda_T.reshape(nc, 2)
        slip = (p.T @ s.v).reshape(nc, 2)
        assert lam_n.min() >= 0.0
        assert gap.min() >= -1e-9
        assert np.max(np.abs(lam_n * gap)) <= 1e-9
        bound = p.mu[:, None] * lam_n[:, None]
        assert np.all(np.abs(lam_t) <= bound + 1e-12)
        inside = np.abs(lam_t) < bound - 1e-9
        assert np.all(np.abs(slip[inside]) <= 1e-9)
        # the record's metrics are those the general metrics compute from the record
        from contactlab import metrics as M

        ref = M.contact_metrics(p, s, sim.slip_threshold)
        for key, value in ref.items():
            assert rec.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12)
    assert seen > 20


def test_scope() -> None:
    """Taken for reduced / box-friction / pgs with the default collision; not for another
    model, solver, cone or formulation option, nor for scenes with joint torques."""
    scene = _tree_scene()
    assert Simulator(scene, "reduced", "box-friction", "pgs").compiled is not None
    assert Simulator(scene, "reduced", "box-friction", "osqp").compiled is None
    assert Simulator(scene, "reduced", "anitescu-hart", "ipm").compiled is None
    assert (
        Simulator(scene, "reduced", "box-friction", "pgs", model_options={"cone": "disc"}).compiled
        is None
    )
    assert (
        Simulator(
            scene, "reduced", "box-friction", "pgs", formulation_options={"coriolis": "explicit"}
        ).compiled
        is None
    )
    # joint torques and joint limits are in its scope (the rows and forces of the kernel)
    torque = scene.with_(joint_torque=lambda t, q, qdot: np.zeros(q.shape))
    assert Simulator(torque, "reduced", "box-friction", "pgs").compiled is not None
    assert Simulator(_limited_scene(), "reduced", "box-friction", "pgs").compiled is not None
    # other constraints are not
    from contactlab.reduced.constraints import Coupling

    coupled = scene.with_(constraints=(Coupling("shoulder", "hip", 1.0),))
    assert Simulator(coupled, "reduced", "box-friction", "pgs").compiled is None


#: the joint limits of :func:`_limited_scene` (joint, lower, upper) [rad, m]
LIMITS = (("shoulder", 0.15, 0.45), ("slider", -0.01, 0.015), ("hip", -0.6, -0.2))


def _limited_scene() -> Scene:
    """:func:`_tree_scene` with limits on its three one-coordinate joints and a sinusoidal
    applied torque on the shoulder (``Scene.joint_torque``) beside its PD drive."""
    from contactlab.reduced.constraints import JointLimit

    def torque(t: float, q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
        tau = np.zeros(q.shape)
        tau[6] = 0.5 * np.sin(20.0 * t)  # the shoulder's coordinate (after the free joint's 6)
        return tau

    return _tree_scene().with_(
        constraints=tuple(JointLimit(j, lo, up) for j, lo, up in LIMITS), joint_torque=torque
    )


def test_torques_and_limits_equal_the_general_path() -> None:
    """With applied joint torques, PD drives and joint limits the compiled step follows the
    general path (the formulation's problem with its limit rows ``L``, solved by the solver
    layer's PGS): q and qdot within 1e-10 over 250 steps, limit rows active on the way, the
    limit impulses and the constraint error (the limits' violation) the same."""
    fast, general = _pair(_limited_scene())
    assert fast.compiled is not None and general.compiled is None
    a, b = fast.initial_state(), general.initial_state()
    worst, active = 0.0, 0
    for i in range(250):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        qa, qb = np.asarray(a.q), np.asarray(b.q)
        worst = max(worst, np.abs(qa - qb).max(), np.abs(np.asarray(a.qdot) - b.qdot).max())
        la, lb = ra.solution.lambda_L, rb.solution.lambda_L
        assert la.shape == lb.shape == (6,)
        np.testing.assert_allclose(la, lb, rtol=0, atol=1e-9)
        assert ra.metrics["constraint_error"] == pytest.approx(
            rb.metrics["constraint_error"], abs=1e-12
        )
        active += int((la > 1e-9).sum())
    assert active > 20
    assert worst <= AGREE


def test_joint_limits_hold() -> None:
    """A limit row with a positive impulse holds its joint at the limit after the step
    (``q+ = bound``: its row ``qdot+ = (bound - q)/h`` is tight, to the solver tolerance
    times h), every coordinate stays inside its limits to the same tolerance, and each
    step's impulses solve the LCP of its own problem's limit rows (``lambda_L >= 0``,
    ``L v >= l``, complementary)."""

    scene = _limited_scene()
    sim = Simulator(scene, "reduced", "box-friction", "pgs", dt=1e-3, model_options=TIGHT)
    assert sim.compiled is not None
    dof = {"shoulder": 6, "slider": 7, "hip": 8}
    rows = [(dof[j], 1.0, lo) for j, lo, _ in LIMITS] + [(dof[j], -1.0, up) for j, _, up in LIMITS]
    # JointLimit rows: per limit its lower row, then its upper row
    order = [0, 3, 1, 4, 2, 5]
    state = sim.initial_state()
    held = 0
    for i in range(250):
        state, rec = sim.step(state, i)
        q = np.asarray(state.q)
        lam = rec.solution.lambda_L
        p = rec.problem
        assert p.L is not None and p.l is not None
        w = p.L @ rec.solution.v - p.l
        assert lam.min() >= 0.0
        assert w.min() >= -1e-9
        assert np.max(np.abs(lam * w)) <= 1e-9
        for k, (d, sign, bound) in enumerate(rows[j] for j in order):
            assert sign * (q[d] - bound) >= -1e-11
            if lam[k] > 1e-9:
                assert q[d] == pytest.approx(bound, abs=1e-11)
                held += 1
    assert held > 20


@robots
def test_arm_push_equals_the_general_path() -> None:
    """``arm-push`` (PD drives along a moving reference as applied joint torques, a table,
    the flange pushing the box) takes the compiled step and follows the general path over
    its first 150 steps (the flange meets the box at step 128): q and qdot within 1e-10.
    (Further on, steps where both leave PGS at its sweep cap short of 1e-12 let the two
    drift apart by more than the bound.)"""
    from contactlab.scenario import get_scenario

    scene = get_scenario("arm-push").build()
    worst, most, _ = _agree(scene, 150)
    assert most >= 7  # the box's four corners on the table and the flange on the box
    assert worst <= AGREE


@robots
@pytest.mark.parametrize(
    ("name", "steps", "kinds"),
    [
        ("allegro-grasp", 300, {"sphere-sphere", "sphere-box", "box-box"}),
        ("arm-push", 250, {"box-box", "box-mesh"}),
        ("humanoid-topple", 300, {"mesh-mesh"}),
    ],
)
def test_link_contacts_equal_the_general_collider(name: str, steps: int, kinds: set) -> None:
    """The compiled collision finds the collider's contacts between the robot's links, with
    an object and with a static table (the robot scenes' shape pairs ``kinds``), at every
    state of a run, without asking the general collider: the same bodies, shapes and
    friction in the same order, points and distances to 1e-12 m.  Normals agree to 1e-8:
    the kernel places each shape by its own product ``E @ pose``, which differs from
    NumPy's by an ulp, and a contact normal between nearly parallel hull faces (found by
    GJK/EPA) moves by up to 1e4 times that."""
    from contactlab.collision import collide
    from contactlab.collision.shape_table import KIND_NAMES
    from contactlab.scenario import get_scenario

    scene = get_scenario(name).build()
    sim = Simulator(scene, "reduced", "box-friction", "pgs")
    assert sim.compiled is not None
    tab = sim.compiled._table
    excluded = excluded_pairs(scene)
    state = sim.initial_state()
    seen: set[str] = set()
    for i in range(steps):
        ours, compiled = sim.compiled.contacts(state.E)
        theirs = drop_jointed(collide(scene, state.E), scene, excluded)
        assert compiled
        assert len(ours) == len(theirs)
        for field in ("body_a", "body_b", "shape_a", "shape_b", "mu"):
            np.testing.assert_array_equal(getattr(ours, field), getattr(theirs, field))
        np.testing.assert_allclose(ours.point, theirs.point, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.distance, theirs.distance, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ours.normal, theirs.normal, rtol=0, atol=1e-8)
        for a, b, sa, sb in zip(ours.body_a, ours.body_b, ours.shape_a, ours.shape_b):
            if b == -1 and not isinstance(scene.static_shapes[sb], Box):
                continue  # a plane
            ka = _kind(tab, a, sa)
            kb = _kind(tab, b, sb)
            seen.add("-".join(KIND_NAMES[k] for k in sorted((ka, kb))))
        state, _ = sim.step(state, i)
    assert kinds <= seen


def _kind(tab: object, body: int, local: int) -> int:
    """The shape-table kind of shape ``local`` of ``body`` (-1: a static shape)."""
    rows = np.flatnonzero((tab.body == body) & (tab.local == local))  # type: ignore[attr-defined]
    return int(tab.kind[rows[0]])  # type: ignore[attr-defined]


@robots
def test_humanoid_link_contact_steps_solve_the_general_problem() -> None:
    """From each state of a humanoid's fall where its links touch each other, the compiled
    step and the general path (the collider, the formulation's problem, the solver layer's
    PGS) take the same step: q and qdot within 1e-10 with both solving to 1e-12."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("humanoid-topple").build()
    fast, general = _pair(scene)
    state = fast.initial_state()
    checked, worst = 0, 0.0
    for i in range(300):
        new, rec = fast.step(state, i)
        if rec.contacts is not None and np.any(rec.contacts.body_b >= 0):
            other, _ = general.step(state, i)
            q1, q2 = np.asarray(new.q), np.asarray(other.q)
            worst = max(worst, np.abs(q1 - q2).max())
            worst = max(worst, np.abs(np.asarray(new.qdot) - np.asarray(other.qdot)).max())
            checked += 1
        state = new
    assert checked > 20
    assert worst <= AGREE


@robots
@pytest.mark.parametrize(("name", "steps"), [("solo12-stand", 40), ("solo12-collapse", 40)])
def test_runs_equal_the_general_runs(name: str, steps: int) -> None:
    """A whole run on the compiled route (``Simulator.run``: the trajectory, the per-step
    table, the divergence guard) equals the run through the general layers: the trajectory's
    coordinates within 1e-10 and its body transforms and twists within 1e-9, the run's
    status and every step's status and contact count the same, the energies within 1e-9 J.
    (The sweeps on the Delassus matrix, taken with fewer rows than twice the coordinates,
    are checked by the hand-built trees above and the humanoid's steps below: a whole
    ``humanoid-topple`` run at 1e-12 leaves steps at the sweep cap on both routes, whose
    solutions then agree only to the residual reached.)"""
    from contactlab.scenario import get_scenario

    scene = get_scenario(name).build()
    fast, general = _pair(scene)
    assert fast.compiled is not None and general.compiled is None
    a, b = fast.run(steps=steps), general.run(steps=steps)
    assert a.status == b.status == "ok"
    ta, tb = a.trajectory, b.trajectory
    np.testing.assert_allclose(ta["q"], tb["q"], rtol=0, atol=AGREE)
    np.testing.assert_allclose(ta["qdot"], tb["qdot"], rtol=0, atol=AGREE)
    for key in ("position", "rotation", "twist"):
        np.testing.assert_allclose(ta[key], tb[key], rtol=0, atol=1e-9)
    sa, sb = a.steps, b.steps
    assert list(sa["status"]) == list(sb["status"])
    assert list(sa["n_contacts"]) == list(sb["n_contacts"])
    assert sa["n_contacts"].min() > 0
    for key in ("kinetic_energy", "potential_energy", "total_energy"):
        np.testing.assert_allclose(sa[key], sb[key], rtol=0, atol=1e-9)


@robots
def test_run_records_the_steps_it_takes() -> None:
    """``Simulator.run`` on the compiled route records exactly the states and rows of the
    steps it takes: its trajectory (time, coordinates, body transforms and twists) equals,
    to the bit, the states of the same steps taken one by one with ``Simulator.step``, and
    each row of its table the record of that step (timings aside). Nothing in a step is
    random, so the run's bookkeeping (trajectory, step table, divergence guard) changes
    nothing it records."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("solo12-collapse").build()
    sim = Simulator(scene, formulation="reduced", model="box-friction", solver="pgs")
    assert sim.compiled is not None
    steps = 25
    run = sim.run(steps=steps)
    assert run.status == "ok"
    state = sim.initial_state()
    states, rows = [state], []
    for i in range(steps):
        state, record = sim.step(state, i)
        states.append(state)
        rows.append(record.metrics)
    traj = run.trajectory
    assert np.array_equal(traj["t"], [s.t for s in states])
    assert np.array_equal(traj["q"], np.stack([np.asarray(s.q) for s in states]))
    assert np.array_equal(traj["qdot"], np.stack([np.asarray(s.qdot) for s in states]))
    assert np.array_equal(traj["position"], np.stack([s.E[:, :3, 3] for s in states]))
    assert np.array_equal(traj["rotation"], np.stack([s.E[:, :3, :3] for s in states]))
    assert np.array_equal(traj["twist"], np.stack([s.phi for s in states]))
    # the rows a run writes as values have the columns and value types of step_row's
    from contactlab.models import compiled_box_step as B
    from contactlab.reduced import _step_kernels as K

    info = np.zeros(max(v for k, v in vars(K).items() if k.startswith("I_")) + 6)
    row = B.step_row(info, K, 0, 0.0, 1e-3, (0.0, 0.0), [0.0] * 6, 0.0, "optimal", 1, (0.0,) * 4)
    assert tuple(row) == B.ROW_KEYS == tuple(rows[0])
    assert all(tuple(map(type, r.values())) == B.ROW_TYPES for r in rows)
    table = run.steps
    assert len(table) == steps and min(r["n_contacts"] for r in rows) > 0
    for key in rows[0]:
        if key.endswith("_time_s"):
            continue
        assert list(table[key]) == [r[key] for r in rows], key


def test_bias_equals_the_jacobian_products() -> None:
    """The step's bias ``Jdot qdot`` (one pass, no temporaries) is the second output of
    :func:`contactlab.reduced._kernels.jacobian_products` at ``x = qdot``: the same
    operations in the same order, so equal to rounding (1e-13 of the largest entry), on
    the hand-built tree at random states and with a non-zero ``Sdot`` as well."""
    from contactlab.reduced import _kernels
    from contactlab.reduced import _step_kernels as K

    sim = Simulator(_tree_scene(), "reduced", "box-friction", "pgs", dt=1e-3)
    assert sim.compiled is not None
    tree = sim.compiled._tree
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0 = tree
    rng = np.random.default_rng(7)
    nq = sim.compiled._nq
    for _ in range(5):
        q, qdot = rng.uniform(-2.0, 2.0, nq), rng.uniform(-5.0, 5.0, nq)
        _, X, Sb, Sbd, _ = K._tree_kinematics(*tree, q, qdot)
        for Sd in (Sbd, rng.normal(size=Sbd.shape)):
            ours = K._bias(parent, X, Sb, Sd, ndof, dof0, qdot)
            _, theirs = _kernels.jacobian_products(parent, X, Sb, Sd, ndof, dof0, qdot, qdot)
            assert np.abs(theirs).max() > 0.0
            np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-13 * np.abs(theirs).max())


def test_tree_factor_of_the_mass_matrix() -> None:
    """``M = L^T L`` over the coordinates' tree (:func:`_ltl`): for ``M`` built from a
    factor with the tree's pattern (non-zero only towards ancestors) the factor comes back
    (the ``L^T L`` factor with a positive diagonal is unique) and ``M^-1 b`` is numpy's,
    to rounding (1e-12: ``M`` is well conditioned here, cond < 1e3); ``L`` has no entry
    outside the pattern (no fill-in); a matrix that is not positive definite is refused."""
    from contactlab.reduced import _step_kernels as K

    sim = Simulator(_tree_scene(), "reduced", "box-friction", "pgs", dt=1e-3)
    assert sim.compiled is not None
    _, _, parent, _, _, _, ndof, dof0 = sim.compiled._tree
    nq = sim.compiled._nq
    lam = K._dof_parents(parent, ndof, dof0, nq)
    related = np.eye(nq, dtype=bool)  # related[k, i]: i is k or an ancestor of k
    for k in range(nq):
        i = lam[k]
        while i >= 0:
            assert i < k
            related[k, i] = True
            i = lam[i]
    assert not related.all()  # the tree has branches: a sparse pattern
    rng = np.random.default_rng(3)
    for _ in range(5):
        L_true = np.where(related, rng.uniform(-0.5, 0.5, (nq, nq)), 0.0)
        L_true[np.diag_indices(nq)] = rng.uniform(1.0, 2.0, nq)
        M = L_true.T @ L_true
        assert np.linalg.cond(M) < 1e3
        L = M.copy()
        assert K._ltl(L, lam)
        factor = np.where(related, L, 0.0)
        np.testing.assert_allclose(factor, L_true, rtol=0, atol=1e-12)
        np.testing.assert_allclose(factor.T @ factor, M, rtol=0, atol=1e-12 * np.abs(M).max())
        b = rng.normal(size=nq)
        x = b.copy()
        K._ltl_solve(L, lam, x)
        np.testing.assert_allclose(x, np.linalg.solve(M, b), rtol=0, atol=1e-12)
    indefinite = M.copy()
    indefinite[0, 0] = -1.0
    assert not K._ltl(indefinite, lam)
