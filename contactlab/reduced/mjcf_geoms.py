"""MJCF geoms as contactlab shapes and friction (part of :mod:`contactlab.reduced.mjcf`).

Plane (world only), sphere, capsule, cylinder and box become
:mod:`contactlab.shapes`; a mesh becomes the :class:`~contactlab.shapes.Mesh` of
its convex hull (what MuJoCo collides).  Geoms with ``contype = conaffinity = 0``
are visual and left out.  The sliding friction of the geoms is each body's
material; a contact gets the larger of the two coefficients (MuJoCo's rule).
``contype``/``conaffinity`` masks that keep two geoms of different bodies apart,
torsional and rolling friction and other geom types are reported.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.mjcf_parts import GEOM_NAMES, Report, geom_label, name_of, pose
from contactlab.scene import ContactParams
from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Plane, Shape, Sphere

Array = np.ndarray

#: geoms of these types turn into shapes
_SHAPES = {2, 3, 5, 6, 7}
WORLD = "world"


def geoms(
    model: Any, nodes: dict[int, Any], owners: dict[int, tuple[int, Array]], report: Report
) -> tuple[list[Shape], ContactParams | None]:
    """Shapes into ``nodes[b].shapes`` (body frames) and the static shapes; friction."""
    static: list[Shape] = []
    world_mu: set[float] = set()
    colliding: list[tuple[int, int, int, int]] = []  # (geom, owner, contype, conaffinity)
    for g in range(model.ngeom):
        contype, conaffinity = int(model.geom_contype[g]), int(model.geom_conaffinity[g])
        if contype == 0 and conaffinity == 0:
            continue  # visual only
        b = int(model.geom_bodyid[g])
        owner, in_owner = owners[b]
        kind = int(model.geom_type[g])
        if kind not in _SHAPES and kind != 0:
            report.add(
                f"{GEOM_NAMES.get(kind, kind)} geoms",
                geom_label(model, g),
                "no such collision shape (supported: plane, sphere, capsule, cylinder, box, mesh)",
            )
            continue
        if int(model.geom_condim[g]) > 3:
            report.add(
                "torsional and rolling friction (condim 4, 6)",
                geom_label(model, g),
                "the contact models carry sliding friction only",
            )
        if int(model.geom_condim[g]) == 1:
            report.add("frictionless contact (condim 1)", geom_label(model, g), "friction is kept")
        placed = in_owner @ pose(model.geom_pos[g], model.geom_quat[g])
        mu = float(model.geom_friction[g, 0])
        colliding.append((g, owner, contype, conaffinity))
        if owner < 0:
            if kind == 0:
                normal = placed[:3, 2]
                static.append(Plane(normal=normal, offset=float(normal @ placed[:3, 3])))
            else:
                static.append(_shape(model, g, placed))
            world_mu.add(mu)
            continue
        if kind == 0:
            report.add(
                "planes on moving bodies", geom_label(model, g), "a plane is static geometry"
            )
            continue
        node = nodes[owner]
        node.shapes.append(_shape(model, g, se3.inverse(node.inertial) @ placed))
        node.materials.add(mu)
    _check_filters(model, colliding, report)
    for node in nodes.values():
        if len(node.materials) > 1:
            report.add(
                "different friction on one body",
                repr(node.name),
                "the body's contacts use the largest coefficient",
            )
    if len(world_mu) > 1:
        report.add(
            "different friction on world geoms", "worldbody", "contacts use the largest coefficient"
        )
    mus = {material(n.materials): max(n.materials) for n in nodes.values() if n.materials}
    if world_mu:
        mus[WORLD] = max(world_mu)
    if not mus:
        return static, None
    pairs = {(a, b): max(mus[a], mus[b]) for a in mus for b in mus}
    return static, ContactParams(mu=max(mus.values()), mu_pairs=pairs)


def material(mus: set[float]) -> str:
    """The material name of a body whose geoms have sliding friction ``mus``."""
    return f"mjcf:mu={max(mus)!r}" if mus else "default"


def _shape(model: Any, g: int, pose: Array) -> Shape:
    kind = int(model.geom_type[g])
    size = np.asarray(model.geom_size[g], dtype=float)
    if kind == 2:
        return Sphere(radius=float(size[0]), pose=pose)
    if kind == 3:
        return Capsule(radius=float(size[0]), half_height=float(size[1]), pose=pose)
    if kind == 5:
        return Cylinder(radius=float(size[0]), half_height=float(size[1]), pose=pose)
    if kind == 6:
        return Box(half_extents=size[:3], pose=pose)
    return _hull(model, g, pose)


def _hull(model: Any, g: int, pose: Array) -> Mesh:
    """The convex hull of a mesh geom (MuJoCo collides meshes as their hulls)."""
    import trimesh

    m = int(model.geom_dataid[g])
    b = int(model.geom_bodyid[g])
    body, mesh = name_of(model.body(b), f"body{b}"), name_of(model.mesh(m), f"mesh{m}")
    where = f"MJCF body {body!r}, mesh {mesh!r}"
    adr, n = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
    vertices = np.asarray(model.mesh_vert[adr : adr + n], dtype=float)
    try:
        hull = trimesh.convex.convex_hull(vertices)
    except Exception as err:  # qhull's errors have no common base class
        raise ConfigurationError(
            f"{where}: no convex hull of its {n} vertices ({err}); give it a solid mesh or "
            'contype="0" conaffinity="0" to keep it visual only'
        ) from err
    if not hull.is_volume or hull.volume <= 0:
        raise ConfigurationError(
            f"{where}: its vertices are flat (no volume); give it a solid mesh or "
            'contype="0" conaffinity="0" to keep it visual only'
        )
    return Mesh(vertices=np.asarray(hull.vertices), faces=np.asarray(hull.faces), pose=pose)


def _check_filters(model: Any, colliding: list[tuple[int, int, int, int]], report: Report) -> None:
    """Report geom pairs that MuJoCo's contype/conaffinity keeps apart but contactlab collides."""
    parent = {int(b): int(model.body_parentid[b]) for b in range(model.nbody)}
    for i, (g1, o1, t1, a1) in enumerate(colliding):
        for g2, o2, t2, a2 in colliding[i + 1 :]:
            if o1 == o2 or (t1 & a2) or (t2 & a1):
                continue
            b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
            if parent[b1] == b2 or parent[b2] == b1:
                continue  # jointed neighbours do not collide in either
            report.add(
                "contype/conaffinity filtering",
                f"{geom_label(model, g1)} with {geom_label(model, g2)}",
                "contactlab collides every pair of shapes on different bodies",
            )
