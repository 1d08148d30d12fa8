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
    SCONST,
    SPHERICAL,
    _ad_mul,
    _adt_mul,
    _check_lengths,
    _coefficients,
    _x_mul,
    _xt_mul_add,
    body_force_diff,
    node_kinematics,
    right_jacobian_terms,
    rnea_pass,
)
from solvers.jit import njit
from solvers.numerics.dense import cholesky, cholesky_solve

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
    X, Sb, c, V, A, F = rnea_pass(topo, geom, ext, q, qd, qdd, fext)
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
def _cross_add(f, a, b, out):  # noqa: ANN001, ANN202
    """``out += f (a x b)`` for 3-vectors."""
    out[0] += f * (a[1] * b[2] - a[2] * b[1])
    out[1] += f * (a[2] * b[0] - a[0] * b[2])
    out[2] += f * (a[0] * b[1] - a[1] * b[0])


@njit(cache=True)
def _cross(a, b, out):  # noqa: ANN001, ANN202
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


@njit(cache=True)
def _jr_second_apply(r, u, e, y, co, out, t1, t2):  # noqa: ANN001, ANN202, PLR0913
    """``out = d^2 J_r[u, e] y`` (see :func:`~contactlab.reduced._fast.right_jacobian_terms`)
    by cross products, ``[a] y = a x y``; ``co = (b, c, b1, c1, b2, c2)``; ``t1``, ``t2``
    scratch."""
    _, c, b1, c1, b2, c2 = co[0], co[1], co[2], co[3], co[4], co[5]
    qu = r[0] * u[0] + r[1] * u[1] + r[2] * u[2]
    qe = r[0] * e[0] + r[1] * e[1] + r[2] * e[2]
    ue = u[0] * e[0] + u[1] * e[1] + u[2] * e[2]
    for k in range(3):
        out[k] = 0.0
    _cross_add(-b2 * qe * qu - b1 * ue, r, y, out)  # W y
    _cross_add(-b1 * qu, e, y, out)  # E y
    _cross_add(-b1 * qe, u, y, out)  # U y
    _cross(r, y, t1)
    _cross_add(c2 * qe * qu + c1 * ue, r, t1, out)  # W^2 y
    _cross_add(c1 * qu, e, t1, out)  # E W y
    _cross_add(c1 * qe, u, t1, out)  # U W y
    _cross(e, y, t2)
    _cross_add(c1 * qu, r, t2, out)  # W E y
    _cross_add(c, u, t2, out)  # U E y
    _cross(u, y, t2)
    _cross_add(c1 * qe, r, t2, out)  # W U y
    _cross_add(c, e, t2, out)  # E U y


@njit(cache=True)
def _world_inertia(g, R, p, out):  # noqa: ANN001, ANN202
    """Spatial inertia at the world origin of a body at ``(R, p)`` (centre of mass ``p``).

    ``[[R J R^T - m [p]^2, m [p]], [m [p]^T, m 1]]`` (angular first), ``J`` the
    principal moments ``geom[INERTIA:INERTIA + 3]``.
    """
    j0, j1, j2, m = g[INERTIA], g[INERTIA + 1], g[INERTIA + 2], g[INERTIA + 3]
    p0, p1, p2 = p[0], p[1], p[2]
    pp = p0 * p0 + p1 * p1 + p2 * p2
    for r in range(3):
        for k in range(r, 3):
            s = R[r, 0] * j0 * R[k, 0] + R[r, 1] * j1 * R[k, 1] + R[r, 2] * j2 * R[k, 2]
            s -= m * (p[r] * p[k] - (pp if r == k else 0.0))
            out[r, k] = s
            out[k, r] = s
        for k in range(3):
            out[r + 3, k + 3] = m if r == k else 0.0
    out[0, 3] = out[3, 0] = 0.0
    out[1, 4] = out[4, 1] = 0.0
    out[2, 5] = out[5, 2] = 0.0
    out[0, 4] = out[4, 0] = -m * p2
    out[0, 5] = out[5, 0] = m * p1
    out[1, 3] = out[3, 1] = m * p2
    out[1, 5] = out[5, 1] = -m * p0
    out[2, 3] = out[3, 2] = -m * p1
    out[2, 4] = out[4, 2] = m * p0


@njit(cache=True)
def _wrench_to_world_add(R, p, f, out, t3):  # noqa: ANN001, ANN202
    """``out += (R f_w + p x (R f_v), R f_v)``: a body wrench at the world origin."""
    for r in range(3):
        t3[r] = R[r, 0] * f[3] + R[r, 1] * f[4] + R[r, 2] * f[5]
        out[r] += R[r, 0] * f[0] + R[r, 1] * f[1] + R[r, 2] * f[2]
        out[r + 3] += t3[r]
    _cross_add(1.0, p, t3, out)


@njit(cache=True)
def _inertia_ad(Iw, v, P):  # noqa: ANN001, ANN202
    """``P = Iw ad(v)`` with ``ad(v) = [[[w], 0], [[n], [w]]]`` (18 nonzeros)."""
    w0, w1, w2, n0, n1, n2 = v[0], v[1], v[2], v[3], v[4], v[5]
    for r in range(6):
        i0, i1, i2, i3, i4, i5 = Iw[r, 0], Iw[r, 1], Iw[r, 2], Iw[r, 3], Iw[r, 4], Iw[r, 5]
        P[r, 0] = i1 * w2 - i2 * w1 + i4 * n2 - i5 * n1
        P[r, 1] = -i0 * w2 + i2 * w0 - i3 * n2 + i5 * n0
        P[r, 2] = i0 * w1 - i1 * w0 + i3 * n1 - i4 * n0
        P[r, 3] = i4 * w2 - i5 * w1
        P[r, 4] = -i3 * w2 + i5 * w0
        P[r, 5] = i3 * w1 - i4 * w0


@njit(cache=True)
def _djr_axis(r, a, co, out):  # noqa: ANN001, ANN202
    """``out = dJ_r[e_a] = -b1 r_a [r] - b [e_a] + c1 r_a [r]^2 + c ([e_a][r] + [r][e_a])``
    with ``[r]^2 = r r^T - |r|^2 1``, ``[e][r] + [r][e] = r e^T + e r^T - 2 (r.e) 1`` and the
    coefficients ``co = (b, c, b1, c1, ...)`` of ``r``."""
    b, c, b1, c1 = co[0], co[1], co[2], co[3]
    ra = r[a]
    rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2]
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2], out[1, 2] = -r[2], r[1], -r[0]
    out[1, 0], out[2, 0], out[2, 1] = r[2], -r[1], r[0]
    for i in range(3):
        for k in range(3):
            d = 1.0 if i == k else 0.0
            v = -b1 * ra * out[i, k] + c1 * ra * (r[i] * r[k] - rr * d)
            v += c * ((r[i] if k == a else 0.0) + (r[k] if i == a else 0.0) - 2.0 * ra * d)
            out[i, k] = v
    # - b [e_a]
    if a == 0:
        out[1, 2] += b
        out[2, 1] -= b
    elif a == 1:
        out[0, 2] -= b
        out[2, 0] += b
    else:
        out[0, 1] += b
        out[1, 0] -= b


@njit(cache=True)
def composite_derivatives(topo, geom, dofp, ext, q, qd, x, fext, forward):  # noqa: ANN001, ANN201, PLR0912, PLR0915
    """Inverse- or forward-dynamics partials of a tree without ``OTHER`` nodes, O(1) per entry.

    ``forward=False``: ``x = qdd``; returns ``(dtau/dq, dtau/dqd, M)``.
    ``forward=True``: ``x = tau`` (applied); ``qdd = M^{-1} (tau - h)`` from the same
    composite inertias, then the inverse-dynamics partials at ``qdd`` and
    ``dqdd/dx = -M^{-1} dtau/dx`` by a Cholesky factor of ``M``; returns
    ``(dqdd/dq, dqdd/dqd, M^{-1})``, or three NaN matrices when ``M`` is not
    positive definite.

    Guenter & Rose's recursions in world coordinates (spatial vectors at the world
    origin).  Every node's motion is spanned by columns constant in its body frame
    (revolute and prismatic: the screw; spherical: ``Ad(frame_child)[:, :3]``, the
    body-frame angular axes) with *local* velocities ``nu`` and accelerations
    ``alpha``: ``nu = qd``, ``alpha = qdd`` for screws, ``nu = J_r qd``,
    ``alpha = J_r qdd + Jdot_r qd`` for spherical nodes, and a change of local
    coordinate ``k`` (a body-frame twist ``S_k``) turns the subtree of its node
    rigidly about the world screw ``S_k``, except for the parent's velocity ``V_p``
    and acceleration ``A_p``.  The rigid part cancels in ``tau_j = S_j . F_j`` for
    columns ``j`` of the node or below it; what remains is linear in per-column
    vectors ``psi_k = ad(S_k) V_p``, ``a_k = -ad(S_k) A_p - ad(V_p) psi_k`` and in
    subtree sums (composite inertia ``Ic``, ``B = sum I ad(V) + ad(V)^T I + C(I V)``
    with ``ad(psi)^T y = C(y) psi``, forces ``F``):

    - ``j`` in the node of ``k`` or below: ``dtau_j/dx_k = S_j . (Ic_j a_k + B_j psi_k)``,
      ``dtau_j/dnu_k = -S_j . (B_j S_k + 2 Ic_j psi_k)``;
    - ``j`` above: ``S_j . (-ad(S_k)^T F_k + Ic_k a_k + B_k psi_k)`` and
      ``-S_j . (B_k S_k + 2 Ic_k psi_k)``;
    - ``M_jk = S_j . Ic_j S_k`` for ``j`` in the node of ``k`` or below.

    A spherical node's coordinates ``r`` then follow by the chain rule with
    ``nu = J_r(r) qd``, the local perturbation ``J_r dr`` and ``tau_r = J_r^T tau_loc``:
    ``dtau/dq = T^T (D_x T + D_nu N_v + M_loc N_a) + G``,
    ``dtau/dqd = T^T (D_nu T + M_loc N_c)``, ``M = T^T M_loc T`` (``T`` = ``J_r`` on the
    node's coordinates, the identity elsewhere), with ``N_v = d nu / dr``,
    ``N_a = d alpha / dr``, ``N_c = d alpha / d qd`` and ``G_a = dJ_r[e_a]^T tau_loc``.
    A free joint is three prismatic nodes and a spherical node.
    """
    n = topo.shape[0]
    nq = dofp.shape[1]
    _check_lengths(dofp, q, qd, x)
    # a few allocations, sliced (each call allocates its own: a model can be shared by threads)
    scr = np.empty((6, 3, 3))
    m66 = np.zeros((5, n, 6, 6))
    X, Sb, Iw, Ic, B = m66[0], m66[1], m66[2], m66[3], m66[4]
    m33 = np.empty((4, n, 3, 3))
    R, Jr, J1 = m33[0], m33[1], m33[2]  # J_r and dJ_r[qd] of spherical nodes
    S = np.zeros((n, 3, 6))  # world columns of each node (up to three)
    m6 = np.zeros((7, n, 6))
    c, V, A, F, bias = m6[0], m6[1], m6[2], m6[3], m6[4]
    cor = m6[5]  # ad(V_i) S_i nu_i
    pw = m6[6, :, :3]
    na = np.zeros((2, nq))
    nu, alpha = na[0], na[1]
    massive = np.zeros(n, dtype=np.bool_)
    T = np.empty((6, 6))
    vec = np.zeros((12, 6))  # small vectors (rows)
    tt, h, sv, t1, t2, ag = vec[0], vec[1], vec[2], vec[3], vec[4], vec[5]
    psi, chi, ak, G, H = vec[6], vec[7], vec[8], vec[9], vec[10]
    for r in range(3):
        ag[r + 3] = -geom[n, r]
    spherical = False
    for i in range(n):
        node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr)
        kind, k0, nd = topo[i, KIND], topo[i, DOF0], topo[i, NDOF]
        spherical = spherical or kind == SPHERICAL
        g = geom[i]
        xx = X[i]
        pl = scr[2, 1]  # translation of L = frame_parent Q frame_child^{-1}; R_L = x[:3, :3]^T
        pa = topo[i, PARENT]
        for r in range(3):
            for k in range(3):
                if pa >= 0:
                    R[i, r, k] = (
                        R[pa, r, 0] * xx[k, 0] + R[pa, r, 1] * xx[k, 1] + R[pa, r, 2] * xx[k, 2]
                    )
                else:
                    R[i, r, k] = xx[k, r]
            if pa >= 0:
                pw[i, r] = (
                    pw[pa, r] + R[pa, r, 0] * pl[0] + R[pa, r, 1] * pl[1] + R[pa, r, 2] * pl[2]
                )
            else:
                pw[i, r] = pl[r]
        # local velocities and accelerations (the bias part only when forward)
        if kind == SPHERICAL:
            for r in range(3):
                for k in range(3):
                    Jr[i, r, k] = scr[3, r, k]
                    J1[i, r, k] = scr[4, r, k]
            for a in range(3):
                sn = 0.0
                sa = 0.0
                for m in range(3):
                    sn += Jr[i, a, m] * qd[k0 + m]
                    sa += J1[i, a, m] * qd[k0 + m]
                    if not forward:
                        sa += Jr[i, a, m] * x[k0 + m]
                nu[k0 + a] = sn
                alpha[k0 + a] = sa
        elif nd == 1:
            nu[k0] = qd[k0]
            alpha[k0] = 0.0 if forward else x[k0]
        # world columns S = Ad(E) s: w = R s_w, v = R s_v + p x (R s_w)
        for a in range(nd):
            for r in range(6):
                t1[r] = g[ADFC + 6 * r + a] if kind == SPHERICAL else g[SCONST + r]
            for r in range(3):
                S[i, a, r] = R[i, r, 0] * t1[0] + R[i, r, 1] * t1[1] + R[i, r, 2] * t1[2]
                t2[r] = R[i, r, 0] * t1[3] + R[i, r, 1] * t1[4] + R[i, r, 2] * t1[5]
            S[i, a, 3] = t2[0] + pw[i, 1] * S[i, a, 2] - pw[i, 2] * S[i, a, 1]
            S[i, a, 4] = t2[1] + pw[i, 2] * S[i, a, 0] - pw[i, 0] * S[i, a, 2]
            S[i, a, 5] = t2[2] + pw[i, 0] * S[i, a, 1] - pw[i, 1] * S[i, a, 0]
        for r in range(6):
            sv[r] = 0.0
            s = 0.0
            for a in range(nd):
                sv[r] += S[i, a, r] * nu[k0 + a]
                s += S[i, a, r] * alpha[k0 + a]
            V[i, r] = (V[pa, r] if pa >= 0 else 0.0) + sv[r]
            A[i, r] = (A[pa, r] if pa >= 0 else ag[r]) + s
        _ad_mul(V[i], sv, cor[i])
        for r in range(6):
            A[i, r] += cor[i, r]
        if g[INERTIA] == 0.0 and g[INERTIA + 1] == 0.0 and g[INERTIA + 2] == 0.0:
            if g[INERTIA + 3] == 0.0:
                continue  # a massless node (intermediate link of a composite joint)
        massive[i] = True
        _world_inertia(g, R[i], pw[i], Iw[i])
        # f = Iw A - bias, bias = ad(V)^T Iw V + Ad(E_i)^* fext_b
        _sym_matvec(Iw[i], V[i], h)
        _adt_mul(V[i], h, bias[i])
        if fext.shape[0] > 0:
            _wrench_to_world_add(R[i], pw[i], fext[i], bias[i], tt)
        _sym_matvec(Iw[i], A[i], F[i])
        for r in range(6):
            F[i, r] -= bias[i, r]
            for m in range(6):
                Ic[i, r, m] = Iw[i, r, m]
        # B = P + P^T + C(I V), P = I ad(V), C(y) = [[[y_w], [y_v]], [[y_v], 0]]
        _inertia_ad(Iw[i], V[i], T)
        for r in range(6):
            for m in range(6):
                B[i, r, m] = T[r, m] + T[m, r]
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
    # per column: its node, u = Ic S, w = B^T S (row vectors of the entries below)
    col_node = np.empty(nq, dtype=np.int64)
    cols = np.empty((3, nq, 6))
    Sc, u, w = cols[0], cols[1], cols[2]
    for j in range(n):
        k0, nd = topo[j, DOF0], topo[j, NDOF]
        for a in range(nd):
            m0 = k0 + a
            col_node[m0] = j
            for r in range(6):
                Sc[m0, r] = S[j, a, r]
            for r in range(6):
                su = 0.0
                sw = 0.0
                for m in range(6):
                    su += Ic[j, r, m] * S[j, a, m]
                    sw += B[j, m, r] * S[j, a, m]
                u[m0, r] = su
                w[m0, r] = sw
    # the local mass matrix: M_jk = u_j . S_k for j in the node of k or below
    Ml = np.zeros((nq, nq))
    for m in range(nq):
        k = col_node[m]
        last = topo[k, END] - 1
        for row in range(topo[k, DOF0], topo[last, DOF0] + topo[last, NDOF]):
            Ml[row, m] = Ml[m, row] = _dot6(u[row], Sc[m])
    # ... in the coordinates: M = T^T M_loc T (+ armature)
    Mq = Ml.copy()
    for j in range(n):
        if topo[j, KIND] == SPHERICAL:
            _map_columns(Mq, Jr[j], topo[j, DOF0], t1)
    for j in range(n):
        if topo[j, KIND] == SPHERICAL:
            _map_rows(Mq, Jr[j], topo[j, DOF0], t1)
    for k in range(nq):
        Mq[k, k] += dofp[3, k]
    L = np.zeros((nq, nq))
    qdd = x
    if forward:
        if not cholesky(Mq, L):
            nan = np.full((nq, nq), np.nan)
            return nan, nan.copy(), nan.copy()
        # h = T^T S^T F (bias accelerations) + springs and dampers; qdd = M^{-1} (tau - h)
        rhs = np.empty(nq)
        for m in range(nq):
            rhs[m] = _dot6(Sc[m], F[col_node[m]])
        for j in range(n):
            if topo[j, KIND] == SPHERICAL:
                k0 = topo[j, DOF0]
                for a in range(3):
                    t1[a] = rhs[k0 + a]
                for a in range(3):
                    rhs[k0 + a] = Jr[j, 0, a] * t1[0] + Jr[j, 1, a] * t1[1] + Jr[j, 2, a] * t1[2]
        for m in range(nq):
            rhs[m] = x[m] - rhs[m] - dofp[0, m] * (q[m] - dofp[2, m]) - dofp[1, m] * qd[m]
        qdd = np.empty(nq)
        cholesky_solve(L, rhs, qdd)
        # accelerations and forces at qdd
        for i in range(n):
            kind, k0, nd = topo[i, KIND], topo[i, DOF0], topo[i, NDOF]
            if kind == SPHERICAL:
                for a in range(3):
                    alpha[k0 + a] += (
                        Jr[i, a, 0] * qdd[k0]
                        + Jr[i, a, 1] * qdd[k0 + 1]
                        + Jr[i, a, 2] * qdd[k0 + 2]
                    )
            elif nd == 1:
                alpha[k0] = qdd[k0]
            pa = topo[i, PARENT]
            for r in range(6):
                s = (A[pa, r] if pa >= 0 else ag[r]) + cor[i, r]
                for a in range(nd):
                    s += S[i, a, r] * alpha[k0 + a]
                A[i, r] = s
            if massive[i]:
                _sym_matvec(Iw[i], A[i], F[i])
                for r in range(6):
                    F[i, r] -= bias[i, r]
            else:
                for r in range(6):
                    F[i, r] = 0.0
        for i in range(n - 1, 0, -1):
            pa = topo[i, PARENT]
            if pa >= 0:
                for r in range(6):
                    F[pa, r] += F[i, r]
    out_q = np.zeros((nq, nq))
    out_qd = np.zeros((nq, nq))
    for m in range(nq):
        k = col_node[m]
        s_k = Sc[m]
        pa = topo[k, PARENT]
        if pa >= 0:
            _ad_mul(s_k, V[pa], psi)
            _ad_mul(s_k, A[pa], ak)
            _ad_mul(V[pa], psi, t1)
            for r in range(6):
                ak[r] = -ak[r] - t1[r]
        else:
            for r in range(6):
                psi[r] = 0.0
            _ad_mul(s_k, ag, ak)
            for r in range(6):
                ak[r] = -ak[r]
        # chi = 2 psi - ad(S_k nu_k... of the node) S_k: the node's other columns turn with S_k
        for r in range(6):
            t2[r] = V[k, r] - (V[pa, r] if pa >= 0 else 0.0)
        _ad_mul(t2, s_k, chi)
        for r in range(6):
            chi[r] = 2.0 * psi[r] - chi[r]
        last = topo[k, END] - 1
        for row in range(topo[k, DOF0], topo[last, DOF0] + topo[last, NDOF]):
            out_q[row, m] = _dot6(u[row], ak) + _dot6(w[row], psi)
            out_qd[row, m] = -_dot6(w[row], s_k) - _dot6(u[row], chi)
        if pa < 0:
            continue
        _adt_mul(s_k, F[k], t1)
        _sym_matvec(Ic[k], ak, t2)
        _sym_matvec(B[k], psi, G)
        for r in range(6):
            G[r] += t2[r] - t1[r]
        _sym_matvec(B[k], s_k, H)
        _sym_matvec(Ic[k], chi, t2)
        for r in range(6):
            H[r] = -H[r] - t2[r]
        j = pa
        while j >= 0:
            j0 = topo[j, DOF0]
            for b in range(topo[j, NDOF]):
                out_q[j0 + b, m] = _dot6(Sc[j0 + b], G)
                out_qd[j0 + b, m] = _dot6(Sc[j0 + b], H)
            j = topo[j, PARENT]
    # spherical nodes: from local to the coordinates (chain rule, see above)
    if spherical:
        _spherical_maps(topo, q, qd, qdd, Jr, J1, Sc, F, Ml, out_q, out_qd)
    for k in range(nq):
        out_q[k, k] += dofp[0, k]
        out_qd[k, k] += dofp[1, k]
    if not forward:
        return out_q, out_qd, Mq
    # M^{-1} = L^{-T} L^{-1}; dqdd/dx = -M^{-1} dtau/dx
    Li = np.zeros((nq, nq))
    for j in range(nq):
        Li[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, nq):
            s = 0.0
            for k in range(j, i):
                s += L[i, k] * Li[k, j]
            Li[i, j] = -s / L[i, i]
    Minv = np.zeros((nq, nq))
    for i in range(nq):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, nq):
                s += Li[k, i] * Li[k, j]
            Minv[i, j] = s
            Minv[j, i] = s
    np.dot(Minv, out_q, L)  # L and Li are free again
    np.dot(Minv, out_qd, Li)
    for i in range(nq):
        for j in range(nq):
            L[i, j] = -L[i, j]
            Li[i, j] = -Li[i, j]
    return L, Li, Minv


@njit(cache=True)
def _spherical_maps(topo, q, qd, qdd, Jr, J1, Sc, F, Ml, out_q, out_qd):  # noqa: ANN001, ANN202, PLR0913
    """The local partials of spherical nodes' columns and rows to their coordinates (in place):
    ``dtau/dq = T^T (D_x T + D_nu N_v + M_loc N_a) + G``, ``dtau/dqd = T^T (D_nu T + M_loc N_c)``
    (see :func:`composite_derivatives`)."""
    n = topo.shape[0]
    nq = out_q.shape[0]
    t1 = np.empty(6)
    co = np.empty(6)
    m3 = np.zeros((7, 3, 3))
    Jd = m3[:3]  # dJ_r[e_a]
    Nv, Nc, Na = m3[3], m3[4], m3[5]
    ea, v3, s3, s4 = m3[6, 0], m3[6, 1], m3[6, 2], t1[3:]
    Gs = np.empty((n, 3, 3))  # G of each spherical node
    for j in range(n):
        if topo[j, KIND] != SPHERICAL:
            continue
        k0 = topo[j, DOF0]
        rj = q[k0 : k0 + 3]
        rd = qd[k0 : k0 + 3]
        rdd = qdd[k0 : k0 + 3]
        b_, c_, b1_, c1_, b2_, c2_ = _coefficients(np.sqrt(rj[0] ** 2 + rj[1] ** 2 + rj[2] ** 2))
        co[0], co[1], co[2], co[3], co[4], co[5] = b_, c_, b1_, c1_, b2_, c2_
        tl0 = _dot6(Sc[k0], F[j])
        tl1 = _dot6(Sc[k0 + 1], F[j])
        tl2 = _dot6(Sc[k0 + 2], F[j])
        for a in range(3):
            ea[:] = 0.0
            ea[a] = 1.0
            _djr_axis(rj, a, co, Jd[a])
            _jr_second_apply(rj, ea, rd, rd, co, v3, s3, s4)
            for r in range(3):
                nv = Jd[a, r, 0] * rd[0] + Jd[a, r, 1] * rd[1] + Jd[a, r, 2] * rd[2]
                Nv[r, a] = nv
                Nc[r, a] = nv + J1[j, r, a]
                Na[r, a] = Jd[a, r, 0] * rdd[0] + Jd[a, r, 1] * rdd[1] + Jd[a, r, 2] * rdd[2]
                Na[r, a] += v3[r]
            for r in range(3):
                Gs[j, r, a] = Jd[a, 0, r] * tl0 + Jd[a, 1, r] * tl1 + Jd[a, 2, r] * tl2
        for row in range(nq):
            d0, d1, d2 = out_q[row, k0], out_q[row, k0 + 1], out_q[row, k0 + 2]
            v0, v1, v2 = out_qd[row, k0], out_qd[row, k0 + 1], out_qd[row, k0 + 2]
            m0, m1, m2 = Ml[row, k0], Ml[row, k0 + 1], Ml[row, k0 + 2]
            for a in range(3):
                out_q[row, k0 + a] = (
                    d0 * Jr[j, 0, a] + d1 * Jr[j, 1, a] + d2 * Jr[j, 2, a]
                    + v0 * Nv[0, a] + v1 * Nv[1, a] + v2 * Nv[2, a]
                    + m0 * Na[0, a] + m1 * Na[1, a] + m2 * Na[2, a]
                )  # fmt: skip
                out_qd[row, k0 + a] = (
                    v0 * Jr[j, 0, a] + v1 * Jr[j, 1, a] + v2 * Jr[j, 2, a]
                    + m0 * Nc[0, a] + m1 * Nc[1, a] + m2 * Nc[2, a]
                )  # fmt: skip
    for j in range(n):
        if topo[j, KIND] != SPHERICAL:
            continue
        k0 = topo[j, DOF0]
        _map_rows(out_q, Jr[j], k0, t1)
        _map_rows(out_qd, Jr[j], k0, t1)
    for j in range(n):  # + G (in the coordinates already)
        if topo[j, KIND] == SPHERICAL:
            k0 = topo[j, DOF0]
            for r in range(3):
                for a in range(3):
                    out_q[k0 + r, k0 + a] += Gs[j, r, a]


@njit(cache=True)
def _map_columns(Mt, J, k0, tmp):  # noqa: ANN001, ANN202
    """``Mt[:, k0:k0+3] = Mt[:, k0:k0+3] J``."""
    for row in range(Mt.shape[0]):
        for a in range(3):
            tmp[a] = Mt[row, k0 + a]
        for a in range(3):
            Mt[row, k0 + a] = tmp[0] * J[0, a] + tmp[1] * J[1, a] + tmp[2] * J[2, a]


@njit(cache=True)
def _map_rows(Mt, J, k0, tmp):  # noqa: ANN001, ANN202
    """``Mt[k0:k0+3, :] = J^T Mt[k0:k0+3, :]``."""
    for col in range(Mt.shape[1]):
        for a in range(3):
            tmp[a] = Mt[k0 + a, col]
        for a in range(3):
            Mt[k0 + a, col] = J[0, a] * tmp[0] + J[1, a] * tmp[1] + J[2, a] * tmp[2]
