"""Joint maps of the reduced formulation: ``Q(q)``, ``S(q)`` and ``Sdot(q, qdot)``.

A joint relates its frame to the parent's joint frame by ``Q(q)`` (Sueda's notes,
eq. 2.22).  Its Jacobian ``S`` holds, column by column, the body twist of
``Q`` per unit rate of each coordinate (Sueda's notes, eq. 2.29),

.. math::

    [S_k] = Q^{-1} \\frac{\\partial Q}{\\partial q_k},

so the relative twist of the joint, in the joint frame, is ``S qdot``.
``Sdot`` is its time derivative along ``qdot``.

A subclass declares only what differs.  Most joints are products of
exponentials of fixed screws with scalar functions of ``q``
(:class:`ProductOfExponentialsJoint`): revolute, prismatic, planar,
translational, universal, Euler-angle spherical, and the spline joints
(:mod:`contactlab.joints.spline`).  They declare their screws and the
functions; the base derives ``Q``, ``S`` and ``Sdot`` with one backward
recursion (the recursion of REDMAX supplement, Alg. 4 and 5, written once).

Time stepping (:meth:`Joint.advance`, :meth:`Joint.evaluate_step`): a step
holds the joint twist ``psi = S(q) qdot`` constant and moves the joint by
``Q <- Q exp(h [psi])``.  When ``Q(q)`` sweeps a coset of a subgroup of SE(3)
(free, spherical in either chart, planar with rotation, any joint whose
``S(q)`` spans one fixed Lie subalgebra) that motion stays on the joint and is
re-charted exactly; the step's dynamics then treat ``psi`` as the velocity
(quasi-velocities), so the chart's own ``Sdot`` drops out of the bias
acceleration.  Other joints keep ``q <- q + h qdot`` with their ``Sdot``;
composites of them advance factor by factor.  See docs/reduced-integration.md.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints import row_geometry
from contactlab.joints.friction_geometry import (
    JointFriction,
    LocalContacts,
    prismatic_contacts,
    revolute_contacts,
)
from contactlab.joints.row_geometry import Geometry

Array = NDArray[np.float64]

E_X = np.array([1.0, 0.0, 0.0])
E_Y = np.array([0.0, 1.0, 0.0])
E_Z = np.array([0.0, 0.0, 1.0])


class Joint(ABC):
    """A joint map with ``ndof`` coordinates.

    Subclasses implement :meth:`evaluate` (or the three of :meth:`Q`,
    :meth:`S`, :meth:`Sdot`); the others are derived.
    """

    ndof: int = 0

    def Q(self, q: ArrayLike) -> Array:
        """(4, 4) joint transform, child joint frame in the parent's joint frame."""
        q = np.asarray(q, dtype=float)
        return self.evaluate(q, np.zeros_like(q))[0]

    def S(self, q: ArrayLike) -> Array:
        """(6, ndof) joint Jacobian in the joint frame (Sueda's notes, eq. 2.29)."""
        q = np.asarray(q, dtype=float)
        return self.evaluate(q, np.zeros_like(q))[1]

    def Sdot(self, q: ArrayLike, qdot: ArrayLike) -> Array:
        """(6, ndof) time derivative of :meth:`S` along ``qdot``."""
        return self.evaluate(np.asarray(q, dtype=float), np.asarray(qdot, dtype=float))[2]

    @abstractmethod
    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        """``(Q, S, Sdot)`` at once, sharing the work."""

    def reparameterize(self, q: Array, qdot: Array) -> tuple[Array, Array] | None:
        """A better chart for ``(q, qdot)`` describing the same motion, or ``None``.

        Only joints with singular charts (exponential coordinates) override this.
        """
        return None

    def chart_distance(self, q: Array) -> float:
        """How far ``q`` is from needing :meth:`reparameterize` (negative past it) [rad]."""
        return np.inf

    def sample(self, rng: np.random.Generator) -> Array:
        """A random configuration in the joint's useful range (tests, benchmarks)."""
        return rng.uniform(-1.0, 1.0, self.ndof)

    # -- the same joint in maximal coordinates and with friction ---------------
    def constraint_geometry(self) -> Geometry | None:
        """The joint's rows in maximal coordinates, in its joint frame, or ``None``.

        Rows (:mod:`contactlab.joints.row_geometry`) whose zero set is exactly the set of
        frames ``J_a^{-1} J_b = Q(q)``; the maximal formulation holds the joint with
        them and the reduced one closes loops with them.  ``None``: no such rows
        (the joint has no maximal equivalent).
        """
        return None

    def friction_contacts(self, friction: JointFriction) -> LocalContacts | None:
        """The joint's contact geometry for joint friction (Sueda's notes §2.11), or ``None``.

        See :mod:`contactlab.joints.friction_geometry`; ``None``: the joint has none.
        """
        return None

    # -- time stepping -------------------------------------------------------
    @cached_property
    def subalgebra(self) -> Array | None:
        """(6, ndof) orthonormal basis of the Lie subalgebra ``S(q)`` spans, or ``None``.

        Not ``None`` when ``S(q)`` has full column rank, spans the same subspace at
        every configuration and that subspace is closed under the bracket ``ad``:
        then ``Q(q)`` sweeps a coset of a subgroup and ``Q exp(h [S qdot])`` is again
        a joint configuration.  Checked at a few sampled configurations (fixed seed).
        """
        return _subalgebra(self)

    @cached_property
    def constant_jacobian(self) -> bool:
        """``S`` is the same at sampled configurations (then ``q + h qdot`` is exact)."""
        rng = np.random.default_rng(12345)
        S0 = self.S(self.sample(rng))
        return all(
            np.allclose(self.S(self.sample(rng)), S0, rtol=0.0, atol=1e-12) for _ in range(2)
        )

    def evaluate_step(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        """``(Q, S, Sdot)`` with ``Sdot`` along the motion :meth:`advance` realizes.

        For a subgroup joint the step's velocity is the joint twist ``S qdot``,
        held constant over the step, so this ``Sdot`` is zero; otherwise it is
        :meth:`evaluate`'s.
        """
        Q, S, Sdot = self.evaluate(q, qdot)
        if self.subalgebra is not None:
            Sdot = np.zeros_like(Sdot)
        return Q, S, Sdot

    def advance(self, q: Array, qdot: Array, h: float) -> tuple[Array, Array]:
        """Coordinates and velocities after a step of ``h`` [s] at velocity ``qdot``.

        Subgroup joints: ``Q(q+) = Q(q) exp(h [S(q) qdot])`` (re-charted by
        :meth:`chart`) and ``S(q+) qdot+ = S(q) qdot`` (the joint twist is kept).
        Other joints: ``q + h qdot`` and ``qdot``.
        """
        if self.subalgebra is None or self.ndof == 0 or self.constant_jacobian:
            return q + h * qdot, qdot
        Q, S, _ = self.evaluate(q, np.zeros_like(q))
        psi = S @ qdot
        q_new = self.chart(Q @ se3.exp_se3(h * psi), q + h * qdot)
        S_new = self.S(q_new)
        if self.ndof == 6:
            return q_new, np.asarray(np.linalg.solve(S_new, psi), dtype=float)
        # psi lies in the subalgebra S_new spans: least squares is exact
        return q_new, np.asarray(np.linalg.lstsq(S_new, psi, rcond=None)[0], dtype=float)

    def chart(self, target: Array, guess: Array) -> Array:
        """Coordinates ``q`` near ``guess`` with ``Q(q) = target`` (Newton on ``log``).

        The residual ``r = log(Q(q)^{-1} target)`` changes by ``-S(q) dq`` to first
        order, so ``q <- q + S^+ r`` converges quadratically from a guess
        ``O(h^2)`` away.  For a joint without a subalgebra it returns the
        least-squares nearest configuration.
        """
        q = np.array(guess, dtype=float)
        for _ in range(CHART_NEWTON_ITERATIONS):
            Q, S, _ = self.evaluate(q, np.zeros_like(q))
            r = se3.log_se3(se3.inverse(Q) @ target)
            if np.max(np.abs(r)) < CHART_TOLERANCE * (1.0 + np.max(np.abs(target[:3, 3]))):
                break
            q = q + np.linalg.lstsq(S, r, rcond=None)[0]
        return q


#: Newton iterations of :meth:`Joint.chart` (2 suffice from a guess O(h^2) away)
CHART_NEWTON_ITERATIONS = 8
#: residual [rad or m, relative to 1 + |translation|] at which :meth:`Joint.chart` stops
CHART_TOLERANCE = 1e-14
#: relative tolerance of the numerical subalgebra test of :attr:`Joint.subalgebra`
SUBALGEBRA_TOLERANCE = 1e-8


def _subalgebra(joint: Joint) -> Array | None:
    n = joint.ndof
    if n == 0:
        return np.zeros((6, 0))
    rng = np.random.default_rng(12345)
    Ss = [joint.S(joint.sample(rng)) for _ in range(3)]
    U, s, _ = np.linalg.svd(Ss[0])
    if s[-1] <= SUBALGEBRA_TOLERANCE * s[0]:
        return None
    B = U[:, :n]
    P = np.eye(6) - B @ B.T
    for S in Ss[1:]:
        if np.linalg.norm(P @ S) > SUBALGEBRA_TOLERANCE * np.linalg.norm(S):
            return None
    brackets = se3.ad(B.T) @ B  # (n, 6, n): ad(b_i) b_j
    if np.linalg.norm(P @ brackets) > SUBALGEBRA_TOLERANCE * np.sqrt(n):
        return None
    return B


class FixedJoint(Joint):
    """No freedom: ``Q = I``, ``S`` is (6, 0) (Sueda's notes §2.4.1)."""

    ndof = 0

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        return np.eye(4), np.zeros((6, 0)), np.zeros((6, 0))

    def constraint_geometry(self) -> Geometry:
        """Origins coincide, frames aligned (6 rows)."""
        return row_geometry.joint_geometry(row_geometry.ORIGIN, row_geometry.lock())


class ProductOfExponentialsJoint(Joint):
    """``Q(q) = P(q) exp([xi_1] theta_1(q)) ... exp([xi_K] theta_K(q))``.

    ``P`` is a prefix transform that is piecewise constant in ``q`` (a spline
    joint's first control frame), the ``xi_k`` are fixed twists and the
    ``theta_k`` scalar functions.  With ``A_k = Ad(exp(-[xi_k] theta_k))`` and
    ``T_k = A_K ... A_{k+1}``,

    .. math::

        S = \\sum_k T_k \\xi_k \\, \\partial\\theta_k/\\partial q, \\qquad
        \\dot A_k = -\\mathrm{ad}(\\xi_k) A_k \\dot\\theta_k ,

    which is REDMAX supplement, Alg. 4 and 5 (S and its Hessian contracted with
    ``qdot``) for any number of factors.
    """

    @abstractmethod
    def factors(self, q: Array) -> tuple[Array, Array, Array, Array, Array]:
        """``(P (4,4), xi (K,6), theta (K,), dtheta (K,n), d2theta (K,n,n))``."""

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        P, xi, theta, dtheta, d2theta = self.factors(q)
        X = se3.exp_se3(xi * theta[:, None])
        Q = P.copy()
        for Xk in X:
            Q = Q @ Xk
        A = se3.adjoint(se3.inverse(X))
        adxi = se3.ad(xi)
        thetadot = dtheta @ qdot
        dtheta_dt = d2theta @ qdot
        n = self.ndof
        S = np.zeros((6, n))
        Sdot = np.zeros((6, n))
        T = np.eye(6)
        Tdot = np.zeros((6, 6))
        for k in range(len(xi) - 1, -1, -1):
            col, coldot = T @ xi[k], Tdot @ xi[k]
            S += np.outer(col, dtheta[k])
            Sdot += np.outer(coldot, dtheta[k]) + np.outer(col, dtheta_dt[k])
            Adot = -(adxi[k] @ A[k]) * thetadot[k]
            Tdot = Tdot @ A[k] + T @ Adot
            T = T @ A[k]
        return Q, S, Sdot


class _LinearScrewJoint(ProductOfExponentialsJoint):
    """``theta = q``: one fixed screw per coordinate."""

    def __init__(self, screws: Array) -> None:
        self.screws = np.asarray(screws, dtype=float).reshape(-1, 6)
        self.ndof = len(self.screws)
        self.screws.setflags(write=False)

    def factors(self, q: Array) -> tuple[Array, Array, Array, Array, Array]:
        n = self.ndof
        return np.eye(4), self.screws, q, np.eye(n), np.zeros((n, n, n))


class RevoluteJoint(_LinearScrewJoint):
    """Rotation about a unit ``axis`` of the joint frame (default z); ``S = (a, 0)``.

    Sueda's notes, eq. 2.41 (the transcription of REDMAX supplement, eq. 30, prints a
    spurious identity block; ``S`` is the 6-vector ``(a, 0)``).
    """

    def __init__(self, axis: ArrayLike | None = None) -> None:
        self.axis = se3.unit_axis(axis, E_Z, "revolute axis")
        super().__init__(np.concatenate([self.axis, np.zeros(3)]))

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        Q = se3.make_transform(se3.exp_so3(self.axis * q[0]))
        return Q, self.screws.T.copy(), np.zeros((6, 1))

    def sample(self, rng: np.random.Generator) -> Array:
        return rng.uniform(-np.pi, np.pi, 1)

    def constraint_geometry(self) -> Geometry:
        """Origins coincide, axes aligned (5 rows)."""
        return row_geometry.joint_geometry(row_geometry.ORIGIN, row_geometry.align(self.axis))

    def friction_contacts(self, friction: JointFriction) -> LocalContacts:
        """Cylinder rim contacts about the axis."""
        return revolute_contacts(friction, self.axis)


class PrismaticJoint(_LinearScrewJoint):
    """Translation along a unit ``axis`` (default x); ``S = (0, a)`` (Sueda's notes, eq. 2.24)."""

    def __init__(self, axis: ArrayLike | None = None) -> None:
        self.axis = se3.unit_axis(axis, E_X, "prismatic axis")
        super().__init__(np.concatenate([np.zeros(3), self.axis]))

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        Q = se3.make_transform(None, self.axis * q[0])
        return Q, self.screws.T.copy(), np.zeros((6, 1))

    def constraint_geometry(self) -> Geometry:
        """No rotation, no offset normal to the axis (5 rows)."""
        return row_geometry.joint_geometry(
            np.array(row_geometry.basis(self.axis)), row_geometry.lock()
        )

    def friction_contacts(self, friction: JointFriction) -> LocalContacts:
        """Box corners riding on the child's joint frame."""
        return prismatic_contacts(friction, self.axis)


class PlanarJoint(_LinearScrewJoint):
    """Translation in the plane normal to ``axis`` (default z, the x-y plane; Sueda's notes (2.25)).

    The in-plane directions are the joint frame's x and y for the default
    normal, otherwise an orthonormal pair completing the normal.
    """

    def __init__(self, axis: ArrayLike | None = None) -> None:
        normal = se3.unit_axis(axis, E_Z, "planar joint normal")
        if np.allclose(normal, E_Z):
            u, v = E_X, E_Y
        else:
            u = np.cross(normal, E_X if abs(normal[0]) < 0.9 else E_Y)
            u /= np.linalg.norm(u)
            v = np.cross(normal, u)
        self.normal = normal
        zero = np.zeros(3)
        super().__init__(np.array([np.concatenate([zero, u]), np.concatenate([zero, v])]))

    def constraint_geometry(self) -> Geometry:
        """No offset along the normal, no rotation (4 rows)."""
        return row_geometry.joint_geometry(self.normal[None], row_geometry.lock())


class TranslationalJoint(_LinearScrewJoint):
    """Free translation, no rotation: ``Q = [[I, q], [0, 1]]``, ``S = (0; I)`` (eq. 2.27–2.28)."""

    def __init__(self) -> None:
        super().__init__(np.hstack([np.zeros((3, 3)), np.eye(3)]))

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        return se3.make_transform(None, q), self.screws.T.copy(), np.zeros((6, 3))

    def advance(self, q: Array, qdot: Array, h: float) -> tuple[Array, Array]:
        return q + h * qdot, qdot

    def chart(self, target: Array, guess: Array) -> Array:
        return np.array(target[:3, 3], dtype=float)

    def constraint_geometry(self) -> Geometry:
        """No rotation (3 rows)."""
        return row_geometry.joint_geometry(np.zeros((0, 3)), row_geometry.lock())


class RotationSequenceJoint(_LinearScrewJoint):
    """Successive rotations about fixed axes: ``R = exp([a_1] q_1) ... exp([a_n] q_n)``.

    The universal joint is the sequence (x, y) (Sueda's notes, eq. 2.37–2.40) and
    the Euler-angle spherical joint the sequence (x, z, x) (eq. 2.31–2.35).
    """

    def __init__(self, axes: Sequence[ArrayLike]) -> None:
        self.axes = np.array([se3.unit_axis(a, E_Z, "rotation axis") for a in axes])
        super().__init__(np.hstack([self.axes, np.zeros_like(self.axes)]))

    def sample(self, rng: np.random.Generator) -> Array:
        return rng.uniform(-np.pi, np.pi, self.ndof)

    def constraint_geometry(self) -> Geometry | None:
        """Origins coincide; two axes also keep ``(R_a a_1) . (R_b a_2) = a_1 . a_2``.

        Three axes (an Euler-angle spherical joint) leave the rotation free (3 rows),
        two (a universal joint) remove the twist about ``a_1 x a_2`` (4 rows); one
        axis is a revolute joint (5 rows).
        """
        if self.ndof == 1:
            return row_geometry.joint_geometry(
                row_geometry.ORIGIN, row_geometry.align(self.axes[0])
            )
        if self.ndof == 2:
            a1, a2 = self.axes
            if abs(float(a1 @ a2)) > 1.0 - 1e-9:
                raise ConfigurationError("universal joint axes must not be parallel")
            rot = (np.array([[a1, a1]]), np.array([[a2, a2]]), np.array([[1.0, 0.0]]))
            return row_geometry.joint_geometry(row_geometry.ORIGIN, rot, np.array([float(a1 @ a2)]))
        if self.ndof == 3 and np.linalg.matrix_rank(self.axes[[0, 1]]) == 2:
            if np.linalg.matrix_rank(self.axes[[1, 2]]) == 2:
                return row_geometry.joint_geometry(row_geometry.ORIGIN, None)
        return None


def universal_joint(axes: Sequence[ArrayLike] | None = None) -> RotationSequenceJoint:
    """Universal joint: bending about x then y, no twist about z (Sueda's notes §2.4.6)."""
    return RotationSequenceJoint(axes if axes is not None else (E_X, E_Y))


def spherical_euler_joint(sequence: str = "xzx") -> RotationSequenceJoint:
    """Spherical joint in Euler angles, XZX by default (Sueda's notes §2.4.5)."""
    basis = {"x": E_X, "y": E_Y, "z": E_Z}
    if len(sequence) != 3 or any(c not in basis for c in sequence.lower()):
        raise ConfigurationError(
            f"Euler sequence must be three letters from 'xyz', got {sequence!r}"
        )
    return RotationSequenceJoint([basis[c] for c in sequence.lower()])


class CompositeJoint(Joint):
    """Two joints in series, ``Q = Q_1 Q_2`` (Sueda's notes §2.4.10, eq. 2.51–2.55).

    .. math::

        S = (\\mathrm{Ad}(Q_2^{-1}) S_1 \\;\\; S_2), \\quad
        \\dot S = (-\\mathrm{ad}(S_2 \\dot q_2) \\mathrm{Ad}(Q_2^{-1}) S_1
                  + \\mathrm{Ad}(Q_2^{-1}) \\dot S_1 \\;\\; \\dot S_2).

    Composites chain: ``CompositeJoint(a, CompositeJoint(b, c))``.
    """

    def __init__(self, first: Joint, second: Joint) -> None:
        self.first, self.second = first, second
        self.ndof = first.ndof + second.ndof

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        n1 = self.first.ndof
        return self._compose(
            self.first.evaluate(q[:n1], qdot[:n1]), self.second.evaluate(q[n1:], qdot[n1:]), qdot
        )

    def _compose(
        self,
        first: tuple[Array, Array, Array],
        second: tuple[Array, Array, Array],
        qdot: Array,
    ) -> tuple[Array, Array, Array]:
        (Q1, S1, S1dot), (Q2, S2, S2dot) = first, second
        A = se3.adjoint(se3.inverse(Q2))
        AS1 = A @ S1
        S = np.hstack([AS1, S2])
        Sdot = np.hstack([-se3.ad(S2 @ qdot[self.first.ndof :]) @ AS1 + A @ S1dot, S2dot])
        return Q1 @ Q2, S, Sdot

    def evaluate_step(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        """A subgroup composite moves as a whole (``Sdot = 0``); otherwise factor by factor.

        Factor by factor, each factor's twist is what its own step holds
        constant, so its ``Sdot`` is its own :meth:`Joint.evaluate_step`'s; the
        term ``-ad(S_2 qdot_2) Ad(Q_2^{-1}) S_1`` (the relative motion of the
        factors, eq. 2.55) stays.
        """
        if self.subalgebra is not None:
            return super().evaluate_step(q, qdot)
        n1 = self.first.ndof
        return self._compose(
            self.first.evaluate_step(q[:n1], qdot[:n1]),
            self.second.evaluate_step(q[n1:], qdot[n1:]),
            qdot,
        )

    def advance(self, q: Array, qdot: Array, h: float) -> tuple[Array, Array]:
        """As a whole on a subgroup (a free joint in either order); else each factor in turn.

        Factor by factor, ``Q_1 exp(h [psi_1]) Q_2 exp(h [psi_2]) =
        Q exp(h [Ad(Q_2^{-1}) psi_1]) exp(h [psi_2])``, within
        ``h^2/2 |ad(Ad(Q_2^{-1}) psi_1) psi_2|`` of ``Q exp(h [S qdot])``.
        """
        if self.subalgebra is not None:
            return super().advance(q, qdot, h)
        n1 = self.first.ndof
        q1, qd1 = self.first.advance(q[:n1], qdot[:n1], h)
        q2, qd2 = self.second.advance(q[n1:], qdot[n1:], h)
        return np.concatenate([q1, q2]), np.concatenate([qd1, qd2])

    def chart(self, target: Array, guess: Array) -> Array:
        """Closed form for a rotation about the origin and a translation (free joints).

        Rotation first, ``Q = [[R, R q_2], [0, 1]]``; translation first,
        ``Q = [[R, q_1], [0, 1]]``; any other composite by Newton's method.
        """
        n1 = self.first.ndof
        R, t = target[:3, :3], target[:3, 3]
        if isinstance(self.second, TranslationalJoint) and _rotates_about_origin(self.first):
            q1 = self.first.chart(se3.make_transform(R), guess[:n1])
            return np.concatenate([q1, R.T @ t])
        if isinstance(self.first, TranslationalJoint) and _rotates_about_origin(self.second):
            return np.concatenate([t, self.second.chart(se3.make_transform(R), guess[n1:])])
        return super().chart(target, guess)

    def reparameterize(self, q: Array, qdot: Array) -> tuple[Array, Array] | None:
        n1 = self.first.ndof
        parts = [
            (self.first, q[:n1], qdot[:n1]),
            (self.second, q[n1:], qdot[n1:]),
        ]
        out = [joint.reparameterize(qi, qdi) for joint, qi, qdi in parts]
        if out[0] is None and out[1] is None:
            return None
        qs, qds = [], []
        for new, (_, qi, qdi) in zip(out, parts):
            qs.append(qi if new is None else new[0])
            qds.append(qdi if new is None else new[1])
        return np.concatenate(qs), np.concatenate(qds)

    def chart_distance(self, q: Array) -> float:
        n1 = self.first.ndof
        return min(self.first.chart_distance(q[:n1]), self.second.chart_distance(q[n1:]))

    def sample(self, rng: np.random.Generator) -> Array:
        return np.concatenate([self.first.sample(rng), self.second.sample(rng)])

    def constraint_geometry(self) -> Geometry | None:
        """The factors' rows combined when one factor only translates and the other only turns.

        :func:`contactlab.joints.row_geometry.series_geometry` (cylindrical, free, planar
        translation then a turn about the normal, ...); ``None`` otherwise.
        """
        g1, g2 = self.first.constraint_geometry(), self.second.constraint_geometry()
        if g1 is None or g2 is None:
            return None
        rng = np.random.default_rng(12345)
        turns = [self.first.Q(self.first.sample(rng))[:3, :3] for _ in range(3)]
        return row_geometry.series_geometry(g1, g2, turns)


def _rotates_about_origin(joint: Joint) -> bool:
    """All three rotations and no translation: ``Q(q)`` sweeps SO(3) about the joint origin."""
    B = joint.subalgebra
    return B is not None and joint.ndof == 3 and not np.any(np.abs(B[3:]) > 1e-12)
