"""Cylinder narrow phase: sphere-, capsule-, box- and cylinder-cylinder.

Hand-computed configurations (closest points, normal and signed distance in
closed form, stated next to each case).  Tolerances: sphere-cylinder and
flat features (caps, box faces, straight side lines) are exact arithmetic,
``1e-9`` [m]; the support-mapping pairs reach curved features (a cylinder's
side or rim) through EPA, whose stopping tolerance is 1e-12 m in depth: a
normal tilted by ``e`` rad off the optimum changes the depth by about
``rho e^2 / 2`` (rho ~ 0.4 m the curvature radius), so the normal is good to
~1e-5 and the depth to 1e-9; those cases use ``CURVED = 1e-5`` for normals
and ``1e-8`` m for distances.

Conventions are those of the other pairs (tests/contactlab/collision): the
pair is oriented sphere < capsule < box < cylinder (A is the lower kind, the
lower body index for two cylinders), the normal points from B toward A.
"""

from __future__ import annotations

import numpy as np
import pytest
from shape_pairs import MARGIN, T, check_sphere_contact, check_swap_symmetry, rows, scene_of

from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.collision import ContactSet, collide, supported_pairs
from contactlab.collision.convex import signed_distance
from contactlab.collision.shape_table import BOX, CAPSULE, CYLINDER
from contactlab.scene import ContactParams, Scene
from contactlab.shapes import Box, Capsule, Cylinder, Plane, Sphere
from contactlab.simulator import Simulator

TOL = 1e-9
CURVED = 1e-5
S2 = np.sqrt(0.5)

CYL = Cylinder(radius=0.2, half_height=0.3)
CAP = Capsule(radius=0.1, half_height=0.3)
BOX_ = Box(half_extents=[0.5, 0.4, 0.3])
CUBE = Box(half_extents=[0.1, 0.1, 0.1])


def run(scene, *transforms) -> ContactSet:
    return collide(scene, np.stack(transforms))


def check_common(c: ContactSet, margin: float = MARGIN) -> None:
    if len(c):
        assert np.allclose(np.linalg.norm(c.normal, axis=1), 1.0, atol=1e-12)
        assert np.all(c.distance < margin)
        assert np.all(c.body_a >= 0)


def rotation_taking(a, b):
    """Rotation taking unit vector a to unit vector b (not antiparallel)."""
    v = np.cross(a, b)
    ang = np.arctan2(np.linalg.norm(v), a @ b)
    return se3.exp_so3(v / np.linalg.norm(v) * ang)


def test_every_pair_of_solid_kinds_is_supported():
    names = set(supported_pairs())
    for pair in ("sphere-cylinder", "capsule-cylinder", "box-cylinder", "cylinder-cylinder"):
        assert pair in names


# ----------------------------------------------------------------------------
# sphere-cylinder (exact)
# ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("centre", "radius", "dist", "normal"),
    [
        # beside the side: |x| - r_cyl - r
        ([0.29, 0.0, 0.1], 0.1, -0.01, [1, 0, 0]),
        # above the cap: z - hh - r
        ([0.05, 0.05, 0.403], 0.1, 0.003, [0, 0, 1]),
        # off the rim (0.2, 0, 0.3) along (0.6, 0, 0.8) at 0.1: distance 0.1 - r
        ([0.26, 0.0, 0.38], 0.098, 0.002, [0.6, 0, 0.8]),
        # centre inside, nearer the side (depth 0.05 < 0.3): -(0.05 + r)
        ([0.0, -0.15, 0.0], 0.1, -0.15, [0, -1, 0]),
        # centre inside, nearer the bottom cap (depth 0.02 < 0.1)
        ([0.0, 0.1, -0.28], 0.1, -0.12, [0, 0, -1]),
        # centre on the axis inside, nearer the cap than the side (0.15 < 0.2)
        ([0.0, 0.0, 0.15], 0.05, -0.2, [0, 0, 1]),
        # separated beyond the margin
        ([0.0, 0.0, 0.406], 0.1, None, None),
        ([0.2 + 0.1 * S2 + 0.004, 0.0, 0.3 + 0.1 * S2 + 0.004], 0.1, None, None),
    ],
)
def test_sphere_cylinder_regions(centre, radius, dist, normal):
    c = run(scene_of(Sphere(radius=radius), CYL), T(centre), T([0, 0, 0]))
    check_common(c)
    check_sphere_contact(c, centre, radius, dist, normal, TOL)


def test_sphere_on_a_rotated_static_cylinder():
    # cylinder lying along the world y axis at height 0.2 (axis = R e_z = -y)
    R = se3.exp_so3([np.pi / 2, 0, 0])
    log = Cylinder(radius=0.2, half_height=0.3, pose=se3.make_transform(R, [1.0, 0.0, 0.2]))
    s = scene_of(Sphere(radius=0.1), static=(Plane(), log))
    # centre 0.1 + 0.001 beyond the side, along (0.6, 0, 0.8) from the axis point (1, 0.1, 0.2)
    c = run(s, T(np.array([1.0, 0.1, 0.2]) + 0.301 * np.array([0.6, 0.0, 0.8])))
    c = c.select(c.shape_b == 1)
    assert len(c) == 1 and (c.body_a[0], c.body_b[0]) == (0, -1)
    assert c.distance[0] == pytest.approx(0.001, abs=TOL)
    assert np.allclose(c.normal[0], [0.6, 0, 0.8], atol=TOL)


# ----------------------------------------------------------------------------
# capsule-cylinder
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("gap", [0.0, 0.003, -0.01])
def test_capsule_lying_on_a_cylinder_cap_gets_two_points(gap):
    # capsule core along x at height hh + r + gap over the cap; the rim polygon
    # has vertices at +-x (its first vertex is the local x axis), so the core
    # is supported on x in [-0.2, 0.2]
    c = run(scene_of(CAP, CYL), T([0, 0, 0.4 + gap], [0, np.pi / 2, 0]), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, gap, atol=TOL)
    assert np.allclose(c.normal, [0, 0, 1], atol=TOL)
    assert np.allclose(rows(c.point), rows([[-0.2, 0, 0.3 + gap / 2], [0.2, 0, 0.3 + gap / 2]]))


def test_capsule_beside_a_cylinder_parallel_gets_the_overlap_ends():
    # both axes along z, capsule at x = r_cyl + r_cap + gap, shifted up by 0.1:
    # the cores overlap over z in [-0.2, 0.3]
    gap = 0.002
    c = run(scene_of(CAP, CYL), T([0.3 + gap, 0, 0.1]), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, gap, atol=TOL)
    assert np.allclose(c.normal, [1, 0, 0], atol=TOL)
    assert np.allclose(rows(c.point), rows([[0.2 + gap / 2, 0, z] for z in (-0.2, 0.3)]))


@pytest.mark.parametrize("gap", [0.002, -0.004])
def test_capsule_end_against_a_cylinder_side_touches_at_one_point(gap):
    # capsule along x, its near end sphere centred at x = 0.2 + 0.1 + gap
    c = run(scene_of(CAP, CYL), T([0.6 + gap, 0, 0.05], [0, np.pi / 2, 0]), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(gap, abs=1e-8)
    assert np.allclose(c.normal[0], [1, 0, 0], atol=CURVED)
    assert np.allclose(c.point[0], [0.2 + gap / 2, 0, 0.05], atol=CURVED)


def test_capsule_crossing_a_cylinder_side_and_separated_beyond_margin():
    # capsule along y above a cylinder lying along x: cores cross at right angles
    s = scene_of(CAP, CYL)
    lying = T([0, 0, 0], [0, np.pi / 2, 0])
    for gap in (0.001, -0.02):
        c = run(s, T([0, 0, 0.3 + gap], [np.pi / 2, 0, 0]), lying)
        assert len(c) == 1
        assert c.distance[0] == pytest.approx(gap, abs=1e-8)
        assert np.allclose(c.normal[0], [0, 0, 1], atol=CURVED)
    assert len(run(s, T([0, 0, 0.306], [np.pi / 2, 0, 0]), lying)) == 0
    # standing on the cap: the lower end sphere only
    c = run(s, T([0.05, 0, 0.7 - 0.003]), T([0, 0, 0]))
    assert len(c) == 1 and c.distance[0] == pytest.approx(-0.003, abs=TOL)
    assert np.allclose(c.point[0], [0.05, 0, 0.3 - 0.0015], atol=TOL)


# ----------------------------------------------------------------------------
# box-cylinder
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("gap", [0.0, 0.004, -0.002])
def test_cylinder_standing_on_a_box_rests_on_its_rim_polygon(gap):
    c = run(scene_of(BOX_, CYL), T([0, 0, 0]), T([0.1, -0.05, 0.6 + gap]))
    check_common(c)
    assert len(c) == 8
    assert np.allclose(c.distance, gap, atol=TOL)
    # box (A) below the cylinder (B): the normal from B toward A points down
    assert np.allclose(c.normal, [0, 0, -1], atol=TOL)
    assert set(c.body_a) == {0}
    rim = c.point[:, :2] - [0.1, -0.05]
    assert np.allclose(np.linalg.norm(rim, axis=1), 0.2, atol=TOL)
    assert np.allclose(rim.mean(axis=0), 0.0, atol=TOL)
    assert np.allclose(c.point[:, 2], 0.3 + gap / 2, atol=TOL)


def test_cylinder_overhanging_a_box_edge_is_supported_inside_the_face():
    # the cylinder's centre 0.1 beyond the box's +x edge: the contacts are the
    # rim polygon's vertices inside the face and its crossings with the edge
    c = run(scene_of(BOX_, CYL), T([0, 0, 0]), T([0.6, 0.0, 0.6]))
    check_common(c)
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert np.all(c.point[:, 0] <= 0.5 + 1e-9)
    on_edge = np.isclose(c.point[:, 0], 0.5)
    # rim polygon vertices at 0, 45, ..., 315 deg: x = 0.6 + 0.2 cos(theta) <= 0.5 for
    # 135, 180 and 225 deg; the polygon's edges 90-135 and 225-270 deg cross x = 0.5
    assert on_edge.sum() == 2 and len(c) == 5
    r = np.linalg.norm(c.point[~on_edge, :2] - [0.6, 0.0], axis=1)
    assert np.allclose(r, 0.2, atol=TOL)
    assert sorted(np.round(c.point[~on_edge, 0], 9)) == sorted(
        np.round(0.6 + 0.2 * np.cos(np.radians([135, 180, 225])), 9)
    )


@pytest.mark.parametrize("gap", [0.0, -0.003])
def test_cylinder_lying_on_a_box_gets_its_side_line_ends(gap):
    c = run(scene_of(BOX_, CYL), T([0, 0, 0]), T([0.1, 0.0, 0.5 + gap], [np.pi / 2, 0, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, gap, atol=TOL)
    assert np.allclose(c.normal, [0, 0, -1], atol=1e-9)
    assert np.allclose(rows(c.point), rows([[0.1, y, 0.3 + gap / 2] for y in (-0.3, 0.3)]))


def test_box_resting_on_a_lying_cylinder_gets_a_line_contact():
    # the cube (A) on top of a cylinder lying along y: the line x = 0 under the cube
    c = run(scene_of(CUBE, CYL), T([0.0, 0.05, 0.3 - 0.001]), T([0, 0, 0], [np.pi / 2, 0, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, -0.001, atol=TOL)
    assert np.allclose(c.normal, [0, 0, 1], atol=1e-9)
    assert np.allclose(rows(c.point), rows([[0, y, 0.2 - 0.0005] for y in (-0.05, 0.15)]))


def test_tilted_cylinder_touches_a_box_at_its_deepest_rim_point():
    # tilted by a about x: the lowest rim point is hh cos a + r sin a below the
    # centre, at y = -r cos a + hh sin a... in the plane x = 0
    a = 0.3
    z = 0.3 + 0.3 * np.cos(a) + 0.2 * np.sin(a) - 0.002
    c = run(scene_of(BOX_, CYL), T([0, 0, 0]), T([0, 0, z], [a, 0, 0]))
    check_common(c)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(-0.002, abs=1e-9)
    assert np.allclose(c.normal[0], [0, 0, -1], atol=1e-9)
    R = se3.exp_so3([a, 0, 0])
    lowest = np.array([0, 0, z]) + R @ [0, -0.2, -0.3]
    assert np.allclose(c.point[0], lowest + [0, 0, 0.001], atol=1e-9)


@pytest.mark.parametrize("gap", [0.001, -0.002])
def test_box_edge_along_a_cylinder_side_is_a_line_contact(gap):
    # cube turned 45 deg about z, its vertical edge at x = r + gap: the edge
    # (z in [-0.1, 0.1]) lies along the cylinder's side line x = r
    cx = 0.2 + 0.1 * np.sqrt(2.0) + gap
    c = run(scene_of(CUBE, CYL), T([cx, 0, 0], [0, 0, np.pi / 4]), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, gap, atol=1e-8)
    assert np.allclose(c.normal, [1, 0, 0], atol=CURVED)
    # the edge lies exactly on the side line, i.e. on a side plane of the box face:
    # the clip may keep it only with its CLIP_TOL = 1e-5 m allowance, so the
    # ends may stick out of the edge by up to that much
    expect = [[0.2 + gap / 2, 0, z] for z in (-0.1, 0.1)]
    assert np.allclose(rows(c.point, 6), rows(expect, 6), atol=2e-5)


def test_box_corner_into_a_cylinder_cap():
    # cube with its body diagonal pointing down, the corner 3 mm into the cap
    d = np.array([0.1, 0.1, 0.1])
    R = rotation_taking(d / np.linalg.norm(d), np.array([0.0, 0.0, -1.0]))
    z = 0.3 + np.linalg.norm(d) - 0.003
    c = run(scene_of(CUBE, CYL), se3.make_transform(R, [0.05, 0.02, z]), T([0, 0, 0]))
    check_common(c)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(-0.003, abs=TOL)
    assert np.allclose(c.normal[0], [0, 0, 1], atol=TOL)
    assert np.allclose(c.point[0], [0.05, 0.02, 0.3 - 0.0015], atol=TOL)
    far = se3.make_transform(R, [0.05, 0.02, z + 0.009])  # 6 mm above: beyond the margin
    assert len(run(scene_of(CUBE, CYL), far, T([0, 0, 0]))) == 0


def test_cylinder_on_a_static_box_has_the_world_as_b():
    table = Box(half_extents=[0.5, 0.5, 0.1], pose=T([0, 0, -0.1]))
    c = run(scene_of(CYL, static=(table,)), T([0, 0, 0.3]))
    assert len(c) == 8
    assert set(c.body_a) == {0} and set(c.body_b) == {-1}
    assert np.allclose(c.normal, [0, 0, 1], atol=TOL)


# ----------------------------------------------------------------------------
# cylinder-cylinder
# ----------------------------------------------------------------------------
def test_coaxial_stack_rests_on_the_rim_polygon():
    small = Cylinder(radius=0.1, half_height=0.2)
    for gap in (0.0, -0.002):
        c = run(scene_of(CYL, small), T([0, 0, 0]), T([0.05, 0.02, 0.5 + gap], [0, 0, 0.3]))
        check_common(c)
        assert len(c) == 8
        assert np.allclose(c.distance, gap, atol=TOL)
        assert np.allclose(c.normal, [0, 0, -1], atol=TOL)  # B (small, above) toward A
        rim = c.point[:, :2] - [0.05, 0.02]
        assert np.allclose(np.linalg.norm(rim, axis=1), 0.1, atol=TOL)


def test_equal_cylinders_stacked_share_the_rim_polygon():
    c = run(scene_of(CYL, CYL), T([0, 0, 0]), T([0, 0, 0.6]))
    assert len(c) == 8
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert np.allclose(np.linalg.norm(c.point[:, :2], axis=1), 0.2, atol=TOL)


@pytest.mark.parametrize("gap", [0.0, 0.003, -0.002])
def test_parallel_cylinders_side_by_side_get_two_points(gap):
    # both along y (axis -y), B above A by 2 r + gap, shifted by 0.2 along y:
    # the side lines overlap over y in [-0.1, 0.3]
    lie = [np.pi / 2, 0, 0]
    c = run(scene_of(CYL, CYL), T([0, 0, 0], lie), T([0, 0.2, 0.4 + gap], lie))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, gap, atol=1e-8)
    assert np.allclose(c.normal, [0, 0, -1], atol=CURVED)
    assert np.allclose(rows(c.point, 5), rows([[0, y, 0.2 + gap / 2] for y in (-0.1, 0.3)], 5))


@pytest.mark.parametrize("gap", [0.002, -0.005])
def test_crossed_cylinders_touch_at_one_point(gap):
    # A along x, B along y above it: the sides cross at (0, 0, r)
    c = run(
        scene_of(CYL, CYL), T([0, 0, 0], [0, np.pi / 2, 0]), T([0, 0, 0.4 + gap], [np.pi / 2, 0, 0])
    )
    check_common(c)
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(gap, abs=1e-8)
    assert np.allclose(c.normal[0], [0, 0, -1], atol=CURVED)
    assert np.allclose(c.point[0], [0, 0, 0.2 + gap / 2], atol=CURVED)


def test_cylinder_lying_across_a_standing_cylinder_cap():
    # B lies along x on A's cap (rim polygon vertices at +-x): line x in [-0.2, 0.2]
    c = run(scene_of(CYL, CYL), T([0, 0, 0]), T([0, 0, 0.5 - 0.001], [0, np.pi / 2, 0]))
    check_common(c)
    assert len(c) == 2
    assert np.allclose(c.distance, -0.001, atol=TOL)
    assert np.allclose(c.normal, [0, 0, -1], atol=TOL)
    assert np.allclose(rows(c.point), rows([[x, 0, 0.3 - 0.0005] for x in (-0.2, 0.2)]))


def test_rim_on_rim_and_separated_beyond_margin():
    # B tilted 90 deg (lying along x) beside A's top rim: B's side line at
    # z = 0.3 + 0.2 and x... place B so its lowest side line passes 2 mm above
    # A's rim point (0.2, 0, 0.3) while its end cap clears A: B along y at
    # x = 0.2 + 0.2 * S2..., simpler: B standing, offset diagonally so the two
    # rims meet at the midpoint (0.2, 0, 0.3) of the gap
    s = scene_of(CYL, CYL)
    c = run(s, T([0, 0, 0]), T([0.4, 0, 0.6]))
    # the rims touch at (0.2, 0, 0.3); the cylinders are apart elsewhere
    assert c.distance.min() == pytest.approx(0.0, abs=1e-8)
    assert len(run(s, T([0, 0, 0]), T([0.4, 0, 0.606]))) == 0
    assert len(run(s, T([0, 0, 0]), T([0.406, 0, 0.0]))) == 0


# ----------------------------------------------------------------------------
# swap symmetry, brute-force agreement, separation along the normal
# ----------------------------------------------------------------------------
PAIRS = [
    (Sphere(radius=0.25), CYL, 0.5),
    (Capsule(radius=0.1, half_height=0.25), CYL, 0.45),
    (Box(half_extents=[0.3, 0.2, 0.15]), CYL, 0.55),
    (CYL, Cylinder(radius=0.15, half_height=0.35), 0.5),
]


@pytest.mark.parametrize(("sa", "sb", "reach"), PAIRS)
def test_swapping_the_pair_gives_the_same_contacts_with_opposite_normals(sa, sb, reach):
    check_swap_symmetry(
        sa, sb, reach, seed=11, atol=2e-5, decimals=5, check=lambda c: check_common(c, 0.05)
    )


def _support_height(kind, R, p, size, n):
    """max over the shape of n . x, for unit directions n (k, 3) [closed form]."""
    loc = n @ R  # directions in the shape frame
    if kind == BOX:
        return n @ p + np.abs(loc) @ size
    if kind == CAPSULE:  # core segment only
        return n @ p + size[1] * np.abs(loc[:, 2])
    return n @ p + size[0] * np.hypot(loc[:, 0], loc[:, 1]) + size[1] * np.abs(loc[:, 2])


def _fibonacci(k):
    i = np.arange(k) + 0.5
    z = 1 - 2 * i / k
    phi = np.pi * (1 + 5**0.5) * i
    rr = np.sqrt(1 - z * z)
    return np.stack([rr * np.cos(phi), rr * np.sin(phi), z], axis=1)


def brute_signed_distance(ka, Ra, pa, sa, kb, Rb, pb, sb):
    """max over unit n of (min_A n.x - max_B n.x), by dense direction sampling.

    Every sampled value is a lower bound on the signed distance: 20 000
    Fibonacci directions, then 8 rounds of local refinement (a 21 x 21 grid
    of tangent offsets around each of the 8 best directions, the grid step
    shrinking by 4 per round).  Where the maximum sits on a ridge of the gap
    (the normal perpendicular to a cylinder's axis, a kink of its support)
    the grid creeps along the ridge and stays up to ~1e-5 m low, so this is
    used as a bound only.
    """

    def gap(n):
        return -_support_height(ka, Ra, pa, sa, -n) - _support_height(kb, Rb, pb, sb, n)

    n = _fibonacci(20000)
    g = gap(n)
    best = n[np.argsort(g)[-8:]]
    step = 0.03
    off = np.linspace(-10, 10, 21)
    for _ in range(8):
        cand = [best]
        for b in best:
            t1 = np.cross(b, [1.0, 0, 0] if abs(b[0]) < 0.9 else [0, 1.0, 0])
            t1 /= np.linalg.norm(t1)
            t2 = np.cross(b, t1)
            u, v = np.meshgrid(off * step, off * step)
            c = b + u.reshape(-1, 1) * t1 + v.reshape(-1, 1) * t2
            cand.append(c / np.linalg.norm(c, axis=1, keepdims=True))
        c = np.concatenate(cand)
        g = gap(c)
        best = c[np.argsort(g)[-8:]]
        step /= 4.0
    return float(gap(best).max())


KINDS = {"capsule": (CAPSULE, CAP), "box": (BOX, BOX_), "cylinder": (CYLINDER, CYL)}


def conic_distance(ka, Ra, pa, sa, kb, Rb, pb, sb):
    """Euclidean distance of two separated solids by a conic program (cvxpy, Clarabel):
    minimise |a - b| over a in A, b in B, each written in its own frame."""
    cp = pytest.importorskip("cvxpy")
    xa, xb = cp.Variable(3), cp.Variable(3)
    cons = []
    for kind, x, size in ((ka, xa, sa), (kb, xb, sb)):
        if kind == BOX:
            cons += [cp.abs(x) <= size]
        elif kind == CAPSULE:  # core segment
            cons += [x[0] == 0, x[1] == 0, cp.abs(x[2]) <= size[1]]
        else:
            cons += [cp.norm(x[:2]) <= size[0], cp.abs(x[2]) <= size[1]]
    prob = cp.Problem(cp.Minimize(cp.norm(pa + Ra @ xa - pb - Rb @ xb)), cons)
    prob.solve(solver=cp.CLARABEL)
    return float(prob.value)


@pytest.mark.parametrize("kind_a", ["capsule", "box", "cylinder"])
def test_support_mapping_distance_matches_independent_computations(kind_a):
    """GJK/EPA signed distance of A and a cylinder on random configurations.

    Three facts per configuration:

    * the support gap of the two solids along the returned normal, from the
      closed-form support functions, equals the returned distance (1e-9 m):
      the distance is attained, so it is a lower bound of the true one;
    * no direction of a dense sample (20 000 directions plus local grid
      refinement) has a larger gap (1e-9 m): it is the maximum, not a local
      one (this is what an EPA stuck on a wrong face would violate);
    * when the solids are apart, a conic program (Clarabel, an interior-point
      method on the solids' constraints) gives the same distance within
      1e-6 m (its own tolerance is ~1e-8 relative).
    """
    ka, _ = KINDS[kind_a]
    size_a = {CAPSULE: [0.1, 0.3, 0], BOX: [0.5, 0.4, 0.3], CYLINDER: [0.2, 0.3, 0]}[ka]
    size_a = np.array(size_a, float)
    size_b = np.array([0.2, 0.3, 0.0])
    reach = (0.4, 1.2) if ka == BOX else (0.2, 0.8)  # centre distances [m]
    rng = np.random.default_rng(5)
    signs = []
    for _ in range(12):
        Ra, Rb = se3.random_rotation(rng), se3.random_rotation(rng)
        pa = np.zeros(3)
        d = rng.normal(size=3)
        pb = d / np.linalg.norm(d) * rng.uniform(*reach)
        found, dist, n, a, b = signed_distance(ka, Ra, pa, size_a, CYLINDER, Rb, pb, size_b, 10.0)
        assert found
        assert np.linalg.norm(n) == pytest.approx(1.0, abs=1e-12)
        gap_n = (
            -_support_height(ka, Ra, pa, size_a, -n[None])[0]
            - _support_height(CYLINDER, Rb, pb, size_b, n[None])[0]
        )
        assert gap_n == pytest.approx(dist, abs=1e-9)
        brute = brute_signed_distance(ka, Ra, pa, size_a, CYLINDER, Rb, pb, size_b)
        assert brute <= dist + 1e-9, (dist, brute)
        # witness points: a - b = d n (EPA's from barycentric coordinates on a face)
        assert np.allclose(a - b, dist * n, atol=1e-5)
        if dist > 0:
            conic = conic_distance(ka, Ra, pa, size_a, CYLINDER, Rb, pb, size_b)
            assert dist == pytest.approx(conic, abs=1e-6)
        signs.append(np.sign(dist))
    assert -1 in signs and 1 in signs  # both regimes covered


def test_normal_separates_by_the_reported_distance():
    """Moving A by -distance along the normal brings a pair to touching (box, cylinder).

    Translating A along the exact normal changes the signed distance by exactly
    the translation (the support gap along ``n`` changes by it and the witness
    pair realises it).  Tolerance 1e-7 m: the reported minimum may be a
    manifold point within ``DEEPEST_TOL`` = 1e-7 m of the exact distance
    (measured errors are below 5e-8 m).
    """
    rng = np.random.default_rng(3)
    s = scene_of(CUBE, CYL, margin=0.3)
    checked = 0
    for _ in range(30):
        d = rng.normal(size=3)
        Ea = se3.make_transform(se3.random_rotation(rng), d / np.linalg.norm(d) * 0.38)
        Eb = T([0, 0, 0])
        c = run(s, Ea, Eb)
        if not len(c):
            continue
        k = int(np.argmin(c.distance))
        moved = Ea.copy()
        moved[:3, 3] -= (c.distance[k] - 1e-4) * c.normal[k]
        assert run(s, moved, Eb).distance.min() == pytest.approx(1e-4, abs=1e-7)
        checked += 1
    assert checked >= 10


# ----------------------------------------------------------------------------
# simulation facts (collision -> contact model -> solver -> integration)
# ----------------------------------------------------------------------------
def _sim_contact() -> ContactParams:
    # the parameters of the contact scenarios (scenarios/contact.py)
    return ContactParams(margin=0.005, stabilization=None, max_correction=0.5, mu=0.5, directions=4)


def _tower(tilt_deg=(0.0, 0.0), lift=0.0, ball=False) -> Scene:
    """A 0.4 x 0.4 x 0.1 m box on the ground, a cylinder (r 0.05, hh 0.1) standing
    on it (centre at z = 0.2 + lift, tilted by ``tilt_deg`` about x, y), and
    optionally a ball (r 0.03) 5 cm above the cylinder's cap."""
    box, _ = body_from_shape("box", Box(half_extents=[0.2, 0.2, 0.05]), density=1000.0)
    cyl, _ = body_from_shape("cyl", Cylinder(radius=0.05, half_height=0.1), density=1000.0)
    R = se3.exp_so3(np.radians([*tilt_deg, 0.0]))
    bodies = [box, cyl]
    E = [T([0, 0, 0.05]), se3.make_transform(R, [0.03, -0.02, 0.2 + lift])]
    if ball:
        bodies.append(body_from_shape("ball", Sphere(radius=0.03), density=1000.0)[0])
        E.append(T([0.04, -0.01, 0.3 + 0.03 + 0.05]))
    return Scene(
        "cylinder-tower",
        tuple(bodies),
        static_shapes=(Plane(),),
        initial_E=np.stack(E),
        initial_phi=np.zeros((len(bodies), 6)),
        contact=_sim_contact(),
        dt=0.005,
        duration=1.0,
    )


@pytest.mark.parametrize("on_static_box", [True, False])
def test_cylinder_standing_on_a_box_stays_at_rest(on_static_box):
    """Placed at distance zero, the cylinder (8 rim contacts) stays put for 1 s.

    Box friction solved by PGS at solver_tol 1e-9 (PGS's default request is
    1e-6, which lets the tower creep by ~1e-8 m in 1 s), h = 5 ms.  Measured:
    displacement ~2e-11 m, no tilt; bounds 1e-8 m and 1e-6 rad (round-off of
    200 steps)."""
    if on_static_box:
        cyl, _ = body_from_shape("cyl", Cylinder(radius=0.05, half_height=0.1), density=1000.0)
        table = Box(half_extents=[0.3, 0.3, 0.1], pose=T([0, 0, -0.1]))
        scene = Scene(
            "cylinder-on-table",
            (cyl,),
            static_shapes=(table,),
            initial_E=T([0.03, -0.02, 0.1])[None],
            initial_phi=np.zeros((1, 6)),
            contact=_sim_contact(),
            dt=0.005,
            duration=1.0,
        )
    else:
        scene = _tower()
    run = Simulator(
        scene, "maximal", "box-friction", "pgs", model_options={"solver_tol": 1e-9}
    ).run(duration=1.0)
    assert run.status == "ok"
    p = run.trajectory["position"]
    assert np.abs(p - p[0]).max() < 1e-8
    axis_z = run.trajectory["rotation"][:, :, 2, 2]
    assert np.arccos(np.clip(axis_z, -1.0, 1.0)).max() < 1e-6


def test_tilted_cylinder_settles_upright_and_a_ball_lands_on_its_cap():
    """A cylinder released 5 mm above the box, tilted by (1, 0.5) deg, and a ball
    dropped 5 cm onto its top cap; frictionless contact (OSQP), 1 s.

    Facts: the cylinder rocks back onto its base (its centre of mass is over
    the base) and ends upright at height box top + hh = 0.2 m; the ball rests on
    the cap at 0.1 + 0.2 + 0.03 = 0.33 m; without friction every contact normal
    here is vertical (box face, cap), so no horizontal impulse acts and the
    horizontal positions of the centres of mass do not move.  Measured: heights
    exact to 1e-9 m, tilt below 1e-6 deg, horizontal drift 6e-6 m (normals on
    the curved rim found to ~1e-5 rad by EPA), final speeds 1e-8.  Bounds:
    heights 1e-4 m (the contact margin is 5 mm, penetration is stabilized),
    tilt 0.01 deg, drift 1e-4 m, speeds 1e-3.
    """
    scene = _tower(tilt_deg=(1.0, 0.5), lift=0.005, ball=True)
    run = Simulator(scene, "maximal", "frictionless", "osqp").run(duration=1.0)
    assert run.status == "ok"
    p = run.trajectory["position"]
    assert p[-1, 1, 2] == pytest.approx(0.2, abs=1e-4)
    assert p[-1, 2, 2] == pytest.approx(0.33, abs=1e-4)
    assert np.abs(p[-1, 0] - p[0, 0]).max() < 1e-6  # the box does not move
    assert np.abs(p[-1, 1:, :2] - p[0, 1:, :2]).max() < 1e-4
    tilt = np.degrees(np.arccos(np.clip(run.trajectory["rotation"][-1, 1, 2, 2], -1.0, 1.0)))
    assert tilt < 0.01
    assert np.abs(run.trajectory["twist"][-1]).max() < 1e-3
    # the ball touched the cap, not the ground: contacts at the end are
    # 4 (box-ground) + 8 (rim on the box) + 1 (ball on the cap)
    assert int(run.steps["n_contacts"].iloc[-1]) == 13


def test_ball_on_a_cylinder_with_friction_lands_at_the_cap_height():
    """The same tower with Coulomb friction (Anitescu-Hart, Clarabel): the ball ends
    at 0.33 m (measured exact to 1e-9 m) and the cylinder upright at 0.2 m."""
    scene = _tower(tilt_deg=(1.0, 0.5), lift=0.005, ball=True)
    run = Simulator(scene, "maximal", "anitescu-hart", "cvxpy:clarabel").run(duration=1.0)
    assert run.status == "ok"
    p = run.trajectory["position"]
    assert p[-1, 1, 2] == pytest.approx(0.2, abs=1e-4)
    assert p[-1, 2, 2] == pytest.approx(0.33, abs=1e-4)
    tilt = np.degrees(np.arccos(np.clip(run.trajectory["rotation"][-1, 1, 2, 2], -1.0, 1.0)))
    assert tilt < 0.01


def test_cylinder_rolls_down_a_tilted_box_at_two_thirds_g_sin_theta():
    """A solid cylinder (axis horizontal) released on a static slab tilted by 15
    deg rolls without slipping (mu = 0.5 >= tan(15 deg) / 3 = 0.089), so its
    centre accelerates down the slope at a = g sin(theta) / (1 + I / (m r^2))
    = 2/3 g sin(theta) (I = m r^2 / 2).  The slab-cylinder contact is the side
    line's two ends.  Box friction solved by PGS, h = 5 ms, 0.5 s; the
    acceleration from a quadratic fit of the displacement (exact for
    semi-implicit Euler under a constant acceleration, as in
    test_friction_facts).  Measured: a / (2/3 g sin) = 0.9993; tolerance 1 %.
    The centre sinks 0.4 mm into the slab over the run, as the ball on the
    ball-incline scene does (0.47 mm): the velocity-level step, not the
    collision; bound 1 mm.
    """
    th = np.radians(15.0)
    Ry = se3.exp_so3(np.array([0.0, th, 0.0]))
    n = Ry @ [0.0, 0.0, 1.0]
    down = -(Ry @ [1.0, 0.0, 0.0]) if (Ry @ [1.0, 0.0, 0.0])[2] > 0 else Ry @ [1.0, 0.0, 0.0]
    slab = Box(half_extents=[2.0, 1.0, 0.1], pose=se3.make_transform(Ry, -0.1 * n))
    cyl, _ = body_from_shape("cyl", Cylinder(radius=0.1, half_height=0.15), mass=1.0)
    E0 = se3.make_transform(se3.exp_so3(np.array([np.pi / 2, 0.0, 0.0])), 0.1 * n)[None]
    scene = Scene(
        "cylinder-roll",
        (cyl,),
        static_shapes=(slab,),
        initial_E=E0,
        initial_phi=np.zeros((1, 6)),
        contact=_sim_contact(),
        dt=0.005,
        duration=0.5,
    )
    run = Simulator(scene, "maximal", "box-friction", "pgs").run(duration=0.5)
    assert run.status == "ok"
    p = run.trajectory["position"][:, 0]
    a = 2.0 * np.polyfit(run.trajectory["t"], (p - p[0]) @ down, 2)[0]
    assert a == pytest.approx(2.0 / 3.0 * 9.81 * np.sin(th), rel=0.01)
    assert np.all(run.steps["n_contacts"] == 2)
    assert np.abs(p @ n - 0.1).max() < 1e-3


def test_a_mixed_pile_gives_each_pair_the_contacts_it_gets_alone():
    """All ten solid pair kinds in one scene (plus a static cylinder and the
    ground): the batched narrow phase (one kernel call per pair kind, shared
    work arrays) reports for every body pair exactly the contacts that the
    pair gets in a scene of its own (1e-12)."""
    rng = np.random.default_rng(2)
    kinds = [Sphere(radius=0.08), Capsule(radius=0.05, half_height=0.08), CUBE]
    kinds.append(Cylinder(radius=0.07, half_height=0.09))
    shapes = [kinds[k % 4] for k in range(48)]
    post = Cylinder(radius=0.1, half_height=0.3, pose=T([0, 0, 0.3]))
    E = se3.make_transform(
        se3.random_rotation(rng, 48), rng.uniform([-0.35, -0.35, 0], [0.35, 0.35, 0.5], (48, 3))
    )
    c = collide(scene_of(*shapes, static=(Plane(), post)), E)
    check_common(c)
    seen = set()
    for a, b in {(int(x), int(y)) for x, y in zip(c.body_a, c.body_b)}:
        if b < 0:
            continue
        mine = c.select((c.body_a == a) & (c.body_b == b))
        alone = collide(scene_of(shapes[a], shapes[b]), E[[a, b]])
        assert len(alone) == len(mine)
        x = np.hstack([mine.point, mine.normal, mine.distance[:, None]])
        y = np.hstack([alone.point, alone.normal, alone.distance[:, None]])
        assert np.allclose(rows(x, 12), rows(y, 12), atol=1e-12)
        seen.add(tuple(sorted((type(shapes[a]).__name__, type(shapes[b]).__name__))))
    assert len(seen) == 10  # every pair of the four solids met at least once
