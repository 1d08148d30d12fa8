"""Collision detection: primitive shapes, grid / sweep-and-prune broad phase, contact sets.

``collide(scene, E)`` returns a :class:`ContactSet` (struct of arrays): the
world point, the unit normal from body B toward body A (A is pushed along
``+normal``), the signed distance (negative = penetration), the two bodies
(``-1`` = world), the shapes and the friction coefficient of every contact
closer than ``scene.contact.margin``.
"""

from contactlab.collision.broadphase import brute_force_pairs, grid_pairs, sweep_and_prune
from contactlab.collision.contacts import ContactSet
from contactlab.collision.detect import Collider, collide, collider_for, supported_pairs
from contactlab.collision.shape_table import WORLD_MATERIAL, ShapeTable

__all__ = [
    "WORLD_MATERIAL",
    "Collider",
    "ContactSet",
    "ShapeTable",
    "brute_force_pairs",
    "collide",
    "collider_for",
    "grid_pairs",
    "supported_pairs",
    "sweep_and_prune",
]
