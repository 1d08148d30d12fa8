"""Robots of the ``example-robot-data`` package on the ground, in reduced coordinates.

* ``solo12-stand``: the Solo-12 quadruped on its floating base, standing on the
  ground on PD drives (joint springs ``kp`` and dampers ``kd`` about the
  standing pose, taken implicitly by the reduced formulation).
* ``solo12-collapse``: the same quadruped released in the same pose with no
  drives: the legs fold and the trunk comes down.
* ``humanoid-topple``: a humanoid (Unitree G1, 29 joints) released standing
  on the ground with no drives and a forward tilt rate: it folds and falls.
* ``arm-push``: a UR5 arm on a fixed base, driven by PD along a joint
  trajectory, whose tool pushes a box across a table.
* ``allegro-grasp``: the Allegro hand, palm up, closing its fingers on a ball
  lying in the palm.

The URDF files are read by :func:`contactlab.reduced.urdf.load_urdf` with
``collision="convex"`` (every mesh collides as its convex hull).  The module
registers its scenarios only when the package's files are installed
(``pip install example-robot-data``, part of the test extra).

A PD drive ``tau = kp (q_ref - q) - kd qdot`` is a joint spring of stiffness
``kp`` and rest ``q_ref`` with a damper ``kd`` (:class:`JointSpec` fields):
the reduced formulation takes both implicitly (``M + h D - h^2 K``), so robot
gains stay stable at millisecond steps.  A reference that moves along a
trajectory adds ``kp (q_ref(t) - q_ref(0))`` as an explicit joint torque
(``Scene.joint_torque``) to the spring about ``q_ref(0)``: the sum is the PD law
with the stiffness still implicit.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError, ModelFileWarning
from contactlab.scenario import scenario
from contactlab.scene import Scene

Array = NDArray[np.float64]


def _robots() -> Path | None:
    """The ``robots`` folder of ``example-robot-data``, or ``None`` when it is not installed."""
    try:
        from contactlab.reduced.urdf_geometry import example_robot_data

        root = example_robot_data()
    except Exception:  # the package is absent or its data folder is missing
        return None
    return root if (root / "solo_description/robots/solo12.urdf").is_file() else None


ROBOTS = _robots()

#: Solo-12's standing pose ("straight_standing" of the package's SRDF) [rad].
SOLO12_STAND = {
    "FL_HFE": 0.8, "FL_KFE": -1.6, "FR_HFE": 0.8, "FR_KFE": -1.6,
    "HL_HFE": -0.8, "HL_KFE": 1.6, "HR_HFE": -0.8, "HR_KFE": 1.6,
}  # fmt: skip


def load_robot(relative: str, *, fixed_base: bool) -> Scene:
    """An ``example-robot-data`` URDF (path relative to its ``robots`` folder), meshes as
    convex hulls, its loader's notes on what the scene does not hold silenced."""
    if ROBOTS is None:
        raise ConfigurationError(
            "the example-robot-data package is not installed; `pip install example-robot-data`"
        )
    from contactlab.reduced.urdf import load_urdf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        return load_urdf(ROBOTS / relative, fixed_base=fixed_base, collision="convex")


def set_joints(
    scene: Scene,
    q0: Mapping[str, float] | None = None,
    *,
    kp: float = 0.0,
    kd: float = 0.0,
    drive: Callable[[str], bool] | None = None,
) -> Scene:
    """``scene`` with joint coordinates ``q0`` (by joint name, 0 for the others) and, on
    the one-coordinate joints that ``drive`` selects (all by default), PD drives of
    stiffness ``kp`` and damping ``kd`` holding ``q0``."""
    q0 = dict(q0 or {})
    unknown = sorted(set(q0) - {j.name for j in scene.joints})
    if unknown:
        raise ConfigurationError(f"{scene.name}: no joints {unknown}")
    joints = []
    for j in scene.joints:
        if j.kind in ("revolute", "prismatic"):
            value = np.array([q0.get(j.name, 0.0)])
            j = replace(j, q0=value)
            if drive is None or drive(j.name):
                j = replace(j, stiffness=float(kp), damping=float(kd), rest=value)
        joints.append(j)
    return scene.with_(joints=tuple(joints))


def shape_points(shape: object) -> Array:
    """Points of a shape in its body frame whose lowest is the shape's lowest point for any
    pose: a mesh's vertices, a box's corners; a sphere, capsule or cylinder is sampled
    finely enough for placing a robot 1e-4 m above the ground."""
    from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Sphere

    if isinstance(shape, Mesh):
        local = np.asarray(shape.vertices)
    elif isinstance(shape, Box):
        signs = np.array(np.meshgrid(*[[-1.0, 1.0]] * 3)).reshape(3, -1).T
        local = signs * shape.half_extents
    elif isinstance(shape, (Sphere, Capsule, Cylinder)):
        u = np.random.default_rng(0).normal(size=(4000, 3))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        r = shape.radius
        if isinstance(shape, Sphere):
            local = r * u
        else:
            half = shape.half_height
            ends = np.array([[0.0, 0.0, -half], [0.0, 0.0, half]])
            if isinstance(shape, Capsule):
                local = np.vstack([r * u + e for e in ends])
            else:
                ring = r * u[:, :2] / np.linalg.norm(u[:, :2], axis=1, keepdims=True)
                local = np.vstack([np.c_[ring, np.full(len(ring), e[2])] for e in ends])
    else:
        return np.zeros((0, 3))
    pose = np.asarray(shape.pose)  # type: ignore[attr-defined]
    return np.asarray(local @ pose[:3, :3].T + pose[:3, 3])


def lowest_point(scene: Scene, q: Array | None = None) -> float:
    """The lowest height [m] of the scene's collision shapes at coordinates ``q``
    (default: the joints' ``q0``)."""
    from contactlab.reduced import Tree, forward_kinematics

    tree = Tree.from_scene(scene)
    q = tree.initial_coordinates()[0] if q is None else q
    E = forward_kinematics(tree, q).E
    low = np.inf
    for i, body in enumerate(scene.bodies):
        for shape in body.shapes:
            p = shape_points(shape)
            if len(p):
                low = min(low, float((p @ E[i, :3, 2] + E[i, 2, 3]).min()))
    return low


def without_initial_overlaps(scene: Scene) -> Scene:
    """``scene`` with the pairs of bodies whose shapes touch in the initial pose excluded from
    collision (``Scene.exclude_pairs``), as a robot's list of disabled collision pairs marks
    the links that always touch: convex hulls of neighbouring links overlap by construction."""
    from contactlab.collision import collide
    from contactlab.reduced import Tree, forward_kinematics

    tree = Tree.from_scene(scene)
    E = forward_kinematics(tree, tree.initial_coordinates()[0]).E
    contacts = collide(scene.with_(static_shapes=()), E)
    pairs = set()
    for a, b in zip(contacts.body_a, contacts.body_b, strict=True):
        if a >= 0 and b >= 0:
            pairs.add(tuple(sorted((scene.bodies[a].name, scene.bodies[b].name))))
    return scene.with_(exclude_pairs=(*scene.exclude_pairs, *sorted(pairs)))


def stand_on_ground(scene: Scene, clearance: float = 1e-3, tilt_rate: float = 0.0) -> Scene:
    """``scene`` (a floating robot) lifted so its lowest shape point is ``clearance`` [m]
    above the ground plane z = 0, which is added, with the base turning about the world y
    axis at ``tilt_rate`` [rad/s] about its lowest point."""
    from contactlab.modelfiles import place

    scene = without_initial_overlaps(scene)
    low = lowest_point(scene)
    scene = place(scene, ground=True, height=clearance - low)
    if tilt_rate:
        root = next(j for j in scene.joints if j.parent is None)
        if root.kind != "free":
            raise ConfigurationError(f"{scene.name}: tilting needs a floating base")
        # the free joint's coordinates: position of the root frame, then rotation vector
        # (world axes); a turn about the world y axis through the ground point below the
        # base moves the base forward at tilt_rate * its height
        height = float(np.asarray(root.frame_parent)[2, 3])
        qdot = np.zeros(6)
        qdot[0] = tilt_rate * height
        qdot[4] = tilt_rate
        joints = tuple(replace(j, qdot0=qdot) if j is root else j for j in scene.joints)
        scene = scene.with_(joints=joints)
    return scene


if ROBOTS is not None:

    @scenario("solo12-stand", formulations=("reduced",))
    def solo12_stand(
        kp: float = 20.0, kd: float = 0.5, duration: float = 1.0, dt: float = 1e-3
    ) -> Scene:
        """Solo-12 standing on the ground on PD drives holding its standing pose.

        kp : drive stiffness [N m/rad] of the twelve joints.
        kd : drive damping [N m s/rad].
        duration : run duration [s].
        dt : step [s].

        The robot (2.5 kg) starts 1 mm above the ground in the package's
        ``straight_standing`` pose (hips 0.8 rad, knees 1.6 rad bent), the drives
        holding that pose; it lands and stands.  Friction 0.8 (rubber feet).
        """
        scene = set_joints(
            load_robot("solo_description/robots/solo12.urdf", fixed_base=False),
            SOLO12_STAND,
            kp=kp,
            kd=kd,
        )
        scene = stand_on_ground(scene)
        return scene.with_(
            dt=dt, duration=duration, contact=replace(scene.contact, mu=0.8),
            extras={**scene.extras, "kp": kp, "kd": kd},
        )  # fmt: skip

    @scenario("solo12-collapse", formulations=("reduced",))
    def solo12_collapse(damping: float = 0.0, duration: float = 1.0, dt: float = 1e-3) -> Scene:
        """Solo-12 released in its standing pose with its drives off: it collapses.

        damping : viscous friction of the unpowered joints [N m s/rad].
        duration : run duration [s].
        dt : step [s].

        The robot starts with its feet on the ground (no gap: the contacts carry
        the weight from the first step).  The legs fold under the weight of the
        trunk until the trunk and the folded legs rest on the ground.  Friction 0.8.
        """
        scene = load_robot("solo_description/robots/solo12.urdf", fixed_base=False)
        scene = set_joints(scene, SOLO12_STAND, kp=0.0, kd=damping)
        scene = stand_on_ground(scene, clearance=0.0)
        return scene.with_(dt=dt, duration=duration, contact=replace(scene.contact, mu=0.8))

    @scenario("humanoid-topple", formulations=("reduced",))
    def humanoid_topple(tilt_rate: float = 0.5, duration: float = 1.5, dt: float = 1e-3) -> Scene:
        """The Unitree G1 humanoid (29 joints) released standing, unpowered, tipping forward.

        tilt_rate : initial forward tilt rate of the whole body about its feet [rad/s].
        duration : run duration [s].
        dt : step [s].

        Straight legs and arms down, 1 mm above the ground; no drives, so the
        joints give way while the body tips over and comes to lie on the ground.
        """
        scene = load_robot("g1_description/urdf/g1_29dof_rev_1_0.urdf", fixed_base=False)
        scene = stand_on_ground(set_joints(scene), tilt_rate=tilt_rate)
        return scene.with_(dt=dt, duration=duration, contact=replace(scene.contact, mu=0.8))

    #: Allegro hand: the flexion joints of the index, middle and ring fingers, and the
    #: thumb's joints, with their closed-hand targets [rad]
    ALLEGRO_CLOSED = {
        **{f"joint_{i}.0": 1.2 for i in (1, 2, 3, 5, 6, 7, 9, 10, 11)},
        "joint_12.0": 1.3, "joint_13.0": 0.4, "joint_14.0": 1.0, "joint_15.0": 1.0,
    }  # fmt: skip

    @scenario("allegro-grasp", formulations=("reduced",))
    def allegro_grasp(
        radius: float = 0.03,
        mass: float = 0.05,
        kp: float = 0.5,
        kd: float = 0.01,
        duration: float = 0.6,
        dt: float = 1e-3,
    ) -> Scene:
        """The Allegro hand, palm up, closing its fingers on a ball lying in the palm.

        radius : ball radius [m].
        mass : ball mass [kg].
        kp : drive stiffness of the finger joints [N m/rad].
        kd : drive damping [N m s/rad].
        duration : run duration [s].
        dt : step [s].

        The hand (palm fixed, 16 joints) starts open; PD drives pull the
        fingers and the thumb toward a closed fist (``ALLEGRO_CLOSED``), which
        the ball blocks: the fingers stop on it, short of their targets.
        Friction 1.0.
        """
        from contactlab import se3
        from contactlab.bodies import body_from_shape
        from contactlab.reduced import Tree, forward_kinematics
        from contactlab.scene import JointSpec
        from contactlab.shapes import Sphere

        if not (radius > 0 and mass > 0):
            raise ConfigurationError(
                f"allegro-grasp: radius and mass must be positive, got {radius}, {mass}"
            )
        hand = load_robot("allegro_hand_description/urdf/allegro_right_hand.urdf", fixed_base=True)
        # palm up: the hand's x axis (the palm's normal) along the world z axis,
        # the fingers along -x
        up = se3.make_transform(se3.exp_so3(np.array([0.0, -0.5 * np.pi, 0.0])), [0.0, 0.0, 0.3])
        joints = []
        for j in hand.joints:
            if j.parent is None:
                frame = np.eye(4) if j.frame_parent is None else np.asarray(j.frame_parent)
                j = replace(j, frame_parent=up @ frame)
            joints.append(j)
        hand = hand.with_(joints=tuple(joints))
        targets = dict(ALLEGRO_CLOSED)
        hand = set_joints(hand, {}, kp=kp, kd=kd)
        hand = hand.with_(
            joints=tuple(
                replace(j, rest=np.array([targets.get(j.name, 0.0)]))
                if j.kind == "revolute" else j
                for j in hand.joints
            )
        )  # fmt: skip
        # the ball on the palm's face, below the finger roots
        tree = Tree.from_scene(hand)
        E = forward_kinematics(tree, tree.initial_coordinates()[0]).E
        palm = hand.bodies[0]
        top = max(float((shape_points(s) @ E[0, :3, 2] + E[0, 2, 3]).max()) for s in palm.shapes)
        roots = [E[hand.body_index(f"link_{i}.0"), :3, 3] for i in (1, 5, 9)]
        centre = np.array([np.mean([r[0] for r in roots]) + 0.6 * radius, 0.0, top + radius + 1e-3])
        centre[1] = float(np.mean([r[1] for r in roots]))
        ball, _ = body_from_shape("ball", Sphere(radius=radius), mass=mass)
        free = JointSpec(
            "ball_free", "free", None, "ball",
            frame_parent=se3.make_transform(None, centre), frame_child=np.eye(4),
        )  # fmt: skip
        scene = hand.with_(bodies=(*hand.bodies, ball), joints=(*hand.joints, free))
        scene = without_initial_overlaps(scene)
        return scene.with_(
            dt=dt, duration=duration, contact=replace(scene.contact, mu=1.0),
            extras={**scene.extras, "targets": targets, "ball_radius": radius},
        )  # fmt: skip
