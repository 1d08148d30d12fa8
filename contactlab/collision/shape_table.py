"""A scene's collision geometry flattened into arrays, built once per scene.

Every shape of every body, and every static shape, becomes one row of a
:class:`ShapeTable`: its kind, owning body (``-1`` for static geometry), its
index within that owner, its pose in the owner's frame, its size parameters
and its material.  Planes are kept apart (they are tested against every body
directly, never through the broad phase).  At each step :meth:`world_poses`
places all shapes at once: ``E[body] @ pose``.

A :class:`~contactlab.shapes.Mesh` becomes a ``MESH`` row: the convex hull of
its vertices (:mod:`~contactlab.collision.polytope`, built here once), placed
at the centre of the hull's bounding box, whose half extents are its size.
A mesh that is not convex collides as its hull, with one warning naming it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.polytope import HullSet, Polytope, hull_set, polytope
from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.shapes import CONVEX_VOLUME_TOL, Box, Capsule, Cylinder, Mesh, Plane, Sphere

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Shape kinds, in the order used to orient a mixed pair (lower code is A).
SPHERE, CAPSULE, BOX, CYLINDER, MESH = 0, 1, 2, 3, 4
KIND_NAMES = {
    SPHERE: "sphere",
    CAPSULE: "capsule",
    BOX: "box",
    CYLINDER: "cylinder",
    MESH: "mesh",
}


#: Material of static geometry when the shape does not name one.
WORLD_MATERIAL = "world"


def _kind_and_size(shape: object) -> tuple[int, tuple[float, float, float]]:
    if isinstance(shape, Sphere):
        return SPHERE, (shape.radius, 0.0, 0.0)
    if isinstance(shape, Capsule):
        return CAPSULE, (shape.radius, shape.half_height, 0.0)
    if isinstance(shape, Box):
        hx, hy, hz = (float(v) for v in shape.half_extents)
        return BOX, (hx, hy, hz)
    if isinstance(shape, Cylinder):
        return CYLINDER, (shape.radius, shape.half_height, 0.0)
    raise ConfigurationError(
        f"collision does not know shape type {type(shape).__name__}; "
        "use Sphere, Capsule, Box, Cylinder, Mesh (bodies or static) or Plane (static only)"
    )


def _mesh_hull(mesh: Mesh, owner: str) -> Polytope:
    """The hull of ``mesh``; warns once when the mesh is not convex."""
    hull = polytope(mesh.vertices)
    volume = float(mesh.mass_properties(1.0).mass)
    if volume < (1.0 - CONVEX_VOLUME_TOL) * hull.volume:
        warnings.warn(
            f"{owner}: the mesh is not convex (it fills {100.0 * volume / hull.volume:.1f} % "
            "of its convex hull); it collides as its convex hull",
            stacklevel=4,
        )
    return hull


@dataclass(frozen=True)
class ShapeTable:
    """Flattened collision geometry of a scene (see the module docstring).

    Attributes
    ----------
    kind : (ns,) shape kind codes (``SPHERE``, ``CAPSULE``, ``BOX``, ``CYLINDER``, ``MESH``).
    body : (ns,) owning body, ``-1`` for static shapes.  Dynamic shapes come first.
    local : (ns,) index within ``Body.shapes`` or ``Scene.static_shapes``.
    pose : (ns, 4, 4) pose in the owner's frame (world pose for static shapes).
    size : (ns, 3) box half extents; ``(radius, 0, 0)`` for spheres;
        ``(radius, half_height, 0)`` for capsules and cylinders; a mesh hull's
        bounding-box half extents [m].
    material : (ns,) index into ``materials``.
    plane_normal, plane_offset : (npl, 3), (npl,) world half-spaces
        ``n . x <= offset`` (bodies stay on ``n . x >= offset``).
    plane_local, plane_material : (npl,) static index and material index of each plane.
    materials : material names.
    mu_table : (nm, nm) friction coefficient of each material pair.
    hull : (ns,) index into ``hulls`` of a mesh row, ``-1`` for the other kinds.
    hulls : the convex hulls of the mesh rows.
    """

    kind: IntArray
    body: IntArray
    local: IntArray
    pose: Array
    size: Array
    material: IntArray
    plane_normal: Array
    plane_offset: Array
    plane_local: IntArray
    plane_material: IntArray
    materials: tuple[str, ...]
    mu_table: Array
    hull: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    hulls: HullSet = field(default_factory=lambda: hull_set([]))

    @property
    def n_shapes(self) -> int:
        return int(self.kind.shape[0])

    @classmethod
    def from_scene(cls, scene: Scene) -> ShapeTable:
        """Flatten ``scene``'s bodies' shapes and its static shapes."""
        rows: list[tuple[int, int, int, Array, tuple[float, float, float], str]] = []
        hulls: list[Polytope] = []
        hull_of_row: list[int] = []
        hull_of_vertices: dict[int, int] = {}  # shapes sharing a vertex array share a hull

        def add(shape: object, b: int, s: int, pose: Array, material: str, owner: str) -> None:
            if isinstance(shape, Mesh):
                if id(shape.vertices) not in hull_of_vertices:
                    hull_of_vertices[id(shape.vertices)] = len(hulls)
                    hulls.append(_mesh_hull(shape, owner))
                hull_of_row.append(hull_of_vertices[id(shape.vertices)])
                rows.append((MESH, b, s, pose, (0.0, 0.0, 0.0), material))
                return
            kind, size = _kind_and_size(shape)
            hull_of_row.append(-1)
            rows.append((kind, b, s, pose, size, material))

        for b, body in enumerate(scene.bodies):
            for s, shape in enumerate(body.shapes):
                if isinstance(shape, Plane):
                    raise ConfigurationError(
                        f"body {body.name!r} has a Plane shape; a plane is an unbounded static "
                        "half-space: put it in Scene.static_shapes"
                    )
                add(shape, b, s, shape.pose, body.material, f"body {body.name!r}, shape {s}")
        planes: list[tuple[Array, float, int, str]] = []
        for s, shape in enumerate(scene.static_shapes):
            material = str(getattr(shape, "material", WORLD_MATERIAL))
            if isinstance(shape, Plane):
                R, p = shape.pose[:3, :3], shape.pose[:3, 3]
                n = R @ shape.normal
                planes.append((n, float(shape.offset + n @ p), s, material))
                continue
            add(shape, -1, s, shape.pose, material, f"static shape {s}")
        hset = hull_set(hulls)
        for r, h in enumerate(hull_of_row):
            if h >= 0:  # the hull's bounding-box centre is the row's origin
                kind, b, s, pose, _, material = rows[r]
                placed = pose.copy()
                placed[:3, 3] += pose[:3, :3] @ hset.centres[h]
                hx, hy, hz = (float(v) for v in hset.half_extents[h])
                rows[r] = (kind, b, s, placed, (hx, hy, hz), material)
        names = sorted({r[5] for r in rows} | {p[3] for p in planes})
        index = {m: i for i, m in enumerate(names)}
        mu_table = np.array(
            [[scene.contact.friction(a, b) for b in names] for a in names], dtype=float
        ).reshape(len(names), len(names))
        if np.any(mu_table < 0) or not np.all(np.isfinite(mu_table)):
            raise ConfigurationError(
                f"scene {scene.name!r}: friction coefficients must be finite and >= 0, "
                f"got {dict(zip(names, mu_table.tolist()))}"
            )
        return cls(
            kind=np.array([r[0] for r in rows], dtype=np.int64),
            body=np.array([r[1] for r in rows], dtype=np.int64),
            local=np.array([r[2] for r in rows], dtype=np.int64),
            pose=np.array([r[3] for r in rows], dtype=float).reshape(-1, 4, 4),
            size=np.array([r[4] for r in rows], dtype=float).reshape(-1, 3),
            material=np.array([index[r[5]] for r in rows], dtype=np.int64),
            plane_normal=np.array([p[0] for p in planes], dtype=float).reshape(-1, 3),
            plane_offset=np.array([p[1] for p in planes], dtype=float),
            plane_local=np.array([p[2] for p in planes], dtype=np.int64),
            plane_material=np.array([index[p[3]] for p in planes], dtype=np.int64),
            materials=tuple(names),
            mu_table=mu_table,
            hull=np.array(hull_of_row, dtype=np.int64),
            hulls=hset,
        )

    def world_poses(self, E: Array) -> Array:
        """(ns, 4, 4) world transforms of all shapes for body transforms ``E`` (nb, 4, 4)."""
        out = self.pose.copy()
        dyn = self.body >= 0
        if np.any(dyn):
            out[dyn] = E[self.body[dyn]] @ self.pose[dyn]
        return out

    def aabbs(self, W: Array, margin: float) -> tuple[Array, Array]:
        """World axis-aligned boxes ``(lo, hi)``, each (ns, 3), grown by ``margin / 2``.

        Two shapes closer than ``margin`` have overlapping boxes.
        """
        R, c = W[:, :3, :3], W[:, :3, 3]
        r = self.size[:, 0]
        hh = self.size[:, 1]
        axis = R[:, :, 2]
        ext = np.zeros_like(c)
        kind = self.kind
        box = (kind == BOX) | (kind == MESH)  # a mesh hull: its bounding box
        ext[box] = np.einsum("nij,nj->ni", np.abs(R[box]), self.size[box])
        sph = kind == SPHERE
        ext[sph] = r[sph, None]
        cap = kind == CAPSULE
        ext[cap] = np.abs(axis[cap]) * hh[cap, None] + r[cap, None]
        cyl = kind == CYLINDER
        # A disc of radius r with unit axis a spans r sqrt(1 - a_k^2) along world axis k.
        disc = r[cyl, None] * np.sqrt(np.clip(1.0 - axis[cyl] ** 2, 0.0, 1.0))
        ext[cyl] = np.abs(axis[cyl]) * hh[cyl, None] + disc
        ext += 0.5 * margin
        return c - ext, c + ext
