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

With a diagonal mass matrix (maximal coordinates) ``W`` and ``q`` are built
from the CSR arrays of the rows in compiled code
(:mod:`contactlab.models.delassus`), and so are the velocities; no
``scipy.sparse`` product or stacking runs on the step.  Other mass matrices
(reduced coordinates) take the sparse products of :class:`MassInverse`.

Warm start per persistent contact: the previous step's impulses carry over
through :func:`~contactlab.models.box_rows.warm_impulses`, keyed by the
stable contact identities of the step problem (``StepProblem.contact_ids``;
friction as a world vector re-projected on the new tangents).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.contact.rows import tangent_basis
from contactlab.csr import csr, index_dtype
from contactlab.memory import ModelMemory, recall
from contactlab.models.base import SolvingModel, make_solution
from contactlab.models.box_rows import (
    ImpulseMemory,
    continued_from,
    warm_local,
)
from contactlab.models.common import (
    MassInverse,
    Rows,
)
from contactlab.models.delassus import (
    diagonal_inverse,
    local_order,
    local_problem_arrays,
    ordered_rows,
    stack_csr,
    stack_rows_csr,
    velocities,
)
from contactlab.problem import StepProblem, StepSolution
from solvers import FrictionalContact


def _upward(contacts: Any, nc: int) -> NDArray[np.int64]:
    """The contacts from the lowest point up (stable), or in order without their points."""
    if contacts is None or len(contacts) == 0:
        return np.arange(nc, dtype=np.int64)
    return np.argsort(np.asarray(contacts.point)[:, 2], kind="stable")


class LocalStep:
    """The local problem of a step and what maps its impulses back to the step.

    ``fc`` the local problem; ``rows`` the rows ``[G; N; T; L]`` (``rows.C``
    their CSR matrix); ``order`` the row of ``rows`` at each local position;
    ``dinv`` the diagonal of ``M^{-1}`` when ``M`` is diagonal (compiled path),
    else ``None`` and ``minv`` the factorised inverse.
    """

    def __init__(
        self,
        fc: FrictionalContact,
        rows: Rows,
        order: NDArray[np.int64],
        dinv: NDArray[np.float64] | None,
        minv: MassInverse | None,
    ) -> None:
        self.fc, self.rows, self.order, self.dinv, self.minv = fc, rows, order, dinv, minv

    def velocities(
        self, f: NDArray[np.float64], z_local: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        """``v = M^{-1}(f + C^T z)`` from the impulses on the local rows."""
        if self.dinv is not None:
            C = self.rows.C
            ptr = np.asarray(C.indptr, dtype=np.int64)
            idx = np.asarray(C.indices, dtype=np.int64)
            return velocities(ptr, idx, C.data, self.order, self.dinv, f, z_local)  # type: ignore[no-any-return]
        assert self.minv is not None
        z = np.empty(self.rows.m)
        z[self.order] = z_local
        return self.minv.vec(f + np.asarray(self.rows.C.T @ z))


def _diagonal_inverse(M: sp.spmatrix) -> NDArray[np.float64] | None:
    """``1 / diag(M)`` when ``M`` is diagonal with a positive diagonal, else ``None``."""
    if M.format in ("csr", "csc"):
        ok, dinv = diagonal_inverse(M.indptr, M.indices, M.data)
        return dinv if ok else None
    diag = M.diagonal()
    if M.nnz == np.count_nonzero(diag) and np.all(diag > 0):
        return 1.0 / diag  # type: ignore[no-any-return]
    return None


def _rows(problem: StepProblem, d: StepProblem) -> Rows:
    """The rows of :func:`box_rows` stacked from their CSR arrays (one compiled pass).

    ``rows.C`` keeps the int64 index arrays of the pass (no copy for the kernels)."""
    G, N, T, L = d.G, d.N, d.T, d.L
    ptr, idx, dat, b, lo = stack_rows_csr(
        G.indptr, G.indices, G.data, N.indptr, N.indices, N.data,
        T.indptr, T.indices, T.data, L.indptr, L.indices, L.data, d.g, d.c, d.l,
    )  # fmt: skip
    m = ptr.shape[0] - 1
    mg, nc, ml = G.shape[0], N.shape[0], L.shape[0]
    slices = {
        "G": slice(0, mg),
        "N": slice(mg, mg + nc),
        "T": slice(mg + nc, mg + 3 * nc),
        "L": slice(mg + 3 * nc, mg + 3 * nc + ml),
    }
    return Rows(csr(dat, idx, ptr, (m, problem.n), wide=True), b, lo, np.full(m, np.inf), slices)


def _assemble(
    problem: StepProblem,
    rows: Rows,
    order: NDArray[np.int64],
    dinv: NDArray[np.float64] | None,
) -> tuple[sp.csr_matrix, NDArray[np.float64], NDArray[np.float64] | None, MassInverse | None]:
    """``W``, ``q`` of the rows ``rows.C[order]``; ``1/diag(M)`` or the factorised ``M^{-1}``."""
    if dinv is not None:
        C = rows.C
        w_ptr, w_idx, w_val, q = local_problem_arrays(
            C.indptr, C.indices, C.data, order, dinv, problem.f, rows.b
        )
        return csr(w_val, w_idx, w_ptr, (order.size, order.size)), q, dinv, None
    minv = MassInverse(problem.M)
    C = rows.C[order]
    W = minv.delassus(C)
    return W, np.asarray(C @ minv.vec(problem.f)) - rows.b[order], None, minv


def _assemble_for(
    problem: StepProblem, rows: Rows, order: NDArray[np.int64], factor: bool
) -> tuple[
    sp.csr_matrix | None,
    NDArray[np.float64],
    NDArray[np.float64] | None,
    MassInverse | None,
    tuple[sp.csr_matrix, NDArray[np.float64]] | None,
]:
    """:func:`_assemble`, or with ``factor`` and a diagonal ``M`` only ``q`` and ``(C_o, M^-1)``.

    A velocity-form backend never needs ``W`` itself: ``FrictionalContact``
    forms it from the factor only if something else asks for it.
    """
    dinv = _diagonal_inverse(problem.M)
    if not factor or dinv is None:
        W, q, dinv, minv = _assemble(problem, rows, order, dinv)
        return W, q, dinv, minv, None
    # rows.C[order] and q = C_o M^-1 f - b_o by one compiled pass
    Ca = rows.C
    c_val, c_idx, c_ptr, q = ordered_rows(
        Ca.indptr, Ca.indices, Ca.data, order, dinv, problem.f, rows.b,
        index_dtype(max(order.size, Ca.shape[1], Ca.nnz)),
    )  # fmt: skip
    return None, q, dinv, None, (csr(c_val, c_idx, c_ptr, (order.size, Ca.shape[1])), dinv)


def local_step(
    problem: StepProblem, law: str, cone: str, directions: int = 4, factor: bool = False
) -> LocalStep:
    """The step as a local problem (module docstring), compiled when ``M`` is diagonal.

    ``factor=True`` attaches ``W = C[order] diag(M^-1) C[order]'`` to the problem
    (``FrictionalContact.factor``, for velocity-form backends) when ``M`` is diagonal.
    """
    d = problem
    rows = _rows(problem, d)
    nc = problem.n_contacts
    up = _upward(problem.contacts, nc)
    mg, ml = d.G.shape[0], d.L.shape[0]
    mu = np.ascontiguousarray(d.mu, dtype=np.float64)
    order, mu_local, row_lo = local_order(mg, nc, ml, up, mu)
    W, q, dinv, minv, pair = _assemble_for(problem, rows, order, factor)
    fc = FrictionalContact(W, q, mu_local, law, cone, directions, row_lo, pair)
    return LocalStep(fc, rows, order, dinv, minv)


def frictionless_step(problem: StepProblem, factor: bool = False) -> LocalStep:
    """The frictionless step (rows ``[G; N; L]``) as a local problem of scalar rows only.

    No contact carries friction, so every row is a scalar row of the local
    problem: ``G`` bilateral, ``N`` and ``L`` unilateral (``0 <= r ⟂ u >= 0``),
    in the order ``G``, ``N`` from the lowest contact point up, ``L``.  Its
    solution is the minimiser of the dual contact QP of
    :mod:`contactlab.models.frictionless`.
    """
    d = problem
    ptr, idx, dat = stack_csr(d.G, d.N, d.L)
    m = ptr.shape[0] - 1
    mg, nc, ml = d.G.shape[0], d.N.shape[0], d.L.shape[0]
    C = csr(dat, idx, ptr, (m, problem.n), wide=True)
    lo = np.concatenate([np.full(mg, -np.inf), np.zeros(nc + ml)])
    slices = {"G": slice(0, mg), "N": slice(mg, mg + nc), "L": slice(mg + nc, m)}
    rows = Rows(C, np.concatenate([d.g, d.c, d.l]), lo, np.full(m, np.inf), slices)
    up = np.arange(nc)
    if problem.contacts is not None and nc:
        up = np.argsort(np.asarray(problem.contacts.point)[:, 2], kind="stable")
    order = np.concatenate([np.arange(mg), mg + up, np.arange(mg + nc, m)]).astype(np.int64)
    W, q, dinv, minv, pair = _assemble_for(problem, rows, order, factor)
    fc = FrictionalContact(W, q, np.zeros(0), "ccp", "soc", 4, lo[order], pair)
    return LocalStep(fc, rows, order, dinv, minv)


def local_problem(
    problem: StepProblem, law: str, cone: str, directions: int = 4
) -> tuple[FrictionalContact, Rows, NDArray[np.int64]]:
    """The step as a local problem; also the rows and the local order of the rows."""
    step = local_step(problem, law, cone, directions)
    return step.fc, step.rows, step.order


def solve_as_fc(
    model: SolvingModel,
    problem: StepProblem,
    cache: ModelMemory,
    law: str,
    cone: str,
    directions: int = 4,
) -> StepSolution:
    """Solve one step as the local frictional-contact problem (module docstring)."""
    factor = bool(getattr(model.backend, "uses_fc_factor", False))
    step = local_step(problem, law, cone, directions, factor)
    rows, order = step.rows, step.order
    key = f"fc:{law}:{cone}"
    contacts = problem.contacts
    tangents = (
        tangent_basis(contacts.normal)
        if contacts is not None and len(contacts)
        else (np.zeros((0, 3)), np.zeros((0, 3)))
    )
    res = model.run(
        step.fc, warm_local(recall(cache, key, ImpulseMemory), rows, problem, order, tangents)
    )
    z = np.empty(rows.m)
    z[order] = res.x
    cache[key] = ImpulseMemory.record(z, rows, problem, tangents)
    v = step.velocities(problem.f, res.x)
    return make_solution(model, problem, v, rows, z, rows.part(z, "T"))


def solve_frictionless_as_fc(
    model: SolvingModel, problem: StepProblem, cache: ModelMemory
) -> StepSolution:
    """Solve a frictionless step as a local problem of scalar rows (:func:`frictionless_step`).

    Warm start: the previous step's ``lambda_G`` and ``lambda_L`` when their
    row counts are unchanged, ``lambda_N`` per persistent contact (its stable
    id, or the contact it split from).
    """
    step = frictionless_step(problem, bool(getattr(model.backend, "uses_fc_factor", False)))
    rows, order = step.rows, step.order
    key = "fc:frictionless"
    old = recall(cache, key, FrictionlessMemory)
    warm = None if old is None else old.warm(rows, problem)[order]
    res = model.run(step.fc, warm)
    z = np.empty(rows.m)
    z[order] = res.x
    cache[key] = FrictionlessMemory(
        np.array(problem.contact_ids), rows.part(z, "N").copy(), rows.part(z, "G").copy(),
        rows.part(z, "L").copy(),
    )  # fmt: skip
    v = step.velocities(problem.f, res.x)
    return make_solution(model, problem, v, rows, z, np.zeros(2 * problem.n_contacts))


class FrictionlessMemory:
    """One frictionless step's impulses, kept for the next step's warm start."""

    def __init__(
        self,
        ids: NDArray[np.int64],
        normal: NDArray[np.float64],
        bilateral: NDArray[np.float64],
        limits: NDArray[np.float64],
    ) -> None:
        self.ids, self.normal, self.bilateral, self.limits = ids, normal, bilateral, limits

    def warm(self, rows: Rows, problem: StepProblem) -> NDArray[np.float64]:
        """Impulses on ``rows`` (``[G; N; L]``) carried over to ``problem``."""
        z = np.zeros(rows.m)
        for name, old in (("G", self.bilateral), ("L", self.limits)):
            s = rows.slices[name]
            if s.stop - s.start == old.size:
                z[s] = old
        if problem.n_contacts and self.ids.size:
            src = continued_from(self.ids, problem)
            hit = np.flatnonzero(src >= 0)
            zn = np.zeros(problem.n_contacts)
            zn[hit] = self.normal[src[hit]]
            z[rows.slices["N"]] = zn
        return z
