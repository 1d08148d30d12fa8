"""Joint friction: implicit joint contact geometry, explicit joint contact rows, local solves.

The formulations build the step problem's joint-friction maps from these
(:mod:`contactlab.maximal.multiplier_reactions`, :mod:`contactlab.reduced.traversal_reactions`);
the contact models ``bisp`` and ``joint-friction-sp``
(:mod:`contactlab.models.bisp`) solve with them.  A
joint gets friction by carrying a :class:`JointFriction` in
:attr:`contactlab.scene.JointSpec.friction`.
"""

from contactlab.jointfriction.joint_contact_rows import (
    JointContactLayout,
    JointContactRows,
    local_contacts,
)
from contactlab.joints.friction_geometry import JointFriction, LocalContacts

__all__ = [
    "JointContactLayout",
    "JointContactRows",
    "JointFriction",
    "LocalContacts",
    "local_contacts",
]
