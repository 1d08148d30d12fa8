"""Narrow phase for boxes: sphere–box (batched numpy) and box–box (numba); the whole
collision of a scene of boxes and planes in compiled passes (the end of the module).

Box–box follows the separating-axis test (SAT): the 15 candidate axes are the
three face normals of each box and the nine cross products of their edges.
The axis of least penetration (largest separation) decides the contact:

* a **face axis**: the box owning it gives the *reference* face (the face
  whose outward normal is that axis, oriented toward the other box); the
  other box's face most anti-parallel to it is the *incident* face.  The
  incident quadrilateral is clipped against the four side planes of the
  reference face (Sutherland–Hodgman) and every clipped vertex lying less
  than the margin above the reference plane is a contact, its distance the
  height above the reference plane.  A box resting on a larger box thus gets
  its four bottom corners.
* an **edge axis** (chosen only when clearly better than every face axis, so
  that face contacts win ties): one contact between the two supporting edges,
  at the midpoint of their closest points.

The normal always points from B toward A.  Clipping is a short loop per
pair, so it runs in a numba kernel over all box pairs at once.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.round_shapes import Raw, empty_raw, raw_from_slots
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 25.0

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: A face axis is kept unless an edge axis separates by more than this
#: relative and absolute amount (prefers stable face manifolds).
_EDGE_REL_TOL = 0.05
_EDGE_ABS_TOL = 1e-5
#: Edge axes with |a x b| below this are parallel edges, covered by the face axes.
_EDGE_EPS = 1e-6
#: At most 8 contacts per box pair (a quadrilateral clipped by 4 planes).
MAX_BOX_CONTACTS = 8


def sphere_box(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Sphere A against box B (either may be static)."""
    m = Wa.shape[0]
    Rb, pb, h = Wb[:, :3, :3], Wb[:, :3, 3], sb
    r = sa[:, 0]
    c = np.einsum("mji,mj->mi", Rb, Wa[:, :3, 3] - pb)  # centre in box frame
    q = np.clip(c, -h, h)
    diff = c - q
    L = np.linalg.norm(diff, axis=1)
    outside = L > 1e-12
    n_loc = np.zeros((m, 3))
    n_loc[outside] = diff[outside] / L[outside, None]
    dist = L - r
    # Centre inside the box: push out through the nearest face.
    inside = ~outside
    if np.any(inside):
        depth = h[inside] - np.abs(c[inside])
        k = np.argmin(depth, axis=1)
        rows = np.arange(k.shape[0])
        sign = np.where(c[inside][rows, k] >= 0.0, 1.0, -1.0)
        nl = np.zeros((k.shape[0], 3))
        nl[rows, k] = sign
        n_loc[inside] = nl
        qi = c[inside].copy()
        qi[rows, k] = sign * h[inside][rows, k]
        q[inside] = qi
        dist[inside] = -depth[rows, k] - r[inside]
    n = np.einsum("mij,mj->mi", Rb, n_loc)
    on_box = np.einsum("mij,mj->mi", Rb, q) + pb
    on_sphere = Wa[:, :3, 3] - r[:, None] * n
    point = 0.5 * (on_box + on_sphere)
    keep = dist < margin
    return np.arange(m)[keep], point[keep], n[keep], dist[keep]


def _box_signed_distance(x: Array, h: Array) -> Array:
    """Signed distance of points ``x`` (m, 3) in box coordinates to boxes of half extents ``h``."""
    q = np.abs(x) - h
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
    return outside + np.minimum(q.max(axis=1), 0.0)


#: Golden-section iterations of the capsule-box search (the interval shrinks
#: by 0.618 per iteration: 1e-10 of the segment after 48).
_GOLDEN_ITERATIONS = 48


def capsule_box(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Capsule A against box B: spheres of the capsule's radius at points of its core.

    The points are the two ends, the points where the core crosses a face
    plane of the box (a capsule lying across an edge is supported there) and
    the core's deepest point when it is deeper than all of these.  The signed
    distance to a convex box is a convex function of the point, so along the
    core it has one minimum, found by golden-section search.  A capsule lying
    on a face gets its two end contacts; one lying across an edge, an end and
    the edge crossing; one crossing an edge from above, the deepest point.
    Each point goes through :func:`sphere_box`.
    """
    m = Wa.shape[0]
    axis, c = Wa[:, :3, 2], Wa[:, :3, 3]
    hh = sa[:, 1]
    Rb, pb = Wb[:, :3, :3], Wb[:, :3, 3]
    e0 = np.einsum("mji,mj->mi", Rb, c - hh[:, None] * axis - pb)  # box coordinates
    e1 = np.einsum("mji,mj->mi", Rb, c + hh[:, None] * axis - pb)
    d = e1 - e0

    def f_at(rows: IntArray, t: Array) -> Array:
        return _box_signed_distance(e0[rows] + t[:, None] * d[rows], sb[rows])

    def f(t: Array) -> Array:
        return f_at(np.arange(m), t)

    lo, hi = np.zeros(m), np.ones(m)
    g = 0.5 * (np.sqrt(5.0) - 1.0)
    for _ in range(_GOLDEN_ITERATIONS):
        x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
        left = f(x1) <= f(x2)  # the minimum lies in [lo, x2]
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
    # Breakpoints: where the core crosses a face plane of the box (a capsule
    # lying over an edge is supported there).
    with np.errstate(divide="ignore", invalid="ignore"):
        cross = (np.concatenate([sb, -sb], axis=1) - np.tile(e0, 2)) / np.tile(d, 2)  # (m, 6)
    crossing = np.isfinite(cross) & (cross > 0.0) & (cross < 1.0)
    ts = [np.zeros(m), np.ones(m), cross[crossing]]
    pairs = [np.arange(m), np.arange(m), np.nonzero(crossing)[0]]
    best = np.minimum(f(np.zeros(m)), f(np.ones(m)))
    if np.any(crossing):
        np.minimum.at(best, pairs[2], f_at(pairs[2], ts[2]))
    t_star = 0.5 * (lo + hi)
    interior = f(t_star) < best - 1e-9
    ts.append(t_star[interior])
    pairs.append(np.flatnonzero(interior))
    pair = np.concatenate(pairs)
    t = np.concatenate(ts)
    centre = c[pair] + ((2.0 * t - 1.0) * hh[pair])[:, None] * axis[pair]
    Ws = np.zeros((pair.size, 4, 4))
    Ws[:, :3, :3] = np.eye(3)
    Ws[:, :3, 3] = centre
    Ws[:, 3, 3] = 1.0
    k, point, normal, dist = sphere_box(Ws, sa[pair], Wb[pair], sb[pair], margin)
    return pair[k], point, normal, dist


# ----------------------------------------------------------------------------
# box-box
# ----------------------------------------------------------------------------
@njit(cache=True)
def _sgn(x: float) -> float:
    return 1.0 if x >= 0.0 else -1.0


@njit(cache=True)
def _clip(poly: np.ndarray, count: int, normal: np.ndarray, limit: float, out: np.ndarray) -> int:
    """Keep the part of polygon ``poly[:count]`` with ``normal . x <= limit``."""
    return _clip_signed(poly, count, normal, 1.0, limit, out)


@njit(cache=True)
def _clip_signed(
    poly: np.ndarray, count: int, normal: np.ndarray, sign: float, limit: float, out: np.ndarray
) -> int:
    """Keep the part of polygon ``poly[:count]`` with ``(sign normal) . x <= limit``."""
    n0, n1, n2 = sign * normal[0], sign * normal[1], sign * normal[2]
    n_out = 0
    for k in range(count):
        p = poly[k]
        q = poly[(k + 1) % count]
        dp = n0 * p[0] + n1 * p[1] + n2 * p[2] - limit
        dq = n0 * q[0] + n1 * q[1] + n2 * q[2] - limit
        if dp <= 0.0:
            out[n_out, 0] = p[0]
            out[n_out, 1] = p[1]
            out[n_out, 2] = p[2]
            n_out += 1
        if (dp < 0.0 < dq) or (dq < 0.0 < dp):
            t = dp / (dp - dq)
            out[n_out, 0] = p[0] + t * (q[0] - p[0])
            out[n_out, 1] = p[1] + t * (q[1] - p[1])
            out[n_out, 2] = p[2] + t * (q[2] - p[2])
            n_out += 1
    return n_out


@njit(cache=True)
def _face_contacts(
    Rr: np.ndarray,
    pr: np.ndarray,
    hr: np.ndarray,
    axis: int,
    nr: np.ndarray,
    Ri: np.ndarray,
    pi: np.ndarray,
    hi: np.ndarray,
    ba_sign: float,
    margin: float,
    points: np.ndarray,
    normals: np.ndarray,
    dists: np.ndarray,
    poly: np.ndarray,
    buf: np.ndarray,
) -> int:
    """Clip the incident box's face against the reference face (outward ``nr``).

    The contact normal (B toward A) is ``ba_sign * nr``.  ``poly`` and ``buf`` are
    (MAX_BOX_CONTACTS + 4, 3) work arrays.  Written component by component (no
    temporary arrays), each component computed as the vector expression in the
    comments would.
    """
    # incident face: most anti-parallel to nr
    best, li = -1.0, 0
    for l in range(3):
        v = abs(Ri[l, 0] * nr[0] + Ri[l, 1] * nr[1] + Ri[l, 2] * nr[2])
        if v > best:
            best, li = v, l
    s = -_sgn(Ri[li, 0] * nr[0] + Ri[li, 1] * nr[1] + Ri[li, 2] * nr[2])
    # fc = pi + s * hi[li] * Ri[li]
    shl = s * hi[li]
    fc0 = pi[0] + shl * Ri[li, 0]
    fc1 = pi[1] + shl * Ri[li, 1]
    fc2 = pi[2] + shl * Ri[li, 2]
    u, v = (li + 1) % 3, (li + 2) % 3
    su = (1.0, -1.0, -1.0, 1.0)
    sv = (1.0, 1.0, -1.0, -1.0)
    for k in range(4):
        # poly[k] = fc + su[k] * hi[u] * Ri[u] + sv[k] * hi[v] * Ri[v]
        a = su[k] * hi[u]
        b = sv[k] * hi[v]
        poly[k, 0] = (fc0 + a * Ri[u, 0]) + b * Ri[v, 0]
        poly[k, 1] = (fc1 + a * Ri[u, 1]) + b * Ri[v, 1]
        poly[k, 2] = (fc2 + a * Ri[u, 2]) + b * Ri[v, 2]
    count = 4
    # cref = pr + hr[axis] * nr
    c0 = pr[0] + hr[axis] * nr[0]
    c1 = pr[1] + hr[axis] * nr[1]
    c2 = pr[2] + hr[axis] * nr[2]
    for side in ((axis + 1) % 3, (axis + 2) % 3):
        a = Rr[side]
        lim = a[0] * c0 + a[1] * c1 + a[2] * c2
        count = _clip_signed(poly, count, a, 1.0, lim + hr[side], buf)
        poly[:count] = buf[:count]
        count = _clip_signed(poly, count, a, -1.0, -lim + hr[side], buf)
        poly[:count] = buf[:count]
        if count == 0:
            return 0
    n_c = 0
    for k in range(count):
        p = poly[k]
        depth = nr[0] * (p[0] - c0) + nr[1] * (p[1] - c1) + nr[2] * (p[2] - c2)
        if depth < margin and n_c < MAX_BOX_CONTACTS:
            # points[n_c] = p - 0.5 * depth * nr
            half = 0.5 * depth
            points[n_c, 0] = p[0] - half * nr[0]
            points[n_c, 1] = p[1] - half * nr[1]
            points[n_c, 2] = p[2] - half * nr[2]
            normals[n_c, 0] = ba_sign * nr[0]
            normals[n_c, 1] = ba_sign * nr[1]
            normals[n_c, 2] = ba_sign * nr[2]
            dists[n_c] = depth
            n_c += 1
    return n_c


@njit(cache=True)
def _segment_closest(p1: np.ndarray, d1: np.ndarray, p2: np.ndarray, d2: np.ndarray) -> tuple:
    """Closest points of segments ``p1 + s d1`` and ``p2 + t d2``, s, t in [0, 1]."""
    r = p1 - p2
    a = d1 @ d1
    e = d2 @ d2
    b = d1 @ d2
    c = d1 @ r
    f = d2 @ r
    denom = a * e - b * b
    s = 0.0
    if denom > 1e-12 * a * e:
        s = min(max((b * f - c * e) / denom, 0.0), 1.0)
    t = (b * s + f) / e
    if t < 0.0:
        t = 0.0
        s = min(max(-c / a, 0.0), 1.0)
    elif t > 1.0:
        t = 1.0
        s = min(max((b - c) / a, 0.0), 1.0)
    return p1 + s * d1, p2 + t * d2


@njit(cache=True)
def contact_slots(m: int, slots: int) -> tuple:
    """``(points, normals, dists, counts)``, zero, for ``m`` pairs of at most ``slots``
    contacts each: (m, slots, 3), (m, slots, 3), (m, slots) and (m,); a narrow-phase
    kernel fills ``counts[k]`` slots of pair ``k`` (read back by
    :func:`~contactlab.collision.round_shapes.raw_from_slots`)."""
    points = np.zeros((m, slots, 3))
    normals = np.zeros((m, slots, 3))
    dists = np.zeros((m, slots))
    counts = np.zeros(m, dtype=np.int64)
    return points, normals, dists, counts


@njit(cache=True)
def _box_box_pair(
    Ra: np.ndarray,
    pa: np.ndarray,
    ha: np.ndarray,
    Rb: np.ndarray,
    pb: np.ndarray,
    hb: np.ndarray,
    margin: float,
    points: np.ndarray,
    normals: np.ndarray,
    dists: np.ndarray,
    poly: np.ndarray,
    buf: np.ndarray,
    work: np.ndarray,
) -> int:
    """Contacts of one box pair; ``Ra, Rb`` hold the boxes' world axes as rows.

    ``work`` is a (9, 3) work array (no array is allocated on the face path).
    """
    d0, d1, d2 = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    C = work[0:3]  # C[i, j] = a_i . b_j: B's axes in A's frame (columns)
    absC = work[3:6]
    t = work[6]
    u = work[7]
    for i in range(3):
        t[i] = Ra[i, 0] * d0 + Ra[i, 1] * d1 + Ra[i, 2] * d2
        u[i] = Rb[i, 0] * d0 + Rb[i, 1] * d1 + Rb[i, 2] * d2
        for j in range(3):
            C[i, j] = Ra[i, 0] * Rb[j, 0] + Ra[i, 1] * Rb[j, 1] + Ra[i, 2] * Rb[j, 2]
            absC[i, j] = abs(C[i, j]) + 1e-12
    best_face, face_kind, face_idx = -np.inf, 0, 0
    for i in range(3):
        sep = abs(t[i]) - (ha[i] + hb[0] * absC[i, 0] + hb[1] * absC[i, 1] + hb[2] * absC[i, 2])
        if sep > best_face:
            best_face, face_kind, face_idx = sep, 0, i
    for j in range(3):
        sep = abs(u[j]) - (hb[j] + ha[0] * absC[0, j] + ha[1] * absC[1, j] + ha[2] * absC[2, j])
        if sep > best_face:
            best_face, face_kind, face_idx = sep, 1, j
    if best_face > margin:
        return 0
    best_edge, ei, ej = -np.inf, -1, -1
    for i in range(3):
        for j in range(3):
            # L = e_i x C[:, j] in A's frame
            if i == 0:
                l0, l1, l2 = 0.0, -C[2, j], C[1, j]
            elif i == 1:
                l0, l1, l2 = C[2, j], 0.0, -C[0, j]
            else:
                l0, l1, l2 = -C[1, j], C[0, j], 0.0
            norm = np.sqrt(l0 * l0 + l1 * l1 + l2 * l2)
            if norm < _EDGE_EPS:
                continue
            ra = ha[0] * abs(l0) + ha[1] * abs(l1) + ha[2] * abs(l2)
            rb = 0.0
            for k in range(3):
                rb += hb[k] * abs(l0 * C[0, k] + l1 * C[1, k] + l2 * C[2, k])
            sep = (abs(t[0] * l0 + t[1] * l1 + t[2] * l2) - ra - rb) / norm
            if sep > best_edge:
                best_edge, ei, ej = sep, i, j
    if best_edge > margin:
        return 0
    if ei >= 0 and best_edge > best_face + _EDGE_REL_TOL * abs(best_face) + _EDGE_ABS_TOL:
        n = np.cross(Ra[ei], Rb[ej])
        n /= np.linalg.norm(n)
        if n @ (pa - pb) < 0.0:
            n = -n
        ca = pa.copy()
        for k in range(3):
            if k != ei:
                ca -= _sgn(Ra[k] @ n) * ha[k] * Ra[k]
        cb = pb.copy()
        for k in range(3):
            if k != ej:
                cb += _sgn(Rb[k] @ n) * hb[k] * Rb[k]
        qa, qb = _segment_closest(
            ca - ha[ei] * Ra[ei],
            2.0 * ha[ei] * Ra[ei],
            cb - hb[ej] * Rb[ej],
            2.0 * hb[ej] * Rb[ej],
        )
        dist = (qa - qb) @ n
        if dist >= margin:
            return 0
        points[0] = 0.5 * (qa + qb)
        normals[0] = n
        dists[0] = dist
        return 1
    nr = work[8]
    if face_kind == 0:
        sg = _sgn(t[face_idx])  # A's outward face normal toward B
        for c in range(3):
            nr[c] = sg * Ra[face_idx, c]
        return _face_contacts(
            Ra, pa, ha, face_idx, nr, Rb, pb, hb, -1.0, margin, points, normals, dists, poly, buf
        )
    sg = -_sgn(u[face_idx])  # B's outward face normal toward A
    for c in range(3):
        nr[c] = sg * Rb[face_idx, c]
    return _face_contacts(
        Rb, pb, hb, face_idx, nr, Ra, pa, ha, 1.0, margin, points, normals, dists, poly, buf
    )


@njit(cache=True)
def _box_box_kernel(
    Xa: np.ndarray,
    Pa: np.ndarray,
    ha: np.ndarray,
    Xb: np.ndarray,
    Pb: np.ndarray,
    hb: np.ndarray,
    margin: float,
) -> tuple:
    """All pairs; ``X`` (m, 3, 3) hold each box's world axes as rows, ``P`` (m, 3) centres."""
    m = Xa.shape[0]
    points, normals, dists, counts = contact_slots(m, MAX_BOX_CONTACTS)
    poly = np.empty((MAX_BOX_CONTACTS + 4, 3))
    buf = np.empty((MAX_BOX_CONTACTS + 4, 3))
    work = np.empty((9, 3))
    for k in range(m):
        counts[k] = _box_box_pair(
            Xa[k],
            Pa[k],
            ha[k],
            Xb[k],
            Pb[k],
            hb[k],
            margin,
            points[k],
            normals[k],
            dists[k],
            poly,
            buf,
            work,
        )
    return points, normals, dists, counts


def box_box(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Box A against box B: a contact manifold of up to 8 points per pair."""
    m = Wa.shape[0]
    if m == 0:
        return empty_raw()
    points, normals, dists, counts = _box_box_kernel(
        np.ascontiguousarray(np.swapaxes(Wa[:, :3, :3], 1, 2)),
        np.ascontiguousarray(Wa[:, :3, 3]),
        np.ascontiguousarray(sa),
        np.ascontiguousarray(np.swapaxes(Wb[:, :3, :3], 1, 2)),
        np.ascontiguousarray(Wb[:, :3, 3]),
        np.ascontiguousarray(sb),
        float(margin),
    )
    return raw_from_slots(points, normals, dists, counts)


# ----------------------------------------------------------------------------
# scenes of boxes and planes: the whole detection in three compiled passes
# ----------------------------------------------------------------------------
# The sums below are ordered (x0 + x2) + x1, the order numpy's einsum sums three
# products in, so these kernels give the same bits as the array path they replace
# (table.ShapeTable.aabbs, primitives.box_plane and points_plane).
@njit(cache=True)
def _box_frames(
    E: np.ndarray,
    body: np.ndarray,
    pose: np.ndarray,
    slot: np.ndarray,
    posed: np.ndarray,
    size: np.ndarray,
    margin: float,
) -> tuple:
    """World axes (rows of ``X``), centres ``P`` and margin-grown boxes of every box.

    Shape ``k`` is placed at ``pose[k]`` when static (``body[k] < 0``), at
    ``E[body[k]]`` when its pose is the identity (``slot[k] < 0``), else at
    ``posed[slot[k]]`` (``E[body] @ pose``, formed by the caller).  Also
    returns whether every entry of ``E`` is finite.
    """
    finite = True
    for b in range(E.shape[0]):
        for r in range(4):
            for c in range(4):
                if not np.isfinite(E[b, r, c]):
                    finite = False
    ns = body.shape[0]
    X = np.empty((ns, 3, 3))
    P = np.empty((ns, 3))
    lo = np.empty((ns, 3))
    hi = np.empty((ns, 3))
    grow = 0.5 * margin
    for k in range(ns):
        if body[k] < 0:
            W = pose[k]
        elif slot[k] < 0:
            W = E[body[k]]
        else:
            W = posed[slot[k]]
        for i in range(3):
            P[k, i] = W[i, 3]
            for j in range(3):
                X[k, j, i] = W[i, j]
        for i in range(3):
            ext = (abs(W[i, 0]) * size[k, 0] + abs(W[i, 2]) * size[k, 2]) + abs(W[i, 1]) * size[
                k, 1
            ]
            ext += grow
            lo[k, i] = W[i, 3] - ext
            hi[k, i] = W[i, 3] + ext
    return finite, X, P, lo, hi


@njit(cache=True)
def _box_scene_contacts(
    X: np.ndarray,
    P: np.ndarray,
    size: np.ndarray,
    pi: np.ndarray,
    pj: np.ndarray,
    body: np.ndarray,
    local: np.ndarray,
    material: np.ndarray,
    mu_table: np.ndarray,
    plane_normal: np.ndarray,
    plane_offset: np.ndarray,
    plane_local: np.ndarray,
    plane_material: np.ndarray,
    margin: float,
) -> tuple:
    """The contact set of a scene whose shapes are all boxes, plus planes.

    In the order of the array path: every dynamic box's corners against each
    plane (plane by plane, boxes in table order, corners in the order of
    ``primitives.box_plane``), then the box pairs ``(pi, pj)`` (``pi < pj``,
    from the broad phase) of two different bodies, not both static, each with
    its manifold of :func:`_box_box_pair`.  Returns ``point, normal, distance,
    body_a, body_b, shape_a, shape_b, mu``.
    """
    ns = body.shape[0]
    npl = plane_normal.shape[0]
    ndyn = 0
    for k in range(ns):
        if body[k] >= 0:
            ndyn += 1
    npairs = pi.shape[0]
    cap = 8 * ndyn * npl + MAX_BOX_CONTACTS * npairs
    points = np.empty((cap, 3))
    normals = np.empty((cap, 3))
    dists = np.empty(cap)
    sa = np.empty(cap, dtype=np.int64)
    sb = np.empty(cap, dtype=np.int64)
    nc = 0
    # box corners against planes (the plane is B: sb holds -1 - plane)
    for p in range(npl):
        n0, n1, n2 = plane_normal[p, 0], plane_normal[p, 1], plane_normal[p, 2]
        off = plane_offset[p]
        for k in range(ns):
            if body[k] < 0:
                continue
            Xk = X[k]
            for c in range(8):
                l0 = (1.0 if c & 4 else -1.0) * size[k, 0]
                l1 = (1.0 if c & 2 else -1.0) * size[k, 1]
                l2 = (1.0 if c & 1 else -1.0) * size[k, 2]
                x0 = ((Xk[0, 0] * l0 + Xk[2, 0] * l2) + Xk[1, 0] * l1) + P[k, 0]
                x1 = ((Xk[0, 1] * l0 + Xk[2, 1] * l2) + Xk[1, 1] * l1) + P[k, 1]
                x2 = ((Xk[0, 2] * l0 + Xk[2, 2] * l2) + Xk[1, 2] * l1) + P[k, 2]
                height = ((x0 * n0 + x2 * n2) + x1 * n1) - off
                dist = height - 0.0
                if dist < margin:
                    half = 0.5 * dist
                    points[nc, 0] = (x0 - 0.0 * n0) - half * n0
                    points[nc, 1] = (x1 - 0.0 * n1) - half * n1
                    points[nc, 2] = (x2 - 0.0 * n2) - half * n2
                    normals[nc, 0] = n0
                    normals[nc, 1] = n1
                    normals[nc, 2] = n2
                    dists[nc] = dist
                    sa[nc] = k
                    sb[nc] = -1 - p
                    nc += 1
    # box pairs
    poly = np.empty((MAX_BOX_CONTACTS + 4, 3))
    buf = np.empty((MAX_BOX_CONTACTS + 4, 3))
    work = np.empty((9, 3))
    for q in range(npairs):
        a, b = pi[q], pj[q]
        if body[a] == body[b] or (body[a] < 0 and body[b] < 0):
            continue
        got = _box_box_pair(
            X[a],
            P[a],
            size[a],
            X[b],
            P[b],
            size[b],
            margin,
            points[nc:],
            normals[nc:],
            dists[nc:],
            poly,
            buf,
            work,
        )
        for r in range(nc, nc + got):
            sa[r] = a
            sb[r] = b
        nc += got
    body_a = np.empty(nc, dtype=np.int64)
    body_b = np.empty(nc, dtype=np.int64)
    shape_a = np.empty(nc, dtype=np.int64)
    shape_b = np.empty(nc, dtype=np.int64)
    mu = np.empty(nc)
    for r in range(nc):
        a, b = sa[r], sb[r]
        body_a[r] = body[a]
        shape_a[r] = local[a]
        if b < 0:
            body_b[r] = -1
            shape_b[r] = plane_local[-1 - b]
            mu[r] = mu_table[material[a], plane_material[-1 - b]]
        else:
            body_b[r] = body[b]
            shape_b[r] = local[b]
            mu[r] = mu_table[material[a], material[b]]
    return (
        points[:nc].copy(),
        normals[:nc].copy(),
        dists[:nc].copy(),
        body_a,
        body_b,
        shape_a,
        shape_b,
        mu,
    )
