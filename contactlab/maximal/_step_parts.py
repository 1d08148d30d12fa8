"""The parts the compiled cone and Lemke steps share (:mod:`contactlab.maximal._cone_kernels`,
:mod:`contactlab.maximal._cone_fom_kernels`, :mod:`contactlab.maximal._lemke_kernels`).

Each of those steps starts as the box-friction step of
:mod:`contactlab.maximal._pile_kernels` does (the free momentum by the formulation's
midpoint rule, the inverse mass diagonal, the contact rows and the 3x3 diagonal blocks of
``W = C M^-1 C^T``, the normal rows' right-hand sides with the penetration feedback, each
row's two bodies' first twist slots) and ends as it does (the contact metrics, the state's
outputs and ``E <- E exp(h [phi])``); the pieces are written here once, over the pile
kernels' own row products and outputs.  The contacts may be visited in an ``order`` of
their own (the first-order methods put them in the general route's local order): entry
``j`` of the rows then stands for contact ``order[j]``.
"""

from __future__ import annotations

import math

import numpy as np

from contactlab.maximal._island_rows import island_rows
from contactlab.maximal._pile_kernels import (
    DECOUPLED_DIAG,
    I_COMP,
    I_CONE,
    I_DISSIPATION,
    I_DUAL,
    I_NATURAL,
    I_NORMAL_COMP,
    I_NORMAL_FEAS,
    I_PENETRATION,
    I_PRIMAL,
    I_SLIDING,
    I_STATUS,
    I_SWEEPS,
    I_UNITS,
    MAX_ITERATIONS,
    NUMERICAL_ERROR,
    OPTIMAL,
    _contact_metrics,
    _row_dot,
    _rows,
    _step_outputs,
)
from contactlab.maximal.assembly import _midpoint_free_momentum
from contactlab.models.delassus import carried_impulses
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 4.0

#: below this ``||q||_2`` the natural map is not scaled (that of
#: :func:`solvers.numerics.fc_kernels.natural_map`)
EPS = 2.220446049250313e-16


@njit(cache=True)
def free_rows(mdiag, E, phi, gravity, h, iterations, a, b, point, normal):  # noqa: ANN001, ANN201, PLR0913
    """The step's free momentum ``f`` (6 nb), the inverse mass diagonal ``dinv`` and the
    contact rows of :func:`contactlab.maximal._pile_kernels._rows` (``J``, ``M^-1 J^T``,
    the diagonal blocks ``A`` of ``W``, the tangents ``t1``, ``t2``)."""
    nb = mdiag.shape[0]
    f = _midpoint_free_momentum(mdiag, phi, E, gravity, h, iterations)
    dinv = np.empty(6 * nb)
    for k in range(nb):
        for j in range(6):
            dinv[6 * k + j] = 1.0 / mdiag[k, j]
    J, DJ, A, t1, t2 = _rows(a, b, E, point, normal, dinv)
    return f, dinv, J, DJ, A, t1, t2


@njit(cache=True)
def normal_rhs(d, h, beta, max_corr):  # noqa: ANN001, ANN201
    """The right-hand side of a normal row at the distance ``d``: the gap closed in the step
    when apart, the penetration feedback ``min(beta (-d), max_corr)`` when overlapping."""
    return -d / h if d > 0.0 else min(beta * (-d), max_corr)


@njit(cache=True)
def row_columns(a, b, n, order):  # noqa: ANN001, ANN201
    """``ca``, ``cb`` (3 nc): row ``3 j + d``'s two bodies' first twist slots (contact
    ``order[j]``'s bodies; ``n``, the world's zero slot, for the world)."""
    nc = order.shape[0]
    ca = np.empty(3 * nc, dtype=np.int64)
    cb = np.empty(3 * nc, dtype=np.int64)
    for j in range(nc):
        i = order[j]
        for d in range(3):
            ca[3 * j + d] = 6 * a[i]
            cb[3 * j + d] = 6 * b[i] if b[i] >= 0 else n  # the world's zero slot
    return ca, cb


@njit(cache=True)
def decoupled(A):  # noqa: ANN001, ANN201
    """Whether a row's diagonal of ``W`` (the blocks ``A``) is at most
    :data:`~contactlab.maximal._pile_kernels.DECOUPLED_DIAG` times the largest."""
    nc = A.shape[0]
    dmax = 0.0
    for i in range(nc):
        for k in range(3):
            dmax = max(dmax, A[i, 4 * k])
    for i in range(nc):
        for k in range(3):
            if A[i, 4 * k] <= DECOUPLED_DIAG * dmax:
                return True
    return False


@njit(cache=True)
def carried_start(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2, order, z):  # noqa: ANN001, ANN201, PLR0913
    """The warm start carried over from the recorded contacts
    (:func:`contactlab.models.delassus.carried_impulses`) into ``z``: contact ``order[j]``'s
    impulse on rows ``3 j .. 3 j + 2``."""
    zn, zt = carried_impulses(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2)
    for j in range(order.shape[0]):
        i = order[j]
        z[3 * j] = zn[i]
        z[3 * j + 1] = zt[2 * i]
        z[3 * j + 2] = zt[2 * i + 1]


@njit(cache=True)
def contact_velocity(J, ca, cb, rhs, v, i, u):  # noqa: ANN001, ANN201, PLR0913
    """``u = C_i v - b_i`` of the contact on rows ``3 i .. 3 i + 2``."""
    for d in range(3):
        r = 3 * i + d
        u[d] = _row_dot(J, ca, cb, v, r) - rhs[r]


@njit(cache=True)
def solve_status(residual, tol):  # noqa: ANN001, ANN201
    """The status of an iteration stopped at ``residual``."""
    if not math.isfinite(residual):
        return NUMERICAL_ERROR
    if residual <= tol:
        return OPTIMAL
    return MAX_ITERATIONS


@njit(cache=True)
def record_metrics(info, acc, pen):  # noqa: ANN001, ANN201
    """The contact metrics ``acc`` (normal complementarity and feasibility, cone,
    dissipation, sliding; :func:`~contactlab.maximal._pile_kernels._contact_metrics`) and
    the deepest penetration into ``info``."""
    info[I_NORMAL_COMP], info[I_NORMAL_FEAS] = acc[0], acc[1]
    info[I_CONE], info[I_DISSIPATION] = acc[2], acc[3]
    info[I_SLIDING], info[I_PENETRATION], info[I_UNITS] = acc[4], pen, 0.0


@njit(cache=True)
def cone_outputs(  # noqa: ANN201, PLR0913
    J, ca, cb, rhs, v, order, z, mu, dist, slip_threshold,
    status, iterations, residual, t1, t2, mdiag, E, h, gravity, info,
):  # fmt: skip
    """The end of a cone step: the contact metrics at the twists ``v`` (row ``j``'s contact
    ``order[j]``, ``z`` its impulses in the contacts' order), the status, the iterations and
    the natural-map residual (primal and natural; the dual and complementarity residuals
    zero) into ``info``, then :func:`~contactlab.maximal._pile_kernels._step_outputs`."""
    nb = mdiag.shape[0]
    pen = 0.0
    acc = np.zeros(5)  # normal complementarity and feasibility, cone, dissipation, sliding
    u = np.empty(3)
    for j in range(order.shape[0]):
        i = order[j]
        contact_velocity(J, ca, cb, rhs, v, j, u)
        _contact_metrics(i, z, u[0], u[1], u[2], mu, slip_threshold, acc)
        pen = max(pen, -dist[i])
    info[I_STATUS] = status
    info[I_SWEEPS] = iterations
    info[I_PRIMAL], info[I_DUAL], info[I_COMP], info[I_NATURAL] = residual, 0.0, 0.0, residual
    record_metrics(info, acc, pen)
    return _step_outputs(z, t1, t2, v, 6 * nb, nb, E, h, mdiag, gravity, info)


@njit(cache=True)
def island_done(z, zk, pick, res, qk, iterations, nc, acc):  # noqa: ANN001, ANN201, PLR0913
    """An island's solution back into the step: its impulses ``zk`` into the rows ``pick``
    of ``z``, and into ``acc`` (4): whether a numerical error was met (``acc[0] = 1``), the
    sum of the islands' squared unscaled natural-map residuals (``res`` is relative to the
    island's ``||q_k||_2``, ``qk``; 1 below the machine epsilon), the largest island's
    ``iterations`` and the iterations weighted by rows (of ``nc`` contacts in all)."""
    m = pick.shape[0]
    for j in range(m):
        for d in range(3):
            z[3 * pick[j] + d] = zk[3 * j + d]
    if not math.isfinite(res):
        acc[0] = 1.0
    else:
        unscaled = res * (qk if qk > EPS else 1.0)
        acc[1] += unscaled * unscaled
    acc[2] = max(acc[2], float(iterations))
    acc[3] += iterations * m / nc


@njit(cache=True)
def island_residual(acc, qnorm, tol):  # noqa: ANN001, ANN201
    """The whole step's status and natural-map residual from its islands' ``acc``
    (:func:`island_done`): the islands share no row, so the sum of their squared unscaled
    residuals is the whole problem's; ``qnorm`` the whole problem's ``||q||_2``."""
    if acc[0] > 0.0:
        return NUMERICAL_ERROR, np.nan
    residual = math.sqrt(acc[1]) / (qnorm if qnorm > EPS else 1.0)
    return solve_status(residual, tol), residual


__all__ = [
    "COMPILE_SECONDS",
    "carried_start",
    "cone_outputs",
    "contact_velocity",
    "decoupled",
    "free_rows",
    "island_done",
    "island_residual",
    "island_rows",
    "normal_rhs",
    "record_metrics",
    "row_columns",
    "solve_status",
]
