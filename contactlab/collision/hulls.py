"""Narrow phase for meshes, collided as their convex hulls (numba).

A :class:`~contactlab.shapes.Mesh` enters collision as the convex hull of its
vertices (:mod:`~contactlab.collision.polytope`: built once per scene, faces
as polygons).  It collides with planes, spheres, capsules, boxes, cylinders
and other meshes; conventions are those of
:mod:`~contactlab.collision.round_shapes` (A is the lower kind, so the mesh is
B against every other kind; the unit normal points from B toward A; the
signed distance is negative on penetration; the point is the midpoint of the
two surface points; contacts with ``distance < margin`` are kept).

**Mesh–plane**: the hull vertices closer to the plane than the margin are the
candidates (the deepest point of a polytope is a vertex, so the distance is
exact).  At most ``points`` of them are kept
(:attr:`contactlab.scene.ContactParams.hull_plane_points`, default
:data:`HULL_PLANE_POINTS` = 4, MuJoCo's count for a plane against a convex
shape): with 4 or fewer, the deepest, then the one farthest from it in the
plane, then the one that spans the largest triangle with those two, then the one
that makes the convex hull of the four largest (:func:`_reduce_polygon`), so a
hull resting on a face keeps that face's four corners when it is a
quadrilateral, and a rounded foot keeps its deepest vertex and three spread
over the rim of its cap within the margin; with more (up to 8, the earlier
rule), the deepest and then farthest-point picks (:func:`_reduce`).

**Mesh against a solid** in three stages per pair, as the cylinder pairs
(:mod:`~contactlab.collision.cylinders`):

1. The signed distance ``d`` and the normal ``n`` by GJK, or EPA when the
   shapes overlap (:mod:`~contactlab.collision.convex`; the hull's support
   mapping is its vertex farthest along the direction).  A sphere enters as
   its centre and a capsule as its core segment, the radius subtracted
   afterwards.  Exact (round-off) when the closest features are flat, which
   they always are on the hull's side.
2. A sphere touches in one point: the closest points.  Otherwise the
   manifold: the hull's face most aligned with the direction toward the
   other shape, and the other shape's feature (a box face, a cylinder's cap
   polygon or side line, a capsule's core; a hull face); the flat feature
   best aligned with ``n`` is the reference, the other is clipped against
   its side planes, and every clipped point closer than the margin along
   ``n`` is a contact (its distance never below ``d``).
3. The closest point from stage 1 is added when no manifold point reaches
   its distance within :data:`~contactlab.collision.cylinders.DEEPEST_TOL`.

A pair with more than :data:`MAX_MESH_CONTACTS` points (two many-sided faces
clipped) keeps the deepest one and then, one at a time, the point farthest
(in the contact plane) from those kept, which keeps the corners of the
contact polygon and so the support it gives.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.boxes import contact_slots
from contactlab.collision.convex import no_hull, signed_distance_v
from contactlab.collision.cylinders import _closest_missing, _feature, _reference_clip
from contactlab.collision.polytope import HullSet
from contactlab.collision.round_shapes import CYLINDER_RIM_SAMPLES, Raw, empty_raw, raw_from_slots
from contactlab.collision.shape_table import CAPSULE, MESH, SPHERE
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 20.0

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Contacts kept per pair (see the module docstring).
MAX_MESH_CONTACTS = 8
#: Contacts kept of a hull against a plane by default (``ContactParams.hull_plane_points``).
HULL_PLANE_POINTS = 4
_SPHERE, _CAPSULE, _MESH = SPHERE, CAPSULE, MESH


@njit(cache=True)
def _hull_face(
    R: np.ndarray,
    p: np.ndarray,
    V: np.ndarray,
    FN: np.ndarray,
    f0: int,
    f1: int,
    FV: np.ndarray,
    FVS: np.ndarray,
    out_dir: np.ndarray,
    pts: np.ndarray,
) -> tuple:
    """The hull face (of faces ``f0..f1``) most aligned with ``out_dir``:
    ``(count, world normal)``, its world vertices in ``pts``."""
    l0 = R[0, 0] * out_dir[0] + R[1, 0] * out_dir[1] + R[2, 0] * out_dir[2]
    l1 = R[0, 1] * out_dir[0] + R[1, 1] * out_dir[1] + R[2, 1] * out_dir[2]
    l2 = R[0, 2] * out_dir[0] + R[1, 2] * out_dir[1] + R[2, 2] * out_dir[2]
    best, fb = -np.inf, f0
    for f in range(f0, f1):
        s = FN[f, 0] * l0 + FN[f, 1] * l1 + FN[f, 2] * l2
        if s > best:
            best, fb = s, f
    nrm = np.empty(3)
    for i in range(3):
        nrm[i] = R[i, 0] * FN[fb, 0] + R[i, 1] * FN[fb, 1] + R[i, 2] * FN[fb, 2]
    count = 0
    for k in range(FVS[fb], FVS[fb + 1]):
        v = FV[k]
        for i in range(3):
            pts[count, i] = p[i] + R[i, 0] * V[v, 0] + R[i, 1] * V[v, 1] + R[i, 2] * V[v, 2]
        count += 1
    return count, nrm


@njit(cache=True)
def _all_or_deepest(D: np.ndarray, m: int, most: int, keep: np.ndarray) -> tuple[int, int]:
    """``(m, -1)`` with every index written to ``keep`` when the ``m`` points fit in
    ``most``, else ``(0, i0)``: the deepest point (least distance ``D``), the first of
    equals."""
    if m <= most:
        for i in range(m):
            keep[i] = i
        return m, -1
    i0 = 0
    for i in range(1, m):
        if D[i] < D[i0]:
            i0 = i
    return 0, i0


@njit(cache=True)
def _reduce(
    P: np.ndarray,
    D: np.ndarray,
    m: int,
    n: np.ndarray,
    keep: np.ndarray,
    most: int = MAX_MESH_CONTACTS,
) -> int:
    """Pick at most ``most`` of the ``m`` points ``P`` (distances ``D``):
    all when they fit, else the deepest, then repeatedly the one farthest in the
    plane normal to ``n`` from those picked.  Writes their indices to ``keep``."""
    fit, i0 = _all_or_deepest(D, m, most, keep)
    if i0 < 0:
        return fit
    # the points by coordinate (contiguous columns: the update of the gaps runs over whole
    # vectors), each point's squared distance in the plane to the nearest one picked
    # (-inf once picked), the same sums in the same order as point by point
    X = np.empty(m)
    Y = np.empty(m)
    Z = np.empty(m)
    gap = np.empty(m)
    for i in range(m):
        X[i], Y[i], Z[i] = P[i, 0], P[i, 1], P[i, 2]
        gap[i] = np.inf
    n0, n1, n2 = n[0], n[1], n[2]
    count = 0
    cur = i0
    while True:
        keep[count] = cur
        count += 1
        gap[cur] = -np.inf
        if count == most:
            break
        x, y, z = X[cur], Y[cur], Z[cur]
        for i in range(m):
            e0, e1, e2 = X[i] - x, Y[i] - y, Z[i] - z
            h = e0 * n0 + e1 * n1 + e2 * n2
            q = e0 * e0 + e1 * e1 + e2 * e2 - h * h
            g = gap[i]
            gap[i] = q if q < g else g
        nxt, far = -1, 0.0
        for i in range(m):
            if gap[i] > far:
                nxt, far = i, gap[i]
        if nxt < 0 or far <= 1e-24:
            break
        cur = nxt
    return count


@njit(cache=True)
def _reduce_polygon(
    P: np.ndarray,
    D: np.ndarray,
    m: int,
    n: np.ndarray,
    keep: np.ndarray,
    most: int,
) -> int:
    """Pick at most ``most`` (1 to 4) of the ``m`` points ``P`` (distances ``D``) for a
    large contact polygon in the plane normal to ``n``: all when they fit, else the
    deepest ``p0``, the point farthest from it, the point spanning the largest triangle
    with those two, and the point that makes the convex hull of the four largest.  A point
    is taken only when it adds to the length or area by more than ``1e-9`` relative
    (collinear or coincident points are not).  Writes their indices to ``keep``.

    In-plane areas are ``n . (a x b)`` of the offsets from ``p0`` (their components along
    ``n`` do not count); with ``x = [a, b]``, ``y = [b, c]``, ``z = [c, a]`` for the
    kept offsets ``a``, ``b`` and a candidate ``c``, twice the area of the convex hull
    of ``p0, a, b, c`` is the largest magnitude of ``x + y``, ``y + z``, ``z + x``
    (the three quadrilaterals), ``x``, ``y``, ``z`` and ``x + y + z`` (the triangles
    that hold the fourth point)."""
    fit, i0 = _all_or_deepest(D, m, most, keep)
    if i0 < 0:
        return fit
    keep[0] = i0
    if most == 1:
        return 1
    n0, n1, n2 = n[0], n[1], n[2]
    x0, y0, z0 = P[i0, 0], P[i0, 1], P[i0, 2]
    i1, far = -1, 1e-24
    for i in range(m):
        e0, e1, e2 = P[i, 0] - x0, P[i, 1] - y0, P[i, 2] - z0
        h = e0 * n0 + e1 * n1 + e2 * n2
        q = e0 * e0 + e1 * e1 + e2 * e2 - h * h
        if q > far:
            i1, far = i, q
    if i1 < 0:
        return 1
    keep[1] = i1
    if most == 2:
        return 2
    tol = 1e-9 * far
    a0, a1, a2 = P[i1, 0] - x0, P[i1, 1] - y0, P[i1, 2] - z0
    # n x a, so that [a, c] = n . (a x c) = (n x a) . c
    u0, u1, u2 = n1 * a2 - n2 * a1, n2 * a0 - n0 * a2, n0 * a1 - n1 * a0
    i2, best = -1, tol
    for i in range(m):
        t = abs(u0 * (P[i, 0] - x0) + u1 * (P[i, 1] - y0) + u2 * (P[i, 2] - z0))
        if t > best:
            i2, best = i, t
    if i2 < 0:
        return 2
    keep[2] = i2
    if most == 3:
        return 3
    b0, b1, b2 = P[i2, 0] - x0, P[i2, 1] - y0, P[i2, 2] - z0
    x = u0 * b0 + u1 * b1 + u2 * b2
    w0, w1, w2 = n1 * b2 - n2 * b1, n2 * b0 - n0 * b2, n0 * b1 - n1 * b0  # n x b
    i3, best = -1, abs(x) + tol
    for i in range(m):
        c0, c1, c2 = P[i, 0] - x0, P[i, 1] - y0, P[i, 2] - z0
        y = w0 * c0 + w1 * c1 + w2 * c2
        z = -(u0 * c0 + u1 * c1 + u2 * c2)
        t = max(abs(x + y), abs(y + z), abs(z + x), abs(y), abs(z), abs(x + y + z))
        if t > best:
            i3, best = i, t
    if i3 < 0:
        return 3
    keep[3] = i3
    return 4


@njit(cache=True)
def reduce_plane(
    P: np.ndarray,
    D: np.ndarray,
    m: int,
    n: np.ndarray,
    keep: np.ndarray,
    most: int,
) -> int:
    """The contacts kept of a hull's ``m`` candidates against a plane of normal ``n``
    (see the module docstring): the polygon rule up to 4 points, farthest-point picks
    beyond."""
    if most <= 4:
        return _reduce_polygon(P, D, m, n, keep, most)
    return _reduce(P, D, m, n, keep, most)


@njit(cache=True)
def _mesh_pair(
    kA: int,
    RA: np.ndarray,
    pA: np.ndarray,
    sA: np.ndarray,
    hA: int,
    kB: int,
    RB: np.ndarray,
    pB: np.ndarray,
    sB: np.ndarray,
    hB: int,
    V: np.ndarray,
    VS: np.ndarray,
    FN: np.ndarray,
    FS: np.ndarray,
    FV: np.ndarray,
    FVS: np.ndarray,
    NS: np.ndarray,
    NB: np.ndarray,
    margin: float,
    points: np.ndarray,
    normals: np.ndarray,
    dists: np.ndarray,
    FA: np.ndarray,
    FB: np.ndarray,
    poly: np.ndarray,
    buf: np.ndarray,
    CP: np.ndarray,
    CD: np.ndarray,
    keep: np.ndarray,
) -> int:
    """Contacts of one pair (at least one a mesh hull, see the module docstring)."""
    HA = (V[VS[hA] : VS[hA + 1]], NS[VS[hA] : VS[hA + 1] + 1], NB) if kA == _MESH else no_hull()
    HB = (V[VS[hB] : VS[hB + 1]], NS[VS[hB] : VS[hB + 1] + 1], NB) if kB == _MESH else no_hull()
    ra = sA[0] if (kA == _CAPSULE or kA == _SPHERE) else 0.0
    rb = sB[0] if (kB == _CAPSULE or kB == _SPHERE) else 0.0
    found, d, n, a, b = signed_distance_v(kA, RA, pA, sA, HA, kB, RB, pB, sB, HB, margin + ra + rb)
    d -= ra + rb
    if not found or d >= margin:
        return 0
    m = 0
    if kA != _SPHERE and kB != _SPHERE:
        neg = -n
        if kA == _MESH:
            na, mA = _hull_face(RA, pA, V, FN, FS[hA], FS[hA + 1], FV, FVS, neg, FA)
        else:
            na, mA = _feature(kA, RA, pA, sA, neg, FA)
        if kB == _MESH:
            nb, mB = _hull_face(RB, pB, V, FN, FS[hB], FS[hB + 1], FV, FVS, n, FB)
        else:
            nb, mB = _feature(kB, RB, pB, sB, n, FB)
        ref_b, ref, mref, cnt = _reference_clip(FA, na, mA, FB, nb, mB, n, poly, buf)
        mn = mref @ n
        for k in range(cnt):
            # q = poly[k] moved along n onto the reference plane: r = q + t n, and
            # (a - b) . n = -t when q is B's point (reference A), t when it is A's
            t = (
                mref[0] * (ref[0, 0] - poly[k, 0])
                + mref[1] * (ref[0, 1] - poly[k, 1])
                + mref[2] * (ref[0, 2] - poly[k, 2])
            ) / mn
            gap = -t if ref_b else t
            dist = max(gap - ra - rb, d)
            if dist < margin:
                # midpoint of the surface points a - ra n and b + rb n
                h = 0.5 * (t + rb - ra)
                for i in range(3):
                    CP[m, i] = poly[k, i] + h * n[i]
                CD[m] = dist
                m += 1
    if _closest_missing(CD, m, d):
        CP[m] = 0.5 * (a - ra * n + b + rb * n)
        CD[m] = d
        m += 1
    count = _reduce(CP, CD, m, n, keep)
    for k in range(count):
        points[k] = CP[keep[k]]
        normals[k] = n
        dists[k] = CD[keep[k]]
    return count


@njit(cache=True)
def mesh_scratch(max_face: int) -> tuple:
    """The work arrays of :func:`_mesh_pair` for hulls of at most ``max_face`` vertices a
    face: the two features, the clipped polygon and its buffer, the candidate points, their
    distances and the indices kept."""
    size = 2 * max(max_face, CYLINDER_RIM_SAMPLES) + 8
    return (
        np.zeros((size, 3)),
        np.zeros((size, 3)),
        np.zeros((size, 3)),
        np.zeros((size, 3)),
        np.zeros((size + 1, 3)),
        np.zeros(size + 1),
        np.zeros(size + 1, dtype=np.int64),
    )


@njit(cache=True)
def _mesh_kernel(
    kA: int,
    RA: np.ndarray,
    PA: np.ndarray,
    SA: np.ndarray,
    HA: np.ndarray,
    kB: int,
    RB: np.ndarray,
    PB: np.ndarray,
    SB: np.ndarray,
    HB: np.ndarray,
    V: np.ndarray,
    VS: np.ndarray,
    FN: np.ndarray,
    FS: np.ndarray,
    FV: np.ndarray,
    FVS: np.ndarray,
    NS: np.ndarray,
    NB: np.ndarray,
    max_face: int,
    margin: float,
) -> tuple:
    """All pairs of one kind pair; ``R`` (m, 3, 3) rotations (columns = axes), ``P`` (m, 3)."""
    m = RA.shape[0]
    points, normals, dists, counts = contact_slots(m, MAX_MESH_CONTACTS)
    FA, FB, poly, buf, CP, CD, keep = mesh_scratch(max_face)
    for k in range(m):
        counts[k] = _mesh_pair(
            kA,
            RA[k],
            PA[k],
            SA[k],
            HA[k],
            kB,
            RB[k],
            PB[k],
            SB[k],
            HB[k],
            V,
            VS,
            FN,
            FS,
            FV,
            FVS,
            NS,
            NB,
            margin,
            points[k],
            normals[k],
            dists[k],
            FA,
            FB,
            poly,
            buf,
            CP,
            CD,
            keep,
        )
    return points, normals, dists, counts


def mesh_pairs(
    kind_a: int,
    Wa: Array,
    sa: Array,
    ha: IntArray,
    kind_b: int,
    Wb: Array,
    sb: Array,
    hb: IntArray,
    hulls: HullSet,
    margin: float,
) -> Raw:
    """Shapes of kind ``kind_a`` against shapes of kind ``kind_b`` (at least one
    ``MESH``); ``ha, hb`` the hull index of each mesh shape (ignored otherwise)."""
    if Wa.shape[0] == 0:
        return empty_raw()
    points, normals, dists, counts = _mesh_kernel(
        kind_a,
        np.ascontiguousarray(Wa[:, :3, :3]),
        np.ascontiguousarray(Wa[:, :3, 3]),
        np.ascontiguousarray(sa, dtype=float),
        np.ascontiguousarray(ha, dtype=np.int64),
        kind_b,
        np.ascontiguousarray(Wb[:, :3, :3]),
        np.ascontiguousarray(Wb[:, :3, 3]),
        np.ascontiguousarray(sb, dtype=float),
        np.ascontiguousarray(hb, dtype=np.int64),
        hulls.vertices,
        hulls.vertex_start,
        hulls.normals,
        hulls.face_start,
        hulls.face_vertices,
        hulls.face_vertex_start,
        hulls.neighbour_start,
        hulls.neighbours,
        hulls.max_face_vertices,
        float(margin),
    )
    return raw_from_slots(points, normals, dists, counts)


@njit(cache=True)
def _plane_kernel(
    R: np.ndarray,
    P: np.ndarray,
    H: np.ndarray,
    V: np.ndarray,
    VS: np.ndarray,
    n: np.ndarray,
    off: np.ndarray,
    margin: float,
    slots: int,
) -> tuple:
    """Hull vertices against half-spaces ``n . x <= off``, one (hull, plane) per row,
    at most ``slots`` a row (:func:`reduce_plane`)."""
    m = R.shape[0]
    points, normals, dists, counts = contact_slots(m, slots)
    most = 0
    for h in range(VS.shape[0] - 1):
        most = max(most, VS[h + 1] - VS[h])
    CP = np.zeros((most, 3))
    CD = np.zeros(most)
    keep = np.zeros(most, dtype=np.int64)
    for k in range(m):
        h = H[k]
        # the plane normal in the hull's frame: a vertex's height is one dot product
        l0 = R[k, 0, 0] * n[k, 0] + R[k, 1, 0] * n[k, 1] + R[k, 2, 0] * n[k, 2]
        l1 = R[k, 0, 1] * n[k, 0] + R[k, 1, 1] * n[k, 1] + R[k, 2, 1] * n[k, 2]
        l2 = R[k, 0, 2] * n[k, 0] + R[k, 1, 2] * n[k, 1] + R[k, 2, 2] * n[k, 2]
        base = P[k, 0] * n[k, 0] + P[k, 1] * n[k, 1] + P[k, 2] * n[k, 2] - off[k]
        c = 0
        for v in range(VS[h], VS[h + 1]):
            dist = V[v, 0] * l0 + V[v, 1] * l1 + V[v, 2] * l2 + base
            if dist < margin:
                for i in range(3):
                    x = P[k, i] + R[k, i, 0] * V[v, 0] + R[k, i, 1] * V[v, 1] + R[k, i, 2] * V[v, 2]
                    CP[c, i] = x - 0.5 * dist * n[k, i]
                CD[c] = dist
                c += 1
        cnt = reduce_plane(CP, CD, c, n[k], keep, slots)
        for j in range(cnt):
            points[k, j] = CP[keep[j]]
            normals[k, j] = n[k]
            dists[k, j] = CD[keep[j]]
        counts[k] = cnt
    return points, normals, dists, counts


def mesh_plane(
    W: Array,
    h: IntArray,
    hulls: HullSet,
    n: Array,
    off: Array,
    margin: float,
    points: int = HULL_PLANE_POINTS,
) -> Raw:
    """Mesh hulls (world poses ``W``, hull indices ``h``) against planes ``n . x <= off``,
    at most ``points`` contacts each (1 to :data:`MAX_MESH_CONTACTS`, see the module
    docstring)."""
    if W.shape[0] == 0:
        return empty_raw()
    pts, normals, dists, counts = _plane_kernel(
        np.ascontiguousarray(W[:, :3, :3]),
        np.ascontiguousarray(W[:, :3, 3]),
        np.ascontiguousarray(h, dtype=np.int64),
        hulls.vertices,
        hulls.vertex_start,
        np.ascontiguousarray(n, dtype=float),
        np.ascontiguousarray(off, dtype=float),
        float(margin),
        int(points),
    )
    return raw_from_slots(pts, normals, dists, counts)
