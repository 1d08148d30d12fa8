"""Attachments by null-space reduction of the step problem (ArtiSynth notes §0.17–0.19).

A body ``k`` attached to a master body ``m`` moves rigidly with it: with the
relative transform ``T = E_m^{-1} E_k`` fixed at the start, ``E_k = E_m T`` and
the body twists obey ``phi_k = Ad(T^{-1}) phi_m`` (differentiate ``E_k = E_m T``:
``E_k [phi_k] = E_m [phi_m] T``).  In the notes' form ``v_k + G_ka v_a = 0``
(eq. 0.18) ``G_ka = -Ad(T^{-1})``, constant in body coordinates, so the
velocity term ``g_beta`` of eq. 0.19 vanishes and the fictitious forces of
§0.19 come with the attached body's own gyroscopic term (its momentum turned
with its own rotation), mapped onto the master.

A body attached to an attached body (§0.18) is resolved to the root of its
chain, composing the transforms; a body attached to the world (``None``) is
fixed.  With ``P`` the (6 nb, 6 na) map from the active twists to all twists
(identity blocks for active bodies, ``Ad(T^{-1})`` for attached ones), the
reduced problem is ``M' = P^T M P`` (eq. 0.21: for a point mass ``m`` at ``c``
this adds ``m G^T G``, its parallel-axis inertia), ``f' = P^T f`` (eq. 0.23
with ``g_beta = 0``), and every row ``G``, ``N``, ``T`` becomes ``G P``
(eq. 0.22).  The solved active twists give all twists by ``P``; positions of
attached bodies are set to ``E_root T`` after every step, so they never drift.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.scene import Scene

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


def resolve_roots(scene: Scene, attachments: Mapping[str, str | None]) -> dict[int, int]:
    """``{attached body index: root master index (-1 = world)}``, following chains (§0.18)."""
    index = {b.name: i for i, b in enumerate(scene.bodies)}
    parent: dict[int, int] = {}
    for slave, master in attachments.items():
        for name in (slave, master):
            if name is not None and name not in index:
                raise ConfigurationError(
                    f"attachments: {name!r} is not a body of scene {scene.name!r}; bodies are "
                    f"{', '.join(index)}"
                )
        if slave == master:
            raise ConfigurationError(f"attachments: body {slave!r} is attached to itself")
        parent[index[slave]] = -1 if master is None else index[master]
    roots: dict[int, int] = {}
    for k in parent:
        seen, r = {k}, parent[k]
        while r in parent:
            if r in seen:
                names = ", ".join(scene.bodies[i].name for i in sorted(seen))
                raise ConfigurationError(
                    f"attachments form a cycle ({names}); one body of the cycle must stay free"
                )
            seen.add(r)
            r = parent[r]
        roots[k] = r
    return roots


@dataclass(frozen=True)
class Attachments:
    """The reduction of a scene's attachments at its initial configuration.

    active : (na,) indices of the bodies that keep their own twists.
    roots : (nb,) root master of every body (itself when active, -1 = world).
    relative : (nb, 4, 4) ``T = E_root^{-1} E_k`` (identity for active bodies).
    P : (6 nb, 6 na) sparse map from active twists to all twists.
    """

    active: IntArray
    roots: IntArray
    relative: Array
    P: sp.csr_matrix

    @classmethod
    def build(cls, roots_of: dict[int, int], E: Array) -> Attachments:
        nb = E.shape[0]
        roots = np.arange(nb)
        for k, r in roots_of.items():
            roots[k] = r
        active = np.flatnonzero(roots == np.arange(nb))
        column = {int(a): j for j, a in enumerate(active)}
        relative = np.broadcast_to(np.eye(4), (nb, 4, 4)).copy()
        rows, cols, vals = [], [], []
        six = np.arange(6)
        for k in range(nb):
            r = int(roots[k])
            if r == k:
                block = np.eye(6)
            elif r < 0:  # fixed to the world: no velocity
                relative[k] = E[k]
                continue
            else:
                relative[k] = se3.inverse(E[r]) @ E[k]
                block = se3.adjoint_inverse(relative[k])
            rows.append(np.repeat(6 * k + six, 6))
            cols.append(np.tile(6 * column[r] + six, 6))
            vals.append(block.reshape(-1))
        if not vals:
            raise ConfigurationError(
                "attachments fix every body to the world, which leaves nothing to simulate; "
                "leave at least one body free"
            )
        P = sp.csr_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
            shape=(6 * nb, 6 * active.size),
        )
        return cls(active, roots, relative, P)

    def place(self, E: Array) -> Array:
        """``E`` with every attached body put at ``E_root T`` (world-fixed ones at ``T``)."""
        E = np.array(E, dtype=float)
        attached = np.flatnonzero(self.roots != np.arange(E.shape[0]))
        for k in attached:
            r = int(self.roots[k])
            E[k] = self.relative[k] if r < 0 else E[r] @ self.relative[k]
        return E

    def twists(self, phi_active: Array) -> Array:
        """All body twists (nb, 6) from the active ones (6 na,)."""
        return np.asarray(self.P @ np.asarray(phi_active).reshape(-1)).reshape(-1, 6)
