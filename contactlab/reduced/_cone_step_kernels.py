"""Compiled kernels of the reduced formulation's exact-cone contact step
(:mod:`contactlab.reduced.cone_step`).

One call, :func:`cone_full_step`, takes a step of
:class:`~contactlab.reduced.formulation.ReducedFormulation` with the exact friction cone
``K_i = {||r_t|| <= mu_i r_n}``.  Its prologue is the box step's own
(:func:`contactlab.reduced._step_kernels.contact_step`'s functions): the tree kinematics,
``M_r + h D - h^2 K`` and the free momentum (``_system``), the tree factor ``M = L^T L``
and the free velocity (``_ltl``, ``_ltl_solve``), the rows ``C = [N; T; L]`` of
:func:`~contactlab.models.box_friction.box_rows` (``_contact_rows``: contact rows
``N = N_m J``, ``T = T_m J``, then the joint limits' rows) and ``M^-1 C^T``
(``_inverse_rows``).  Then the Delassus matrix ``W = C M^-1 C^T`` and
``q = C M^-1 f - b``
in the general route's local order (:func:`contactlab.models.fc_route.local_step`: each
contact's normal and two tangent rows, contacts from the lowest point up, then the limit
rows as scalar rows with ``r >= 0``), the warm start of the general route
(:func:`contactlab.models.delassus.local_warm_start`), and the general backends' own
solvers on it: block nonsmooth Gauss--Seidel (:func:`solvers.numerics.fc_kernels.nsgs`),
the accelerated projected gradient (:func:`solvers.numerics.fc_methods.apgd`) or ADMM
(:func:`solvers.numerics.fc_methods.admm`), with their stopping test (the natural-map
residual relative to ``||q||``) and caps.  Then the velocity ``v = M^-1 (f + C^T z)``,
the position update (:func:`~contactlab.reduced._step_kernels.advance`), the new state's
body transforms and twists, and the step's measurements.

Two laws: Anitescu--Hart's cone complementarity problem (``law = 0``) and Coulomb's law in
De Saxcé's form (``law = 1``).
"""

from __future__ import annotations

import math

import numpy as np

from contactlab.contact.rows import _tangent_basis
from contactlab.models.delassus import local_warm_start
from contactlab.reduced._step_kernels import (
    _contact_rows,
    _dof_parents,
    _inverse_rows,
    _ltl,
    _ltl_solve,
    _system,
    contact_nodes,
    step_end,
)
from solvers.jit import njit
from solvers.numerics.fc_kernels import nsgs
from solvers.numerics.fc_methods import Cones, admm, apgd

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 20.0

#: laws of :func:`cone_full_step`
CCP, COULOMB = 0, 1
#: methods of :func:`cone_full_step`
NSGS, APGD, ADMM = 0, 1, 2
#: statuses of :func:`cone_full_step` (:func:`solvers.backends.fc_base._status`'s)
OPTIMAL, MAX_ITERATIONS, STALLED, NUMERICAL_ERROR, NOT_SPD, DECOUPLED = 0, 1, 2, 3, 4, 5

#: entries of the ``info`` array of :func:`cone_full_step`
(
    I_STATUS, I_SWEEPS, I_PRIMAL, I_DUAL, I_COMP, I_NATURAL, I_KINETIC, I_GRAVITY, I_SPRING,
    I_MOMENTUM, I_NORMAL_COMP, I_NORMAL_FEAS, I_CONE, I_DISSIPATION, I_SLIDING,
    I_PENETRATION, I_FINITE, I_LIMIT,
) = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 20, 21, 22)  # fmt: skip
N_INFO = 23


@njit(cache=True)
def delassus_rows(C, K, b, u_free, order, W, q):  # noqa: ANN001, ANN201, PLR0913
    """Into ``W[:n, :n]`` and ``q[:n]`` (``n`` rows, ``W`` zero there): ``W = C_o M^-1 C_o^T``
    and ``q = C_o u_free - b_o`` of the rows ``C_o`` of ``C`` in ``order``, with ``K`` the
    columns of ``M^-1 C_o^T`` in that order.  A row of ``W`` is the sum of ``K``'s rows
    weighted by the row's non-zero entries of ``C`` (the inner loop along the row,
    contiguous); its upper triangle is mirrored, so ``W`` is symmetric."""
    n = order.shape[0]
    for i in range(n):
        a = order[i]
        s = -b[a]
        for k in range(u_free.shape[0]):
            c = C[a, k]
            if c == 0.0:
                continue
            s += c * u_free[k]
            for j in range(i, n):
                W[i, j] += c * K[k, j]
        q[i] = s
        for j in range(i + 1, n):
            W[j, i] = W[i, j]


@njit(cache=True)
def _local_problem(C, Kt, b, u_free, order):  # noqa: ANN001, ANN202
    """``W = C_o M^-1 C_o^T`` in CSR form (its nonzero entries) and ``q = C_o u_free - b_o``
    of the rows in the local ``order`` (``Kt = M^-1 C^T``; :func:`delassus_rows`)."""
    m = order.shape[0]
    nq = u_free.shape[0]
    Ko = np.empty((nq, m))
    for k in range(nq):
        for j in range(m):
            Ko[k, j] = Kt[k, order[j]]
    W = np.zeros((m, m))
    q = np.empty(m)
    delassus_rows(C, Ko, b, u_free, order, W, q)
    indptr = np.zeros(m + 1, dtype=np.int64)
    for i in range(m):
        count = 0
        for j in range(m):
            if W[i, j] != 0.0:
                count += 1
        indptr[i + 1] = indptr[i] + count
    indices = np.empty(indptr[m], dtype=np.int64)
    data = np.empty(indptr[m])
    for i in range(m):
        k = indptr[i]
        for j in range(m):
            if W[i, j] != 0.0:
                indices[k] = j
                data[k] = W[i, j]
                k += 1
    return W, indptr, indices, data, q


@njit(cache=True)
def _solve(indptr, indices, data, q, law, mu_local, row_lo, nc, r, method, direct, rho, tol, cap):  # noqa: ANN001, ANN202, PLR0913
    """The general backend's solver on the local problem from ``r`` (in place):
    ``(iterations, natural-map residual)``; ``rho <= 0`` ADMM's default penalty
    (``1e-3`` times the mean diagonal of ``W``)."""
    dirs = np.zeros((0, 2))
    if method == NSGS:
        return nsgs(
            indptr, indices, data, q, law, 0, mu_local, dirs, row_lo, nc, r, 1.0, tol, cap, direct
        )
    cones = Cones(
        0, 0, mu_local, dirs, 0, np.zeros(1, dtype=np.int64), np.zeros(1),
        np.zeros(1, dtype=np.int64), row_lo, nc,
    )  # fmt: skip
    if method == APGD:
        return apgd(indptr, indices, data, q, law, cones, r, tol, cap)
    if rho <= 0.0:
        m = q.shape[0]
        acc = 0.0
        for i in range(m):
            for k in range(indptr[i], indptr[i + 1]):
                if indices[k] == i:
                    acc += data[k]
        rho = 1e-3 * (acc / m) if m else 1.0
    it, res, _ = admm(indptr, indices, data, q, law, cones, r, rho, tol, cap)
    return it, res


@njit(cache=True)
def cone_full_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    node_of_body, body_of_node, body_a, body_b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_normal, old_friction, ids, origin,
    lim_dof, lim_sign, lim_bound, old_z, old_l, same_l,
    law, method, direct, rho, tol, max_iter, slip_threshold,
):  # fmt: skip
    """One step (module docstring).  Arguments as
    :func:`contactlab.reduced._step_kernels.full_step`'s, with the warm start of the
    general route: ``old_z`` the recorded impulses, ``old_l`` the start of their limit
    rows, copied when ``same_l`` (as many limit rows), the contacts' by identity when
    ``carry``; ``law`` (:data:`CCP`, :data:`COULOMB`), ``method`` (:data:`NSGS`,
    :data:`APGD`, :data:`ADMM`), ``direct`` (``nsgs``'s exact Coulomb local solver),
    ``rho`` (ADMM's initial penalty, ``0``: its default) and ``max_iter`` the cap.

    Returns ``q+``, ``qdot+``, the step's velocity ``v``, the new body transforms and
    twists in scene order, the impulses ``z`` on the rows ``[N; T; L]``, the friction
    impulses as world vectors and ``info`` (entries ``I_*``).
    """
    nc = dist.shape[0]
    ml = lim_dof.shape[0]
    m = 3 * nc + ml
    info = np.zeros(N_INFO)
    nb = body_of_node.shape[0]
    E_s = np.zeros((nb, 4, 4))
    phi_s = np.zeros((nb, 6))
    z = np.zeros(m)
    friction = np.zeros((nc, 3))
    ok, E, J, L, lam, u_free = step_system(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    )  # fmt: skip
    if not ok:
        info[I_STATUS] = NOT_SPD
        return q, qdot, qdot, E_s, phi_s, z, friction, info
    t1, t2, C, b, Kt = step_rows(
        E, J, L, lam, support, n_support, q, h, node_of_body, body_a, body_b, point, normal,
        dist, beta, max_corr, lim_dof, lim_sign, lim_bound,
    )  # fmt: skip
    # the local order: per contact (lowest first) its normal and tangent rows, then limits
    up = np.argsort(point[:, 2], kind="mergesort")
    order = np.empty(m, dtype=np.int64)
    mu_local = np.empty(nc)
    for j in range(nc):
        k = up[j]
        order[3 * j] = k
        order[3 * j + 1] = nc + 2 * k
        order[3 * j + 2] = nc + 2 * k + 1
        mu_local[j] = mu[k]
    for r in range(3 * nc, m):
        order[r] = r
    row_lo = np.zeros(ml)
    W, indptr, indices, data, q_loc = _local_problem(C, Kt, b, u_free, order)
    dmax = 0.0
    for r in range(m):
        dmax = max(dmax, W[r, r])
    for r in range(m):
        if W[r, r] <= 1e-24 * dmax:  # a decoupled row: the general path's closed forms
            info[I_STATUS] = DECOUPLED
            return q, qdot, qdot, E_s, phi_s, z, friction, info
    # -- the general route's warm start (models.box_rows.warm_local) -------------------
    if carry:
        order_ids = np.argsort(old_ids, kind="mergesort")
    else:
        order_ids = np.zeros(0, dtype=np.int64)
    r_loc = local_warm_start(
        old_z, 0, old_l, False, same_l, carry, old_ids, order_ids, old_normal, old_friction,
        ids, origin, t1, t2, 0, ml, order,
    )  # fmt: skip
    iterations, residual = _solve(
        indptr, indices, data, q_loc, law, mu_local, row_lo, nc, r_loc, method, direct, rho,
        tol, max_iter,
    )  # fmt: skip
    if not math.isfinite(residual):
        status = NUMERICAL_ERROR
    elif residual <= tol:
        status = OPTIMAL
    elif iterations >= max_iter:
        status = MAX_ITERATIONS
    else:
        status = STALLED
    for i in range(m):
        z[order[i]] = r_loc[i]
    v = step_velocity(u_free, Kt, z)
    info[I_STATUS] = status
    info[I_SWEEPS] = iterations
    info[I_PRIMAL] = residual
    info[I_NATURAL] = residual
    q_new, v_new, friction = step_end(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, v, h, inertia, gravity,
        body_of_node, E_s, phi_s, armature, stiffness, rest, dist, b, C, z, mu,
        slip_threshold, lim_sign, lim_dof, lim_bound, t1, t2, info,
    )  # fmt: skip
    return q_new, v_new, v, E_s, phi_s, z, friction, info


@njit(cache=True)
def step_system(  # noqa: ANN201, PLR0913
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
):  # fmt: skip
    """The box step's prologue (:func:`contactlab.reduced._step_kernels.contact_step`'s
    functions) without kept kinematics, so computed at ``(q, qdot)``: the kinematics ``E``,
    ``J``, the tree factor ``M = L^T L`` (``lam`` the parents of the degrees of freedom) of
    ``M = M_r + h D - h^2 K`` and the free velocity ``u_free = M^-1 f``.  Returns ``(ok, E,
    J, L, lam, u_free)``; ``ok`` is ``False`` when ``M`` is not positive definite (then
    ``u_free`` is ``f``)."""
    none = (
        np.zeros((0, 4, 4)), np.zeros((0, 6, 6)), np.zeros((0, 6, 6)), np.zeros((0, 6, 6)),
        np.zeros((0, 6)), np.zeros(0), np.zeros(0), np.zeros(1, dtype=np.int64),
    )  # fmt: skip
    E, J, M, f = _system(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau, none,
    )  # fmt: skip
    lam = _dof_parents(parent, ndof, dof0, q.shape[0])
    L = M.copy()
    ok = _ltl(L, lam)
    u_free = f.copy()
    if ok:
        _ltl_solve(L, lam, u_free)
    return ok, E, J, L, lam, u_free


@njit(cache=True)
def step_rows(  # noqa: ANN201, PLR0913
    E, J, L, lam, support, n_support, q, h, node_of_body, body_a, body_b, point, normal,
    dist, beta, max_corr, lim_dof, lim_sign, lim_bound,
):  # fmt: skip
    """The contacts' tangent basis ``(t1, t2)``, the rows ``C = [N; T; L]`` and their
    right-hand side ``b`` (``_contact_rows``) and ``Kt = M^-1 C^T`` (``_inverse_rows``),
    after :func:`step_system`; contacts on bodies ``body_a``, ``body_b`` (``-1``: the
    world), mapped to tree nodes by ``node_of_body``."""
    node_a, node_b = contact_nodes(body_a, body_b, node_of_body)
    t1, t2 = _tangent_basis(normal)
    C, b = _contact_rows(
        E, J, support, n_support, q, h, node_a, node_b, point, normal, dist, beta, max_corr,
        lim_dof, lim_sign, lim_bound, t1, t2,
    )  # fmt: skip
    Kt, _ = _inverse_rows(L, lam, C)
    return t1, t2, C, b, Kt


@njit(cache=True)
def step_velocity(u_free, K, z):  # noqa: ANN001, ANN201
    """The step's velocity ``v = M^-1 (f + C^T z) = u_free + K z`` with ``K = M^-1 C^T``
    (nq, r) and the impulses ``z`` on the ``r`` rows (entries beyond ``r`` not used)."""
    v = u_free.copy()
    for a in range(u_free.shape[0]):
        acc = 0.0
        for r in range(K.shape[1]):
            acc += K[a, r] * z[r]
        v[a] += acc
    return v


__all__ = [
    "ADMM",
    "APGD",
    "CCP",
    "COULOMB",
    "DECOUPLED",
    "MAX_ITERATIONS",
    "NOT_SPD",
    "NSGS",
    "NUMERICAL_ERROR",
    "OPTIMAL",
    "STALLED",
    "cone_full_step",
    "delassus_rows",
    "step_rows",
    "step_system",
    "step_velocity",
]
