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
    KIND,
    NDOF,
    OTHER,
    PARENT,
    SPHERICAL,
    _ad_mul,
    _adt_mul,
    _check,
    _x_mul,
    _xt_mul_add,
    body_force_diff,
    right_jacobian_terms,
    rnea_pass,
)
from solvers.jit import njit


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
def inverse_dynamics_derivatives(topo, geom, dofp, ext, q, qd, qdd, fext):  # noqa: ANN001, ANN201, PLR0912, PLR0915
    """``(dtau/dq, dtau/dqd)`` (nq, nq) of the applied torques; ``OTHER`` columns are left zero."""
    n = topo.shape[0]
    nq = dofp.shape[1]
    _check(topo, dofp, q, "q has the wrong length for this model")
    _check(topo, dofp, qd, "qdot has the wrong length for this model")
    _check(topo, dofp, qdd, "qddot has the wrong length for this model")
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.empty((n, 6))
    V = np.empty((n, 6))
    A = np.empty((n, 6))
    F = np.empty((n, 6))
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
    dV = np.empty((n, 6))
    dA = np.empty((n, 6))
    dF = np.empty((n, 6))
    xvp = np.empty(6)
    xap = np.empty(6)
    s6 = np.empty(6)
    t1 = np.empty(6)
    t2 = np.empty(6)
    gv = np.empty(6)
    ag = np.zeros(6)
    for r in range(3):
        ag[r + 3] = -geom[n, r]
    dSb = np.zeros((3, 6))
    J0 = np.empty((3, 3))
    J1 = np.empty((3, 3))
    J2 = np.empty((3, 3))
    Jqd = np.empty((3, 3))
    e3 = np.zeros(3)
    w3 = np.empty(3)
    for j in range(n):
        kind, nd, k0 = topo[j, KIND], topo[j, NDOF], topo[j, DOF0]
        if nd == 0 or kind == OTHER:
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
