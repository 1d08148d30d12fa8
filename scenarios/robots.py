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
  dropped into the palm.

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
from typing import Any

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
                # world height of body point p: (R p)_z = R[2, :] . p, plus p_z
                low = min(low, float((p @ E[i, 2, :3] + E[i, 2, 3]).min()))
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
        drop: float = 0.02,
        duration: float = 0.6,
        dt: float = 1e-3,
    ) -> Scene:
        """The Allegro hand, palm up, closing its fingers on a ball dropped into the palm.

        radius : ball radius [m].
        mass : ball mass [kg].
        kp : drive stiffness of the finger joints [N m/rad].
        kd : drive damping [N m s/rad].
        drop : height of the ball above the palm's highest point at the start [m].
        duration : run duration [s].
        dt : step [s].

        The hand (palm fixed, 16 joints) starts open; PD drives pull the
        fingers and the thumb toward a closed fist (``ALLEGRO_CLOSED``), which
        the ball, released ``drop`` above the palm, blocks: the fingers stop on
        it, short of their targets.  Friction 1.0.
        """
        from contactlab import se3
        from contactlab.bodies import body_from_shape
        from contactlab.reduced import Tree, forward_kinematics
        from contactlab.scene import JointSpec
        from contactlab.shapes import Sphere

        if not (radius > 0 and mass > 0 and drop >= 0):
            raise ConfigurationError(
                f"allegro-grasp: radius and mass must be positive and drop >= 0, got {radius}, "
                f"{mass}, {drop}"
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
        top = max(float((shape_points(s) @ E[0, 2, :3] + E[0, 2, 3]).max()) for s in palm.shapes)
        roots = [E[hand.body_index(f"link_{i}.0"), :3, 3] for i in (1, 5, 9)]
        centre = np.array([np.mean([r[0] for r in roots]) + 0.6 * radius, 0.0, top + radius + drop])
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


#: UR5's six joints, base to flange.
UR5_JOINTS = (
    "shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
    "wrist_1_joint", "wrist_2_joint", "wrist_3_joint",
)  # fmt: skip


def smooth_stroke(
    t: Array, stroke: float, speed: float, ramp_up: float, ramp_down: float
) -> tuple[Array, Array]:
    """Position and speed along a straight stroke of length ``stroke`` [m] at times ``t``
    (from 0): the speed rises as ``speed (1 - cos(pi t / ramp_up)) / 2``, holds ``speed``,
    and falls back to 0 over ``ramp_down`` the same way (a continuous acceleration)."""
    t = np.asarray(t, dtype=float)
    d_up, d_down = 0.5 * speed * ramp_up, 0.5 * speed * ramp_down
    cruise = (stroke - d_up - d_down) / speed
    if cruise < 0:
        raise ConfigurationError(
            f"a stroke of {stroke} m is shorter than the speed ramps ({d_up + d_down:.3g} m at "
            f"{speed} m/s); give a longer stroke or a lower speed"
        )
    t1, t2 = ramp_up, ramp_up + cruise
    t3 = t2 + ramp_down
    tc = np.clip(t, 0.0, t3)
    up = np.minimum(tc, t1)
    x = 0.5 * speed * (up - ramp_up / np.pi * np.sin(np.pi * up / ramp_up))
    v = np.where(tc < t1, 0.5 * speed * (1 - np.cos(np.pi * up / ramp_up)), speed)
    x = x + speed * np.clip(tc - t1, 0.0, cruise)
    down = np.clip(tc - t2, 0.0, ramp_down)
    x = x + 0.5 * speed * (down + ramp_down / np.pi * np.sin(np.pi * down / ramp_down))
    v = np.where(tc > t2, 0.5 * speed * (1 + np.cos(np.pi * down / ramp_down)), v)
    v = np.where(t >= t3, 0.0, v)
    return x, v


def point_ik(
    tree: Any,
    dofs: Array,
    body: int,
    point: Array,
    axis: Array,
    target: Array,
    direction: Array,
    seed: Array,
) -> Array:
    """Coordinates ``q`` (``seed`` changed on ``dofs`` only) that put the body-frame
    ``point`` of body ``body`` at ``target`` with its body-frame ``axis`` along the world
    ``direction``: Gauss-Newton on the six residuals, central-difference Jacobian."""
    from contactlab.reduced import forward_kinematics

    def residual(q: Array) -> Array:
        E = forward_kinematics(tree, q).E[body]
        return np.r_[E[:3, :3] @ point + E[:3, 3] - target, E[:3, :3] @ axis - direction]

    q = np.array(seed, dtype=float)
    for _ in range(50):
        r = residual(q)
        if np.linalg.norm(r) < 1e-12:
            return q
        J = np.zeros((6, len(dofs)))
        for c, i in enumerate(dofs):
            dq = np.zeros_like(q)
            dq[i] = 1e-7
            J[:, c] = (residual(q + dq) - residual(q - dq)) / 2e-7
        q[dofs] -= np.linalg.lstsq(J, r, rcond=1e-10)[0]
    if np.linalg.norm(residual(q)) > 1e-9:
        raise ConfigurationError(f"the arm cannot reach {np.round(target, 3).tolist()} m")
    return q


if ROBOTS is not None:

    @scenario("arm-push", formulations=("reduced",))
    def arm_push(
        speed: float = 0.4,
        stroke: float = 0.2,
        mu: float = 0.5,
        box_mass: float = 0.5,
        kp: float = 3000.0,
        kd: float = 60.0,
        duration: float = 0.8,
        dt: float = 1e-3,
    ) -> Scene:
        """A UR5 arm whose flange pushes a box across a table, driven by PD along a trajectory.

        speed : cruise speed of the flange along the push [m/s].
        stroke : travel of the flange [m].
        mu : friction coefficient of every contact (box on table, flange on box).
        box_mass : mass of the box [kg] (10 x 12 x 8 cm).
        kp : drive stiffness of the six joints [N m/rad].
        kd : drive damping [N m s/rad].
        duration : run duration [s].
        dt : step [s].

        The UR5 (fixed base on the table top, z = 0) holds its flange pointing
        down 1 cm above the table, 2 mm behind the box.  After 0.05 s the
        reference moves the flange along +x: its speed rises to ``speed``
        over 0.1 s, holds, and falls to 0 over the last 0.06 s of the stroke;
        the flange meets the box and pushes it, and when the flange slows
        faster than friction can slow the box (``mu g``), the box slides off
        on its own and stops.  The joint references come from the arm's
        inverse kinematics along the stroke; each drive is
        ``tau = kp (q_ref - q) + kd (qdot_ref - qdot) + g(q_ref)`` (with the
        arm's gravity torque ``g``).  Reduced coordinates only: the maximal
        formulation carries the arm's joints and drives, but the moving
        reference is an applied joint torque (``Scene.joint_torque``), which it
        reads back from the bodies only when every tree joint has one
        coordinate; the box's free joint has six and the base's weld none.
        """
        from contactlab import se3
        from contactlab.bodies import body_from_shape
        from contactlab.joints.kinds import build_joint
        from contactlab.reduced import Tree
        from contactlab.reduced.model import Model
        from contactlab.scene import JointSpec
        from contactlab.shapes import Box

        for name, value in (("speed", speed), ("stroke", stroke), ("box_mass", box_mass)):
            if not (np.isfinite(value) and value > 0):
                raise ConfigurationError(f"arm-push: {name} must be positive, got {value}")
        if not (np.isfinite(mu) and mu >= 0):
            raise ConfigurationError(f"arm-push: mu must be >= 0, got {mu}")
        arm = load_robot("ur_description/urdf/ur5_robot.urdf", fixed_base=True)
        tree = Tree.from_scene(arm)
        dofs = np.array([tree.dofs(j).start for j in UR5_JOINTS])
        # the flange: the hull of wrist_3_link; its axis is the wrist_3 joint's
        flange = arm.body_index("wrist_3_link")
        spec = next(j for j in arm.joints if j.name == "wrist_3_joint")
        axis = np.asarray(spec.frame_child)[:3, :3] @ build_joint(spec).S(np.zeros(1))[:3, 0]
        hull = shape_points(arm.bodies[flange].shapes[0])
        centre = hull.mean(axis=0)
        below = float(((hull - centre) @ axis).max())  # flange face below its centre
        radius = float(np.linalg.norm(np.cross(hull - centre, axis), axis=1).max())
        down = np.array([0.0, 0.0, -1.0])
        x0, y0, clearance, gap = 0.35, 0.109, 0.01, 0.002
        height = clearance + below
        # inverse kinematics every 5 mm along the stroke (the reference interpolates)
        xs = np.linspace(0.0, stroke, int(np.ceil(stroke / 5e-3)) + 1)
        q = tree.initial_coordinates()[0]
        q[dofs] = [0.0, -1.2, 2.0, -2.4, -0.5 * np.pi, 0.0]
        path = []
        for x in xs:
            q = point_ik(tree, dofs, flange, centre, axis, np.array([x0 + x, y0, height]), down, q)
            path.append(q[dofs].copy())
        Q = np.array(path)
        model = Model.from_scene(arm)
        zero = np.zeros(tree.nq)
        gravity = []
        for row in Q:
            full = tree.initial_coordinates()[0]
            full[dofs] = row
            gravity.append(model.bias_forces(full, zero)[dofs])
        G = np.array(gravity)
        dQ = np.gradient(Q, xs, axis=0)
        # the box 2 mm ahead of the flange, resting on the table (bottom face at z = 0)
        half = np.array([0.05, 0.06, 0.04])
        box, _ = body_from_shape("box", Box(half_extents=half), mass=box_mass)
        front = x0 + radius + gap + half[0]
        free = JointSpec(
            "box_free", "free", None, "box",
            frame_parent=se3.make_transform(None, [front, y0, half[2]]), frame_child=np.eye(4),
            params={"order": "translation_first"},  # q: world position, then rotation vector
        )  # fmt: skip
        table = Box(
            half_extents=np.array([0.6, 0.5, 0.025]),
            pose=se3.make_transform(None, [0.4, 0.0, -0.025]),
        )
        start, hold = Q[0], 0.05
        scene = set_joints(arm, dict(zip(UR5_JOINTS, start)), kp=kp, kd=kd)
        scene = scene.with_(
            bodies=(*scene.bodies, box),
            joints=(*scene.joints, free),
            static_shapes=(table,),
            # the base is bolted to the table
            exclude_pairs=(*scene.exclude_pairs, ("world", None)),
        )
        scene = without_initial_overlaps(scene)
        full_tree = Tree.from_scene(scene)
        arm_dofs = np.array([full_tree.dofs(j).start for j in UR5_JOINTS])
        nq = full_tree.nq

        def drive(t: float, q: Array, qdot: Array) -> Array:
            s, v = smooth_stroke(np.array([t - hold]), stroke, speed, 0.1, 0.06)
            ref = np.array([np.interp(s[0], xs, Q[:, k]) for k in range(6)])
            rate = np.array([np.interp(s[0], xs, dQ[:, k]) for k in range(6)]) * v[0]
            g = np.array([np.interp(s[0], xs, G[:, k]) for k in range(6)])
            tau = np.zeros(nq)
            tau[arm_dofs] = kp * (ref - start) + kd * rate + g
            return tau

        return scene.with_(
            dt=dt, duration=duration, contact=replace(scene.contact, mu=mu), joint_torque=drive,
            extras={
                **scene.extras, "kp": kp, "kd": kd, "box_half_extents": half, "flange_path": Q,
                "stroke_x": x0 + xs, "hold": hold, "box_front_gap": gap,
            },
        )  # fmt: skip
