"""Joint friction: implicit joint contact geometry, explicit joint contact rows, local solves.

The formulations build the step problem's joint-friction maps from these
(:mod:`contactlab.maximal.joint_friction`, :mod:`contactlab.reduced.joint_friction`);
the contact models ``bisp`` and ``joint-friction-sp``
(:mod:`contactlab.models.joint_friction`) solve with them.  A
joint gets friction by carrying a :class:`JointFriction` in
:attr:`contactlab.scene.JointSpec.friction`.
"""

from contactlab.jointfriction.rows import JointContactLayout, JointContactRows, local_contacts
from contactlab.joints.friction_geometry import JointFriction, LocalContacts

__all__ = [
    "JointContactLayout",
    "JointContactRows",
    "JointFriction",
    "LocalContacts",
    "local_contacts",
]
