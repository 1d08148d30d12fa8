"""Meshes collided as convex hulls: against MuJoCo, and resting like a box.

Distances and normals are compared with MuJoCo's own convex collision
(``mujoco.mj_geomDistance``: its GJK/EPA over the hull MuJoCo builds itself),
on the same geometry: the meshes are given to MuJoCo as vertex lists and our
:class:`Mesh` is the hull of the vertices MuJoCo compiled (stored in single
precision), so both sides hold the same polytopes.  Each pair is placed at
100 random poses, penetrating and apart.  Tolerances: when both closest
features are flat (hull against hull, box, plane; against a sphere or capsule
the closest point of a flat face to a point or segment) both answers are
exact up to round-off and the EPA/GJK stopping tolerances (ours 1e-11 m,
MuJoCo's ``ccd_tolerance`` set to 1e-12): 1e-9 m and 1e-9 in the unit normal.
Against a cylinder the closest feature may be its curved side; a normal
tilted by ``e`` off the optimum changes the depth by ``~ r e^2 / 2``, so a
depth stopping tolerance ``t`` leaves the normal free by ``sqrt(2 t / r)``
(~1e-5 for t = 1e-11, r = 0.06 m): 1e-6 m and 1e-4 (measured 9e-8 m and 4e-5).

The resting facts compare a mesh cube with the primitive box of the same
size and mass in the same scene, step by step.  The contact model is
Anitescu–Hart (a strictly convex QP in the velocities, so each body's
contact impulse is unique even though four contacts share the load), solved
by Clarabel.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import trimesh

from contactlab import se3
from contactlab.collision import collide, supported_pairs
from contactlab.collision.convex import HILL_CLIMB_VERTICES, support
from contactlab.collision.polytope import hull_set, polytope
from contactlab.collision.shape_table import MESH
from contactlab.errors import ConfigurationError
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Plane, Sphere
from contactlab.simulator import Simulator

mujoco = pytest.importorskip("mujoco")

FLAT = 1e-9
CURVED_DIST, CURVED_NORMAL = 1e-6, 1e-4
POSES = 100


def _points(rng: np.random.Generator, n: int, radii) -> np.ndarray:
    p = rng.normal(size=(n, 3))
    return p / np.linalg.norm(p, axis=1)[:, None] * np.asarray(radii)


def _mujoco_model():
    """Two random hulls, a box, sphere, capsule, cylinder and plane as world geoms."""
    rng = np.random.default_rng(11)
    pa = _points(rng, 24, [0.15, 0.1, 0.08])
    pb = _points(rng, 30, [0.12, 0.14, 0.1])

    def fmt(P):
        return " ".join(f"{x:.9g}" for x in P.ravel())

    xml = f"""<mujoco><option ccd_tolerance="1e-12" ccd_iterations="1000"/>
    <asset><mesh name="ma" vertex="{fmt(pa)}"/><mesh name="mb" vertex="{fmt(pb)}"/></asset>
    <worldbody>
      <geom name="mesh" type="mesh" mesh="ma"/>
      <geom name="other_mesh" type="mesh" mesh="mb"/>
      <geom name="box" type="box" size="0.12 0.08 0.05"/>
      <geom name="sphere" type="sphere" size="0.07"/>
      <geom name="capsule" type="capsule" size="0.04 0.1"/>
      <geom name="cylinder" type="cylinder" size="0.06 0.09"/>
      <geom name="plane" type="plane" size="1 1 0.1"/>
    </worldbody></mujoco>"""
    m = mujoco.MjModel.from_xml_string(xml)

    def vertices(k):
        a = m.mesh_vertadr[k]
        return np.array(m.mesh_vert[a : a + m.mesh_vertnum[k]], dtype=float)

    ours = {
        "mesh": Mesh.convex_hull_of(vertices(0)),
        "other_mesh": Mesh.convex_hull_of(vertices(1)),
        "box": Box(half_extents=[0.12, 0.08, 0.05]),
        "sphere": Sphere(radius=0.07),
        "capsule": Capsule(radius=0.04, half_height=0.1),
        "cylinder": Cylinder(radius=0.06, half_height=0.09),
    }
    return m, ours


def _rotation(q):
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, q)
    return R.reshape(3, 3)


@pytest.mark.parametrize("other", ["other_mesh", "box", "sphere", "capsule", "cylinder"])
def test_distance_and_normal_agree_with_mujoco(other):
    m, ours = _mujoco_model()
    d = mujoco.MjData(m)
    g_other = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, other)
    g_mesh = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "mesh")
    scene = Scene(
        "pair",
        (
            Body("other", 1.0, [1.0, 1.0, 1.0], shapes=(ours[other],)),
            Body("mesh", 1.0, [1.0, 1.0, 1.0], shapes=(ours["mesh"],)),
        ),
        contact=ContactParams(margin=10.0),  # report every pose, apart or not
    )
    dist_tol, normal_tol = (CURVED_DIST, CURVED_NORMAL) if other == "cylinder" else (FLAT, FLAT)
    rng = np.random.default_rng(5)
    apart = 0
    for _ in range(POSES):
        q1, q2 = rng.normal(size=4), rng.normal(size=4)
        q1 /= np.linalg.norm(q1)
        q2 /= np.linalg.norm(q2)
        p1 = rng.uniform(-0.25, 0.25, 3)
        R1, R2 = _rotation(q1), _rotation(q2)
        d.geom_xpos[g_other], d.geom_xmat[g_other] = p1, R1.ravel()
        d.geom_xpos[g_mesh], d.geom_xmat[g_mesh] = 0.0, R2.ravel()
        fromto = np.zeros(6)
        expected = mujoco.mj_geomDistance(m, d, g_other, g_mesh, 10.0, fromto)
        c = collide(scene, np.stack([se3.make_transform(R1, p1), se3.make_transform(R2, 0.0)]))
        k = int(np.argmin(c.distance))
        assert c.distance[k] == pytest.approx(expected, abs=dist_tol)
        # every contact of the pair carries the one normal, here from the mesh toward the other
        normal = np.where((c.body_a == 0)[:, None], c.normal, -c.normal)
        assert np.abs(normal - normal[k]).max() < 1e-12
        if abs(expected) > 1e-6:  # MuJoCo's segment from its geom 1 to geom 2 gives the normal
            seg = fromto[:3] - fromto[3:]
            assert normal[k] == pytest.approx(
                np.sign(expected) * seg / np.linalg.norm(seg), abs=normal_tol
            )
        apart += expected > 0
    assert 15 <= apart <= POSES - 15  # both regimes are exercised


def test_mesh_plane_distance_is_the_lowest_vertex_and_agrees_with_mujoco():
    m, ours = _mujoco_model()
    d = mujoco.MjData(m)
    g_mesh = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "mesh")
    g_plane = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_GEOM, "plane")
    n = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
    Rp = se3.exp_so3(
        np.cross([0.0, 0.0, 1.0], n) / np.linalg.norm(np.cross([0, 0, 1.0], n)) * np.arccos(n[2])
    )
    scene = Scene(
        "plane",
        (Body("mesh", 1.0, [1.0, 1.0, 1.0], shapes=(ours["mesh"],)),),
        static_shapes=(Plane(normal=n, offset=0.02),),
        contact=ContactParams(margin=10.0),
    )
    rng = np.random.default_rng(8)
    V = ours["mesh"].vertices
    for _ in range(POSES):
        R, p = se3.random_rotation(rng), rng.uniform(-0.2, 0.2, 3)
        d.geom_xpos[g_mesh], d.geom_xmat[g_mesh] = p, R.ravel()
        d.geom_xpos[g_plane], d.geom_xmat[g_plane] = 0.02 * n, Rp.ravel()
        expected = mujoco.mj_geomDistance(m, d, g_plane, g_mesh, 10.0, np.zeros(6))
        c = collide(scene, se3.make_transform(R, p)[None])
        assert c.distance.min() == pytest.approx(((V @ R.T + p) @ n - 0.02).min(), abs=1e-14)
        assert c.distance.min() == pytest.approx(expected, abs=FLAT)
        assert np.abs(c.normal - n).max() < 1e-15


def _cube_mesh(h: float) -> Mesh:
    return Mesh.from_trimesh(trimesh.creation.box(extents=[2 * h] * 3))


def test_a_mesh_cube_touches_like_a_box():
    """Same contact points, normals and distances as the primitive box, on a plane,
    on a box, and a cube on a mesh cube (box-box manifold: 4 corners)."""
    h = 0.1
    mesh, box = _cube_mesh(h), Box(half_extents=[h] * 3)
    base_box = Box(half_extents=[0.3, 0.3, 0.1], pose=se3.make_transform(np.eye(3), [0, 0, -0.1]))
    base_mesh = Mesh(
        vertices=trimesh.creation.box(extents=[0.6, 0.6, 0.2]).vertices,
        faces=trimesh.creation.box(extents=[0.6, 0.6, 0.2]).faces,
        pose=base_box.pose,
    )
    E = se3.make_transform(se3.exp_so3([0.002, -0.001, 0.4]), [0.03, -0.02, h - 0.001])[None]
    for static_box, static_mesh in (
        (Plane(), Plane()),
        (base_box, base_box),
        (base_box, base_mesh),
    ):
        got = []
        for shape, static in ((box, static_box), (mesh, static_mesh)):
            scene = Scene(
                "cube", (Body("c", 1.0, [1.0] * 3, shapes=(shape,)),), static_shapes=(static,)
            )
            c = collide(scene, E)
            order = np.lexsort(np.round(c.point, 9).T[::-1])
            got.append(np.hstack([c.point[order], c.normal[order], c.distance[order, None]]))
        assert got[0].shape == got[1].shape
        assert len(got[0]) >= 3
        assert np.abs(got[0] - got[1]).max() < 1e-12


def test_two_mesh_cubes_face_to_face_get_the_overlap_polygon():
    """A cube turned 45 degrees about z on an equal cube: the contact polygon is the
    regular octagon where the two squares overlap, every corner at the same depth."""
    h = 0.1
    scene = Scene(
        "cubes",
        (Body("top", 1.0, [1.0] * 3, shapes=(_cube_mesh(h),)),),
        static_shapes=(_cube_mesh(h),),
    )
    E = se3.make_transform(se3.exp_so3([0.0, 0.0, np.pi / 4]), [0.0, 0.0, 2 * h - 0.001])[None]
    c = collide(scene, E)
    assert len(c) == 8
    assert np.allclose(c.distance, -0.001, atol=1e-12)
    assert np.allclose(c.normal, [0.0, 0.0, 1.0], atol=1e-12)
    r = np.linalg.norm(c.point[:, :2], axis=1)
    # octagon of the two squares: vertices at h / cos(22.5 deg) from the axis
    assert np.allclose(r, h / np.cos(np.pi / 8), atol=1e-12)


def _cube_scene(shape, static, E0, phi0, contact: ContactParams) -> Scene:
    h = 0.1
    mass = 1000.0 * (2 * h) ** 3
    inertia = np.full(3, mass * (2 * h) ** 2 / 6.0)
    return Scene(
        "cube",
        (Body("cube", mass, inertia, shapes=(shape,)),),
        static_shapes=(static,),
        initial_E=E0[None],
        initial_phi=phi0[None],
        contact=contact,
        dt=0.005,
        duration=0.5,
    )


@pytest.mark.parametrize("on", ["plane", "box"])
def test_mesh_cube_gets_the_contact_impulses_of_the_box(on):
    """Dropped 2 mm with a tilt and a sideways slide, the mesh cube and the box get
    the same contact impulse on the body at every step, to 1e-6 N s (measured
    ~1e-9: the solver's accuracy), and the same trajectory."""
    h = 0.1
    static = (
        Plane()
        if on == "plane"
        else Box(half_extents=[0.5, 0.5, 0.1], pose=se3.make_transform(np.eye(3), [0.0, 0.0, -0.1]))
    )
    E0 = se3.make_transform(se3.exp_so3([0.02, -0.01, 0.3]), [0.0, 0.0, h + 0.002])
    phi0 = np.array([0.0, 0.0, 0.5, 0.2, -0.1, 0.0])
    contact = ContactParams(margin=0.005, mu=0.4, directions=4)
    impulses, twists = [], []
    for shape in (Box(half_extents=[h] * 3), _cube_mesh(h)):
        sim = Simulator(
            _cube_scene(shape, static, E0, phi0, contact),
            "maximal",
            "anitescu-hart",
            "cvxpy:clarabel",
        )
        state = sim.initial_state()
        rows = []
        for k in range(100):
            state, rec = sim.step(state, k)
            p, s = rec.problem, rec.solution
            rows.append(p.N.T @ s.lambda_N + p.T.T @ s.lambda_T)
        impulses.append(np.array(rows))
        twists.append(sim.formulation.maximal(state)[1])
    # at rest the floor carries the weight: m g h = 8 kg 9.81 m/s^2 5 ms = 0.3924 N s per step
    assert impulses[0][-1, 5] == pytest.approx(0.3924, rel=1e-6)
    assert np.abs(impulses[0] - impulses[1]).max() < 1e-6
    assert np.abs(twists[0] - twists[1]).max() < 1e-6


def test_dropped_mesh_cube_comes_to_rest_without_sinking():
    """A tilted mesh cube falls 5 cm onto the floor on the default contact route
    (box friction, PGS); after 1 s it lies on a face at height h (to the
    stabilized penetration, below 1 mm) and moves slower than 1e-3 m/s."""
    h = 0.1
    E0 = se3.make_transform(se3.exp_so3([0.3, 0.2, 0.1]), [0.0, 0.0, h * np.sqrt(3) + 0.05])
    contact = ContactParams(margin=0.005, mu=0.5, directions=4)
    scene = _cube_scene(_cube_mesh(h), Plane(), E0, np.zeros(6), contact)
    run = Simulator(scene, "maximal", "box-friction", "pgs").run(duration=1.5)
    assert run.status == "ok"
    z = run.trajectory["position"][:, 0, 2]
    R = run.trajectory["rotation"][-1, 0]
    assert np.abs(R[2]).max() == pytest.approx(1.0, abs=1e-6)  # a face axis is vertical
    assert z[-1] == pytest.approx(h, abs=1e-3)
    assert run.steps["penetration"].max() < 5e-3
    assert np.abs(run.trajectory["twist"][-1, 0, 3:]).max() < 1e-3
    assert run.steps["n_contacts"].iloc[-1] == 4


def test_hull_faces_are_polygons():
    """Qhull's triangles of one plane become one face: a cube has 6 squares, a
    hexagonal prism 2 hexagons and 6 rectangles."""
    cube = polytope(trimesh.creation.box(extents=[1.0, 2.0, 3.0]).vertices)
    assert sorted(len(p) for p in cube.polygons) == [4] * 6
    assert cube.volume == pytest.approx(6.0, rel=1e-12)
    prism = polytope(trimesh.creation.cylinder(radius=1.0, height=1.0, sections=6).vertices)
    assert sorted(len(p) for p in prism.polygons) == [4] * 6 + [6] * 2
    for P in (cube, prism):  # every polygon vertex on its plane, every vertex inside every plane
        for n, off, poly in zip(P.normals, P.offsets, P.polygons):
            assert np.allclose(P.vertices[poly] @ n, off, atol=1e-12)
        assert np.all(P.vertices @ P.normals.T <= P.offsets + 1e-12)


def _ell() -> Mesh:
    """An L-shaped prism 0.1 m thick: the square [0, 0.2]^2 less [0.1, 0.2]^2."""
    V = np.array([[0, 0, 0], [2, 0, 0], [2, 1, 0], [1, 1, 0], [1, 2, 0], [0, 2, 0]], float) * 0.1
    n = len(V)
    faces = [[0, k + 1, k] for k in range(1, n - 1)]  # bottom: a fan from the corner (0, 0)
    faces += [[n, n + k, n + k + 1] for k in range(1, n - 1)]  # top
    for k in range(n):
        j = (k + 1) % n
        faces += [[k, j, n + j], [k, n + j, n + k]]
    return Mesh(vertices=np.vstack([V, V + [0.0, 0.0, 0.1]]), faces=np.array(faces))


def test_convex_hull_of_open_and_nonconvex_meshes():
    """An open mesh (a cube missing two triangles) becomes its closed hull: the
    full cube.  A non-convex closed mesh (an L, 3/3.5 of its hull) collides as
    its hull, with one warning: a ball in the L's notch is inside the hull."""
    tm = trimesh.creation.box(extents=[0.2, 0.2, 0.2])
    open_tm = trimesh.Trimesh(tm.vertices, tm.faces[2:], process=False)
    assert not open_tm.is_watertight
    hull = Mesh.convex_hull_of(open_tm)
    assert hull.is_convex
    assert hull.mass_properties(1000.0).mass == pytest.approx(8.0, rel=1e-12)
    with pytest.raises(ConfigurationError, match="no solid convex hull"):
        Mesh.convex_hull_of(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]))
    ell = _ell()
    assert not ell.is_convex
    scene = Scene(
        "ell",
        (Body("ball", 1.0, [1.0] * 3, shapes=(Sphere(radius=0.03),)),),
        static_shapes=(ell,),
        contact=ContactParams(margin=0.1),
    )
    E = se3.make_transform(np.eye(3), [0.13, 0.13, 0.05])[None]
    with pytest.warns(
        UserWarning, match=r"static shape 0: the mesh is not convex \(it fills 85.7 %"
    ):
        c = collide(scene, E)
    # the hull's edge x + y = 0.3 m is 0.04 / sqrt(2) m beyond the centre (x + y = 0.26 m)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(-0.04 / np.sqrt(2.0) - 0.03, abs=1e-12)
    assert c.normal[0] == pytest.approx(np.array([1.0, 1.0, 0.0]) / np.sqrt(2.0), abs=1e-12)


def test_mesh_pairs_are_listed():
    names = set(supported_pairs())
    for pair in (
        "sphere-mesh",
        "capsule-mesh",
        "box-mesh",
        "cylinder-mesh",
        "mesh-mesh",
        "mesh-plane",
    ):
        assert pair in names


def test_hull_of_a_trimesh_convex_hull_collides_as_that_hull():
    """What a loader does with an open mesh (trimesh's convex_hull, then Mesh):
    the contacts equal those of Mesh.convex_hull_of on the same points."""
    rng = np.random.default_rng(2)
    soup = trimesh.Trimesh(_points(rng, 40, [0.1, 0.08, 0.06]), np.zeros((0, 3), dtype=np.int64))
    a = Mesh.from_trimesh(soup.convex_hull)
    b = Mesh.convex_hull_of(soup)
    E = se3.make_transform(se3.random_rotation(rng), [0.0, 0.0, 0.05])[None]
    got = []
    for mesh in (a, b):
        scene = Scene("m", (Body("m", 1.0, [1.0] * 3, shapes=(mesh,)),), static_shapes=(Plane(),))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # convex: no warning
            c = collide(scene, E)
        got.append(np.sort(c.distance))
    assert len(got[0]) >= 1
    assert np.allclose(got[0], got[1], atol=1e-14)


def test_hill_climbing_support_is_the_farthest_vertex():
    """On a hull of many vertices the support mapping climbs the vertex graph; on a
    convex polytope that ends at a farthest vertex: its height along every one of
    500 random directions equals the largest over all vertices (to round-off)."""
    rng = np.random.default_rng(4)
    points = np.vstack([_points(rng, 400, [0.2, 0.1, 0.15]), 0.05 * rng.normal(size=(50, 3))])
    P = polytope(points)
    assert len(P.vertices) > HILL_CLIMB_VERTICES
    hs = hull_set([P])
    H = (hs.vertices, hs.neighbour_start, hs.neighbours)
    R, p = se3.random_rotation(rng), np.array([0.3, -0.1, 0.2])
    world = hs.vertices @ R.T + p
    for v in rng.normal(size=(500, 3)):
        s = support(MESH, R, p, hs.half_extents[0], H, v)
        assert s @ v == pytest.approx((world @ v).max(), abs=1e-14)
