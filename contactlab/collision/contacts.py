"""The contact set: what collision detection reports, as a struct of arrays.

Convention
----------
Each contact joins body ``A`` (``body_a``) and body ``B`` (``body_b``; ``-1``
is the world, i.e. a static shape).  The unit ``normal`` points **from B
toward A**: an impulse along ``+normal`` pushes A away from B (and B along
``-normal``).  ``distance`` is the signed separation of the two surfaces
along the normal [m], negative when they interpenetrate.  ``point`` is the
midpoint of the two closest surface points (world coordinates), so the same
contact is reported at the same point whichever body is called A.  Whenever a
static shape is involved it is B, so ``body_a`` is always a dynamic body.

A contact is reported while ``distance < margin`` (see
:class:`contactlab.scene.ContactParams`), so resting contacts persist from one
step to the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class ContactSet:
    """Contacts of one configuration (``nc`` of them), one entry per array row.

    Attributes
    ----------
    point : (nc, 3) contact points, world coordinates [m].
    normal : (nc, 3) unit normals from body B toward body A, world coordinates.
    distance : (nc,) signed distances [m]; negative = penetration.
    body_a, body_b : (nc,) body indices; ``body_b = -1`` for the world.
    shape_a, shape_b : (nc,) index of the shape within ``Body.shapes`` of the
        body (or within ``Scene.static_shapes`` when the body is ``-1``).
    mu : (nc,) friction coefficients from ``ContactParams.friction``.
    """

    point: Array
    normal: Array
    distance: Array
    body_a: IntArray
    body_b: IntArray
    shape_a: IntArray
    shape_b: IntArray
    mu: Array

    def __len__(self) -> int:
        return int(self.distance.shape[0])

    @property
    def n_contacts(self) -> int:
        return len(self)

    @classmethod
    def empty(cls) -> ContactSet:
        """A set with no contacts."""
        z3 = np.zeros((0, 3))
        zi = np.zeros(0, dtype=np.int64)
        return cls(z3, z3.copy(), np.zeros(0), zi, zi.copy(), zi.copy(), zi.copy(), np.zeros(0))

    def select(self, index: NDArray[np.bool_] | IntArray) -> ContactSet:
        """The contacts picked by a boolean mask or an index array."""
        return ContactSet(*(getattr(self, f.name)[index] for f in fields(self)))

    def swapped(self) -> ContactSet:
        """The same contacts with A and B exchanged (normals negated)."""
        return ContactSet(
            self.point,
            -self.normal,
            self.distance,
            self.body_b,
            self.body_a,
            self.shape_b,
            self.shape_a,
            self.mu,
        )

    @property
    def penetration(self) -> float:
        """Deepest penetration ``max(0, -min distance)`` [m] (0 with no contacts)."""
        return float(max(0.0, -self.distance.min())) if len(self) else 0.0

    @staticmethod
    def concatenate(parts: Sequence[ContactSet]) -> ContactSet:
        """One set holding the contacts of ``parts`` in order."""
        parts = [p for p in parts if len(p)]
        if not parts:
            return ContactSet.empty()
        if len(parts) == 1:
            return parts[0]
        return ContactSet(
            *(np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(ContactSet))
        )
