"""Narrow phase for round shapes and planes, batched over pairs of one kind.

Every function takes stacked world poses ``Wa, Wb`` (m, 4, 4) and sizes
(m, 3) (see :class:`~contactlab.collision.shape_table.ShapeTable`) of ``m`` pairs
and returns :data:`Raw` contacts: the index of the pair that produced each
contact, the point (midpoint of the two surface points), the unit normal from
B toward A and the signed distance, keeping contacts with
``distance < margin``.

Spheres and capsules are "swept spheres": a core (a point, a segment) grown
by a radius.  The distance between two of them is the distance between their
cores minus both radii, along the line joining the closest core points, so
sphere–sphere, sphere–capsule and capsule–capsule all reduce to
:func:`_cores`.  Two parallel, overlapping capsules touch along a line; they
get two contacts at the ends of the overlap so that a capsule lying on
another is supported, not balanced on one point.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
Raw = tuple[IntArray, Array, Array, Array]

_TINY = 1e-12
#: Unit normal used when two cores coincide and no direction is defined.
_FALLBACK_NORMAL = np.array([0.0, 0.0, 1.0])
#: Sine of the angle below which two capsule axes count as parallel.
_PARALLEL_SIN = 1e-3


def empty_raw() -> Raw:
    z = np.zeros((0, 3))
    return np.zeros(0, dtype=np.int64), z, z.copy(), np.zeros(0)


def raw_from_slots(points: Array, normals: Array, dists: Array, counts: IntArray) -> Raw:
    """The contacts of a kernel that fills ``counts[k]`` of the slots ``points[k]``
    (m, slots, 3), ``normals[k]`` and ``dists[k]`` of pair ``k``, in pair order."""
    mask = np.arange(points.shape[1])[None, :] < counts[:, None]
    pair = np.broadcast_to(np.arange(points.shape[0])[:, None], mask.shape)[mask]
    return pair.astype(np.int64), points[mask], normals[mask], dists[mask]


def _dot(a: Array, b: Array) -> Array:
    return np.einsum("...i,...i->...", a, b)


def _cores(pair: IntArray, ca: Array, ra: Array, cb: Array, rb: Array, margin: float) -> Raw:
    """Contacts between spheres of radii ``ra, rb`` centred at core points ``ca, cb``."""
    d = ca - cb
    L = np.linalg.norm(d, axis=1)
    ok = L > _TINY
    n = np.where(ok[:, None], d / np.where(ok, L, 1.0)[:, None], _FALLBACK_NORMAL)
    dist = L - ra - rb
    keep = dist < margin
    pa = ca - ra[:, None] * n
    pb = cb + rb[:, None] * n
    point = 0.5 * (pa + pb)
    return pair[keep], point[keep], n[keep], dist[keep]


def _segment(W: Array, half_height: Array) -> tuple[Array, Array]:
    """End points ``c -+ hh * axis`` of capsule cores (axis = local z)."""
    c, axis = W[:, :3, 3], W[:, :3, 2]
    return c - half_height[:, None] * axis, c + half_height[:, None] * axis


def closest_on_segment(p: Array, s0: Array, s1: Array) -> Array:
    """Closest points of segments ``[s0, s1]`` to points ``p``; all (m, 3)."""
    d = s1 - s0
    dd = np.maximum(_dot(d, d), _TINY)
    t = np.clip(_dot(p - s0, d) / dd, 0.0, 1.0)
    return s0 + t[:, None] * d


def segment_segment(p1: Array, q1: Array, p2: Array, q2: Array) -> tuple[Array, Array]:
    """Closest points ``(c1, c2)`` between segments ``[p1, q1]`` and ``[p2, q2]``.

    Minimises ``|p1 + s d1 - p2 - t d2|`` over ``s, t`` in [0, 1]: the
    unconstrained ``s`` is clamped, ``t`` follows from it and is clamped, then
    ``s`` is recomputed from the clamped ``t`` (exact for convex quadratics in
    two variables over a box, since each clamp lands on the optimal edge).
    """
    d1, d2, r = q1 - p1, q2 - p2, p1 - p2
    a, e, f = _dot(d1, d1), _dot(d2, d2), _dot(d2, r)
    b, c = _dot(d1, d2), _dot(d1, r)
    denom = a * e - b * b
    s = np.where(
        denom > _TINY * a * e + _TINY,
        np.clip((b * f - c * e) / np.maximum(denom, _TINY), 0, 1),
        0.0,
    )
    t = (b * s + f) / np.maximum(e, _TINY)
    t_clamped = np.clip(t, 0.0, 1.0)
    s = np.where(t != t_clamped, np.clip((b * t_clamped - c) / np.maximum(a, _TINY), 0.0, 1.0), s)
    return p1 + s[:, None] * d1, p2 + t_clamped[:, None] * d2


def sphere_sphere(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    pair = np.arange(Wa.shape[0])
    return _cores(pair, Wa[:, :3, 3], sa[:, 0], Wb[:, :3, 3], sb[:, 0], margin)


def sphere_capsule(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    ca = Wa[:, :3, 3]
    s0, s1 = _segment(Wb, sb[:, 1])
    q = closest_on_segment(ca, s0, s1)
    return _cores(np.arange(Wa.shape[0]), ca, sa[:, 0], q, sb[:, 0], margin)


def capsule_capsule(Wa: Array, sa: Array, Wb: Array, sb: Array, margin: float) -> Raw:
    """Closest-point contact; two contacts at the overlap ends for parallel capsules."""
    m = Wa.shape[0]
    pair = np.arange(m)
    a0, a1 = _segment(Wa, sa[:, 1])
    b0, b1 = _segment(Wb, sb[:, 1])
    ra, rb = sa[:, 0], sb[:, 0]
    ua, ub = Wa[:, :3, 2], Wb[:, :3, 2]
    sin = np.linalg.norm(np.cross(ua, ub), axis=1)
    # Overlap of B's projection onto A's axis, in A's axial coordinate.
    ta0 = _dot(b0 - Wa[:, :3, 3], ua)
    ta1 = _dot(b1 - Wa[:, :3, 3], ua)
    lo = np.maximum(np.minimum(ta0, ta1), -sa[:, 1])
    hi = np.minimum(np.maximum(ta0, ta1), sa[:, 1])
    line = (sin < _PARALLEL_SIN) & (hi - lo > 1e-9)
    parts = []
    general = ~line
    if np.any(general):
        c1, c2 = segment_segment(a0[general], a1[general], b0[general], b1[general])
        parts.append(_cores(pair[general], c1, ra[general], c2, rb[general], margin))
    if np.any(line):
        ca = Wa[line, :3, 3]
        for t in (lo[line], hi[line]):
            pa = ca + t[:, None] * ua[line]
            pb = closest_on_segment(pa, b0[line], b1[line])
            parts.append(_cores(pair[line], pa, ra[line], pb, rb[line], margin))
    return concat_raw(parts)


def concat_raw(parts: list[Raw]) -> Raw:
    """Concatenate raw contact tuples."""
    if not parts:
        return empty_raw()
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))  # type: ignore[return-value]


# ----------------------------------------------------------------------------
# planes
# ----------------------------------------------------------------------------
def points_plane(
    pair: IntArray, points: Array, radius: Array, normal: Array, offset: Array, margin: float
) -> Raw:
    """Spheres of ``radius`` at ``points`` against half-spaces ``n . x <= offset``.

    The normal is the plane's outward normal (the body is A, the plane B).
    """
    height = _dot(points, normal) - offset
    dist = height - radius
    keep = dist < margin
    on_body = points - radius[:, None] * normal
    point = on_body - 0.5 * dist[:, None] * normal
    return pair[keep], point[keep], normal[keep], dist[keep]


def sphere_plane(W: Array, s: Array, n: Array, off: Array, margin: float) -> Raw:
    return points_plane(np.arange(W.shape[0]), W[:, :3, 3], s[:, 0], n, off, margin)


def capsule_plane(W: Array, s: Array, n: Array, off: Array, margin: float) -> Raw:
    """The two end spheres (a capsule lying flat rests on both)."""
    e0, e1 = _segment(W, s[:, 1])
    m = W.shape[0]
    pair = np.concatenate([np.arange(m), np.arange(m)])
    return points_plane(
        pair,
        np.concatenate([e0, e1]),
        np.tile(s[:, 0], 2),
        np.tile(n, (2, 1)),
        np.tile(off, 2),
        margin,
    )


#: Rim points sampled per cylinder cap (a standing cylinder rests on them).
CYLINDER_RIM_SAMPLES = 8


def cylinder_plane(W: Array, s: Array, n: Array, off: Array, margin: float) -> Raw:
    """Rim points of both caps: the deepest rim point of each cap, exactly, plus
    :data:`CYLINDER_RIM_SAMPLES` evenly spaced rim points per cap (those closer
    than half a sample spacing to the deepest point are dropped).

    A cylinder lying on its side gets the two deepest points (one per cap,
    a line contact); a standing one gets its bottom rim polygon; a tilted
    one its deepest rim point and the rim samples inside the margin.
    """
    m = W.shape[0]
    c, R = W[:, :3, 3], W[:, :3, :3]
    axis = R[:, :, 2]
    r, hh = s[:, 0], s[:, 1]
    # Deepest direction in the cap plane: minus the normal's in-plane part.
    inplane = n - _dot(n, axis)[:, None] * axis
    L = np.linalg.norm(inplane, axis=1)
    defined = L > 1e-6
    u = -inplane / np.where(defined, L, 1.0)[:, None]
    # Angle of u in the cap frame (local x, y) to drop nearby samples.
    ang_u = np.arctan2(_dot(u, R[:, :, 1]), _dot(u, R[:, :, 0]))
    k = CYLINDER_RIM_SAMPLES
    angles = 2.0 * np.pi * np.arange(k) / k
    spacing = 2.0 * np.pi / k
    pairs, pts = [], []
    for sign in (-1.0, 1.0):
        cap = c + sign * hh[:, None] * axis
        pairs.append(np.arange(m)[defined])
        pts.append(cap[defined] + r[defined, None] * u[defined])
        dirs = (
            np.cos(angles)[None, :, None] * R[:, None, :, 0]
            + np.sin(angles)[None, :, None] * R[:, None, :, 1]
        )  # (m, k, 3)
        gap = np.abs((angles[None, :] - ang_u[:, None] + np.pi) % (2.0 * np.pi) - np.pi)
        use = ~(defined[:, None] & (gap < 0.5 * spacing))
        rim = cap[:, None, :] + r[:, None, None] * dirs
        pairs.append(np.broadcast_to(np.arange(m)[:, None], (m, k))[use])
        pts.append(rim[use])
    pair = np.concatenate(pairs)
    return points_plane(
        pair, np.concatenate(pts), np.zeros(pair.shape[0]), n[pair], off[pair], margin
    )


def box_plane(W: Array, s: Array, n: Array, off: Array, margin: float) -> Raw:
    """The box corners closer than the margin (4 for a box resting on a face)."""
    m = W.shape[0]
    signs = np.array([[i, j, k] for i in (-1, 1) for j in (-1, 1) for k in (-1, 1)], float)
    local = signs[None, :, :] * s[:, None, :]  # (m, 8, 3)
    corners = np.einsum("mij,mkj->mki", W[:, :3, :3], local) + W[:, None, :3, 3]
    pair = np.repeat(np.arange(m), 8)
    return points_plane(pair, corners.reshape(-1, 3), np.zeros(8 * m), n[pair], off[pair], margin)
