"""Collision geometry of a URDF: mesh paths, mesh files and the collision modes.

* **Mesh paths.**  ``package://<package>/<path>`` is looked up, in order, in
  the folders given to the loader (``package_dirs``), in the folders of the
  ``ROS_PACKAGE_PATH`` environment variable (colon-separated, as ROS tools
  and Pinocchio read it) and in the folders above the URDF file; in each
  folder ``d`` the candidates are ``d/<package>/<path>`` and ``d/<path>``.
  ``file://`` paths are absolute; other paths are relative to ``mesh_dir``
  or to the URDF file's folder.
* **Collision modes.**  ``"model"`` keeps the geometry as written (boxes,
  spheres, cylinders, meshes); a mesh that does not bound a solid (not
  closed, or wound inconsistently) becomes its convex hull, reported in the
  loader's warnings.  ``"convex"`` replaces every mesh by its convex hull
  (``trimesh``'s ``convex_hull``, a closed :class:`~contactlab.shapes.Mesh`),
  primitives stay.  ``"none"`` keeps no collision geometry (dynamics only).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.shapes import Box, Cylinder, Mesh, Shape, Sphere

Array = np.ndarray

COLLISION_MODES = ("model", "convex", "none")
#: environment variable with package folders, colon-separated (as ROS tools read it)
PACKAGE_PATH_VARIABLE = "ROS_PACKAGE_PATH"


def search_folders(
    package_dirs: str | Path | Sequence[str | Path] | None, urdf_file: Path | None
) -> list[Path]:
    """The folders ``package://`` paths are looked up in, in order (see the module docstring)."""
    given: list[str | Path]
    if package_dirs is None:
        given = []
    elif isinstance(package_dirs, str):  # one folder, or several as in ROS_PACKAGE_PATH
        given = [d for d in package_dirs.split(os.pathsep) if d]
    elif isinstance(package_dirs, Path):
        given = [package_dirs]
    else:
        given = list(package_dirs)
    env = os.environ.get(PACKAGE_PATH_VARIABLE, "")
    folders = [Path(d) for d in given] + [Path(d) for d in env.split(os.pathsep) if d]
    if urdf_file is not None:
        folders += list(urdf_file.resolve().parents)
    out: list[Path] = []
    for d in folders:
        if d not in out:
            out.append(d)
    return out


@dataclass
class MeshFiles:
    """Resolves and reads a URDF's mesh files once each; collects what the loader reports.

    folders : the ``package://`` search folders (:func:`search_folders`).
    base : the folder relative paths are relative to (``None`` for URDF text
        without ``mesh_dir``).
    """

    folders: list[Path]
    base: Path | None
    hulls: list[str] = field(default_factory=list)
    _cache: dict[tuple[Path, str], Any] = field(default_factory=dict)

    def resolve(self, filename: str, link: str) -> Path:
        """The file a URDF ``<mesh filename=...>`` names, or an error naming the places looked."""
        if filename.startswith("package://"):
            rest = filename[len("package://") :].lstrip("/")
            package, _, inner = rest.partition("/")
            tried = []
            for d in self.folders:
                for candidate in (d / package / inner, d / inner):
                    if candidate.is_file():
                        return candidate
                    tried.append(str(candidate))
            shown = ", ".join(tried[:6]) + (f" and {len(tried) - 6} more" if len(tried) > 6 else "")
            raise ConfigurationError(
                f"URDF link {link!r}: collision mesh {filename!r} of package {package!r} not "
                f"found (looked at {shown}); pass package_dirs= (the folder holding "
                f"{package!r}) or set {PACKAGE_PATH_VARIABLE}, or collision='none'"
            )
        path = Path(filename[len("file://") :] if filename.startswith("file://") else filename)
        if not path.is_absolute() and self.base is not None:
            path = self.base / path
        if not path.is_file():
            raise ConfigurationError(
                f"URDF link {link!r}: collision mesh {filename!r} not found (looked at "
                f"{str(path)!r}); pass mesh_dir= (the folder relative paths start from), or "
                "collision='none'"
            )
        return path

    def load(self, path: Path, scale: Any, link: str, mode: str) -> Mesh:
        """The mesh file as a closed :class:`Mesh` in its own frame (scaled; a hull if needed)."""
        s = np.broadcast_to(np.asarray(1.0 if scale is None else scale, dtype=float), (3,))
        key = (path, f"{mode}:{s.tolist()}")
        if key in self._cache:
            mesh, hull = self._cache[key]
            if hull:
                self.hulls.append(f"{link!r} ({path.name})")
            return mesh
        import trimesh  # imported here: it takes ~0.6 s and only mesh geometry needs it

        try:
            tri = trimesh.load(path, force="mesh")
        except Exception as err:  # trimesh raises many types for unreadable files
            raise ConfigurationError(
                f"URDF link {link!r}: cannot read collision mesh {str(path)!r} "
                f"({type(err).__name__}: {err}); convert it to STL or OBJ, or collision='none'"
            ) from err
        if not isinstance(tri, trimesh.Trimesh) or len(tri.faces) == 0:
            raise ConfigurationError(
                f"URDF link {link!r}: collision mesh {str(path)!r} holds no triangles; "
                "fix the file or use collision='none'"
            )
        tri.apply_scale(s)
        hull = mode == "convex"
        mesh = None
        if not hull:
            try:
                mesh = Mesh.from_trimesh(tri)
            except ConfigurationError:
                hull = True  # not a solid: its convex hull stands in, reported by the loader
                self.hulls.append(f"{link!r} ({path.name})")
        if mesh is None:
            mesh = self._hull(tri, path, link)
        self._cache[key] = (mesh, hull and mode != "convex")
        return mesh

    @staticmethod
    def _hull(tri: Any, path: Path, link: str) -> Mesh:
        try:
            return Mesh.from_trimesh(tri.convex_hull)
        except ConfigurationError:
            pass  # trimesh's clean-up can drop sliver facets of a hull: triangulate it directly
        except Exception as err:  # qhull fails on flat or degenerate point sets
            raise ConfigurationError(
                f"URDF link {link!r}: collision mesh {str(path)!r} has no convex hull with "
                f"volume ({type(err).__name__}); replace it by a solid or use collision='none'"
            ) from err
        return hull_mesh(np.asarray(tri.vertices, dtype=float))


def hull_mesh(points: Array) -> Mesh:
    """The convex hull of ``points`` (n, 3) as a closed :class:`Mesh`, faces wound outward.

    Qhull's triangulated facets (``scipy.spatial.ConvexHull``, options ``Qt``)
    with the unused points dropped; each face is turned so that its normal
    points away from the mean of the hull's vertices, an interior point.
    """
    from scipy.spatial import ConvexHull

    hull = ConvexHull(points, qhull_options="Qt")
    used = np.unique(hull.simplices)
    index = np.full(len(points), -1)
    index[used] = np.arange(len(used))
    V, F = points[used], index[hull.simplices]
    normal = np.cross(V[F[:, 1]] - V[F[:, 0]], V[F[:, 2]] - V[F[:, 0]])
    inward = np.einsum("ij,ij->i", normal, V[F[:, 0]] - V.mean(axis=0)) < 0
    F[inward] = F[inward][:, ::-1]
    return Mesh(vertices=V, faces=F)


def collision_shape(collision: Any, pose: Array, files: MeshFiles, link: str, mode: str) -> Shape:
    """One URDF ``<collision>`` as a shape placed at ``pose`` (4, 4) in the body frame."""
    geo = collision.geometry
    if geo.box is not None:
        return Box(half_extents=0.5 * np.asarray(geo.box.size, dtype=float), pose=pose)
    if geo.sphere is not None:
        return Sphere(radius=float(geo.sphere.radius), pose=pose)
    if geo.cylinder is not None:
        return Cylinder(
            radius=float(geo.cylinder.radius),
            half_height=0.5 * float(geo.cylinder.length),
            pose=pose,
        )
    if geo.mesh is not None:
        path = files.resolve(geo.mesh.filename, link)
        mesh = copy.copy(files.load(path, geo.mesh.scale, link, mode))
        object.__setattr__(mesh, "pose", pose)  # the checked mesh, placed (no second check)
        return mesh
    raise ConfigurationError(
        f"URDF link {link!r}: a <collision> without box, sphere, cylinder or mesh geometry; "
        "give one, or use collision='none'"
    )


def example_robot_data() -> Path:
    """The ``robots`` folder of the ``example-robot-data`` package (pip, a test extra).

    Its URDFs name meshes as ``package://example-robot-data/robots/...``,
    which the loader finds in the folders above the file, with no
    ``package_dirs``.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError as err:
        raise ConfigurationError(
            "example-robot-data is not installed; pip install example-robot-data "
            "(or contactlab[test])"
        ) from err
    return Path(str(dist.locate_file("cmeel.prefix/share/example-robot-data/robots")))
