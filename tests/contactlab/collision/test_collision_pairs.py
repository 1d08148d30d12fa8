"""Narrow-phase facts for every supported pair, against hand-computed configurations.

Each configuration is simple enough that the closest points, the normal and
the signed distance are known in closed form (stated next to each case).
The narrow phase is exact arithmetic on these configurations, so the
tolerance is round-off: ``1e-9`` [m].
"""

from __future__ import annotations

import numpy as np
import pytest
import shape_pairs
from shape_pairs import MARGIN, T, check_sphere_contact

from contactlab import se3
from contactlab.collision import ContactSet, collide
from contactlab.errors import ConfigurationError
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Box, Capsule, Cylinder, Plane, Sphere

TOL = 1e-9
S2 = np.sqrt(0.5)


GROUND = (Plane(),)


def scene_of(*shapes, static=GROUND, margin=MARGIN, contact=None):
    """:func:`shape_pairs.scene_of` on the ground plane by default."""
    return shape_pairs.scene_of(*shapes, static=static, margin=margin, contact=contact)


def run(scene, *transforms) -> ContactSet:
    return collide(scene, np.stack(transforms))


def sort_rows(x):
    x = np.round(np.asarray(x), 9)
    return x[np.lexsort(x.T[::-1])]


def check_common(c: ContactSet):
    """Unit normals, distances below the margin, A always dynamic."""
    if len(c):
        assert np.allclose(np.linalg.norm(c.normal, axis=1), 1.0, atol=1e-12)
        assert np.all(c.distance < MARGIN)
        assert np.all(c.body_a >= 0)


# ----------------------------------------------------------------------------
# planes
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("z", "expect"),
    [(0.5, 0.0), (0.503, 0.003), (0.4, -0.1), (0.506, None), (2.0, None)],
)
def test_sphere_plane_distance_and_midpoint(z, expect):
    c = run(scene_of(Sphere(radius=0.5)), T([0.2, -0.3, z]))
    check_common(c)
    # at the midpoint of the sphere's lowest point (z - r) and the plane point (0)
    check_sphere_contact(c, [0.2, -0.3, z], 0.5, expect, [0, 0, 1], TOL)
    if expect is not None:
        assert (c.body_a[0], c.body_b[0], c.shape_b[0]) == (0, -1, 0)


def test_sphere_tilted_plane_separated():
    plane = Plane(normal=[0.6, 0.0, 0.8], offset=1.0)
    centre = np.array([1.0, 2.0, 0.9])  # n.c = 0.6 + 0.72 = 1.32; distance 1.32 - 1 - 0.3 = 0.02
    assert len(run(scene_of(Sphere(radius=0.3), static=(plane,)), T(centre))) == 0
    # 0.017 lower along n: distance 0.003 < margin
    c = run(scene_of(Sphere(radius=0.3), static=(plane,)), T(centre - 0.017 * plane.normal))
    assert c.distance[0] == pytest.approx(0.003, abs=TOL)


def test_sphere_tilted_plane_penetrating():
    n = np.array([0.6, 0.0, 0.8])
    plane = Plane(normal=n, offset=1.0)
    centre = n * 1.2  # n.c = 1.2 -> distance 1.2 - 1 - 0.3 = -0.1
    c = run(scene_of(Sphere(radius=0.3), static=(plane,)), T(centre))
    assert c.distance[0] == pytest.approx(-0.1, abs=TOL)
    assert np.allclose(c.normal[0], n, atol=TOL)
    assert np.allclose(c.point[0], centre - 0.3 * n + 0.05 * n, atol=TOL)


def test_box_plane_face_edge_corner_and_separated():
    box = Box(half_extents=[0.5, 0.3, 0.2])
    s = scene_of(box)
    face = run(s, T([0, 0, 0.2]))
    check_common(face)
    assert len(face) == 4
    assert (
        sort_rows(face.point).tolist()
        == sort_rows([[x, y, 0.0] for x in (-0.5, 0.5) for y in (-0.3, 0.3)]).tolist()
    )
    assert np.allclose(face.distance, 0.0, atol=TOL)
    # penetrating by 1 cm: same corners, midpoint 5 mm below the surface
    pen = run(s, T([0, 0, 0.19]))
    assert len(pen) == 4 and np.allclose(pen.distance, -0.01, atol=TOL)
    assert np.allclose(pen.point[:, 2], -0.005, atol=TOL)
    # on an edge: rotated 45 deg about x, the lowest edge along x at height
    # z - (0.3 + 0.2) / sqrt(2) (half diagonal of the y-z rectangle projected)
    zc = (0.3 + 0.2) * S2
    edge = run(s, T([0, 0, zc], [np.pi / 4, 0, 0]))
    assert len(edge) == 2
    assert np.allclose(edge.distance, 0.0, atol=TOL)
    assert sorted(np.round(edge.point[:, 0], 9)) == [-0.5, 0.5]
    # on a corner: rotate so the body diagonal points down
    d = np.array([0.5, 0.3, 0.2])
    R = rotation_taking(d / np.linalg.norm(d), np.array([0.0, 0.0, -1.0]))
    corner = run(s, se3.make_transform(R, [0, 0, np.linalg.norm(d)]))
    assert len(corner) == 1 and abs(corner.distance[0]) < TOL
    assert len(run(s, T([0, 0, 0.21]))) == 0


def rotation_taking(a, b):
    """Rotation taking unit vector a to unit vector b (not antiparallel)."""
    v = np.cross(a, b)
    ang = np.arctan2(np.linalg.norm(v), a @ b)
    return se3.exp_so3(v / np.linalg.norm(v) * ang)


def test_capsule_plane_lying_and_standing():
    cap = Capsule(radius=0.1, half_height=0.4)
    s = scene_of(cap)
    lying = run(s, T([0, 0, 0.1], [0, np.pi / 2, 0]))  # axis along x
    assert len(lying) == 2
    assert sort_rows(lying.point).tolist() == sort_rows([[-0.4, 0, 0], [0.4, 0, 0]]).tolist()
    standing = run(s, T([0, 0, 0.5 - 0.002]))  # bottom sphere 2 mm into the plane
    assert len(standing) == 1
    assert standing.distance[0] == pytest.approx(-0.002, abs=TOL)
    assert np.allclose(standing.point[0], [0, 0, -0.001], atol=TOL)


def test_cylinder_plane_standing_lying_tilted():
    cyl = Cylinder(radius=0.2, half_height=0.3)
    s = scene_of(cyl)
    standing = run(s, T([0, 0, 0.3]))
    assert len(standing) == 8  # the bottom rim samples
    assert np.allclose(standing.distance, 0.0, atol=TOL)
    assert np.allclose(np.linalg.norm(standing.point[:, :2], axis=1), 0.2, atol=TOL)
    assert np.allclose(standing.point.mean(axis=0), [0, 0, 0], atol=TOL)
    lying = run(s, T([0, 0, 0.2], [np.pi / 2, 0, 0]))  # axis along -y
    assert len(lying) == 2
    assert np.allclose(lying.distance, 0.0, atol=TOL)
    assert sorted(np.round(lying.point[:, 1], 9)) == [-0.3, 0.3]
    # tilted by a about x: the deepest rim point is at z - hh cos a - r sin a
    a = 0.3
    z = 0.3 * np.cos(a) + 0.2 * np.sin(a) - 0.002
    tilted = run(s, T([0, 0, z], [a, 0, 0]))
    assert tilted.distance.min() == pytest.approx(-0.002, abs=TOL)
    deepest = tilted.point[np.argmin(tilted.distance)]
    # the deepest rim point lies in the plane x = 0 (tilt about x)
    assert deepest[0] == pytest.approx(0.0, abs=TOL)


# ----------------------------------------------------------------------------
# round pairs
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(("gap", "n_expect"), [(0.0, 1), (0.004, 1), (-0.05, 1), (0.01, 0)])
def test_sphere_sphere(gap, n_expect):
    s = scene_of(Sphere(radius=0.3), Sphere(radius=0.2), static=())
    d = np.array([3.0, 4.0, 0.0]) / 5.0
    c = run(s, T([0, 0, 0]), T(d * (0.5 + gap)))
    check_common(c)
    assert len(c) == n_expect
    if n_expect:
        assert c.distance[0] == pytest.approx(gap, abs=TOL)
        # body 0 is A, body 1 is B: normal from B toward A is -d
        assert np.allclose(c.normal[0], -d, atol=TOL)
        assert np.allclose(c.point[0], d * (0.3 + 0.5 * gap), atol=TOL)


def test_sphere_capsule_side_and_cap():
    s = scene_of(Sphere(radius=0.1), Capsule(radius=0.2, half_height=0.5), static=())
    # beside the cylindrical part: distance |x| - 0.1 - 0.2
    side = run(s, T([0.29, 0.0, 0.3]), T([0, 0, 0]))
    assert side.distance[0] == pytest.approx(-0.01, abs=TOL)
    assert np.allclose(side.normal[0], [1, 0, 0], atol=TOL)
    # off the top cap, diagonally: distance from the end point (0,0,0.5)
    off = np.array([0.2, 0.0, 0.2])
    cap = run(s, T(np.array([0, 0, 0.5]) + off), T([0, 0, 0]))
    assert cap.distance[0] == pytest.approx(np.linalg.norm(off) - 0.3, abs=TOL)
    near = off / np.linalg.norm(off) * 0.301
    cap = run(s, T(np.array([0, 0, 0.5]) + near), T([0, 0, 0]))
    assert cap.distance[0] == pytest.approx(0.001, abs=TOL)
    assert np.allclose(cap.normal[0], off / np.linalg.norm(off), atol=TOL)


def test_capsule_capsule_crossing_parallel():
    cap = Capsule(radius=0.1, half_height=0.5)
    s = scene_of(cap, cap, static=())
    # crossing at right angles: A along x at z = 0, B along y at z = 0.19
    cross = run(s, T([0, 0, 0], [0, np.pi / 2, 0]), T([0, 0, 0.19], [np.pi / 2, 0, 0]))
    assert len(cross) == 1
    assert cross.distance[0] == pytest.approx(-0.01, abs=TOL)
    assert np.allclose(cross.normal[0], [0, 0, -1], atol=TOL)
    assert np.allclose(cross.point[0], [0, 0, 0.095], atol=TOL)
    # parallel along x, B shifted by 0.6 along x: overlap x in [0.1, 0.5]
    par = run(s, T([0, 0, 0], [0, np.pi / 2, 0]), T([0.6, 0, 0.2], [0, np.pi / 2, 0]))
    assert len(par) == 2
    assert np.allclose(par.distance, 0.0, atol=TOL)
    assert sorted(np.round(par.point[:, 0], 9)) == [0.1, 0.5]
    assert np.allclose(par.point[:, 2], 0.1, atol=TOL)


def test_skew_capsules_distance_is_segment_distance():
    # A along x through the origin, B along y through (0.3, 0, 0.25): the closest
    # points are (0.3, 0, 0) and (0.3, 0, 0.25) -> distance 0.25 - 0.1 - 0.1.
    cap = Capsule(radius=0.1, half_height=0.5)
    s = scene_of(cap, cap, static=(), margin=0.1)
    c = collide(
        s, np.stack([T([0, 0, 0], [0, np.pi / 2, 0]), T([0.3, 0, 0.25], [np.pi / 2, 0, 0])])
    )
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(0.05, abs=TOL)
    assert np.allclose(c.point[0], [0.3, 0, 0.125], atol=TOL)


# ----------------------------------------------------------------------------
# sphere-box
# ----------------------------------------------------------------------------
BOX = Box(half_extents=[0.5, 0.4, 0.3])


@pytest.mark.parametrize(
    ("centre", "dist", "normal"),
    [
        ([0.1, 0.0, 0.3 + 0.2 - 0.01], -0.01, [0, 0, 1]),  # face region
        ([0.5 + 0.06, 0.0, 0.3 + 0.08], 0.1 - 0.2, [0.6, 0, 0.8]),  # edge region
        ([0.0, 0.0, 0.25], -(0.05 + 0.2), [0, 0, 1]),  # centre inside, nearest face +z
        ([0.5 + 0.2, 0.4 + 0.001, 0.1], 0.0, None),  # corner-free edge region, touching
    ],
)
def test_sphere_box_regions(centre, dist, normal):
    s = scene_of(Sphere(radius=0.2), BOX, static=())
    c = run(s, T(centre), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 1
    if normal is None:
        # edge along z at (0.5, 0.4): distance sqrt(0.2^2 + 0.001^2) - 0.2
        assert c.distance[0] == pytest.approx(np.hypot(0.2, 0.001) - 0.2, abs=TOL)
        return
    assert c.distance[0] == pytest.approx(dist, abs=TOL)
    assert np.allclose(c.normal[0], normal, atol=TOL)


def test_sphere_static_box_and_rotated_box():
    R = se3.exp_so3([0, 0, np.pi / 6])
    static_box = Box(half_extents=[0.5, 0.4, 0.3], pose=se3.make_transform(R, [1, 2, 0.3]))
    s = scene_of(Sphere(radius=0.2), static=(static_box,))
    # above the box top face centre, 1 mm in
    c = run(s, T([1, 2, 0.6 + 0.2 - 0.001]))
    assert len(c) == 1
    assert (c.body_a[0], c.body_b[0]) == (0, -1)
    assert c.distance[0] == pytest.approx(-0.001, abs=TOL)
    assert np.allclose(c.normal[0], [0, 0, 1], atol=TOL)
    # beside the rotated +x face: normal is R e_x
    centre = np.array([1, 2, 0.3]) + R @ np.array([0.5 + 0.2, 0.1, 0.0])
    c = run(s, T(centre))
    assert c.distance[0] == pytest.approx(0.0, abs=TOL)
    assert np.allclose(c.normal[0], R[:, 0], atol=TOL)


def test_friction_coefficient_follows_the_combination_rule():
    params = ContactParams(
        margin=MARGIN, mu=0.5, mu_pairs={("ice", "world"): 0.05, ("rubber", "ice"): 0.9}
    )
    ice = Body("ice", 1.0, [1, 1, 1], shapes=(Sphere(radius=0.5),), material="ice")
    rubber = Body("rubber", 1.0, [1, 1, 1], shapes=(Sphere(radius=0.5),), material="rubber")
    s = Scene("t", (ice, rubber), static_shapes=(Plane(),), contact=params)
    c = collide(s, np.stack([T([0, 0, 0.5]), T([0.0, 1.0, 0.5])]))
    mu = {(int(a), int(b)): m for a, b, m in zip(c.body_a, c.body_b, c.mu)}
    assert mu[(0, -1)] == 0.05  # explicit pair entry
    assert mu[(1, -1)] == 0.5  # no entry -> default mu
    assert mu[(0, 1)] == 0.9  # entry given in the other order


def test_unsupported_pair_is_a_clear_error(monkeypatch):
    from contactlab.collision import detect, shape_table

    monkeypatch.delitem(detect.PAIR_FUNCTIONS, (shape_table.BOX, shape_table.CYLINDER))
    s = scene_of(Cylinder(radius=0.2, half_height=0.3), BOX, static=())
    with pytest.raises(ConfigurationError, match="no narrow phase for box-cylinder"):
        run(s, T([0, 0, 0]), T([0.1, 0, 0]))


def test_plane_on_a_body_is_rejected():
    with pytest.raises(ConfigurationError, match="static_shapes"):
        collide(scene_of(Plane()), np.eye(4)[None])


def test_static_sphere_against_a_dynamic_box_reports_the_world_as_b():
    # a static ball of radius 0.2 at the origin; a box resting on it from above
    ball = Sphere(radius=0.2, pose=T([0, 0, 0]))
    s = scene_of(BOX, static=(ball,))
    c = run(s, T([0, 0, 0.2 + 0.3 - 0.001]))
    assert len(c) == 1
    assert (c.body_a[0], c.body_b[0]) == (0, -1)
    assert c.distance[0] == pytest.approx(-0.001, abs=TOL)
    assert np.allclose(c.normal[0], [0, 0, 1], atol=TOL)  # from the ball (B) toward the box (A)


# ----------------------------------------------------------------------------
# capsule-box
# ----------------------------------------------------------------------------
CAP = Capsule(radius=0.1, half_height=0.3)


def test_capsule_lying_on_a_box_face_rests_on_both_ends():
    s = scene_of(CAP, BOX, static=())
    c = run(s, T([0.1, 0.0, 0.3 + 0.1], [0, np.pi / 2, 0]), T([0, 0, 0]))  # axis along x
    assert len(c) == 2
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert np.allclose(c.normal, [0, 0, 1], atol=TOL)
    assert sorted(np.round(c.point[:, 0], 9)) == [-0.2, 0.4]


def test_capsule_lying_across_a_box_edge_is_held_at_the_edge():
    # the core runs along x from 0.2 to 0.8, the box's edge is at x = 0.5
    s = scene_of(CAP, BOX, static=())
    c = run(s, T([0.5, 0.0, 0.3 + 0.1], [0, np.pi / 2, 0]), T([0, 0, 0]))
    assert len(c) == 2
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert sorted(np.round(c.point[:, 0], 9)) == [0.2, 0.5]


def test_capsule_crossing_a_box_edge_touches_at_its_deepest_point():
    # core through q = edge + (r + gap) (1, 0, 1)/sqrt(2), direction (1, 0, -1)/sqrt(2):
    # the closest core point to the box is q, at distance gap from the edge (0.5, y, 0.3)
    gap = 0.002
    out = np.array([1.0, 0.0, 1.0]) / np.sqrt(2)
    q = np.array([0.5, 0.0, 0.3]) + (0.1 + gap) * out
    s = scene_of(CAP, BOX, static=())
    c = run(s, T(q, [0, 3 * np.pi / 4, 0]), T([0, 0, 0]))  # axis (1, 0, -1)/sqrt(2)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(gap, abs=1e-9)
    assert np.allclose(c.normal[0], out, atol=1e-6)
    assert np.allclose(c.point[0], [0.5, 0, 0.3] + 0.5 * gap * out, atol=1e-6)
