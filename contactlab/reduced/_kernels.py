"""Compiled tree recursions (numba) shared by kinematics and dynamics.

All arrays are in tree order (parents before children, depth first).  Per
node ``i`` with parent ``p`` (``-1`` for the world):

- ``X[i] = Ad(E_i^{-1} E_p)`` maps the parent's body twist to ``i``'s body frame,
- ``Sb[i] = Ad(frame_child) S`` is the joint Jacobian in ``i``'s body frame
  (columns past ``ndof[i]`` are zero), ``Sbd[i]`` its time derivative,
- ``d/dt X[i] = -ad(Sb[i] qdot_i) X[i]`` (derived from
  ``E_i^{-1} E_p = frame_child Q^{-1} frame_parent^{-1}``; it replaces the
  world-frame product of seed 000, eq. 2.17).

The recursions are seed 003, Alg. 1 (J and Jdot), Alg. 2–3 (products) and
Alg. 6 (recursive hybrid dynamics), written in body frames.
"""

from __future__ import annotations

import numpy as np
from numba import njit

FIXED, REVOLUTE, PRISMATIC, OTHER = 0, 1, 2, -1


@njit(cache=True)
def _ad(v: np.ndarray) -> np.ndarray:
    out = np.zeros((6, 6))
    w0, w1, w2, v0, v1, v2 = v[0], v[1], v[2], v[3], v[4], v[5]
    for b in range(2):
        o = 3 * b
        out[o + 0, o + 1] = -w2
        out[o + 0, o + 2] = w1
        out[o + 1, o + 0] = w2
        out[o + 1, o + 2] = -w0
        out[o + 2, o + 0] = -w1
        out[o + 2, o + 1] = w0
    out[3, 1] = -v2
    out[3, 2] = v1
    out[4, 0] = v2
    out[4, 2] = -v0
    out[5, 0] = -v1
    out[5, 1] = v0
    return out


@njit(cache=True)
def _adjoint_of_inverse(L: np.ndarray) -> np.ndarray:
    """``Ad(L^{-1}) = [[R^T, 0], [-R^T [p], R^T]]``."""
    out = np.zeros((6, 6))
    Rt = np.ascontiguousarray(L[:3, :3].T)
    p0, p1, p2 = L[0, 3], L[1, 3], L[2, 3]
    P = np.zeros((3, 3))
    P[0, 1], P[0, 2], P[1, 0] = -p2, p1, p2
    P[1, 2], P[2, 0], P[2, 1] = -p0, -p1, p0
    RtP = Rt @ P
    for r in range(3):
        for c in range(3):
            out[r, c] = Rt[r, c]
            out[r + 3, c + 3] = Rt[r, c]
            out[r + 3, c] = -RtP[r, c]
    return out


@njit(cache=True)
def _col_dot(A, c, v):  # noqa: ANN001, ANN202
    """``A[:, c] . v`` without a strided temporary."""
    s = 0.0
    for r in range(v.shape[0]):
        s += A[r, c] * v[r]
    return s


@njit(cache=True)
def evaluate_simple(codes, axes, q, dof0, Q, S):  # noqa: ANN001, ANN201
    """Fill ``Q`` and ``S`` (joint frame) of fixed/revolute/prismatic nodes in place."""
    for i in range(codes.shape[0]):
        code = codes[i]
        if code == OTHER:
            continue
        for r in range(4):
            for c in range(4):
                Q[i, r, c] = 1.0 if r == c else 0.0
        if code == FIXED:
            continue
        a = axes[i]
        t = q[dof0[i]]
        if code == REVOLUTE:
            s, c1 = np.sin(t), 1.0 - np.cos(t)
            K = np.zeros((3, 3))
            K[0, 1], K[0, 2], K[1, 0] = -a[2], a[1], a[2]
            K[1, 2], K[2, 0], K[2, 1] = -a[0], -a[1], a[0]
            R = np.eye(3) + s * K + c1 * (K @ K)
            Q[i, :3, :3] = R
            for r in range(3):
                S[i, r, 0] = a[r]
        else:
            for r in range(3):
                Q[i, r, 3] = a[r] * t
                S[i, r + 3, 0] = a[r]


@njit(cache=True)
def kinematics(parent, Fp, Fc_inv, AdFc, Q, S, Sd, ndof, dof0, qdot):  # noqa: ANN001, ANN201
    """World transforms, parent-to-child adjoints, body-frame S, Sdot and body twists."""
    n = parent.shape[0]
    E = np.empty((n, 4, 4))
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    Sbd = np.zeros((n, 6, 6))
    V = np.zeros((n, 6))
    for i in range(n):
        L = Fp[i] @ Q[i] @ Fc_inv[i]
        p = parent[i]
        E[i] = L if p < 0 else E[p] @ L
        X[i] = _adjoint_of_inverse(L)
        k = ndof[i]
        if k > 0:
            Sb[i, :, :k] = AdFc[i] @ np.ascontiguousarray(S[i, :, :k])
            Sbd[i, :, :k] = AdFc[i] @ np.ascontiguousarray(Sd[i, :, :k])
        v = np.zeros(6)
        for c in range(k):
            v += Sb[i, :, c] * qdot[dof0[i] + c]
        V[i] = v if p < 0 else X[i] @ V[p] + v
    return E, X, Sb, Sbd, V


@njit(cache=True)
def _joint_twist(Sb, ndof, dof0, i, x):  # noqa: ANN001, ANN202
    v = np.zeros(6)
    for c in range(ndof[i]):
        v += Sb[i, :, c] * x[dof0[i] + c]
    return v


@njit(cache=True)
def jacobians(parent, X, Sb, Sbd, ndof, dof0, qdot, nq):  # noqa: ANN001, ANN201
    """Dense ``J`` and ``Jdot`` (6n, nq), rows in tree order (seed 003, Alg. 1)."""
    n = parent.shape[0]
    J = np.zeros((6 * n, nq))
    Jd = np.zeros((6 * n, nq))
    for i in range(n):
        p = parent[i]
        r = 6 * i
        if p >= 0:
            Xd = -_ad(_joint_twist(Sb, ndof, dof0, i, qdot)) @ X[i]
            Jp = J[6 * p : 6 * p + 6]
            J[r : r + 6] = X[i] @ Jp
            Jd[r : r + 6] = Xd @ Jp + X[i] @ Jd[6 * p : 6 * p + 6]
        for c in range(ndof[i]):
            J[r : r + 6, dof0[i] + c] = Sb[i, :, c]
            Jd[r : r + 6, dof0[i] + c] = Sbd[i, :, c]
    return J, Jd


@njit(cache=True)
def jacobian_products(parent, X, Sb, Sbd, ndof, dof0, qdot, x):  # noqa: ANN001, ANN201
    """``y = J x`` and ``z = Jdot x`` as (n, 6) in O(n) (seed 003, Alg. 2)."""
    n = parent.shape[0]
    y = np.zeros((n, 6))
    z = np.zeros((n, 6))
    for i in range(n):
        yi = _joint_twist(Sb, ndof, dof0, i, x)
        zi = _joint_twist(Sbd, ndof, dof0, i, x)
        p = parent[i]
        if p >= 0:
            Xd = -_ad(_joint_twist(Sb, ndof, dof0, i, qdot)) @ X[i]
            yi += X[i] @ y[p]
            zi += X[i] @ z[p] + Xd @ y[p]
        y[i] = yi
        z[i] = zi
    return y, z


@njit(cache=True)
def jacobian_transpose_product(parent, X, Sb, ndof, dof0, y, nq):  # noqa: ANN001, ANN201
    """``x = J^T y`` for body wrenches ``y`` (n, 6) in O(n) (seed 003, Alg. 3)."""
    n = parent.shape[0]
    acc = y.copy()
    x = np.zeros(nq)
    for i in range(n - 1, -1, -1):
        for c in range(ndof[i]):
            x[dof0[i] + c] = _col_dot(Sb[i], c, acc[i])
        p = parent[i]
        if p >= 0:
            acc[p] += X[i].T @ acc[i]
    return x


@njit(cache=True)
def hybrid_dynamics(  # noqa: ANN201, PLR0913
    parent, X, Sb, Sbd, ndof, dof0, qdot, V, inertia, Fext, tau, prescribed, qddot_in
):  # noqa: ANN001
    """Recursive hybrid dynamics in body frames (seed 003, Alg. 6).

    Nodes with ``prescribed[i]`` take ``qddot_in`` and report the torque that
    produces it; the others take ``tau`` and return their acceleration.
    ``Fext`` are applied body wrenches (n, 6) (gravity included); joint
    forces are in ``tau``.  Returns ``(qddot, tau_out, Vdot)``.
    """
    n = parent.shape[0]
    nq = qdot.shape[0]
    Mh = np.zeros((n, 6, 6))
    Bh = np.zeros((n, 6))
    eta = np.zeros((n, 6))
    U = np.zeros((n, 6, 6))
    Psi = np.zeros((n, 6, 6))
    u = np.zeros((n, 6))
    for i in range(n):
        vJ = _joint_twist(Sb, ndof, dof0, i, qdot)
        eta[i] = _ad(V[i]) @ vJ + _joint_twist(Sbd, ndof, dof0, i, qdot)
        MV = inertia[i] * V[i]
        for r in range(6):
            Mh[i, r, r] = inertia[i, r]
        Bh[i] = -(_ad(V[i]).T @ MV) - Fext[i]
    for i in range(n - 1, -1, -1):
        k = ndof[i]
        M = Mh[i]
        if prescribed[i] or k == 0:
            Pi = M.copy()
            a = eta[i] + _joint_twist(Sb, ndof, dof0, i, qddot_in)
            beta = Bh[i] + M @ a
        else:
            Si = np.ascontiguousarray(Sb[i, :, :k])
            Ui = M @ Si
            D = Si.T @ Ui
            Pk = np.empty((k, k))
            if k == 1:
                Pk[0, 0] = 1.0 / D[0, 0]
            else:
                Pk[:, :] = np.linalg.inv(D)
            ui = np.empty(k)
            Mb = M @ eta[i] + Bh[i]
            for c in range(k):
                ui[c] = tau[dof0[i] + c] - _col_dot(Si, c, Mb)
            Pi = M - (Ui @ Pk) @ np.ascontiguousarray(Ui.T)
            beta = Bh[i] + M @ eta[i] + Ui @ (Pk @ ui)
            U[i, :, :k] = Ui
            Psi[i, :k, :k] = Pk
            u[i, :k] = ui
        p = parent[i]
        if p >= 0:
            Mh[p] += X[i].T @ Pi @ X[i]
            Bh[p] += X[i].T @ beta
    qddot = np.zeros(nq)
    tau_out = np.zeros(nq)
    Vdot = np.zeros((n, 6))
    for i in range(n):
        k = ndof[i]
        p = parent[i]
        a = X[i] @ Vdot[p] if p >= 0 else np.zeros(6)
        if prescribed[i] or k == 0:
            for c in range(k):
                qddot[dof0[i] + c] = qddot_in[dof0[i] + c]
        else:
            Ui = np.ascontiguousarray(U[i, :, :k])
            Pk = np.ascontiguousarray(Psi[i, :k, :k])
            qd = Pk @ (np.ascontiguousarray(u[i, :k]) - Ui.T @ a)
            for c in range(k):
                qddot[dof0[i] + c] = qd[c]
        Vdot[i] = a + eta[i] + _joint_twist(Sb, ndof, dof0, i, qddot)
        F = Mh[i] @ Vdot[i] + Bh[i]
        for c in range(k):
            tau_out[dof0[i] + c] = _col_dot(Sb[i], c, F)
    return qddot, tau_out, Vdot
