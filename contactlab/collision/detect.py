"""Collision detection for a whole scene: broad phase, narrow phase, contact set.

``collide(scene, E)`` places every shape (``E[body] @ pose``), tests each
dynamic shape against every static plane directly, finds the candidate pairs
among the other shapes (dynamic and static) on their axis-aligned boxes
with a uniform hash grid, runs the narrow phase once per pair kind on all
pairs of that kind, and returns one :class:`~contactlab.collision.contacts.ContactSet`.

Supported pairs (static shapes may be any of sphere, capsule, box, cylinder,
mesh, plus planes): every pair of the four solids and each solid against a plane —
sphere–plane, capsule–plane, box–plane, cylinder–plane, sphere–sphere,
sphere–capsule, capsule–capsule, sphere–box, capsule–box, box–box
(:mod:`~contactlab.collision.round_shapes`, :mod:`~contactlab.collision.boxes`),
sphere–cylinder, capsule–cylinder, box–cylinder, cylinder–cylinder
(:mod:`~contactlab.collision.cylinders`; the last three by GJK/EPA on support
mappings, :mod:`~contactlab.collision.convex`, with a clipped contact
manifold).  Meshes collide as their convex hulls against every other kind
and the plane (:mod:`~contactlab.collision.hulls`: mesh–plane, sphere–mesh,
capsule–mesh, box–mesh, cylinder–mesh, mesh–mesh).  A candidate pair without a
narrow phase in :data:`PAIR_FUNCTIONS` or :data:`MESH_PAIRS` is an error naming it.

A scene whose shapes are all boxes (besides planes) takes a compiled path
(:meth:`Collider._boxes`): three kernels place the boxes and grow their
bounding boxes, find the grid pairs, and write the corner–plane and box–box
contacts straight into the contact arrays, with the same sums in the same
order as the array path, so the contacts are the same to the last bit.

Friction: each contact gets ``scene.contact.friction(material_a, material_b)``
(an explicit ``mu_pairs`` entry for the two materials, in either order, else
``mu``).  A body's material is ``Body.material``; static geometry uses its
shape's ``material`` attribute if it has one, else ``"world"``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from contactlab.collision import boxes, cylinders, hulls, round_shapes
from contactlab.collision.broadphase import grid_pairs
from contactlab.collision.contacts import ContactSet
from contactlab.collision.round_shapes import Raw
from contactlab.collision.shape_table import (
    BOX,
    CAPSULE,
    CYLINDER,
    KIND_NAMES,
    MESH,
    SPHERE,
    ShapeTable,
)
from contactlab.errors import ConfigurationError, StateError
from contactlab.scene import Scene

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
PairFn = Callable[[Array, Array, Array, Array, float], Raw]

#: Narrow phase per (kind A, kind B) with kind A <= kind B.
PAIR_FUNCTIONS: dict[tuple[int, int], PairFn] = {
    (SPHERE, SPHERE): round_shapes.sphere_sphere,
    (SPHERE, CAPSULE): round_shapes.sphere_capsule,
    (SPHERE, BOX): boxes.sphere_box,
    (CAPSULE, CAPSULE): round_shapes.capsule_capsule,
    (CAPSULE, BOX): boxes.capsule_box,
    (BOX, BOX): boxes.box_box,
    (SPHERE, CYLINDER): cylinders.sphere_cylinder,
    (CAPSULE, CYLINDER): cylinders.capsule_cylinder,
    (BOX, CYLINDER): cylinders.box_cylinder,
    (CYLINDER, CYLINDER): cylinders.cylinder_cylinder,
}

#: Narrow phase of each kind against a plane.
PLANE_FUNCTIONS: dict[int, Callable[[Array, Array, Array, Array, float], Raw]] = {
    SPHERE: round_shapes.sphere_plane,
    CAPSULE: round_shapes.capsule_plane,
    BOX: round_shapes.box_plane,
    CYLINDER: round_shapes.cylinder_plane,
}


#: Kind pairs (kind A <= kind B) collided by :func:`~contactlab.collision.hulls.mesh_pairs`.
MESH_PAIRS = tuple((k, MESH) for k in (SPHERE, CAPSULE, BOX, CYLINDER, MESH))

_NOT_FINITE = "collide: body transforms E hold non-finite numbers"


def supported_pairs() -> list[str]:
    """Names of the supported shape pairs, e.g. ``"sphere-box"``."""
    names = [f"{KIND_NAMES[a]}-{KIND_NAMES[b]}" for a, b in (*PAIR_FUNCTIONS, *MESH_PAIRS)]
    return names + [f"{KIND_NAMES[k]}-plane" for k in (*PLANE_FUNCTIONS, MESH)]


class Collider:
    """Collision detection for one scene; the shape table is built once.

    Parameters
    ----------
    scene : the scene; its ``contact.margin`` [m] is the reporting margin.
    """

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        self.table = ShapeTable.from_scene(scene)
        self.margin = float(scene.contact.margin)
        #: most contacts of a mesh hull against a plane (``ContactParams.hull_plane_points``)
        self.hull_plane_points = int(scene.contact.hull_plane_points)
        if not (np.isfinite(self.margin) and self.margin >= 0.0):
            raise ConfigurationError(
                f"scene {scene.name!r}: contact margin must be >= 0 [m], got {self.margin}"
            )
        tab = self.table
        #: every shape a box (planes aside): the compiled path of :meth:`_boxes`
        self.boxes_only = bool(tab.n_shapes > 0 and np.all(tab.kind == BOX))
        # dynamic shapes posed off their body's origin: placed by E[body] @ pose
        eye = np.all(tab.pose == np.eye(4), axis=(1, 2))
        posed = np.flatnonzero((tab.body >= 0) & ~eye)
        self._posed = posed
        self._slot = np.full(tab.n_shapes, -1, dtype=np.int64)
        self._slot[posed] = np.arange(posed.size)
        self._no_posed = np.zeros((0, 4, 4))

    def candidate_pairs(self, W: Array) -> tuple[IntArray, IntArray]:
        """Shape pairs (i < j) whose margin-grown boxes overlap, excluding pairs on
        the same body and pairs of two static shapes."""
        lo, hi = self.table.aabbs(W, self.margin)
        i, j = grid_pairs(lo, hi)
        body = self.table.body
        keep = (body[i] != body[j]) & ((body[i] >= 0) | (body[j] >= 0))
        return i[keep], j[keep]

    def __call__(self, E: Array) -> ContactSet:
        """Contacts for body transforms ``E`` (nb, 4, 4)."""
        E = np.asarray(E, dtype=float)
        nb = self.scene.n_bodies
        if E.shape != (nb, 4, 4):
            raise StateError(
                f"collide: E must have shape ({nb}, 4, 4) for scene {self.scene.name!r}, "
                f"got {E.shape}"
            )
        if self.boxes_only:
            return self._boxes(E)
        if not np.all(np.isfinite(E)):
            raise StateError(_NOT_FINITE)
        tab = self.table
        W = tab.world_poses(E)
        parts = [self._planes(W)]
        i, j = self.candidate_pairs(W)
        # Orient each pair so that kind[a] <= kind[b]; equal kinds keep i < j.
        swap = tab.kind[i] > tab.kind[j]
        a, b = np.where(swap, j, i), np.where(swap, i, j)
        ka, kb = tab.kind[a], tab.kind[b]
        code = ka * 8 + kb
        for c in np.unique(code):
            key = (int(c) // 8, int(c) % 8)
            fn = PAIR_FUNCTIONS.get(key)
            sel = code == c
            sa, sb = a[sel], b[sel]
            if key in MESH_PAIRS:
                pair, point, normal, dist = hulls.mesh_pairs(
                    key[0],
                    W[sa],
                    tab.size[sa],
                    tab.hull[sa],
                    key[1],
                    W[sb],
                    tab.size[sb],
                    tab.hull[sb],
                    tab.hulls,
                    self.margin,
                )
                parts.append(self._assemble(sa[pair], sb[pair], point, normal, dist))
                continue
            if fn is None:
                k = int(np.flatnonzero(sel)[0])
                raise ConfigurationError(
                    f"no narrow phase for {KIND_NAMES[key[0]]}-{KIND_NAMES[key[1]]} "
                    f"(shape {tab.local[a[k]]} of body {tab.body[a[k]]} against shape "
                    f"{tab.local[b[k]]} of body {tab.body[b[k]]}; -1 = static); supported "
                    f"pairs: {', '.join(supported_pairs())}"
                )
            pair, point, normal, dist = fn(W[sa], tab.size[sa], W[sb], tab.size[sb], self.margin)
            parts.append(self._assemble(sa[pair], sb[pair], point, normal, dist))
        contacts = ContactSet.concatenate(parts)
        # Static geometry is always B.
        flip = contacts.body_a < 0
        if np.any(flip):
            flipped = contacts.select(flip).swapped()
            contacts = ContactSet.concatenate([contacts.select(~flip), flipped])
        return contacts

    def _boxes(self, E: Array) -> ContactSet:
        """:meth:`__call__` for a scene of boxes and planes, in compiled passes.

        The same contacts, in the same order and to the bit, as the array path:
        box corners against the planes, then the box pairs of the grid broad
        phase with their manifolds.
        """
        tab = self.table
        E = np.ascontiguousarray(E)
        posed = self._no_posed
        if self._posed.size:
            sel = self._posed
            posed = np.ascontiguousarray(E[tab.body[sel]] @ tab.pose[sel])
        finite, X, P, lo, hi = boxes._box_frames(
            E, tab.body, tab.pose, self._slot, posed, tab.size, self.margin
        )
        if not finite:
            raise StateError(_NOT_FINITE)
        i, j = grid_pairs(lo, hi)
        return ContactSet(
            *boxes._box_scene_contacts(
                X,
                P,
                tab.size,
                i,
                j,
                tab.body,
                tab.local,
                tab.material,
                tab.mu_table,
                tab.plane_normal,
                tab.plane_offset,
                tab.plane_local,
                tab.plane_material,
                self.margin,
            )
        )

    def _assemble(
        self, sa: IntArray, sb: IntArray, point: Array, normal: Array, dist: Array
    ) -> ContactSet:
        tab = self.table
        return ContactSet(
            point=point,
            normal=normal,
            distance=dist,
            body_a=tab.body[sa],
            body_b=tab.body[sb],
            shape_a=tab.local[sa],
            shape_b=tab.local[sb],
            mu=tab.mu_table[tab.material[sa], tab.material[sb]],
        )

    def _planes(self, W: Array) -> ContactSet:
        tab = self.table
        npl = tab.plane_normal.shape[0]
        dyn = np.flatnonzero(tab.body >= 0)
        if npl == 0 or dyn.size == 0:
            return ContactSet.empty()
        parts = []
        for kind in (*PLANE_FUNCTIONS, MESH):
            shapes = dyn[tab.kind[dyn] == kind]
            if shapes.size == 0:
                continue
            s = np.tile(shapes, npl)
            p = np.repeat(np.arange(npl), shapes.size)
            normal_p, offset_p = tab.plane_normal[p], tab.plane_offset[p]
            if kind == MESH:
                pair, point, normal, dist = hulls.mesh_plane(
                    W[s], tab.hull[s], tab.hulls, normal_p, offset_p, self.margin,
                    self.hull_plane_points,
                )  # fmt: skip
            else:
                pair, point, normal, dist = PLANE_FUNCTIONS[kind](
                    W[s], tab.size[s], normal_p, offset_p, self.margin
                )
            s, p = s[pair], p[pair]
            parts.append(
                ContactSet(
                    point=point,
                    normal=normal,
                    distance=dist,
                    body_a=tab.body[s],
                    body_b=np.full(s.shape, -1, dtype=np.int64),
                    shape_a=tab.local[s],
                    shape_b=tab.plane_local[p],
                    mu=tab.mu_table[tab.material[s], tab.plane_material[p]],
                )
            )
        return ContactSet.concatenate(parts)


_CACHE: list[Collider] = []
_CACHE_SIZE = 8


def collider_for(scene: Scene) -> Collider:
    """The :class:`Collider` of ``scene``, reused across calls for the same scene object."""
    for col in _CACHE:
        if col.scene is scene:
            return col
    col = Collider(scene)
    _CACHE.insert(0, col)
    del _CACHE[_CACHE_SIZE:]
    return col


def collide(scene: Scene, E: Array) -> ContactSet:
    """Contacts of ``scene`` with body transforms ``E`` (nb, 4, 4).

    See the module docstring for the supported pairs and
    :class:`~contactlab.collision.contacts.ContactSet` for the conventions
    (normal from B toward A, signed distance, world B = -1).
    """
    return collider_for(scene)(E)
