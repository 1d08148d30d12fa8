"""A step as the frictional-contact problem of the solver layer (FCLIB's local form).

With the rows ``C = [G; N; T; L]`` of :func:`~contactlab.models.box_friction.box_rows`
and ``v = M^{-1}(f + C^T z)`` (the elimination of :mod:`contactlab.models.common`),
the contact velocities are ``u = W z + q`` with the Delassus matrix
``W = C M^{-1} C^T`` and ``q = C M^{-1} f - b``.  The local problem groups each
contact's normal and two tangent rows (normal first), contacts ordered from
the lowest point up (Gauss--Seidel then carries a pile's weight to the ground
in few sweeps), followed by the bilateral rows ``G`` (scalar rows with
``row_lo = -inf``) and the limit rows ``L`` (``row_lo = 0``).  The friction
impulse ``r_t`` is in the ``T`` basis whatever the cone, so ``lambda_T`` needs
no conversion (the pyramid's directions are ``cos(2 pi j/k) t1 + sin(2 pi j/k) t2``
as in :mod:`contactlab.models.anitescu_hart`).

Warm start per persistent contact: the previous step's impulses carry over
through :func:`~contactlab.models.box_friction.warm_impulses`, keyed by the
stable contact identities of the step problem (``StepProblem.contact_ids``;
friction as a world vector re-projected on the new tangents).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.models.base import SolvingModel, make_solution
from contactlab.models.common import MassInverse, Rows, check_friction_data, step_data
from contactlab.models.warm import ImpulseMemory, box_rows, height_order, warm_impulses
from contactlab.problem import StepProblem, StepSolution
from solvers import FrictionalContact


def _local_order(rows: Any, contacts: Any) -> NDArray[np.int64]:
    """Rows of ``[G; N; T; L]`` in the local problem's order: contacts (n, t1, t2), G, L."""
    by_height = height_order(rows, contacts, "height" if contacts is not None else "rows")
    g_s, l_s = rows.slices["G"], rows.slices["L"]
    n_s = rows.slices["N"]
    contact_rows = by_height[(by_height >= n_s.start) & (by_height < l_s.start)]
    if contacts is None or len(contacts) == 0:
        nc = n_s.stop - n_s.start
        t = np.arange(n_s.stop, n_s.stop + 2 * nc).reshape(-1, 2)
        contact_rows = np.column_stack([np.arange(n_s.start, n_s.stop), t]).ravel()
    return np.concatenate(
        [contact_rows, np.arange(g_s.start, g_s.stop), np.arange(l_s.start, l_s.stop)]
    ).astype(np.int64)


def local_problem(
    problem: StepProblem, law: str, cone: str, directions: int = 4
) -> tuple[FrictionalContact, Rows, NDArray[np.int64], MassInverse]:
    """The step as a local problem; also the rows, the local order of the rows and ``M^{-1}``."""
    check_friction_data(problem)
    d = step_data(problem)
    rows = box_rows(problem)
    minv = MassInverse(problem.M)
    order = _local_order(rows, problem.contacts)
    C = rows.C[order]
    W = minv.delassus(C)
    q = np.asarray(C @ minv.vec(problem.f)) - rows.b[order]
    nc = problem.n_contacts
    contact_ids = order[0 : 3 * nc : 3] - rows.slices["N"].start
    mg, ml = d.G.shape[0], d.L.shape[0]
    row_lo = np.concatenate([np.full(mg, -np.inf), np.zeros(ml)])
    fc = FrictionalContact(W, q, d.mu[contact_ids], law, cone, directions, row_lo)
    return fc, rows, order, minv


def solve_as_fc(
    model: SolvingModel,
    problem: StepProblem,
    cache: dict[str, Any],
    law: str,
    cone: str,
    directions: int = 4,
) -> StepSolution:
    """Solve one step as the local frictional-contact problem (module docstring)."""
    fc, rows, order, minv = local_problem(problem, law, cone, directions)
    key = f"fc:{law}:{cone}"
    prev = warm_impulses(cache.get(key), rows, problem)
    res = model.run(fc, None if prev is None else prev[order])
    z = np.empty(rows.m)
    z[order] = res.x
    cache[key] = ImpulseMemory.record(z, rows, problem)
    v = minv.vec(problem.f + np.asarray(rows.C.T @ z))
    return make_solution(model, problem, v, rows, z, rows.part(z, "T"))
