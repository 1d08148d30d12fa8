"""Stable contact identities: a contact that persists from one step to the next keeps its id.

Collision reports each step's contacts afresh, in an order that may change.
The simulator gives every contact an integer id (:attr:`StepProblem.contact_ids
<contactlab.problem.StepProblem.contact_ids>`): a contact *persists* from the
previous step's contact of the same bodies and shapes whose point is nearest,
if that point is within :data:`MATCH_RADIUS`, and then keeps its id; other
contacts get new ids.  Ids are unique within a step: when two new contacts
would persist from the same old one (a contact that splits), the nearer keeps
the id (the first in order on a tie) and the other gets a new one.  Every
contact also names its *origin*
(:attr:`StepProblem.contact_origin <contactlab.problem.StepProblem.contact_origin>`):
the id of the previous step's contact it continues from — its own id when it
persists, the id it split from, ``-1`` when it is new.  Models carry warm
starts through the ids and origins (:func:`warm_index`), so they never match geometry
themselves, and both halves of a split contact start from the impulse of the
contact they split from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.contacts import ContactSet
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Largest distance [m] between a contact point and the previous step's point it persists from.
MATCH_RADIUS = 0.01

#: ``State.cache`` key of the contact track between steps.
CACHE_KEY = "contacts:track"


@dataclass(frozen=True)
class ContactTrack:
    """One step's contacts as the next step needs them to carry identities over.

    ids : (nc,) contact ids; origin : (nc,) the id each contact continues
    from (``-1``: new); pair : (nc, 4) ``(body_a, body_b, shape_a,
    shape_b)``; point : (nc, 3) world points [m]; next_id : the first id not
    yet given.
    """

    ids: IntArray
    origin: IntArray
    pair: IntArray
    point: Array
    next_id: int


def contact_pairs(contacts: ContactSet) -> IntArray:
    """``(nc, 4)`` bodies and shapes of each contact: ``(body_a, body_b, shape_a, shape_b)``."""
    return np.column_stack(
        [contacts.body_a, contacts.body_b, contacts.shape_a, contacts.shape_b]
    ).astype(np.int64)


def pair_ids(pairs: IntArray) -> IntArray:
    """Equal ids for equal rows of ``pairs`` ``(n, 4)`` (entries >= -1), by one integer key each.

    The four columns are packed into one int64 (mixed radix, each column's
    range as its base), so the grouping is a 1-D sort; if the ranges are too
    wide for 62 bits the rows are grouped as rows.
    """
    p = pairs + 1
    base = p.max(axis=0, initial=0) + 1
    if float(np.prod(base.astype(float))) >= 2.0**62:
        return np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
    key = ((p[:, 0] * base[1] + p[:, 1]) * base[2] + p[:, 2]) * base[3] + p[:, 3]
    return np.unique(key, return_inverse=True)[1].reshape(-1)


def match_contacts(
    old_pair: IntArray, old_point: Array, pair: IntArray, point: Array
) -> tuple[IntArray, Array]:
    """For each new contact, the old contact it persists from (or ``-1``) and the squared distance.

    The old contact of the same bodies and shapes whose point is nearest,
    within :data:`MATCH_RADIUS`.  Compiled (:func:`_nearest_old`) after the pairs are
    grouped by one integer key each.
    """
    n_old = old_pair.shape[0]
    ids = pair_ids(np.vstack([old_pair, pair]))
    return _nearest_old(
        np.ascontiguousarray(ids[:n_old], dtype=np.int64),
        np.ascontiguousarray(ids[n_old:], dtype=np.int64),
        np.ascontiguousarray(old_point, dtype=np.float64),
        np.ascontiguousarray(point, dtype=np.float64),
        float(MATCH_RADIUS**2),
    )


@njit(cache=True)
def _nearest_old(old_id, new_id, old_point, point, radius2):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`match_contacts` on the pairs' ids: the nearest old contact of the same pair
    (the later one in old order on a tie), within ``sqrt(radius2)``."""
    order = np.argsort(old_id, kind="mergesort")
    sorted_id = old_id[order]
    first = np.searchsorted(sorted_id, new_id, side="left")
    last = np.searchsorted(sorted_id, new_id, side="right")
    n = new_id.shape[0]
    best = np.full(n, -1, dtype=np.int64)
    best_d = np.full(n, radius2)
    for i in range(n):
        for k in range(first[i], last[i]):
            c = order[k]
            dx = old_point[c, 0] - point[i, 0]
            dy = old_point[c, 1] - point[i, 1]
            dz = old_point[c, 2] - point[i, 2]
            d2 = dx * dx + dy * dy + dz * dz
            if d2 <= best_d[i]:
                best[i] = c
                best_d[i] = d2
    return best, best_d


def identify(contacts: ContactSet | None, previous: ContactTrack | None) -> ContactTrack:
    """Ids of ``contacts`` given the previous step's track (``None``: every contact is new)."""
    start = 0 if previous is None else previous.next_id
    if contacts is None or len(contacts) == 0:
        none = np.zeros(0, np.int64)
        return ContactTrack(none, none, np.zeros((0, 4), np.int64), np.zeros((0, 3)), start)
    pair = contact_pairs(contacts)
    point = np.array(contacts.point, dtype=float)
    if previous is None or previous.ids.size == 0:
        nc = point.shape[0]
        return ContactTrack(
            start + np.arange(nc, dtype=np.int64), np.full(nc, -1, np.int64), pair, point,
            start + nc,
        )  # fmt: skip
    old_pair = np.ascontiguousarray(previous.pair, dtype=np.int64)
    old_point = np.ascontiguousarray(previous.point, dtype=np.float64)
    old_ids = np.ascontiguousarray(previous.ids, dtype=np.int64)
    found = _identify(old_pair, old_point, old_ids, pair, point, start, float(MATCH_RADIUS**2))
    if found is None:  # pair keys too wide for one int64: group the rows by np.unique
        return _identify_rows(pair, point, previous, start)
    ids, origin, next_id = found
    return ContactTrack(ids, origin, pair, point, int(next_id))


def _identify_rows(
    pair: IntArray, point: Array, previous: ContactTrack, start: int
) -> ContactTrack:
    """:func:`identify` with the pairs grouped as rows (keys too wide for :func:`_identify`)."""
    src, d2 = match_contacts(previous.pair, previous.point, pair, point)
    ids, origin, next_id = _assign_ids(src, d2, previous.ids, start)
    return ContactTrack(ids, origin, pair, point, int(next_id))


@njit(cache=True)
def _assign_ids(src, d2, old_ids, start):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Ids and origins from the matches ``src`` (old contact or ``-1``) at squared distances
    ``d2``: of the new contacts persisting from one old contact, the nearest keeps its id
    (the first in order on a tie), the others get new ids as the new contacts do, in order."""
    n = src.shape[0]
    owner = np.full(old_ids.shape[0], -1, np.int64)
    origin = np.full(n, -1, np.int64)
    for i in range(n):
        c = src[i]
        if c >= 0:
            origin[i] = old_ids[c]
            if owner[c] < 0 or d2[i] < d2[owner[c]]:
                owner[c] = i
    ids = np.empty(n, np.int64)
    fresh = 0
    for i in range(n):
        c = src[i]
        if c >= 0 and owner[c] == i:
            ids[i] = old_ids[c]
        else:
            ids[i] = start + fresh
            fresh += 1
    return ids, origin, start + fresh


@njit(cache=True)
def _identify(old_pair, old_point, old_ids, pair, point, start, radius2):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`identify` against a previous track, in one pass: the pairs packed into one
    int64 key each (mixed radix as :func:`pair_ids`; ``None`` when the ranges are too wide),
    the nearest old contact of the same key (:func:`_nearest_old`), then
    :func:`_assign_ids`."""
    n_old, n = old_pair.shape[0], pair.shape[0]
    base = np.ones(4, np.int64)
    for r in range(n_old):
        for k in range(4):
            if old_pair[r, k] + 2 > base[k]:
                base[k] = old_pair[r, k] + 2
    for r in range(n):
        for k in range(4):
            if pair[r, k] + 2 > base[k]:
                base[k] = pair[r, k] + 2
    if float(base[0]) * float(base[1]) * float(base[2]) * float(base[3]) >= 2.0**62:
        return None
    old_key = np.empty(n_old, np.int64)
    for r in range(n_old):
        old_key[r] = (
            (((old_pair[r, 0] + 1) * base[1] + old_pair[r, 1] + 1) * base[2] + old_pair[r, 2] + 1)
            * base[3]
            + old_pair[r, 3]
            + 1
        )
    key = np.empty(n, np.int64)
    for r in range(n):
        key[r] = (
            (((pair[r, 0] + 1) * base[1] + pair[r, 1] + 1) * base[2] + pair[r, 2] + 1) * base[3]
            + pair[r, 3]
            + 1
        )
    src, d2 = _nearest_old(old_key, key, old_point, point, radius2)
    ids, origin, next_id = _assign_ids(src, d2, old_ids, start)
    return ids, origin, next_id


def warm_index(old_ids: IntArray, ids: IntArray) -> IntArray:
    """For each id of ``ids``, the position of the same id in ``old_ids``, or ``-1``."""
    if old_ids.size == 0 or ids.size == 0:
        return np.full(ids.size, -1, dtype=np.int64)
    order = np.argsort(old_ids, kind="stable")
    pos = np.minimum(np.searchsorted(old_ids[order], ids), old_ids.size - 1)
    found = old_ids[order][pos] == ids
    return np.where(found, order[pos], -1).astype(np.int64)
