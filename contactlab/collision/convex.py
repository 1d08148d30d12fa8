"""Signed distance of two convex shapes from their support mappings (numba).

A convex solid ``X`` is known through its support mapping
``s_X(v) = argmax_{x in X} v . x``.  The signed distance of ``A`` and ``B``
is the separation of the best separating plane,

    d = max_{|n| = 1}  ( min_{a in A} n . a  -  max_{b in B} n . b ),

positive when the shapes are apart (the Euclidean distance) and minus the
penetration depth (the shortest translation of ``A`` that separates them)
when they overlap.  The maximising ``n`` is the contact normal, pointing
from B toward A.  Both cases work on the Minkowski difference
``D = A - B`` (support ``s_A(v) - s_B(-v)``):

* **GJK** (Gilbert, Johnson, Keerthi 1988) walks a simplex of support points
  of ``D`` toward the origin; the closest point ``v`` of ``D`` gives
  ``d = |v|``, ``n = v / |v|`` and the witness points from the simplex's
  barycentric coordinates.  The closest point of a simplex (at most four
  points) is found by trying all its faces (Johnson's sub-algorithm in its
  brute-force form: the nearest affine projection with non-negative
  barycentric coordinates).  Stops when the gap between the upper bound
  ``|v|`` and the lower bound ``v . w / |v|`` is below :data:`GJK_TOL`, or
  early when the lower bound already exceeds the margin.
* **EPA** (expanding polytope; van den Bergen 2001) when GJK finds the
  origin inside ``D`` (or closer than :data:`TOUCH_TOL`): the final simplex
  is grown into a tetrahedron around the origin, then the polytope face
  nearest the origin is pushed out by the support point along its normal
  until the support adds less than :data:`EPA_TOL`.  The nearest face's
  distance is the depth, minus its normal is ``n``.  The nearest face's
  distance can only grow as the polytope grows; if round-off (sliver faces)
  makes it shrink, EPA stops at the last good face.

Shapes: ``BOX`` (half extents), ``CYLINDER`` (radius, half height, axis
local z), the *core segment* of a ``CAPSULE`` (half height along local z;
the caller subtracts the capsule radius: the signed distance of a swept
shape ``S + ball(r)`` is that of ``S`` minus ``r``), the centre of a
``SPHERE`` (likewise) and a ``MESH`` hull given by its vertices
(:func:`signed_distance_v`).

Accuracy: exact (round-off) when the closest features are flat (box faces,
cylinder caps, segment ends).  Apart, GJK's distance is within
:data:`GJK_TOL` of the truth.  In contact on a curved feature (a cylinder's
side or rim) the depth is within :data:`EPA_TOL` and, since the depth is
quadratic in the normal's error near the optimum, the normal within about
``sqrt(2 EPA_TOL / curvature)`` ~ 1e-5 rad.  Both are certified: the support
gap along the returned normal (a lower bound of the signed distance) equals
the returned distance, and EPA's polytope lies inside ``D`` (its depth is a
lower bound of the penetration).  EPA stops after :data:`EPA_MAX_VERTICES`
vertices (reached only by penetrations of several centimetres on curved
features), GJK after :data:`GJK_MAX_ITER` iterations.

Cost (thread CPU time, warm cache): ~0.4 us per separated pair of boxes,
~8 us per penetrating pair (EPA's inner loops work on scalars: a numba
array temporary costs about as much as a face update).  The kernels are
compiled once (about 20-40 s cold) and cached; numba's cache of a caller
(``cylinders``, ``hulls``) is keyed on the caller's source only, so after
editing this module delete the callers' cached ``cylinders*.nb*`` and
``hulls*.nb*`` files as well (in numba's cache folder, see :mod:`solvers.jit`).
"""

from __future__ import annotations

import numpy as np

from contactlab.collision.shape_table import BOX, CAPSULE, CYLINDER, MESH, SPHERE
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 30.0

#: GJK stops when |v| - v.w/|v| < GJK_TOL (1 + |v|) [m].
GJK_TOL = 1e-10
GJK_MAX_ITER = 64
#: GJK distances below this count as contact and go to EPA [m].
TOUCH_TOL = 1e-9
#: EPA stops when the support along the nearest face adds less than this [m].
EPA_TOL = 1e-11
EPA_MAX_VERTICES = 128
_EPA_MAX_FACES = 12 * EPA_MAX_VERTICES
_SPHERE, _CAPSULE, _BOX, _CYLINDER, _MESH = SPHERE, CAPSULE, BOX, CYLINDER, MESH
#: Hulls of more vertices than this find their support by hill climbing.
HILL_CLIMB_VERTICES = 32


@njit(cache=True)
def no_hull() -> tuple:
    """The hull argument of a shape that is not a mesh (see :func:`support`)."""
    e = np.zeros(0, dtype=np.int64)
    return np.zeros((0, 3)), e, e


@njit(cache=True)
def support(
    kind: int, R: np.ndarray, p: np.ndarray, size: np.ndarray, H: tuple, v: np.ndarray
) -> np.ndarray:
    """Support point of shape ``kind`` (pose ``R, p``; R's columns are its axes) along ``v``.

    ``H = (V, NS, NB)`` is read for ``MESH`` only: the hull's vertices (nv, 3)
    in its own frame and their neighbours along the hull's edges (vertex ``i``'s
    are ``NB[NS[i]:NS[i + 1]]``).  The support of a vertex set is its vertex
    farthest along ``v``: found by scanning every vertex of a small hull, and
    on a hull of more than :data:`HILL_CLIMB_VERTICES` by climbing from vertex
    0 to a better neighbour while there is one (on a convex polytope a vertex
    no neighbour improves on is a farthest one).  A sphere enters as its centre.
    """
    out = p.copy()
    if kind == _SPHERE:
        return out
    if kind == _MESH:
        V, NS, NB = H
        l0 = R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2]
        l1 = R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2]
        l2 = R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2]
        best, ib = -np.inf, 0
        if V.shape[0] <= HILL_CLIMB_VERTICES or NB.shape[0] == 0:
            for i in range(V.shape[0]):
                s = V[i, 0] * l0 + V[i, 1] * l1 + V[i, 2] * l2
                if s > best:
                    best, ib = s, i
        else:
            best = V[0, 0] * l0 + V[0, 1] * l1 + V[0, 2] * l2
            moved = True
            while moved:
                moved = False
                for e in range(NS[ib], NS[ib + 1]):
                    j = NB[e]
                    s = V[j, 0] * l0 + V[j, 1] * l1 + V[j, 2] * l2
                    if s > best:
                        best, ib, moved = s, j, True
                        break
        for i in range(3):
            out[i] += R[i, 0] * V[ib, 0] + R[i, 1] * V[ib, 1] + R[i, 2] * V[ib, 2]
        return out
    if kind == _BOX:
        for k in range(3):
            d = R[0, k] * v[0] + R[1, k] * v[1] + R[2, k] * v[2]
            s = size[k] if d >= 0.0 else -size[k]
            out[0] += s * R[0, k]
            out[1] += s * R[1, k]
            out[2] += s * R[2, k]
        return out
    lz = R[0, 2] * v[0] + R[1, 2] * v[1] + R[2, 2] * v[2]
    hz = size[1] if lz >= 0.0 else -size[1]
    for i in range(3):
        out[i] += hz * R[i, 2]
    if kind == _CYLINDER:
        lx = R[0, 0] * v[0] + R[1, 0] * v[1] + R[2, 0] * v[2]
        ly = R[0, 1] * v[0] + R[1, 1] * v[1] + R[2, 1] * v[2]
        rho = np.sqrt(lx * lx + ly * ly)
        if rho > 1e-14 * (1.0 + abs(lz)):
            cx, cy = size[0] * lx / rho, size[0] * ly / rho
            for i in range(3):
                out[i] += cx * R[i, 0] + cy * R[i, 1]
    return out


@njit(cache=True)
def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@njit(cache=True)
def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.empty(3)
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]
    return out


@njit(cache=True)
def _closest_on_simplex(W: np.ndarray, n: int, lam: np.ndarray, work: np.ndarray) -> int:
    """Closest point to the origin of the hull of ``W[:n]`` (n <= 4).

    Tries every subset: the affine projection of the origin onto its hull
    with all barycentric coordinates >= 0 and the smallest norm is the
    answer.  Writes that subset's coordinates to ``lam[:k]`` (in the order of
    its points) and returns the subset as a bit mask.  ``work`` is a (14, 4)
    scratch array (GJK calls this every iteration: no allocation here).
    """
    best = np.inf
    best_mask = 1
    best_lam = work[0]
    best_lam[:] = 0.0
    G = work[1:4, :3]
    r = work[4, :3]
    E = work[5:8, :3]
    mu = work[8, :3]
    M = work[9:12, :3]
    idx = np.empty(4, dtype=np.int64)
    for mask in range(1, 1 << n):
        k = 0
        for i in range(n):
            if mask & (1 << i):
                idx[k] = i
                k += 1
        w0 = W[idx[0]]
        if k == 1:
            val = _dot(w0, w0)
            if val < best:
                best, best_mask = val, mask
                best_lam[:] = 0.0
                best_lam[0] = 1.0
            continue
        m = k - 1
        for a in range(m):
            for c in range(3):
                E[a, c] = W[idx[a + 1], c] - w0[c]
        for a in range(m):
            r[a] = -_dot(E[a], w0)
            for b in range(m):
                G[a, b] = _dot(E[a], E[b])
        scale = 1.0
        for a in range(m):
            scale *= G[a, a]
        if m == 1:
            det = G[0, 0]
            if det <= 1e-14 * scale or det <= 0.0:
                continue
            mu[0] = r[0] / det
        elif m == 2:
            det = G[0, 0] * G[1, 1] - G[0, 1] * G[1, 0]
            if det <= 1e-12 * scale:
                continue
            mu[0] = (r[0] * G[1, 1] - G[0, 1] * r[1]) / det
            mu[1] = (G[0, 0] * r[1] - r[0] * G[1, 0]) / det
        else:
            det = (
                G[0, 0] * (G[1, 1] * G[2, 2] - G[1, 2] * G[2, 1])
                - G[0, 1] * (G[1, 0] * G[2, 2] - G[1, 2] * G[2, 0])
                + G[0, 2] * (G[1, 0] * G[2, 1] - G[1, 1] * G[2, 0])
            )
            if det <= 1e-10 * scale:
                continue
            for col in range(3):
                # Cramer's rule: replace column col by r
                M[:, :] = G
                for a in range(3):
                    M[a, col] = r[a]
                mu[col] = (
                    M[0, 0] * (M[1, 1] * M[2, 2] - M[1, 2] * M[2, 1])
                    - M[0, 1] * (M[1, 0] * M[2, 2] - M[1, 2] * M[2, 0])
                    + M[0, 2] * (M[1, 0] * M[2, 1] - M[1, 1] * M[2, 0])
                ) / det
        l0 = 1.0
        ok = True
        for a in range(m):
            l0 -= mu[a]
            if mu[a] < 0.0:
                ok = False
        if not ok or l0 < 0.0:
            continue
        v0 = l0 * w0[0]
        v1 = l0 * w0[1]
        v2 = l0 * w0[2]
        for a in range(m):
            v0 += mu[a] * W[idx[a + 1], 0]
            v1 += mu[a] * W[idx[a + 1], 1]
            v2 += mu[a] * W[idx[a + 1], 2]
        val = v0 * v0 + v1 * v1 + v2 * v2
        if val < best:
            best, best_mask = val, mask
            best_lam[:] = 0.0
            best_lam[0] = l0
            for a in range(m):
                best_lam[a + 1] = mu[a]
    lam[:] = best_lam
    return best_mask


@njit(cache=True)
def _compact(W: np.ndarray, WA: np.ndarray, WB: np.ndarray, n: int, mask: int) -> None:
    k = 0
    for i in range(n):
        if mask & (1 << i):
            W[k] = W[i]
            WA[k] = WA[i]
            WB[k] = WB[i]
            k += 1


@njit(cache=True)
def _support_d(P: tuple, v: np.ndarray) -> tuple:
    """Support of ``D = A - B`` along ``v``: ``(a - b, a, b)``; ``P`` the pair
    ``(kA, RA, pA, sA, HA, kB, RB, pB, sB, HB)`` (the arguments of :func:`support`
    for A, then for B)."""
    a = support(P[0], P[1], P[2], P[3], P[4], v)
    b = support(P[5], P[6], P[7], P[8], P[9], -v)
    return a - b, a, b


@njit(cache=True)
def signed_distance(
    kA: int,
    RA: np.ndarray,
    pA: np.ndarray,
    sA: np.ndarray,
    kB: int,
    RB: np.ndarray,
    pB: np.ndarray,
    sB: np.ndarray,
    cutoff: float,
) -> tuple:
    """Signed distance of A and B, GJK then EPA (see the module docstring).

    Returns ``(found, d, n, a, b)``: ``found`` is False when GJK proves the
    distance exceeds ``cutoff`` (the other values are then meaningless);
    ``d`` [m] the signed distance, ``n`` the unit normal from B toward A,
    ``a, b`` witness points of A and B with ``a - b = d n``.
    """
    return signed_distance_v(kA, RA, pA, sA, no_hull(), kB, RB, pB, sB, no_hull(), cutoff)


@njit(cache=True)
def signed_distance_v(
    kA: int,
    RA: np.ndarray,
    pA: np.ndarray,
    sA: np.ndarray,
    HA: tuple,
    kB: int,
    RB: np.ndarray,
    pB: np.ndarray,
    sB: np.ndarray,
    HB: tuple,
    cutoff: float,
) -> tuple:
    """:func:`signed_distance` with the hulls ``HA, HB`` of mesh shapes (see
    :func:`support`; :func:`no_hull` for the other kinds)."""
    P = (kA, RA, pA, sA, HA, kB, RB, pB, sB, HB)
    W = np.zeros((4, 3))
    WA = np.zeros((4, 3))
    WB = np.zeros((4, 3))
    lam = np.zeros(4)
    work = np.empty((14, 4))
    v = pA - pB
    if _dot(v, v) < 1e-24:
        v = np.array([0.0, 0.0, 1.0])
    n = 0
    overlap = False
    for _ in range(GJK_MAX_ITER):
        w, a, b = _support_d(P, -v)
        vv = _dot(v, v)
        vw = _dot(v, w)
        nv = np.sqrt(vv)
        if vw > 0.0 and vw > cutoff * nv:
            return False, 0.0, v, a, b
        if n > 0 and nv - vw / nv <= GJK_TOL * (1.0 + nv):
            break
        dup = False
        for i in range(n):
            d0, d1, d2 = W[i, 0] - w[0], W[i, 1] - w[1], W[i, 2] - w[2]
            if d0 * d0 + d1 * d1 + d2 * d2 < 1e-26:
                dup = True
        if dup:
            break
        W[n] = w
        WA[n] = a
        WB[n] = b
        n += 1
        mask = _closest_on_simplex(W, n, lam, work)
        _compact(W, WA, WB, n, mask)
        k = 0
        for i in range(n):
            if mask & (1 << i):
                k += 1
        n = k
        v = np.zeros(3)
        for i in range(n):
            v += lam[i] * W[i]
        if n == 4 or _dot(v, v) < TOUCH_TOL * TOUCH_TOL:
            overlap = True
            break
    if not overlap:
        nv = np.sqrt(_dot(v, v))
        if nv >= TOUCH_TOL:
            a = np.zeros(3)
            b = np.zeros(3)
            for i in range(n):
                a += lam[i] * WA[i]
                b += lam[i] * WB[i]
            return True, nv, v / nv, a, b
    return _epa(P, W, WA, WB, n)


@njit(cache=True)
def _tetra_from_simplex(P: tuple, W: np.ndarray, WA: np.ndarray, WB: np.ndarray, n: int) -> int:
    """Grow GJK's final simplex (containing the origin) to a tetrahedron (``P``: the pair,
    see :func:`_support_d`)."""
    eps = 1e-10
    if n == 1:
        for axis in range(6):
            d = np.zeros(3)
            d[axis % 3] = 1.0 if axis < 3 else -1.0
            w, a, b = _support_d(P, d)
            if np.sqrt(_dot(w - W[0], w - W[0])) > eps:
                W[1], WA[1], WB[1] = w, a, b
                n = 2
                break
    if n == 2:
        e = W[1] - W[0]
        e /= np.sqrt(_dot(e, e))
        k = 0
        if abs(e[1]) < abs(e[k]):
            k = 1
        if abs(e[2]) < abs(e[k]):
            k = 2
        ax = np.zeros(3)
        ax[k] = 1.0
        v1 = _cross(e, ax)
        v1 /= np.sqrt(_dot(v1, v1))
        v2 = _cross(e, v1)
        for j in range(6):
            th = np.pi * j / 3.0
            d = np.cos(th) * v1 + np.sin(th) * v2
            w, a, b = _support_d(P, d)
            off = w - W[0]
            perp = off - _dot(off, e) * e
            if np.sqrt(_dot(perp, perp)) > eps:
                W[2], WA[2], WB[2] = w, a, b
                n = 3
                break
    if n == 3:
        nrm = _cross(W[1] - W[0], W[2] - W[0])
        nrm /= np.sqrt(_dot(nrm, nrm))
        w, a, b = _support_d(P, nrm)
        if abs(_dot(nrm, w - W[0])) <= eps:
            w, a, b = _support_d(P, -nrm)
        W[3], WA[3], WB[3] = w, a, b
        n = 4
    return n


@njit(cache=True)
def _face_plane(V: np.ndarray, i: int, j: int, k: int, out: np.ndarray) -> tuple:
    """Unit normal (written to ``out``) and distance from the origin of face
    (i, j, k); a face of (almost) no area gets distance inf (never the nearest).
    Scalar arithmetic: EPA calls it for every new face."""
    e0, e1, e2 = V[j, 0] - V[i, 0], V[j, 1] - V[i, 1], V[j, 2] - V[i, 2]
    f0, f1, f2 = V[k, 0] - V[i, 0], V[k, 1] - V[i, 1], V[k, 2] - V[i, 2]
    n0 = e1 * f2 - e2 * f1
    n1 = e2 * f0 - e0 * f2
    n2 = e0 * f1 - e1 * f0
    L = np.sqrt(n0 * n0 + n1 * n1 + n2 * n2)
    scale = (e0 * e0 + e1 * e1 + e2 * e2) + (f0 * f0 + f1 * f1 + f2 * f2)
    out[0], out[1], out[2] = n0, n1, n2
    if L <= 1e-14 * scale or L < 1e-300:
        return np.inf, False
    out[0], out[1], out[2] = n0 / L, n1 / L, n2 / L
    return out[0] * V[i, 0] + out[1] * V[i, 1] + out[2] * V[i, 2], True


@njit(cache=True)
def _epa(P: tuple, W: np.ndarray, WA: np.ndarray, WB: np.ndarray, n: int) -> tuple:
    """EPA from GJK's final simplex ``W[:n]`` (witnesses ``WA``, ``WB``) of the pair ``P``
    (see :func:`_support_d`): ``(True, d, n, a, b)`` as :func:`signed_distance`."""
    n = _tetra_from_simplex(P, W, WA, WB, n)
    maxv, maxf = EPA_MAX_VERTICES, _EPA_MAX_FACES
    # work arrays: only the first nv vertices and nf faces are ever read
    V = np.empty((maxv, 3))
    VA = np.empty((maxv, 3))
    VB = np.empty((maxv, 3))
    F = np.empty((maxf, 3), dtype=np.int64)
    FN = np.empty((maxf, 3))
    FD = np.empty(maxf)
    alive = np.empty(maxf, dtype=np.bool_)
    for i in range(4):
        V[i], VA[i], VB[i] = W[i], WA[i], WB[i]
    nv = 4
    centre = 0.25 * (V[0] + V[1] + V[2] + V[3])
    nf = 0
    tris = ((0, 1, 2), (0, 3, 1), (0, 2, 3), (1, 3, 2))
    for t in tris:
        i, j, k = t
        dist, ok = _face_plane(V, i, j, k, FN[nf])
        if ok and _dot(FN[nf], V[i] - centre) < 0.0:
            j, k = k, j
            dist, ok = _face_plane(V, i, j, k, FN[nf])
        F[nf, 0], F[nf, 1], F[nf, 2] = i, j, k
        FD[nf], alive[nf] = dist, True
        nf += 1
    edges = np.empty((3 * maxf, 2), dtype=np.int64)
    best = -1
    last = -1
    while True:
        best = -1
        bd = np.inf
        for f in range(nf):
            if alive[f] and FD[f] < bd:
                bd, best = FD[f], f
        if best < 0:
            best = last
            break
        if last >= 0 and bd < FD[last] - EPA_TOL:
            # the nearest face moved closer: round-off broke convexity; keep the last good face
            best = last
            break
        last = best
        nrm = FN[best]
        w, a, b = _support_d(P, nrm)
        if _dot(w, nrm) - bd <= EPA_TOL or nv >= maxv:
            break
        V[nv], VA[nv], VB[nv] = w, a, b
        # remove the faces that see w, keep their boundary (the horizon)
        ne = 0
        for f in range(nf):
            if not alive[f]:
                continue
            v0 = F[f, 0]
            if (
                FN[f, 0] * (w[0] - V[v0, 0])
                + FN[f, 1] * (w[1] - V[v0, 1])
                + FN[f, 2] * (w[2] - V[v0, 2])
            ) > 1e-12:
                alive[f] = False
                for e in range(3):
                    p, q = F[f, e], F[f, (e + 1) % 3]
                    shared = -1
                    for g in range(ne):
                        if edges[g, 0] == q and edges[g, 1] == p:
                            shared = g
                            break
                    if shared >= 0:
                        edges[shared] = edges[ne - 1]
                        ne -= 1
                    else:
                        edges[ne, 0], edges[ne, 1] = p, q
                        ne += 1
        if ne == 0 or nf + ne > maxf:
            break
        for g in range(ne):
            p, q = edges[g, 0], edges[g, 1]
            dist2, ok = _face_plane(V, p, q, nv, FN[nf])
            F[nf, 0], F[nf, 1], F[nf, 2] = p, q, nv
            FD[nf], alive[nf] = dist2, True
            nf += 1
        nv += 1
    if best < 0:
        # no usable face: degenerate input; report a touching contact along the centres
        pA = P[2]
        v = pA - P[7]
        L = np.sqrt(_dot(v, v))
        nn = v / L if L > 0.0 else np.array([0.0, 0.0, 1.0])
        return True, 0.0, nn, pA.copy(), pA.copy()
    i, j, k = F[best, 0], F[best, 1], F[best, 2]
    nrm = FN[best]
    dist = FD[best]
    # barycentric coordinates of the origin's projection dist * nrm on the face
    x = dist * nrm
    e0, e1, e2 = V[j] - V[i], V[k] - V[i], x - V[i]
    d00, d01, d11 = _dot(e0, e0), _dot(e0, e1), _dot(e1, e1)
    d20, d21 = _dot(e2, e0), _dot(e2, e1)
    den = d00 * d11 - d01 * d01
    if den > 1e-300:
        lb = (d11 * d20 - d01 * d21) / den
        lc = (d00 * d21 - d01 * d20) / den
    else:
        lb, lc = 0.0, 0.0
    la = 1.0 - lb - lc
    a = la * VA[i] + lb * VA[j] + lc * VA[k]
    b = la * VB[i] + lb * VB[j] + lc * VB[k]
    return True, -dist, -nrm, a, b
