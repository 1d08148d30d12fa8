"""Joint friction: implicit joint contact geometry, explicit joint contact rows, the staggered loop.

Used by the contact models ``bisp`` (reduced coordinates, seed 000, Alg. 8)
and ``joint-friction-sp`` (Staggered Projections on the maximal model).  A
joint gets friction by carrying a :class:`JointFriction` in
:attr:`contactlab.scene.JointSpec.friction`.
"""

from contactlab.jointfriction.geometry import KINDS, JointFriction, LocalContacts, local_contacts
from contactlab.jointfriction.rows import JointContactLayout, JointContactRows

__all__ = [
    "KINDS",
    "JointContactLayout",
    "JointContactRows",
    "JointFriction",
    "LocalContacts",
    "local_contacts",
]
