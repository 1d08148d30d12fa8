"""Compiled kernels of the maximal contact step (:mod:`contactlab.maximal.compiled_step`).

One call, :func:`contact_step`, takes a step of free rigid bodies from their
contacts: the free momentum (the formulation's midpoint rule,
:func:`contactlab.maximal.assembly._midpoint_free_momentum`), the contact rows as
flat arrays (per contact its normal and two tangent rows over the twelve
columns of its two bodies, :func:`contactlab.contact.rows._rows_csr`'s rows), the
diagonal blocks of the Delassus matrix ``W = C M^-1 C^T``, the warm start carried
over by contact identity, the projected Gauss--Seidel sweeps of
:mod:`solvers.backends.pgs_kernel` and the residuals and contact metrics of the
solution.

Body-velocity Gauss--Seidel.  ``W`` is never formed: with ``v = M^-1 (f + C^T z)``
kept up to date (one twist per body), row ``i``'s ``w_i = (W z + q)_i`` is
``C_i v - b_i``, twelve products, and an update ``dz`` of its impulse moves the two
bodies' twists by ``M^-1 C_i^T dz``, twelve more.  That is Gauss--Seidel on ``W``
algebraically, in the same row order (contacts from the lowest point up, each
contact's normal row then its tangent rows), with the same projections, the same
exact local solve of the strongly coupled contacts
(:func:`solvers.backends.pgs_kernel.local_contact_solve`, on the contact's 3x3
block of ``W`` and chosen by the same test, :data:`solvers.backends.pgs.COUPLING`),
and the same stopping rule; the sums differ in their order, so the iterates agree
with the general path's to rounding only.  The twists are recomputed from the
impulses before each exact residual (no drift of the running updates).

Subspace minimization (PGS-SM; Silcowitz, Niebe and Erleben 2009/2010).  When
``finish`` is set and :data:`PLAIN_SWEEPS` sweeps leave the residual above the
tolerance, :func:`_pgs_sm` takes over: rounds of :data:`SM_SWEEPS` sweeps, each followed
by :func:`_subspace`, which holds the rows the sweeps left at a bound (with the sign of
``w`` that keeps them there) and solves ``w = 0`` on the others by Jacobi-preconditioned
conjugate gradients with ``W``'s products through the bodies' twists, cut where a row
reaches its bound (that row is then held and the gradients restart), and projects.
The exact natural-map residual after each round and each sweep block decides, as for
plain Gauss--Seidel; the best iterate met is kept.  Conjugate gradients on the free rows
move the impulses of redundant contacts within the null space of ``W`` only as far as
the equations need, where Gauss--Seidel drifts along it for thousands of sweeps.

Direct finishes.  An island that the subspace finish has not solved within
:data:`DENSE_AFTER` sweeps and products is solved by Lemke's method
(:func:`solvers.numerics.lemke_kernel.lemke_lcp`, the ``lemke`` backend's walk): whole, on
its dense ``W``, when it has at most :data:`DENSE_ROWS` rows (:func:`_dense_finish`), else
one block of at most :data:`BLOCK_CONTACTS` contacts around its worst contact per round
with the other impulses held (:func:`_block_finish`; :data:`BLOCKS` disjoint blocks a
round).  An answer is taken only if the natural map says so, and the exact residual keeps
the best iterate.

Islands.  With ``islands`` set, the contacts are grouped by the bodies they join
(:func:`island_contacts`; the world joins nothing) and each group is solved alone by
:func:`_solve_islands`, with its own stopping test (the same natural-map residual and
tolerance) and its own sweep cap.  The residual is a maximum over rows and two islands
share no row or body, so every island within the tolerance is the whole step within it;
a small island stops when it is solved instead of being swept as long as the hardest one
needs, and an island's solution depends on its own data only.
"""

from __future__ import annotations

import numpy as np

from contactlab.contact.rows import _contact_block, _contact_directions
from contactlab.maximal._island_rows import island_rows
from contactlab.maximal.assembly import _midpoint_free_momentum
from contactlab.models.delassus import carried_impulses, friction_vectors
from contactlab.se3 import _SMALL_ANGLE
from solvers.backends.pgs_kernel import local_contact_solve
from solvers.islands import pair_labels
from solvers.jit import njit
from solvers.numerics import lemke_kernel as LK

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 20.0

#: statuses of :func:`contact_step`
OPTIMAL, MAX_ITERATIONS, NUMERICAL_ERROR, DECOUPLED = 0, 1, 2, 3
#: a contact is one unit solved exactly when ``mu |W_nt| > COUPLING W_nn``
#: (:data:`solvers.backends.pgs.COUPLING`)
COUPLING = 0.5
#: a row whose diagonal is at most this fraction of the largest is decoupled
#: (:data:`solvers.backends.pgs.DECOUPLED_DIAG`): the general solver's closed form
DECOUPLED_DIAG = 1e-24

#: with the subspace finish, the sweeps of plain projected Gauss--Seidel before it
PLAIN_SWEEPS = 128
#: sweeps and at most products with ``W`` of one round of the subspace finish
SM_SWEEPS, SM_PRODUCTS = 16, 120
#: an island of at most this many rows that the subspace finish has not solved within
#: :data:`DENSE_AFTER` sweeps and products is solved once by Lemke's method on its dense
#: ``W`` (:func:`_dense_finish`, counted as one product with ``W``), kept if its natural-map
#: residual is within the tolerance
DENSE_ROWS, DENSE_AFTER = 150, 1024
#: :func:`_dense_finish`'s Lemke walk (:func:`solvers.numerics.lemke_kernel.lemke_lcp`): the
#: ``lemke`` backend's ``zero_rtol`` and ``pivot_tol``, at most this many pivots per walk
#: and variable of the standard LCP
LEMKE_ZERO_RTOL, LEMKE_PIVOT_TOL, LEMKE_PIVOTS = 1e-11, 1e-12, 10
#: an island of more than :data:`DENSE_ROWS` rows not solved within :data:`DENSE_AFTER` sweeps
#: and products ends each further round of the subspace finish with one block of at most this
#: many contacts, around the contact of the largest natural-map residual, solved by Lemke's
#: method with the other impulses held (:func:`_block_finish`)
BLOCK_CONTACTS = 40
#: blocks per round, around the worst contacts not yet in a block (on the stored 321-row
#: island three disjoint blocks a round took 0.33 s CPU against 0.21 s for one; blocks of
#: 16 contacts did not converge within the 10000 cap)
BLOCKS = 1
#: the blocks begin after this many sweeps and products (the subspace finish solves most
#: large islands by then)
BLOCK_AFTER = 4096

#: entries of the ``info`` array returned by :func:`contact_step`
(
    I_STATUS, I_SWEEPS, I_PRIMAL, I_DUAL, I_COMP, I_NATURAL, I_NORMAL_COMP, I_NORMAL_FEAS,
    I_CONE, I_DISSIPATION, I_SLIDING, I_PENETRATION, I_UNITS, I_KINETIC, I_POTENTIAL,
    I_LINEAR, _, _, I_ANGULAR, _, _, I_ISLANDS, I_WORK,
) = range(23)  # fmt: skip
N_INFO = 23


@njit(cache=True)
def _rows(a, b, E, point, normal, dinv):  # noqa: ANN001, ANN202
    """Per contact ``i`` its rows ``r = 3 i + d`` in ``J`` (3 nc, 12): normal, ``t1``, ``t2``
    (:func:`contactlab.contact.rows._contact_block`, the rows of
    :func:`contactlab.contact.rows._rows_csr`) over body ``a``'s six columns then body
    ``b``'s (negated; zero for the world), ``M^-1 J^T`` as ``DJ``, the 3x3 diagonal
    blocks ``A`` (nc, 9) of ``W`` and the tangents."""
    nc = a.shape[0]
    dirs, t1, t2 = _contact_directions(normal)
    J = np.zeros((3 * nc, 12))
    DJ = np.zeros((3 * nc, 12))
    A = np.zeros((nc, 9))
    x = np.empty(3)
    m = np.empty(3)
    block = np.empty((3, 12))
    for i in range(nc):
        _contact_block(a, b, E, point, dirs, i, x, m, block)
        for side in range(2):
            body = a[i] if side == 0 else b[i]
            if body < 0:
                continue
            s = 6 * side
            for d in range(3):
                r = 3 * i + d
                for j in range(6):
                    J[r, s + j] = block[d, s + j]
                for j in range(6):
                    DJ[r, s + j] = dinv[6 * body + j] * J[r, s + j]
        # the block of W, summed over the columns from the lower body's up (as the
        # general construction's sparse accumulator), the same products for W_ij and W_ji
        lower_first = b[i] < 0 or a[i] < b[i]
        for d1 in range(3):
            for d2 in range(3):
                acc = 0.0
                for side in range(2):
                    s = 6 * side if lower_first else 6 * (1 - side)
                    body = a[i] if s == 0 else b[i]
                    if body < 0:
                        continue
                    for j in range(6):
                        acc += dinv[6 * body + j] * (J[3 * i + d1, s + j] * J[3 * i + d2, s + j])
                A[i, 3 * d1 + d2] = acc
    return J, DJ, A, t1, t2


@njit(cache=True)
def _integrate(E, phi, h, out):  # noqa: ANN001, ANN202
    """``out = E exp(h [phi])`` body by body (:func:`contactlab.se3.integrate`)."""
    R = np.empty((3, 3))
    V = np.empty((3, 3))
    W = np.zeros((3, 3))
    t = np.empty(3)
    for k in range(E.shape[0]):
        w0, w1, w2 = h * phi[k, 0], h * phi[k, 1], h * phi[k, 2]
        u0, u1, u2 = h * phi[k, 3], h * phi[k, 4], h * phi[k, 5]
        theta = np.sqrt(w0 * w0 + w1 * w1 + w2 * w2)
        t2 = theta * theta
        if theta < _SMALL_ANGLE:
            a = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
            b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
            c = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
        else:
            a = np.sin(theta) / theta
            sh = np.sin(0.5 * theta) / theta
            b = 2.0 * sh * sh
            c = (theta - np.sin(theta)) / (theta * theta * theta)
        # [w] and [w]^2
        W[0, 1], W[0, 2], W[1, 2] = -w2, w1, -w0
        W[1, 0], W[2, 0], W[2, 1] = w2, -w1, w0
        for i in range(3):
            for j in range(3):
                ww = W[i, 0] * W[0, j] + W[i, 1] * W[1, j] + W[i, 2] * W[2, j]
                one = 1.0 if i == j else 0.0
                R[i, j] = one + a * W[i, j] + b * ww
                V[i, j] = one + b * W[i, j] + c * ww
        for i in range(3):
            t[i] = V[i, 0] * u0 + V[i, 1] * u1 + V[i, 2] * u2
        for i in range(3):
            for j in range(3):
                out[k, i, j] = E[k, i, 0] * R[0, j] + E[k, i, 1] * R[1, j] + E[k, i, 2] * R[2, j]
            out[k, i, 3] = E[k, i, 0] * t[0] + E[k, i, 1] * t[1] + E[k, i, 2] * t[2] + E[k, i, 3]
            out[k, 3, i] = 0.0
        out[k, 3, 3] = 1.0


@njit(cache=True)
def _state_metrics(mdiag, E, phi, gravity, info):  # noqa: ANN001, ANN202
    """Kinetic and gravity energy and the world momenta
    (:func:`contactlab.metrics.state_metrics`)."""
    kinetic = 0.0
    potential = 0.0
    for k in range(E.shape[0]):
        for j in range(6):
            kinetic += mdiag[k, j] * phi[k, j] * phi[k, j]
        m = mdiag[k, 3]
        potential -= m * (
            E[k, 0, 3] * gravity[0] + E[k, 1, 3] * gravity[1] + E[k, 2, 3] * gravity[2]
        )
        for i in range(3):
            lin = m * (E[k, i, 0] * phi[k, 3] + E[k, i, 1] * phi[k, 4] + E[k, i, 2] * phi[k, 5])
            info[I_LINEAR + i] += lin
        l0 = m * (E[k, 0, 0] * phi[k, 3] + E[k, 0, 1] * phi[k, 4] + E[k, 0, 2] * phi[k, 5])
        l1 = m * (E[k, 1, 0] * phi[k, 3] + E[k, 1, 1] * phi[k, 4] + E[k, 1, 2] * phi[k, 5])
        l2 = m * (E[k, 2, 0] * phi[k, 3] + E[k, 2, 1] * phi[k, 4] + E[k, 2, 2] * phi[k, 5])
        p0, p1, p2 = E[k, 0, 3], E[k, 1, 3], E[k, 2, 3]
        h0, h1, h2 = mdiag[k, 0] * phi[k, 0], mdiag[k, 1] * phi[k, 1], mdiag[k, 2] * phi[k, 2]
        info[I_ANGULAR + 0] += (
            p1 * l2 - p2 * l1 + E[k, 0, 0] * h0 + E[k, 0, 1] * h1 + E[k, 0, 2] * h2
        )
        info[I_ANGULAR + 1] += (
            p2 * l0 - p0 * l2 + E[k, 1, 0] * h0 + E[k, 1, 1] * h1 + E[k, 1, 2] * h2
        )
        info[I_ANGULAR + 2] += (
            p0 * l1 - p1 * l0 + E[k, 2, 0] * h0 + E[k, 2, 1] * h1 + E[k, 2, 2] * h2
        )
    info[I_KINETIC] = 0.5 * kinetic
    info[I_POTENTIAL] = potential


@njit(cache=True)
def _row_dot(J, ca, cb, x, r):  # noqa: ANN001, ANN202
    """``C_r x``: row ``r``'s twelve products with its two bodies' twists in ``x`` (the
    world's zero slot last)."""
    pa, pb = ca[r], cb[r]
    acc = 0.0
    for k in range(6):
        acc += J[r, k] * x[pa + k]
    for k in range(6):
        acc += J[r, 6 + k] * x[pb + k]
    return acc


@njit(cache=True)
def _row_bounds(z, mu3, r):  # noqa: ANN001, ANN202
    """The bounds of row ``r`` at ``z``: ``[0, inf)`` on a normal row, ``+-mu z_n`` on a
    tangent row (its contact's normal impulse clipped at zero)."""
    if r % 3 == 0:
        return 0.0, np.inf
    hi = mu3[r] * max(z[r - r % 3], 0.0)
    return -hi, hi


@njit(cache=True)
def _move(DJ, ca, cb, v, r, dz):  # noqa: ANN001, ANN202
    """``v += M^-1 C_r^T dz``: an update ``dz`` of row ``r``'s impulse moves its two
    bodies' twists."""
    pa, pb = ca[r], cb[r]
    for k in range(6):
        v[pa + k] += DJ[r, k] * dz
    for k in range(6):
        v[pb + k] += DJ[r, 6 + k] * dz


@njit(cache=True)
def _velocity(J, ca, cb, f, dinv, z, v):  # noqa: ANN001, ANN202
    """``v = M^-1 (f + C^T z)`` afresh (``v`` with the world's zero slot last)."""
    n = f.shape[0]
    for k in range(n):
        v[k] = f[k]
    for k in range(n, v.shape[0]):
        v[k] = 0.0
    for r in range(z.shape[0]):
        zr = z[r]
        if zr == 0.0:
            continue
        pa, pb = ca[r], cb[r]
        for j in range(6):
            v[pa + j] += J[r, j] * zr
        if pb < n:
            for j in range(6):
                v[pb + j] += J[r, 6 + j] * zr
    for k in range(n):
        v[k] *= dinv[k]


@njit(cache=True)
def _natural(J, ca, cb, rhs, v, z, mu3):  # noqa: ANN001, ANN202
    """``max |z - Pi(z - w)|`` over the rows
    (:func:`solvers.backends.pgs_kernel.natural_residual`)."""
    worst = 0.0
    for r in range(z.shape[0]):
        w = -rhs[r] + _row_dot(J, ca, cb, v, r)
        lo, hi = _row_bounds(z, mu3, r)
        worst = max(worst, abs(z[r] - min(max(z[r] - w, lo), hi)))
    return worst


@njit(cache=True)
def _sweeps(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, v, z, omega, sweeps):  # noqa: ANN001, ANN202, PLR0912, PLR0913, PLR0915
    """``sweeps`` projected Gauss--Seidel sweeps over the contacts in the order ``up``
    (:func:`solvers.backends.pgs_kernel.pgs_sweeps`): row ``r = 3 i + d`` is contact
    ``i``'s normal (``d = 0``) or tangent row, ``ca[r]``, ``cb[r]`` the first entries of
    its two bodies' twists in ``v`` (the world's zero slot last); a contact with
    ``unit[i]`` is solved exactly on its block ``A[i]``.  Returns the largest
    pre-update residual of the last sweep."""
    rl = np.zeros(3)
    x = np.zeros(3)
    S = np.zeros((3, 3))
    sb = np.zeros(3)
    worst = 0.0
    for _ in range(sweeps):
        worst = 0.0
        for j in range(up.shape[0]):
            i = up[j]
            r0 = 3 * i
            if unit[i]:
                m_i = mu3[r0 + 1]
                for d in range(3):
                    r = r0 + d
                    w = _row_dot(J, ca, cb, v, r) - rhs[r]
                    lo, hi = _row_bounds(z, mu3, r)
                    worst = max(worst, abs(z[r] - min(max(z[r] - w, lo), hi)))
                    rl[d] = w
                for d in range(3):
                    for e in range(3):
                        rl[d] -= A[i, 3 * d + e] * z[r0 + e]
                solved = local_contact_solve(A[i], rl, 3, m_i, x, S, sb)
                for d in range(3):
                    r = r0 + d
                    if solved:
                        if d == 0:
                            zr = max(z[r] + omega * (x[0] - z[r]), 0.0)
                        else:
                            zn = z[r0]
                            zr = z[r] + omega * (x[d] - z[r])
                            zr = min(max(zr, -m_i * zn), m_i * zn)
                    else:  # the general row update (no shortcut for a zero bound)
                        w = _row_dot(J, ca, cb, v, r) - rhs[r]
                        lo, hi = _row_bounds(z, mu3, r)
                        zr = min(max(z[r] - omega * w / diag[r], lo), hi)
                    dz = zr - z[r]
                    z[r] = zr
                    if dz != 0.0:
                        _move(DJ, ca, cb, v, r, dz)
                continue
            for d in range(3):
                r = r0 + d
                if d > 0 and mu3[r] * z[r0] <= 0.0:
                    worst = max(worst, abs(z[r]))
                    dz = -z[r]
                    z[r] = 0.0
                else:
                    w = _row_dot(J, ca, cb, v, r) - rhs[r]
                    lo, hi = _row_bounds(z, mu3, r)
                    worst = max(worst, abs(z[r] - min(max(z[r] - w, lo), hi)))
                    zr = min(max(z[r] - omega * w / diag[r], lo), hi)
                    dz = zr - z[r]
                    z[r] = zr
                if dz != 0.0:
                    _move(DJ, ca, cb, v, r, dz)
    return worst


@njit(cache=True)
def _wz(J, DJ, ca, cb, free, p, u, out):  # noqa: ANN001, ANN202
    """``out = (W p)_F`` on the free rows ``F`` for ``p`` zero off them, through the bodies'
    twists: ``u = M^-1 C^T p`` (``u`` with the world's zero slot last), then
    ``out_r = C_r u``; zero on the other rows."""
    u[:] = 0.0
    for r in range(p.shape[0]):
        pr = p[r]
        if not free[r] or pr == 0.0:
            continue
        _move(DJ, ca, cb, u, r, pr)
    nb6 = u.shape[0] - 6
    for k in range(6):
        u[nb6 + k] = 0.0  # the world does not move
    for r in range(p.shape[0]):
        if not free[r]:
            out[r] = 0.0
            continue
        out[r] = _row_dot(J, ca, cb, u, r)


@njit(cache=True)
def _subspace(J, DJ, ca, cb, rhs, diag, mu3, v, z, iterations, tol, work):  # noqa: ANN001, ANN202, PLR0912, PLR0913, PLR0915
    """One subspace minimization of the box-friction LCP at ``z`` (PGS-SM, Silcowitz,
    Niebe and Erleben): the rows are split by ``z`` and ``w = W z + q`` into those held at
    a bound (a normal row at zero with ``w_n >= 0``, with its tangent rows; a tangent
    row at ``+-mu z_n`` with ``w_t`` pushing it outward) and the free rows ``F``; the
    equations ``w_F = 0`` with the bounds of that moment held fixed, ``W_FF dz_F = -w_F``
    (symmetric, positive semidefinite), are solved by Jacobi-preconditioned conjugate
    gradients (at most ``iterations`` products with ``W``, each through the bodies'
    twists), a tangent row held at its bound follows its contact's new normal impulse
    (``z_t = +-mu z_n``), and ``z`` is projected onto the bounds (normal rows first).
    Leaves ``z`` as it was: the step ``dz`` and the sides ``side`` of the held tangent
    rows are in ``work`` (:func:`_project_step`).  Returns the products with ``W``."""
    m3 = z.shape[0]
    free = work[0]
    side = work[1]
    res = work[2]
    p = work[3]
    ap = work[4]
    dz = work[5]
    u = work[6]
    nfree = 0
    for i in range(m3 // 3):
        r0 = 3 * i
        for d in range(3):
            r = r0 + d
            w = _row_dot(J, ca, cb, v, r) - rhs[r]
            side[r] = 0.0
            if d == 0:
                held = z[r] <= 0.0 and w >= 0.0
            else:
                hi = mu3[r] * max(z[r0], 0.0)
                if hi <= 0.0 or free[r0] == 0.0:
                    held = True
                elif z[r] >= hi and w <= 0.0:
                    held, side[r] = True, 1.0
                elif z[r] <= -hi and w >= 0.0:
                    held, side[r] = True, -1.0
                else:
                    held = False
            free[r] = 0.0 if held else 1.0
            res[r] = 0.0 if held else -w
            dz[r] = 0.0
            if not held:
                nfree += 1
    used = 0
    if nfree > 0:
        # Jacobi-preconditioned conjugate gradients on W_FF dz_F = -w_F
        rz = 0.0
        for r in range(m3):
            p[r] = res[r] / diag[r]
            rz += res[r] * p[r]
        target = 0.1 * tol
        while used < iterations and rz > 0.0:
            _wz(J, DJ, ca, cb, free, p, u, ap)
            used += 1
            pap = 0.0
            for r in range(m3):
                pap += p[r] * ap[r]
            if not pap > 0.0:
                break
            alpha = rz / pap
            # the longest step along p that keeps the bounds of the free rows (Polyak's
            # active-set conjugate gradients): a step cut there ends the minimization
            step = alpha
            for i in range(m3 // 3):
                r0 = 3 * i
                if not free[r0]:
                    continue
                xn = z[r0] + dz[r0]
                pn = p[r0]
                if pn < 0.0:
                    step = min(step, max(xn, 0.0) / -pn)
                m_i = mu3[r0 + 1]
                for d in range(1, 3):
                    r = r0 + d
                    if not free[r]:
                        continue
                    xt = z[r] + dz[r]
                    slope = m_i * pn - p[r]
                    if slope < 0.0:
                        step = min(step, max(m_i * xn - xt, 0.0) / -slope)
                    slope = m_i * pn + p[r]
                    if slope < 0.0:
                        step = min(step, max(m_i * xn + xt, 0.0) / -slope)
            for r in range(m3):
                dz[r] += step * p[r]
                res[r] -= step * ap[r]
            restart = False
            if step < alpha:
                # the rows that reached their bound are held there from now on
                for i in range(m3 // 3):
                    r0 = 3 * i
                    if not free[r0]:
                        continue
                    xn = z[r0] + dz[r0]
                    if xn <= 0.0:
                        dz[r0] = -z[r0]
                        for d in range(3):
                            free[r0 + d] = 0.0
                            res[r0 + d] = 0.0
                        restart = True
                        continue
                    m_i = mu3[r0 + 1]
                    for d in range(1, 3):
                        r = r0 + d
                        if not free[r]:
                            continue
                        xt = z[r] + dz[r]
                        slack = 1e-13 * (m_i * xn + abs(xt))
                        if m_i * xn - xt <= slack:
                            side[r] = 1.0
                        elif m_i * xn + xt <= slack:
                            side[r] = -1.0
                        else:
                            continue
                        free[r] = 0.0
                        res[r] = 0.0
                        restart = True
            worst = 0.0
            for r in range(m3):
                worst = max(worst, abs(res[r]))
            if worst <= target or not np.isfinite(worst):
                break
            rz_new = 0.0
            for r in range(m3):
                rz_new += res[r] * res[r] / diag[r]
            beta = 0.0 if restart else rz_new / rz
            rz = rz_new
            for r in range(m3):
                p[r] = res[r] / diag[r] + beta * p[r]
    return used


@njit(cache=True)
def _project_step(z0, dz, side, t, mu3, z):  # noqa: ANN001, ANN202
    """``z = Pi(z0 + t dz)``: the normal rows onto ``z_n >= 0``, then the tangent rows onto
    ``|z_t| <= mu z_n``; a tangent row held at its bound follows its normal impulse."""
    for i in range(z0.shape[0] // 3):
        r0 = 3 * i
        zn = max(z0[r0] + t * dz[r0], 0.0)
        z[r0] = zn
        hi = mu3[r0 + 1] * zn
        for d in range(1, 3):
            r = r0 + d
            if side[r] != 0.0:
                z[r] = side[r] * hi
            else:
                z[r] = min(max(z0[r] + t * dz[r], -hi), hi)


@njit(cache=True)
def _measure(J, ca, cb, rhs, mu3, f, dinv, v, z, best, best_res):  # noqa: ANN001, ANN202, PLR0913
    """The twists ``v`` of ``z`` afresh and the exact natural-map residual at ``z``, kept
    with ``z`` in ``best`` when below ``best_res``.  Returns the residual (NaN where ``z``
    or the residual is not finite) and the best residual."""
    _velocity(J, ca, cb, f, dinv, z, v)
    residual = _natural(J, ca, cb, rhs, v, z, mu3)
    if not (np.isfinite(residual) and np.all(np.isfinite(z))):
        return np.nan, best_res
    if residual < best_res:
        best[:] = z
        return residual, residual
    return residual, best_res


@njit(cache=True)
def _dense_delassus(J, DJ, ca, cb, rhs, f, dinv, nk):  # noqa: ANN001, ANN202
    """``W = C M^-1 C^T`` (m3, m3) of an island's rows, summed over the bodies the two
    rows share (the world, slot ``nk``, joins nothing), and ``q = C M^-1 f - b``."""
    m3 = rhs.shape[0]
    W = np.zeros((m3, m3))
    for r in range(m3):
        for s in range(r, m3):
            acc = 0.0
            for sr in range(2):
                pr = ca[r] if sr == 0 else cb[r]
                if pr >= nk:
                    continue
                for ss in range(2):
                    ps = ca[s] if ss == 0 else cb[s]
                    if ps != pr:
                        continue
                    for k in range(6):
                        acc += J[r, 6 * sr + k] * DJ[s, 6 * ss + k]
            W[r, s] = acc
            W[s, r] = acc
    u = np.zeros(nk + 6)
    for k in range(nk):
        u[k] = dinv[k] * f[k]
    q = np.empty(m3)
    for r in range(m3):
        q[r] = _row_dot(J, ca, cb, u, r) - rhs[r]
    return W, q


@njit(cache=True)
def _dense_finish(J, DJ, ca, cb, rhs, mu3, f, dinv, z, tol):  # noqa: ANN001, ANN202
    """An island's box-friction LCP solved by Lemke's method on its dense ``W``
    (:func:`_dense_delassus`; :func:`solvers.numerics.lemke_kernel.lemke_lcp`, the ``lemke``
    backend's walk with its re-solves of the tableau and restarts), written as a standard LCP
    ``0 <= x _|_ M x + Q >= 0`` in ``x = (z_n, b+, b-, lam)`` (per contact its normal row,
    per tangent row ``z_t = b+ - b-``, ``0 <= b+ _|_ w_t + lam``, ``0 <= b- _|_ -w_t + lam``,
    ``0 <= lam _|_ mu z_n - b+ - b-``).
    Complementary pivoting needs no unique solution: where redundant contacts make ``W``
    singular (the sweeps then drift along its null space) it still ends at a vertex of the
    solution set.  Writes ``z`` (rows per contact: normal, two tangents; projected onto
    the bounds) and returns whether the walk ended with a solution (the natural map of
    the standard LCP within ``tol``) and its pivots."""
    W, q = _dense_delassus(J, DJ, ca, cb, rhs, f, dinv, dinv.shape[0])
    return _box_lemke(W, q, mu3, z, tol)


@njit(cache=True)
def _box_lemke(W, q, mu3, z, tol):  # noqa: ANN001, ANN202
    """The box-friction LCP on a dense ``W`` (rows per contact: normal, two tangents) and
    ``q`` as the standard LCP of :func:`_dense_finish`, solved by
    :func:`solvers.numerics.lemke_kernel.lemke_lcp`; writes ``z`` (projected onto the bounds)
    only when the walk ends at a solution whose natural map is within ``tol``.  Returns
    whether it did and the pivots."""
    m3 = z.shape[0]
    nc = m3 // 3
    nt = 2 * nc
    n7 = 7 * nc
    M = np.zeros((n7, n7))
    Q = np.zeros(n7)
    # the rows of x's blocks in W: normal i -> 3 i, tangent j = 2 i + d - 1 -> 3 i + d
    ridx = np.empty(nc + nt, dtype=np.int64)
    for i in range(nc):
        ridx[i] = 3 * i
        ridx[nc + 2 * i] = 3 * i + 1
        ridx[nc + 2 * i + 1] = 3 * i + 2
    bp, bm, bl = nc, nc + nt, nc + 2 * nt
    for x in range(nc + nt):
        r = ridx[x]
        sgn_rows = 1 if x < nc else 2
        for g in range(sgn_rows):
            row = x if g == 0 else bm + (x - nc)
            sg = 1.0 if g == 0 else -1.0
            for y in range(nc):
                M[row, y] = sg * W[r, ridx[y]]
            for y in range(nt):
                wv = sg * W[r, ridx[nc + y]]
                M[row, bp + y] = wv
                M[row, bm + y] = -wv
            Q[row] = sg * q[r]
            if x >= nc:
                M[row, bl + (x - nc)] = 1.0
    for y in range(nt):
        i = y // 2
        M[bl + y, i] = mu3[3 * i + 1]
        M[bl + y, bp + y] = -1.0
        M[bl + y, bm + y] = -1.0
    x_out = np.empty(n7)
    lk = np.empty(LK.N_INFO)
    LK.lemke_lcp(M, Q, LEMKE_ZERO_RTOL, LEMKE_PIVOT_TOL, LEMKE_PIVOTS * n7, True, x_out, lk)
    pivots = int(lk[LK.I_PIVOTS])
    solved = int(lk[LK.I_STATUS]) == LK.OPTIMAL and np.all(np.isfinite(x_out))
    if solved:
        # the natural map of the standard LCP, min(x, M x + Q) (the kernel's measure)
        solved = LK.natural_residual(M, Q, x_out) <= tol
    if not solved:
        return False, pivots
    for i in range(nc):  # onto the bounds (the pivots' rounding)
        zn = max(x_out[i], 0.0)
        z[3 * i] = zn
        hi = mu3[3 * i + 1] * zn
        for d in range(2):
            zt = x_out[bp + 2 * i + d] - x_out[bm + 2 * i + d]
            z[3 * i + 1 + d] = min(max(zt, -hi), hi)
    return True, pivots


@njit(cache=True)
def _block_finish(J, DJ, ca, cb, rhs, mu3, dinv, v, z, tol):  # noqa: ANN001, ANN202, PLR0912, PLR0913, PLR0915
    """Disjoint exact blocks of block Gauss--Seidel on an island too large for
    :func:`_dense_finish`: around each of the contacts of the largest natural-map
    residuals at ``z`` (``v`` its twists), worst first and at most :data:`BLOCKS` of them,
    a block of that contact and the contacts reached from it through shared bodies
    (breadth first, the world joining nothing, no contact of an earlier block), at most
    :data:`BLOCK_CONTACTS`, solved by :func:`_box_lemke` on its dense ``W_BB`` with the
    other impulses held (``q_B = w_B - W_BB z_B``, ``w_B`` read from the twists, which each
    solved block then moves).  Writes the solved blocks' impulses into ``z`` and keeps
    ``v`` their twists; returns how many blocks were solved."""
    m3 = z.shape[0]
    nc = m3 // 3
    nk = dinv.shape[0]
    err = np.zeros(nc)
    for r in range(m3):
        w = _row_dot(J, ca, cb, v, r) - rhs[r]
        lo, hi = _row_bounds(z, mu3, r)
        e = abs(z[r] - min(max(z[r] - w, lo), hi))
        err[r // 3] = max(err[r // 3], e)
    # the contacts of each body (CSR over the island's bodies)
    nbk = nk // 6
    start = np.zeros(nbk + 1, dtype=np.int64)
    for i in range(nc):
        for p in (ca[3 * i], cb[3 * i]):
            if p < nk:
                start[p // 6 + 1] += 1
    for k in range(nbk):
        start[k + 1] += start[k]
    fill = start[:nbk].copy()
    touch = np.empty(start[nbk], dtype=np.int64)
    for i in range(nc):
        for p in (ca[3 * i], cb[3 * i]):
            if p < nk:
                touch[fill[p // 6]] = i
                fill[p // 6] += 1
    order = np.argsort(-err)
    seen = np.zeros(nc, dtype=np.bool_)
    cap = min(BLOCK_CONTACTS, nc)
    chosen = np.empty(cap, dtype=np.int64)
    Jb = np.empty((3 * cap, 12))
    DJb = np.empty((3 * cap, 12))
    cab = np.empty(3 * cap, dtype=np.int64)
    cbb = np.empty(3 * cap, dtype=np.int64)
    rb = np.empty(3 * cap)
    mub = np.empty(3 * cap)
    zb = np.empty(3 * cap)
    wb = np.empty(3 * cap)
    solved_blocks = 0
    tried = 0
    for o in range(nc):
        at = order[o]
        if tried >= BLOCKS or err[at] <= tol:
            break
        if seen[at]:
            continue
        tried += 1
        chosen[0] = at
        seen[at] = True
        size = 1
        head = 0
        while head < size and size < cap:
            c = chosen[head]
            head += 1
            for p in (ca[3 * c], cb[3 * c]):
                if p >= nk:
                    continue
                for t in range(start[p // 6], start[p // 6 + 1]):
                    j = touch[t]
                    if not seen[j] and size < cap:
                        seen[j] = True
                        chosen[size] = j
                        size += 1
        block = np.sort(chosen[:size])
        mb = 3 * size
        for j in range(size):
            for d in range(3):
                r, s = 3 * block[j] + d, 3 * j + d
                for e in range(12):
                    Jb[s, e] = J[r, e]
                    DJb[s, e] = DJ[r, e]
                cab[s], cbb[s], rb[s], mub[s], zb[s] = ca[r], cb[r], rhs[r], mu3[r], z[r]
                wb[s] = _row_dot(J, ca, cb, v, r) - rhs[r]
        Wb, _ = _dense_delassus(
            Jb[:mb], DJb[:mb], cab[:mb], cbb[:mb], rb[:mb], np.zeros(nk), dinv, nk
        )
        qb = wb[:mb].copy()
        for s in range(mb):
            for t in range(mb):
                qb[s] -= Wb[s, t] * zb[t]
        znew = zb[:mb].copy()
        solved, _ = _box_lemke(Wb, qb, mub[:mb], znew, tol)
        if not solved:
            continue
        solved_blocks += 1
        for j in range(size):
            for d in range(3):
                r = 3 * block[j] + d
                dz = znew[3 * j + d] - z[r]
                if dz != 0.0:
                    z[r] = znew[3 * j + d]
                    _move(DJ, ca, cb, v, r, dz)
    return solved_blocks


@njit(cache=True)
def _pgs_sm(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, f, dinv, v, z, omega, budget, tol):  # noqa: ANN001, ANN202, PLR0913
    """Projected Gauss--Seidel with subspace minimization from ``z`` (``v`` its twists):
    rounds of :data:`SM_SWEEPS` sweeps then one :func:`_subspace`, each round ending with
    the exact natural-map residual, until it is within ``tol`` or ``budget`` sweeps and
    products with ``W`` are spent; an island of at most :data:`DENSE_ROWS` rows not solved
    within :data:`DENSE_AFTER` of them is solved once by :func:`_dense_finish` (counted as
    one product), its impulses kept if the exact natural-map residual says they are the
    best met.  ``z`` and ``v`` end at the best iterate met; returns its residual and the
    work done (sweeps plus products)."""
    m3 = z.shape[0]
    work = np.zeros((7, max(m3, v.shape[0])))
    best = z.copy()
    best_res = _natural(J, ca, cb, rhs, v, z, mu3)
    used = 0
    z0 = np.empty(m3)
    dense = True
    while best_res > tol and used < budget:
        _sweeps(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, v, z, omega, SM_SWEEPS)
        used += SM_SWEEPS
        start, best_res = _measure(J, ca, cb, rhs, mu3, f, dinv, v, z, best, best_res)
        if not np.isfinite(start) or best_res <= tol:
            break
        used += _subspace(
            J, DJ, ca, cb, rhs, diag, mu3, v, z, min(SM_PRODUCTS, max(budget - used, 1)),
            tol, work,
        )  # fmt: skip
        z0[:] = z
        _project_step(z0, work[5], work[1], 1.0, mu3, z)
        residual, best_res = _measure(J, ca, cb, rhs, mu3, f, dinv, v, z, best, best_res)
        if not np.isfinite(residual):
            break
        if dense and best_res > tol and used >= DENSE_AFTER and m3 <= DENSE_ROWS:
            # the sweeps drift along the null space of W: a direct finish on its dense W
            dense = False
            z[:] = best
            solved, _ = _dense_finish(J, DJ, ca, cb, rhs, mu3, f, dinv, z, tol)
            used += 1
            if not solved:
                z[:] = best
            residual, best_res = _measure(J, ca, cb, rhs, mu3, f, dinv, v, z, best, best_res)
            if not np.isfinite(residual):
                break
            z[:] = best
            _velocity(J, ca, cb, f, dinv, z, v)
        elif best_res > tol and used >= BLOCK_AFTER and m3 > DENSE_ROWS:
            # too large for one dense walk: one exact block around the worst contact
            if _block_finish(J, DJ, ca, cb, rhs, mu3, dinv, v, z, tol) > 0:
                residual, best_res = _measure(J, ca, cb, rhs, mu3, f, dinv, v, z, best, best_res)
                if not np.isfinite(residual):
                    break
            used += 1
    z[:] = best
    _velocity(J, ca, cb, f, dinv, z, v)
    return best_res, used


@njit(cache=True)
def _contact_metrics(i, z, u0, u1, u2, mu, slip_threshold, acc):  # noqa: ANN001, ANN202, PLR0913
    """Fold contact ``i``'s metrics (impulses ``z[3i:3i+3]``, contact velocity ``u``) into
    ``acc``: normal complementarity, normal feasibility, cone violation, maximal
    dissipation's violation (largest), sliding contacts (count)."""
    zn_i, z1, z2 = z[3 * i], z[3 * i + 1], z[3 * i + 2]
    acc[0] = max(acc[0], abs(zn_i * u0))
    acc[1] = max(acc[1], -u0)
    acc[2] = max(acc[2], np.sqrt(z1 * z1 + z2 * z2) - mu[i] * zn_i)
    speed = np.sqrt(u1 * u1 + u2 * u2)
    if speed > slip_threshold:
        acc[4] += 1.0
        s = mu[i] * zn_i / speed
        e1 = z1 + s * u1
        e2 = z2 + s * u2
        acc[3] = max(acc[3], np.sqrt(e1 * e1 + e2 * e2))


@njit(cache=True)
def _step_outputs(z, t1, t2, v, n, nb, E, h, mdiag, gravity, info):  # noqa: ANN001, ANN202, PLR0913
    """The step's results from the contact impulses ``z`` (per contact: normal, two
    tangents) and the new twists ``v``: the twists (nb, 6), the integrated transforms,
    the impulses in the records' order (normal ones first), the friction forces as world
    vectors; the state's energies and momenta written into ``info``."""
    nc = z.size // 3
    out = np.empty(z.size)
    lam_flat = np.empty(2 * nc)
    for i in range(nc):
        out[i] = z[3 * i]
        out[nc + 2 * i] = z[3 * i + 1]
        out[nc + 2 * i + 1] = z[3 * i + 2]
        lam_flat[2 * i] = z[3 * i + 1]
        lam_flat[2 * i + 1] = z[3 * i + 2]
    friction = friction_vectors(lam_flat, t1, t2)
    phi_new = v[:n].copy().reshape(nb, 6)
    E_new = np.empty_like(E)
    _integrate(E, phi_new, h, E_new)
    _state_metrics(mdiag, E_new, phi_new, gravity, info)
    return phi_new, E_new, out, friction


@njit(cache=True)
def _solve(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, f, dinv, v, z, omega, tol, max_iter,
           check_every, finish):  # fmt: skip  # noqa: ANN001, ANN202, PLR0913
    """Projected Gauss--Seidel from ``z`` (``v`` its twists) until the natural-map residual
    is within ``tol``, finished by :func:`_pgs_sm` when ``finish`` and its first
    :data:`PLAIN_SWEEPS` sweeps do not get there, at most ``max_iter`` sweeps and products
    with ``W``.  Returns the status, the sweeps and products, and the residual."""
    status = MAX_ITERATIONS
    sweeps = 0
    residual = _natural(J, ca, cb, rhs, v, z, mu3)
    if residual <= tol:
        return OPTIMAL, sweeps, residual
    plain = min(max_iter, PLAIN_SWEEPS) if finish else max_iter
    while True:
        if sweeps >= plain:
            status = MAX_ITERATIONS
            break
        chunk = min(check_every, plain - sweeps)
        estimate = _sweeps(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, v, z, omega, chunk)
        sweeps += chunk
        if estimate <= 10.0 * tol or sweeps >= plain or not np.isfinite(estimate):
            _velocity(J, ca, cb, f, dinv, z, v)
            residual = _natural(J, ca, cb, rhs, v, z, mu3)
        if not np.isfinite(residual):
            status = NUMERICAL_ERROR
            break
        if residual <= tol:
            status = OPTIMAL
            break
    if status == MAX_ITERATIONS and sweeps < max_iter:
        # Gauss--Seidel has not converged in its first sweeps: subspace minimization
        residual, used = _pgs_sm(
            J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, f, dinv, v, z, omega,
            max_iter - sweeps, tol,
        )  # fmt: skip
        sweeps += used
        if not np.isfinite(residual):
            status = NUMERICAL_ERROR
        elif residual <= tol:
            status = OPTIMAL
    return status, sweeps, residual


@njit(cache=True)
def island_contacts(a, b, nb, up):  # noqa: ANN001, ANN201
    """The islands of the contacts between bodies ``a`` and ``b`` (``-1``: the world, which
    joins nothing; :func:`solvers.islands.pair_labels`): their number ``count``, offsets
    ``off`` (count + 1), the contacts of island ``k`` in ``members[off[k]:off[k+1]]``
    (ascending), and in ``order[off[k]:off[k+1]]`` their positions in that list in the
    order ``up`` (the height order, restricted to the island).  Islands are numbered by
    their first contact."""
    nc = a.shape[0]
    body = pair_labels(nb, a, b)
    first = np.full(nb, -1, dtype=np.int64)
    label = np.empty(nc, dtype=np.int64)
    count = 0
    for i in range(nc):
        g = body[a[i]]
        if first[g] < 0:
            first[g] = count
            count += 1
        label[i] = first[g]
    off = np.zeros(count + 1, dtype=np.int64)
    for i in range(nc):
        off[label[i] + 1] += 1
    for k in range(count):
        off[k + 1] += off[k]
    fill = off[:count].copy()
    members = np.empty(nc, dtype=np.int64)
    local = np.empty(nc, dtype=np.int64)
    for i in range(nc):
        k = label[i]
        local[i] = fill[k] - off[k]
        members[fill[k]] = i
        fill[k] += 1
    fill[:] = off[:count]
    order = np.empty(nc, dtype=np.int64)
    for j in range(nc):
        i = up[j]
        k = label[i]
        order[fill[k]] = local[i]
        fill[k] += 1
    return count, off, members, order


@njit(cache=True)
def _solve_islands(J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, a, b, f, dinv, z, omega, tol,
                   max_iter, check_every, finish):  # fmt: skip  # noqa: ANN001, ANN202, PLR0913, PLR0915
    """:func:`_solve` island by island (:func:`island_contacts`): each island's rows, its
    bodies' columns and twists copied into arrays of its own (its contacts in ascending
    order, its bodies renumbered, the world's zero slot last), solved with its own
    stopping test and sweep cap, and its impulses written back into ``z``.  An island's
    data are those of the same contacts in a scene of their own, so it is solved as it
    would be alone (a single island is solved on the step's arrays: the same rows in the
    same order, the same sums).  Returns the step's status (the worst island's: a numerical error,
    else ``MAX_ITERATIONS`` if any island stopped at its cap), the largest island's sweeps
    and products with ``W``, the largest residual (the whole problem's: the islands share
    no row or body), the sweeps weighted by rows (``sum_k sweeps_k rows_k / rows``: the
    work in sweeps of the whole problem) and the number of islands."""
    nc = a.shape[0]
    nb = dinv.shape[0] // 6
    count, off, members, order = island_contacts(a, b, nb, up)
    if count == 1:  # one island: its copy would be the arrays themselves (a pile at rest)
        v = np.empty(dinv.shape[0] + 6)
        _velocity(J, ca, cb, f, dinv, z, v)
        status, sweeps, residual = _solve(
            J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, f, dinv, v, z, omega, tol, max_iter,
            check_every, finish,
        )  # fmt: skip
        return status, sweeps, residual, float(sweeps), 1
    status = OPTIMAL
    most = 0
    worst = 0.0
    work = 0.0
    slot = np.full(nb, -1, dtype=np.int64)
    for k in range(count):
        c0, c1 = off[k], off[k + 1]
        m = c1 - c0
        Jk, DJk, Ak, rk, _, zk, fk, dk, cak, cbk = island_rows(
            members[c0:c1], a, b, J, DJ, A, rhs, mu3[1::3], z, f, dinv, slot
        )
        nk = fk.shape[0]
        gk = np.empty(3 * m)
        uk = np.empty(3 * m)
        unk = np.empty(m, dtype=np.bool_)
        for j in range(m):
            i = members[c0 + j]
            unk[j] = unit[i]
            for d in range(3):
                gk[3 * j + d], uk[3 * j + d] = diag[3 * i + d], mu3[3 * i + d]
        vk = np.empty(nk + 6)
        _velocity(Jk, cak, cbk, fk, dk, zk, vk)
        st, sw, res = _solve(
            Jk, DJk, Ak, cak, cbk, rk, gk, uk, unk, order[c0:c1], fk, dk, vk, zk, omega, tol,
            max_iter, check_every, finish,
        )  # fmt: skip
        for j in range(m):
            i = members[c0 + j]
            for d in range(3):
                z[3 * i + d] = zk[3 * j + d]
        if st == NUMERICAL_ERROR or not np.isfinite(res):
            status = NUMERICAL_ERROR
            worst = np.nan
        elif st == MAX_ITERATIONS and status == OPTIMAL:
            status = MAX_ITERATIONS
        if np.isfinite(worst):
            worst = max(worst, res)
        most = max(most, sw)
        work += sw * (3.0 * m) / (3.0 * nc)
    return status, most, worst, work, count


@njit(cache=True)
def contact_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    mdiag, E, phi, gravity, h, iterations,
    a, b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_order, old_normal, old_friction, ids, origin,
    tol, max_iter, omega, check_every, slip_threshold, finish, islands, held,
):  # fmt: skip
    """One step of free bodies with box friction by projected Gauss--Seidel (module docstring).

    ``mdiag`` (nb, 6) the diagonal mass, ``E`` (nb, 4, 4), ``phi`` (nb, 6) the state;
    contacts on bodies ``a`` and ``b`` (``-1``: the world), normals from B toward A;
    ``beta`` and ``max_corr`` the penetration feedback; the warm start from the
    recorded impulses ``old_*`` (:func:`contactlab.models.delassus.carried_impulses`)
    when ``carry``; the bodies ``held`` (nb,) (sleeping islands,
    :mod:`contactlab.maximal.sleeping`) get no free momentum: without contacts (the step
    leaves theirs out) they keep their zero twists and their poses.

    Returns the new twists (nb, 6), the new transforms ``E exp(h [phi])``, the impulses
    ``z`` on the rows ``[N; T]`` (``nc + 2 nc``), the friction impulses as world vectors
    (nc, 3) and ``info`` (the entries ``I_*``: status, sweeps, residuals, contact metrics,
    energies and world momenta of the new state).
    """
    nb = mdiag.shape[0]
    n = 6 * nb
    nc = a.shape[0]
    m3 = 3 * nc
    info = np.zeros(N_INFO)
    f = _midpoint_free_momentum(mdiag, phi, E, gravity, h, iterations)
    for k in range(nb):
        if held[k]:
            for j in range(6):
                f[6 * k + j] = 0.0
    dinv = np.empty(n)
    for k in range(nb):
        for j in range(6):
            dinv[6 * k + j] = 1.0 / mdiag[k, j]
    J, DJ, A, t1, t2 = _rows(a, b, E, point, normal, dinv)
    rhs = np.zeros(m3)
    diag = np.empty(m3)
    mu3 = np.empty(m3)
    ca = np.empty(m3, dtype=np.int64)
    cb = np.empty(m3, dtype=np.int64)
    dmax = 0.0
    for i in range(nc):
        d = dist[i]
        rhs[3 * i] = -d / h if d > 0.0 else min(beta * (-d), max_corr)
        for k in range(3):
            r = 3 * i + k
            diag[r] = A[i, 4 * k]
            dmax = max(dmax, diag[r])
            mu3[r] = mu[i]
            ca[r] = 6 * a[i]
            cb[r] = 6 * b[i] if b[i] >= 0 else n  # the world's zero slot
    for r in range(m3):
        if diag[r] <= DECOUPLED_DIAG * dmax:
            info[I_STATUS] = DECOUPLED
            return phi.copy(), E.copy(), np.zeros(m3), np.zeros((nc, 3)), info
    # the contacts solved as one unit (solvers.backends.pgs.contact_units)
    unit = np.zeros(nc, dtype=np.bool_)
    units = 0
    for i in range(nc):
        coupling = max(abs(A[i, 1]), abs(A[i, 2]))
        if mu[i] * coupling > COUPLING * A[i, 0] and mu[i] > 0.0:
            unit[i] = True
            units += 1
    up = np.argsort(point[:, 2], kind="mergesort")
    # warm start carried over from the recorded contacts, clipped to the bounds
    z = np.zeros(m3)
    if carry:
        zn, zt = carried_impulses(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2)
        for i in range(nc):
            z[3 * i] = max(zn[i], 0.0)
            z[3 * i + 1] = zt[2 * i]
            z[3 * i + 2] = zt[2 * i + 1]
    # -- projected Gauss--Seidel (solvers.backends.pgs.PGSBackend.solve_lcp) ------------
    v = np.empty(n + 6)
    if islands:
        status, sweeps, residual, work, count = _solve_islands(
            J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, a, b, f, dinv, z, omega, tol,
            max_iter, check_every, finish,
        )  # fmt: skip
    else:
        _velocity(J, ca, cb, f, dinv, z, v)
        status, sweeps, residual = _solve(
            J, DJ, A, ca, cb, rhs, diag, mu3, unit, up, f, dinv, v, z, omega, tol, max_iter,
            check_every, finish,
        )  # fmt: skip
        work, count = float(sweeps), 1 if nc > 0 else 0
    _velocity(J, ca, cb, f, dinv, z, v)
    # -- residuals of the LCP (solvers.residuals.lcp_residuals) and contact metrics -----
    primal = dual = comp = pen = 0.0
    acc = np.zeros(5)  # normal complementarity and feasibility, cone, dissipation, sliding
    slip = np.empty(3)
    for i in range(nc):
        for d in range(3):
            r = 3 * i + d
            w = _row_dot(J, ca, cb, v, r) - rhs[r]
            lo, hi = _row_bounds(z, mu3, r)
            primal = max(primal, lo - z[r], z[r] - hi)
            wp, wm = max(w, 0.0), max(-w, 0.0)
            if lo == -np.inf:
                dual = max(dual, wp)
            if hi == np.inf:
                dual = max(dual, wm)
            comp = max(comp, min(abs(z[r] - lo), wp), min(abs(hi - z[r]), wm))
            slip[d] = w
        _contact_metrics(i, z, slip[0], slip[1], slip[2], mu, slip_threshold, acc)
        pen = max(pen, -dist[i])
    info[I_STATUS] = status
    info[I_SWEEPS] = sweeps
    info[I_PRIMAL], info[I_DUAL], info[I_COMP], info[I_NATURAL] = primal, dual, comp, residual
    info[I_NORMAL_COMP], info[I_NORMAL_FEAS] = acc[0], acc[1]
    info[I_CONE], info[I_DISSIPATION] = acc[2], acc[3]
    info[I_SLIDING], info[I_PENETRATION], info[I_UNITS] = acc[4], pen, units
    info[I_ISLANDS], info[I_WORK] = count, work
    phi_new, E_new, out, friction = _step_outputs(z, t1, t2, v, n, nb, E, h, mdiag, gravity, info)
    return phi_new, E_new, out, friction, info
