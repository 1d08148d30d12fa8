"""Which contacts a step works with: the scene's collision less the pairs that never collide.

Bodies joined directly by a joint, bodies moving as one through attachments and
the pairs a scene excludes never collide (:func:`excluded_pairs`);
:func:`drop_jointed` removes them from a contact set, and :func:`scene_contacts`
gives the contacts a step of the simulator sees for given body poses (drawings of
a run use it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.scene import Scene, attached_pairs

Array = NDArray[np.float64]
Collide = Callable[[Scene, Array], Any]


def can_collide(scene: Scene) -> bool:
    """Whether ``scene`` has collision geometry with collision switched on.

    A scene may keep shapes for mass properties and drawing but switch
    collision off (``Scene.collision = False``).
    """
    if not scene.collision:
        return False
    return bool(scene.static_shapes) or any(b.shapes for b in scene.bodies)


def collision_function(scene: Scene) -> Collide | None:
    """The collision of ``scene`` (``None`` when it has nothing that can collide)."""
    if not can_collide(scene):
        return None
    from contactlab.collision import collide

    return collide


def jointed_pairs(scene: Scene) -> NDArray[np.int64]:
    """Codes ``a * (nb + 1) + b`` (both orders, world = -1 -> nb) of bodies joined directly.

    Bodies connected by a joint do not collide with each other (their shapes
    usually overlap at the joint by construction), unless the scene sets
    ``Scene.collide_jointed``.  A joint to the world excludes
    nothing: a floating base on a free joint, or a pendulum swinging into the
    ground, must still touch the world's geometry.
    """
    nb = scene.n_bodies
    codes = []
    for joint in scene.joints:
        a, b = scene.body_index(joint.parent), scene.body_index(joint.child)
        if a < 0 or b < 0:
            continue
        codes += [a * (nb + 1) + b, b * (nb + 1) + a]
    return np.unique(np.array(codes, dtype=np.int64))


def excluded_pairs(scene: Scene) -> NDArray[np.int64]:
    """Codes (as :func:`jointed_pairs`) of the pairs that never collide in ``scene``.

    Bodies moving as one through attachments never collide with each other
    (nor, held in the world, with the world's shapes); bodies joined directly
    do not unless ``Scene.collide_jointed``; nor do the pairs of ``Scene.exclude_pairs``.
    """
    nb = scene.n_bodies
    codes = [
        (nb if a < 0 else a) * (nb + 1) + (nb if b < 0 else b)
        for p, q in attached_pairs(scene)
        for a, b in ((p, q), (q, p))
    ]
    for p, q in scene.exclude_pairs:
        a, b = nb if p is None else scene.body_index(p), nb if q is None else scene.body_index(q)
        codes += [a * (nb + 1) + b, b * (nb + 1) + a]
    joined = np.zeros(0, dtype=np.int64) if scene.collide_jointed else jointed_pairs(scene)
    return np.unique(np.concatenate([joined, np.array(codes, dtype=np.int64)]))


def drop_jointed(contacts: Any, scene: Scene, excluded: NDArray[np.int64]) -> Any:
    """``contacts`` without those between bodies joined directly (see :func:`jointed_pairs`)."""
    if contacts is None or excluded.size == 0 or not hasattr(contacts, "select"):
        return contacts
    nb = scene.n_bodies
    a = np.where(contacts.body_a < 0, nb, contacts.body_a)
    b = np.where(contacts.body_b < 0, nb, contacts.body_b)
    keep = ~np.isin(a * (nb + 1) + b, excluded)
    return contacts if keep.all() else contacts.select(keep)


def scene_contacts(scene: Scene, E: Array) -> Any:
    """The contacts a step of ``scene`` with body poses ``E`` (nb, 4, 4) works with.

    The default collision (as :class:`Simulator` uses it) less the pairs that
    never collide (:func:`excluded_pairs`, applied by :func:`drop_jointed`);
    ``None`` for a scene without collision.  Drawings of a run use it, so they
    show the contacts the simulator saw.
    """
    collide = collision_function(scene)
    if collide is None:
        return None
    return drop_jointed(collide(scene, E), scene, excluded_pairs(scene))
