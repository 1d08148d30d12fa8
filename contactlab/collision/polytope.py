"""Convex hulls of meshes as flat arrays: the geometry the mesh narrow phase reads.

A :class:`~contactlab.shapes.Mesh` collides as the convex hull of its
vertices.  :func:`hull_set` builds the hulls of a scene's meshes once, when
its collider is built (never per step), with Qhull (``scipy.spatial.ConvexHull``)
and stores them in one :class:`HullSet` of flat arrays, which the compiled
kernels of :mod:`contactlab.collision.hulls` index by hull number.

Qhull reports the hull as triangles.  Triangles of one plane are merged into
one convex polygon (its vertices ordered counter-clockwise seen from outside,
collinear ones dropped), so that a face is a face: a mesh cube has six
square faces, and a cube resting on a face gets the four contacts of its
square, as a box does.  Two triangles lie in one plane when their unit
normals differ by less than :data:`PLANE_ANGLE_TOL` and their offsets by less
than :data:`PLANE_OFFSET_TOL` times the hull's diameter.

Each hull is re-centred on the centre of its axis-aligned bounding box: its
vertices are stored relative to that centre ``c``, and the collider places
the hull at ``pose @ translate(c)``; the bounding box's half extents serve
the broad phase as a box's would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Triangles whose unit normals differ by less than this [rad] may share a face.
PLANE_ANGLE_TOL = 1e-5
#: ... if their plane offsets differ by less than this fraction of the diameter.
PLANE_OFFSET_TOL = 1e-7


@dataclass(frozen=True)
class Polytope:
    """One convex hull in its own frame.

    Attributes
    ----------
    vertices : (nv, 3) extreme points [m].
    normals : (nf, 3) outward unit normals of the faces.
    offsets : (nf,) ``normals[f] . x <= offsets[f]`` inside [m].
    polygons : one array per face: indices into ``vertices``, counter-clockwise
        seen from outside.
    volume : [m^3].
    """

    vertices: Array
    normals: Array
    offsets: Array
    polygons: tuple[IntArray, ...]
    volume: float


def _qhull(points: Array) -> Any:
    from scipy.spatial import ConvexHull, QhullError

    try:
        return ConvexHull(points)
    except (QhullError, ValueError) as err:
        raise ConfigurationError(
            f"mesh of {len(points)} points has no solid convex hull (the points are "
            "collinear or coplanar); give a mesh that encloses a volume"
        ) from err


def _convex_polygon(pts2: Array) -> IntArray:
    """Indices of the convex hull of 2-D points, counter-clockwise, collinear points dropped
    (Andrew's monotone chain)."""
    order = np.lexsort((pts2[:, 1], pts2[:, 0]))
    scale = float(np.ptp(pts2, axis=0).max()) or 1.0
    eps = 1e-12 * scale * scale

    def half(idx: IntArray) -> list[int]:
        chain: list[int] = []
        for i in idx:
            while len(chain) >= 2:
                o, a = pts2[chain[-2]], pts2[chain[-1]]
                b = pts2[i]
                if (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]) > eps:
                    break
                chain.pop()
            chain.append(int(i))
        return chain

    lower, upper = half(order), half(order[::-1])
    return np.array(lower[:-1] + upper[:-1], dtype=np.int64)


def polytope(points: Array) -> Polytope:
    """The convex hull of ``points`` (n, 3), with coplanar triangles merged into faces."""
    pts = np.asarray(points, dtype=float)
    if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 4 or not np.all(np.isfinite(pts)):
        raise ConfigurationError(
            f"a convex hull needs a finite (n, 3) array of n >= 4 points, got shape {pts.shape}"
        )
    hull = _qhull(pts)
    used = np.asarray(hull.vertices, dtype=np.int64)
    remap = np.full(len(pts), -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    V = pts[used]
    tri = remap[np.asarray(hull.simplices, dtype=np.int64)]
    eq = np.asarray(hull.equations, dtype=float)
    N, off = eq[:, :3], -eq[:, 3]
    diam = float(np.linalg.norm(np.ptp(V, axis=0)))
    cos_tol = np.cos(PLANE_ANGLE_TOL)
    group = np.full(len(tri), -1, dtype=np.int64)
    normals: list[Array] = []
    offsets: list[float] = []
    polygons: list[IntArray] = []
    for t in range(len(tri)):
        if group[t] >= 0:
            continue
        same = (
            (group < 0) & (N @ N[t] >= cos_tol) & (np.abs(off - off[t]) <= PLANE_OFFSET_TOL * diam)
        )
        group[same] = len(normals)
        n = N[same].sum(axis=0)
        n /= np.linalg.norm(n)
        idx = np.unique(tri[same])
        # counter-clockwise about n: 2-D coordinates (u, w) with u x w = n
        u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        u /= np.linalg.norm(u)
        w = np.cross(n, u)
        loop = idx[_convex_polygon(np.stack([V[idx] @ u, V[idx] @ w], axis=1))]
        normals.append(n)
        offsets.append(float(np.max(V[loop] @ n)))
        polygons.append(loop)
    return Polytope(
        vertices=V,
        normals=np.array(normals),
        offsets=np.array(offsets),
        polygons=tuple(polygons),
        volume=float(hull.volume),
    )


@dataclass(frozen=True)
class HullSet:
    """Hulls of several meshes in flat arrays (hull ``h`` owns ``[start[h], start[h + 1])``).

    Attributes
    ----------
    vertices : (NV, 3) vertices, each hull's relative to its bounding-box centre [m].
    vertex_start : (nh + 1,) first vertex of each hull.
    normals : (NF, 3) outward unit face normals (hull frame).
    face_start : (nh + 1,) first face of each hull.
    face_vertices : (NI,) polygon vertex indices into ``vertices`` (global), face after face.
    face_vertex_start : (NF + 1,) first entry of each face in ``face_vertices``.
    centres : (nh, 3) bounding-box centre of each hull in its mesh's frame [m].
    half_extents : (nh, 3) bounding-box half extents [m].
    max_face_vertices : the largest polygon's vertex count.
    """

    vertices: Array
    vertex_start: IntArray
    normals: Array
    face_start: IntArray
    face_vertices: IntArray
    face_vertex_start: IntArray
    centres: Array
    half_extents: Array
    max_face_vertices: int

    @property
    def n_hulls(self) -> int:
        return int(self.centres.shape[0])


def hull_set(hulls: Sequence[Polytope]) -> HullSet:
    """Pack ``hulls`` into one :class:`HullSet`, each re-centred on its bounding box."""
    verts, normals, fverts, fv_start = [], [], [], [0]
    v_start, f_start = [0], [0]
    centres, halves = [], []
    nv = 0
    for P in hulls:
        lo, hi = P.vertices.min(axis=0), P.vertices.max(axis=0)
        c = 0.5 * (lo + hi)
        centres.append(c)
        halves.append(0.5 * (hi - lo))
        verts.append(P.vertices - c)
        normals.append(P.normals)
        for poly in P.polygons:
            fverts.append(poly + nv)
            fv_start.append(fv_start[-1] + len(poly))
        nv += len(P.vertices)
        v_start.append(nv)
        f_start.append(f_start[-1] + len(P.normals))
    return HullSet(
        vertices=np.ascontiguousarray(np.concatenate(verts) if verts else np.zeros((0, 3))),
        vertex_start=np.array(v_start, dtype=np.int64),
        normals=np.ascontiguousarray(np.concatenate(normals) if normals else np.zeros((0, 3))),
        face_start=np.array(f_start, dtype=np.int64),
        face_vertices=np.concatenate(fverts).astype(np.int64)
        if fverts
        else np.zeros(0, dtype=np.int64),
        face_vertex_start=np.array(fv_start, dtype=np.int64),
        centres=np.array(centres, dtype=float).reshape(-1, 3),
        half_extents=np.array(halves, dtype=float).reshape(-1, 3),
        max_face_vertices=max((len(p) for P in hulls for p in P.polygons), default=0),
    )
