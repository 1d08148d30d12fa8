"""Compiled partial derivatives of recursive inverse dynamics (Guenter & Rose).

Guenter and Rose differentiate the Balafoutis-Patel recursion coordinate
by coordinate: a forward recursion of the partials of the velocities and
accelerations over the links below joint ``j``, then a backward recursion of
the partials of the transmitted forces.  Written with body twists (the
notation of :mod:`contactlab.reduced._fast`) for a coordinate ``q_m`` of node
``j`` with body-frame column ``s = Sb_j[:, m]``, the seed's recursions
become (re-derived; ``X_j = Ad(E_j^{-1} E_p)`` so ``dX_j/dq_m = -ad(s) X_j``):

at ``j``
    ``dV_j = ad(X_j V_p) s + dSb qd_j``,
    ``dA_j = ad(X_j A_p) s + dSb qdd_j + dc_j + ad(dV_j) Sb qd_j + ad(V_j) dSb qd_j``;
below ``j``
    ``dV_i = X_i dV_p``, ``dA_i = X_i dA_p + ad(dV_i) Sb_i qd_i``;
each body
    ``df_i`` by :func:`~contactlab.reduced._fast.body_force_diff` (Guenter & Rose's
    ``dOmega``, ``dM``, ``dF``);
backward
    ``dF_i = df_i + sum_c X_c^T dF_c`` in the subtree, plus
    ``(dX_j)^T F_j = -X_j^T ad(s)^T F_j`` when passing ``j``'s parent;
torques
    ``dtau_i = Sb_i^T dF_i`` (plus ``dSb^T F_j`` at ``j``).

For ``qdot_m``: ``dV_j = s``, ``dA_j = ad(X_j V_p) s + dc_j/dqd_m``, the rest
as above with ``dX = 0``.  ``dSb`` and ``dc`` vanish for revolute and
prismatic nodes; spherical nodes take them from the derivatives of the
right Jacobian.  Each column costs O(size of the subtree + depth).
"""

from __future__ import annotations

import numpy as np

from contactlab.reduced._fast import (
    ADFC,
    DOF0,
    END,
    EXT,
    INERTIA,
    KIND,
    NDOF,
    OTHER,
    PARENT,
    SPHERICAL,
    _ad_mul,
    _adt_mul,
    _check_lengths,
    _congruence_add,
    _x_mul,
    _xt_mul_add,
    body_force_diff,
    node_kinematics,
    right_jacobian_terms,
    rnea_pass,
)
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 12.0


@njit(cache=True)
def _adfc3(g, w, out):  # noqa: ANN001, ANN202
    """``out = Ad(frame_child)[:, :3] w`` (an angular joint-frame column to the body frame)."""
    for r in range(6):
        out[r] = g[ADFC + 6 * r] * w[0] + g[ADFC + 6 * r + 1] * w[1] + g[ADFC + 6 * r + 2] * w[2]


@njit(cache=True)
def _mul33(J, x, out, keep):  # noqa: ANN001, ANN202
    """``out = keep * out + J x`` for (3, 3) ``J``."""
    for r in range(3):
        out[r] = keep * out[r] + J[r, 0] * x[0] + J[r, 1] * x[1] + J[r, 2] * x[2]


@njit(cache=True)
def inverse_dynamics_derivatives(topo, geom, dofp, ext, q, qd, qdd, fext, dext):  # noqa: ANN001, ANN201, PLR0912, PLR0915
    """``(dtau/dq, dtau/dqd)`` (nq, nq) of the applied torques.

    ``dext`` (m, 6, 6, 8): derivatives of the joint maps of ``OTHER`` nodes in the
    joint frame, per coordinate ``a`` of the node: ``[a, :, b]`` = ``dS[:, b]/dq_a``
    (b < ndof), ``[a, :, 6]`` = ``dc/dq_a`` and ``[a, :, 7]`` = ``dc/dqd_a`` for
    ``c = Sdot qd``; a node whose row is NaN at ``[0, 0, 0, 0]`` (or ``dext`` with
    no rows) has no analytic maps and its columns are left zero.
    """
    n = topo.shape[0]
    nq = dofp.shape[1]
    _check_lengths(dofp, q, qd, qdd)
    X = np.zeros((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.zeros((n, 6))
    V = np.zeros((n, 6))
    A = np.zeros((n, 6))
    F = np.zeros((n, 6))
    rnea_pass(topo, geom, ext, q, qd, qdd, fext, X, Sb, c, V, A, F)
    vq = np.zeros((n, 6))
    for i in range(n):
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        for r in range(6):
            s = 0.0
            for m in range(nd):
                s += Sb[i, r, m] * qd[k0 + m]
            vq[i, r] = s
    out_q = np.zeros((nq, nq))
    out_qd = np.zeros((nq, nq))
    dV = np.zeros((n, 6))
    dA = np.zeros((n, 6))
    dF = np.zeros((n, 6))
    xvp = np.zeros(6)
    xap = np.zeros(6)
    s6 = np.zeros(6)
    t1 = np.zeros(6)
    t2 = np.zeros(6)
    gv = np.zeros(6)
    ag = np.zeros(6)
    for r in range(3):
        ag[r + 3] = -geom[n, r]
    dSb = np.zeros((3, 6))
    J0 = np.zeros((3, 3))
    J1 = np.zeros((3, 3))
    J2 = np.zeros((3, 3))
    Jqd = np.zeros((3, 3))
    e3 = np.zeros(3)
    w3 = np.zeros(3)
    dSo = np.zeros((6, 6))
    for j in range(n):
        kind, nd, k0 = topo[j, KIND], topo[j, NDOF], topo[j, DOF0]
        if nd == 0:
            continue
        erow = topo[j, EXT]
        if kind == OTHER and (dext.shape[0] == 0 or np.isnan(dext[erow, 0, 0, 0])):
            continue
        p = topo[j, PARENT]
        if p >= 0:
            _x_mul(X[j], V[p], xvp)
            _x_mul(X[j], A[p], xap)
        else:
            for r in range(6):
                xvp[r] = 0.0
            _x_mul(X[j], ag, xap)
        end = topo[j, END]
        g = geom[j]
        qj = q[k0 : k0 + nd].copy()
        qdj = qd[k0 : k0 + nd].copy()
        qddj = qdd[k0 : k0 + nd].copy()
        if kind == SPHERICAL:
            right_jacobian_terms(qj, qdj, qdj, J0, Jqd, J2)
        for a in range(nd):
            m = k0 + a
            for r in range(6):
                s6[r] = Sb[j, r, a]
            for mode in range(2):
                if kind == SPHERICAL:
                    e3[:] = 0.0
                    e3[a] = 1.0
                    # J1 = dJr[e_a], J2 = d2Jr[e_a, qd]
                    right_jacobian_terms(qj, e3, qdj, J0, J1, J2)
                if mode == 0:
                    _ad_mul(xvp, s6, dV[j])
                    _ad_mul(xap, s6, dA[j])
                    if kind == SPHERICAL:
                        for b in range(3):
                            for r in range(3):
                                e3[r] = J1[r, b]
                            _adfc3(g, e3, dSb[b])
                        _mul33(J1, qdj, w3, 0.0)
                        _adfc3(g, w3, t1)  # dSb qd_j
                        for r in range(6):
                            dV[j, r] += t1[r]
                        _mul33(J1, qddj, w3, 0.0)
                        _mul33(J2, qdj, w3, 1.0)
                        _adfc3(g, w3, t2)  # dSb qdd_j + dc_j
                        for r in range(6):
                            dA[j, r] += t2[r]
                        _ad_mul(V[j], t1, t2)
                        for r in range(6):
                            dA[j, r] += t2[r]
                    if kind == OTHER:
                        dx = dext[erow, a]
                        for b in range(nd):
                            for r in range(6):
                                s = 0.0
                                for k in range(6):
                                    s += g[ADFC + 6 * r + k] * dx[k, b]
                                dSo[b, r] = s
                        for r in range(6):  # t1 = dSb qd_j, t2 = dSb qdd_j + dc_j
                            s1 = 0.0
                            s2 = 0.0
                            for b in range(nd):
                                s1 += dSo[b, r] * qdj[b]
                                s2 += dSo[b, r] * qddj[b]
                            for k in range(6):
                                s2 += g[ADFC + 6 * r + k] * dx[k, 6]
                            t1[r] = s1
                            t2[r] = s2
                        for r in range(6):
                            dV[j, r] += t1[r]
                            dA[j, r] += t2[r]
                        _ad_mul(V[j], t1, t2)
                        for r in range(6):
                            dA[j, r] += t2[r]
                    _ad_mul(dV[j], vq[j], t2)
                    for r in range(6):
                        dA[j, r] += t2[r]
                else:
                    for r in range(6):
                        dV[j, r] = s6[r]
                    _ad_mul(xvp, s6, dA[j])
                    if kind == SPHERICAL:
                        _mul33(J1, qdj, w3, 0.0)
                        for r in range(3):
                            w3[r] += Jqd[r, a]
                        _adfc3(g, w3, t1)
                        for r in range(6):
                            dA[j, r] += t1[r]
                    elif kind == OTHER:
                        dx = dext[erow, a]
                        for r in range(6):
                            s = 0.0
                            for k in range(6):
                                s += g[ADFC + 6 * r + k] * dx[k, 7]
                            dA[j, r] += s
                for i in range(j + 1, end):
                    pi = topo[i, PARENT]
                    _x_mul(X[i], dV[pi], dV[i])
                    _x_mul(X[i], dA[pi], dA[i])
                    _ad_mul(dV[i], vq[i], t1)
                    for r in range(6):
                        dA[i, r] += t1[r]
                for i in range(j, end):
                    body_force_diff(geom[i], V[i], dV[i], dA[i], dF[i])
                for i in range(end - 1, j, -1):
                    _xt_mul_add(X[i], dF[i], dF[topo[i, PARENT]])
                out = out_q if mode == 0 else out_qd
                for i in range(j, end):
                    i0, idn = topo[i, DOF0], topo[i, NDOF]
                    for b in range(idn):
                        s = 0.0
                        for r in range(6):
                            s += Sb[i, r, b] * dF[i, r]
                        out[i0 + b, m] = s
                if mode == 0 and kind == SPHERICAL:
                    for b in range(3):
                        s = 0.0
                        for r in range(6):
                            s += dSb[b, r] * F[j, r]
                        out[k0 + b, m] += s
                if mode == 0 and kind == OTHER:
                    for b in range(nd):
                        s = 0.0
                        for r in range(6):
                            s += dSo[b, r] * F[j, r]
                        out[k0 + b, m] += s
                if p < 0:
                    continue
                for r in range(6):
                    gv[r] = 0.0
                _xt_mul_add(X[j], dF[j], gv)
                if mode == 0:
                    _adt_mul(s6, F[j], t1)
                    for r in range(6):
                        t2[r] = 0.0
                    _xt_mul_add(X[j], t1, t2)
                    for r in range(6):
                        gv[r] -= t2[r]
                i = p
                while i >= 0:
                    i0, idn = topo[i, DOF0], topo[i, NDOF]
                    for b in range(idn):
                        s = 0.0
                        for r in range(6):
                            s += Sb[i, r, b] * gv[r]
                        out[i0 + b, m] = s
                    pi = topo[i, PARENT]
                    if pi >= 0:
                        for r in range(6):
                            t1[r] = 0.0
                        _xt_mul_add(X[i], gv, t1)
                        for r in range(6):
                            gv[r] = t1[r]
                    i = pi
    for k in range(nq):
        out_q[k, k] += dofp[0, k]
        out_qd[k, k] += dofp[1, k]
    return out_q, out_qd


@njit(cache=True)
def _sym_matvec(P, x, out):  # noqa: ANN001, ANN202
    for r in range(6):
        s = 0.0
        for k in range(6):
            s += P[r, k] * x[k]
        out[r] = s


@njit(cache=True)
def _dot6(a, b):  # noqa: ANN001, ANN202
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5]


@njit(cache=True)
def inverse_dynamics_derivatives_composite(topo, geom, dofp, ext, q, qd, qdd, fext):  # noqa: ANN001, ANN201, PLR0912, PLR0915
    """The same partials for trees of one-coordinate screw nodes, O(1) per matrix entry.

    Guenter & Rose's recursions evaluated in world coordinates (spatial vectors at
    the world origin): a change of ``q_k`` turns the subtree of ``k`` rigidly
    about the world axis ``S_k``, except for the parent's velocity ``V_p``
    and acceleration ``A_p``.  The rigid part cancels in ``tau_j = S_j . F_j``
    for ``j`` below ``k``; what remains is linear in per-joint vectors
    ``psi_k = ad(S_k) V_p`` and ``a_k = -ad(S_k) A_p - ad(V_p) psi_k`` and in
    subtree sums (composite inertia ``Ic``, ``B = sum I ad(V) + ad(V)^T I
    + C(I V)`` with ``ad(psi)^T y = C(y) psi``, forces ``F``):

    - ``j`` at or below ``k``: ``dtau_j/dq_k = S_j . (Ic_j a_k + B_j psi_k)``,
      ``dtau_j/dqd_k = -S_j . (B_j S_k + 2 Ic_j psi_k)``;
    - ``j`` above ``k``: ``S_j . (-ad(S_k)^T F_k + Ic_k a_k + B_k psi_k)`` and
      ``-S_j . (B_k S_k + 2 Ic_k psi_k)``;
    - the mass matrix on the way, ``M_jk = S_j . Ic_j S_k`` for ``j`` at or below ``k``.

    Returns ``(dtau/dq, dtau/dqd, M)``.
    """
    n = topo.shape[0]
    nq = dofp.shape[1]
    _check_lengths(dofp, q, qd, qdd)
    scr = np.empty((6, 3, 3))
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.empty((n, 6))
    R = np.empty((n, 3, 3))
    pw = np.empty((n, 3))
    S = np.zeros((n, 6))  # world joint axes (zero for fixed nodes)
    V = np.zeros((n, 6))
    A = np.zeros((n, 6))
    Ic = np.zeros((n, 6, 6))
    B = np.zeros((n, 6, 6))
    F = np.zeros((n, 6))
    Xw = np.zeros((6, 6))
    Ib = np.zeros((6, 6))
    T = np.empty((6, 6))
    tt = np.empty(3)
    h = np.empty(6)
    t1 = np.empty(6)
    t2 = np.empty(6)
    ag = np.zeros(6)
    for r in range(3):
        ag[r + 3] = -geom[n, r]
    for i in range(n):
        node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr)
        x = X[i]
        pl = scr[2, 1]  # translation of L = frame_parent Q frame_child^{-1}; R_L = x[:3, :3]^T
        pa = topo[i, PARENT]
        for r in range(3):
            for k in range(3):
                if pa >= 0:
                    R[i, r, k] = (
                        R[pa, r, 0] * x[k, 0] + R[pa, r, 1] * x[k, 1] + R[pa, r, 2] * x[k, 2]
                    )
                else:
                    R[i, r, k] = x[k, r]
            if pa >= 0:
                pw[i, r] = (
                    pw[pa, r] + R[pa, r, 0] * pl[0] + R[pa, r, 1] * pl[1] + R[pa, r, 2] * pl[2]
                )
            else:
                pw[i, r] = pl[r]
        # Xw = Ad(E_i^{-1}) = [[R^T, 0], [[t] R^T, R^T]], t = -R^T p  (world -> body)
        for r in range(3):
            tt[r] = -(R[i, 0, r] * pw[i, 0] + R[i, 1, r] * pw[i, 1] + R[i, 2, r] * pw[i, 2])
            for k in range(3):
                Xw[r, k] = R[i, k, r]
                Xw[r + 3, k + 3] = R[i, k, r]
        for k in range(3):
            Xw[3, k] = tt[1] * Xw[2, k] - tt[2] * Xw[1, k]
            Xw[4, k] = tt[2] * Xw[0, k] - tt[0] * Xw[2, k]
            Xw[5, k] = tt[0] * Xw[1, k] - tt[1] * Xw[0, k]
        # world axis S = Ad(E) Sb: w = R wb, v = R vb + p x (R wb)
        if topo[i, NDOF] == 1:
            for r in range(3):
                S[i, r] = (
                    R[i, r, 0] * Sb[i, 0, 0] + R[i, r, 1] * Sb[i, 1, 0] + R[i, r, 2] * Sb[i, 2, 0]
                )
            for r in range(3):
                t1[r] = (
                    R[i, r, 0] * Sb[i, 3, 0] + R[i, r, 1] * Sb[i, 4, 0] + R[i, r, 2] * Sb[i, 5, 0]
                )
            S[i, 3] = t1[0] + pw[i, 1] * S[i, 2] - pw[i, 2] * S[i, 1]
            S[i, 4] = t1[1] + pw[i, 2] * S[i, 0] - pw[i, 0] * S[i, 2]
            S[i, 5] = t1[2] + pw[i, 0] * S[i, 1] - pw[i, 1] * S[i, 0]
        k0 = topo[i, DOF0]
        vq = qd[k0] if topo[i, NDOF] == 1 else 0.0
        aq = qdd[k0] if topo[i, NDOF] == 1 else 0.0
        for r in range(6):
            V[i, r] = (V[pa, r] if pa >= 0 else 0.0) + S[i, r] * vq
        _ad_mul(V[i], S[i], t1)
        for r in range(6):
            A[i, r] = (A[pa, r] if pa >= 0 else ag[r]) + S[i, r] * aq + t1[r] * vq
        # world inertia Iw = Xw^T Ib Xw; f = Iw A - ad(V)^T Iw V - Xw^T fext_b
        for r in range(6):
            Ib[r, r] = geom[i, INERTIA + r]
        _congruence_add(Xw, Ib, Ic[i], T)
        _sym_matvec(Ic[i], A[i], F[i])
        _sym_matvec(Ic[i], V[i], h)
        _adt_mul(V[i], h, t1)
        for r in range(6):
            F[i, r] -= t1[r]
        if fext.shape[0] > 0:
            for r in range(6):
                t1[r] = 0.0
            _xt_mul_add(Xw, fext[i], t1)
            for r in range(6):
                F[i, r] -= t1[r]
        # B = I ad(V) + ad(V)^T I + C(I V), C(y) = [[[y_w], [y_v]], [[y_v], 0]]
        for col in range(6):
            for r in range(6):
                t2[r] = 0.0
            t2[col] = 1.0
            _ad_mul(V[i], t2, t1)  # ad(V) e_col
            for r in range(6):
                s = 0.0
                for m in range(6):
                    s += Ic[i, r, m] * t1[m]
                B[i, r, col] = s
            for r in range(6):
                t1[r] = Ic[i, r, col]
            _adt_mul(V[i], t1, t2)  # ad(V)^T I e_col
            for r in range(6):
                B[i, r, col] += t2[r]
        hw0, hw1, hw2, hv0, hv1, hv2 = h[0], h[1], h[2], h[3], h[4], h[5]
        B[i, 0, 1] -= hw2
        B[i, 0, 2] += hw1
        B[i, 1, 0] += hw2
        B[i, 1, 2] -= hw0
        B[i, 2, 0] -= hw1
        B[i, 2, 1] += hw0
        B[i, 0, 4] -= hv2
        B[i, 0, 5] += hv1
        B[i, 1, 3] += hv2
        B[i, 1, 5] -= hv0
        B[i, 2, 3] -= hv1
        B[i, 2, 4] += hv0
        B[i, 3, 1] -= hv2
        B[i, 3, 2] += hv1
        B[i, 4, 0] += hv2
        B[i, 4, 2] -= hv0
        B[i, 5, 0] -= hv1
        B[i, 5, 1] += hv0
    for i in range(n - 1, 0, -1):
        pa = topo[i, PARENT]
        if pa >= 0:
            for r in range(6):
                F[pa, r] += F[i, r]
                for m in range(6):
                    Ic[pa, r, m] += Ic[i, r, m]
                    B[pa, r, m] += B[i, r, m]
    # per joint: u = Ic S, w = B^T S (row vectors of the entries below), G, H (entries above)
    u = np.zeros((n, 6))
    w = np.zeros((n, 6))
    for j in range(n):
        for r in range(6):
            su = 0.0
            sw = 0.0
            for m in range(6):
                su += Ic[j, r, m] * S[j, m]
                sw += B[j, m, r] * S[j, m]
            u[j, r] = su
            w[j, r] = sw
    out_q = np.zeros((nq, nq))
    out_qd = np.zeros((nq, nq))
    M = np.zeros((nq, nq))
    psi = np.empty(6)
    ak = np.empty(6)
    G = np.empty(6)
    H = np.empty(6)
    for k in range(n):
        if topo[k, NDOF] != 1:
            continue
        m = topo[k, DOF0]
        pa = topo[k, PARENT]
        if pa >= 0:
            _ad_mul(S[k], V[pa], psi)
            _ad_mul(S[k], A[pa], ak)
            _ad_mul(V[pa], psi, t1)
            for r in range(6):
                ak[r] = -ak[r] - t1[r]
        else:
            for r in range(6):
                psi[r] = 0.0
            _ad_mul(S[k], ag, ak)
            for r in range(6):
                ak[r] = -ak[r]
        for j in range(k, topo[k, END]):
            if topo[j, NDOF] != 1:
                continue
            row = topo[j, DOF0]
            out_q[row, m] = _dot6(u[j], ak) + _dot6(w[j], psi)
            out_qd[row, m] = -_dot6(w[j], S[k]) - 2.0 * _dot6(u[j], psi)
            M[row, m] = M[m, row] = _dot6(u[j], S[k])
        if pa < 0:
            continue
        _adt_mul(S[k], F[k], t1)
        _sym_matvec(Ic[k], ak, t2)
        _sym_matvec(B[k], psi, G)
        for r in range(6):
            G[r] += t2[r] - t1[r]
        _sym_matvec(B[k], S[k], H)
        _sym_matvec(Ic[k], psi, t2)
        for r in range(6):
            H[r] = -H[r] - 2.0 * t2[r]
        j = pa
        while j >= 0:
            if topo[j, NDOF] == 1:
                row = topo[j, DOF0]
                out_q[row, m] = _dot6(S[j], G)
                out_qd[row, m] = _dot6(S[j], H)
            j = topo[j, PARENT]
    for k in range(nq):
        out_q[k, k] += dofp[0, k]
        out_qd[k, k] += dofp[1, k]
        M[k, k] += dofp[3, k]
    return out_q, out_qd, M
