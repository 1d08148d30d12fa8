"""Attachments: a body whose motion is that of another body (or of the world).

ArtiSynth's notes (§0.17–0.21) attach a component to master components by
a velocity map ``v_k = G_k v_masters`` and remove the attached velocities
from the KKT system by null-space reduction, instead of adding constraint
rows.  Here a component is a rigid body and an attachment is rigid: the
attached body's frame stays at a fixed transform ``T`` in its master's frame,
``E_k = E_m T``, so in body coordinates its twist is

.. math::  \\phi_k = \\mathrm{Ad}(T^{-1})\\, \\phi_m

with a constant map (the notes' ``g_beta = h Gdot v`` term vanishes: no
velocity-dependent correction is needed, §0.17).  An attachment to the world
(``master=None``) holds the body still (the notes' parametric control with
zero velocity, §0.21).  A body may be attached to an attached body (§0.18)
as long as the attachments form no loop; the chain is composed down to its
root, which gives the same reduction as eliminating the attachments one at
a time in topological order.

:class:`Attachment` is the formulation-neutral description held by
:attr:`contactlab.scene.Scene.attachments`; :class:`AttachmentMap` is its
realisation in maximal coordinates (:class:`contactlab.maximal.MaximalFormulation`),
the reduction ``Phi = P Phi_active`` with the reduced mass ``P^T M P`` (the
mass and fictitious-force adjustments of §0.19 come out of ``P^T`` applied
to each attached body's own momentum and forces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError

if TYPE_CHECKING:
    from contactlab.scene import Scene

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Attachment:
    """Body ``body`` attached rigidly to ``master`` (a body name; ``None``: the world).

    Attributes
    ----------
    body : name of the attached body.
    master : name of the body it moves with, or ``None`` to hold it fixed in
        the world.
    transform : (4, 4) pose of ``body``'s frame in ``master``'s frame (in the
        world frame for ``master=None``); ``None`` takes it from the initial
        poses.  A given transform overrides the attached body's initial pose.
    """

    body: str
    master: str | None = None
    transform: ArrayLike | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.body, str) or not self.body:
            raise ConfigurationError(f"Attachment: body must be a body name, got {self.body!r}")
        if self.master is not None and not isinstance(self.master, str):
            raise ConfigurationError(
                f"Attachment of {self.body!r}: master must be a body name or None (the world), "
                f"got {self.master!r}"
            )
        if self.master == self.body:
            raise ConfigurationError(f"Attachment: body {self.body!r} is attached to itself")
        if self.transform is not None:
            T = np.array(self.transform, dtype=float)
            if T.shape != (4, 4) or not np.all(np.isfinite(T)):
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: transform must be a finite 4x4 matrix"
                )
            if not se3.is_rotation(T[:3, :3], tol=1e-9) or not np.allclose(
                T[3], (0.0, 0.0, 0.0, 1.0)
            ):
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: transform is not a rigid transform "
                    "(orthonormal rotation with det +1, last row 0 0 0 1)"
                )
            object.__setattr__(self, "transform", T)


def check_attachments(scene: Scene) -> tuple[Attachment, ...]:
    """Validate ``scene.attachments`` against the scene's bodies; return them in root-first order.

    Raises :class:`ConfigurationError` naming the attachment for an unknown
    body, a body attached twice, or a loop of attachments.
    """
    items = tuple(scene.attachments)
    names = [b.name for b in scene.bodies]
    by_body: dict[str, Attachment] = {}
    for a in items:
        if not isinstance(a, Attachment):
            raise ConfigurationError(
                f"scene {scene.name!r}: attachments must be contactlab.Attachment objects, "
                f"got {type(a).__name__}"
            )
        for role, ref in (("body", a.body), ("master", a.master)):
            if ref is not None and ref not in names:
                raise ConfigurationError(
                    f"attachment of {a.body!r}: {role} {ref!r} is not in scene {scene.name!r}; "
                    f"bodies are {names}"
                )
        if a.body in by_body:
            raise ConfigurationError(
                f"scene {scene.name!r}: body {a.body!r} is attached twice; attach it to one master"
            )
        by_body[a.body] = a
    order: list[Attachment] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2 or name not in by_body:
            return
        if state.get(name) == 1:
            loop = " -> ".join(path[path.index(name) :] + [name])
            raise ConfigurationError(
                f"scene {scene.name!r}: the attachments form a loop ({loop}); attach one of "
                "them to a body outside the loop or to the world"
            )
        state[name] = 1
        master = by_body[name].master
        if master is not None:
            visit(master, path + [name])
        state[name] = 2
        order.append(by_body[name])

    for a in items:
        visit(a.body, [])
    return tuple(order)


def attachment_root(scene: Scene, name: str | None) -> str | None:
    """The unattached body (or ``None``: the world) whose motion ``name`` follows."""
    masters = {a.body: a.master for a in scene.attachments}
    seen = set()
    while name is not None and name in masters and name not in seen:
        seen.add(name)
        name = masters[name]
    return name


def attached_pairs(scene: Scene) -> list[tuple[int, int]]:
    """Index pairs (world = -1) of bodies that move as one through attachments.

    They never collide with each other: their contact rows would vanish
    after the reduction (a body attached to the world does not collide with
    the world's static shapes either).
    """
    if not scene.attachments:
        return []
    groups: dict[str | None, list[int]] = {}
    for i, b in enumerate(scene.bodies):
        groups.setdefault(attachment_root(scene, b.name), []).append(i)
    pairs = []
    for root, members in groups.items():
        if root is None:
            members = [-1, *members]
        pairs += [(a, b) for k, a in enumerate(members) for b in members[k + 1 :]]
    return pairs


class AttachmentMap:
    """The null-space reduction ``Phi = P Phi_active`` of a scene's attachments (maximal coords).

    Parameters
    ----------
    scene : the scene (its attachments are validated here).
    E : (nb, 4, 4) initial body poses; attachments without a transform take
        theirs from these.

    Attributes
    ----------
    active : (na,) indices of the bodies that are not attached.
    attached : (nk,) indices of the attached bodies, root-first.
    root : (nk,) index of each attached body's root (``-1``: the world).
    offset : (nk, 4, 4) pose of each attached body in its root's frame.
    P : (6 nb, 6 na) sparse map from the active twists to every body's twist.
    """

    def __init__(self, scene: Scene, E: ArrayLike) -> None:
        E = np.asarray(E, dtype=float)
        order = check_attachments(scene)
        nb = scene.n_bodies
        index = {b.name: i for i, b in enumerate(scene.bodies)}
        root: dict[int, int] = {}
        offset: dict[int, Array] = {}
        for a in order:  # masters come before the bodies attached to them
            k = index[a.body]
            m = -1 if a.master is None else index[a.master]
            if a.transform is not None:
                T = np.asarray(a.transform, dtype=float)
            else:
                T = E[k] if m < 0 else se3.inverse(E[m]) @ E[k]
            if m >= 0 and m in root:  # attached to an attached body: compose to its root
                root[k], offset[k] = root[m], offset[m] @ T
            else:
                root[k], offset[k] = m, T
        self.n_bodies = nb
        self.attached = np.array([index[a.body] for a in order], dtype=np.int64)
        is_attached = np.zeros(nb, dtype=bool)
        is_attached[self.attached] = True
        self.active = np.flatnonzero(~is_attached).astype(np.int64)
        self.root = np.array([root[int(k)] for k in self.attached], dtype=np.int64)
        self.offset = (
            np.array([offset[int(k)] for k in self.attached]).reshape(-1, 4, 4)
            if len(self.attached)
            else np.zeros((0, 4, 4))
        )
        self.P = self._reduction()

    def _reduction(self) -> sp.csr_matrix:
        nb, na = self.n_bodies, len(self.active)
        column = np.full(nb, -1, dtype=np.int64)
        column[self.active] = np.arange(na)
        # identity blocks of the active bodies
        r_act = (6 * self.active[:, None] + np.arange(6)).ravel()
        c_act = (6 * np.arange(na)[:, None] + np.arange(6)).ravel()
        rows, cols, vals = [r_act], [c_act], [np.ones(r_act.size)]
        moving = self.root >= 0
        if np.any(moving):
            k, r = self.attached[moving], column[self.root[moving]]
            A = se3.adjoint(se3.inverse(self.offset[moving]))  # (nm, 6, 6): phi_k = A phi_root
            ii = 6 * k[:, None, None] + np.arange(6)[None, :, None]
            jj = 6 * r[:, None, None] + np.arange(6)[None, None, :]
            rows.append(np.broadcast_to(ii, A.shape).ravel())
            cols.append(np.broadcast_to(jj, A.shape).ravel())
            vals.append(A.ravel())
        P = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(6 * nb, 6 * na),
        )
        P.eliminate_zeros()
        return P

    # -- states ------------------------------------------------------------
    def place(self, E: Array) -> Array:
        """``E`` with every attached body put at its root's pose times its offset (exact)."""
        E = np.array(E, dtype=float)
        if len(self.attached):
            moving = self.root >= 0
            E[self.attached[~moving]] = self.offset[~moving]
            E[self.attached[moving]] = E[self.root[moving]] @ self.offset[moving]
        return E

    def expand(self, v_active: ArrayLike) -> Array:
        """(nb, 6) every body's twist from the active twists (6 na,)."""
        return np.asarray(self.P @ np.asarray(v_active, dtype=float)).reshape(-1, 6)

    def restrict(self, phi: Array) -> Array:
        """(6 na,) the active bodies' twists of ``phi`` (nb, 6)."""
        return np.asarray(phi, dtype=float)[self.active].reshape(-1)

    # -- the step problem ------------------------------------------------
    def reduce_rows(self, rows: sp.spmatrix) -> sp.csr_matrix:
        """``rows P``: constraint or contact rows on the active twists."""
        return sp.csr_matrix(rows @ self.P)

    def reduce_mass(self, M: sp.spmatrix) -> sp.csc_matrix:
        """``P^T M P``: the active bodies' masses with their attached bodies' added (§0.19)."""
        return sp.csc_matrix(self.P.T @ M @ self.P)

    def reduce_force(self, f: Array) -> Array:
        """``P^T f``: attached bodies' momenta and forces carried to their roots (§0.19)."""
        return np.asarray(self.P.T @ np.asarray(f, dtype=float))


def attachments_of(items: Sequence[Any]) -> tuple[Attachment, ...]:
    """``items`` as a tuple of :class:`Attachment` (accepts ``(body, master)`` pairs)."""
    out = []
    for a in items:
        if isinstance(a, Attachment):
            out.append(a)
        elif isinstance(a, (tuple, list)) and len(a) in (2, 3):
            out.append(Attachment(*a))
        else:
            raise ConfigurationError(
                "an attachment must be Attachment(body, master) or a (body, master) pair, "
                f"got {a!r}"
            )
    return tuple(out)


__all__ = [
    "Attachment",
    "AttachmentMap",
    "attached_pairs",
    "attachment_root",
    "attachments_of",
    "check_attachments",
]
