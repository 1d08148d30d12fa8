"""URDF import against an independent computation from the URDF numbers themselves."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError, ModelFileWarning
from contactlab.reduced import (
    Tree,
    bias_forces,
    forward_dynamics_dense,
    forward_dynamics_recursive,
    forward_kinematics,
    inverse_dynamics,
    mass_matrix,
)
from contactlab.reduced.urdf import load_urdf
from contactlab.shapes import Box, Cylinder, Sphere

# Three links; link2's inertial frame is rotated and its tensor is not diagonal
# there; a massless tool link hangs on a fixed joint; the root "world" is massless.
ARM = """<?xml version="1.0"?>
<robot name="arm3">
  <link name="world"/>
  <link name="link1">
    <inertial><origin xyz="0 0 0.2" rpy="0 0 0"/><mass value="2.0"/>
      <inertia ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.004"/></inertial>
    <collision><origin xyz="0 0 0.2" rpy="0 0 0"/>
      <geometry><box size="0.1 0.1 0.4"/></geometry></collision>
  </link>
  <link name="link2">
    <inertial><origin xyz="0.15 0.02 -0.01" rpy="0.3 -0.2 0.5"/><mass value="1.5"/>
      <inertia ixx="0.02" ixy="0.004" ixz="-0.002" iyy="0.015" iyz="0.003" izz="0.01"/></inertial>
    <collision><origin xyz="0.15 0 0" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.03" length="0.3"/></geometry></collision>
  </link>
  <link name="link3">
    <inertial><origin xyz="0 0 -0.1" rpy="0 0 0"/><mass value="0.7"/>
      <inertia ixx="0.004" ixy="0.001" ixz="0" iyy="0.003" iyz="0" izz="0.005"/></inertial>
  </link>
  <link name="tool">
    <collision><origin xyz="0 0 0" rpy="0 0 0"/>
      <geometry><sphere radius="0.02"/></geometry></collision>
  </link>
  <joint name="j1" type="continuous"><parent link="world"/><child link="link1"/>
    <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/></joint>
  <joint name="j2" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0 0 0.4" rpy="0.1 0.2 0"/><axis xyz="0 1 0"/>
    <limit lower="-1.0" upper="1.0" effort="10" velocity="2"/><dynamics damping="0.05"/></joint>
  <joint name="j3" type="prismatic"><parent link="link2"/><child link="link3"/>
    <origin xyz="0.3 0 0" rpy="0 0 0.4"/><axis xyz="0.6 0 0.8"/>
    <limit lower="-0.1" upper="0.2" effort="10" velocity="1"/></joint>
  <joint name="tool_fix" type="fixed"><parent link="link3"/><child link="tool"/>
    <origin xyz="0 0 -0.2" rpy="0 0 0"/></joint>
</robot>
"""

LINKS = {  # the URDF's numbers, for the independent computation
    "link1": (2.0, np.array([0, 0, 0.2]), np.zeros(3), [[0.03, 0, 0], [0, 0.03, 0], [0, 0, 0.004]]),
    "link2": (
        1.5,
        np.array([0.15, 0.02, -0.01]),
        np.array([0.3, -0.2, 0.5]),
        [[0.02, 0.004, -0.002], [0.004, 0.015, 0.003], [-0.002, 0.003, 0.01]],
    ),
    "link3": (
        0.7,
        np.array([0, 0, -0.1]),
        np.zeros(3),
        [[0.004, 0.001, 0], [0.001, 0.003, 0], [0, 0, 0.005]],
    ),
}


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    """URDF fixed-axis roll-pitch-yaw: ``Rz(y) Ry(p) Rx(r)``."""
    return se3.exp_so3([0, 0, y]) @ se3.exp_so3([0, p, 0]) @ se3.exp_so3([r, 0, 0])


def _link_poses(q: np.ndarray) -> dict[str, np.ndarray]:
    """World transforms of the link frames, chained by hand from the URDF text."""
    T = lambda R, p: se3.make_transform(R, p)  # noqa: E731
    a3 = np.array([0.6, 0, 0.8])
    T1 = T(np.eye(3), [0, 0, 0.1]) @ T(se3.exp_so3([0, 0, q[0]]), None)
    T2 = T1 @ T(_rpy(0.1, 0.2, 0), [0, 0, 0.4]) @ T(se3.exp_so3([0, q[1], 0]), None)
    T3 = T2 @ T(_rpy(0, 0, 0.4), [0.3, 0, 0]) @ T(np.eye(3), a3 * q[2])
    return {"link1": T1, "link2": T2, "link3": T3}


def _mass_matrix_by_hand(q: np.ndarray) -> np.ndarray:
    """``sum m Jv^T Jv + Jw^T I_world Jw`` with Jacobians by central differences.

    Uses the URDF's full tensors (no eigen-decomposition); step 1e-6.
    """
    eps = 1e-6
    M = np.zeros((3, 3))
    for name, (m, com, rpy, inertia) in LINKS.items():
        Jv = np.zeros((3, 3))
        Jw = np.zeros((3, 3))
        for k in range(3):
            dq = np.zeros(3)
            dq[k] = eps
            Tp, Tm = _link_poses(q + dq)[name], _link_poses(q - dq)[name]
            Jv[:, k] = (Tp[:3, :3] @ com + Tp[:3, 3] - Tm[:3, :3] @ com - Tm[:3, 3]) / (2 * eps)
            R = _link_poses(q)[name][:3, :3]
            W = (Tp[:3, :3] - Tm[:3, :3]) / (2 * eps) @ R.T
            Jw[:, k] = [W[2, 1], W[0, 2], W[1, 0]]
        R = _link_poses(q)[name][:3, :3] @ _rpy(*rpy)
        Iw = R @ np.asarray(inertia) @ R.T
        M += m * Jv.T @ Jv + Jw.T @ Iw @ Jw
    return M


@pytest.fixture(scope="module")
def arm():  # type: ignore[no-untyped-def]
    scene = load_urdf(ARM)
    return scene, Tree.from_scene(scene)


def test_bodies_sit_on_principal_axes_and_massless_links_merge(arm) -> None:  # type: ignore[no-untyped-def]
    scene, tree = arm
    assert [b.name for b in scene.bodies] == ["link1", "link2", "link3"]
    assert [s.kind for s in tree.specs] == ["revolute", "revolute", "prismatic"]
    assert tree.nq == 3
    eig = np.linalg.eigvalsh(np.asarray(LINKS["link2"][3]))
    np.testing.assert_allclose(np.sort(scene.bodies[1].inertia), eig, rtol=1e-12)
    assert scene.joints[1].damping == pytest.approx(0.05)


def test_mass_matrix_matches_the_hand_computation(arm) -> None:  # type: ignore[no-untyped-def]
    """M(q) of the import equals the finite-difference Jacobian sum to 1e-8 relative
    (central differences with step 1e-6: truncation ~1e-12, rounding ~1e-10)."""
    _, tree = arm
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = rng.uniform(-1, 1, 3) * [3, 1, 0.1]
        M = mass_matrix(forward_kinematics(tree, q))
        ref = _mass_matrix_by_hand(q)
        np.testing.assert_allclose(M, ref, atol=1e-8 * np.abs(ref).max())


def test_body_poses_match_the_urdf_chain(arm) -> None:  # type: ignore[no-untyped-def]
    """Each body's centre of mass is where the URDF puts it, and the collision
    shapes sit where the URDF's collision origins are."""
    scene, tree = arm
    q = np.array([0.7, -0.4, 0.05])
    E = forward_kinematics(tree, q).E
    poses = _link_poses(q)
    for i, (name, (_, com, _, _)) in enumerate(LINKS.items()):
        np.testing.assert_allclose(
            E[i, :3, 3], poses[name][:3, :3] @ com + poses[name][:3, 3], atol=1e-14
        )
    box = scene.bodies[0].shapes[0]
    assert isinstance(box, Box)
    np.testing.assert_allclose(box.half_extents, [0.05, 0.05, 0.2])
    np.testing.assert_allclose(
        (E[0] @ box.pose)[:3, 3],
        (poses["link1"] @ se3.make_transform(None, [0, 0, 0.2]))[:3, 3],
        atol=1e-14,
    )
    cyl = scene.bodies[1].shapes[0]
    assert isinstance(cyl, Cylinder) and cyl.half_height == pytest.approx(0.15)
    # the cylinder's axis (its z) lies along link2's x (rpy pitch 90 deg)
    np.testing.assert_allclose((E[1] @ cyl.pose)[:3, 2], poses["link2"][:3, 0], atol=1e-12)
    tool = scene.bodies[2].shapes[0]
    assert isinstance(tool, Sphere)
    expect = poses["link3"] @ se3.make_transform(None, [0, 0, -0.2])
    np.testing.assert_allclose((E[2] @ tool.pose)[:3, 3], expect[:3, 3], atol=1e-14)


def test_forward_then_inverse_dynamics_round_trip(arm) -> None:  # type: ignore[no-untyped-def]
    """tau -> qddot (recursive and dense agree to 1e-10) -> tau back to 1e-10 relative;
    at qddot = 0 inverse dynamics is the bias force h(q, qdot)."""
    _, tree = arm
    rng = np.random.default_rng(5)
    q, qdot, tau = (
        rng.uniform(-1, 1, 3) * [3, 1, 0.1],
        rng.standard_normal(3),
        rng.standard_normal(3),
    )
    qdd = forward_dynamics_recursive(tree, q, qdot, tau)
    np.testing.assert_allclose(forward_dynamics_dense(tree, q, qdot, tau), qdd, rtol=1e-10)
    np.testing.assert_allclose(inverse_dynamics(tree, q, qdot, qdd), tau, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(
        inverse_dynamics(tree, q, qdot, np.zeros(3)), bias_forces(tree, q, qdot), atol=1e-12
    )


def test_floating_base_limits_and_errors(tmp_path) -> None:  # type: ignore[no-untyped-def]
    one = """<robot name="one"><link name="b"><inertial><mass value="1"/>
      <inertia ixx="1" ixy="0" ixz="0" iyy="2" iyz="0" izz="2.5"/></inertial></link></robot>"""
    scene = load_urdf(one, fixed_base=False)
    assert scene.joints[0].kind == "free" and Tree.from_scene(scene).nq == 6
    limited = load_urdf(ARM, joint_limits=True)
    assert [c.name for c in limited.constraints] == ["limit:j2", "limit:j3"]
    path = tmp_path / "arm.urdf"
    path.write_text(ARM)
    assert load_urdf(path).n_bodies == 3
    bad = ARM.replace('type="fixed"', 'type="revolute"').replace(
        '<origin xyz="0 0 -0.2" rpy="0 0 0"/></joint>',
        '<origin xyz="0 0 -0.2"/><axis xyz="1 0 0"/></joint>',
    )
    # as in Pinocchio: a massless link that moves is a body without mass (warned), and a
    # massless root on a floating base is a free body without mass
    with pytest.warns(ModelFileWarning, match="singular.*'tool'"):
        moving_tool = load_urdf(bad)
    assert moving_tool.bodies[-1].name == "tool" and moving_tool.bodies[-1].mass == 0.0
    floating = load_urdf(ARM, fixed_base=False)
    assert floating.bodies[0].name == "world" and floating.bodies[0].mass == 0.0
    assert Tree.from_scene(floating).nq == 9


def test_mesh_shapes_and_planar_joints(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A relative STL path with a scale becomes a Mesh of the scaled size in the body
    frame; a planar joint becomes 3 coordinates (two in-plane slides and a turn about
    the normal) whose q moves the body's centre in the plane."""
    import trimesh

    from contactlab.shapes import Mesh

    trimesh.creation.box(extents=[1.0, 1.0, 1.0]).export(tmp_path / "cube.stl")
    text = """<robot name="slider"><link name="world"/>
      <link name="plate"><inertial><mass value="2"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1.5"/></inertial>
        <collision><geometry><mesh filename="cube.stl" scale="0.2 0.2 0.2"/></geometry></collision>
      </link>
      <joint name="p" type="planar"><parent link="world"/><child link="plate"/>
        <axis xyz="0 0 1"/></joint></robot>"""
    path = tmp_path / "slider.urdf"
    path.write_text(text)
    scene = load_urdf(path)
    mesh = scene.bodies[0].shapes[0]
    assert isinstance(mesh, Mesh)
    np.testing.assert_allclose(np.ptp(mesh.vertices, axis=0), [0.2, 0.2, 0.2], atol=1e-12)
    tree = Tree.from_scene(scene)
    assert tree.nq == 3
    E = forward_kinematics(tree, np.array([0.3, -0.2, 0.5])).E[0]
    np.testing.assert_allclose(E[:3, 3], [0.3, -0.2, 0.0], atol=1e-14)
    np.testing.assert_allclose(E[:3, :3], se3.exp_so3([0, 0, 0.5]), atol=1e-14)
    with pytest.raises(ConfigurationError, match="not found"):
        load_urdf(text.replace("cube.stl", "missing.stl"), mesh_dir=tmp_path)


def _mesh_robot(filename: str, scale: str = "1 1 1") -> str:
    return f"""<?xml version="1.0" encoding="utf-8"?>
    <robot name="m"><link name="world"/>
      <link name="plate"><inertial><mass value="2"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1.5"/></inertial>
        <collision><geometry><mesh filename="{filename}" scale="{scale}"/></geometry></collision>
      </link>
      <joint name="j" type="revolute"><parent link="world"/><child link="plate"/>
        <axis xyz="0 0 1"/></joint></robot>"""


def test_package_paths_resolve_through_package_dirs_and_the_environment(
    tmp_path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """package://mypkg/meshes/cube.stl is found as <dir>/mypkg/meshes/cube.stl or
    <dir>/meshes/cube.stl for a folder given as package_dirs= or in ROS_PACKAGE_PATH
    (colon-separated); unresolved, the error names the package and the places looked."""
    import trimesh

    from contactlab.shapes import Mesh

    folder = tmp_path / "pkgs" / "mypkg" / "meshes"
    folder.mkdir(parents=True)
    trimesh.creation.box(extents=[1.0, 1.0, 1.0]).export(folder / "cube.stl")
    text = _mesh_robot("package://mypkg/meshes/cube.stl", "0.2 0.2 0.2")
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    with pytest.raises(ConfigurationError, match="package 'mypkg' not found") as err:
        load_urdf(text, package_dirs=[tmp_path / "elsewhere"])
    assert str(tmp_path / "elsewhere" / "mypkg" / "meshes" / "cube.stl") in str(err.value)
    assert "'plate'" in str(err.value) and "\n" not in str(err.value)
    for dirs in (
        tmp_path / "pkgs",
        [tmp_path / "nothing", tmp_path / "pkgs" / "mypkg"],
        f"{tmp_path / 'nothing'}:{tmp_path / 'pkgs'}",
    ):
        mesh = load_urdf(text, package_dirs=dirs).bodies[0].shapes[0]
        assert isinstance(mesh, Mesh)
        np.testing.assert_allclose(np.ptp(mesh.vertices, axis=0), [0.2] * 3, atol=1e-12)
    monkeypatch.setenv("ROS_PACKAGE_PATH", f"{tmp_path / 'nothing'}:{tmp_path / 'pkgs'}")
    assert isinstance(load_urdf(text).bodies[0].shapes[0], Mesh)
    triple = text.replace("package://", "package:///")
    assert isinstance(load_urdf(triple).bodies[0].shapes[0], Mesh)
    absolute = _mesh_robot(f"file://{folder / 'cube.stl'}")
    assert isinstance(load_urdf(absolute).bodies[0].shapes[0], Mesh)


def test_collision_modes_model_convex_and_none(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """An open box (one face missing) is no solid: 'model' keeps its convex hull, the closed
    unit cube (volume 1), with one warning line naming the link and the file; two cubes
    side by side in one file (a closed, non-convex solid) stay as written under 'model'
    and become their hull (volume 3, the gap filled) under 'convex'; 'none' keeps no
    shapes and reads no mesh file."""
    import trimesh

    from contactlab.shapes import Mesh

    box = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    trimesh.Trimesh(box.vertices, box.faces[2:], process=False).export(tmp_path / "open.stl")
    pair = trimesh.util.concatenate(
        [box, trimesh.creation.box(extents=[1.0, 1.0, 1.0]).apply_translation([2.0, 0, 0])]
    )
    pair.export(tmp_path / "pair.stl")
    with pytest.warns(ModelFileWarning) as record:
        hull = load_urdf(_mesh_robot("open.stl"), mesh_dir=tmp_path).bodies[0].shapes[0]
    lines = [str(w.message) for w in record]
    assert len(lines) == 1 and "'plate' (open.stl)" in lines[0] and "convex hull" in lines[0]
    assert isinstance(hull, Mesh) and hull.as_trimesh().volume == pytest.approx(1.0)
    as_written = load_urdf(_mesh_robot("pair.stl"), mesh_dir=tmp_path).bodies[0].shapes[0]
    assert as_written.as_trimesh().volume == pytest.approx(2.0) and len(as_written.faces) == 24
    convex = load_urdf(_mesh_robot("pair.stl"), mesh_dir=tmp_path, collision="convex")
    assert convex.bodies[0].shapes[0].as_trimesh().volume == pytest.approx(3.0)
    none = load_urdf(_mesh_robot("missing.stl"), collision="none")
    assert none.bodies[0].shapes == ()
    with pytest.raises(ConfigurationError, match="collision must be one of"):
        load_urdf(_mesh_robot("pair.stl"), collision="hull")


def test_unrepresented_elements_are_reported_one_line_per_feature() -> None:
    """Transmissions, <gazebo>, joint Coulomb friction, effort limits and unknown link
    elements are not in the scene: each feature is one warning line naming the elements;
    the loaded dynamics are those of the rest."""
    text = """<robot name="r"><link name="a"><contact><lateral_friction value="1"/></contact>
        <inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>
        </inertial></link>
      <link name="b"><inertial><mass value="1"/>
        <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
      <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
        <limit lower="-1" upper="1" effort="5" velocity="2"/>
        <dynamics damping="0.1" friction="0.3"/></joint>
      <transmission name="t1"><type>SimpleTransmission</type></transmission>
      <gazebo reference="a"><mu1>0.5</mu1></gazebo></robot>"""
    with pytest.warns(ModelFileWarning) as record:
        scene = load_urdf(text)
    lines = sorted(str(w.message) for w in record)
    assert all("\n" not in line and line.startswith("URDF robot 'r': ") for line in lines)
    expect = [
        "<dynamics friction> (Coulomb joint friction) not represented (load with "
        "dry_friction=True to carry it): 'j'",
        "<gazebo> not represented: 'a'",
        "<limit effort/velocity> (actuator limits) not represented: 'j'",
        "<link><contact> not represented: 'a'",
        "<transmission> not represented: 't1'",
    ]
    assert [line.removeprefix("URDF robot 'r': ") for line in lines] == expect
    assert scene.joints[1].damping == pytest.approx(0.1)


def test_mass_properties_as_written_run_reduced_and_are_refused_by_maximal() -> None:
    """A link on a moving joint with zero mass but rotational inertia (a rotor) is a body
    with strict=False: the reduced mass matrix holds its inertia (Pinocchio does the same),
    the maximal formulation refuses the scene naming the body; Body(strict=False) still
    refuses negative or non-finite numbers."""
    from contactlab.maximal.formulation import MaximalFormulation
    from contactlab.scene import Body

    rotor = (
        ARM.replace(
            '<link name="tool">',
            '<link name="tool"><inertial><mass value="0"/>'
            '<inertia ixx="0.002" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.003"/></inertial>',
        )
        .replace('type="fixed"', 'type="continuous"')
        .replace(
            '<origin xyz="0 0 -0.2" rpy="0 0 0"/></joint>',
            '<origin xyz="0 0 -0.2"/><axis xyz="0 0 1"/></joint>',
        )
    )
    with pytest.warns(ModelFileWarning, match="'tool' \\(no mass\\)"):
        scene = load_urdf(rotor)
    tool = scene.bodies[-1]
    assert not tool.strict and not tool.physical and tool.mass == 0.0
    tree = Tree.from_scene(scene)
    M = mass_matrix(forward_kinematics(tree, np.zeros(tree.nq)))
    assert M[3, 3] == pytest.approx(0.003, rel=1e-12)  # the rotor's moment about its axis
    with pytest.raises(ConfigurationError, match="'tool'.*reduced formulation"):
        MaximalFormulation(scene)
    for mass, inertia in ((-1.0, [1, 1, 1]), (0.0, [np.nan, 1, 1])):
        with pytest.raises(ConfigurationError, match="'b'"):
            Body("b", mass, inertia, strict=False)
