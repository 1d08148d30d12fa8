"""Compiled tree recursions (numba) shared by kinematics and dynamics.

All arrays are in tree order (parents before children, depth first).  Per
node ``i`` with parent ``p`` (``-1`` for the world):

- ``X[i] = Ad(E_i^{-1} E_p)`` maps the parent's body twist to ``i``'s body frame,
- ``Sb[i] = Ad(frame_child) S`` is the joint Jacobian in ``i``'s body frame
  (columns past ``ndof[i]`` are zero), ``Sbd[i]`` its time derivative,
- ``d/dt X[i] = -ad(Sb[i] qdot_i) X[i]`` (derived from
  ``E_i^{-1} E_p = frame_child Q^{-1} frame_parent^{-1}``; it replaces the
  world-frame product of Sueda's notes, eq. 2.17).

The recursions are REDMAX supplement, Alg. 1 (J and Jdot), Alg. 2–3 (products) and
Alg. 6 (recursive hybrid dynamics), written in body frames.
"""

from __future__ import annotations

import numpy as np

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 17.0

FIXED, REVOLUTE, PRISMATIC, OTHER = 0, 1, 2, -1

# Small fixed-size products are written as loops: numba then compiles them
# inline instead of calling BLAS for every 6x6 block.


@njit(cache=True)
def _mv(A, x):  # noqa: ANN001, ANN202
    """``A x`` for (6, 6) ``A``."""
    out = np.empty(6)
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] = s
    return out


@njit(cache=True)
def _mtv(A, x):  # noqa: ANN001, ANN202
    """``A^T x`` for (6, 6) ``A``."""
    out = np.zeros(6)
    for c in range(6):
        xc = x[c]
        for r in range(6):
            out[r] += A[c, r] * xc
    return out


@njit(cache=True)
def _cross(a0, a1, a2, b0, b1, b2):  # noqa: ANN001, ANN202
    return a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@njit(cache=True)
def _ad_mul(v, x):  # noqa: ANN001, ANN202
    """``ad(v) x = (w x x_w, n x x_w + w x x_n)`` (Sueda's notes, eq. 1.19)."""
    out = np.empty(6)
    a = _cross(v[0], v[1], v[2], x[0], x[1], x[2])
    b = _cross(v[3], v[4], v[5], x[0], x[1], x[2])
    c = _cross(v[0], v[1], v[2], x[3], x[4], x[5])
    for r in range(3):
        out[r] = a[r]
        out[r + 3] = b[r] + c[r]
    return out


@njit(cache=True)
def _adT_mul(v, y):  # noqa: ANN001, ANN202
    """``ad(v)^T y = (-(w x y_w) - n x y_n, -(w x y_n))``."""
    out = np.empty(6)
    a = _cross(v[0], v[1], v[2], y[0], y[1], y[2])
    b = _cross(v[3], v[4], v[5], y[3], y[4], y[5])
    c = _cross(v[0], v[1], v[2], y[3], y[4], y[5])
    for r in range(3):
        out[r] = -a[r] - b[r]
        out[r + 3] = -c[r]
    return out


@njit(cache=True)
def _ad(v):  # noqa: ANN001, ANN202
    out = np.zeros((6, 6))
    for c in range(6):
        e = np.zeros(6)
        e[c] = 1.0
        out[:, c] = _ad_mul(v, e)
    return out


@njit(cache=True)
def _mv_into(A, x, out):  # noqa: ANN001, ANN202
    """``out = A x`` for (6, 6) ``A``."""
    for r in range(6):
        s = 0.0
        for c in range(6):
            s += A[r, c] * x[c]
        out[r] = s


@njit(cache=True)
def _mtv_add(A, x, out):  # noqa: ANN001, ANN202
    """``out += A^T x`` for (6, 6) ``A``."""
    for c in range(6):
        xc = x[c]
        for r in range(6):
            out[r] += A[c, r] * xc


@njit(cache=True)
def _ad_mul_into(v, x, out):  # noqa: ANN001, ANN202
    """``out = ad(v) x``."""
    a = _cross(v[0], v[1], v[2], x[0], x[1], x[2])
    b = _cross(v[3], v[4], v[5], x[0], x[1], x[2])
    c = _cross(v[0], v[1], v[2], x[3], x[4], x[5])
    for r in range(3):
        out[r] = a[r]
        out[r + 3] = b[r] + c[r]


@njit(cache=True)
def _joint_twist_into(Sb, ndof, dof0, i, x, out):  # noqa: ANN001, ANN202
    """``out = Sb[i] x_i``."""
    for r in range(6):
        out[r] = 0.0
    for c in range(ndof[i]):
        xc = x[dof0[i] + c]
        for r in range(6):
            out[r] += Sb[i, r, c] * xc


@njit(cache=True)
def _add_congruence_scratch(out, X, P, T):  # noqa: ANN001, ANN202
    """``out += X^T P X`` using the (6, 6) scratch ``T``."""
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += P[r, k] * X[k, c]
            T[r, c] = s
    for r in range(6):
        for c in range(6):
            s = 0.0
            for k in range(6):
                s += X[k, r] * T[k, c]
            out[r, c] += s


@njit(cache=True)
def _mul44_into(A, B, out):  # noqa: ANN001, ANN202
    """``out = A B`` for rigid transforms (bottom row (0, 0, 0, 1))."""
    for r in range(3):
        for c in range(4):
            s = A[r, 3] if c == 3 else 0.0
            for k in range(3):
                s += A[r, k] * B[k, c]
            out[r, c] = s
    out[3, 0] = out[3, 1] = out[3, 2] = 0.0
    out[3, 3] = 1.0


@njit(cache=True)
def _adjoint_of_inverse_into(L, out):  # noqa: ANN001, ANN202
    """``out = Ad(L^{-1}) = [[R^T, 0], [[t] R^T, R^T]]`` with ``t = -R^T p``."""
    t0 = -(L[0, 0] * L[0, 3] + L[1, 0] * L[1, 3] + L[2, 0] * L[2, 3])
    t1 = -(L[0, 1] * L[0, 3] + L[1, 1] * L[1, 3] + L[2, 1] * L[2, 3])
    t2 = -(L[0, 2] * L[0, 3] + L[1, 2] * L[1, 3] + L[2, 2] * L[2, 3])
    for c in range(3):
        col = _cross(t0, t1, t2, L[c, 0], L[c, 1], L[c, 2])  # [t] (R^T e_c)
        for r in range(3):
            out[r, c] = L[c, r]
            out[r + 3, c + 3] = L[c, r]
            out[r + 3, c] = col[r]
            out[r, c + 3] = 0.0


@njit(cache=True)
def _joint_twist(Sb, ndof, dof0, i, x):  # noqa: ANN001, ANN202
    """``Sb[i] x_i``: the columns of node ``i`` times its slice of ``x``."""
    v = np.zeros(6)
    for c in range(ndof[i]):
        xc = x[dof0[i] + c]
        for r in range(6):
            v[r] += Sb[i, r, c] * xc
    return v


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
            for r in range(3):
                for c in range(3):
                    KK = K[r, 0] * K[0, c] + K[r, 1] * K[1, c] + K[r, 2] * K[2, c]
                    Q[i, r, c] += s * K[r, c] + c1 * KK
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
    A = np.empty((4, 4))
    L = np.empty((4, 4))
    v = np.empty(6)
    for i in range(n):
        _mul44_into(Fp[i], Q[i], A)
        _mul44_into(A, Fc_inv[i], L)
        p = parent[i]
        if p < 0:
            E[i] = L
        else:
            _mul44_into(E[p], L, E[i])
        _adjoint_of_inverse_into(L, X[i])
        for c in range(ndof[i]):
            for r in range(6):
                s = 0.0
                sd = 0.0
                for k in range(6):
                    s += AdFc[i, r, k] * S[i, k, c]
                    sd += AdFc[i, r, k] * Sd[i, k, c]
                Sb[i, r, c] = s
                Sbd[i, r, c] = sd
        _joint_twist_into(Sb, ndof, dof0, i, qdot, v)
        if p >= 0:
            _mv_into(X[i], V[p], V[i])
        for r in range(6):
            V[i, r] += v[r]
    return E, X, Sb, Sbd, V


@njit(cache=True)
def jacobians(parent, X, Sb, Sbd, ndof, dof0, qdot, nq):  # noqa: ANN001, ANN201
    """Dense ``J`` and ``Jdot`` (6n, nq), rows in tree order (REDMAX supplement, Alg. 1)."""
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
    """``y = J x`` and ``z = Jdot x`` as (n, 6) in O(n) (REDMAX supplement, Alg. 2)."""
    n = parent.shape[0]
    y = np.zeros((n, 6))
    z = np.zeros((n, 6))
    for i in range(n):
        yi = _joint_twist(Sb, ndof, dof0, i, x)
        zi = _joint_twist(Sbd, ndof, dof0, i, x)
        p = parent[i]
        if p >= 0:
            Xy = _mv(X[i], y[p])
            yi += Xy
            zi += _mv(X[i], z[p]) - _ad_mul(_joint_twist(Sb, ndof, dof0, i, qdot), Xy)
        y[i] = yi
        z[i] = zi
    return y, z


@njit(cache=True)
def jacobian_transpose_product(parent, X, Sb, ndof, dof0, y, nq):  # noqa: ANN001, ANN201
    """``x = J^T y`` for body wrenches ``y`` (n, 6) in O(n) (REDMAX supplement, Alg. 3)."""
    n = parent.shape[0]
    acc = y.copy()
    x = np.zeros(nq)
    for i in range(n - 1, -1, -1):
        for c in range(ndof[i]):
            x[dof0[i] + c] = _col_dot(Sb[i], c, acc[i])
        p = parent[i]
        if p >= 0:
            acc[p] += _mtv(X[i], acc[i])
    return x


@njit(cache=True)
def hybrid_dynamics(  # noqa: ANN201, PLR0913
    parent, X, Sb, Sbd, ndof, dof0, qdot, V, inertia, Fext, tau, prescribed, qddot_in, armature
):  # noqa: ANN001
    """Recursive hybrid dynamics in body frames (REDMAX supplement, Alg. 6).

    Nodes with ``prescribed[i]`` take ``qddot_in`` and report the torque that
    produces it; the others take ``tau`` and return their acceleration.
    ``Fext`` are applied body wrenches (n, 6) (gravity included); joint
    forces are in ``tau``; ``armature`` (nq,) is the rotor inertia added to the
    diagonal of ``M`` (``D = S^T U + diag(armature)``, ``tau = S^T f + a qddot``).
    Returns ``(qddot, tau_out, Vdot)``.

    Per node (body frames, ``X`` the parent-to-child adjoint):
    ``Mh = M + sum_c X_c^T Pi_c X_c``,
    ``Bh = -ad(V)^T M V - F_ext + sum_c X_c^T beta_c``; for a free joint
    ``U = Mh S``, ``Psi = (S^T U)^{-1}``, ``u = tau - S^T (Mh eta + Bh)``,
    ``Pi = Mh - U Psi U^T``, ``beta = Bh + Mh eta + U Psi u``; then forward
    ``qddot = Psi (u - U^T X Vdot_p)``, ``Vdot = X Vdot_p + S qddot + eta``.
    """
    n = parent.shape[0]
    nq = qdot.shape[0]
    Mh = np.zeros((n, 6, 6))
    Bh = np.zeros((n, 6))
    eta = np.zeros((n, 6))
    U = np.zeros((n, 6, 6))
    Psi = np.zeros((n, 6, 6))
    u = np.zeros((n, 6))
    t1 = np.empty(6)
    t2 = np.empty(6)
    w = np.empty(6)
    beta = np.empty(6)
    Pi = np.empty((6, 6))
    T = np.empty((6, 6))
    for i in range(n):
        _joint_twist_into(Sb, ndof, dof0, i, qdot, t1)
        _ad_mul_into(V[i], t1, eta[i])
        _joint_twist_into(Sbd, ndof, dof0, i, qdot, t1)
        for r in range(6):
            eta[i, r] += t1[r]
            Mh[i, r, r] = inertia[i, r]
            t2[r] = inertia[i, r] * V[i, r]
        t1[:] = _adT_mul(V[i], t2)
        for r in range(6):
            Bh[i, r] = -t1[r] - Fext[i, r]
    for i in range(n - 1, -1, -1):
        k = ndof[i]
        M = Mh[i]
        if prescribed[i] or k == 0:
            _joint_twist_into(Sb, ndof, dof0, i, qddot_in, t1)
            for r in range(6):
                t1[r] += eta[i, r]
            _mv_into(M, t1, beta)
            for r in range(6):
                beta[r] += Bh[i, r]
                for c in range(6):
                    Pi[r, c] = M[r, c]
        else:
            for c in range(k):
                for r in range(6):
                    s = 0.0
                    for m in range(6):
                        s += M[r, m] * Sb[i, m, c]
                    U[i, r, c] = s
            if k == 1:
                Psi[i, 0, 0] = 1.0 / (_col_dot(Sb[i], 0, U[i, :, 0]) + armature[dof0[i]])
            else:
                D = np.empty((k, k))
                for a in range(k):
                    for b in range(k):
                        D[a, b] = _col_dot(Sb[i], a, U[i, :, b])
                    D[a, a] += armature[dof0[i] + a]
                Psi[i, :k, :k] = np.linalg.inv(D)
            _mv_into(M, eta[i], t1)
            for r in range(6):
                t1[r] += Bh[i, r]  # Mh eta + Bh
            for c in range(k):
                u[i, c] = tau[dof0[i] + c] - _col_dot(Sb[i], c, t1)
            for a in range(k):
                s = 0.0
                for b in range(k):
                    s += Psi[i, a, b] * u[i, b]
                w[a] = s
            for r in range(6):
                s = t1[r]
                for a in range(k):
                    s += U[i, r, a] * w[a]
                beta[r] = s
            for r in range(6):
                for a in range(k):
                    s = 0.0
                    for b in range(k):
                        s += U[i, r, b] * Psi[i, b, a]
                    t2[a] = s  # row r of U Psi
                for c in range(6):
                    s = M[r, c]
                    for a in range(k):
                        s -= t2[a] * U[i, c, a]
                    Pi[r, c] = s
        p = parent[i]
        if p >= 0:
            _add_congruence_scratch(Mh[p], X[i], Pi, T)
            _mtv_add(X[i], beta, Bh[p])
    qddot = np.zeros(nq)
    tau_out = np.zeros(nq)
    Vdot = np.zeros((n, 6))
    a6 = np.zeros(6)
    for i in range(n):
        k = ndof[i]
        p = parent[i]
        if p >= 0:
            _mv_into(X[i], Vdot[p], a6)
        else:
            a6[:] = 0.0
        if prescribed[i] or k == 0:
            for c in range(k):
                qddot[dof0[i] + c] = qddot_in[dof0[i] + c]
        else:
            for c in range(k):
                w[c] = u[i, c] - _col_dot(U[i], c, a6)
            for c in range(k):
                s = 0.0
                for b in range(k):
                    s += Psi[i, c, b] * w[b]
                qddot[dof0[i] + c] = s
        _joint_twist_into(Sb, ndof, dof0, i, qddot, t1)
        for r in range(6):
            Vdot[i, r] = a6[r] + eta[i, r] + t1[r]
        _mv_into(Mh[i], Vdot[i], t2)
        for r in range(6):
            t2[r] += Bh[i, r]
        for c in range(k):
            j = dof0[i] + c
            tau_out[j] = _col_dot(Sb[i], c, t2) + armature[j] * qddot[j]
    return qddot, tau_out, Vdot
