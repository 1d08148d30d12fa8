"""Box–box manifolds, static boxes, swap symmetry and the broad phase.

Hand-computed cases: the contact points of a face-on box pair are the
vertices of the intersection of the two faces' rectangles (a rectangle for
aligned boxes, an octagon for a square turned 45 degrees on another), all at
the common face height; an edge-on pair touches at the crossing of the two
edges.  Tolerance: round-off, ``1e-9`` [m].
"""

from __future__ import annotations

import numpy as np
import pytest
from shape_pairs import T, check_swap_symmetry, rows, scene_of

from contactlab import se3
from contactlab.collision import (
    Collider,
    ContactSet,
    brute_force_pairs,
    collide,
    grid_pairs,
    sweep_and_prune,
)
from contactlab.errors import StateError
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Box, Capsule, Plane, Sphere

TOL = 1e-9
S2 = np.sqrt(0.5)


BIG = Box(half_extents=[0.5, 0.5, 0.5])
SMALL = Box(half_extents=[0.3, 0.2, 0.1])


def test_small_box_resting_on_big_box_gets_its_four_corners():
    c = collide(scene_of(BIG, SMALL), np.stack([T([0, 0, 0]), T([0.1, -0.05, 0.6], [0, 0, 0.4])]))
    assert len(c) == 4
    R = se3.exp_so3([0, 0, 0.4])
    corners = [R @ [x, y, 0] + [0.1, -0.05, 0.5] for x in (-0.3, 0.3) for y in (-0.2, 0.2)]
    assert np.allclose(rows(c.point), rows(corners), atol=1e-8)
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert np.allclose(c.normal, [0, 0, -1], atol=TOL)  # B (small, above) toward A
    assert set(c.body_a) == {0} and set(c.body_b) == {1}


@pytest.mark.parametrize(("gap", "count"), [(0.003, 4), (-0.01, 4), (0.006, 0)])
def test_offset_equal_boxes_give_the_overlap_rectangle(gap, count):
    c = collide(scene_of(BIG, BIG), np.stack([T([0, 0, 0]), T([0.4, 0.3, 1.0 + gap])]))
    assert len(c) == count
    if count:
        # face overlap x in [-0.1, 0.5], y in [-0.2, 0.5]; points midway in the gap
        expect = [[x, y, 0.5 + gap / 2] for x in (-0.1, 0.5) for y in (-0.2, 0.5)]
        assert np.allclose(rows(c.point), rows(expect), atol=1e-8)
        assert np.allclose(c.distance, gap, atol=TOL)


def test_square_turned_45_degrees_gives_an_octagon():
    c = collide(scene_of(BIG, BIG), np.stack([T([0, 0, 0]), T([0, 0, 1.0], [0, 0, np.pi / 4])]))
    assert len(c) == 8
    p = c.point[:, :2]
    # every vertex lies on the boundary of both squares and inside both
    R = se3.exp_so3([0, 0, -np.pi / 4])[:2, :2]
    q = p @ R.T
    assert np.all(np.abs(p) <= 0.5 + 1e-9) and np.all(np.abs(q) <= 0.5 + 1e-9)
    on_a = np.isclose(np.abs(p).max(axis=1), 0.5)
    on_b = np.isclose(np.abs(q).max(axis=1), 0.5)
    assert np.all(on_a & on_b)
    assert np.allclose(c.point[:, 2], 0.5, atol=TOL)


@pytest.mark.parametrize("gap", [0.002, -0.01])
def test_edge_on_edge(gap):
    # A turned 45 deg about x: top edge along x at height sqrt(2)/2.
    # B turned 45 deg about y: bottom edge along y at height z_B - sqrt(2)/2.
    zb = 2 * S2 + gap
    c = collide(
        scene_of(BIG, BIG),
        np.stack([T([0, 0, 0], [np.pi / 4, 0, 0]), T([0, 0, zb], [0, np.pi / 4, 0])]),
    )
    assert len(c) == 1
    assert c.distance[0] == pytest.approx(gap, abs=TOL)
    assert np.allclose(c.normal[0], [0, 0, -1], atol=TOL)
    assert np.allclose(c.point[0], [0, 0, S2 + gap / 2], atol=TOL)


def test_box_tilted_onto_an_edge_of_its_bottom_face_gets_two_points():
    # SMALL rotated about x by a: the lowest edge (y = -0.2, z = -0.1) along x
    a = 0.2
    zc = 0.5 + 0.2 * np.sin(a) + 0.1 * np.cos(a)
    c = collide(scene_of(BIG, SMALL), np.stack([T([0, 0, 0]), T([0, 0, zc], [a, 0, 0])]))
    assert len(c) == 2
    assert np.allclose(c.distance, 0.0, atol=TOL)
    assert sorted(np.round(c.point[:, 0], 9)) == [-0.3, 0.3]


def test_box_on_static_box_has_world_as_b():
    table = Box(half_extents=[0.5, 0.5, 0.5], pose=T([0, 0, -0.5]))
    c = collide(scene_of(SMALL, static=(table,)), T([0.2, 0.1, 0.1])[None])
    assert len(c) == 4
    assert set(c.body_a) == {0} and set(c.body_b) == {-1}
    assert np.allclose(c.normal, [0, 0, 1], atol=TOL)
    assert np.allclose(c.point[:, 2], 0.0, atol=TOL)


PAIRS = [
    (BIG, SMALL, 0.9),
    (Box(half_extents=[0.4, 0.3, 0.2]), Box(half_extents=[0.25, 0.35, 0.15]), 0.75),
    (Sphere(radius=0.4), Box(half_extents=[0.4, 0.3, 0.2]), 0.75),
    (Sphere(radius=0.3), Sphere(radius=0.4), 0.72),
    (Capsule(radius=0.2, half_height=0.3), Capsule(radius=0.1, half_height=0.5), 0.55),
    (Sphere(radius=0.2), Capsule(radius=0.1, half_height=0.5), 0.4),
    (Capsule(radius=0.1, half_height=0.3), Box(half_extents=[0.4, 0.3, 0.2]), 0.55),
]


@pytest.mark.parametrize(("sa", "sb", "reach"), PAIRS)
def test_swapping_the_pair_gives_the_same_contacts_with_opposite_normals(sa, sb, reach):
    check_swap_symmetry(sa, sb, reach, seed=7, atol=1e-7)


def test_normal_separates_by_the_reported_distance():
    """Moving A by -distance along the normal brings a separated pair to touching."""
    rng = np.random.default_rng(3)
    s = scene_of(BIG, SMALL, margin=0.2)
    checked = 0
    for _ in range(40):
        Ea = T([0, 0, 0])
        d = rng.normal(size=3)
        Eb = se3.make_transform(se3.random_rotation(rng), d / np.linalg.norm(d) * 0.95)
        c = collide(s, np.stack([Ea, Eb]))
        if not len(c) or c.distance.min() <= 0.01:
            continue
        k = int(np.argmin(c.distance))
        moved = Ea.copy()
        moved[:3, 3] -= (c.distance[k] - 1e-4) * c.normal[k]
        assert collide(s, np.stack([moved, Eb])).distance.min() == pytest.approx(1e-4, abs=2e-3)
        checked += 1
    assert checked >= 5


# ----------------------------------------------------------------------------
# broad phase
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("method", [sweep_and_prune, grid_pairs])
def test_broad_phase_equals_brute_force_on_random_boxes(method):
    rng = np.random.default_rng(0)
    for n in (1, 2, 50, 400):
        lo = rng.uniform(-2, 5, size=(n, 3))
        hi = lo + rng.uniform(0, 0.6, size=(n, 3))
        hi[: n // 4, 0] = lo[: n // 4, 0]  # degenerate (flat) boxes
        hi[n // 4 : n // 4 + 3] += 4.0  # a few large boxes (tested against all)
        a = method(lo, hi)
        b = brute_force_pairs(lo, hi)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    # touching intervals count as overlapping (closed intervals), also across grid cells
    lo = np.array([[0.0, 0, 0], [1.0, 0, 0]])
    hi = np.array([[1.0, 1, 1], [2.0, 1, 1]])
    assert method(lo, hi)[0].tolist() == [0]


def test_collider_pairs_on_a_random_pile_match_brute_force():
    rng = np.random.default_rng(1)
    n = 300
    shapes = [
        Box(half_extents=rng.uniform(0.05, 0.2, 3)) if k % 3 else Sphere(radius=0.1)
        for k in range(n)
    ]
    static = (Plane(), Box(half_extents=[2, 2, 0.1], pose=T([0, 0, -0.1])))
    s = scene_of(*shapes, static=static)
    E = se3.make_transform(
        se3.random_rotation(rng, n), rng.uniform([-1.5, -1.5, 0], [1.5, 1.5, 3], (n, 3))
    )
    col = Collider(s)
    W = col.table.world_poses(E)
    lo, hi = col.table.aabbs(W, col.margin)
    i, j = brute_force_pairs(lo, hi)
    body = col.table.body
    keep = (body[i] != body[j]) & ((body[i] >= 0) | (body[j] >= 0))
    got = col.candidate_pairs(W)
    assert np.array_equal(got[0], i[keep]) and np.array_equal(got[1], j[keep])
    # far fewer than all n^2/2 pairs are tested
    assert got[0].size < 0.05 * n * (n - 1) / 2
    # every contact found comes from a candidate pair or a plane
    c = collide(s, E)
    assert isinstance(c, ContactSet) and len(c) > 0


@pytest.mark.parametrize("large_static", [False, True])
def test_compiled_box_scene_path_equals_the_array_path_to_the_bit(large_static):
    # A scene of boxes and planes takes the compiled path (Collider._boxes); the
    # general array path (one narrow phase per pair kind, box corners against planes
    # in numpy) must give the same contacts, in the same order, to the last bit:
    # the same sums in the same order, no tolerance.  A body with two boxes posed
    # off its origin (skipped pair of one body, placement E @ pose), static boxes
    # (B of their contacts; one larger than the grid cell in the second case), two
    # planes and two materials.
    rng = np.random.default_rng(3)
    n = 80
    bodies = [
        Body(
            f"b{k}",
            1.0,
            [1.0, 1.0, 1.0],
            shapes=(Box(half_extents=rng.uniform(0.05, 0.15, 3)),),
            material="wood" if k % 2 else "steel",
        )
        for k in range(n)
    ]
    pair = (
        Box(half_extents=[0.1, 0.05, 0.05], pose=T([0.08, 0, 0], [0, 0, 0.3])),
        Box(half_extents=[0.1, 0.05, 0.05], pose=T([-0.08, 0, 0], [0, 0.2, 0])),
    )
    bodies.append(Body("pair", 1.0, [1.0, 1.0, 1.0], shapes=pair))
    table = Box(half_extents=[2.0, 2.0, 0.1] if large_static else [0.15, 0.15, 0.1])
    static = (
        Plane(),
        Plane(normal=[1.0, 0.0, 0.2], offset=-0.6),
        Box(half_extents=table.half_extents, pose=T([0.2, 0.1, 0.05], [0.1, 0, 0])),
    )
    contact = ContactParams(margin=0.01, mu_pairs={("wood", "steel"): 0.3, ("world", "wood"): 0.8})
    scene = Scene("boxes", tuple(bodies), static_shapes=static, contact=contact)
    E = se3.make_transform(
        se3.random_rotation(rng, n + 1), rng.uniform([-0.6, -0.6, 0.0], [0.6, 0.6, 0.8], (n + 1, 3))
    )
    fast, general = Collider(scene), Collider(scene)
    general.boxes_only = False
    assert fast.boxes_only
    a, b = fast(E), general(E)
    for name in ("point", "normal", "distance", "body_a", "body_b", "shape_a", "shape_b", "mu"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    # the case covers every kind of contact: planes, static box, box pairs, both bodies of
    # the two-box body, and several friction coefficients
    assert np.any(a.body_b == -1) and np.any((a.body_b == -1) & (a.shape_b == 2))
    assert np.any(a.body_b >= 0) and np.any(a.body_a == n) | np.any(a.body_b == n)
    assert len(set(a.mu.tolist())) >= 3
    # non-finite transforms: the same error on both paths
    E[4, 0, 3] = np.nan
    with pytest.raises(StateError, match="non-finite"):
        fast(E)
