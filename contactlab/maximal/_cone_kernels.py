"""Compiled kernels of the disc-cone contact step (:mod:`contactlab.maximal.cone_step`).

One call, :func:`cone_step`, takes a step of free rigid bodies with the exact friction
cone ``K_i = {||r_t|| <= mu_i r_n}`` from their contacts: the free momentum, the contact
rows, the 3x3 diagonal blocks of ``W = C M^-1 C^T`` and the warm start by contact
identity (the kernels of :mod:`contactlab.maximal._pile_kernels`), then block nonsmooth
Gauss--Seidel (NSGS) on the bodies' twists, the residuals and contact metrics of the
solution and ``E <- E exp(h [phi])``.

Per contact ``i`` the impulse ``r_i = (r_n, r_t1, r_t2)`` and the velocity
``u_i = (W r + q)_i`` (``q = C M^-1 f - b``).  Two laws:

- ``law = 0``, Anitescu--Hart's cone complementarity problem
  ``K ∋ r ⟂ u ∈ K*``;
- ``law = 1``, Coulomb's law in De Saxcé's form ``K ∋ r ⟂ û ∈ K*`` with
  ``û = (u_n + mu ||u_t||, u_t)``.

Body-velocity NSGS.  ``W`` is never formed: with ``v = M^-1 (f + C^T r)`` kept up to
date, contact ``i``'s velocity is ``u_i = C_i v - b_i`` (36 products) and a change
``dr`` of its impulse moves its two bodies' twists by ``M^-1 C_i^T dr`` (36 more).  The
local problem with the other contacts fixed, ``u = A_i r + c`` (``A_i`` the contact's
block of ``W``), is solved exactly by :func:`solvers.numerics.soc_local.soc_ccp_local` (the
minimiser of ``1/2 r'A r + c'r`` over ``K``: Newton's method on the optimality conditions
on the cone's boundary from the contact's current impulse, the scan of
:func:`solvers.numerics.fc_local.ccp_local` behind it).  For Coulomb's law the local problem is
De Saxcé's: its shift ``s_i = mu_i ||u_t,i||`` enters the normal row (``c_n + s_i``), so
that the local cone problem's solution satisfies ``K ∋ r ⟂ û ∈ K*`` once the shift is
consistent.  Two rules for the shift:

- ``direct`` (``True``): each contact's local problem is De Saxcé's itself, solved exactly
  by :func:`solvers.numerics.fc_local.coulomb_local` (take-off, sticking, or sliding on the
  cone's boundary with ``u_n = 0`` and the slip opposite the friction; Siconos's NSGS,
  the general ``nsgs``'s ``direct=True``), which can cycle on redundant contacts;
- otherwise the shifts are frozen over sweeps and refreshed from the current velocities
  when the frozen cone problem's residual is below a tenth of Coulomb's (the rule of
  :func:`solvers.numerics.fc_kernels.nsgs`, Acary and Cadoux's sequence of cone problems
  each solved inexactly).

The contacts are visited from the lowest point up, the general route's local order
(:func:`contactlab.models.fc_route.local_step`).  The stopping test is the natural-map
residual ``||r - P_K(r - û)||_2 / ||q||_2`` of
:func:`solvers.numerics.fc_kernels.natural_map` on the exact velocities (the twists are
recomputed from the impulses before it), evaluated after every sweep; the best iterate
met is returned.  The residual is evaluated after sweeps 1, 2, 4, 8 and then every 8
sweeps, and after every sweep with the frozen shifts (the general ``nsgs``'s schedule).
"""

from __future__ import annotations

import math

import numpy as np

from contactlab.maximal._pile_kernels import (
    DECOUPLED,
    I_ISLANDS,
    I_STATUS,
    I_WORK,
    N_INFO,
    _move,
    _velocity,
    island_contacts,
)
from contactlab.maximal._step_parts import (
    carried_start,
    cone_outputs,
    contact_velocity,
    decoupled,
    free_rows,
    island_done,
    island_residual,
    island_rows,
    normal_rhs,
    row_columns,
    solve_status,
)
from solvers.jit import njit
from solvers.numerics.fc_kernels import cone_gap
from solvers.numerics.fc_local import coulomb_local
from solvers.numerics.soc_local import soc_ccp_local

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 12.0

#: laws of :func:`cone_step`
CCP, COULOMB = 0, 1

__all__ = [
    "CCP",
    "COULOMB",
    "DECOUPLED",
    "I_ISLANDS",
    "I_STATUS",
    "I_WORK",
    "cone_step",
]


@njit(cache=True)
def _natural(J, ca, cb, rhs, v, z, mu, law, shift, qnorm, fresh):  # noqa: ANN001, ANN202, PLR0913
    """The natural-map residual ``||r - P_K(r - û)||_2 / ||q||_2`` of the impulses ``z``
    with twists ``v``, ``û = u + (s, 0, 0)``: ``s = mu ||u_t||`` for ``law = 1``, else
    ``shift[i]`` (a frozen shift; zero for the CCP).  Returns it and, in the same pass,
    the residual with ``s = shift[i]`` (the frozen cone problem's); ``fresh[i]`` receives
    ``mu_i ||u_t,i||`` (the shifts a refresh sets) for ``law = 1``."""
    acc = 0.0
    acc_frozen = 0.0
    u = np.empty(3)
    for i in range(mu.shape[0]):
        contact_velocity(J, ca, cb, rhs, v, i, u)
        m = mu[i]
        r0, r1, r2 = z[3 * i], z[3 * i + 1], z[3 * i + 2]
        x1 = r1 - u[1]
        x2 = r2 - u[2]
        frozen = cone_gap(m, r0 - (u[0] + shift[i]), x1, x2, r0, r1, r2)
        acc_frozen += frozen
        if law == 1:
            s = m * math.sqrt(u[1] * u[1] + u[2] * u[2])
            fresh[i] = s
            acc += cone_gap(m, r0 - (u[0] + s), x1, x2, r0, r1, r2)
        else:
            acc += frozen
    scale = qnorm if qnorm > 2.220446049250313e-16 else 1.0
    return math.sqrt(acc) / scale, math.sqrt(acc_frozen) / scale


@njit(cache=True)
def _refresh_shift(J, ca, cb, rhs, v, mu, shift):  # noqa: ANN001, ANN202
    """``shift[i] = mu_i ||u_t,i||`` at the twists ``v``."""
    u = np.empty(3)
    for i in range(mu.shape[0]):
        contact_velocity(J, ca, cb, rhs, v, i, u)
        shift[i] = mu[i] * math.sqrt(u[1] * u[1] + u[2] * u[2])


@njit(cache=True)
def _sweep(J, DJ, A3, ca, cb, rhs, mu, up, v, z, shift, direct):  # noqa: ANN001, ANN202, PLR0913
    """One block Gauss--Seidel sweep over the contacts in the order ``up``: each contact's
    problem with the others fixed solved exactly, its impulse and its bodies' twists
    updated: the cone problem with the frozen shift ``shift[i]`` on its normal row
    (``soc_ccp_local``), or with ``direct`` the one-contact Coulomb problem in De Saxcé's form
    (``coulomb_local``)."""
    u = np.empty(3)
    c = np.empty(3)
    new = np.empty(3)
    dirs = np.zeros((0, 2))
    for j in range(up.shape[0]):
        i = up[j]
        r0 = 3 * i
        contact_velocity(J, ca, cb, rhs, v, i, u)
        Ai = A3[i]
        for d in range(3):
            c[d] = u[d] - (Ai[d, 0] * z[r0] + Ai[d, 1] * z[r0 + 1] + Ai[d, 2] * z[r0 + 2])
        if direct:
            coulomb_local(0, mu[i], dirs, Ai, c, new)
        else:
            c[0] += shift[i]
            # Newton's method from the contact's current impulse
            new[0], new[1], new[2] = z[r0], z[r0 + 1], z[r0 + 2]
            soc_ccp_local(mu[i], Ai, c, new, new)
        for d in range(3):
            r = r0 + d
            dz = new[d] - z[r]
            if dz != 0.0:
                z[r] = new[d]
                _move(DJ, ca, cb, v, r, dz)


@njit(cache=True)
def _nsgs(J, DJ, A3, ca, cb, rhs, mu, up, f, dinv, v, z, law, direct, tol, max_sweeps, qnorm):  # noqa: ANN001, ANN202, PLR0913
    """Block NSGS from ``z`` (``v`` its twists) until the natural-map residual is within
    ``tol`` or ``max_sweeps`` sweeps are done; ``z`` and ``v`` end at the best iterate met.
    Returns ``(sweeps, residual)``."""
    nc = mu.shape[0]
    shift = np.zeros(nc)
    if law == 1:
        _refresh_shift(J, ca, cb, rhs, v, mu, shift)
    fresh = np.empty(nc)
    residual = _natural(J, ca, cb, rhs, v, z, mu, law, shift, qnorm, fresh)[0]
    best = z.copy()
    best_res = residual
    sweeps = 0
    shifted = law == 1 and not direct
    next_check = 1
    while best_res > tol and sweeps < max_sweeps:
        _sweep(J, DJ, A3, ca, cb, rhs, mu, up, v, z, shift, law == 1 and direct)
        sweeps += 1
        if not (shifted or sweeps == next_check or sweeps >= max_sweeps):
            continue
        next_check = next_check * 2 if next_check < 8 else next_check + 8
        _velocity(J, ca, cb, f, dinv, z, v)
        residual, inner = _natural(J, ca, cb, rhs, v, z, mu, law, shift, qnorm, fresh)
        if not (math.isfinite(residual) and np.all(np.isfinite(z))):
            break
        if residual < best_res:
            best_res = residual
            best[:] = z
        if shifted:
            # the frozen cone problem's residual decides when the shifts are refreshed
            if inner <= max(0.1 * residual, 0.5 * tol):
                shift[:] = fresh  # mu ||u_t|| at these twists
    z[:] = best
    _velocity(J, ca, cb, f, dinv, z, v)
    return sweeps, best_res


@njit(cache=True)
def _nsgs_islands(J, DJ, A, ca, cb, rhs, mu, up, a, b, f, dinv, v, z, law, direct, tol,
                  max_sweeps, qsq, qnorm):  # fmt: skip  # noqa: ANN001, ANN202, PLR0913
    """:func:`_nsgs` island by island (:func:`~contactlab.maximal._pile_kernels.island_contacts`):
    each island's rows, bodies and twists in arrays of its own
    (:func:`~contactlab.maximal._step_parts.island_rows`), solved with its own stopping
    test, the natural-map residual relative to its own ``||q_k||_2`` (``qsq`` (nc) each
    contact's ``||q_i||^2``), and its own sweep cap; its impulses written back into ``z``.
    The islands share no row, so the squared unscaled residuals add up to the whole
    problem's and ``sum_k ||q_k||^2 = ||q||^2``: every island within ``tol`` is the whole
    step within it.  A single island is solved on the step's own arrays.  Returns the
    step's status and residual (the whole problem's), the largest island's sweeps, the
    sweeps weighted by rows and the number of islands; ``z`` and ``v`` end at the
    islands' best iterates."""
    nc = mu.shape[0]
    nb = dinv.shape[0] // 6
    count, off, members, order = island_contacts(a, b, nb, up)
    if count <= 1:
        sweeps, residual = _nsgs(
            J, DJ, A.reshape(nc, 3, 3), ca, cb, rhs, mu, up, f, dinv, v, z, law, direct, tol,
            max_sweeps, qnorm,
        )  # fmt: skip
        return solve_status(residual, tol), sweeps, residual, float(sweeps), count
    slot = np.full(nb, -1, dtype=np.int64)
    acc = np.zeros(4)  # numerical error met, squared residuals, largest iterations, work
    for k in range(count):
        c0, c1 = off[k], off[k + 1]
        pick = members[c0:c1]
        Jk, DJk, Ak, rk, muk, zk, fk, dk, cak, cbk = island_rows(
            pick, a, b, J, DJ, A, rhs, mu, z, f, dinv, slot
        )
        m = c1 - c0
        qk = 0.0
        for j in range(m):
            qk += qsq[pick[j]]
        qk = math.sqrt(qk)
        vk = np.empty(fk.shape[0] + 6)
        _velocity(Jk, cak, cbk, fk, dk, zk, vk)
        sw, res = _nsgs(
            Jk, DJk, Ak.reshape(m, 3, 3), cak, cbk, rk, muk, order[c0:c1], fk, dk, vk, zk,
            law, direct, tol, max_sweeps, qk,
        )  # fmt: skip
        island_done(z, zk, pick, res, qk, sw, nc, acc)
    _velocity(J, ca, cb, f, dinv, z, v)
    status, residual = island_residual(acc, qnorm, tol)
    return status, int(acc[2]), residual, acc[3], count


@njit(cache=True)
def cone_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    mdiag, E, phi, gravity, h, iterations,
    a, b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_order, old_normal, old_friction, ids, origin,
    law, direct, tol, max_iter, slip_threshold, islands,
):  # fmt: skip
    """One step of free bodies with the exact friction cone by block NSGS (module docstring).

    Arguments as :func:`contactlab.maximal._pile_kernels.contact_step`'s, with ``law``
    (:data:`CCP` or :data:`COULOMB`), ``direct`` (Coulomb's shift rule) and ``max_iter``
    the sweep cap, ``islands`` whether each island is solved alone (:func:`_nsgs_islands`;
    else the whole problem at once).  Returns the new twists (nb, 6), the new transforms,
    the impulses ``z`` on the rows ``[N; T]``, the friction impulses as world vectors
    (nc, 3) and ``info`` (the entries ``I_*`` of :mod:`contactlab.maximal._pile_kernels`;
    ``I_NATURAL`` and ``I_PRIMAL`` the natural-map residual, ``I_DUAL`` and ``I_COMP``
    zero, ``I_ISLANDS`` the islands and ``I_WORK`` the sweeps weighted by rows).
    """
    nb = mdiag.shape[0]
    n = 6 * nb
    nc = a.shape[0]
    m3 = 3 * nc
    info = np.zeros(N_INFO)
    f, dinv, J, DJ, A, t1, t2 = free_rows(
        mdiag, E, phi, gravity, h, iterations, a, b, point, normal
    )
    A3 = A.reshape(nc, 3, 3)
    rhs = np.zeros(m3)
    for i in range(nc):
        rhs[3 * i] = normal_rhs(dist[i], h, beta, max_corr)
    order = np.arange(nc)
    ca, cb = row_columns(a, b, n, order)
    if decoupled(A):
        info[I_STATUS] = DECOUPLED
        return phi.copy(), E.copy(), np.zeros(m3), np.zeros((nc, 3)), info
    up = np.argsort(point[:, 2], kind="mergesort")
    # ||q||_2 of the local problem: the contact velocities without impulses
    z = np.zeros(m3)
    v = np.empty(n + 6)
    _velocity(J, ca, cb, f, dinv, z, v)
    qn = 0.0
    qsq = np.empty(nc)
    u = np.empty(3)
    for i in range(nc):
        contact_velocity(J, ca, cb, rhs, v, i, u)
        qsq[i] = u[0] * u[0] + u[1] * u[1] + u[2] * u[2]
        qn += qsq[i]
    qnorm = math.sqrt(qn)
    if carry:
        carried_start(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2, order, z)
        _velocity(J, ca, cb, f, dinv, z, v)
    if islands:
        status, sweeps, residual, work, count = _nsgs_islands(
            J, DJ, A, ca, cb, rhs, mu, up, a, b, f, dinv, v, z, law, direct, tol, max_iter,
            qsq, qnorm,
        )  # fmt: skip
    else:
        sweeps, residual = _nsgs(
            J, DJ, A3, ca, cb, rhs, mu, up, f, dinv, v, z, law, direct, tol, max_iter, qnorm
        )
        status = solve_status(residual, tol)
        work, count = float(sweeps), 1 if nc > 0 else 0
    info[I_ISLANDS], info[I_WORK] = count, work
    phi_new, E_new, out, friction = cone_outputs(
        J, ca, cb, rhs, v, order, z, mu, dist, slip_threshold,
        status, sweeps, residual, t1, t2, mdiag, E, h, gravity, info,
    )  # fmt: skip
    return phi_new, E_new, out, friction, info
