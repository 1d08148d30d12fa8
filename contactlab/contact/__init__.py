"""Contact rows (Sueda's notes §1.11) and friction-cone data (§1.13, ArtiSynth notes §0.10)."""

from contactlab.contact.friction_cone import (
    box_bounds,
    direction_sum,
    pyramid_directions,
    pyramid_matrix,
    pyramid_rows,
)
from contactlab.contact.rows import contact_rhs, contact_rows, tangent_basis

__all__ = [
    "box_bounds",
    "contact_rhs",
    "contact_rows",
    "direction_sum",
    "pyramid_directions",
    "pyramid_matrix",
    "pyramid_rows",
    "tangent_basis",
]
