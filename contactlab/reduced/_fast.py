"""Compiled recursions over a prepared model (:class:`contactlab.reduced.model.Model`).

Every kernel takes the model's flat arrays, computes the joint maps and the
kinematics itself and returns plain arrays; nothing runs in Python per
joint.  The layout (written by :mod:`contactlab.reduced.model`):

``topo`` (n, 6) int64, per node: parent (-1 for the world), kind, first
coordinate, number of coordinates, row in ``ext`` (``OTHER`` nodes),
one past the last node of its subtree (nodes are in depth-first order, so
a subtree is a contiguous range).

``geom`` (n + 1, NGEOM) float64, per node: rotation and translation of the
parent-side joint frame ``frame_parent`` (``RP``, ``PP``) and of
``frame_child^{-1}`` (``RC``, ``PC``), the joint axis in the joint frame,
the body inertia diagonal ``(Ixx, Iyy, Izz, m, m, m)``, ``Ad(frame_child)``
and the constant body-frame joint column of revolute and prismatic nodes.
The extra last row holds gravity (world frame).

``dofp`` (4, nq): joint stiffness, damping, rest position and armature (rotor
inertia added to the diagonal of ``M``) per coordinate.

``ext`` (m, 88): ``Q`` (16), ``S`` (36) and ``Sdot`` (36) of the ``OTHER``
nodes, evaluated by their joint objects before the call.

Node kinds are the elementary joints every supported joint is expanded to:
fixed, revolute, prismatic (one screw each), spherical in exponential
coordinates, and ``OTHER`` (joint maps given in ``ext``).

Per node ``i`` with parent ``p`` (body frames at the centre of mass):
``X_i = Ad(E_i^{-1} E_p)``, ``Sb_i = Ad(frame_child) S_i``,
``c_i = Sdot_i qdot_i`` (body frame),

.. math::

    V_i = X_i V_p + Sb_i \\dot q_i, \\qquad
    A_i = X_i A_p + Sb_i \\ddot q_i + c_i + \\mathrm{ad}(V_i) Sb_i \\dot q_i ,

with ``V = 0`` and ``A = (0, -g)`` at the world, so gravity enters as a
fictitious acceleration of the base and needs no world transforms.
"""

from __future__ import annotations

import numpy as np

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 15.0

FIXED, REVOLUTE, PRISMATIC, SPHERICAL, OTHER = 0, 1, 2, 3, 4
PARENT, KIND, DOF0, NDOF, EXT, END = 0, 1, 2, 3, 4, 5
RP, PP, RC, PC, AXIS, INERTIA, ADFC, SCONST = 0, 9, 12, 21, 24, 27, 33, 69
NGEOM = 75

# Below this angle the spherical-joint coefficients come from their series
# (12 terms: exact to rounding for t < 1); above it the closed forms lose
# less than 1e-13 to cancellation.
_SERIES_BELOW = 1.0


@njit(cache=True)
def _coefficients(t):  # noqa: ANN001, ANN202
    """``b, c`` of ``J_r = I - b [q] + c [q]^2`` and ``b1 = b'/t, c1, b2 = b1'/t, c2``."""
    if t < _SERIES_BELOW:
        b = c = b1 = c1 = b2 = c2 = 0.0
        t2 = t * t
        power = 1.0  # t^(2k)
        fact = 2.0  # (2k + 2)!
        sign = 1.0
        for k in range(12):
            if k > 0:
                fact *= (2 * k + 1) * (2 * k + 2)
            fact3 = fact * (2 * k + 3)
            b += sign * power / fact
            c += sign * power / fact3
            if k >= 1:
                pk1 = power / t2 if t2 > 0.0 else (1.0 if k == 1 else 0.0)
                b1 += sign * 2 * k * pk1 / fact
                c1 += sign * 2 * k * pk1 / fact3
            if k >= 2:
                pk2 = power / (t2 * t2) if t2 > 0.0 else (1.0 if k == 2 else 0.0)
                b2 += sign * 2 * k * (2 * k - 2) * pk2 / fact
                c2 += sign * 2 * k * (2 * k - 2) * pk2 / fact3
            power *= t2
            sign = -sign
        return b, c, b1, c1, b2, c2
    s, co = np.sin(t), np.cos(t)
    b = (1.0 - co) / t**2
    c = (t - s) / t**3
    b1 = (t * s - 2.0 * (1.0 - co)) / t**4
    c1 = (3.0 * s - 2.0 * t - t * co) / t**5
    b2 = (t * t * co - 5.0 * t * s + 8.0 - 8.0 * co) / t**6
    c2 = (t * t * s + 7.0 * t * co + 8.0 * t - 15.0 * s) / t**7
    return b, c, b1, c1, b2, c2


@njit(cache=True)
def _skew(v, out):  # noqa: ANN001, ANN202
    out[0, 0] = out[1, 1] = out[2, 2] = 0.0
    out[0, 1], out[0, 2], out[1, 2] = -v[2], v[1], -v[0]
    out[1, 0], out[2, 0], out[2, 1] = v[2], -v[1], v[0]


@njit(cache=True)
def right_jacobian_terms(q, u, e, out0, out1, out2):  # noqa: ANN001, ANN201
    """``J_r(q)``, its derivative along ``u`` and its second derivative along ``u, e``.

    ``J_r = I - b W + c W^2`` with ``W = [q]`` (Sueda's notes, eq. 2.43-2.47 in
    closed form); ``d b / d q = b1 q`` and ``d b1 / d q = b2 q`` (likewise
    ``c``).  ``out1 = dJ_r[u]``, ``out2 = d^2 J_r[u, e]`` (symmetric in u, e).
    """
    t = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2])
    b, c, b1, c1, b2, c2 = _coefficients(t)
    W = np.empty((3, 3))
    U = np.empty((3, 3))
    E = np.empty((3, 3))
    _skew(q, W)
    _skew(u, U)
    _skew(e, E)
    W2 = np.empty((3, 3))
    UW = np.empty((3, 3))
    EW = np.empty((3, 3))
    UE = np.empty((3, 3))
    for r in range(3):
        for k in range(3):
            w2 = uw = ew = ue_ = 0.0
            for m in range(3):
                w2 += W[r, m] * W[m, k]
                uw += U[r, m] * W[m, k] + W[r, m] * U[m, k]
                ew += E[r, m] * W[m, k] + W[r, m] * E[m, k]
                ue_ += U[r, m] * E[m, k] + E[r, m] * U[m, k]
            W2[r, k], UW[r, k], EW[r, k], UE[r, k] = w2, uw, ew, ue_
    qu = q[0] * u[0] + q[1] * u[1] + q[2] * u[2]
    qe = q[0] * e[0] + q[1] * e[1] + q[2] * e[2]
    ue = u[0] * e[0] + u[1] * e[1] + u[2] * e[2]
    for r in range(3):
        for k in range(3):
            out0[r, k] = (1.0 if r == k else 0.0) - b * W[r, k] + c * W2[r, k]
            out1[r, k] = -b1 * qu * W[r, k] - b * U[r, k] + c1 * qu * W2[r, k] + c * UW[r, k]
            out2[r, k] = (
                -b2 * qe * qu * W[r, k]
                - b1 * ue * W[r, k]
                - b1 * qu * E[r, k]
                - b1 * qe * U[r, k]
                + c2 * qe * qu * W2[r, k]
                + c1 * ue * W2[r, k]
                + c1 * qu * EW[r, k]
                + c1 * qe * UW[r, k]
                + c * UE[r, k]
            )


@njit(cache=True)
def _right_jacobian_rate(q, u, out0, out1, W):  # noqa: ANN001, ANN202
    """``J_r(q)`` and its derivative along ``u``: the first two outputs of
    :func:`right_jacobian_terms` (the kinematics needs no second derivative).

    With ``[q]^2 = q q^T - |q|^2 1`` and ``[u][q] + [q][u] = q u^T + u q^T - 2 (q.u) 1``
    no matrix product is formed.  ``W`` is (3, 3) scratch.
    """
    tt = q[0] * q[0] + q[1] * q[1] + q[2] * q[2]
    b, c, b1, c1, _, _ = _coefficients(np.sqrt(tt))
    _skew(q, W)
    _skew(u, out1)
    qu = q[0] * u[0] + q[1] * u[1] + q[2] * u[2]
    for r in range(3):
        for k in range(3):
            d = 1.0 if r == k else 0.0
            w2 = q[r] * q[k] - tt * d
            uw = q[r] * u[k] + u[r] * q[k] - 2.0 * qu * d
            out0[r, k] = d - b * W[r, k] + c * w2
            out1[r, k] = -b1 * qu * W[r, k] - b * out1[r, k] + c1 * qu * w2 + c * uw


@njit(cache=True)
def _exp_rotation(a0, a1, a2, t, R):  # noqa: ANN001, ANN202
    """``R = exp([a] t)`` for a unit axis ``a`` (Rodrigues)."""
    s, v = np.sin(t), 1.0 - np.cos(t)
    R[0, 0] = 1.0 - v * (a1 * a1 + a2 * a2)
    R[1, 1] = 1.0 - v * (a0 * a0 + a2 * a2)
    R[2, 2] = 1.0 - v * (a0 * a0 + a1 * a1)
    R[0, 1] = -s * a2 + v * a0 * a1
    R[1, 0] = s * a2 + v * a0 * a1
    R[0, 2] = s * a1 + v * a0 * a2
    R[2, 0] = -s * a1 + v * a0 * a2
    R[1, 2] = -s * a0 + v * a1 * a2
    R[2, 1] = s * a0 + v * a1 * a2


@njit(cache=True)
def node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr):  # noqa: ANN001, ANN201, PLR0912
    """Fill ``X[i]`` (6, 6), ``Sb[i]`` (6, 6; ``ndof`` columns) and ``c[i] = Sbd_i qd_i``.

    ``scr`` is (6, 3, 3) scratch memory, so that no node allocates.
    """
    kind = topo[i, KIND]
    k0 = topo[i, DOF0]
    g = geom[i]
    Rq = scr[0]
    T = scr[1]
    pq = scr[2, 0]
    pl = scr[2, 1]
    w = scr[2, 2]
    for r in range(3):
        pq[r] = 0.0
    for r in range(6):
        c[i, r] = 0.0
    if kind == REVOLUTE:
        _exp_rotation(g[AXIS], g[AXIS + 1], g[AXIS + 2], q[k0], Rq)
        for r in range(6):
            Sb[i, r, 0] = g[SCONST + r]
    elif kind == PRISMATIC:
        for r in range(3):
            for k in range(3):
                Rq[r, k] = 1.0 if r == k else 0.0
            pq[r] = g[AXIS + r] * q[k0]
        for r in range(6):
            Sb[i, r, 0] = g[SCONST + r]
    elif kind == SPHERICAL:
        t = np.sqrt(q[k0] ** 2 + q[k0 + 1] ** 2 + q[k0 + 2] ** 2)
        if t > 0.0:
            _exp_rotation(q[k0] / t, q[k0 + 1] / t, q[k0 + 2] / t, t, Rq)
        else:
            for r in range(3):
                for k in range(3):
                    Rq[r, k] = 1.0 if r == k else 0.0
        J0, J1 = scr[3], scr[4]
        qj = q[k0 : k0 + 3]
        qdj = qd[k0 : k0 + 3]
        _right_jacobian_rate(qj, qdj, J0, J1, scr[5])
        for r in range(3):
            w[r] = J1[r, 0] * qdj[0] + J1[r, 1] * qdj[1] + J1[r, 2] * qdj[2]
        for r in range(6):
            s = 0.0
            for m in range(3):
                s += g[ADFC + 6 * r + m] * w[m]
                Sb[i, r, m] = (
                    g[ADFC + 6 * r] * J0[0, m]
                    + g[ADFC + 6 * r + 1] * J0[1, m]
                    + g[ADFC + 6 * r + 2] * J0[2, m]
                )
            c[i, r] = s
    elif kind == OTHER:
        e = ext[topo[i, EXT]]
        nd = topo[i, NDOF]
        for r in range(3):
            for k in range(3):
                Rq[r, k] = e[4 * r + k]
            pq[r] = e[4 * r + 3]
        for r in range(6):
            s = 0.0
            for m in range(nd):
                sm = 0.0
                sdm = 0.0
                for k in range(6):
                    sm += g[ADFC + 6 * r + k] * e[16 + 6 * k + m]
                    sdm += g[ADFC + 6 * r + k] * e[52 + 6 * k + m]
                Sb[i, r, m] = sm
                s += sdm * qd[k0 + m]
            c[i, r] = s
    else:
        for r in range(3):
            for k in range(3):
                Rq[r, k] = 1.0 if r == k else 0.0
    # L = frame_parent Q frame_child^{-1};  X = Ad(L^{-1}) = [[A, 0], [[t] A, A]]
    for r in range(3):
        for k in range(3):
            T[r, k] = (
                g[RP + 3 * r] * Rq[0, k]
                + g[RP + 3 * r + 1] * Rq[1, k]
                + (g[RP + 3 * r + 2] * Rq[2, k])
            )
    for r in range(3):
        pl[r] = g[PP + r] + T[r, 0] * g[PC] + T[r, 1] * g[PC + 1] + T[r, 2] * g[PC + 2]
        pl[r] += g[RP + 3 * r] * pq[0] + g[RP + 3 * r + 1] * pq[1] + g[RP + 3 * r + 2] * pq[2]
    x = X[i]
    for r in range(3):
        for k in range(3):
            # A = R_L^T with R_L = T Rc
            x[r, k] = T[k, 0] * g[RC + r] + T[k, 1] * g[RC + 3 + r] + T[k, 2] * g[RC + 6 + r]
            x[r, k + 3] = 0.0
            x[r + 3, k + 3] = x[r, k]
    t0 = -(x[0, 0] * pl[0] + x[0, 1] * pl[1] + x[0, 2] * pl[2])
    t1 = -(x[1, 0] * pl[0] + x[1, 1] * pl[1] + x[1, 2] * pl[2])
    t2 = -(x[2, 0] * pl[0] + x[2, 1] * pl[1] + x[2, 2] * pl[2])
    for k in range(3):
        x[3, k] = t1 * x[2, k] - t2 * x[1, k]
        x[4, k] = t2 * x[0, k] - t0 * x[2, k]
        x[5, k] = t0 * x[1, k] - t1 * x[0, k]


@njit(cache=True)
def _x_mul(x, v, out):  # noqa: ANN001, ANN202
    """``out = X v`` for ``X = [[A, 0], [B, A]]``."""
    for r in range(3):
        out[r] = x[r, 0] * v[0] + x[r, 1] * v[1] + x[r, 2] * v[2]
        out[r + 3] = (
            x[r + 3, 0] * v[0]
            + x[r + 3, 1] * v[1]
            + x[r + 3, 2] * v[2]
            + x[r, 0] * v[3]
            + x[r, 1] * v[4]
            + x[r, 2] * v[5]
        )


@njit(cache=True)
def _xt_mul_add(x, f, out):  # noqa: ANN001, ANN202
    """``out += X^T f`` for ``X = [[A, 0], [B, A]]``."""
    for k in range(3):
        out[k] += (
            x[0, k] * f[0]
            + x[1, k] * f[1]
            + x[2, k] * f[2]
            + x[3, k] * f[3]
            + x[4, k] * f[4]
            + x[5, k] * f[5]
        )
        out[k + 3] += x[0, k] * f[3] + x[1, k] * f[4] + x[2, k] * f[5]


@njit(cache=True)
def _ad_mul(v, x, out):  # noqa: ANN001, ANN202
    """``out = ad(v) x = (w x x_w, n x x_w + w x x_n)`` (Sueda's notes, eq. 1.19)."""
    w0, w1, w2, n0, n1, n2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = n1 * a2 - n2 * a1 + w1 * b2 - w2 * b1
    out[4] = n2 * a0 - n0 * a2 + w2 * b0 - w0 * b2
    out[5] = n0 * a1 - n1 * a0 + w0 * b1 - w1 * b0


@njit(cache=True)
def _adt_mul(v, y, out):  # noqa: ANN001, ANN202
    """``out = ad(v)^T y = (-(w x y_w) - n x y_n, -(w x y_n))``."""
    w0, w1, w2, n0, n1, n2 = v[0], v[1], v[2], v[3], v[4], v[5]
    a0, a1, a2, b0, b1, b2 = y[0], y[1], y[2], y[3], y[4], y[5]
    out[0] = -(w1 * a2 - w2 * a1) - (n1 * b2 - n2 * b1)
    out[1] = -(w2 * a0 - w0 * a2) - (n2 * b0 - n0 * b2)
    out[2] = -(w0 * a1 - w1 * a0) - (n0 * b1 - n1 * b0)
    out[3] = -(w1 * b2 - w2 * b1)
    out[4] = -(w2 * b0 - w0 * b2)
    out[5] = -(w0 * b1 - w1 * b0)


@njit(cache=True)
def body_force(g, v, a, out):  # noqa: ANN001, ANN201
    """Newton-Euler wrench of one body in the Balafoutis-Patel form (Guenter & Rose).

    With the angular-acceleration tensor ``Omega = [wdot] + [w][w]`` and
    Euler's inertia tensor ``J = tr(I)/2 - I`` (diagonal on principal axes),
    the moment is ``dual(Omega J - (Omega J)^T)`` (equal to
    ``I wdot + w x I w``) and the force ``m rddot``, where
    ``rddot = vdot + w x v`` is the acceleration of the centre of mass.
    ``v`` and ``a`` are body twist and its derivative; called with a
    perturbation ``(dv, da)`` in the second slot of :func:`body_force_diff`.
    """
    i0, i1, i2, m = g[INERTIA], g[INERTIA + 1], g[INERTIA + 2], g[INERTIA + 3]
    h = 0.5 * (i0 + i1 + i2)
    j0, j1, j2 = h - i0, h - i1, h - i2
    w0, w1, w2 = v[0], v[1], v[2]
    # Omega = [wdot] + w w^T - |w|^2 I; only its off-diagonal entries reach the moment
    o01 = -a[2] + w0 * w1
    o10 = a[2] + w0 * w1
    o02 = a[1] + w0 * w2
    o20 = -a[1] + w0 * w2
    o12 = -a[0] + w1 * w2
    o21 = a[0] + w1 * w2
    out[0] = o21 * j1 - o12 * j2
    out[1] = o02 * j2 - o20 * j0
    out[2] = o10 * j0 - o01 * j1
    out[3] = m * (a[3] + w1 * v[5] - w2 * v[4])
    out[4] = m * (a[4] + w2 * v[3] - w0 * v[5])
    out[5] = m * (a[5] + w0 * v[4] - w1 * v[3])


@njit(cache=True)
def body_force_diff(g, v, dv, da, out):  # noqa: ANN001, ANN201
    """Derivative of :func:`body_force` along ``(dv, da)`` (Guenter & Rose's dM and dF partials).

    ``dOmega = [d wdot] + [dw][w] + ([dw][w])^T``, ``dM = dual(dOmega J - (dOmega J)^T)``,
    ``dF = m (d vdot + dw x v + w x dv)``.
    """
    i0, i1, i2, m = g[INERTIA], g[INERTIA + 1], g[INERTIA + 2], g[INERTIA + 3]
    h = 0.5 * (i0 + i1 + i2)
    j0, j1, j2 = h - i0, h - i1, h - i2
    w0, w1, w2 = v[0], v[1], v[2]
    d0, d1, d2 = dv[0], dv[1], dv[2]
    o01 = -da[2] + d0 * w1 + w0 * d1
    o10 = da[2] + d0 * w1 + w0 * d1
    o02 = da[1] + d0 * w2 + w0 * d2
    o20 = -da[1] + d0 * w2 + w0 * d2
    o12 = -da[0] + d1 * w2 + w1 * d2
    o21 = da[0] + d1 * w2 + w1 * d2
    out[0] = o21 * j1 - o12 * j2
    out[1] = o02 * j2 - o20 * j0
    out[2] = o10 * j0 - o01 * j1
    out[3] = m * (da[3] + d1 * v[5] - d2 * v[4] + w1 * dv[5] - w2 * dv[4])
    out[4] = m * (da[4] + d2 * v[3] - d0 * v[5] + w2 * dv[3] - w0 * dv[5])
    out[5] = m * (da[5] + d0 * v[4] - d1 * v[3] + w0 * dv[4] - w1 * dv[3])


@njit(cache=True)
def _check_lengths(dofp, a, b, c):  # noqa: ANN001, ANN202
    nq = dofp.shape[1]
    if a.shape[0] != nq or b.shape[0] != nq or c.shape[0] != nq:
        raise ValueError("q, qdot and tau/qddot must each have the model's nq entries")


@njit(cache=True)
def _congruence_add(x, P, out, T):  # noqa: ANN001, ANN202
    """``out += X^T P X`` for ``X = [[A, 0], [B, A]]`` and symmetric ``P`` (scratch ``T``)."""
    for r in range(6):
        for k in range(3):
            T[r, k] = (
                P[r, 0] * x[0, k]
                + P[r, 1] * x[1, k]
                + P[r, 2] * x[2, k]
                + P[r, 3] * x[3, k]
                + P[r, 4] * x[4, k]
                + P[r, 5] * x[5, k]
            )
            T[r, k + 3] = P[r, 3] * x[0, k] + P[r, 4] * x[1, k] + P[r, 5] * x[2, k]
    for r in range(6):
        for k in range(r, 6):
            if r < 3:
                s = (
                    x[0, r] * T[0, k]
                    + x[1, r] * T[1, k]
                    + x[2, r] * T[2, k]
                    + x[3, r] * T[3, k]
                    + x[4, r] * T[4, k]
                    + x[5, r] * T[5, k]
                )
            else:
                s = x[0, r - 3] * T[3, k] + x[1, r - 3] * T[4, k] + x[2, r - 3] * T[5, k]
            out[r, k] += s
            if k != r:
                out[k, r] += s


@njit(cache=True)
def _spd_inverse(D, out):  # noqa: ANN001, ANN202
    """``out[:k, :k] = D^{-1}`` for a small symmetric positive definite ``D`` (Gauss-Jordan)."""
    k = D.shape[0]
    W = D.copy()
    for r in range(k):
        for m in range(k):
            out[r, m] = 1.0 if r == m else 0.0
    for col in range(k):
        piv = 1.0 / W[col, col]
        for m in range(k):
            W[col, m] *= piv
            out[col, m] *= piv
        for r in range(k):
            if r != col:
                f = W[r, col]
                if f != 0.0:
                    for m in range(k):
                        W[r, m] -= f * W[col, m]
                        out[r, m] -= f * out[col, m]


@njit(cache=True)
def forward_dynamics(topo, geom, dofp, ext, q, qd, tau, fext, minv):  # noqa: ANN001, ANN201
    """``qddot`` by the articulated-body recursion (REDMAX supplement, Alg. 6, all joints free).

    ``tau`` are applied joint forces; joint springs and dampers, gravity and
    the body wrenches ``fext`` (n, 6) or (0, 6) are added.  With ``minv``
    the velocity, gravity, springs and ``fext`` are ignored and the result
    is ``M^{-1} tau``.
    """
    n = topo.shape[0]
    scr = np.empty((6, 3, 3))
    nq = dofp.shape[1]
    _check_lengths(dofp, q, qd, tau)
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.empty((n, 6))
    V = np.empty((n, 6))
    eta = np.empty((n, 6))
    IA = np.zeros((n, 6, 6))
    pA = np.empty((n, 6))
    U = np.empty((n, 6, 6))
    Dinv = np.empty((n, 6, 6))
    u = np.empty((n, 6))
    vj = np.empty(6)
    t1 = np.empty(6)
    T = np.empty((6, 6))
    Pi = np.empty((6, 6))
    beta = np.empty(6)
    tt = tau.copy()
    if not minv:
        for k in range(nq):
            tt[k] -= dofp[0, k] * (q[k] - dofp[2, k]) + dofp[1, k] * qd[k]
    for i in range(n):
        node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr)
        p = topo[i, PARENT]
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        g = geom[i]
        for r in range(6):
            s = 0.0
            for m in range(nd):
                s += Sb[i, r, m] * qd[k0 + m]
            vj[r] = s
        if p >= 0:
            _x_mul(X[i], V[p], V[i])
            for r in range(6):
                V[i, r] += vj[r]
        else:
            for r in range(6):
                V[i, r] = vj[r]
        _ad_mul(V[i], vj, eta[i])
        for r in range(6):
            eta[i, r] += c[i, r]
            IA[i, r, r] = g[INERTIA + r]
            t1[r] = g[INERTIA + r] * V[i, r]
        _adt_mul(V[i], t1, pA[i])
        for r in range(6):
            pA[i, r] = -pA[i, r]
            if fext.shape[0] > 0 and not minv:
                pA[i, r] -= fext[i, r]
    for i in range(n - 1, -1, -1):
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        M = IA[i]
        # t1 = IA eta + pA
        for r in range(6):
            s = pA[i, r]
            for m in range(6):
                s += M[r, m] * eta[i, m]
            t1[r] = s
        if nd == 0:
            for r in range(6):
                beta[r] = t1[r]
                for m in range(6):
                    Pi[r, m] = M[r, m]
        else:
            for a in range(nd):
                for r in range(6):
                    s = 0.0
                    for m in range(6):
                        s += M[r, m] * Sb[i, m, a]
                    U[i, r, a] = s
            if nd == 1:
                d = dofp[3, k0]
                for r in range(6):
                    d += Sb[i, r, 0] * U[i, r, 0]
                Dinv[i, 0, 0] = 1.0 / d
            else:
                D = np.empty((nd, nd))
                for a in range(nd):
                    for b in range(nd):
                        s = 0.0
                        for r in range(6):
                            s += Sb[i, r, a] * U[i, r, b]
                        D[a, b] = s
                    D[a, a] += dofp[3, k0 + a]
                _spd_inverse(D, Dinv[i])
            for a in range(nd):
                s = tt[k0 + a]
                for r in range(6):
                    s -= Sb[i, r, a] * t1[r]
                u[i, a] = s
            for r in range(6):
                beta[r] = t1[r]
            for a in range(nd):
                s = 0.0
                for b in range(nd):
                    s += Dinv[i, a, b] * u[i, b]
                for r in range(6):
                    beta[r] += U[i, r, a] * s
            for r in range(6):
                for m in range(r, 6):
                    s = M[r, m]
                    for a in range(nd):
                        ua = 0.0
                        for b in range(nd):
                            ua += U[i, r, b] * Dinv[i, b, a]
                        s -= ua * U[i, m, a]
                    Pi[r, m] = s
                    Pi[m, r] = s
        p = topo[i, PARENT]
        if p >= 0:
            _congruence_add(X[i], Pi, IA[p], T)
            _xt_mul_add(X[i], beta, pA[p])
    qdd = np.zeros(nq)
    A = np.empty((n, 6))
    ag = np.zeros(6)
    if not minv:
        for r in range(3):
            ag[r + 3] = -geom[n, r]
    a6 = np.empty(6)
    for i in range(n):
        p = topo[i, PARENT]
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        if p >= 0:
            _x_mul(X[i], A[p], a6)
        else:
            _x_mul(X[i], ag, a6)
        for a in range(nd):
            s = u[i, a]
            for r in range(6):
                s -= U[i, r, a] * a6[r]
            t1[a] = s
        for a in range(nd):
            s = 0.0
            for b in range(nd):
                s += Dinv[i, a, b] * t1[b]
            qdd[k0 + a] = s
        for r in range(6):
            s = a6[r] + eta[i, r]
            for a in range(nd):
                s += Sb[i, r, a] * qdd[k0 + a]
            A[i, r] = s
    return qdd


@njit(cache=True)
def rnea_pass(topo, geom, ext, q, qd, qdd, fext):  # noqa: ANN001, ANN201
    """Recursive Newton-Euler in the Balafoutis-Patel form (Guenter & Rose).

    Forward: ``V``, ``A`` (gravity as a base acceleration), each body's
    wrench by :func:`body_force` minus ``fext``; backward: ``F_i`` the
    wrench the joint of ``i`` transmits, ``F_p += X_i^T F_i``.  Returns
    ``(X, Sb, c, V, A, F)``, per node (:func:`node_kinematics` for the first three).
    """
    n = topo.shape[0]
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.empty((n, 6))
    V = np.empty((n, 6))
    A = np.empty((n, 6))
    F = np.empty((n, 6))
    scr = np.empty((6, 3, 3))
    vj = np.empty(6)
    t1 = np.empty(6)
    ag = np.zeros(6)
    for r in range(3):
        ag[r + 3] = -geom[n, r]
    for i in range(n):
        node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr)
        p = topo[i, PARENT]
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        for r in range(6):
            s = 0.0
            sa = c[i, r]
            for m in range(nd):
                s += Sb[i, r, m] * qd[k0 + m]
                sa += Sb[i, r, m] * qdd[k0 + m]
            vj[r] = s
            t1[r] = sa
        if p >= 0:
            _x_mul(X[i], V[p], V[i])
            _x_mul(X[i], A[p], A[i])
        else:
            for r in range(6):
                V[i, r] = 0.0
            _x_mul(X[i], ag, A[i])
        for r in range(6):
            V[i, r] += vj[r]
            A[i, r] += t1[r]
        _ad_mul(V[i], vj, t1)
        for r in range(6):
            A[i, r] += t1[r]
        body_force(geom[i], V[i], A[i], F[i])
        if fext.shape[0] > 0:
            for r in range(6):
                F[i, r] -= fext[i, r]
    for i in range(n - 1, 0, -1):
        p = topo[i, PARENT]
        if p >= 0:
            _xt_mul_add(X[i], F[i], F[p])
    return X, Sb, c, V, A, F


@njit(cache=True)
def _joint_torques(topo, dofp, q, qd, qdd, Sb, F):  # noqa: ANN001, ANN202
    """Applied torques ``Sb_i^T F_i + armature qdd`` minus the joint springs and dampers."""
    n = topo.shape[0]
    tau = np.empty(dofp.shape[1])
    for i in range(n):
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        for a in range(nd):
            s = 0.0
            for r in range(6):
                s += Sb[i, r, a] * F[i, r]
            k = k0 + a
            tau[k] = s + dofp[0, k] * (q[k] - dofp[2, k]) + dofp[1, k] * qd[k]
            tau[k] += dofp[3, k] * qdd[k]
    return tau


@njit(cache=True)
def inverse_dynamics(topo, geom, dofp, ext, q, qd, qdd, fext):  # noqa: ANN001, ANN201
    """Applied joint torques that produce ``qdd`` (O(n))."""
    _check_lengths(dofp, q, qd, qdd)
    _, Sb, _, _, _, F = rnea_pass(topo, geom, ext, q, qd, qdd, fext)
    return _joint_torques(topo, dofp, q, qd, qdd, Sb, F)


@njit(cache=True)
def _crba_column(topo, X, Sb, M, i, f):  # noqa: ANN001, ANN202
    """Column of a one-coordinate node ``i``: walk ``f = Ic_i Sb_i`` up to the root."""
    k0 = topo[i, DOF0]
    f0, f1, f2, f3, f4, f5 = f[0], f[1], f[2], f[3], f[4], f[5]
    j = i
    while j >= 0:
        j0, jd = topo[j, DOF0], topo[j, NDOF]
        S = Sb[j]
        for b in range(jd):
            s = S[0, b] * f0 + S[1, b] * f1 + S[2, b] * f2 + S[3, b] * f3 + S[4, b] * f4
            s += S[5, b] * f5
            M[j0 + b, k0] = s
            M[k0, j0 + b] = s
        p = topo[j, PARENT]
        if p >= 0:
            x = X[j]
            g0 = x[0, 0] * f0 + x[1, 0] * f1 + x[2, 0] * f2 + x[3, 0] * f3 + x[4, 0] * f4
            g1 = x[0, 1] * f0 + x[1, 1] * f1 + x[2, 1] * f2 + x[3, 1] * f3 + x[4, 1] * f4
            g2 = x[0, 2] * f0 + x[1, 2] * f1 + x[2, 2] * f2 + x[3, 2] * f3 + x[4, 2] * f4
            g0 += x[5, 0] * f5
            g1 += x[5, 1] * f5
            g2 += x[5, 2] * f5
            g3 = x[0, 0] * f3 + x[1, 0] * f4 + x[2, 0] * f5
            g4 = x[0, 1] * f3 + x[1, 1] * f4 + x[2, 1] * f5
            g5 = x[0, 2] * f3 + x[1, 2] * f4 + x[2, 2] * f5
            f0, f1, f2, f3, f4, f5 = g0, g1, g2, g3, g4, g5
        j = p


@njit(cache=True)
def _inertia_to_parent(x, c, out):  # noqa: ANN001, ANN202
    """``out += X^T I X`` for a spatial inertia in its 10 numbers (Featherstone's form).

    ``c = (Jxx, Jyy, Jzz, Jxy, Jxz, Jyz, hx, hy, hz, m)`` stands for
    ``I = [[J, [h]], [[h]^T, m 1]]`` (angular first; ``h = m`` times the centre of
    mass).  With ``X = [[A, 0], [[t] A, A]]``:
    ``J' = A^T (J + t h^T + h t^T - 2 (h.t) 1 - m (t t^T - |t|^2 1)) A``,
    ``h' = A^T (h - m t)``, ``m' = m`` (about 90 flops instead of a 6 x 6 congruence).
    """
    # t from the lower-left block B = [t] A: [t] = B A^T
    t0 = x[5, 0] * x[1, 0] + x[5, 1] * x[1, 1] + x[5, 2] * x[1, 2]
    t1 = x[3, 0] * x[2, 0] + x[3, 1] * x[2, 1] + x[3, 2] * x[2, 2]
    t2 = x[4, 0] * x[0, 0] + x[4, 1] * x[0, 1] + x[4, 2] * x[0, 2]
    h0, h1, h2, m = c[6], c[7], c[8], c[9]
    ht = h0 * t0 + h1 * t1 + h2 * t2
    tt = t0 * t0 + t1 * t1 + t2 * t2
    d = -2.0 * ht + m * tt
    k00 = c[0] + 2.0 * t0 * h0 - m * t0 * t0 + d
    k11 = c[1] + 2.0 * t1 * h1 - m * t1 * t1 + d
    k22 = c[2] + 2.0 * t2 * h2 - m * t2 * t2 + d
    k01 = c[3] + t0 * h1 + h0 * t1 - m * t0 * t1
    k02 = c[4] + t0 * h2 + h0 * t2 - m * t0 * t2
    k12 = c[5] + t1 * h2 + h1 * t2 - m * t1 * t2
    # W = K A, then J' = A^T W (symmetric: six entries)
    w = np.empty((3, 3))
    for k in range(3):
        a0, a1, a2 = x[0, k], x[1, k], x[2, k]
        w[0, k] = k00 * a0 + k01 * a1 + k02 * a2
        w[1, k] = k01 * a0 + k11 * a1 + k12 * a2
        w[2, k] = k02 * a0 + k12 * a1 + k22 * a2
    out[0] += x[0, 0] * w[0, 0] + x[1, 0] * w[1, 0] + x[2, 0] * w[2, 0]
    out[1] += x[0, 1] * w[0, 1] + x[1, 1] * w[1, 1] + x[2, 1] * w[2, 1]
    out[2] += x[0, 2] * w[0, 2] + x[1, 2] * w[1, 2] + x[2, 2] * w[2, 2]
    out[3] += x[0, 0] * w[0, 1] + x[1, 0] * w[1, 1] + x[2, 0] * w[2, 1]
    out[4] += x[0, 0] * w[0, 2] + x[1, 0] * w[1, 2] + x[2, 0] * w[2, 2]
    out[5] += x[0, 1] * w[0, 2] + x[1, 1] * w[1, 2] + x[2, 1] * w[2, 2]
    g0, g1, g2 = h0 - m * t0, h1 - m * t1, h2 - m * t2
    out[6] += x[0, 0] * g0 + x[1, 0] * g1 + x[2, 0] * g2
    out[7] += x[0, 1] * g0 + x[1, 1] * g1 + x[2, 1] * g2
    out[8] += x[0, 2] * g0 + x[1, 2] * g1 + x[2, 2] * g2
    out[9] += m


@njit(cache=True)
def mass_matrix(topo, geom, dofp, ext, q):  # noqa: ANN001, ANN201
    """``M`` (nq, nq) by the composite-rigid-body algorithm, O(n depth).

    ``Ic_i = I_i + sum_c X_c^T Ic_c X_c`` (in the 10-number form of
    :func:`_inertia_to_parent`); the block of nodes ``(j, i)`` for
    ``j`` an ancestor of ``i`` is ``Sb_j^T (X ... X)^T Ic_i Sb_i``; blocks of
    nodes on different branches are zero.
    """
    n = topo.shape[0]
    scr = np.empty((6, 3, 3))
    nq = dofp.shape[1]
    _check_lengths(dofp, q, q, q)
    X = np.empty((n, 6, 6))
    Sb = np.zeros((n, 6, 6))
    c = np.empty((n, 6))
    qd = np.zeros(nq)
    Ic = np.zeros((n, 10))
    for i in range(n):
        node_kinematics(i, topo, geom, ext, q, qd, X, Sb, c, scr)
        Ic[i, 0] = geom[i, INERTIA]
        Ic[i, 1] = geom[i, INERTIA + 1]
        Ic[i, 2] = geom[i, INERTIA + 2]
        Ic[i, 9] = geom[i, INERTIA + 3]
    for i in range(n - 1, 0, -1):
        p = topo[i, PARENT]
        if p >= 0:
            _inertia_to_parent(X[i], Ic[i], Ic[p])
    M = np.zeros((nq, nq))
    Fc = np.empty((6, 6))  # Fc[a] = (X ... X)^T Ic_i Sb_i[:, a]
    Fn = np.empty((6, 6))
    for i in range(n):
        k0, nd = topo[i, DOF0], topo[i, NDOF]
        if nd == 0:
            continue
        ci = Ic[i]
        for a in range(nd):
            w0, w1, w2 = Sb[i, 0, a], Sb[i, 1, a], Sb[i, 2, a]
            v0, v1, v2 = Sb[i, 3, a], Sb[i, 4, a], Sb[i, 5, a]
            # (J w + h x v, w x h + m v)
            Fc[a, 0] = ci[0] * w0 + ci[3] * w1 + ci[4] * w2 + ci[7] * v2 - ci[8] * v1
            Fc[a, 1] = ci[3] * w0 + ci[1] * w1 + ci[5] * w2 + ci[8] * v0 - ci[6] * v2
            Fc[a, 2] = ci[4] * w0 + ci[5] * w1 + ci[2] * w2 + ci[6] * v1 - ci[7] * v0
            Fc[a, 3] = w1 * ci[8] - w2 * ci[7] + ci[9] * v0
            Fc[a, 4] = w2 * ci[6] - w0 * ci[8] + ci[9] * v1
            Fc[a, 5] = w0 * ci[7] - w1 * ci[6] + ci[9] * v2
        if nd == 1:
            _crba_column(topo, X, Sb, M, i, Fc[0])
            continue
        j = i
        while j >= 0:
            j0, jd = topo[j, DOF0], topo[j, NDOF]
            for b in range(jd):
                for a in range(nd):
                    s = 0.0
                    for r in range(6):
                        s += Sb[j, r, b] * Fc[a, r]
                    M[j0 + b, k0 + a] = s
                    M[k0 + a, j0 + b] = s
            p = topo[j, PARENT]
            if p >= 0:
                for a in range(nd):
                    for r in range(6):
                        Fn[a, r] = 0.0
                    _xt_mul_add(X[j], Fc[a], Fn[a])
                for a in range(nd):
                    for r in range(6):
                        Fc[a, r] = Fn[a, r]
            j = p
    for k in range(nq):
        M[k, k] += dofp[3, k]
    return M
