"""Least squared joint torque for a floating-base robot whose feet hold their ground contacts.

A floating-base robot moves between two standing poses while its feet stay
where they stand.  The unknowns are the knot positions ``q_k`` (base and
joints; the end knots and via-points fixed as in
:class:`~contactlab.optimize.spacetime.SpacetimeProblem`) and, at every knot,
one contact wrench ``lambda_{k,f}`` per foot (body frame of the foot, torque
first).  With the same central differences,

.. math::

    \\tau_k = ID(q_k, \\dot q_k, \\ddot q_k; \\lambda_k), \\qquad
    \\min \\; h \\sum_k w_k \\|S \\tau_k\\|^2

subject to, at every knot, the base being unactuated, ``B tau_k = 0`` (six
rows: the contact wrenches carry the base), and at every free knot each foot
keeping its pose, ``p_f(q_k) = p_f(q_0)`` and
``vee(skew(R_f(q_0)^T R_f(q_k))) = 0``.  ``S`` selects the joint torques.
Feet are equality constraints (a welded contact): no unilateral or friction
condition is imposed.

The solver (:func:`solve`) is a sequential quadratic programming method
(Gauss-Newton far from the solution, the exact Hessian of the Lagrangian near it) with
the exact derivatives: ``d tau/d q``, ``d tau/d qdot`` and ``M`` from
:func:`contactlab.reduced.derivatives.inverse_dynamics_derivatives` with the
contact wrenches held in the foot frames, ``d tau / d lambda`` by linearity,
and the foot constraints' Jacobians from the body Jacobian
(``d p/dq = R J_nu``, ``d e/dq = (tr(A) I - A^T) J_omega / 2`` with
``A = R_0^T R``).  Each iteration solves the equality-constrained
subproblem's KKT system (Gauss-Newton: banded, knot after knot, each coupled to
its two neighbours, by a sparse LU; exact Hessian with negative curvature flipped:
dense), restores the constraints
at the trial point with the same factorization (every accepted iterate keeps
the feet in place and the base unactuated to ``1e-10``) and accepts it when
the cost falls, with Levenberg-Marquardt damping.  It stops when the
Lagrangian gradient, with least-squares multipliers, is below ``tolerance``
of the initial gradient.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import qpsolvers
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg

from contactlab.errors import ConfigurationError
from contactlab.optimize.spacetime import SpacetimeProblem
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.model import Model
from contactlab.reduced.tree import Array

#: Largest foot-pose or base-wrench error of an ``optimal`` transition [m, rad, N or N m].
FEET_TOL = 1e-8


def _vee_skew(A: Array) -> Array:
    """``vee((A - A^T) / 2)``."""
    return 0.5 * np.array([A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]])


class ContactTransition:
    """A floating-base transition with the feet held: unknowns, cost, constraints, derivatives.

    Parameters
    ----------
    model : the prepared model of a robot on a free root joint.
    duration, knots : ``T`` [s] and the number of intervals ``K``.
    q_start, q_end : (nq,) standing poses; the feet must be at the same poses in both.
    feet : names of the bodies held (each gets a 6-component contact wrench).
    via : ``{time [s]: (nq,) pose}`` on interior knots (feet in place there too).
    lower, upper : (nq,) joint limits (``inf`` for none), held at every free knot.
    """

    def __init__(
        self,
        model: Model,
        duration: float,
        knots: int,
        q_start: Array,
        q_end: Array,
        feet: tuple[str, ...],
        via: dict[float, Array] | None = None,
        lower: Array | None = None,
        upper: Array | None = None,
    ) -> None:
        self.model = model
        self.path = SpacetimeProblem(
            model, duration, knots, q_start, q_end, via=via or {}, wind=True,
            lower=lower,  # type: ignore[arg-type]
            upper=upper,  # type: ignore[arg-type]
        )  # fmt: skip
        tree = model.tree
        names = [b.name for b in tree.scene.bodies]
        missing = [f for f in feet if f not in names]
        if missing or not feet:
            raise ConfigurationError(
                f"feet {missing or '(none)'} are not bodies of {tree.scene.name}; choose from "
                f"{', '.join(names)}"
            )
        roots = np.flatnonzero(tree.parent < 0)
        if len(roots) != 1 or tree.ndof[roots[0]] != 6:
            raise ConfigurationError(
                f"{tree.scene.name} has no floating base (one free root joint): a contact "
                "transition needs one; use SpacetimeProblem for a fixed base"
            )
        start = int(tree.dof0[roots[0]])
        self.base = np.arange(start, start + 6)
        self.joints = np.setdiff1d(np.arange(model.nq), self.base)
        self.feet = tuple(feet)
        self._n_bodies = tree.scene.n_bodies
        self.foot_bodies = np.array([names.index(f) for f in feet])
        E0 = forward_kinematics(tree, self.path.q_start).E[self.foot_bodies]
        self.foot_poses = E0
        for name, q in (
            ("end", self.path.q_end),
            *((f"via {t}", v) for t, v in self.path.via.items()),
        ):
            error = np.abs(self.foot_error(np.asarray(q, dtype=float))).max()
            if error > FEET_TOL:
                raise ConfigurationError(
                    f"the {name} pose moves a foot by {error:.3g} (m or rad) from its start "
                    "pose; place the pose on the feet first (ContactTransition.place_on_feet)"
                )
        K = knots
        self.free_knots = np.flatnonzero(~self.path._fixed.all(axis=1))
        self.n_q = self.path.n_free
        self.n_lambda = (K + 1) * 6 * len(feet)

    # -- unknowns ------------------------------------------------------------
    @property
    def n_unknowns(self) -> int:
        return self.n_q + self.n_lambda

    def split(self, x: Array) -> tuple[Array, Array]:
        """Knot positions (K+1, nq) and contact wrenches (K+1, feet, 6)."""
        Q = self.path.positions(x[: self.n_q])
        lam = x[self.n_q :].reshape(self.path.knots + 1, len(self.feet), 6)
        return Q, lam

    def bounds(self) -> tuple[Array, Array]:
        """Lower and upper bounds of the unknowns (the contact wrenches are free)."""
        mask = ~self.path._fixed
        shape = mask.shape
        lo = np.broadcast_to(self.path.lower, shape)[mask]
        hi = np.broadcast_to(self.path.upper, shape)[mask]
        inf = np.full(self.n_lambda, np.inf)
        return np.concatenate([lo, -inf]), np.concatenate([hi, inf])

    def _wrenches(self, lam_k: Array) -> Array:
        W = np.zeros((self._n_bodies, 6))
        W[self.foot_bodies] = lam_k
        return W

    # -- kinematic constraint ------------------------------------------------
    def foot_error(self, q: Array) -> Array:
        """(feet * 6,) position and orientation errors of the feet at ``q``."""
        E = forward_kinematics(self.model.tree, q).E[self.foot_bodies]
        out = np.empty((len(self.feet), 6))
        for f in range(len(self.feet)):
            out[f, :3] = E[f, :3, 3] - self.foot_poses[f, :3, 3]
            out[f, 3:] = _vee_skew(self.foot_poses[f, :3, :3].T @ E[f, :3, :3])
        return out.ravel()

    def foot_jacobian(self, q: Array) -> tuple[Array, Array]:
        """:meth:`foot_error` and its exact Jacobian (feet * 6, nq)."""
        kin = forward_kinematics(self.model.tree, q)
        E, Jfull = kin.E, kin.J
        err = np.empty((len(self.feet), 6))
        jac = np.empty((len(self.feet), 6, self.model.nq))
        for f, b in enumerate(self.foot_bodies):
            R = E[b, :3, :3]
            A = self.foot_poses[f, :3, :3].T @ R
            Jb = Jfull[6 * b : 6 * b + 6]  # body twist (omega, nu) per unit rate
            err[f, :3] = E[b, :3, 3] - self.foot_poses[f, :3, 3]
            err[f, 3:] = _vee_skew(A)
            jac[f, :3] = R @ Jb[3:]
            jac[f, 3:] = 0.5 * (np.trace(A) * np.eye(3) - A.T) @ Jb[:3]
        return err.ravel(), jac.reshape(-1, self.model.nq)

    def place_on_feet(self, q: Array, keep: Array | None = None, iterations: int = 50) -> Array:
        """The pose nearest ``q`` (in the coordinates not in ``keep``) with the feet in place.

        Gauss-Newton on the foot errors with the least change of the free
        coordinates (minimum-norm corrections); ``keep`` (indices) stay as given.
        """
        q = np.array(q, dtype=float)
        move = np.ones(self.model.nq, dtype=bool)
        if keep is not None:
            move[np.asarray(keep)] = False
        for _ in range(iterations):
            err, jac = self.foot_jacobian(q)
            if np.abs(err).max() <= 1e-13:
                break
            q[move] -= np.linalg.lstsq(jac[:, move], err, rcond=None)[0]
        else:
            raise ConfigurationError(
                f"the pose cannot keep the feet in place (error {np.abs(err).max():.3g})"
            )
        return q

    # -- evaluation ----------------------------------------------------------
    def evaluate(self, x: Array) -> tuple[Array, Array]:
        """Residuals ``sqrt(h w_k) S tau_k`` stacked and constraints (base rows, feet)."""
        Q, lam = self.split(x)
        qdot, qddot = self.path.rates(Q)
        s = np.sqrt(self.path.weights())
        res, base = [], []
        for k in range(len(Q)):
            tau = self.model.inverse_dynamics(Q[k], qdot[k], qddot[k], self._wrenches(lam[k]))
            res.append(s[k] * tau[self.joints])
            base.append(tau[self.base])
        feet = [self.foot_error(Q[k]) for k in self.free_knots]
        return np.concatenate(res), np.concatenate(base + feet)

    def jacobians(
        self, x: Array
    ) -> tuple[Array, Array, scipy.sparse.csc_matrix, scipy.sparse.csc_matrix]:
        """Residuals, constraints and their exact sparse Jacobians over the unknowns."""
        Q, lam = self.split(x)
        qdot, qddot = self.path.rates(Q)
        model, h, K = self.model, self.path.h, self.path.knots
        nq, nf = model.nq, len(self.feet)
        s = np.sqrt(self.path.weights())
        knot = np.arange(K + 1)[:, None] + np.array([-1, 0, 1])
        knot[0, 0], knot[K, 2] = 1, K - 1  # ghost knots folded (rest or given end velocities)
        rows_r: list[Array] = []
        cols_r: list[Array] = []
        vals_r: list[Array] = []
        rows_c: list[Array] = []
        cols_c: list[Array] = []
        vals_c: list[Array] = []
        res = np.empty((K + 1, len(self.joints)))
        cons_base = np.empty((K + 1, 6))
        na = len(self.joints)
        lam_col0 = (K + 1) * nq  # lambda columns after all knot columns
        for k in range(K + 1):
            W = self._wrenches(lam[k])
            dq, dqd, M = inverse_dynamics_derivatives(model, Q[k], qdot[k], qddot[k], W)
            tau = model.inverse_dynamics(Q[k], qdot[k], qddot[k], W)
            tau0 = model.inverse_dynamics(Q[k], qdot[k], qddot[k])
            dl = np.empty((nq, 6 * nf))
            for j in range(6 * nf):
                unit = np.zeros((nf, 6))
                unit.flat[j] = 1.0
                dl[:, j] = (
                    model.inverse_dynamics(Q[k], qdot[k], qddot[k], self._wrenches(unit)) - tau0
                )
            blocks = (M / h**2 - dqd / (2 * h), dq - 2 * M / h**2, M / h**2 + dqd / (2 * h))
            res[k] = s[k] * tau[self.joints]
            cons_base[k] = tau[self.base]
            for kn, B in zip(knot[k], blocks, strict=True):
                cols = kn * nq + np.arange(nq)
                for sel, rows, cols_, vals, scale, row0 in (
                    (self.joints, rows_r, cols_r, vals_r, s[k], k * na),
                    (self.base, rows_c, cols_c, vals_c, 1.0, k * 6),
                ):
                    rr = row0 + np.arange(len(sel))
                    rows.append(np.repeat(rr, nq))
                    cols_.append(np.tile(cols, len(sel)))
                    vals.append((scale * B[sel]).ravel())
            lcols = lam_col0 + k * 6 * nf + np.arange(6 * nf)
            for sel, rows, cols_, vals, scale, row0 in (
                (self.joints, rows_r, cols_r, vals_r, s[k], k * na),
                (self.base, rows_c, cols_c, vals_c, 1.0, k * 6),
            ):
                rr = row0 + np.arange(len(sel))
                rows.append(np.repeat(rr, 6 * nf))
                cols_.append(np.tile(lcols, len(sel)))
                vals.append((scale * dl[sel]).ravel())
        feet = []
        for i, kf in enumerate(self.free_knots):
            err, jac = self.foot_jacobian(Q[kf])
            feet.append(err)
            rr = 6 * (K + 1) + i * 6 * nf + np.arange(6 * nf)
            rows_c.append(np.repeat(rr, nq))
            cols_c.append(np.tile(kf * nq + np.arange(nq), 6 * nf))
            vals_c.append(jac.ravel())
        n_cols = lam_col0 + self.n_lambda
        keep = np.concatenate(
            [np.flatnonzero(~self.path._fixed.ravel()), lam_col0 + np.arange(self.n_lambda)]
        )
        Jr = scipy.sparse.csc_matrix(
            (np.concatenate(vals_r), (np.concatenate(rows_r), np.concatenate(cols_r))),
            shape=((K + 1) * na, n_cols),
        )[:, keep]
        n_c = 6 * (K + 1) + 6 * nf * len(self.free_knots)
        Jc = scipy.sparse.csc_matrix(
            (np.concatenate(vals_c), (np.concatenate(rows_c), np.concatenate(cols_c))),
            shape=(n_c, n_cols),
        )[:, keep]
        return res.ravel(), np.concatenate([cons_base.ravel(), *feet]), Jr.tocsc(), Jc.tocsc()

    def curvature(self, x: Array, weights: Array, step: float = 1e-7) -> scipy.sparse.csc_matrix:
        """``sum_k d^2 (l_k . tau_k) / dx^2`` over the unknowns, ``l_k`` (K+1, nq) = ``weights``.

        The Lagrangian's second-order term in the torques: ``l_k`` holds
        ``2 s_k r_k`` on the joint rows (the residual curvature) and the base
        multipliers on the base rows.  Per knot the Hessian of ``l . tau`` in
        ``(q, qdot, qddot, lambda)``: ``tau`` is linear in ``qddot`` and in
        ``lambda``, so the ``qddot`` block is ``M``'s and the ``lambda`` columns are
        ``(dtau/dq(e_j) - dtau/dq(0))^T l`` (the derivatives with unit wrenches);
        the ``(q, qdot)`` columns are forward differences of the exact gradient
        ``(dtau/dq^T l, dtau/dqdot^T l, M l)`` (relative error about ``step``);
        symmetrized and chained through the difference formulas.
        """
        Q, lam = self.split(x)
        qdot, qddot = self.path.rates(Q)
        model, h, K = self.model, self.path.h, self.path.knots
        nq, nf = model.nq, len(self.feet)
        nl = 6 * nf
        eye = np.eye(nq)
        L = np.zeros((3 * nq + nl, 3 * nq + nl))
        L[:nq, nq : 2 * nq] = eye
        L[nq : 2 * nq, :nq], L[nq : 2 * nq, 2 * nq : 3 * nq] = -eye / (2 * h), eye / (2 * h)
        L[2 * nq : 3 * nq, :nq] = eye / h**2
        L[2 * nq : 3 * nq, nq : 2 * nq] = -2 * eye / h**2
        L[2 * nq : 3 * nq, 2 * nq : 3 * nq] = eye / h**2
        L[3 * nq :, 3 * nq :] = np.eye(nl)
        knot = np.arange(K + 1)[:, None] + np.array([-1, 0, 1])
        knot[0, 0], knot[K, 2] = 1, K - 1
        lam_col0 = (K + 1) * nq
        rows, cols, vals = [], [], []
        for k in range(K + 1):
            l = weights[k]
            W = self._wrenches(lam[k])

            def grad(q: Array, qd: Array, W: Array = W, l: Array = l, k: int = k) -> Array:
                dq, dqd, M = inverse_dynamics_derivatives(model, q, qd, qddot[k], W)
                return np.concatenate([dq.T @ l, dqd.T @ l, M @ l])

            base = grad(Q[k], qdot[k])
            Hk = np.zeros((3 * nq + nl, 3 * nq + nl))
            for j in range(2 * nq):
                e = np.zeros(2 * nq)
                e[j] = step
                Hk[: 3 * nq, j] = (grad(Q[k] + e[:nq], qdot[k] + e[nq:]) - base) / step
            zero = grad(Q[k], qdot[k], W=np.zeros_like(W))
            for j in range(nl):
                unit = np.zeros((nf, 6))
                unit.flat[j] = 1.0
                col = grad(Q[k], qdot[k], W=self._wrenches(unit)) - zero
                Hk[: 2 * nq, 3 * nq + j] = col[: 2 * nq]
            Hk[:, 2 * nq : 3 * nq] = Hk[2 * nq : 3 * nq, :].T
            Hk[3 * nq :, : 2 * nq] = Hk[: 2 * nq, 3 * nq :].T
            Hk = 0.5 * (Hk + Hk.T)
            B = L.T @ Hk @ L
            idx = np.concatenate(
                [(knot[k][:, None] * nq + np.arange(nq)).ravel(), lam_col0 + k * nl + np.arange(nl)]
            )
            rows.append(np.repeat(idx, len(idx)))
            cols.append(np.tile(idx, len(idx)))
            vals.append(B.ravel())
        n = lam_col0 + self.n_lambda
        full = scipy.sparse.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        )
        keep = self._keep()
        return full[keep][:, keep].tocsc()

    def feet_curvature(self, x: Array, y: Array, step: float = 1e-7) -> scipy.sparse.csc_matrix:
        """``sum_j y_j d^2 e_j / dq^2`` of the foot constraints over the unknowns.

        ``y`` (free knots * feet * 6,) are the foot rows' multipliers.  Per free
        knot, forward differences of the exact ``J_e(q)^T y`` (relative error about
        ``step``), symmetrized; zero in the contact wrenches.
        """
        Q, _ = self.split(x)
        nq, nf = self.model.nq, len(self.feet)
        y = y.reshape(len(self.free_knots), 6 * nf)
        rows, cols, vals = [], [], []
        for i, k in enumerate(self.free_knots):
            jac = self.foot_jacobian(Q[k])[1]
            base = jac.T @ y[i]
            Hk = np.zeros((nq, nq))
            # the feet depend only on the coordinates their Jacobian has columns for
            # (base and legs): the other columns of d(J^T y)/dq are zero
            for j in np.flatnonzero(np.any(jac != 0.0, axis=0)):
                q = Q[k].copy()
                q[j] += step
                Hk[:, j] = (self.foot_jacobian(q)[1].T @ y[i] - base) / step
            idx = k * nq + np.arange(nq)
            rows.append(np.repeat(idx, nq))
            cols.append(np.tile(idx, nq))
            vals.append((0.5 * (Hk + Hk.T)).ravel())
        n = (self.path.knots + 1) * nq + self.n_lambda
        full = scipy.sparse.csc_matrix(
            (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)
        )
        keep = self._keep()
        return full[keep][:, keep].tocsc()

    def lagrangian_hessian(
        self, x: Array, y: Array, r: Array | None = None, Jr: scipy.sparse.spmatrix | None = None
    ) -> scipy.sparse.csc_matrix:
        """The exact Hessian of ``L = |r|^2 + y . c`` (``y`` one multiplier per constraint).

        ``2 J^T J`` plus the torques' second-order term (:meth:`curvature`, joint rows
        weighted by ``2 s_k r_k``, base rows by the base multipliers) plus the feet's
        (:meth:`feet_curvature`).
        """
        if r is None or Jr is None:
            r, _, Jr, _ = self.jacobians(x)
        nk = self.path.knots + 1
        weights = np.zeros((nk, self.model.nq))
        weights[:, self.joints] = 2.0 * np.sqrt(self.path.weights())[:, None] * r.reshape(nk, -1)
        weights[:, self.base] = y[: 6 * nk].reshape(nk, 6)
        H = 2.0 * (Jr.T @ Jr) + self.curvature(x, weights) + self.feet_curvature(x, y[6 * nk :])
        return H.tocsc()

    def _keep(self) -> Array:
        lam_col0 = (self.path.knots + 1) * self.model.nq
        return np.concatenate(
            [np.flatnonzero(~self.path._fixed.ravel()), lam_col0 + np.arange(self.n_lambda)]
        )

    def initial_guess(self) -> Array:
        """Straight-line knots placed on the feet, and the static contact wrenches."""
        xq = self.path.initial_guess()
        Q = self.path.positions(xq)
        for k in self.free_knots:
            Q[k] = self.place_on_feet(Q[k])
        x = np.concatenate([Q[~self.path._fixed], np.zeros(self.n_lambda)])
        # contact wrenches of least joint torque that carry the base at each knot
        r, c, Jr, Jc = self.jacobians(x)
        lam_cols = np.arange(self.n_q, self.n_unknowns)
        base_rows = np.arange(6 * (self.path.knots + 1))
        A = Jc[base_rows][:, lam_cols].toarray()
        G = Jr[:, lam_cols].toarray()
        n = len(lam_cols)
        kkt = np.block([[G.T @ G + 1e-12 * np.eye(n), A.T], [A, np.zeros((len(A), len(A)))]])
        rhs = np.concatenate([-G.T @ r, -c[base_rows]])
        x[lam_cols] = np.linalg.lstsq(kkt, rhs, rcond=None)[0][:n]
        return x


@dataclass(frozen=True)
class TransitionResult:
    """The optimized transition; ``kkt`` is the Lagrangian gradient's largest entry relative to
    the cost gradient's at the initial guess, ``feasibility`` the largest constraint error."""

    t: Array
    q: Array
    qdot: Array
    qddot: Array
    tau: Array
    wrenches: Array
    x: Array
    cost: float
    initial_cost: float
    status: str
    message: str
    nit: int
    nfev: int
    kkt: float
    feasibility: float
    wall_time_s: float
    history: Array

    @property
    def success(self) -> bool:
        return self.status == "optimal"


def _kkt_factor(H: scipy.sparse.spmatrix, A: scipy.sparse.spmatrix) -> scipy.sparse.linalg.SuperLU:
    """Sparse LU of ``[[H, A^T], [A, -delta I]]`` (banded when the unknowns go knot by knot).

    ``delta = 1e-9 / max diag(H)`` regularizes constraints that are dependent (a held
    joint and the foot it moves); it perturbs ``A H^-1 A^T`` by about 1e-9 of itself.
    """
    delta = 1e-9 / max(float(H.diagonal().max()), 1e-300)
    reg = scipy.sparse.identity(A.shape[0], format="csc") * -delta
    if isinstance(H, np.ndarray):
        return _DenseLU(np.block([[H, A.T.toarray()], [A.toarray(), reg.toarray()]]))
    return scipy.sparse.linalg.splu(scipy.sparse.bmat([[H, A.T], [A, reg]], format="csc"))


class _DenseLU:
    """Dense LU with the ``solve`` of :class:`scipy.sparse.linalg.SuperLU`."""

    def __init__(self, K: Array) -> None:
        self.factor = scipy.linalg.lu_factor(K)

    def solve(self, b: Array) -> Array:
        return scipy.linalg.lu_solve(self.factor, b)


def _flip_negative_curvature(H: Array, A: Array) -> tuple[Array, int]:
    """``H`` with its eigenvalues on the null space of ``A`` replaced by their absolute values
    (floored at ``1e-10`` of the largest), and the number changed.

    ``Z`` (orthonormal null-space basis from the SVD of ``A``), ``Z^T H Z = V L V^T``;
    ``H + Z V (|L|' - L) V^T Z^T`` equals ``H`` off the tangent space and is positive
    definite on it: the step of the modified Newton method (Greenstadt) goes down along a
    direction of negative curvature instead of being shortened by a damping that must
    exceed the most negative eigenvalue.
    """
    Z = scipy.linalg.null_space(A) if A.shape[0] else np.eye(H.shape[0])
    if Z.shape[1] == 0:
        return H, 0
    lam, V = np.linalg.eigh(Z.T @ H @ Z)
    target = np.maximum(np.abs(lam), 1e-10 * max(float(np.abs(lam).max()), 1e-300))
    change = target - lam
    moved = change > 0
    if not moved.any():
        return H, 0
    W = Z @ V[:, moved]
    return H + (W * change[moved]) @ W.T, int(moved.sum())


def _qp_active_set(
    H: scipy.sparse.spmatrix,
    g: Array,
    Jc: scipy.sparse.spmatrix,
    c: Array,
    x: Array,
    lower: Array,
    upper: Array,
) -> tuple[Array, Array]:
    """The bounds active at the solution of the convex subproblem
    ``min g.d + d.H d / 2`` s.t. ``c + Jc d = 0``, ``lower <= x + d <= upper``
    (Clarabel's interior point), as ``held, bound``."""
    lb, ub = lower - x, upper - x
    sol = qpsolvers.solve_qp(
        scipy.sparse.csc_matrix(H), g, A=scipy.sparse.csc_matrix(Jc), b=-c,
        lb=np.where(np.isfinite(lb), lb, -1e20), ub=np.where(np.isfinite(ub), ub, 1e20),
        solver="clarabel",
    )  # fmt: skip
    n = len(x)
    if sol is None:
        return np.zeros(n, dtype=bool), np.zeros(n)
    trial = x + sol
    tol = 1e-7 * (1.0 + np.abs(x))
    at_low = trial - lower <= tol
    at_high = upper - trial <= tol
    return at_low | at_high, np.where(at_low, lower, upper)


def _kkt_solve(
    H: scipy.sparse.spmatrix, A: scipy.sparse.spmatrix, g: Array, c: Array
) -> tuple[Array, Array]:
    n = H.shape[0]
    sol = _kkt_factor(H, A).solve(np.concatenate([-g, -c]))
    return sol[:n], sol[n:]


def multipliers(g: Array, A: scipy.sparse.spmatrix) -> tuple[Array, Array]:
    """Least-squares multipliers ``y`` of ``min |g + A^T y|`` and the Lagrangian gradient."""
    n = A.shape[1]
    eye = scipy.sparse.identity(n, format="csc")
    w, y = _kkt_solve(eye, A, g, np.zeros(A.shape[0]))
    return y, g + A.T @ y


def _with_bounds(
    c: Array, Jc: scipy.sparse.csc_matrix, x: Array, held: Array, bound: Array
) -> tuple[Array, scipy.sparse.csc_matrix]:
    """The constraints with the held variables' ``x_i - bound_i = 0`` appended."""
    idx = np.flatnonzero(held)
    rows = scipy.sparse.csc_matrix(
        (np.ones(len(idx)), (np.arange(len(idx)), idx)), shape=(len(idx), len(x))
    )
    return np.concatenate([c, x[idx] - bound[idx]]), scipy.sparse.vstack([Jc, rows]).tocsc()


def solve(
    problem: ContactTransition,
    x: Array | None = None,
    max_iterations: int = 200,
    tolerance: float = 1e-7,
    exact_hessian: bool = False,
    newton_below: float = 1e-2,
    qp: bool = True,
    log: Callable[[dict[str, float]], None] | None = None,
) -> TransitionResult:
    """Minimize from ``x`` (default :meth:`ContactTransition.initial_guess`).

    Each iteration solves the subproblem ``min g.d + d.H d / 2`` s.t. ``c + A d = 0``
    with the linearized constraints, then restores the constraints at the trial
    point by minimum-``H``-norm corrections ``d' = -H^-1 A^T (A H^-1 A^T)^-1 c``
    from the same factorization (so every accepted iterate keeps the feet in
    place and carries the base to ``1e-10``), and accepts it when the cost falls.
    ``mu`` follows the ratio of actual to predicted decrease (Levenberg-Marquardt).

    ``H``: far from a solution the Gauss-Newton matrix ``2 (J^T J + mu diag(J^T J))``
    (cheap: one derivative call per knot).  Once the Lagrangian gradient is below
    ``newton_below`` of its initial value (from the start with ``exact_hessian``), the
    exact Hessian of the Lagrangian (:meth:`ContactTransition.lagrangian_hessian`,
    ``2 nq + 6 feet`` more derivative calls per knot) with its negative curvature on
    the tangent space flipped (:func:`_flip_negative_curvature`), plus
    ``2 mu diag(J^T J)``.  Gauss-Newton alone converges only linearly here: the
    residuals (the joint torques that hold the robot up) are large, so the term it
    omits is not small (at 4 intervals: 300 iterations leave the Lagrangian gradient
    at 1e-6; the exact Hessian converges quadratically, in 24 iterations).

    Joint limits: the active set of the convex subproblem with the bounds
    (:func:`_qp_active_set`, Gauss-Newton ``H``) with ``qp``; otherwise a primal
    active set.  Either way a variable the step would still carry past a limit is held
    on it (the equality ``x_i = bound`` joins the constraints and the step is solved
    again); without ``qp`` a held variable whose multiplier has the wrong sign (the
    cost would fall by leaving the bound) is released.
    Stops as ``"optimal"`` when the largest entry of the Lagrangian gradient, with
    least-squares multipliers, is below ``tolerance`` times the cost gradient's at
    the start, every bound multiplier has the right sign and the constraints hold.
    ``log`` receives, at every iteration, the cost, the relative Lagrangian gradient
    ``kkt``, the damping ``mu``, the number of held bounds, whether the exact Hessian
    is in use, the number of flipped eigenvalues so far, the constraint error and the
    time [s].
    """
    start = time.perf_counter()
    x = problem.initial_guess() if x is None else np.array(x, dtype=float)
    lower, upper = problem.bounds()
    x = np.clip(x, lower, upper)
    r, c, Jr, Jc = problem.jacobians(x)
    n = len(x)
    f = float(r @ r)
    initial_cost = f
    g0 = max(float(np.abs(2.0 * (Jr.T @ r)).max()), 1e-300)
    history = [f]
    mu = 1e-3
    nit = nfev = 0
    status, message = "max_iterations", "iteration limit reached"
    feasible = 1e-10
    at_low, at_high = x <= lower, x >= upper
    held = at_low | at_high
    bound = np.where(at_low, lower, upper)
    stationarity = np.inf
    newton = False
    flipped_total = 0
    while True:
        g = 2.0 * (Jr.T @ r)
        C, A = _with_bounds(c, Jc, x, held, bound)
        y, lag = multipliers(g, A)
        z = y[len(c) :]
        idx = np.flatnonzero(held)
        wrong = np.zeros(n, dtype=bool)
        wrong[idx] = np.where(bound[idx] == lower[idx], z > 0, z < 0)
        stationarity = float(np.abs(lag).max()) / g0
        if log is not None:
            log(
                {
                    "nit": nit,
                    "cost": f,
                    "kkt": stationarity,
                    "damping": mu,
                    "held": int(held.sum()),
                    "newton": int(newton),
                    "flipped": flipped_total,
                    "feasibility": float(np.abs(c).max()),
                    "time": time.perf_counter() - start,
                }
            )
        if stationarity <= tolerance and float(np.abs(c).max()) <= feasible and not wrong.any():
            status, message = "optimal", "Lagrangian gradient below tolerance, constraints met"
            break
        if nit >= max_iterations:
            break
        if wrong.any() and stationarity <= 1e-3:
            held &= ~wrong  # leave the bounds the cost pulls away from
        JTJ = (Jr.T @ Jr).tocsc()
        diag = JTJ.diagonal()
        floor = 1e-12 * max(float(diag.max()), 1.0)
        S = None
        if exact_hessian or stationarity <= newton_below:
            if not newton:
                newton, mu = True, 0.0
            S = problem.lagrangian_hessian(x, y[: len(c)], r, Jr) - 2.0 * JTJ
        accepted = False
        if S is not None:
            H_exact = (2.0 * JTJ + S).toarray() + 2.0 * floor * np.eye(n)
            flipped_for: Array | None = None
        held0, bound0 = held.copy(), bound.copy()
        for _ in range(30):
            held, bound = held0.copy(), bound0.copy()  # a rejected trial's holds are undone
            H = 2.0 * (JTJ + scipy.sparse.diags(mu * diag + floor))
            if qp:  # the limits that hold at the step of the damped convex subproblem
                held, bound = _qp_active_set(H, g, Jc, c, x, lower, upper)
            if S is not None:
                # the exact Hessian with its negative curvature on the tangent space of the
                # constraints and held bounds flipped (eigenvalues |lambda|); more holds
                # below only shrink that space, where it stays positive definite
                if flipped_for is None or not np.array_equal(held, flipped_for):
                    H_mod, flipped = _flip_negative_curvature(
                        H_exact, _with_bounds(c, Jc, x, held, bound)[1].toarray()
                    )
                    flipped_total += flipped
                    flipped_for = held.copy()
                H = H_mod + np.diag(2.0 * mu * diag)
            for _ in range(20):  # hold the variables the step would carry past a limit
                C, A = _with_bounds(c, Jc, x, held, bound)
                lu = _kkt_factor(H, A)
                d = lu.solve(np.concatenate([-g, -C]))[:n]
                trial = x + d
                past = ~held & ((trial < lower) | (trial > upper))
                if not past.any():
                    break
                bound = np.where(past, np.where(trial < lower, lower, upper), bound)
                held |= past
            restored = False
            worst = np.inf
            for _ in range(40):  # restore the constraints at the trial point (linear rate)
                try:
                    with np.errstate(all="raise"):
                        r_t, c_t = problem.evaluate(trial)
                except (FloatingPointError, OverflowError, ConfigurationError):
                    break  # a step far outside the model's range: damp it
                nfev += 1
                past = ~held & ((trial < lower) | (trial > upper))
                if past.any():  # a correction crossed a limit: hold it there and refactor
                    bound = np.where(past, np.where(trial < lower, lower, upper), bound)
                    held |= past
                    C, A = _with_bounds(c, Jc, x, held, bound)
                    lu = _kkt_factor(H, A)
                C_t = np.concatenate([c_t, trial[held] - bound[held]])
                error = float(np.abs(C_t).max())
                if error <= feasible:
                    restored = True
                    break
                if error > worst:  # the corrections no longer contract: damp the step
                    break
                worst = error
                trial = trial + lu.solve(np.concatenate([np.zeros(n), -C_t]))[:n]
            if not restored:
                mu = max(10.0 * mu, 1e-8)
                continue
            trial = np.clip(trial, lower, upper)
            p = trial - x
            predicted = -(float(g @ p) + 0.5 * float(p @ (H @ p)))
            f_t = float(r_t @ r_t)
            rho = (f - f_t) / predicted if predicted > 0 else -1.0
            if f_t < f and rho > 1e-4:
                accepted = True
                mu = max(mu / 3.0, 1e-12) if rho > 0.75 else (4.0 * mu if rho < 0.25 else mu)
                if newton and mu < 1e-10:
                    mu = 0.0
                break
            mu = max(10.0 * mu, 1e-8)
        if not accepted:
            status, message = "failed", "no decrease after raising the damping"
            break
        x = trial
        nit += 1
        r, c, Jr, Jc = problem.jacobians(x)
        f = float(r @ r)
        history.append(f)
    wall = time.perf_counter() - start
    Q, lam = problem.split(x)
    qdot, qddot = problem.path.rates(Q)
    tau = np.array(
        [
            problem.model.inverse_dynamics(Q[k], qdot[k], qddot[k], problem._wrenches(lam[k]))
            for k in range(len(Q))
        ]
    )
    feasibility = float(np.abs(c).max())
    if feasibility > FEET_TOL and status == "optimal":
        status, message = "infeasible", f"constraints missed by {feasibility:.3g}"
    return TransitionResult(
        t=problem.path.times,
        q=Q,
        qdot=qdot,
        qddot=qddot,
        tau=tau,
        wrenches=lam,
        x=x,
        cost=f,
        initial_cost=initial_cost,
        status=status,
        message=message,
        nit=nit,
        nfev=nfev,
        kkt=stationarity,
        feasibility=feasibility,
        wall_time_s=wall,
        history=np.array(history),
    )
