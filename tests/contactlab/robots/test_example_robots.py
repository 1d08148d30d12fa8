"""Robots of ``example-robot-data`` through the URDF loader, against Pinocchio's own parser.

The set covers a fixed-base arm (ur5), prismatic fingers with a mimic joint
(panda), grippers with mimic multipliers -1 (baxter), floating quadrupeds
(solo12; a1, whose root link is massless; anymal, with a dummy ``hatch``
link), zero-mass feet that carry rotational inertia (bolt), a humanoid with
sensor links on fixed joints (talos) and a mobile base with continuous wheel
joints (tiago).  Pinocchio reads the same files with its own parser and
computes with its own algorithms (``crba``, ``nonLinearEffects``, ``aba``,
``rnea``); the coordinate maps are in
:class:`contactlab.reduced.pinocchio_.PinocchioCoordinates`.

Tolerance 1e-9 relative: both sides run the same recursions in double
precision on the same numbers, so they agree to ~1e-15 on well-conditioned
robots (measured: <= 4e-14 on these); forward dynamics loses up to cond(M)
times that, and 1e-9 leaves room for cond(M) ~ 1e5 without hiding a wrong
inertia (bolt's dropped foot inertia moved forward dynamics by 2e-3).
"""

from __future__ import annotations

import importlib.util
import warnings
from importlib import metadata
from xml.etree import ElementTree

import numpy as np
import pytest

from contactlab.errors import ModelFileWarning
from contactlab.reduced import Tree, forward_kinematics
from contactlab.reduced.constraints import Coupling, scene_constraints
from contactlab.reduced.model import Model
from contactlab.reduced.urdf import load_urdf
from contactlab.reduced.urdf_geometry import example_robot_data
from contactlab.shapes import Mesh

try:
    metadata.distribution("example-robot-data")
    HAS_ERD = True
except metadata.PackageNotFoundError:
    HAS_ERD = False
HAS_PIN = importlib.util.find_spec("pinocchio") is not None

pytestmark = [
    pytest.mark.skipif(not HAS_ERD, reason="pip install example-robot-data (contactlab[test])"),
    pytest.mark.skipif(not HAS_PIN, reason="pinocchio is not installed (pip install pin)"),
]

ROBOTS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "solo12": "solo_description/robots/solo12.urdf",
    "bolt": "bolt_description/robots/bolt.urdf",
    "a1": "a1_description/urdf/a1.urdf",
    "anymal": "anymal_c_simple_description/urdf/anymal.urdf",
    "talos": "talos_data/robots/talos_reduced.urdf",
    "tiago": "tiago_description/robots/tiago_no_hand.urdf",
}
TOL = 1e-9


def _path(robot: str) -> str:
    return str(example_robot_data() / ROBOTS.get(robot, robot))


def _load(robot: str, **kwargs):  # type: ignore[no-untyped-def]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)  # effort limits, transmissions, ...
        return load_urdf(_path(robot), collision=kwargs.pop("collision", "none"), **kwargs)


def _pinocchio(robot: str, fixed_base: bool, mimic: bool = False):  # type: ignore[no-untyped-def]
    import pinocchio as pin

    if fixed_base:
        return pin.buildModelFromUrdf(_path(robot), mimic)
    return pin.buildModelFromUrdf(_path(robot), pin.JointModelFreeFlyer(), mimic)


@pytest.mark.parametrize("fixed_base", [True, False], ids=["fixed", "floating"])
@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_dynamics_equal_pinocchios(robot: str, fixed_base: bool) -> None:
    """M, h, forward and inverse dynamics of the loaded robot equal Pinocchio's to 1e-9
    relative at three random states (mimic joints left free on both sides)."""
    from contactlab.reduced.pinocchio_ import PinocchioCoordinates, dynamics_errors

    scene = _load(robot, fixed_base=fixed_base)
    model = Model.from_scene(scene)
    peer = PinocchioCoordinates(model.tree, _pinocchio(robot, fixed_base))
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, qdot, qddot = model.random_state(rng)
        tau = rng.uniform(-1.0, 1.0, model.nq)
        errors = dynamics_errors(model, peer, q, qdot, tau, qddot)
        assert max(errors.values()) <= TOL, errors


def test_merged_links_keep_total_mass_and_their_frames() -> None:
    """Fixed-joint links merge into their parent: the floating robot's mass is the sum of
    the URDF's link masses (Pinocchio's computeTotalMass), and every merged link (talos'
    rgbd_optical_frame, bolt's FL_FOOT) stays a named frame whose world pose equals
    Pinocchio's frame placement to 1e-12 m at a random configuration."""
    import pinocchio as pin

    from contactlab.reduced.pinocchio_ import PinocchioCoordinates

    for robot, link in (("talos", "rgbd_optical_frame"), ("bolt", "FL_FOOT")):
        scene = _load(robot, fixed_base=False)
        xml = ElementTree.parse(_path(robot)).getroot()
        masses = [float(m.get("value")) for m in xml.iter("mass")]
        assert sum(b.mass for b in scene.bodies) == pytest.approx(sum(masses), rel=1e-12)
        pm = _pinocchio(robot, fixed_base=False)
        assert sum(b.mass for b in scene.bodies) == pytest.approx(pin.computeTotalMass(pm))
        body, pose = scene.extras["link_frames"][link]
        assert body != link and body in {b.name for b in scene.bodies}
        tree = Tree.from_scene(scene)
        q = Model(tree).random_state(np.random.default_rng(3))[0]
        data = pm.createData()
        pin.framesForwardKinematics(pm, data, PinocchioCoordinates(tree, pm).configuration(q))
        ours = forward_kinematics(tree, q).E[scene.body_index(body)] @ pose
        theirs = data.oMf[pm.getFrameId(link)].homogeneous
        np.testing.assert_allclose(ours, theirs, atol=1e-12)


@pytest.mark.parametrize("robot", ["panda", "baxter_description/urdf/baxter.urdf"])
def test_mimic_joints_are_couplings_with_pinocchios_mimic_dynamics(robot: str) -> None:
    """A <mimic> joint is a Coupling q_m = k q + offset; with it the constrained forward
    dynamics of the full tree equals Pinocchio's mimic model (one coordinate per leader):
    P^T M P, P^T h and the accelerations P vdot to 1e-9 relative."""
    from contactlab.reduced.pinocchio_ import PinocchioCoordinates, coupled_errors

    scene = _load(robot)
    couplings = [c for c in scene.constraints if isinstance(c, Coupling)]
    ratios = {c.joint_b: (c.joint_a, c.ratio) for c in couplings}
    if robot == "panda":
        assert ratios == {"panda_finger_joint2": ("panda_finger_joint1", 1.0)}
    else:
        assert sorted(r for _, r in ratios.values()) == [-1.0, -1.0]
    tree = Tree.from_scene(scene)
    bound = [c for c in scene_constraints(scene, tree) if isinstance(c, Coupling)]
    peer = PinocchioCoordinates(tree, _pinocchio(robot, fixed_base=True, mimic=True))
    assert peer.nv == tree.nq - len(bound)
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qdot, tau = (rng.uniform(-1.0, 1.0, tree.nq) for _ in range(3))
        for c in bound:
            q[c.ib] = c.ratio * q[c.ia] + c.offset
            qdot[c.ib] = c.ratio * qdot[c.ia]
        errors = coupled_errors(tree, bound, peer, q, qdot, tau)
        assert max(errors.values()) <= TOL, errors


def test_xml_text_with_an_encoding_declaration_loads_as_the_file() -> None:
    """xacro output starts with <?xml ... encoding="utf-8"?>; given as text (with the
    package folder) it loads to the same mass matrix as the file, to the bit."""
    text = open(_path("anymal"), encoding="utf-8").read()
    assert text.startswith('<?xml version="1.0" encoding="utf-8"?>')
    share = example_robot_data().parent.parent
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        from_text = load_urdf(text, package_dirs=[share], collision="convex")
        from_file = load_urdf(_path("anymal"), collision="convex")
    q = np.linspace(-1.0, 1.0, 12)
    np.testing.assert_array_equal(
        Model.from_scene(from_text).mass_matrix(q), Model.from_scene(from_file).mass_matrix(q)
    )
    assert [len(b.shapes) for b in from_text.bodies] == [len(b.shapes) for b in from_file.bodies]


def test_meshes_that_are_not_solids_become_hulls_with_one_warning_line() -> None:
    """talos' gripper meshes are not closed: with collision='model' each becomes its convex
    hull (a closed mesh whose vertices are mesh vertices), reported in one warning line
    naming links and files; 'convex' replaces every mesh by its hull, silently; 'none'
    keeps no geometry."""
    with pytest.warns(ModelFileWarning) as record:
        model = load_urdf(_path("talos_data/robots/talos_left_arm.urdf"), collision="model")
    hulls = [str(w.message) for w in record if "convex hulls" in str(w.message)]
    assert len(hulls) == 1 and "\n" not in hulls[0]
    assert "'gripper_left_motor_double_link' (gripper_motor_double_collision.STL)" in hulls[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelFileWarning)
        convex = load_urdf(_path("talos_data/robots/talos_left_arm.urdf"), collision="convex")
    none = _load("talos_data/robots/talos_left_arm.urdf")
    meshes = [s for b in convex.bodies for s in b.shapes if isinstance(s, Mesh)]
    assert meshes and all(s.as_trimesh().is_convex for s in meshes)
    assert [len(b.shapes) for b in model.bodies] == [len(b.shapes) for b in convex.bodies]
    assert all(not b.shapes for b in none.bodies)
