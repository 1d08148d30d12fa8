"""Forces along a path of points fixed on bodies (springs, muscles), Sueda's notes §1.9.3–1.9.6.

A path is a sequence of points ``x_0 .. x_{n-1}``, each fixed on a body
(local coordinates) or in the world.  A scalar tension ``F(l, ldot)`` along
the polyline of total length ``l = sum_k |x_{k+1} - x_k|`` (Sueda's notes,
eq. 1.57; ArtiSynth notes §0.14) pulls point ``i`` with the world force ``F v_i``,

.. math::

    v_0 = u_0,\\quad v_i = u_i - u_{i-1},\\quad v_{n-1} = -u_{n-2},
    \\qquad u_k = (x_{k+1} - x_k) / l_k .

With ``A_i = d x_i / d delta = R_b Gamma(r_i)`` (Sueda's notes, eq. 1.12) the
stacked generalized force is ``F g`` with ``g = sum_i A_i^T v_i = -dl/d delta``
(eq. 1.60), and ``ldot = -g . phi`` (eq. 1.58).  Differentiating,

.. math::

    H = \\frac{\\partial g}{\\partial \\delta}
      = \\sum_i \\Gamma_i^T [[R_b^T v_i], 0]
        - \\sum_k B_k^T \\frac{I - u_k u_k^T}{l_k} B_k,\\qquad B_k = A_{k+1} - A_k,

    K = -F_l\\, g g^T - F_{\\dot l}\\, g\\, (\\phi^T H) + F H,\\qquad
    D = F_{\\dot l}\\, g g^T,

where the first sum uses ``d(R^T a)/d omega = [R^T a]`` (eq. 1.34) and the
second ``du/dx`` of ArtiSynth notes eq. (0.13).  This generalises the seed's
per-case matrices (eqs. 1.50–1.56, 1.61–1.64, 1.67–1.68), re-derived here
and verified by finite differences in the tests; unlike the seed, ``K`` also
carries the term ``-F_ldot g (phi^T H)`` from the dependence of ``ldot`` on
the configuration, so it is the exact derivative at any velocity.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.forces.base import Array, Force, IntArray, Triplets, as_point, body_indices
from contactlab.forces.pairs import PairKinematics, pair_kinematics
from contactlab.scene import Scene

PathPoint = tuple[str | None, Array]


def as_path(points: Sequence[tuple[str | None, ArrayLike]], what: str) -> tuple[PathPoint, ...]:
    """Validate ``((body name or None, (3,) point), ...)`` with at least two points."""
    out = []
    for k, item in enumerate(points):
        try:
            name, x = item
        except (TypeError, ValueError) as err:
            raise ConfigurationError(
                f"{what}: path entry {k} must be (body name or None, 3-vector), got {item!r}"
            ) from err
        if name is not None and not isinstance(name, str):
            raise ConfigurationError(f"{what}: path entry {k} body must be a name or None")
        out.append((name, as_point(x, f"{what}: path point {k}")))
    if len(out) < 2:
        raise ConfigurationError(f"{what}: a path needs at least two points, got {len(out)}")
    return tuple(out)


@dataclass(frozen=True)
class PathKinematics:
    """Path points at one state, over the m distinct bodies the path touches.

    x : (n, 3) world positions [m].
    J : (n, 3, 6m) ``A_i = d x_i / d delta`` (zero for world points).
    R : (n, 3, 3) rotations of the points' bodies (identity for world points).
    r : (n, 3) local coordinates [m].
    col : (n,) block (0..m-1) of each point's body, -1 for the world.
    phi : (6m,) stacked twists of the m bodies.
    """

    x: Array
    J: Array
    R: Array
    r: Array
    col: IntArray
    phi: Array

    def generalized(self, w: Array) -> Array:
        """``sum_i A_i^T w_i`` (6m,) for world forces ``w`` (n, 3) on the points."""
        return np.einsum("nam,na->m", self.J, w)

    def rotation_term(self, w: Array) -> Array:
        """``sum_i Gamma_i^T [[R_i^T w_i], 0]`` on each point's body block, (6m, 6m).

        The derivative of ``A_i^T w_i`` with ``w_i`` held fixed (Sueda's notes, eq. 1.34).
        """
        m = self.J.shape[2] // 6
        on = self.col >= 0
        Rtw = np.einsum("nab,na->nb", self.R[on], w[on])
        local = np.einsum("pai,pab->pib", se3.gamma(self.r[on]), se3.bracket3(Rtw))
        blocks = np.zeros((m, 6, 3))
        np.add.at(blocks, self.col[on], local)  # several points may share a body
        blocks = np.concatenate([blocks, np.zeros((m, 6, 3))], axis=2)
        out = np.zeros((m, 6, m, 6))
        out[np.arange(m), :, np.arange(m), :] = blocks
        return out.reshape(6 * m, 6 * m)


def path_kinematics(
    bodies: IntArray, points: Array, E: Array, phi: Array
) -> tuple[IntArray, PathKinematics]:
    """Evaluate the path geometry; returns the distinct bodies (m,) and the kinematics."""
    distinct = np.unique(bodies[bodies >= 0])
    on = bodies >= 0
    col = np.where(on, np.searchsorted(distinct, bodies), -1)
    n, m = len(bodies), len(distinct)
    R = np.broadcast_to(np.eye(3), (n, 3, 3)).copy()
    R[on] = E[bodies[on], :3, :3]
    x = points.copy()
    x[on] = se3.transform_points(E[bodies[on]], points[on])
    J = np.zeros((n, 3, m, 6))
    J[np.flatnonzero(on), :, col[on], :] = R[on] @ se3.gamma(points[on])  # Sueda's notes (1.12)
    return distinct, PathKinematics(
        x=x, J=J.reshape(n, 3, 6 * m), R=R, r=points, col=col, phi=phi[distinct].reshape(-1)
    )


@dataclass(frozen=True)
class _PathState:
    kin: PathKinematics
    u: Array  # (n-1, 3) segment directions
    lk: Array  # (n-1,) segment lengths [m]
    v: Array  # (n, 3) force directions on the points
    g: Array  # (6m,) generalized direction, -dl/d delta
    length: float  # [m]
    rate: float  # [m/s]


def _check_lengths(lk: Array, what: str) -> None:
    if np.any(lk <= 1e-12):
        k = int(np.argmin(lk))
        raise ConfigurationError(
            f"{what}: path segment {k} has zero length, so its direction is undefined; "
            "keep consecutive path points apart"
        )


class PathForce(Force):
    """A scalar tension ``F(l, ldot)`` along a polyline of body points.

    Subclasses provide :meth:`path` (the points), :meth:`tension` and
    :meth:`potential`; this class supplies wrench, ``K`` and ``D``.  Paths of
    two points (springs, straight muscles) are evaluated many at a time with
    :mod:`contactlab.forces.pairs`; longer paths one by one.
    """

    @abstractmethod
    def path(self) -> tuple[PathPoint, ...]:
        """The path points ``((body name or None, local point), ...)``."""

    @abstractmethod
    def tension(self, length: float, rate: float) -> tuple[float, float, float]:
        """``(F, dF/dl, dF/dldot)`` [N, N/m, N s/m] at length ``l`` [m], rate ``ldot`` [m/s]."""

    @abstractmethod
    def potential(self, length: float) -> float:
        """Energy ``V(l)`` [J] with ``dV/dl = F(l, 0)``."""

    # -- one path of any length -------------------------------------------------
    def _path_arrays(self, scene: Scene) -> tuple[IntArray, Array]:
        pts = self.path()
        return body_indices(scene, [p[0] for p in pts]), np.array([p[1] for p in pts])

    def bodies(self, scene: Scene) -> IntArray:
        idx, _ = self._path_arrays(scene)
        return np.unique(idx[idx >= 0])

    def _state(self, scene: Scene, E: Array, phi: Array) -> _PathState:
        idx, pts = self._path_arrays(scene)
        _, kin = path_kinematics(idx, pts, E, phi)
        dx = np.diff(kin.x, axis=0)
        lk = np.linalg.norm(dx, axis=1)
        _check_lengths(lk, type(self).__name__)
        u = dx / lk[:, None]
        v = np.zeros_like(kin.x)
        v[:-1] += u
        v[1:] -= u
        g = kin.generalized(v)
        return _PathState(kin, u, lk, v, g, float(lk.sum()), float(-g @ kin.phi))

    def path_length(self, scene: Scene, E: Array, phi: Array) -> tuple[float, float]:
        """Total length ``l`` [m] and its rate ``ldot`` [m/s] (Sueda's notes, eqs. 1.57–1.58)."""
        st = self._state(scene, E, phi)
        return st.length, st.rate

    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        return float(self.potential(self._state(scene, E, phi).length))

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        st = self._state(scene, E, phi)
        F, _, _ = self.tension(st.length, st.rate)
        return (F * st.g).reshape(-1, 6)

    def local_stiffness(self, scene: Scene, E: Array, phi: Array) -> Array:
        st = self._state(scene, E, phi)
        F, F_l, F_v = self.tension(st.length, st.rate)
        B = st.kin.J[1:] - st.kin.J[:-1]  # (n-1, 3, 6m)
        P = (np.eye(3) - st.u[:, :, None] * st.u[:, None, :]) / st.lk[:, None, None]
        H = st.kin.rotation_term(st.v) - np.einsum("kam,kab,kbn->mn", B, P, B)
        g = st.g
        return -F_l * np.outer(g, g) - F_v * np.outer(g, st.kin.phi @ H) + F * H

    def local_damping(self, scene: Scene, E: Array, phi: Array) -> Array | None:
        st = self._state(scene, E, phi)
        _, _, F_v = self.tension(st.length, st.rate)
        return F_v * np.outer(st.g, st.g)

    # -- many two-point paths at once ---------------------------------------------
    @classmethod
    def batch_tension(
        cls, items: Sequence[PathForce], length: Array, rate: Array
    ) -> tuple[Array, Array, Array]:
        """``(F, dF/dl, dF/dldot)`` (N,) of ``items`` at lengths and rates (N,)."""
        out = np.array([f.tension(a, b) for f, a, b in zip(items, length, rate)], dtype=float)
        out = out.reshape(len(items), 3)
        return out[:, 0], out[:, 1], out[:, 2]

    @staticmethod
    def _split(items: Sequence[Force]) -> tuple[list[PathForce], list[Force]]:
        two: list[PathForce] = []
        rest: list[Force] = []
        for f in items:
            if isinstance(f, PathForce) and len(f.path()) == 2:
                two.append(f)
            else:
                rest.append(f)
        return two, rest

    @classmethod
    def _pair_state(
        cls, items: list[PathForce], scene: Scene, E: Array, phi: Array
    ) -> tuple[PairKinematics, Array, Array, Array, Array, Array, Array]:
        n = len(items)
        paths = [f.path() for f in items]
        b = body_indices(scene, [p[0][0] for p in paths] + [p[1][0] for p in paths])
        r1 = np.array([p[0][1] for p in paths]).reshape(n, 3)
        r2 = np.array([p[1][1] for p in paths]).reshape(n, 3)
        kin = pair_kinematics(b[:n], r1, b[n:], r2, E, phi)
        dx = kin.x2 - kin.x1
        length = np.linalg.norm(dx, axis=1)
        _check_lengths(length, cls.__name__)
        u = dx / length[:, None]
        g = kin.generalized(u, -u)  # (N, 12), Sueda's notes eq. (1.60)
        rate = -np.einsum("ni,ni->n", g, kin.phi)  # eq. (1.48)
        F, F_l, F_v = cls.batch_tension(items, length, rate)
        return kin, u, length, g, F, F_l, F_v

    @classmethod
    def batch_energy(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> float:
        two, rest = cls._split(items)
        total = super().batch_energy(rest, scene, E, phi)
        if two:
            _, _, length, _, _, _, _ = cls._pair_state(two, scene, E, phi)
            total += float(sum(f.potential(a) for f, a in zip(two, length)))
        return total

    @classmethod
    def batch_wrench(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> Array:
        two, rest = cls._split(items)
        out = super().batch_wrench(rest, scene, E, phi)
        if two:
            kin, _, _, g, F, _, _ = cls._pair_state(two, scene, E, phi)
            out += kin.scatter(F[:, None] * g, scene.n_bodies)
        return out

    @classmethod
    def batch_stiffness_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array, symmetric: bool
    ) -> list[Triplets | None]:
        two, rest = cls._split(items)
        out = super().batch_stiffness_triplets(rest, scene, E, phi, symmetric)
        if two:
            kin, u, length, g, F, F_l, F_v = cls._pair_state(two, scene, E, phi)
            B = kin.B
            P = (np.eye(3) - u[:, :, None] * u[:, None, :]) / length[:, None, None]
            H = kin.rotation_term(u, -u) - np.swapaxes(B, 1, 2) @ (P @ B)
            gg = g[:, :, None] * g[:, None, :]
            phiH = (kin.phi[:, None, :] @ H)[:, 0, :]
            K = (
                -F_l[:, None, None] * gg
                - F_v[:, None, None] * g[:, :, None] * phiH[:, None, :]
                + F[:, None, None] * H
            )
            if symmetric:
                K = 0.5 * (K + np.swapaxes(K, 1, 2))
            out.append(kin.triplets(K))
        return out

    @classmethod
    def batch_damping_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array
    ) -> list[Triplets | None]:
        two, rest = cls._split(items)
        out = super().batch_damping_triplets(rest, scene, E, phi)
        if two:
            kin, _, _, g, _, _, F_v = cls._pair_state(two, scene, E, phi)
            out.append(kin.triplets(F_v[:, None, None] * g[:, :, None] * g[:, None, :]))
        return out
