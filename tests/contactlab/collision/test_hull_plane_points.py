"""How many contacts a mesh hull keeps against a plane (``ContactParams.hull_plane_points``).

The polygon rule (up to 4 points) is checked step by step against areas computed
independently (Qhull's convex hulls of the points projected on the plane): each
pick is the largest length, triangle or polygon available given the picks before.
On resting prisms the rule keeps the corners that give the largest support
polygon; on a rounded hull the deepest vertex, the exact lowest point.  The
earlier rule (farthest-point picks, 8 points) stays available.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import trimesh
from scipy.spatial import ConvexHull

from contactlab import se3
from contactlab.collision import collide
from contactlab.collision.hulls import reduce_plane
from contactlab.errors import ConfigurationError
from contactlab.scene import Body, ContactParams, Scene
from contactlab.shapes import Mesh, Plane

#: relative rounding allowed on an area or squared length (sums of a few products)
REL = 1e-12


def _basis(n: np.ndarray) -> np.ndarray:
    """Two unit vectors spanning the plane normal to ``n``, as rows."""
    t = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    t /= np.linalg.norm(t)
    return np.array([t, np.cross(n, t)])


def _area(xy: np.ndarray) -> float:
    """Area of the convex hull of planar points (0 when they are collinear)."""
    if len(xy) < 3:
        return 0.0
    try:
        return float(ConvexHull(xy).volume)
    except Exception:  # Qhull refuses flat (collinear) sets
        return 0.0


@pytest.mark.parametrize("seed", range(40))
def test_each_pick_spans_the_largest_polygon(seed: int) -> None:
    """With 4 points: the deepest, then the farthest from it in the plane, then the
    largest triangle with those two, then the largest convex hull of four: each pick's
    length or area equals the best over all candidates (Qhull), to rounding."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(5, 60))
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    B = _basis(n)
    xy = rng.uniform(-0.05, 0.05, size=(m, 2))
    D = rng.uniform(-1e-3, 5e-3, size=m)
    P = xy @ B + (D[:, None] * n) + rng.normal(size=3)
    keep = np.zeros(m, dtype=np.int64)
    count = reduce_plane(P, D, m, n, keep, 4)
    assert count == 4
    k = keep[:count]
    assert len(set(k.tolist())) == 4
    assert D[k[0]] == D.min()
    q = (P - P[k[0]]) @ B.T  # in-plane coordinates
    far = np.sum(q**2, axis=1)
    assert far[k[1]] == pytest.approx(far.max(), rel=REL)
    tri = [_area(q[[k[0], k[1], i]]) for i in range(m)]
    assert tri[k[2]] == pytest.approx(max(tri), rel=REL)
    quad = [_area(q[[k[0], k[1], k[2], i]]) for i in range(m)]
    assert quad[k[3]] == pytest.approx(max(quad), rel=REL)
    assert quad[k[3]] > tri[k[2]]


def test_fewer_points_keep_the_first_picks() -> None:
    """Asking for 1, 2 or 3 points gives the first picks of the rule for 4; points that
    fit are all kept; collinear candidates give two points, coincident ones one."""
    rng = np.random.default_rng(3)
    m = 30
    n = np.array([0.0, 0.0, 1.0])
    P = np.column_stack([rng.uniform(-1, 1, (m, 2)), np.zeros(m)])
    D = rng.uniform(0, 1, m)
    keep = np.zeros(m, dtype=np.int64)
    assert reduce_plane(P, D, m, n, keep, 4) == 4
    four = keep[:4].copy()
    for most in (1, 2, 3):
        assert reduce_plane(P, D, m, n, keep, most) == most
        np.testing.assert_array_equal(keep[:most], four[:most])
    assert reduce_plane(P, D, 4, n, keep, 4) == 4
    np.testing.assert_array_equal(keep[:4], np.arange(4))
    line = np.column_stack([np.linspace(0, 1, m), np.zeros(m), np.zeros(m)])
    assert reduce_plane(line, D, m, n, keep, 4) == 2
    x = line[:, 0]
    assert keep[0] == np.argmin(D)
    assert abs(x[keep[1]] - x[keep[0]]) == np.abs(x - x[keep[0]]).max()
    same = np.zeros((m, 3))
    assert reduce_plane(same, D, m, n, keep, 4) == 1


def _prism(sides: int, r: float, h: float) -> Mesh:
    a = 2 * np.pi * np.arange(sides) / sides
    ring = np.column_stack([r * np.cos(a), r * np.sin(a)])
    V = np.vstack(
        [np.column_stack([ring, np.full(sides, -h)]), np.column_stack([ring, np.full(sides, h)])]
    )
    return Mesh.from_trimesh(trimesh.convex.convex_hull(V))


def _resting(shape: Mesh, E: np.ndarray, points: int):
    scene = Scene(
        "rest",
        (Body("b", 1.0, np.ones(3), shapes=(shape,)),),
        static_shapes=(Plane(),),
        contact=ContactParams(hull_plane_points=points),
    )
    return collide(scene, E[None])


def test_a_hexagonal_prism_keeps_the_largest_quadrilateral_of_its_face() -> None:
    """A hexagonal prism resting 1 mm deep on its face (turned about the vertical):
    4 contacts at corners of the hexagon, spanning the largest quadrilateral of the
    hexagon's corners (a rectangle, area sqrt(3) r^2), every one 1 mm deep; 8 points
    keep all 6 corners, 1 point the exact depth."""
    r, h = 0.05, 0.02
    E = se3.make_transform(se3.exp_so3([0.0, 0.0, 0.3]), [0.01, -0.02, h - 1e-3])
    c = _resting(_prism(6, r, h), E, 4)
    assert len(c) == 4
    np.testing.assert_allclose(c.distance, -1e-3, atol=1e-15)
    xy = c.point[:, :2] - E[:2, 3]
    np.testing.assert_allclose(np.linalg.norm(xy, axis=1), r, rtol=1e-12)
    a = np.pi / 3 * np.arange(6) + 0.3
    corners = np.column_stack([r * np.cos(a), r * np.sin(a)])
    best = max(_area(corners[list(s)]) for s in itertools.combinations(range(6), 4))
    assert _area(xy) == pytest.approx(best, rel=REL)
    assert best == pytest.approx(np.sqrt(3) * r**2, rel=REL)
    assert len(_resting(_prism(6, r, h), E, 8)) == 6
    one = _resting(_prism(6, r, h), E, 1)
    assert len(one) == 1 and one.distance[0] == pytest.approx(-1e-3, abs=1e-15)


def test_a_rounded_hull_keeps_its_lowest_vertex() -> None:
    """A sphere's hull (642 vertices) pressed 1 mm into the plane at a random turn: the
    deepest contact is its lowest vertex's, with 4 points (rule of the default) as with
    8 (the earlier one); the other 3 of the 4 lie on the rim of the vertices within the
    margin and surround the deepest one."""
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=0.03)
    mesh = Mesh.from_trimesh(sphere)
    R = se3.random_rotation(np.random.default_rng(5))
    lowest = float((sphere.vertices @ R.T)[:, 2].min())
    E = se3.make_transform(R, [0.0, 0.0, -lowest - 1e-3])
    four, eight = _resting(mesh, E, 4), _resting(mesh, E, 8)
    assert len(four) == 4 and len(eight) == 8
    assert four.distance.min() == pytest.approx(-1e-3, abs=1e-15)
    assert eight.distance.min() == four.distance.min()
    deepest = four.point[np.argmin(four.distance), :2]
    rest = np.delete(four.point[:, :2], np.argmin(four.distance), axis=0)
    # the deepest point lies inside the triangle of the other three
    signs = [np.cross(rest[(i + 1) % 3] - rest[i], deepest - rest[i]) for i in range(3)]
    assert all(s > 0 for s in signs) or all(s < 0 for s in signs)


@pytest.mark.parametrize("value", [0, 9, 4.0, True, "4"])
def test_a_bad_count_is_refused(value: object) -> None:
    with pytest.raises(ConfigurationError, match="hull_plane_points"):
        ContactParams(hull_plane_points=value)  # type: ignore[arg-type]
