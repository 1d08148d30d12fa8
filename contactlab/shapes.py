"""Collision shapes and their mass properties.

Every shape is described in its own frame (centre at the origin, symmetry
axis along z for cylinders and capsules; a mesh's vertices are given in this
frame, wherever its centroid lies) and placed in a body frame by ``pose``
(4x4).  ``mass_properties(density)`` returns the mass, the centre of mass and
the inertia tensor about the centre of mass, in the shape's pose frame's
parent (i.e. the body frame), so shapes can be combined into a composite body
(:func:`contactlab.bodies.composite`).  Closed forms: "List of moments of
inertia" (Sueda's notes §1.7, eq. 1.24 for the box); meshes by volume integration
[Mirtich 1996] (Sueda's notes §1.7) as implemented by ``trimesh``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

if TYPE_CHECKING:
    import trimesh

Array = NDArray[np.float64]

#: A mesh is convex when its volume is within this fraction of its convex hull's.
CONVEX_VOLUME_TOL = 1e-6


@dataclass(frozen=True)
class MassProperties:
    """mass [kg], com (3,) [m], inertia (3, 3) about the com [kg m^2]."""

    mass: float
    com: Array
    inertia: Array


def _pose(value: Array | None) -> Array:
    E = np.eye(4) if value is None else np.array(value, dtype=float)
    if E.shape != (4, 4):
        raise ConfigurationError(f"shape pose must be 4x4, got {E.shape}")
    return E


def _positive(name: str, value: float) -> float:
    if not (np.isfinite(value) and value > 0):
        raise ConfigurationError(f"{name} must be a positive length [m], got {value}")
    return float(value)


@dataclass(frozen=True)
class Shape:
    """Base class: a solid placed in the body frame by ``pose``."""

    pose: Array = field(default_factory=lambda: np.eye(4), kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pose", _pose(self.pose))

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        """``(mass, com, inertia about the com)`` in the shape's own frame."""
        raise ConfigurationError(
            f"{type(self).__name__} has no finite volume and cannot give a body mass; "
            "use it as static geometry (Scene.static_shapes)"
        )

    def mass_properties(self, density: float = 1000.0) -> MassProperties:
        """Mass properties of the solid of uniform ``density`` [kg/m^3], in the body frame.

        The shape's own centre of mass ``c`` and inertia ``I`` are carried by
        ``pose = (R, p)``: ``com = R c + p``, ``inertia = R I R^T``.
        """
        if not (np.isfinite(density) and density > 0):
            raise ConfigurationError(f"density must be positive [kg/m^3], got {density}")
        m, c_local, I_local = self._local_mass_properties(density)
        R = self.pose[:3, :3]
        return MassProperties(float(m), R @ c_local + self.pose[:3, 3], R @ I_local @ R.T)

    def bounding_radius(self) -> float:
        """Radius of a sphere about the shape's origin that contains it [m]."""
        raise NotImplementedError(f"{type(self).__name__} is unbounded")


@dataclass(frozen=True)
class Box(Shape):
    """Box with half extents ``(a, b, c)`` [m]."""

    half_extents: Array = field(default_factory=lambda: np.full(3, 0.5))

    def __post_init__(self) -> None:
        super().__post_init__()
        h = np.array(self.half_extents, dtype=float).reshape(3)
        for k, v in zip("xyz", h):
            _positive(f"box half extent {k}", v)
        object.__setattr__(self, "half_extents", h)

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        a, b, c = 2 * self.half_extents
        m = density * a * b * c
        # Sueda's notes, eq. (1.24)
        return m, np.zeros(3), np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12.0

    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.half_extents))


@dataclass(frozen=True)
class Sphere(Shape):
    """Sphere of ``radius`` [m]."""

    radius: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("sphere radius", self.radius)

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        m = density * 4.0 / 3.0 * np.pi * self.radius**3
        return m, np.zeros(3), np.eye(3) * 0.4 * m * self.radius**2

    def bounding_radius(self) -> float:
        return float(self.radius)


@dataclass(frozen=True)
class Cylinder(Shape):
    """Solid cylinder of ``radius`` and ``half_height`` along its z axis [m]."""

    radius: float = 0.5
    half_height: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("cylinder radius", self.radius)
        _positive("cylinder half height", self.half_height)

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        r, L = self.radius, 2 * self.half_height
        m = density * np.pi * r * r * L
        Ixx = m * (3 * r * r + L * L) / 12.0
        return m, np.zeros(3), np.diag([Ixx, Ixx, 0.5 * m * r * r])

    def bounding_radius(self) -> float:
        return float(np.hypot(self.radius, self.half_height))


@dataclass(frozen=True)
class Capsule(Shape):
    """Capsule: a cylinder of ``radius`` and ``half_height`` (z axis) with hemispherical caps."""

    radius: float = 0.25
    half_height: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        _positive("capsule radius", self.radius)
        _positive("capsule half height", self.half_height)

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        r, hh = self.radius, self.half_height
        L = 2 * hh
        mc = density * np.pi * r * r * L
        ms = density * 4.0 / 3.0 * np.pi * r**3  # both caps together
        # cylinder part
        Ixx = mc * (3 * r * r + L * L) / 12.0
        Izz = 0.5 * mc * r * r
        # two hemispheres: each has its com at 3r/8 from its flat face; parallel axis
        Izz += 0.4 * ms * r * r
        d = hh + 3.0 * r / 8.0
        Ixx += ms * (0.4 * r * r - (3.0 * r / 8.0) ** 2 + d * d)
        return mc + ms, np.zeros(3), np.diag([Ixx, Ixx, Izz])

    def bounding_radius(self) -> float:
        return float(self.radius + self.half_height)


@dataclass(frozen=True)
class Plane(Shape):
    """Static half-space ``{x : n . x <= offset}`` with outward unit ``normal``.

    The surface is ``n . x = offset``; bodies are kept on the side ``n . x >= offset``.
    """

    normal: Array = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    offset: float = 0.0

    def __post_init__(self) -> None:
        super().__post_init__()
        n = np.array(self.normal, dtype=float).reshape(3)
        norm = np.linalg.norm(n)
        if not (np.isfinite(norm) and norm > 0):
            raise ConfigurationError(f"plane normal must be a non-zero 3-vector, got {self.normal}")
        object.__setattr__(self, "normal", n / norm)


@dataclass(frozen=True)
class Mesh(Shape):
    """Closed triangle mesh: ``vertices`` (V, 3) [m] in the shape frame, ``faces`` (F, 3).

    Faces are vertex-index triples wound counter-clockwise seen from outside
    (outward normals).  The mesh must be closed (watertight) and consistently
    wound so that it bounds a solid; its mass properties come from exact
    volume integration over the polyhedron [Mirtich 1996] (Sueda's notes §1.7),
    computed by ``trimesh``.  The centroid need not be at the origin: it is
    reported as the centre of mass, and :func:`contactlab.bodies.body_from_shape`
    moves the body frame there.

    Collision treats a mesh as the convex hull of its vertices
    (:mod:`contactlab.collision.hulls`): exact for a convex mesh; a mesh that
    is not convex (:attr:`is_convex`) collides as its hull, with a warning
    when the scene's collider is built.  :meth:`convex_hull_of` makes the hull
    of any point set or (even open) ``trimesh.Trimesh`` a ``Mesh``.
    """

    vertices: Array
    faces: NDArray[np.int64]

    def __post_init__(self) -> None:
        super().__post_init__()
        V = np.array(self.vertices, dtype=float)
        F = np.array(self.faces)
        if V.ndim != 2 or V.shape[1] != 3 or len(V) < 4 or not np.all(np.isfinite(V)):
            raise ConfigurationError(
                f"mesh vertices must be a finite (V, 3) array with V >= 4, got shape {V.shape}"
            )
        if F.ndim != 2 or F.shape[1] != 3 or len(F) < 4 or not np.issubdtype(F.dtype, np.integer):
            raise ConfigurationError(
                f"mesh faces must be an integer (F, 3) array with F >= 4, got shape {F.shape} "
                f"and dtype {F.dtype}"
            )
        if F.min() < 0 or F.max() >= len(V):
            raise ConfigurationError(
                f"mesh faces index vertices 0..{len(V) - 1}, found indices {F.min()}..{F.max()}"
            )
        import trimesh  # imported here: it takes ~0.7 s and only meshes need it

        # validate on a copy with coincident vertices merged, so a "triangle soup"
        # (each face with its own vertex copies) that closes geometrically is accepted
        mesh = trimesh.Trimesh(vertices=V, faces=F, process=True)
        if not mesh.is_watertight:
            raise ConfigurationError(
                "mesh is not closed (some edge is not shared by exactly two faces); "
                "a solid needs a watertight surface (trimesh's fill_holes may repair it)"
            )
        if not mesh.is_winding_consistent:
            raise ConfigurationError(
                "mesh faces are not wound consistently; fix the winding "
                "(trimesh.repair.fix_winding) so that all normals point outward"
            )
        if not mesh.volume > 0:
            raise ConfigurationError(
                f"mesh encloses a non-positive volume ({mesh.volume:.3g} m^3): its faces are "
                "wound inward; reverse each face (faces[:, ::-1])"
            )
        V.setflags(write=False)
        F = F.astype(np.int64)
        F.setflags(write=False)
        object.__setattr__(self, "vertices", V)
        object.__setattr__(self, "faces", F)

    @classmethod
    def from_trimesh(cls, mesh: trimesh.Trimesh, pose: Array | None = None) -> Mesh:
        """A :class:`Mesh` of a ``trimesh.Trimesh`` (its vertices taken as the shape frame)."""
        return cls(
            vertices=np.asarray(mesh.vertices, float),
            faces=np.asarray(mesh.faces, np.int64),
            pose=np.eye(4) if pose is None else pose,
        )

    @classmethod
    def convex_hull_of(cls, source: trimesh.Trimesh | Array, pose: Array | None = None) -> Mesh:
        """The convex hull of ``source`` as a closed :class:`Mesh`.

        ``source`` is a ``trimesh.Trimesh`` (open, non-manifold or non-convex
        meshes welcome: only its vertices count) or an (n, 3) array of points
        [m], in the shape frame.  The hull is computed by Qhull
        (``scipy.spatial.ConvexHull``); its triangles are wound outward.
        """
        from scipy.spatial import ConvexHull, QhullError

        pts = np.asarray(getattr(source, "vertices", source), dtype=float)
        if pts.ndim != 2 or pts.shape[1] != 3 or len(pts) < 4 or not np.all(np.isfinite(pts)):
            raise ConfigurationError(
                f"convex_hull_of needs a trimesh or a finite (n, 3) array of n >= 4 points, "
                f"got shape {pts.shape}"
            )
        try:
            hull = ConvexHull(pts)
        except QhullError as err:
            raise ConfigurationError(
                f"the {len(pts)} points have no solid convex hull (they are collinear or "
                "coplanar); a collision shape must enclose a volume"
            ) from err
        used = np.asarray(hull.vertices, dtype=np.int64)
        remap = np.full(len(pts), -1, dtype=np.int64)
        remap[used] = np.arange(used.size)
        F = remap[np.asarray(hull.simplices, dtype=np.int64)]
        V = pts[used]
        # Qhull does not orient its triangles: turn each to its facet's outward normal
        e1, e2 = V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]]
        inward = np.einsum("ij,ij->i", np.cross(e1, e2), hull.equations[:, :3]) < 0.0
        F[inward] = F[inward][:, ::-1]
        return cls(vertices=V, faces=F, pose=np.eye(4) if pose is None else pose)

    @property
    def is_convex(self) -> bool:
        """Whether the mesh bounds a convex solid (its volume equals its hull's to
        :data:`CONVEX_VOLUME_TOL`)."""
        from scipy.spatial import ConvexHull

        volume = self._local_mass_properties(1.0)[0]
        return bool(volume >= (1.0 - CONVEX_VOLUME_TOL) * ConvexHull(self.vertices).volume)

    def as_trimesh(self) -> trimesh.Trimesh:
        """The mesh in its shape frame as a ``trimesh.Trimesh`` (vertices not merged)."""
        import trimesh

        return trimesh.Trimesh(vertices=self.vertices, faces=self.faces, process=False)

    def _local_mass_properties(self, density: float) -> tuple[float, Array, Array]:
        import trimesh.triangles

        mp = trimesh.triangles.mass_properties(self.vertices[self.faces], density=density)
        return float(mp.mass), np.asarray(mp.center_mass, float), np.asarray(mp.inertia, float)

    def bounding_radius(self) -> float:
        return float(np.linalg.norm(self.vertices, axis=1).max())
