"""Joint contact rows in maximal coordinates ("explicit joint contact constraints").

Contact ``k`` of a joint with point ``s`` and direction ``d`` in the
parent's joint frame ``F_p`` measures the velocity of the child's material
point at ``s`` relative to the parent's, along ``d``.  In body coordinates
(twists angular first) the row is

.. math::

    d_c^T(\\nu_c + \\omega_c \\times s_c) - d_p^T(\\nu_p + \\omega_p \\times s_p)
    = [s_c \\times d_c,\\ d_c]\\, \\phi_c - [s_p \\times d_p,\\ d_p]\\, \\phi_p,

with ``(s_p, d_p) = F_p (s, d)`` in the parent body frame and ``(s_c, d_c) =
E_c^{-1} E_p F_p (s, d)`` in the child's (``E_p = I`` for the world), the
blocks of Sueda's notes, eq. 1.75–1.78.  A prismatic joint's box rides on the
child instead (a carriage on its rail, so the load stays centred on it):
there ``(s, d)`` are in the child's joint frame ``F_c``.  Normal rows give ``N_j``, tangent rows
``T_j``.  Tangents are gathered into *friction groups* (by default): the
tangents that measure the same joint motion — all of a revolute's (``r``
times its rate) or a prismatic's (its slide rate), and for a spherical
joint the four that measure the rotation about one axis (``r`` times that
rate).  Their rows are equal modulo the joint's constrained directions; the
group row is their mean, which by the symmetry of the geometry is a pure
torque about the axis (a pure force along the slide), and the group bound
is the sum of the rows' bounds ``mu |alpha|``.  With ``aggregate=False``
every tangent is its own group (friction forces at the points, with the
net forces their placement implies).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.friction_geometry import JointFriction, LocalContacts
from contactlab.joints.kinds import JOINTS, joint_from_spec
from contactlab.scene import JointSpec, Scene

Array = NDArray[np.float64]
Index = NDArray[np.int64]


def local_contacts(spec: JointSpec) -> LocalContacts:
    """The contacts of a joint with friction, as its joint map declares them.

    ``Joint.friction_contacts`` of the joint built from ``spec`` (its kind, axis
    and params, :func:`contactlab.joints.kinds.make_joint`); one error line
    when the kind declares none.
    """
    assert isinstance(spec.friction, JointFriction)
    found = joint_from_spec(spec).friction_contacts(spec.friction)
    if found is not None:
        return found
    with_geometry = []
    for kind in sorted(JOINTS.names()):
        try:
            probe = JOINTS.get(kind)(None, {})
            if probe.friction_contacts(JointFriction()) is not None:
                with_geometry.append(kind)
        except (ConfigurationError, KeyError, TypeError, ValueError):  # kinds needing params
            continue
    raise ConfigurationError(
        f"joint {spec.name!r} of kind {spec.kind!r} has friction, but its joint map declares "
        f"no joint friction geometry (kinds with one: {', '.join(with_geometry)}); remove "
        "JointSpec.friction from this joint"
    )


@dataclass(frozen=True, eq=False)
class JointContactLayout:
    """The static joint contact data of a scene (joints with a :class:`JointFriction`).

    specs : the joints with friction (tree and loop-closing), in scene order.
    child, parent : (nj,) body indices (``-1`` for the world).
    frame_parent, frame_child : (nj, 4, 4) the joint frames in parent and child.
    on_child : (nj,) geometry carried by the child's joint frame (prismatic:
        the carriage travels with the slider) instead of the parent's.
    rotational : (nj,) the joint's own motion is rotation (else translation).
    points, normals : (K, 3) contacts in the geometry frames; ``joint`` (K,)
        their joint, ``offsets`` (nj + 1,) the contact ranges per joint.
    tangents : (nt, 3); ``owner`` (nt,) the contact of each tangent;
        ``mu`` (nt,) its friction coefficient; ``group`` (nt,) its friction
        group, ``n_groups`` groups.
    """

    specs: tuple[JointSpec, ...]
    child: Index
    parent: Index
    frame_parent: Array
    frame_child: Array
    on_child: NDArray[np.bool_]
    rotational: NDArray[np.bool_]
    points: Array
    normals: Array
    joint: Index
    offsets: Index
    tangents: Array
    owner: Index
    tangent_joint: Index
    mu: Array
    group: Index
    n_groups: int
    n_bodies: int

    @classmethod
    def from_scene(cls, scene: Scene, aggregate: bool = True) -> JointContactLayout:
        """Gather the joints whose ``friction`` is a :class:`JointFriction`."""
        specs = []
        for j in scene.joints:
            if j.friction is None:
                continue
            if not isinstance(j.friction, JointFriction):
                raise ConfigurationError(
                    f"joint {j.name!r}: friction must be a contactlab.jointfriction."
                    f"JointFriction, got {type(j.friction).__name__}"
                )
            specs.append(j)
        local: list[LocalContacts] = [local_contacts(j) for j in specs]
        ks = np.array([lc.k for lc in local], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(ks)]).astype(np.int64)
        cat = lambda xs, w: np.concatenate(xs) if xs else np.zeros((0, w))  # noqa: E731
        icat = lambda xs: np.concatenate(xs).astype(np.int64) if xs else np.zeros(0, np.int64)  # noqa: E731
        owner = [lc.owner + offsets[i] for i, lc in enumerate(local)]
        tj = [np.full(lc.owner.size, i) for i, lc in enumerate(local)]
        mus = [np.full(lc.owner.size, float(j.friction.mu)) for j, lc in zip(specs, local)]
        groups, start = [], 0
        for lc in local:
            n = lc.owner.size
            if aggregate:
                _, g = np.unique(lc.group, return_inverse=True)
                groups.append(start + g)
                start += int(g.max()) + 1 if n else 0
            else:
                groups.append(start + np.arange(n))
                start += n
        return cls(
            specs=tuple(specs),
            child=np.array([scene.body_index(j.child) for j in specs], dtype=np.int64),
            parent=np.array([scene.body_index(j.parent) for j in specs], dtype=np.int64),
            frame_parent=np.array([j.frame_parent for j in specs]).reshape(-1, 4, 4),
            frame_child=np.array([j.frame_child for j in specs]).reshape(-1, 4, 4),
            on_child=np.array([lc.on_child for lc in local], dtype=bool),
            rotational=np.array([lc.rotational for lc in local], dtype=bool),
            points=cat([lc.points for lc in local], 3),
            normals=cat([lc.normals for lc in local], 3),
            joint=np.repeat(np.arange(len(specs)), ks).astype(np.int64),
            offsets=offsets,
            tangents=cat([lc.tangents for lc in local], 3),
            owner=icat(owner),
            tangent_joint=icat(tj),
            mu=np.concatenate(mus) if mus else np.zeros(0),
            group=icat(groups),
            n_groups=start,
            n_bodies=scene.n_bodies,
        )

    @property
    def n_joints(self) -> int:
        return len(self.specs)

    @property
    def n_contacts(self) -> int:
        return int(self.points.shape[0])

    @cached_property
    def ungrouped(self) -> JointContactLayout:
        """The same layout with every tangent its own friction group (``aggregate=False``)."""
        nt = int(self.group.size)
        return replace(self, group=np.arange(nt, dtype=np.int64), n_groups=nt)

    def rows(self, E: Array) -> JointContactRows:
        """The rows at body transforms ``E`` (nb, 4, 4)."""
        return JointContactRows.build(self, np.asarray(E, dtype=float))

    @cached_property
    def group_mean(self) -> sp.csr_matrix:
        """(n_groups, nt) the mean over each group's tangent rows."""
        count = np.bincount(self.group, minlength=self.n_groups).astype(float)
        return sp.csr_matrix(
            (1.0 / count[self.group], (self.group, np.arange(self.group.size))),
            shape=(self.n_groups, self.group.size),
        )

    def group_bounds(self, alpha: Array) -> Array:
        """Friction bound per group, ``sum_t mu_t |alpha_owner(t)|`` [N s] (eq. 2.110 box)."""
        b = self.mu * np.abs(np.asarray(alpha)[self.owner])
        return np.bincount(self.group, weights=b, minlength=self.n_groups).astype(float)


def joint_friction_layout(scene: Scene) -> JointContactLayout | None:
    """The layout of ``scene``'s joints with friction (groups aggregated), ``None`` without any."""
    if all(j.friction is None for j in scene.joints):
        return None
    return JointContactLayout.from_scene(scene, aggregate=True)


@dataclass(frozen=True, eq=False)
class JointContactRows:
    """Joint contact rows at one configuration.

    N : (K, 6 nb) normal rows; T : (nt, 6 nb) tangent rows; Tg : (n_groups,
    6 nb) friction-group rows (means of their tangent rows).
    child_normal : (K, 6) child blocks of ``N`` (child body frame), for the
    local solves of Sueda's notes, eq. 2.114.
    """

    layout: JointContactLayout
    N: sp.csr_matrix
    T: sp.csr_matrix
    Tg: sp.csr_matrix
    child_normal: Array

    @classmethod
    def build(cls, layout: JointContactLayout, E: Array) -> JointContactRows:
        nb = layout.n_bodies
        Ep = np.where(
            (layout.parent >= 0)[:, None, None], E[np.maximum(layout.parent, 0)], np.eye(4)
        )
        Ec = E[layout.child]
        # the geometry frame in child (C) and parent (Fp) body coordinates
        C = se3.inverse(Ec) @ Ep @ layout.frame_parent
        Fp = layout.frame_parent.copy()
        oc = layout.on_child
        C[oc] = layout.frame_child[oc]
        Fp[oc] = se3.inverse(Ep[oc]) @ Ec[oc] @ layout.frame_child[oc]
        Nc, Np = _blocks(C, Fp, layout.joint, layout.points, layout.normals)
        tj = layout.tangent_joint
        Tc, Tp = _blocks(C, Fp, tj, layout.points[layout.owner], layout.tangents)
        N = _assemble(Nc, -Np, layout.child[layout.joint], layout.parent[layout.joint], nb)
        T = _assemble(Tc, -Tp, layout.child[tj], layout.parent[tj], nb)
        return cls(layout, N, T, sp.csr_matrix(layout.group_mean @ T), Nc)

    def ungrouped(self) -> JointContactRows:
        """The same rows with every tangent its own friction group (``aggregate=False``)."""
        if self.layout.n_groups == self.layout.group.size:
            return self
        layout = self.layout.ungrouped
        return JointContactRows(
            layout, self.N, self.T, sp.csr_matrix(layout.group_mean @ self.T), self.child_normal
        )


def _blocks(C: Array, Fp: Array, joint: Index, s: Array, d: Array) -> tuple[Array, Array]:
    """Child and parent 1x6 blocks ``[s x d, d]`` of rows at points ``s`` along ``d``."""
    Cj, Fj = C[joint], Fp[joint]
    sc = np.einsum("kab,kb->ka", Cj[:, :3, :3], s) + Cj[:, :3, 3]
    dc = np.einsum("kab,kb->ka", Cj[:, :3, :3], d)
    sp_ = np.einsum("kab,kb->ka", Fj[:, :3, :3], s) + Fj[:, :3, 3]
    dp = np.einsum("kab,kb->ka", Fj[:, :3, :3], d)
    return np.hstack([np.cross(sc, dc), dc]), np.hstack([np.cross(sp_, dp), dp])


def _assemble(child: Array, parent: Array, ic: Index, ip: Index, nb: int) -> sp.csr_matrix:
    """Rows with a 6-block at body ``ic`` and (where ``ip >= 0``) one at ``ip``, CSR directly."""
    k = child.shape[0]
    if k == 0:
        return sp.csr_matrix((0, 6 * nb))
    has = ip >= 0
    width = np.where(has, 12, 6)
    indptr = np.concatenate([[0], np.cumsum(width)])
    six = np.arange(6)
    cols = np.concatenate([6 * ic[:, None] + six, 6 * np.maximum(ip, 0)[:, None] + six], axis=1)
    vals = np.concatenate([child, parent], axis=1)
    keep = np.concatenate([np.ones((k, 6), bool), np.repeat(has[:, None], 6, axis=1)], axis=1)
    return sp.csr_matrix((vals[keep], cols[keep], indptr), shape=(k, 6 * nb))
