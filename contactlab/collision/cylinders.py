"""Narrow phase for cylinders: sphere–cylinder (exact, numpy) and capsule–,
box– and cylinder–cylinder (support mappings and a clipped manifold, numba).

Conventions are those of :mod:`contactlab.collision.round_shapes`: batched over
the pairs of one kind, A is the lower kind (sphere, capsule, box before
cylinder), the unit normal points from B toward A, the signed distance is
negative on penetration, the point is the midpoint of the two surface points,
and contacts with ``distance < margin`` are kept.

**Sphere–cylinder** is exact: in the cylinder's frame the closest point of the
solid cylinder to the sphere's centre clamps the axial coordinate to
``[-hh, hh]`` and the radial distance to ``[0, r]``.  A centre inside the
cylinder leaves through the nearer of the side (depth ``r - rho``) and the
nearer cap (depth ``hh - |z|``).

**Capsule–, box– and cylinder–cylinder** in three stages per pair:

1. The signed distance ``d`` and the normal ``n`` by GJK, or EPA when the
   shapes overlap (:mod:`contactlab.collision.convex`).  A capsule enters as
   its core segment; its radius is subtracted afterwards (exact for a
   swept sphere).  ``d`` and ``n`` are exact for flat closest features; on curved
   ones ``d`` is within 1e-11 m and ``n`` within ~1e-5 rad (the EPA tolerance).
2. The contact manifold, as box–box builds it: each shape's *feature* facing
   the other — a box's face most aligned with ``n`` (4 corners), a cylinder's
   cap (a regular polygon of :data:`CYLINDER_RIM_SAMPLES` rim points, one of
   them the rim's extreme point along ``n``) when its axis is within 45
   degrees of ``n``, else its side line along ``n``'s direction (2 points), a
   capsule's core segment.  The flat feature best aligned with ``n`` is the
   reference; the other feature is clipped against the reference's side
   planes (each through a reference edge and parallel to ``n``), and every
   clipped point whose separation along ``n`` from the reference plane is
   below the margin is a contact.  Two line features (cylinder sides,
   capsule cores) that are parallel give the two ends of their overlap.
   A cylinder standing on a box face thus rests on its rim polygon, one lying
   on a face or on another cylinder's cap on two points of its side line,
   two parallel cylinders side by side on two points.
3. The closest (deepest) point from stage 1 is added when no manifold point
   reaches its distance within :data:`DEEPEST_TOL` (e.g. a tilted cylinder's
   rim crossing a box edge between two polygon vertices), so the reported
   minimum distance is always the exact one.

Every manifold point has a separation ``>= d``: ``n`` maximises the support
gap ``min_A n.x - max_B n.x = d``, so no pair of points of A and B lies
closer than ``d`` along ``n`` (a point kept only thanks to the
:data:`CLIP_TOL` allowance, at most 1e-5 m outside the reference face, is
clamped to ``d``).  The rim polygon is inscribed in the circle,
so a cap hanging over an edge is supported slightly inside its true rim (by
at most ``r (1 - cos(pi / K))``, 7.6 % of the radius for K = 8).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.boxes import _clip, contact_slots
from contactlab.collision.convex import signed_distance
from contactlab.collision.round_shapes import CYLINDER_RIM_SAMPLES, Raw, empty_raw, raw_from_slots
from contactlab.collision.shape_table import BOX, CAPSULE, CYLINDER
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 25.0

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Sine of the angle below which two line features count as parallel.
PARALLEL_SIN = 1e-3
#: The closest point is added unless a manifold point is this close to its distance [m].
DEEPEST_TOL = 1e-7
#: The reference feature's side planes are moved out by this much, so that an
#: incident edge lying on one (a box edge along a cylinder's side line) is
#: kept despite round-off and the ~1e-5 rad uncertainty of a normal found on
#: a curved surface (used only when the exact clip leaves nothing) [m].
CLIP_TOL = 1e-5
#: Contacts per pair: two rim polygons clipped (2 K) plus the closest point.
MAX_CYLINDER_CONTACTS = 2 * CYLINDER_RIM_SAMPLES + 1
_K = CYLINDER_RIM_SAMPLES
_BUF = 2 * CYLINDER_RIM_SAMPLES + 8
_CAPSULE, _BOX, _CYLINDER = CAPSULE, BOX, CYLINDER


# ----------------------------------------------------------------------------
# sphere-cylinder
# ----------------------------------------------------------------------------
def sphere_cylinder(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Sphere A against cylinder B: one exact contact per pair."""
    m = Wa.shape[0]
    Rb, pb = Wb[:, :3, :3], Wb[:, :3, 3]
    r, hh, rs = sb[:, 0], sb[:, 1], sa[:, 0]
    c = np.einsum("mji,mj->mi", Rb, Wa[:, :3, 3] - pb)  # centre in the cylinder frame
    rho = np.hypot(c[:, 0], c[:, 1])
    radial = np.zeros((m, 2))
    has_dir = rho > 1e-12
    radial[has_dir] = c[has_dir, :2] / rho[has_dir, None]
    radial[~has_dir] = (1.0, 0.0)
    q = np.empty((m, 3))
    q[:, :2] = np.minimum(rho, r)[:, None] * radial
    q[:, 2] = np.clip(c[:, 2], -hh, hh)
    diff = c - q
    L = np.linalg.norm(diff, axis=1)
    outside = L > 1e-12
    n_loc = np.zeros((m, 3))
    n_loc[outside] = diff[outside] / L[outside, None]
    dist = L - rs
    inside = ~outside
    if np.any(inside):
        side = r[inside] - rho[inside]
        cap = hh[inside] - np.abs(c[inside, 2])
        sign = np.where(c[inside, 2] >= 0.0, 1.0, -1.0)
        through_side = side < cap
        nl = np.zeros((side.size, 3))
        nl[through_side, :2] = radial[inside][through_side]
        nl[~through_side, 2] = sign[~through_side]
        qi = c[inside].copy()
        qi[through_side, :2] = r[inside][through_side, None] * radial[inside][through_side]
        qi[~through_side, 2] = sign[~through_side] * hh[inside][~through_side]
        n_loc[inside] = nl
        q[inside] = qi
        dist[inside] = -np.minimum(side, cap) - rs[inside]
    n = np.einsum("mij,mj->mi", Rb, n_loc)
    on_cylinder = np.einsum("mij,mj->mi", Rb, q) + pb
    on_sphere = Wa[:, :3, 3] - rs[:, None] * n
    point = 0.5 * (on_cylinder + on_sphere)
    keep = dist < margin
    return np.arange(m)[keep], point[keep], n[keep], dist[keep]


# ----------------------------------------------------------------------------
# support-mapping pairs
# ----------------------------------------------------------------------------
@njit(cache=True)
def _feature(
    kind: int, R: np.ndarray, p: np.ndarray, size: np.ndarray, out_dir: np.ndarray, pts: np.ndarray
) -> tuple:
    """The shape's feature facing ``out_dir``: ``(count, plane normal)``, vertices in ``pts``.

    Box: the face most aligned with ``out_dir`` (4 corners, in order).
    Cylinder: the cap polygon (``_K`` rim points starting at the rim's
    extreme point along ``out_dir``) when the axis is within 45 degrees of
    ``out_dir``, else the side line (2 points).  Capsule: the core segment.
    """
    nrm = np.zeros(3)
    X = np.ascontiguousarray(R.T)  # rows: the shape's axes
    if kind == _BOX:
        best, i = -1.0, 0
        for k in range(3):
            v = abs(X[k] @ out_dir)
            if v > best:
                best, i = v, k
        s = 1.0 if (X[i] @ out_dir) >= 0.0 else -1.0
        fc = p + s * size[i] * X[i]
        u, v = (i + 1) % 3, (i + 2) % 3
        su = (1.0, -1.0, -1.0, 1.0)
        sv = (1.0, 1.0, -1.0, -1.0)
        for k in range(4):
            pts[k] = fc + su[k] * size[u] * X[u] + sv[k] * size[v] * X[v]
        nrm[:] = s * X[i]
        return 4, nrm
    axis = X[2].copy()
    if kind == _CAPSULE:
        pts[0] = p - size[1] * axis
        pts[1] = p + size[1] * axis
        return 2, nrm
    c = axis @ out_dir
    inplane = out_dir - c * axis
    L = np.sqrt(inplane @ inplane)
    if abs(c) >= L:
        s = 1.0 if c >= 0.0 else -1.0
        centre = p + s * size[1] * axis
        if L > 1e-9:
            u = inplane / L
        else:
            u = X[0].copy()
        w = np.cross(axis, u)
        for k in range(_K):
            th = 2.0 * np.pi * k / _K
            pts[k] = centre + size[0] * (np.cos(th) * u + np.sin(th) * w)
        nrm[:] = s * axis
        return _K, nrm
    u = inplane / L
    pts[0] = p + size[0] * u - size[1] * axis
    pts[1] = p + size[0] * u + size[1] * axis
    nrm[:] = u
    return 2, nrm


@njit(cache=True)
def _closest_on_seg(x: np.ndarray, s0: np.ndarray, s1: np.ndarray) -> np.ndarray:
    d = s1 - s0
    dd = d @ d
    t = 0.0 if dd <= 1e-300 else min(max((x - s0) @ d / dd, 0.0), 1.0)
    return s0 + t * d


@njit(cache=True)
def _add(
    pa: np.ndarray,
    pb: np.ndarray,
    n: np.ndarray,
    ra: float,
    rb: float,
    d: float,
    margin: float,
    points: np.ndarray,
    normals: np.ndarray,
    dists: np.ndarray,
    count: int,
) -> int:
    """Add the contact between A's point ``pa`` and B's point ``pb`` (cores for
    capsules).  Its distance is at least the pair's signed distance ``d``; a
    point placed up to ``CLIP_TOL`` outside the reference face could fall
    below it, so it is clamped there."""
    dist = max((pa - pb) @ n - ra - rb, d)
    if dist >= margin or count >= MAX_CYLINDER_CONTACTS:
        return count
    points[count] = 0.5 * (pa - ra * n + pb + rb * n)
    normals[count] = n
    dists[count] = dist
    return count + 1


@njit(cache=True)
def _clip_incident(
    ref: np.ndarray,
    nref: int,
    inc: np.ndarray,
    ninc: int,
    n: np.ndarray,
    tol: float,
    poly: np.ndarray,
    buf: np.ndarray,
) -> int:
    """Clip the incident feature ``inc[:ninc]`` (polygon or segment) against the
    side planes of the reference polygon ``ref[:nref]`` (each through an edge,
    parallel to ``n``, moved out by ``tol``); the result goes to ``poly``."""
    c0, c1, c2 = 0.0, 0.0, 0.0
    for k in range(nref):
        c0 += ref[k, 0]
        c1 += ref[k, 1]
        c2 += ref[k, 2]
    c0, c1, c2 = c0 / nref, c1 / nref, c2 / nref
    cnt = 0
    if ninc >= 3:
        cnt = ninc
        poly[:cnt] = inc[:cnt]
    t0, t1 = 0.0, 1.0
    s = np.empty(3)  # the side plane's normal; scalar arithmetic otherwise (a hot loop)
    for k in range(nref):
        k1 = (k + 1) % nref
        e0, e1, e2 = ref[k1, 0] - ref[k, 0], ref[k1, 1] - ref[k, 1], ref[k1, 2] - ref[k, 2]
        s0 = e1 * n[2] - e2 * n[1]
        s1 = e2 * n[0] - e0 * n[2]
        s2 = e0 * n[1] - e1 * n[0]
        L = np.sqrt(s0 * s0 + s1 * s1 + s2 * s2)
        s0, s1, s2 = s0 / L, s1 / L, s2 / L
        if s0 * (c0 - ref[k, 0]) + s1 * (c1 - ref[k, 1]) + s2 * (c2 - ref[k, 2]) > 0.0:
            s0, s1, s2 = -s0, -s1, -s2
        s[0], s[1], s[2] = s0, s1, s2
        lim = s0 * ref[k, 0] + s1 * ref[k, 1] + s2 * ref[k, 2] + tol
        if ninc >= 3:
            cnt = _clip(poly, cnt, s, lim, buf)
            poly[:cnt] = buf[:cnt]
            if cnt == 0:
                return 0
        else:
            d0 = s0 * inc[0, 0] + s1 * inc[0, 1] + s2 * inc[0, 2] - lim
            d1 = s0 * inc[1, 0] + s1 * inc[1, 1] + s2 * inc[1, 2] - lim
            if d0 > 0.0 and d1 > 0.0:
                return 0
            if d0 > 0.0:
                t0 = max(t0, d0 / (d0 - d1))
            elif d1 > 0.0:
                t1 = min(t1, d0 / (d0 - d1))
    if ninc >= 3:
        return cnt
    if t0 > t1:
        return 0
    poly[0] = inc[0] + t0 * (inc[1] - inc[0])
    poly[1] = inc[0] + t1 * (inc[1] - inc[0])
    return 2 if t1 - t0 > 1e-12 else 1


@njit(cache=True)
def _reference_clip(
    FA: np.ndarray,
    na: int,
    mA: np.ndarray,
    FB: np.ndarray,
    nb: int,
    mB: np.ndarray,
    n: np.ndarray,
    poly: np.ndarray,
    buf: np.ndarray,
) -> tuple:
    """Clip the incident feature against the reference one (the flat feature,
    of at least three points, best aligned with ``n``; B's on a tie).

    ``FA, FB`` hold the features' ``na, nb`` world points and ``mA, mB`` their
    normals.  Returns ``(ref_b, ref, mref, count)``: whether B's feature is the
    reference, its points and normal, and the number of clipped points in ``poly``.
    """
    ref_b = nb >= 3 and (na < 3 or abs(mB @ n) >= abs(mA @ n))
    if ref_b:
        ref, nref, mref, inc, ninc = FB, nb, mB, FA, na
    else:
        ref, nref, mref, inc, ninc = FA, na, mA, FB, nb
    cnt = _clip_incident(ref, nref, inc, ninc, n, 1e-12, poly, buf)
    if cnt == 0:
        # an incident edge lying on a side plane (a box edge along a side line)
        cnt = _clip_incident(ref, nref, inc, ninc, n, CLIP_TOL, poly, buf)
    return ref_b, ref, mref, cnt


@njit(cache=True)
def _closest_missing(dists: np.ndarray, count: int, d: float) -> bool:
    """Whether none of the ``count`` manifold distances reaches the signed
    distance ``d`` within :data:`DEEPEST_TOL` (then the closest point is added)."""
    deepest = np.inf
    for k in range(count):
        deepest = min(deepest, dists[k])
    return deepest > d + DEEPEST_TOL


@njit(cache=True)
def _convex_pair(
    kA: int,
    RA: np.ndarray,
    pA: np.ndarray,
    sA: np.ndarray,
    kB: int,
    RB: np.ndarray,
    pB: np.ndarray,
    sB: np.ndarray,
    margin: float,
    points: np.ndarray,
    normals: np.ndarray,
    dists: np.ndarray,
    FA: np.ndarray,
    FB: np.ndarray,
    poly: np.ndarray,
    buf: np.ndarray,
) -> int:
    """Contacts of one pair (see the module docstring); returns their number."""
    ra = sA[0] if kA == _CAPSULE else 0.0
    rb = sB[0] if kB == _CAPSULE else 0.0
    found, d, n, a, b = signed_distance(kA, RA, pA, sA, kB, RB, pB, sB, margin + ra + rb)
    d -= ra + rb
    if not found or d >= margin:
        return 0
    na, mA = _feature(kA, RA, pA, sA, -n, FA)
    nb, mB = _feature(kB, RB, pB, sB, n, FB)
    count = 0
    if na >= 3 or nb >= 3:
        ref_b, ref, mref, cnt = _reference_clip(FA, na, mA, FB, nb, mB, n, poly, buf)
        mn = mref @ n
        for k in range(cnt):
            q = poly[k]
            t = mref @ (ref[0] - q) / mn  # q + t n lies on the reference plane
            r = q + t * n
            if ref_b:
                count = _add(q, r, n, ra, rb, d, margin, points, normals, dists, count)
            else:
                count = _add(r, q, n, ra, rb, d, margin, points, normals, dists, count)
    else:
        ua = FA[1] - FA[0]
        ub = FB[1] - FB[0]
        la = np.sqrt(ua @ ua)
        ua_hat = ua / la
        cr = np.cross(ua_hat, ub / np.sqrt(ub @ ub))
        if np.sqrt(cr @ cr) < PARALLEL_SIN:
            tb0 = (FB[0] - FA[0]) @ ua_hat
            tb1 = (FB[1] - FA[0]) @ ua_hat
            lo = max(min(tb0, tb1), 0.0)
            hi = min(max(tb0, tb1), la)
            if hi - lo > 1e-9:
                for t in (lo, hi):
                    qa = FA[0] + t * ua_hat
                    qb = _closest_on_seg(qa, FB[0], FB[1])
                    count = _add(qa, qb, n, ra, rb, d, margin, points, normals, dists, count)
    if _closest_missing(dists, count, d) and count < MAX_CYLINDER_CONTACTS:
        points[count] = 0.5 * (a - ra * n + b + rb * n)
        normals[count] = n
        dists[count] = d
        count += 1
    return count


@njit(cache=True)
def _convex_kernel(
    kA: int,
    RA: np.ndarray,
    PA: np.ndarray,
    SA: np.ndarray,
    kB: int,
    RB: np.ndarray,
    PB: np.ndarray,
    SB: np.ndarray,
    margin: float,
) -> tuple:
    """All pairs of one kind; ``R`` (m, 3, 3) rotations (columns = axes), ``P`` (m, 3) centres."""
    m = RA.shape[0]
    points, normals, dists, counts = contact_slots(m, MAX_CYLINDER_CONTACTS)
    FA = np.zeros((_BUF, 3))
    FB = np.zeros((_BUF, 3))
    poly = np.zeros((_BUF, 3))
    buf = np.zeros((_BUF, 3))
    for k in range(m):
        counts[k] = _convex_pair(
            kA,
            RA[k],
            PA[k],
            SA[k],
            kB,
            RB[k],
            PB[k],
            SB[k],
            margin,
            points[k],
            normals[k],
            dists[k],
            FA,
            FB,
            poly,
            buf,
        )
    return points, normals, dists, counts


def _convex(
    kind_a: int, kind_b: int, Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float
) -> Raw:
    m = Wa.shape[0]
    if m == 0:
        return empty_raw()
    points, normals, dists, counts = _convex_kernel(
        kind_a,
        np.ascontiguousarray(Wa[:, :3, :3]),
        np.ascontiguousarray(Wa[:, :3, 3]),
        np.ascontiguousarray(sa, dtype=float),
        kind_b,
        np.ascontiguousarray(Wb[:, :3, :3]),
        np.ascontiguousarray(Wb[:, :3, 3]),
        np.ascontiguousarray(sb, dtype=float),
        float(margin),
    )
    return raw_from_slots(points, normals, dists, counts)


def capsule_cylinder(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Capsule A against cylinder B (see the module docstring)."""
    return _convex(CAPSULE, CYLINDER, Wa, sa, Wb, sb, margin)


def box_cylinder(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Box A against cylinder B (see the module docstring)."""
    return _convex(BOX, CYLINDER, Wa, sa, Wb, sb, margin)


def cylinder_cylinder(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Cylinder A against cylinder B (see the module docstring)."""
    return _convex(CYLINDER, CYLINDER, Wa, sa, Wb, sb, margin)
