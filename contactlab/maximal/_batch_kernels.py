"""Compiled kernel of the batched pile step (:mod:`contactlab.maximal.batched_step`).

:func:`batch_step` takes one step of ``N`` independent scenes of free boxes on planes
in one call: for each copy, in turn, the compiled collision of a scene of boxes
(:func:`contactlab.collision.boxes._box_frames`, the grid broad phase
:func:`contactlab.collision.broadphase._grid_small` and
:func:`contactlab.collision.boxes._box_scene_contacts`), the contact identities
(:func:`contactlab.contact.identity._identify`) and the compiled maximal step
(:func:`contactlab.maximal._pile_kernels.contact_step`): the same kernels, called on the
same arrays, as a run of that copy alone takes through
:class:`~contactlab.maximal.compiled_step.CompiledContactStep`.

The copies' arrays are concatenated, each copy's rows found by an offset array
(``boff`` bodies, ``soff`` shapes, ``poff`` planes, ``moff`` friction tables, ``coff``
the previous step's contacts).  A copy that is not ``active`` keeps its state and
gets the status :data:`SKIPPED`.
"""

from __future__ import annotations

import numpy as np

from contactlab.collision.boxes import _box_frames, _box_scene_contacts
from contactlab.collision.broadphase import LARGE_FACTOR, _grid_small
from contactlab.contact.identity import MATCH_RADIUS, _identify
from contactlab.maximal._pile_kernels import N_INFO, contact_step
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 60.0

#: per-copy outcomes of :func:`batch_step` beyond :func:`contact_step`'s statuses
#: (``OPTIMAL``, ``MAX_ITERATIONS``, ``NUMERICAL_ERROR``, ``DECOUPLED``)
SKIPPED, NONFINITE_POSES, LARGE_BOX, WIDE_KEYS = 10, 11, 12, 13

_RADIUS2 = float(MATCH_RADIUS**2)


@njit(cache=True)
def _copy_contacts(E, body, local, material, size, pose, mu_table, pl_normal, pl_offset,
                   pl_local, pl_material, margin, active):  # fmt: skip  # noqa: ANN001, ANN202
    """One copy's contacts (:meth:`contactlab.collision.detect.Collider._boxes`); ``code``
    0, :data:`SKIPPED` when not ``active``, or :data:`NONFINITE_POSES` / :data:`LARGE_BOX`
    when the copy needs the general path."""
    if not active:
        none = np.zeros(0, dtype=np.int64)
        return SKIPPED, (np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0), none, none.copy(),
                         none.copy(), none.copy(), np.zeros(0))  # fmt: skip
    slot = np.full(body.shape[0], -1, dtype=np.int64)
    posed = np.zeros((0, 4, 4))
    finite, X, P, lo, hi = _box_frames(E, body, pose, slot, posed, size, margin)
    code = 0 if finite else NONFINITE_POSES
    if body.shape[0] < 2:
        i = np.zeros(0, dtype=np.int64)
        j = np.zeros(0, dtype=np.int64)
    else:
        done, i, j = _grid_small(lo, hi, LARGE_FACTOR)
        if not done:
            code = LARGE_BOX
    found = _box_scene_contacts(X, P, size, i, j, body, local, material, mu_table, pl_normal,
                                pl_offset, pl_local, pl_material, margin)  # fmt: skip
    return code, found


@njit(cache=True)
def _no_contacts(ids_l, origin_l, pair_l, point_l, dist_l, normal_l, friction_l):  # noqa: ANN001, ANN202, PLR0913
    """Empty per-copy outputs (no contacts recorded) for a copy whose step stops."""
    ids_l.append(np.zeros(0, dtype=np.int64))
    origin_l.append(np.zeros(0, dtype=np.int64))
    pair_l.append(np.zeros((0, 4), dtype=np.int64))
    point_l.append(np.zeros((0, 3)))
    dist_l.append(np.zeros(0))
    normal_l.append(np.zeros(0))
    friction_l.append(np.zeros((0, 3)))


@njit(cache=True)
def batch_step(  # noqa: ANN201, PLR0913, PLR0915
    active, boff, mdiag, E, phi, gravity, h, iterations,
    soff, s_body, s_local, s_material, s_size, s_pose,
    poff, pl_normal, pl_offset, pl_local, pl_material,
    moff, mdim, mu_flat, margin, beta, max_corr,
    coff, old_ids, old_pair, old_point, old_normal, old_friction, next_id,
    tol, max_iter, omega, check_every, slip_threshold, finish, islands,
):  # fmt: skip
    """One step of every active copy (module docstring).

    Per copy ``k``: bodies ``boff[k]:boff[k+1]`` of ``mdiag`` (nb, 6), ``E`` (nb, 4, 4),
    ``phi`` (nb, 6), its ``gravity[k]``; shapes ``soff[k]:soff[k+1]`` (boxes, ``s_body``
    the copy's own body index); planes ``poff[k]:poff[k+1]``; friction table
    ``mu_flat[moff[k]:moff[k+1]]`` of side ``mdim[k]``; the copy's contact ``margin``,
    feedback ``beta`` and ``max_corr``; the previous step's contacts
    ``coff[k]:coff[k+1]`` (identities, pairs, points, normal impulses, friction vectors)
    and the copy's next free identity ``next_id[k]``.

    Returns the new ``E``, ``phi``; the contacts' offsets ``c_off`` (N+1), identities,
    origins, pairs (nc, 4), points, distances, normal impulses and friction vectors (the
    next step's warm start), each copy's next free identity, its ``info`` row (N, N_INFO,
    :data:`contactlab.maximal._pile_kernels.I_STATUS` ... ; the status may be one of
    this module's codes).
    """
    n = active.shape[0]
    E_new = E.copy()
    phi_new = phi.copy()
    info = np.zeros((n, N_INFO))
    next_new = next_id.copy()
    counts = np.zeros(n, dtype=np.int64)
    ids_l = []
    origin_l = []
    pair_l = []
    point_l = []
    dist_l = []
    normal_l = []
    friction_l = []
    for k in range(n):
        b0, b1 = boff[k], boff[k + 1]
        s0, s1 = soff[k], soff[k + 1]
        p0, p1 = poff[k], poff[k + 1]
        c0, c1 = coff[k], coff[k + 1]
        d = mdim[k]
        mu_table = mu_flat[moff[k] : moff[k + 1]].copy().reshape((d, d))
        Ek = E[b0:b1].copy()
        code, found = _copy_contacts(
            Ek, s_body[s0:s1].copy(), s_local[s0:s1].copy(), s_material[s0:s1].copy(),
            s_size[s0:s1].copy(), s_pose[s0:s1].copy(), mu_table, pl_normal[p0:p1].copy(),
            pl_offset[p0:p1].copy(), pl_local[p0:p1].copy(), pl_material[p0:p1].copy(),
            margin[k], active[k],
        )  # fmt: skip
        if code != 0:
            info[k, 0] = code
            _no_contacts(ids_l, origin_l, pair_l, point_l, dist_l, normal_l, friction_l)
            continue
        point, normal, dist, body_a, body_b, shape_a, shape_b, mu = found
        nc = dist.shape[0]
        pair = np.empty((nc, 4), dtype=np.int64)
        for r in range(nc):
            pair[r, 0] = body_a[r]
            pair[r, 1] = body_b[r]
            pair[r, 2] = shape_a[r]
            pair[r, 3] = shape_b[r]
        # contact identities (contactlab.contact.identity.identify)
        start = next_id[k]
        n_old = c1 - c0
        if nc == 0:
            ids = np.zeros(0, dtype=np.int64)
            origin = np.zeros(0, dtype=np.int64)
            nxt = start
        elif n_old == 0:
            ids = start + np.arange(nc)
            origin = np.full(nc, -1, dtype=np.int64)
            nxt = start + nc
        else:
            got = _identify(old_pair[c0:c1].copy(), old_point[c0:c1].copy(),
                            old_ids[c0:c1].copy(), pair, point, start, _RADIUS2)  # fmt: skip
            if got is None:
                info[k, 0] = WIDE_KEYS
                _no_contacts(ids_l, origin_l, pair_l, point_l, dist_l, normal_l, friction_l)
                continue
            ids, origin, nxt = got
        # the warm start recorded by the previous step (CompiledContactStep.step)
        carry = nc > 0 and n_old > 0
        if carry:
            o_ids = old_ids[c0:c1].copy()
            o_order = np.argsort(o_ids, kind="mergesort")
            o_normal = old_normal[c0:c1].copy()
            o_friction = old_friction[c0:c1].copy()
        else:
            o_ids = np.zeros(0, dtype=np.int64)
            o_order = np.zeros(0, dtype=np.int64)
            o_normal = np.zeros(0)
            o_friction = np.zeros((0, 3))
        phi_k, E_k, z, friction, info_k = contact_step(
            mdiag[b0:b1].copy(), Ek, phi[b0:b1].copy(), gravity[k].copy(), h, iterations,
            body_a, body_b, point, normal, dist, mu, beta[k], max_corr[k], carry,
            o_ids, o_order, o_normal, o_friction, ids, origin,
            tol, max_iter, omega, check_every, slip_threshold, finish, islands,
            np.zeros(b1 - b0, dtype=np.bool_),
        )  # fmt: skip
        info[k] = info_k
        E_new[b0:b1] = E_k
        phi_new[b0:b1] = phi_k
        next_new[k] = nxt
        counts[k] = nc
        ids_l.append(ids)
        origin_l.append(origin)
        pair_l.append(pair)
        point_l.append(point)
        dist_l.append(dist)
        normal_l.append(z[:nc].copy())
        friction_l.append(friction)
    c_off = np.zeros(n + 1, dtype=np.int64)
    for k in range(n):
        c_off[k + 1] = c_off[k] + counts[k]
    total = c_off[n]
    ids_o = np.empty(total, dtype=np.int64)
    origin_o = np.empty(total, dtype=np.int64)
    pair_o = np.empty((total, 4), dtype=np.int64)
    point_o = np.empty((total, 3))
    dist_o = np.empty(total)
    normal_o = np.empty(total)
    friction_o = np.empty((total, 3))
    for k in range(n):
        c0 = c_off[k]
        for r in range(counts[k]):
            ids_o[c0 + r] = ids_l[k][r]
            origin_o[c0 + r] = origin_l[k][r]
            dist_o[c0 + r] = dist_l[k][r]
            normal_o[c0 + r] = normal_l[k][r]
            for j in range(4):
                pair_o[c0 + r, j] = pair_l[k][r, j]
            for j in range(3):
                point_o[c0 + r, j] = point_l[k][r, j]
                friction_o[c0 + r, j] = friction_l[k][r, j]
    return (E_new, phi_new, c_off, ids_o, origin_o, pair_o, point_o, dist_o, normal_o,
            friction_o, next_new, info)  # fmt: skip
