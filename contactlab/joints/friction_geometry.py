"""Implicit joint contact geometry for joint friction (Sueda's notes, §2.11, BISP).

A joint with friction is pictured as a pin in a housing: contact points at
fixed places on a simple shape around the joint, each with a *normal*
direction (a direction the joint constrains) and *tangent* directions (the
directions the joint lets the two bodies slide).  Everything here is in the
**parent's joint frame** (the housing), so the points do not turn with the
joint coordinate — except a prismatic joint's box, which rides on the
child's joint frame like a carriage on its rail.

=========  =============================================  ======================
kind       shape and contacts                             count (defaults)
=========  =============================================  ======================
revolute   cylinder of radius ``r`` and height ``l``      ``2 ends x angles x 2``
           about the axis; at both ends, ``angles``       = 16 (angles = 4)
           points around the rim, each carrying a radial
           ("normal") and an axial ("binormal") contact;
           tangent: the circumferential direction, so the
           rotation about the axis is sliding at radius r
spherical  sphere of radius ``r``: the six points          6
           ``+-r e_i``; normal radial; tangents ``e_k x p``
           for the two axes ``k != i``
prismatic  box of cross-section ``w x w`` and length ``l``  ``8 corners x 2`` = 16
           along the axis: at its 8 corners one contact
           along each transverse direction; tangent: the
           axis
=========  =============================================  ======================

Each joint map declares its geometry (``Joint.friction_contacts``, built from the
functions below); a kind whose joint map declares none cannot carry friction.
Loop-closing joints get the geometry of their kind, like tree joints.  The
normals of a revolute joint span the 5 constrained directions (forces and
the moments normal to the axis), a spherical joint's the 3 forces, a
prismatic joint's the 5 directions other than the slide, so every reaction
the joint can carry is a combination of normal impulses (Sueda's notes,
eq. 2.114).  The radial directions of a revolute or prismatic joint are
``v1, v2`` of Sueda's notes, eq. 2.90 (1 at the smallest ``|a_k|``).

Friction bound: with bilateral normal impulses ``alpha`` the tangent
impulses obey ``|beta_t| <= mu |alpha_c(t)|`` (the box of eq. 2.110).  For a
revolute joint loaded by a force ``F`` normal to its axis along one radial
direction, the least-norm ``alpha`` (eq. 2.114) has ``sum |alpha| = F``, so
the friction torque is at most ``mu F r``; along a direction at angle ``psi``
from the radial directions it is ``mu F r (|cos psi| + |sin psi|)`` (the
four-sided cone of the seed's box constraints).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]


@dataclass(frozen=True)
class JointFriction:
    """Friction of one joint, placed in :attr:`contactlab.scene.JointSpec.friction`.

    Parameters
    ----------
    mu : friction coefficient [-], >= 0.
    radius : pin radius ``r`` [m] (revolute cylinder, spherical ball).
    length : cylinder height / box length ``l`` along the axis [m] (revolute,
        prismatic).
    width : box cross-section side ``w`` [m] (prismatic).
    angles : number of points around each end of a revolute cylinder, >= 3.
    """

    mu: float = 0.6
    radius: float = 0.05
    length: float = 0.1
    width: float = 0.05
    angles: int = 4

    def __post_init__(self) -> None:
        for name in ("mu", "radius", "length", "width"):
            value = getattr(self, name)
            bad = not isinstance(value, (int, float)) or not np.isfinite(value)
            if bad or value < 0 or (name != "mu" and value == 0):
                raise ConfigurationError(
                    f"JointFriction.{name} must be a finite number "
                    f"{'>= 0' if name == 'mu' else '> 0 [m]'}, got {value!r}"
                )
        if isinstance(self.angles, bool) or not isinstance(self.angles, int) or self.angles < 3:
            raise ConfigurationError(
                f"JointFriction.angles must be an integer >= 3, got {self.angles!r}"
            )


@dataclass(frozen=True)
class LocalContacts:
    """Contacts of one joint in its parent joint frame.

    points : (k, 3) contact points [m].
    normals : (k, 3) unit normal directions (constrained).
    tangents : (t, 3) unit tangent directions (free to slide).
    owner : (t,) index of the contact each tangent belongs to.
    group : (t,) the joint motion each tangent measures: tangents of one
        group have equal rows on the joint's motion (``r`` times a rotation
        rate, or the slide rate), see :mod:`contactlab.jointfriction.joint_contact_rows`.
    on_child : the geometry rides on the child's joint frame (a prismatic
        joint's carriage) instead of the parent's.
    rotational : the joint's motion is rotation (its own generalized force
        is a torque), else translation.
    """

    points: Array
    normals: Array
    tangents: Array
    owner: NDArray[np.int64]
    group: NDArray[np.int64]
    on_child: bool = False
    rotational: bool = True

    @property
    def k(self) -> int:
        return int(self.points.shape[0])


def radial_basis(axis: Array) -> tuple[Array, Array]:
    """Unit ``v1, v2`` normal to ``axis`` and to each other (Sueda's notes, eq. 2.90)."""
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    v1 = np.zeros(3)
    v1[int(np.argmin(np.abs(a)))] = 1.0
    v2 = np.cross(a, v1)
    v2 /= np.linalg.norm(v2)
    v1 = np.cross(v2, a)
    return v1 / np.linalg.norm(v1), v2


def revolute_contacts(fr: JointFriction, axis: Array) -> LocalContacts:
    """Cylinder rim contacts: per end and angle a radial and an axial contact."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    v1, v2 = radial_basis(a)
    th = 2.0 * np.pi * np.arange(fr.angles) / fr.angles
    rad = np.cos(th)[:, None] * v1 + np.sin(th)[:, None] * v2
    tan = -np.sin(th)[:, None] * v1 + np.cos(th)[:, None] * v2
    ends = np.array([-0.5, 0.5]) * fr.length
    pts = (fr.radius * rad[None, :, :] + ends[:, None, None] * a).reshape(-1, 3)
    tan2 = np.tile(tan, (2, 1))
    normals = np.concatenate([np.tile(rad, (2, 1)), np.tile(a, (pts.shape[0], 1))])
    points = np.concatenate([pts, pts])
    k = points.shape[0]
    return LocalContacts(
        points, normals, np.concatenate([tan2, tan2]), np.arange(k), np.zeros(k, np.int64)
    )


def spherical_contacts(fr: JointFriction) -> LocalContacts:
    """Six points ``+-r e_i`` with radial normals and two tangents each.

    The tangents at ``p = +-e_i`` are ``e_k x p`` for the two axes ``k != i``:
    the sliding direction of a rotation about ``e_k``, whose rate they
    measure (times ``r``), so they form group ``k``.
    """
    eye = np.eye(3)
    normals = np.concatenate([eye, -eye])
    points = fr.radius * normals
    axes = np.array([[k for k in range(3) if k != i % 3] for i in range(6)])  # (6, 2)
    tangents = np.cross(eye[axes], normals[:, None, :]).reshape(-1, 3)
    return LocalContacts(
        points, normals, tangents, np.repeat(np.arange(6), 2), axes.reshape(-1).astype(np.int64)
    )


def prismatic_contacts(fr: JointFriction, axis: Array) -> LocalContacts:
    """Box corners, each with a contact along both transverse directions."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    v1, v2 = radial_basis(a)
    s = np.array([-0.5, 0.5])
    c1, c2, c3 = np.meshgrid(s * fr.width, s * fr.width, s * fr.length, indexing="ij")
    corners = c1.reshape(-1, 1) * v1 + c2.reshape(-1, 1) * v2 + c3.reshape(-1, 1) * a
    points = np.concatenate([corners, corners])
    normals = np.concatenate([np.tile(v1, (8, 1)), np.tile(v2, (8, 1))])
    return LocalContacts(
        points,
        normals,
        np.tile(a, (16, 1)),
        np.arange(16),
        np.zeros(16, np.int64),
        on_child=True,
        rotational=False,
    )
