"""APGD and ADMM on frictional contacts of either layout, written once.

A frictional-contact problem's contacts come in one of two layouts: three rows each
(normal, two tangents; the cones of :mod:`solvers.numerics.fc_local`: ``kind``, ``mu``,
``dirs``, maps in :mod:`solvers.numerics.fc_kernels`) or *wide*, 3 to 6 rows each with a
coefficient per row (the elliptic or separate cone: ``sep``, ``off``, ``mr``, ``fam``,
maps in :mod:`solvers.numerics.fc_wide`).  A method that only projects onto the cones,
shifts the normal velocities by De Saxcé's ``h(u_T)`` and measures the natural map needs
nothing else of the layout: :func:`project_cones`, :func:`shift_cones` and
:func:`natural_map_cones` pick the layout's map from one :class:`Cones` value (the
contacts' feasible set in either layout), and :func:`apgd` and :func:`admm` (and the
proximal ADMM of :mod:`solvers.backends.fc_padmm`) are written over them.  The block
Gauss--Seidel sweeps solve a contact's local problem, which is the layout's own
(:func:`~solvers.numerics.fc_kernels.nsgs`, :func:`~solvers.numerics.fc_wide.nsgs_wide`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.fc_kernels import _cg, _project_all, _shift, matvec, natural_map
from solvers.numerics.fc_wide import natural_map_wide, project_all_wide, shift_wide

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 11.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]

#: APGD refreshes De Saxcé's shift (Coulomb's law) once the shifted cone problem's
#: natural-map residual is at most this times Coulomb's, keeping its momentum (:func:`apgd`).
#: Measured on the 40 steps of the planar chain in maximal coordinates (``chain-fall``,
#: joints eliminated, tolerance 1e-6) and of ``solo12-stand`` (reduced, 1e-12), total
#: iterations and steps left at the 20,000-iteration cap: a tenth with the momentum
#: restarted (the rule before) 56,076 (1 capped) and 2,410 (0); a tenth with the momentum
#: kept 41,573 (0) and 1,974 (0); a half, kept, 13,586 (0) and 2,320 (0), but its
#: solo12 run and the same run through the general route end 1e-10 apart (7.9e-13 with a
#: tenth); 1 (the compiled free-body step's rule, :mod:`contactlab.maximal._cone_fom_kernels`)
#: 8,496 (0) and 264,725 (5: refreshing as soon as the shifted problem is solved as well
#: as Coulomb's stalls near a tight tolerance).
APGD_REFRESH = 0.1


class Cones(NamedTuple):
    """The feasible set of a problem's contacts, one argument of the kernels below: the cone
    of every contact in its layout and the bound of every scalar row.

    ``wide`` 0: three rows a contact, ``kind`` (0 second-order, 1 polyhedral), ``mu``, ``dirs``
    (:mod:`solvers.numerics.fc_kernels`); 1: wide contacts, ``sep``, ``off``, ``mr``,
    ``fam`` (:mod:`solvers.numerics.fc_wide`).  The other layout's fields are placeholders
    of the same types, unused.  ``row_lo``: the lower bounds of the scalar rows; ``nc``:
    the number of contacts.
    """

    wide: int
    kind: int
    mu: Vec
    dirs: Vec
    sep: int
    off: IVec
    mr: Vec
    fam: IVec
    row_lo: Vec
    nc: int


@njit(cache=True)
def project_cones(cones: Cones, x: Vec, out: Vec) -> None:
    """Projection of every contact onto its cone and every scalar row onto its bound."""
    if cones.wide:
        project_all_wide(cones.sep, cones.off, cones.mr, cones.fam, cones.row_lo, cones.nc, x, out)
    else:
        _project_all(cones.kind, cones.mu, cones.dirs, cones.row_lo, cones.nc, x, out)


@njit(cache=True)
def natural_map_cones(cones: Cones, law: int, r: Vec, u: Vec, qnorm: float) -> float:
    """The natural-map residual of ``law`` relative to ``||q||``."""
    if cones.wide:
        return natural_map_wide(
            law, cones.sep, cones.off, cones.mr, cones.fam, cones.row_lo, cones.nc, r, u, qnorm
        )
    return natural_map(law, cones.kind, cones.mu, cones.dirs, cones.row_lo, cones.nc, r, u, qnorm)


@njit(cache=True)
def shift_cones(cones: Cones, q: Vec, u: Vec, qs: Vec) -> None:
    """De Saxcé's shift moved into the free velocity: ``qs_n = q_n + h(u_T)`` per contact."""
    if cones.wide:
        shift_wide(cones.sep, cones.off, cones.mr, cones.fam, cones.nc, q, u, qs)
    else:
        _shift(cones.kind, cones.mu, cones.dirs, cones.nc, q, u, qs)


@njit(cache=True)
def feasible_start(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, law: int, cones: Cones, r: Vec,
    qnorm: float,
) -> tuple[Vec, Vec, Vec, float]:  # fmt: skip
    """Where :func:`apgd` and :func:`admm` start: the warm start ``r`` projected onto the
    cones (``x``), its velocity ``u = W x + q``, the free velocity ``qs`` with De Saxcé's
    shift at ``u`` (``q`` itself for the CCP, ``law = 0``) and the natural-map residual of
    ``law`` at ``x``."""
    n = q.shape[0]
    x = np.empty(n)
    project_cones(cones, r, x)
    u = np.empty(n)
    matvec(indptr, indices, data, x, q, u)
    qs = q.copy()
    if law == 1:
        shift_cones(cones, q, u, qs)
    return x, u, qs, natural_map_cones(cones, law, x, u, qnorm)


@njit(cache=True)
def admm_z_step(
    cones: Cones, x: Vec, y: Vec, c: float, rho: float, z: Vec, zold: Vec, xy: Vec
) -> tuple[float, float, float, float]:
    """The second half of an ADMM iteration on ``r = z``, ``z`` in the cones, written once
    for :func:`admm` and the proximal ADMM of :mod:`solvers.backends.fc_padmm`:
    ``z = P_K(x + y / c)`` and ``y += c (x - z)``, with ``c = 1`` for a scaled multiplier
    and ``c = rho`` for an unscaled one (``zold``, ``xy``: scratch, ``zold`` left holding
    the previous ``z``).  Returns the squares of the primal residual ``||x - z||``, of the
    dual residual ``rho ||z - z_old||``, of ``||z||`` and of ``||y||``."""
    admm_z_start(x, y, c, z, zold, xy)
    project_cones(cones, xy, z)
    return admm_z_end(x, y, c, rho, z, zold)


@njit(cache=True)
def admm_z_start(x: Vec, y: Vec, c: float, z: Vec, zold: Vec, xy: Vec) -> None:
    """Before :func:`admm_z_step`'s projection: ``zold = z``, ``xy = x + y / c``."""
    for i in range(x.shape[0]):
        zold[i] = z[i]
        xy[i] = x[i] + y[i] / c


@njit(cache=True)
def admm_z_end(
    x: Vec, y: Vec, c: float, rho: float, z: Vec, zold: Vec
) -> tuple[float, float, float, float]:
    """After :func:`admm_z_step`'s projection ``z``: ``y += c (x - z)``; returns the squares
    of ``||x - z||``, ``rho ||z - z_old||``, ``||z||`` and ``||y||``."""
    prim = 0.0
    dual = 0.0
    zn = 0.0
    yn = 0.0
    for i in range(x.shape[0]):
        y[i] += c * (x[i] - z[i])
        prim += (x[i] - z[i]) ** 2
        dual += (rho * (z[i] - zold[i])) ** 2
        zn += z[i] * z[i]
        yn += y[i] * y[i]
    return prim, dual, zn, yn


@njit(cache=True)
def admm_balance(it: int, prim: float, dual: float, res: float, qnorm: float, rho: float,
                 lam: Vec) -> tuple[float, float]:  # fmt: skip  # noqa: PLR0913
    """After ADMM's iteration ``it`` (primal and dual residuals ``prim``, ``dual``, natural
    map ``res``): the next conjugate gradients' tolerance and the penalty, balanced every 5
    iterations (:func:`admm`), the scaled multiplier ``lam`` rescaled with it."""
    cg_tol = max(1e-2 * min(prim + dual, res * (qnorm + 1e-30)), 1e-15 * (qnorm + 1.0))
    if it % 5 == 0 and prim > 0.0 and dual > 0.0 and (prim > 10 * dual or dual > 10 * prim):
        factor = min(max(math.sqrt(prim / dual), 0.1), 10.0)
        rho *= factor
        for i in range(lam.shape[0]):
            lam[i] /= factor
    return cg_tol, rho


@njit(cache=True)
def apgd_lipschitz(x: Vec, gx: Vec, probe: Vec, gp: Vec) -> float:
    """APGD's initial Lipschitz estimate ``||g(probe) - g(x)|| / ||probe - x||`` (at least
    ``1e-12``)."""
    num = 0.0
    den = 0.0
    for i in range(x.shape[0]):
        num += (gp[i] - gx[i]) ** 2
        den += (probe[i] - x[i]) ** 2
    return max(math.sqrt(num / den), 1e-12)


@njit(cache=True)
def apgd_value(x: Vec, g: Vec, qs: Vec) -> float:
    """``1/2 x'W x + qs'x`` from the gradient ``g = W x + qs``."""
    acc = 0.0
    for i in range(x.shape[0]):
        acc += 0.5 * x[i] * (g[i] - qs[i]) + qs[i] * x[i]
    return acc


@njit(cache=True)
def apgd_accepts(xn: Vec, gxn: Vec, y: Vec, gy: Vec, qs: Vec, fy: float, L: float) -> bool:  # noqa: PLR0913
    """Whether APGD's step from ``y`` (value ``fy``) to ``xn`` meets the quadratic upper bound
    of Lipschitz constant ``L`` (or ``L`` has grown past ``1e300``)."""
    fx = 0.0
    bound = fy
    for i in range(xn.shape[0]):
        fx += 0.5 * xn[i] * (gxn[i] - qs[i]) + qs[i] * xn[i]
        d = xn[i] - y[i]
        bound += gy[i] * d + 0.5 * L * d * d
    return fx <= bound + 1e-14 * (abs(fx) + abs(bound)) or L > 1e300


@njit(cache=True)
def apgd_momentum(theta: float, x: Vec, gx: Vec, xn: Vec, gxn: Vec, y: Vec, gy: Vec) -> float:  # noqa: PLR0913
    """Nesterov's extrapolation after APGD's step to ``xn``: ``y``, ``gy`` extrapolated (the
    momentum restarted when ``gy . (xn - x) > 0``), ``x``, ``gx`` moved to ``xn``, ``gxn``;
    returns the next ``theta``."""
    n = x.shape[0]
    theta_n = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))
    beta = theta * (1.0 - theta) / (theta * theta + theta_n)
    restart = 0.0
    for i in range(n):
        restart += gy[i] * (xn[i] - x[i])
    if restart > 0.0:
        beta = 0.0
        theta_n = 1.0
    for i in range(n):
        y[i] = xn[i] + beta * (xn[i] - x[i])
        gy[i] = gxn[i] + beta * (gxn[i] - gx[i])
        x[i] = xn[i]
        gx[i] = gxn[i]
    return theta_n


@njit(cache=True)
def apgd(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, law: int, cones: Cones, r: Vec,
    tol: float, max_iter: int,
) -> tuple[int, float]:  # fmt: skip
    """Nesterov's accelerated projected gradient on the CCP ``min 1/2 r'Wr + q'r, r in K``;
    returns ``(iterations, residual)``, ``r`` in place (the cones of either layout: module
    docstring).

    Backtracking on the Lipschitz estimate ``L`` (doubled while the quadratic
    upper bound fails, then relaxed by 0.9 per iteration: the adaptive step),
    gradient restart of the momentum when ``g . (x_new - x) > 0``.  One
    product with ``W`` per iteration: the gradient at the extrapolated point
    is the same combination of the gradients at the iterates.

    Coulomb law (``law = 1``): the iterations minimise the CCP with De Saxcé's
    shift ``h(u_t)`` frozen in the free velocity (``q_s``), and the shift is
    updated from the current velocities whenever that CCP's natural-map
    residual is at most :data:`APGD_REFRESH` times the Coulomb residual (the fixed
    point of Acary and Cadoux's sequence of convex problems, as in
    :func:`~solvers.numerics.fc_kernels.nsgs` and :func:`admm`, which wait for a
    tenth).  At a refresh the gradients at the iterate and at the extrapolated point
    move by the shift's change and the momentum is kept (restarted only by the
    gradient test of :func:`apgd_momentum`).  The Coulomb law is not the
    optimality condition of one minimisation, so this fixed point may fail
    to converge; the residual returned is the Coulomb law's.
    """
    n = q.shape[0]
    qnorm = math.sqrt(np.sum(q * q))
    x, u, qs, res = feasible_start(indptr, indices, data, q, law, cones, r, qnorm)
    gx = np.empty(n)
    for i in range(n):
        gx[i] = u[i] + (qs[i] - q[i])
    if res <= tol:
        r[:] = x
        return 0, res
    # initial Lipschitz estimate from a probe step
    probe = np.empty(n)
    gp = np.empty(n)
    for i in range(n):
        probe[i] = x[i] + 1e-3 * (1.0 + abs(x[i]))
    matvec(indptr, indices, data, probe, qs, gp)
    L = apgd_lipschitz(x, gx, probe, gp)
    y = x.copy()
    gy = gx.copy()
    xn = np.empty(n)
    gxn = np.empty(n)
    step = np.empty(n)
    theta = 1.0
    it = 0
    while it < max_iter:
        it += 1
        fy = apgd_value(y, gy, qs)
        while True:
            for i in range(n):
                step[i] = y[i] - gy[i] / L
            project_cones(cones, step, xn)
            matvec(indptr, indices, data, xn, qs, gxn)
            if apgd_accepts(xn, gxn, y, gy, qs, fy, L):
                break
            L *= 2.0
        theta = apgd_momentum(theta, x, gx, xn, gxn, y, gy)
        L *= 0.9
        if law == 0:
            res = natural_map_cones(cones, 0, x, gx, qnorm)
        else:
            for i in range(n):
                u[i] = gx[i] - (qs[i] - q[i])
            res = natural_map_cones(cones, 1, x, u, qnorm)
            if res > tol and math.isfinite(res):
                inner = natural_map_cones(cones, 0, x, gx, qnorm)
                if inner <= max(APGD_REFRESH * res, 0.5 * tol):
                    # the new shift moves both gradients by its change; momentum kept
                    for i in range(n):
                        gy[i] -= qs[i]
                    shift_cones(cones, q, u, qs)
                    for i in range(n):
                        gx[i] = u[i] + (qs[i] - q[i])
                        gy[i] += qs[i]
        if res <= tol or not math.isfinite(res):
            break
    r[:] = x
    return it, res


@njit(cache=True)
def admm(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, law: int, cones: Cones, r: Vec,
    rho: float, tol: float, max_iter: int,
) -> tuple[int, float, float]:  # fmt: skip
    """ADMM with an adaptive penalty; returns ``(iterations, residual, final rho)``, ``r``
    in place (the cones of either layout: module docstring).

    Splits ``r = z`` with ``z`` in the cone: ``(W + rho I) r = rho (z - l) - q_s``
    (conjugate gradients, warm-started, to a tolerance below the current
    residuals), ``z = P_K(r + l)``, ``l += r - z``.  For the Coulomb law
    ``q_s = q + (h(u_t), 0, 0)`` per contact with ``u`` the velocity of the
    current ``z``, updated whenever the shifted CCP's own natural-map residual
    is below a tenth of the Coulomb residual (De Saxcé's fixed point, as an
    outer loop folded into the splitting); for the CCP ``q_s = q``.  The
    penalty is balanced every 5 iterations: multiplied by
    ``sqrt(primal / dual)`` (clipped to [0.1, 10]) when the primal residual
    ``||r - z||`` and the dual residual ``rho ||z - z_old||`` differ by more
    than a factor 10, the scaled multiplier rescaled with it.  The iterate
    returned is the one with the smallest natural-map residual seen: on
    redundant contacts the residual can stall near 1e-6 while the balancing
    keeps moving the penalty, and a late iterate can be far worse (measured
    on a three-cube stack's frictionless step: 3.3e1 at iteration 2e4 after
    6.8e-7 at 1e3).
    """
    n = q.shape[0]
    qnorm = math.sqrt(np.sum(q * q))
    z, u, qs, res = feasible_start(indptr, indices, data, q, law, cones, r, qnorm)
    x, lam, us, rhs, zold, xl, best, best_res, cg_tol = admm_arrays(z, res, qnorm)
    it = 0
    while res > tol and it < max_iter:
        it += 1
        admm_rhs(rho, z, lam, qs, rhs)
        _cg(indptr, indices, data, rho, rhs, x, cg_tol, 4 * n + 20)
        prim, dual, _, _ = admm_z_step(cones, x, lam, 1.0, rho, z, zold, xl)
        prim = math.sqrt(prim)
        dual = math.sqrt(dual)
        matvec(indptr, indices, data, z, q, u)
        res = natural_map_cones(cones, law, z, u, qnorm)
        if not math.isfinite(res):
            break
        best_res, cg_tol, rho = admm_after(
            cones, law, it, prim, dual, res, best_res, best, z, u, q, qs, us, lam, rho, tol, qnorm
        )
    return it, admm_result(res, best_res, best, z, r), rho


@njit(cache=True)
def admm_arrays(
    z: Vec, res: float, qnorm: float
) -> tuple[Vec, Vec, Vec, Vec, Vec, Vec, Vec, float, float]:
    """:func:`admm`'s arrays from its feasible start ``z`` (natural map ``res``): ``x``
    (from ``z``), the scaled multiplier (zero), scratch for the shifted velocity, the
    right-hand side, the previous ``z`` and ``x + lam``, the best iterate (``z``) and its
    residual, and the first conjugate gradients' tolerance (``1e-3 ||q||``)."""
    n = z.shape[0]
    return (
        z.copy(), np.zeros(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), z.copy(),
        res, 1e-3 * (qnorm + 1e-30),
    )  # fmt: skip


@njit(cache=True)
def admm_rhs(rho: float, z: Vec, lam: Vec, qs: Vec, out: Vec) -> None:
    """The right-hand side of ADMM's ``x`` update: ``out = rho (z - lam) - q_s``."""
    for i in range(z.shape[0]):
        out[i] = rho * (z[i] - lam[i]) - qs[i]


@njit(cache=True)
def admm_after(
    cones: Cones, law: int, it: int, prim: float, dual: float, res: float, best_res: float,
    best: Vec, z: Vec, u: Vec, q: Vec, qs: Vec, us: Vec, lam: Vec, rho: float, tol: float,
    qnorm: float,
) -> tuple[float, float, float]:  # fmt: skip  # noqa: PLR0913
    """The end of :func:`admm`'s iteration ``it`` once the natural map ``res`` at ``z``
    (velocity ``u``) is finite, written once for :func:`admm` and the compiled exact-cone
    step's ADMM: ``z`` kept in ``best`` if it is the best iterate yet, De Saxcé's shift
    ``qs`` refreshed for Coulomb's law once the shifted CCP's own residual is at most a
    tenth of ``res`` (``us``: scratch), the penalty balanced (:func:`admm_balance`).
    Returns the best residual, the next conjugate gradients' tolerance and the penalty."""
    if res < best_res:
        best_res = res
        best[:] = z
    if law == 1:
        # outer fixed point on the shift once the shifted CCP is solved well enough
        for i in range(q.shape[0]):
            us[i] = u[i] + (qs[i] - q[i])
        inner = natural_map_cones(cones, 0, z, us, qnorm)
        if inner <= max(0.1 * res, 0.5 * tol):
            shift_cones(cones, q, u, qs)
    cg_tol, rho = admm_balance(it, prim, dual, res, qnorm, rho, lam)
    return best_res, cg_tol, rho


@njit(cache=True)
def admm_result(res: float, best_res: float, best: Vec, z: Vec, r: Vec) -> float:
    """:func:`admm`'s answer written into ``r``: the last iterate ``z`` unless the best one
    seen (``best``, residual ``best_res``) is better or the last residual is not a number;
    returns its residual."""
    if not res <= best_res:
        r[:] = best
        return best_res
    r[:] = z
    return res
