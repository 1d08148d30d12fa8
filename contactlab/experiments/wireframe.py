"""Wireframes of a scene's shapes, for animations and the HTML viewer.

Every shape becomes a set of line segments ``(k, 2, 3)`` in its body frame
(shape pose applied): box edges, three great circles of a sphere, the rims
and four generators of a cylinder or capsule (with the caps' arcs), the
unique edges of a mesh.  A static plane becomes a square grid patch sized to
the region the bodies visit.  Segments of all shapes of a body are stacked,
so posing a body is one matrix product per frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactlab import shapes as S
from contactlab.scene import Scene

Array = NDArray[np.float64]

CIRCLE_POINTS = 24
#: most mesh edges drawn per shape (evenly subsampled above it)
MAX_MESH_EDGES = 3000


def _polyline(points: Array) -> Array:
    """(n, 3) points joined in order into (n - 1, 2, 3) segments."""
    return np.stack([points[:-1], points[1:]], axis=1)


def _circle(
    radius: float, z: float, plane: str = "xy", arc: float = 2 * np.pi, start: float = 0.0
) -> Array:
    a = start + np.linspace(0.0, arc, CIRCLE_POINTS + 1)
    c, s, k = radius * np.cos(a), radius * np.sin(a), np.full_like(a, z)
    cols = {"xy": (c, s, k), "xz": (c, k, s), "yz": (k, c, s)}[plane]
    return _polyline(np.stack(cols, axis=1))


def _box(h: Array) -> Array:
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
    pairs = [(i, j) for i in range(8) for j in range(i + 1, 8) if bin(i ^ j).count("1") == 1]
    return corners[np.array(pairs)]


def _cylinder(r: float, hh: float, caps: bool) -> Array:
    parts = [_circle(r, -hh), _circle(r, hh)]
    for a in np.linspace(0, 2 * np.pi, 4, endpoint=False):
        p = np.array([r * np.cos(a), r * np.sin(a), 0.0])
        parts.append(np.array([[p - [0, 0, hh], p + [0, 0, hh]]]))
    if caps:
        for plane in ("xz", "yz"):
            top = _circle(r, 0.0, plane, np.pi)
            bottom = _circle(r, 0.0, plane, np.pi, np.pi)
            top[..., 2] += hh
            bottom[..., 2] -= hh
            parts += [top, bottom]
    return np.concatenate(parts)


def _mesh(shape: S.Mesh) -> Array:
    f = np.asarray(shape.faces)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    edges = np.unique(edges, axis=0)
    if len(edges) > MAX_MESH_EDGES:
        edges = edges[np.linspace(0, len(edges) - 1, MAX_MESH_EDGES).astype(int)]
    return np.asarray(shape.vertices, dtype=float)[edges]


def shape_segments(shape: S.Shape) -> Array:
    """Segments (k, 2, 3) of a bounded shape in its parent (body) frame."""
    if isinstance(shape, S.Box):
        local = _box(np.asarray(shape.half_extents))
    elif isinstance(shape, S.Sphere):
        r = shape.radius
        local = np.concatenate([_circle(r, 0.0, p) for p in ("xy", "xz", "yz")])
    elif isinstance(shape, S.Capsule):
        local = _cylinder(shape.radius, shape.half_height, caps=True)
    elif isinstance(shape, S.Cylinder):
        local = _cylinder(shape.radius, shape.half_height, caps=False)
    elif isinstance(shape, S.Mesh):
        local = _mesh(shape)
    else:
        return np.zeros((0, 2, 3))
    R, p = shape.pose[:3, :3], shape.pose[:3, 3]
    return local @ R.T + p


def plane_segments(plane: S.Plane, center: Array, half_size: float, lines: int = 11) -> Array:
    """A square grid of ``lines`` x ``lines`` on the plane, centred near ``center``."""
    n = np.asarray(plane.normal, dtype=float)
    origin = center - (n @ center - plane.offset) * n
    u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    ticks = np.linspace(-half_size, half_size, lines)
    a = origin + ticks[:, None] * u
    b = origin + ticks[:, None] * v
    segs_u = np.stack([a - half_size * v, a + half_size * v], axis=1)
    segs_v = np.stack([b - half_size * u, b + half_size * u], axis=1)
    return np.concatenate([segs_u, segs_v])


@dataclass(frozen=True)
class SceneWireframe:
    """Body segments in body frames and static segments in the world frame.

    bodies : one (k_i, 2, 3) array per body (empty for a body without shapes).
    static : (k, 2, 3) world segments of static shapes.
    """

    bodies: list[Array]
    static: Array

    def posed(self, position: Array, rotation: Array) -> list[Array]:
        """World segments of every body at one frame: position (nb, 3), rotation (nb, 3, 3)."""
        return [seg @ R.T + p for seg, R, p in zip(self.bodies, rotation, position)]


def scene_wireframe(scene: Scene, positions: Array) -> SceneWireframe:
    """Wireframe of ``scene``; ``positions`` (T, nb, 3) size the ground grids."""
    bodies = [
        np.concatenate([shape_segments(s) for s in b.shapes]) if b.shapes else np.zeros((0, 2, 3))
        for b in scene.bodies
    ]
    pts = positions.reshape(-1, 3) if positions.size else np.zeros((1, 3))
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    center = 0.5 * (lo + hi)
    radius = max((float(np.abs(b).max()) for b in bodies if b.size), default=0.5)
    half = 0.5 * float(np.max(hi - lo)) + 2.0 * radius
    static = [
        plane_segments(s, center, half) if isinstance(s, S.Plane) else shape_segments(s)
        for s in scene.static_shapes
    ]
    return SceneWireframe(bodies, np.concatenate(static) if static else np.zeros((0, 2, 3)))


def contact_points(scene: Scene, position: Array, rotation: Array) -> tuple[Array, Array]:
    """Contact points and normals (nc, 3) of the bodies posed at ``position``, ``rotation``:
    the contacts a simulator step from these poses uses
    (:func:`contactlab.simulator.scene_contacts`: no pair joined directly, no
    attached pair, nothing for a scene whose collision is off)."""
    from contactlab.contact_pairs import scene_contacts

    E = np.zeros((len(position), 4, 4))
    E[:, :3, :3], E[:, :3, 3], E[:, 3, 3] = rotation, position, 1.0
    found = scene_contacts(scene, E)
    if found is None or len(found) == 0:
        return np.zeros((0, 3)), np.zeros((0, 3))
    return np.asarray(found.point).reshape(-1, 3), np.asarray(found.normal).reshape(-1, 3)
