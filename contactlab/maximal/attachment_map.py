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
(``master=None``) holds the body still; with a ``trajectory`` it moves the
body along a prescribed path instead (a parametrically controlled component,
§0.21, e.g. a driven platform).  A body may be attached to an attached body (§0.18)
as long as the attachments form no loop; the chain is composed down to its
root, which gives the same reduction as eliminating the attachments one at
a time in topological order.

:class:`~contactlab.attachment.Attachment` is the formulation-neutral description held by
:attr:`contactlab.scene.Scene.attachments`; :class:`AttachmentMap` is its
realisation in maximal coordinates (:class:`contactlab.maximal.MaximalFormulation`),
the reduction ``Phi = P Phi_active`` with the reduced mass ``P^T M P`` (the
mass and fictitious-force adjustments of §0.19 come out of ``P^T`` applied
to each attached body's own momentum and forces).

Parametric control (§0.21).  A body driven along ``trajectory(t)`` (and every
body attached to it) is removed from the unknowns like an attached body; its
velocity over a step is the secant twist ``psi = log(D(t)^-1 D(t+h)) / h`` of
the driving frame ``D``, so ``D(t) exp(h [psi]) = D(t+h)`` exactly.  Every
body's twist is then ``Phi = P Phi_active + q`` with the prescribed column
``q`` (the driven bodies' twists), and the notes' reduced system

.. math::

    M' v_\\alpha = f' - M'_{\\alpha\\rho} v_\\rho + G'^T \\lambda, \\qquad
    G' v_\\alpha = g' - G'_{\\sigma\\rho} v_\\rho

(``M'_{\\alpha\\rho} = P^T M q`` vanishes for rigid attachments, whose mass matrix
stays block diagonal).  The prescribed velocity also shifts the contact and
friction rows (a box on a moving platform slides relative to the platform,
not to the world).  So that every contact model receives it as an ordinary
problem, the step carries it as one extra generalized velocity ``s`` held at
1 by one bilateral row: the unknowns are ``(v_alpha, s)`` and each row ``A``
becomes ``[A P, A q]``.  Eliminating ``s = 1`` gives the system above
exactly; its mass (any positive number) only scales that row's multiplier.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.attachment import Attachment, driving_pose
from contactlab.scene import Scene, check_attachments

Array = NDArray[np.float64]


class AttachmentMap:
    """The null-space reduction ``Phi = P Phi_active (+ q)`` of a scene's attachments.

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
    driver : (nk,) index into ``drivers`` of the trajectory carrying a
        world-rooted body (``-1``: held still or rooted at a body).
    drivers : the driven attachments (one per trajectory).
    offset : (nk, 4, 4) pose of each attached body in its root's frame (in
        its driving frame when driven).
    P : (6 nb, 6 na) sparse map from the active twists to every body's twist.
    """

    def __init__(self, scene: Scene, E: ArrayLike) -> None:
        E = np.asarray(E, dtype=float)
        order = check_attachments(scene)
        nb = scene.n_bodies
        index = {b.name: i for i, b in enumerate(scene.bodies)}
        root: dict[int, int] = {}
        driver: dict[int, int] = {}
        offset: dict[int, Array] = {}
        self.drivers: list[Attachment] = []
        for a in order:  # masters come before the bodies attached to them
            k = index[a.body]
            m = -1 if a.master is None else index[a.master]
            if a.transform is not None:
                T = np.asarray(a.transform, dtype=float)
            elif a.trajectory is not None:
                T = se3.inverse(driving_pose(a, 0.0)) @ E[k]
            else:
                T = E[k] if m < 0 else se3.inverse(E[m]) @ E[k]
            if m >= 0 and m in root:  # attached to an attached body: compose to its root
                root[k], driver[k], offset[k] = root[m], driver[m], offset[m] @ T
            else:
                root[k], driver[k], offset[k] = m, -1, T
            if a.trajectory is not None:
                driver[k] = len(self.drivers)
                self.drivers.append(a)
        self.n_bodies = nb
        self.attached = np.array([index[a.body] for a in order], dtype=np.int64)
        is_attached = np.zeros(nb, dtype=bool)
        is_attached[self.attached] = True
        self.active = np.flatnonzero(~is_attached).astype(np.int64)
        self.root = np.array([root[int(k)] for k in self.attached], dtype=np.int64)
        self.driver = np.array([driver[int(k)] for k in self.attached], dtype=np.int64)
        self.offset = (
            np.array([offset[int(k)] for k in self.attached]).reshape(-1, 4, 4)
            if len(self.attached)
            else np.zeros((0, 4, 4))
        )
        self.P = self._reduction()
        #: the last ``((t, h), drive twists)``: the step asks for them when posing and advancing
        self._last_drive: tuple[tuple[float, float], Array] | None = None

    @property
    def driven(self) -> bool:
        """Whether some bodies follow a trajectory (parametric control, §0.21)."""
        return bool(self.drivers)

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
    def _driving_poses(self, t: float) -> Array:
        """(nd, 4, 4) the driving frames at time ``t`` [s]."""
        return np.array([driving_pose(a, t) for a in self.drivers]).reshape(-1, 4, 4)

    def place(self, E: Array, t: float = 0.0) -> Array:
        """``E`` with every attached body put at its root's pose times its offset (exact).

        Driven bodies are put on their driving frame at time ``t`` [s].
        """
        E = np.array(E, dtype=float)
        if len(self.attached):
            moving = self.root >= 0
            held = ~moving & (self.driver < 0)
            driven = self.driver >= 0
            E[self.attached[held]] = self.offset[held]
            if np.any(driven):
                D = self._driving_poses(t)[self.driver[driven]]
                E[self.attached[driven]] = D @ self.offset[driven]
            E[self.attached[moving]] = E[self.root[moving]] @ self.offset[moving]
        return E

    def drive_twists(self, t: float, h: float) -> Array:
        key = (t, h)
        if self._last_drive is None or self._last_drive[0] != key:
            self._last_drive = (key, self._drive_twists(t, h))
        return self._last_drive[1].copy()

    def _drive_twists(self, t: float, h: float) -> Array:
        """(nb, 6) body twists of the driven bodies over ``[t, t + h]`` (zero elsewhere).

        The secant twist ``log(D(t)^-1 D(t+h)) / h`` of each driving frame,
        carried to the body by ``Ad(T^-1)``; ``h = 0`` gives the central
        difference over ``t -/+ 1e-6`` s (the initial state's twists).
        """
        phi = np.zeros((self.n_bodies, 6))
        driven = self.driver >= 0
        if not np.any(driven):
            return phi
        t0, t1 = (t - 1e-6, t + 1e-6) if h == 0.0 else (t, t + h)
        D0, D1 = self._driving_poses(t0), self._driving_poses(t1)
        psi = se3.log_se3(se3.inverse(D0) @ D1) / (t1 - t0)  # (nd, 6) in the driving frames
        A = se3.adjoint(se3.inverse(self.offset[driven]))
        phi[self.attached[driven]] = (A @ psi[self.driver[driven], :, None])[..., 0]
        return phi

    def expand(self, v_active: ArrayLike, drive: Array | None = None) -> Array:
        """(nb, 6) every body's twist from the active twists (6 na,) (plus ``drive`` (nb, 6))."""
        phi = np.asarray(self.P @ np.asarray(v_active, dtype=float)).reshape(-1, 6)
        return phi if drive is None else phi + drive

    def restrict(self, phi: Array) -> Array:
        """(6 na,) the active bodies' twists of ``phi`` (nb, 6)."""
        return np.asarray(phi, dtype=float)[self.active].reshape(-1)

    # -- the step problem ------------------------------------------------
    def reduce_rows(self, rows: sp.spmatrix, drive: Array | None = None) -> sp.csr_matrix:
        """``rows P`` on the active twists; with ``drive`` (nb, 6) also the column ``rows q``."""
        reduced = sp.csr_matrix(rows @ self.P)
        if drive is None:
            return reduced
        column = sp.csr_matrix(np.asarray(rows @ drive.reshape(-1)).reshape(-1, 1))
        return sp.csr_matrix(sp.hstack([reduced, column]))

    def reduce_mass(self, M: sp.spmatrix) -> sp.csc_matrix:
        """``P^T M P``: the active bodies' masses with their attached bodies' added (§0.19)."""
        return sp.csc_matrix(self.P.T @ M @ self.P)

    def reduce_force(self, f: Array) -> Array:
        """``P^T f``: attached bodies' momenta and forces carried to their roots (§0.19)."""
        return np.asarray(self.P.T @ np.asarray(f, dtype=float))


__all__ = ["AttachmentMap"]
