"""Attachments by null-space reduction (ArtiSynth's notes §0.17–0.21), maximal coordinates.

Facts: an attached body follows its master exactly (no drift); the reduced
step gives the same motion as the equivalent hard constraint (a fixed joint)
to solver accuracy, for chains of attachments and attachments to the world,
with and without contact; the reduced mass and the carried momenta are the
composite body's (§0.19), so with the explicit gyroscopic term an attached
pair moves exactly like one body with the pair's mass properties; bad
attachments give one clear line.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.attachment import Attachment
from contactlab.bodies import body_from_shape
from contactlab.errors import ConfigurationError
from contactlab.formulation import make_formulation
from contactlab.maximal import MaximalFormulation
from contactlab.maximal.attachment_map import AttachmentMap
from contactlab.scene import Body, JointSpec, Scene
from contactlab.shapes import Box, Plane
from contactlab.simulator import Simulator

A = Body("a", 2.0, [0.10, 0.20, 0.25])
B = Body("b", 0.5, [0.010, 0.020, 0.015])
C = Body("c", 0.3, [0.004, 0.003, 0.005])

T_AB = se3.make_transform(se3.exp_so3(np.array([0.3, -0.2, 0.5])), [0.4, 0.1, -0.2])
T_BC = se3.make_transform(se3.exp_so3(np.array([-0.1, 0.6, 0.2])), [0.0, -0.3, 0.25])
E_A = se3.make_transform(se3.exp_so3(np.array([0.2, 0.4, -0.3])), [0.1, -0.2, 1.5])
PHI_A = np.array([1.0, -2.0, 3.0, 0.3, 0.1, -0.2])  # tumbling [rad/s, m/s]


def _poses_and_twists(n: int) -> tuple[np.ndarray, np.ndarray]:
    E = [E_A, E_A @ T_AB, E_A @ T_AB @ T_BC][:n]
    phi = [PHI_A]
    phi.append(se3.adjoint(se3.inverse(T_AB)) @ PHI_A)
    phi.append(se3.adjoint(se3.inverse(T_BC)) @ phi[1])
    return np.array(E), np.array(phi[:n])


def _pair(n: int, attached: bool, **kw: object) -> Scene:
    """Bodies a, b (, c): b on a at T_AB, c on b at T_BC, attached or welded by fixed joints."""
    E, phi = _poses_and_twists(n)
    bodies = (A, B, C)[:n]
    links = [("b", "a", T_AB), ("c", "b", T_BC)][: n - 1]
    if attached:
        extra: dict = {"attachments": tuple(Attachment(k, m) for k, m, _ in links)}
    else:
        extra = {
            "joints": tuple(
                JointSpec(f"weld_{k}", "fixed", m, k, frame_parent=T, frame_child=np.eye(4))
                for k, m, T in links
            )
        }
    return Scene(
        "attached" if attached else "welded",
        bodies,
        initial_E=E,
        initial_phi=phi,
        collision=False,
        **extra,  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


def _poses(trajectory: dict) -> dict:
    """The run's trajectory with its transforms ``E`` (steps, nb, 4, 4) and twists ``phi``."""
    R, p = trajectory["rotation"], trajectory["position"]
    E = np.zeros(R.shape[:-2] + (4, 4))
    E[..., :3, :3], E[..., :3, 3], E[..., 3, 3] = R, p, 1.0
    return {"E": E, "phi": trajectory["twist"]}


def _trajectory(scene: Scene, steps: int, coriolis: str = "rotated", h: float = 1e-3) -> dict:
    form = MaximalFormulation(scene, coriolis=coriolis)
    sim = Simulator(scene, form, "frictionless", "kkt", dt=h)
    return _poses(sim.run(steps=steps).trajectory)


@pytest.mark.parametrize("coriolis", ["rotated", "explicit"])
@pytest.mark.parametrize("n", [2, 3])
def test_attachment_moves_like_a_fixed_joint(n: int, coriolis: str) -> None:
    """Same motion as the fixed-joint KKT to 1e-9 over 150 tumbling steps under gravity.

    The fixed joint's rows have exactly the range of P as null space, so the
    two velocity solves agree to the direct solver's rounding (~1e-13 a
    step); 1e-9 leaves room for 150 steps of accumulation.
    """
    att = _trajectory(_pair(n, True), 150, coriolis)
    weld = _trajectory(_pair(n, False), 150, coriolis)
    assert np.abs(att["E"] - weld["E"]).max() < 1e-9
    assert np.abs(att["phi"] - weld["phi"]).max() < 1e-9
    # the welded run drifts a little and is pulled back; the attached one cannot drift
    Ea = att["E"]
    assert np.abs(Ea[:, 1] - Ea[:, 0] @ T_AB).max() < 1e-13
    if n == 3:  # attached to an attached body (§0.18)
        assert np.abs(Ea[:, 2] - Ea[:, 0] @ T_AB @ T_BC).max() < 1e-13


def test_reduced_mass_is_the_composite_inertia() -> None:
    """``P^T M P`` at a's frame is the composite spatial inertia (the parallel-axis theorem)."""
    scene = _pair(2, True)
    form = MaximalFormulation(scene)
    state = form.initial_state()
    problem = form.assemble(state, 1e-3)
    assert problem.M.shape == (6, 6) and problem.G.shape == (0, 6)
    Mr = problem.M.toarray()
    # b's mass at its own centre c (in a's frame) with rotated inertia, moved to a's origin
    R, c = T_AB[:3, :3], T_AB[:3, 3]
    I_b = R @ np.diag(B.inertia) @ R.T
    cx = se3.bracket3(c)
    I_total = np.diag(A.inertia) + I_b + B.mass * (c @ c * np.eye(3) - np.outer(c, c))
    expected = np.zeros((6, 6))
    expected[:3, :3] = I_total
    expected[:3, 3:] = B.mass * cx
    expected[3:, :3] = -B.mass * cx
    expected[3:, 3:] = (A.mass + B.mass) * np.eye(3)
    assert np.abs(Mr - expected).max() < 1e-12 * np.abs(expected).max()


def test_attached_pair_is_one_rigid_body_with_explicit_gyroscopic_term() -> None:
    """With eq. 1.28's explicit term the pair is, to rounding, the single composite body.

    The composite body is built independently: mass, centre of mass and
    principal axes of the pair by the parallel-axis theorem and an
    eigendecomposition; its frame sits at the pair's centre of mass.  The
    carried momenta (§0.19's fictitious forces) must make a's frame move as a
    frame fixed in that body: ``E_a(t) = E_comp(t) T``.
    """
    R, c = T_AB[:3, :3], T_AB[:3, 3]
    m = A.mass + B.mass
    com = B.mass * c / m  # in a's frame
    I = (
        np.diag(A.inertia)
        + A.mass * (com @ com * np.eye(3) - np.outer(com, com))
        + R @ np.diag(B.inertia) @ R.T
        + B.mass * ((c - com) @ (c - com) * np.eye(3) - np.outer(c - com, c - com))
    )
    w, V = np.linalg.eigh(I)
    if np.linalg.det(V) < 0:
        V[:, 0] *= -1
    T_a_comp = se3.make_transform(V, com)  # composite frame in a's frame
    E0 = E_A @ T_a_comp
    phi0 = se3.adjoint(se3.inverse(T_a_comp)) @ PHI_A
    single = Scene(
        "composite",
        (Body("ab", m, w),),
        initial_E=E0[None],
        initial_phi=phi0[None],
        collision=False,
    )
    comp = _trajectory(single, 200, "explicit", h=2e-3)
    att = _trajectory(_pair(2, True), 200, "explicit", h=2e-3)
    E_a_from_comp = comp["E"][:, 0] @ se3.inverse(T_a_comp)
    assert np.abs(att["E"][:, 0] - E_a_from_comp).max() < 1e-10
    # and the motion is not trivial: a turned through more than a radian
    assert np.linalg.norm(se3.log_so3(att["E"][-1, 0, :3, :3].T @ E_A[:3, :3])) > 1.0


def test_world_attachment_holds_a_post_and_a_pendulum_swings_from_it() -> None:
    """A post held in the world stays exactly put; a pendulum jointed to it swings as from the
    world."""
    bob = Body("bob", 1.0, [0.01, 0.01, 0.01])
    post = Body("post", 5.0, [0.1, 0.1, 0.1])
    E_post = se3.make_transform(None, [0.0, 0.0, 2.0])
    pivot = se3.make_transform(None, [0.0, 0.0, -0.5])  # in the post's frame
    arm = se3.make_transform(None, [0.0, 0.0, 0.6])  # pivot in the bob's frame
    tilt = se3.make_transform(se3.exp_so3(np.array([0.0, 0.7, 0.0])))
    E_bob = E_post @ pivot @ tilt @ se3.inverse(arm)

    def hinge(parent: str | None, frame: np.ndarray) -> JointSpec:
        return JointSpec(
            "hinge", "revolute", parent, "bob", frame_parent=frame, frame_child=arm, axis=[0, 1, 0]
        )

    held = Scene(
        "held",
        (post, bob),
        joints=(hinge("post", pivot),),
        attachments=(Attachment("post"),),
        initial_E=np.array([E_post, E_bob]),
        collision=False,
    )
    world = Scene(
        "world",
        (bob,),
        joints=(hinge(None, E_post @ pivot),),
        initial_E=E_bob[None],
        collision=False,
    )
    a = _trajectory(held, 200, h=2e-3)
    b = _trajectory(world, 200, h=2e-3)
    assert np.array_equal(a["E"][:, 0], np.broadcast_to(E_post, a["E"][:, 0].shape))
    assert np.abs(a["E"][:, 1] - b["E"][:, 0]).max() < 1e-9
    # it did swing: the bob's height changed by more than 5 cm
    assert np.ptp(a["E"][:, 1, 2, 3]) > 0.05


def test_attached_box_lands_like_a_welded_one() -> None:
    """Two boxes dropped on the ground, attached or welded: same landing to solver accuracy.

    Both use the frictionless QP through clarabel (qpsolvers) at 1e-10; contacts of the
    two boxes with each other are excluded in both (attached bodies never
    collide, welded ones are jointed).
    """
    big, Eb = body_from_shape("a", Box(half_extents=[0.2, 0.15, 0.1]), mass=2.0)
    small, Es = body_from_shape("b", Box(half_extents=[0.05, 0.05, 0.05]), mass=0.5)
    T = se3.make_transform(None, [0.18, 0.1, 0.12])  # overlaps the big box's corner
    E0 = se3.make_transform(se3.exp_so3(np.array([0.1, 0.05, 0.0])), [0.0, 0.0, 0.35])

    def scene(attached: bool) -> Scene:
        kw: dict = (
            {"attachments": (Attachment("b", "a"),)}
            if attached
            else {"joints": (JointSpec("weld", "fixed", "a", "b", frame_parent=T),)}
        )
        return Scene(
            "drop",
            (big, small),
            static_shapes=(Plane(),),
            initial_E=np.array([E0, E0 @ T]),
            **kw,
        )

    runs = []
    for attached in (True, False):
        sim = Simulator(
            scene(attached),
            "maximal",
            "frictionless",
            "qpsolvers:clarabel",
            dt=4e-3,
            model_options={"solver_tol": 1e-10},
        )
        runs.append(sim.run(steps=100))
    att, weld = runs
    assert att.status == weld.status
    assert att.steps["n_contacts"].max() > 0  # it landed
    assert np.array_equal(att.steps["n_contacts"].to_numpy(), weld.steps["n_contacts"].to_numpy())
    Ea, Ew = _poses(att.trajectory)["E"], _poses(weld.trajectory)["E"]
    assert np.abs(Ea - Ew).max() < 1e-6
    # at rest on the ground after landing, the small box never drifted from the big one
    assert np.abs(Ea[:, 1] - Ea[:, 0] @ T).max() < 1e-13


def test_map_shapes_and_order() -> None:
    """P maps active twists to all twists; a chain is composed to its root whatever the order."""
    scene = _pair(3, True)
    # list the attachments child-first: the map orders them root-first itself
    scene = scene.with_(attachments=(Attachment("c", "b"), Attachment("b", "a")))
    E, phi = _poses_and_twists(3)
    amap = AttachmentMap(scene, E)
    assert amap.P.shape == (18, 6)
    assert list(amap.active) == [0] and list(amap.attached) == [1, 2]
    assert np.abs(amap.expand(phi[0]) - phi).max() < 1e-12


@pytest.mark.parametrize(
    ("attachments", "needle"),
    [
        ((Attachment("z", "a"),), "body 'z' is not in scene"),
        ((Attachment("b", "q"),), "master 'q' is not in scene"),
        ((Attachment("b", "a"), Attachment("b", None)), "attached twice"),
        ((Attachment("b", "c"), Attachment("c", "b")), "form a loop"),
        (("b",), "must be Attachment(body, master)"),
    ],
)
def test_bad_attachments_are_one_line(attachments: tuple, needle: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        Scene("bad", (A, B, C), attachments=attachments)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_bad_attachment_arguments() -> None:
    with pytest.raises(ConfigurationError, match="attached to itself"):
        Attachment("a", "a")
    with pytest.raises(ConfigurationError, match="not a rigid transform"):
        Attachment("b", "a", transform=2 * np.eye(4))


def test_formulations_without_attachments_refuse_them() -> None:
    """The reduced formulation names the fix instead of ignoring the attachments."""
    scene = Scene(
        "tree",
        (A, B),
        joints=(JointSpec("free", "free", None, "a"),),
        attachments=(Attachment("b", "a"),),
    )
    with pytest.raises(ConfigurationError, match="--formulation maximal") as info:
        make_formulation("reduced", scene)
    assert "\n" not in str(info.value)


def test_redundant_joint_on_attached_bodies_is_named() -> None:
    """A joint between a body and the body it is attached to repeats the attachment."""
    from contactlab.errors import SingularSystemError

    scene = _pair(2, True).with_(
        joints=(JointSpec("weld", "fixed", "a", "b", frame_parent=T_AB, frame_child=np.eye(4)),)
    )
    with pytest.raises(SingularSystemError, match="'weld'"):
        MaximalFormulation(scene).initial_state()
