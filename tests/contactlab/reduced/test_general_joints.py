"""Joints generated from their transform Q(q) (Si & Guenter) against the hand-written ones.

The generated S and Sdot come from symbolic differentiation of Q; the
hand-written joints from closed forms (Sueda's notes §2.4).  Both are exact, so
they agree to rounding: 1e-12 on entries of order one.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable

import numpy as np
import pytest
import sympy as sp

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.geometry.primitives import (
    exp_rotation,
    rot,
    rot_x,
    rot_y,
    rot_z,
    screw,
    trans,
)
from contactlab.joints.kinds import make_joint
from contactlab.joints.maps import Joint, PlanarJoint
from contactlab.joints.spline import CUMULATIVE
from contactlab.joints.transform import TransformJoint
from contactlab.reduced import Tree, simulate_adaptive
from contactlab.scene import JointSpec, Scene

from .conftest import box_body

AXIS = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
TOL = 1e-12


def _q(n: int) -> tuple[sp.Symbol, ...]:
    return tuple(sp.symbols(f"q0:{n}", real=True))


def _vec(a: np.ndarray) -> list[sp.Float]:
    return [sp.Float(float(x)) for x in a]


def _spline_curve_factors(frames: np.ndarray, s: sp.Symbol) -> list[sp.Matrix]:
    """REDMAX supplement Alg. 4 on the first segment, ``s in [0, 1)``, as four factors."""
    twists = se3.log_se3(se3.inverse(np.roll(frames, 1, axis=0)) @ frames)
    weights = [sum(CUMULATIVE[i, j] * s**j for j in range(4)) for i in range(4)]
    return [sp.Matrix(frames[0])] + [screw(twists[m], weights[m]) for m in (1, 2, 3)]


def _surface_factors(values: np.ndarray, q: tuple[sp.Symbol, ...]) -> list[sp.Matrix]:
    """REDMAX supplement Alg. 5 on the first patch: translations, then XYZ
    rotations by bicubic splines."""
    from contactlab.joints.spline import BASIS

    C = values[:4, :4, :]
    b1 = [sum(BASIS[i, j] * q[0] ** j for j in range(4)) for i in range(4)]
    b2 = [sum(BASIS[i, j] * q[1] ** j for j in range(4)) for i in range(4)]
    f = [sum(b1[a] * C[a, b, k] * b2[b] for a in range(4) for b in range(4)) for k in range(6)]
    return [trans(f[0], f[1], f[2]), rot_x(f[3]), rot_y(f[4]), rot_z(f[5])]


def _pairs() -> dict[str, Callable[[], tuple[Joint, TransformJoint, float]]]:
    """Builders of (hand-written, generated, scale of the samples) for every built-in kind.

    Deriving a generated joint takes sympy seconds: each is built on first use
    (:func:`pair`), not when the module is collected.
    """
    rng = np.random.default_rng(0)
    q1, q2, q3, q6 = _q(1), _q(2), _q(3), _q(6)
    planar = PlanarJoint(AXIS)
    u, v = planar.screws[0, 3:], planar.screws[1, 3:]
    frames = se3.make_transform(
        se3.exp_so3(0.6 * rng.standard_normal((5, 3))), rng.standard_normal((5, 3))
    )
    values = np.zeros((4, 4, 6))
    values[..., :3] = rng.standard_normal((4, 4, 3))
    values[..., 3:] = 0.3 * rng.standard_normal((4, 4, 3))
    s = sp.Symbol("s", real=True)
    return {
        "fixed": lambda: (make_joint("fixed"), TransformJoint(sp.eye(4), []), 1.0),
        "revolute": lambda: (
            make_joint("revolute", AXIS),
            TransformJoint(rot(AXIS, q1[0]), q1),
            3.0,
        ),
        "prismatic": lambda: (
            make_joint("prismatic", AXIS),
            TransformJoint(trans(*(sp.Matrix(_vec(AXIS)) * q1[0])), q1),
            1.0,
        ),
        "planar": lambda: (
            planar,
            TransformJoint(trans(*(sp.Matrix(_vec(u)) * q2[0] + sp.Matrix(_vec(v)) * q2[1])), q2),
            1.0,
        ),
        "translational": lambda: (make_joint("translational"), TransformJoint(trans(*q3), q3), 1.0),
        "universal": lambda: (
            make_joint("universal"),
            TransformJoint(rot_x(q2[0]) * rot_y(q2[1]), q2),
            3.0,
        ),
        "spherical_euler": lambda: (
            make_joint("spherical_euler"),
            TransformJoint(rot_x(q3[0]) * rot_z(q3[1]) * rot_x(q3[2]), q3),
            3.0,
        ),
        "spherical": lambda: (make_joint("spherical"), TransformJoint(exp_rotation(q3), q3), 2.0),
        "cylindrical": lambda: (
            make_joint("cylindrical", AXIS),
            TransformJoint(rot(AXIS, q2[0]) * trans(*(sp.Matrix(_vec(AXIS)) * q2[1])), q2),
            2.0,
        ),
        "free": lambda: (
            make_joint("free"),
            TransformJoint([exp_rotation(q6[:3]), trans(*q6[3:])], q6),
            2.0,
        ),
        "free_translation_first": lambda: (
            make_joint("free", params={"order": "translation_first"}),
            TransformJoint([trans(*q6[:3]), exp_rotation(q6[3:])], q6),
            2.0,
        ),
        "spline_curve": lambda: (
            make_joint("spline_curve", params={"frames": frames}),
            TransformJoint(_spline_curve_factors(frames, s), [s]),
            -1.0,
        ),
        "spline_surface": lambda: (
            make_joint("spline_surface", params={"values": values}),
            TransformJoint(_surface_factors(values, q2), q2),
            -1.0,
        ),
    }


_BUILDERS = _pairs()
NAMES = sorted(_BUILDERS)


@functools.cache
def pair(name: str) -> tuple[Joint, TransformJoint, float]:
    """The (hand-written, generated, scale) triple of joint kind ``name``, built once."""
    return _BUILDERS[name]()


def _sample(name: str, joint: Joint, rng: np.random.Generator) -> np.ndarray:
    scale = pair(name)[2]
    if name == "spline_curve":
        return rng.uniform(0.0, 1.0, 1)  # the segment written out in _spline_curve_factors
    if name == "spline_surface":
        return rng.uniform(0.0, 1.0, 2)  # the patch written out in _surface_factors
    v = rng.uniform(-1.0, 1.0, joint.ndof)
    if name.startswith("free") or name == "spherical":
        v[:3] = v[:3] / np.linalg.norm(v[:3]) * rng.uniform(0.2, scale)
    return v * (1.0 if name.startswith("free") or name == "spherical" else scale)


@pytest.mark.parametrize("name", NAMES)
def test_generated_S_and_Sdot_equal_hand_written(name: str) -> None:
    hand, generated, _ = pair(name)
    assert generated.ndof == hand.ndof
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = _sample(name, hand, rng)
        qdot = rng.standard_normal(hand.ndof)
        Qh, Sh, Sdh = hand.evaluate(q, qdot)
        Qg, Sg, Sdg = generated.evaluate(q, qdot)
        np.testing.assert_allclose(Qg, Qh, atol=TOL)
        np.testing.assert_allclose(Sg, Sh, atol=TOL)
        np.testing.assert_allclose(Sdg, Sdh, atol=TOL)


def _chain(kinds: list[tuple[str, Joint]], q0: list[np.ndarray]) -> Scene:
    bodies, joints = [], []
    half = se3.make_transform(None, (0.05, 0.01, 0.0))
    for i, (_, joint) in enumerate(kinds):
        bodies.append(box_body(f"b{i}", 1.0 + 0.2 * i, (0.1, 0.02, 0.03)))
        joints.append(
            JointSpec(
                f"j{i}",
                "custom",
                None if i == 0 else f"b{i - 1}",
                f"b{i}",
                frame_parent=np.eye(4) if i == 0 else half,
                frame_child=se3.inverse(half),
                params={"joint": joint},
                q0=q0[i],
                qdot0=np.full(joint.ndof, 0.5),
            )
        )
    return Scene("chain", tuple(bodies), tuple(joints))


def test_generated_joints_give_the_same_trajectories() -> None:
    """A four-joint chain (revolute, universal, Euler ball, cylindrical) for 0.3 s, DOP853."""
    names = ["revolute", "universal", "spherical_euler", "cylindrical"]
    rng = np.random.default_rng(5)
    q0 = [_sample(n, pair(n)[0], rng) * 0.5 for n in names]
    ends = []
    for which in (0, 1):
        tree = Tree.from_scene(_chain([(n, pair(n)[which]) for n in names], q0))
        q, qdot = tree.initial_coordinates()
        traj = simulate_adaptive(tree, q, qdot, 0.3, rtol=1e-11, atol=1e-12)
        ends.append(np.concatenate([traj.q[-1], traj.qdot[-1]]))
    # same equations to rounding; the integrators' step sequences may differ slightly
    np.testing.assert_allclose(ends[1], ends[0], atol=1e-9)


@pytest.mark.parametrize(
    "names",
    [
        ["free", "spherical", "prismatic", "fixed", "planar", "translational"],
        ["free_translation_first", "spline_curve", "spline_surface"],
    ],
)
def test_every_other_kind_gives_the_same_trajectories(names: list[str]) -> None:
    """The remaining built-in kinds, chained, for 0.2 s (DOP853): the generated chain
    follows the hand-written one to 1e-9.  The generated spline joints write out the
    first segment (patch) only, so their coordinates are checked to stay in [0, 1)."""
    rng = np.random.default_rng(6)
    q0 = [
        _sample(n, pair(n)[0], rng) * 0.5 + (0.4 if n.startswith("spline") else 0.0) for n in names
    ]
    ends, trajs = [], []
    for which in (0, 1):
        tree = Tree.from_scene(_chain([(n, pair(n)[which]) for n in names], q0))
        q, qdot = tree.initial_coordinates()
        traj = simulate_adaptive(tree, q, qdot, 0.2, rtol=1e-11, atol=1e-12)
        ends.append(np.concatenate([traj.q[-1], traj.qdot[-1]]))
        trajs.append((tree, traj))
    tree, traj = trajs[0]
    assert np.abs(traj.q[-1] - traj.q[0]).max() > 1e-2  # the chain moves
    for n in names:
        if n.startswith("spline"):
            s = traj.q[:, tree.dofs(f"j{names.index(n)}")]
            assert s.min() >= 0.0 and s.max() < 1.0
    np.testing.assert_allclose(ends[1], ends[0], atol=1e-9)


@pytest.mark.skipif(
    shutil.which("cc") is None and shutil.which("gcc") is None,
    reason="no C compiler: generated joints use the numba backend only",
)
def test_c_and_numba_backends_give_the_same_joint_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two code generators on one expression: two factors (the composition) with a
    parameter, two joints evaluated by one compiled call each, and one joint alone; both
    evaluate the same formulas in double precision, so they agree to rounding (1e-13)."""
    q = _q(2)
    L = sp.Symbol("L", real=True)
    Q = [rot_z(q[0]) * trans(L, 0, 0), rot_x(q[1]) * trans(0, 0, L * q[0])]
    rng = np.random.default_rng(7)
    x, xdot = rng.uniform(-1, 1, 4), rng.standard_normal(4)
    dof0, nodes = np.array([0, 2]), np.array([1, 0])
    params = np.array([[0.3], [0.7]])
    out = {}
    for backend in ("numba", "c"):
        monkeypatch.setenv("CONTACTLAB_JOINT_BACKEND", backend)
        joint = TransformJoint(Q, q, {L: 0.3})
        stacks = np.empty((2, 4, 4)), np.zeros((2, 6, 6)), np.zeros((2, 6, 6))
        joint.batch[1](x, xdot, dof0, nodes, params, *stacks)
        out[backend] = [*stacks, *joint.evaluate(x[:2], xdot[:2])]
    assert all(np.all(np.isfinite(a)) for a in out["c"])
    assert np.abs(out["c"][2]).max() > 0.1  # Sdot is not trivially zero
    for a, b in zip(out["c"], out["numba"]):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)


# -- bad input ------------------------------------------------------------
def test_not_a_rigid_transform_is_refused() -> None:
    (q,) = _q(1)
    scaled = rot_z(q)
    scaled[0, 0] = 2 * sp.cos(q)
    with pytest.raises(ConfigurationError, match="not a rigid transform"):
        TransformJoint(scaled, [q])
    bottom = rot_z(q)
    bottom[3, 0] = q
    with pytest.raises(ConfigurationError, match="bottom row"):
        TransformJoint(bottom, [q])


def test_coordinate_that_does_not_appear_is_refused() -> None:
    a, b = _q(2)
    with pytest.raises(ConfigurationError, match="coordinate q1 does not appear"):
        TransformJoint(rot_z(a), [a, b])


def test_unknown_symbol_is_refused() -> None:
    a, L = sp.symbols("a L", real=True)
    with pytest.raises(ConfigurationError, match=r"\['L'\].*parameters"):
        TransformJoint(rot_z(a) * trans(L, 0, 0), [a])


def test_singular_parameterization_at_the_initial_state_is_refused() -> None:
    """Euler angles XZX lose a rank at q_2 = 0 (gimbal lock): a scene starting there fails."""
    q = _q(3)
    Q = [rot_x(q[0]), rot_x(q[1]), rot_z(q[2])]  # two turns about x: always singular
    spec = JointSpec("ball", "transform", None, "b", params={"Q": Q, "coordinates": q})
    scene = Scene("s", (box_body("b", 1.0, (0.1, 0.1, 0.1)),), (spec,))
    with pytest.raises(ConfigurationError, match=r"joint 'ball'.*singular at the initial state"):
        Tree.from_scene(scene)
    sphere = [rot_z(q[0]), rot_y(q[1]), rot_x(q[2])]  # ZYX angles: gimbal lock at q_1 = pi/2
    TransformJoint(sphere, q).check_regular(np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ConfigurationError, match="rank 2 < 3"):
        TransformJoint(sphere, q).check_regular(np.array([0.1, np.pi / 2, 0.3]))


def test_transform_kind_from_strings_builds_the_same_joint() -> None:
    """A joint in a scene file: Q as text, coordinates and parameters by name."""
    joint = make_joint(
        "transform",
        params={
            "Q": "Matrix([[cos(t), -sin(t), 0, 0], [sin(t), cos(t), 0, 0], [0, 0, 1, k*t], "
            "[0, 0, 0, 1]])",
            "coordinates": ["t"],
            "parameters": {"k": 0.02},
        },
    )
    _, S, Sd = joint.evaluate(np.array([0.7]), np.array([1.3]))
    np.testing.assert_allclose(S[:, 0], [0, 0, 1, 0, 0, 0.02], atol=TOL)
    np.testing.assert_allclose(Sd, 0.0, atol=TOL)


def test_factors_given_as_text_with_the_primitives() -> None:
    """``Q`` as a list of texts using :mod:`contactlab.geometry.primitives` is the product of
    the parsed factors: the same S and Sdot as the symbolic universal joint (1e-12)."""
    a, b = sp.symbols("a b", real=True)
    text = TransformJoint(["rot_x(a)", "rot_y(b) * trans(0, 0, L)"], ["a", "b"], {"L": 0.2})
    symbolic = TransformJoint([rot_x(a), rot_y(b) * trans(0, 0, 0.2)], [a, b])
    assert text.source is not None and symbolic.source is None
    rng = np.random.default_rng(3)
    for _ in range(3):
        x, xdot = rng.uniform(-2, 2, 2), rng.standard_normal(2)
        for got, ref in zip(text.evaluate(x, xdot), symbolic.evaluate(x, xdot)):
            np.testing.assert_allclose(got, ref, rtol=0, atol=TOL)


def test_readme_screw_joint() -> None:
    """The README's screw, Q = R_z(t) T(0, 0, p t) as text: S = (0, 0, 1, 0, 0, p), Sdot = 0,
    and the nut advances p t along the axis."""
    joint = make_joint(
        "transform",
        params={
            "Q": "rot_z(t) * trans(0, 0, p * t)",
            "coordinates": ["t"],
            "parameters": {"p": 0.01},
        },
    )
    Q, S, Sd = joint.evaluate(np.array([2.5]), np.array([1.7]))
    np.testing.assert_allclose(S[:, 0], [0, 0, 1, 0, 0, 0.01], atol=TOL)
    np.testing.assert_allclose(Sd, 0.0, atol=TOL)
    np.testing.assert_allclose(Q[:3, 3], [0, 0, 0.025], atol=TOL)


def test_generated_joints_in_contact_move_as_the_hand_written_ones() -> None:
    """Contact in reduced coordinates (rows N J): the 2-link chain of ``jf-external`` pressing
    and sliding on the floor, its revolute joints replaced by ones generated from
    ``Q = rot(axis, q)``, follows the hand-written chain to solver accuracy over 0.1 s."""
    from dataclasses import replace

    from contactlab.simulator import Simulator
    from scenarios.joint_friction import external

    base = external(angle_deg=44.4)  # joint friction off: its geometry knows the built-in kinds
    scene = base.with_(joints=tuple(replace(j, friction=None) for j in base.joints))
    (q,) = _q(1)
    generated = scene.with_(
        joints=tuple(
            replace(j, kind="transform", params={"Q": rot(j.axis, q), "coordinates": [q]})
            if j.kind == "revolute"
            else j
            for j in scene.joints
        )
    )
    assert sum(j.kind == "transform" for j in generated.joints) >= 2
    finals = []
    for s in (scene, generated):
        sim = Simulator(s, "reduced", "frictionless", "qpsolvers:piqp", dt=1e-2)
        run = sim.run(steps=10)
        assert run.steps["status"].eq("optimal").all()
        assert run.steps["n_contacts"].min() >= 1
        finals.append(run.trajectory["position"])
    assert np.abs(finals[0][-1] - finals[0][0]).max() > 1e-3  # it moves
    np.testing.assert_allclose(finals[1], finals[0], atol=1e-8)


# -- constant screws: the prepared model's revolute and prismatic nodes -----------
def _screw_cases() -> list[tuple[str, TransformJoint, list[int]]]:
    """Generated joints and the node kinds a prepared model gives them (1 revolute,
    2 prismatic, 0 fixed, 4 evaluated from the generated code)."""
    from contactlab.reduced import _fast

    R, P, F, O = _fast.REVOLUTE, _fast.PRISMATIC, _fast.FIXED, _fast.OTHER
    q = _q(2)
    L = sp.Symbol("L", real=True)
    cases = [(name, pair(name)[1]) for name in ("fixed", "revolute", "prismatic", "planar")]
    cases += [(name, pair(name)[1]) for name in ("translational", "cylindrical", "universal")]
    cases += [
        # a turn about a line off the origin, written as one matrix and as three factors
        (
            "offset",
            TransformJoint(
                trans(L, 0.2, 0) * rot(AXIS, q[0]) * trans(-L, -0.2, 0) * rot_x(0.4),
                [q[0]],
                {L: 0.3},
            ),
        ),
        (
            "offset_factors",
            TransformJoint([trans(L, 0.2, 0), rot(AXIS, q[0]), trans(0, 0, L)], [q[0]], {L: 0.3}),
        ),
        ("hook", TransformJoint([rot_x(q[0]), rot_y(q[1])], q)),
        ("turn_slide", TransformJoint([rot_z(q[0]), trans(q[1], 0, 0)], q)),
        ("helical", TransformJoint(rot_z(q[0]) * trans(0, 0, L * q[0]), [q[0]], {L: 0.1})),
        ("double_rate", TransformJoint(rot_z(2 * q[0]), [q[0]])),
        ("slide_turn_reversed", TransformJoint([trans(q[1], 0, 0), rot_z(q[0])], q)),
    ]
    kinds = {
        "fixed": [F],
        "revolute": [R],
        "prismatic": [P],
        "planar": [P, P],
        "translational": [P, P, P],
        "cylindrical": [R, P],  # rot(a, q0) trans(a q1): commuting constant columns
        "universal": [O],  # rot_x(q0) rot_y(q1) in one matrix: its S depends on q1
        "offset": [R],
        "offset_factors": [R],
        "hook": [R, R],
        "turn_slide": [R, P],
        "helical": [O],  # a screw with a pitch
        "double_rate": [O],  # |omega| = 2
        "slide_turn_reversed": [O],  # coordinates out of factor order
    }
    return [(name, joint, kinds[name]) for name, joint in cases]


def test_constant_screw_joints_run_as_revolute_and_prismatic_nodes() -> None:
    """A generated joint whose factors have constant Jacobians becomes revolute and
    prismatic nodes of the prepared model, whatever expression it was written with;
    a chain of all cases then gives the tree path's forward dynamics (the generated
    S, Sdot) and the dense mass matrix to rounding (1e-10 relative)."""
    from contactlab.reduced import forward_dynamics_recursive, forward_kinematics, mass_matrix
    from contactlab.reduced.model import Model, _elements

    cases = _screw_cases()
    for name, joint, kinds in cases:
        assert [e.kind for e in _elements(joint)] == kinds, name
    rng = np.random.default_rng(11)
    q0 = [rng.uniform(-1, 1, joint.ndof) for _, joint, _ in cases]
    tree = Tree.from_scene(_chain([(name, joint) for name, joint, _ in cases], q0))
    model = Model(tree)
    assert model.has_other_joints  # the helical and the other non-screw cases
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, tree.nq)
        qdot = rng.standard_normal(tree.nq)
        ref = forward_dynamics_recursive(tree, q, qdot)
        got = model.forward_dynamics(q, qdot)
        assert np.abs(got - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())
        M = mass_matrix(forward_kinematics(tree, q))
        assert np.abs(model.mass_matrix(q) - M).max() <= 1e-10 * np.abs(M).max()


def test_generated_revolute_chain_is_the_hand_written_model() -> None:
    """A chain of six revolute joints about alternating y and z axes, hand-written and
    generated from R_y(q), R_z(q): the prepared models hold the same node arrays
    (exactly), so their forward dynamics are the same numbers."""
    from contactlab.reduced.model import Model

    (q,) = _q(1)
    axes = [(0.0, 1.0, 0.0), (0.0, 0.0, 1.0)] * 3
    hand = [(f"h{i}", make_joint("revolute", a)) for i, a in enumerate(axes)]
    generated = [
        (f"g{i}", TransformJoint(rot_y(q) if a[1] else rot_z(q), [q])) for i, a in enumerate(axes)
    ]
    rng = np.random.default_rng(2)
    q0 = [rng.uniform(-1, 1, 1) for _ in axes]
    models = [Model(Tree.from_scene(_chain(kinds, q0))) for kinds in (hand, generated)]
    assert not models[1].has_other_joints and models[1].screw_only
    np.testing.assert_array_equal(models[1].topo, models[0].topo)
    np.testing.assert_array_equal(models[1].geom, models[0].geom)
    x, xdot = rng.uniform(-2, 2, len(axes)), rng.standard_normal(len(axes))
    np.testing.assert_array_equal(
        models[1].forward_dynamics(x, xdot), models[0].forward_dynamics(x, xdot)
    )
