"""The rows of the box-friction LCP and the impulses carried from one step to the next.

Shared by the box-friction model (:mod:`contactlab.models.box_friction`) and its
frictional-contact route (:mod:`contactlab.models.fc_route`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.contacts import ContactSet
from contactlab.contact.identity import warm_index
from contactlab.contact.rows import tangent_basis
from contactlab.models.common import (
    Array,
    Rows,
    stack_rows,
)
from contactlab.models.delassus import carried_impulses, friction_vectors, local_warm_start
from contactlab.problem import StepProblem


def box_rows(problem: StepProblem) -> Rows:
    """``C = [G; N; T; L; D]`` and ``b = [g; c; 0; l; 0]`` (tangent rows unbounded here,
    the dry-friction rows ``D`` in their bounds ``-d <= lambda_D <= d``)."""
    d = problem
    rows = stack_rows(
        problem.n,
        ("G", d.G, d.g, "free"),
        ("N", d.N, d.c, "nonneg"),
        ("T", d.T, np.zeros(d.T.shape[0]), "free"),
        ("L", d.L, d.l, "nonneg"),
        ("D", d.D, np.zeros(d.D.shape[0]), "free"),
    )
    rows.lo[rows.slices["D"]] = -d.d
    rows.hi[rows.slices["D"]] = d.d
    return rows


@dataclass
class ImpulseMemory:
    """One step's impulses kept for the next step's warm start.

    ``z`` the impulses on the rows of :func:`box_rows` with the ``slices`` of
    its blocks; for the contacts, their stable ids ``(nc,)``
    (:attr:`StepProblem.contact_ids`), normal impulses ``(nc,)`` and friction
    impulses as world vectors ``(nc, 3)`` [N s], so that they carry over to a
    new tangent basis.
    """

    z: Array
    slices: dict[str, slice]
    ids: NDArray[np.int64] | None
    normal_impulse: Array | None
    friction: Array | None

    @classmethod
    def record(
        cls,
        z: Array,
        rows: Rows,
        problem: StepProblem,
        tangents: tuple[Array, Array] | None = None,
    ) -> ImpulseMemory:
        """The impulses ``z`` on ``rows``; ``tangents`` the contacts' ``(t1, t2)`` when
        already at hand (else from their normals)."""
        contacts = problem.contacts
        if contacts is None or len(contacts) == 0 or "N" not in rows.slices:
            return cls(z, dict(rows.slices), None, None, None)
        t1, t2 = tangent_basis(contacts.normal) if tangents is None else tangents
        lam_t = np.ascontiguousarray(rows.part(z, "T"), dtype=np.float64)
        return cls(
            z,
            dict(rows.slices),
            np.array(problem.contact_ids),
            rows.part(z, "N").copy(),
            friction_vectors(lam_t, t1, t2),
        )


def world_friction(lam_T: Array, normal: Array) -> Array:
    """Friction impulses ``(2 nc,)`` in the tangent bases of ``normal`` as world vectors (nc, 3)."""
    t1, t2 = tangent_basis(normal)
    return friction_vectors(np.ascontiguousarray(lam_T, dtype=np.float64), t1, t2)  # type: ignore[no-any-return]


def carried_over(
    old_ids: NDArray[np.int64],
    normal_impulse: Array,
    friction: Array,
    problem: StepProblem,
) -> tuple[Array, Array]:
    """Normal ``(nc,)`` and tangent ``(2 nc,)`` impulses carried over from the contacts' origins.

    Each contact starts from the recorded contact it continues from
    (:func:`continued_from`): the normal impulse as it was, the friction
    impulse as a world vector projected onto the new tangent basis; new
    contacts start at zero.
    """
    assert problem.contacts is not None
    t1, t2 = tangent_basis(problem.contacts.normal)
    old_ids = np.ascontiguousarray(old_ids, dtype=np.int64)
    return carried_impulses(  # type: ignore[no-any-return]
        old_ids,
        np.argsort(old_ids, kind="stable"),
        np.ascontiguousarray(normal_impulse, dtype=np.float64),
        np.ascontiguousarray(friction, dtype=np.float64),
        np.ascontiguousarray(problem.contact_ids, dtype=np.int64),
        np.ascontiguousarray(problem.contact_origin, dtype=np.int64),
        t1,
        t2,
    )


def continued_from(old_ids: NDArray[np.int64], problem: StepProblem) -> NDArray[np.int64]:
    """For each contact, the position in ``old_ids`` of the contact it continues, or ``-1``.

    Its own id when recorded (a persisting contact, or the same contact set
    solved again), else its origin (the contact it split from,
    :attr:`StepProblem.contact_origin`).
    """
    src = warm_index(old_ids, problem.contact_ids)
    miss = np.flatnonzero(src < 0)
    src[miss] = warm_index(old_ids, problem.contact_origin[miss])
    return src


def warm_impulses(old: Any, rows: Rows, problem: StepProblem) -> Array | None:
    """The warm start of this step's impulses from the previous step's, or ``None``.

    Bilateral (``G``), limit (``L``) and dry-friction (``D``) impulses carry over
    when their row counts are unchanged, contact impulses per persistent contact id
    (:func:`carried_over`).
    """
    if not isinstance(old, ImpulseMemory):
        return None
    z = np.zeros(rows.m)
    for name in ("G", "L", "D"):
        new_s, old_s = rows.slices.get(name), old.slices.get(name)
        if (
            new_s is not None
            and old_s is not None
            and new_s.stop - new_s.start == old_s.stop - old_s.start
        ):
            z[new_s] = old.z[old_s]
    contacts = problem.contacts
    if contacts is not None and len(contacts) > 0 and old.ids is not None and "N" in rows.slices:
        assert old.normal_impulse is not None and old.friction is not None
        z[rows.slices["N"]], z[rows.slices["T"]] = carried_over(
            old.ids, old.normal_impulse, old.friction, problem
        )
    return z


def warm_local(
    old: Any,
    rows: Rows,
    problem: StepProblem,
    order: NDArray[np.int64],
    tangents: tuple[Array, Array],
) -> Array | None:
    """:func:`warm_impulses` in the local ``order`` of the rows (``warm_impulses(...)[order]``)
    by one compiled pass; ``tangents`` the contacts' ``(t1, t2)``."""
    if not isinstance(old, ImpulseMemory):
        return None
    s = rows.slices
    mg, ml = s["G"].stop - s["G"].start, s["L"].stop - s["L"].start
    old_g, old_l = old.slices.get("G"), old.slices.get("L")
    same_g = old_g is not None and old_g.stop - old_g.start == mg
    same_l = old_l is not None and old_l.stop - old_l.start == ml
    contacts = problem.contacts
    carry = contacts is not None and len(contacts) > 0 and old.ids is not None
    if carry:
        assert old.normal_impulse is not None and old.friction is not None
        old_ids = np.ascontiguousarray(old.ids, dtype=np.int64)
        normal, friction = old.normal_impulse, old.friction
    else:
        old_ids, normal, friction = np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3))
    return local_warm_start(  # type: ignore[no-any-return]
        np.ascontiguousarray(old.z, dtype=np.float64),
        0 if old_g is None else old_g.start,
        0 if old_l is None else old_l.start,
        same_g,
        same_l,
        carry,
        old_ids,
        np.argsort(old_ids, kind="stable"),
        np.ascontiguousarray(normal, dtype=np.float64),
        np.ascontiguousarray(friction, dtype=np.float64),
        np.ascontiguousarray(problem.contact_ids, dtype=np.int64),
        np.ascontiguousarray(problem.contact_origin, dtype=np.int64),
        tangents[0],
        tangents[1],
        mg,
        ml,
        order,
    )


def height_order(rows: Rows, contacts: ContactSet | None, how: str) -> NDArray[np.int64]:
    """Permutation of the rows of :func:`box_rows` (new position -> row).

    ``how="height"``: the bilateral rows ``G``, then per contact its normal row
    and its two tangent rows, contacts sorted by the height (world ``z``) of
    their points, lowest first, then the limit rows ``L``.  Projected
    Gauss--Seidel then passes the weight of a pile down to the ground in few
    sweeps.  ``how="rows"`` or no contacts: the identity.
    """
    m = rows.m
    if how == "rows" or contacts is None or len(contacts) == 0 or "N" not in rows.slices:
        return np.arange(m, dtype=np.int64)
    n_s, t_s = rows.slices["N"], rows.slices["T"]
    per_contact = np.column_stack(
        [np.arange(n_s.start, n_s.stop), np.arange(t_s.start, t_s.stop).reshape(-1, 2)]
    )
    up = np.argsort(np.asarray(contacts.point)[:, 2], kind="stable")
    before = np.arange(0, n_s.start)
    after = np.arange(t_s.stop, m)
    return np.concatenate([before, per_contact[up].ravel(), after]).astype(np.int64)
