"""The compiled local problem of a step (diagonal mass) equals the sparse products it replaces.

``W = C_o M^{-1} C_o^T`` and ``q = C_o M^{-1} f - b_o`` for the rows ``C_o`` of
``[G; N; T; L]`` in the local order, and ``v = M^{-1}(f + C^T z)``, computed by
:mod:`contactlab.models.delassus` from the rows' CSR arrays, against the same
quantities from ``scipy.sparse`` products (independent arithmetic): equal to
rounding (1e-12 relative), and ``W`` exactly symmetric (the kernel accumulates
``W_ij`` and ``W_ji`` with the same operations).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.collision import collide
from contactlab.models.fc_route import local_step
from contactlab.problem import StepProblem
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")


def _reference(problem: StepProblem, step) -> tuple[np.ndarray, np.ndarray]:
    """``W`` (dense) and ``q`` by sparse products with ``M^{-1}`` formed explicitly."""
    C = sp.vstack([problem.G, problem.N, problem.T, problem.L], format="csr")[step.order]
    Minv = sp.diags(1.0 / problem.M.diagonal())
    b = np.concatenate([problem.g, problem.c, np.zeros(problem.T.shape[0]), problem.l])
    W = (C @ Minv @ C.T).toarray()
    q = C @ (Minv @ problem.f) - b[step.order]
    return W, q


def _check(problem: StepProblem) -> None:
    step = local_step(problem, "ccp", "soc")
    assert step.dinv is not None  # the compiled path
    W_ref, q_ref = _reference(problem, step)
    W = step.fc.W.toarray()
    scale = np.abs(W_ref).max()
    assert np.max(np.abs(W - W_ref)) <= 1e-12 * scale
    assert np.array_equal(W, W.T)
    assert np.max(np.abs(step.fc.q - q_ref)) <= 1e-12 * max(np.abs(q_ref).max(), 1.0)
    z = np.random.default_rng(1).standard_normal(step.order.size)
    C = sp.vstack([problem.G, problem.N, problem.T, problem.L], format="csr")[step.order]
    v_ref = (problem.f + C.T @ z) / problem.M.diagonal()
    v = step.velocities(problem.f, z)
    assert np.max(np.abs(v - v_ref)) <= 1e-12 * np.abs(v_ref).max()
    # the velocity form: the rows in the local order by one compiled pass are the rows of
    # the stacked matrix picked by scipy (the same numbers, exactly), q as above
    factored = local_step(problem, "ccp", "soc", factor=True)
    C_o, dinv = factored.fc.factor
    assert np.array_equal(factored.order, step.order)
    assert (C_o != C).nnz == 0 and np.array_equal(C_o.indptr, C.indptr)
    assert np.array_equal(dinv, 1.0 / problem.M.diagonal())
    assert np.max(np.abs(factored.fc.q - q_ref)) <= 1e-12 * max(np.abs(q_ref).max(), 1.0)
    assert np.array_equal(factored.velocities(problem.f, z), v)


def test_pile_step_local_problem_matches_sparse_products() -> None:
    """A 12-box pile after landing: contacts between boxes and with the ground."""
    scene = get_scenario("box-pile").build(n=12)
    sim = Simulator(scene, "maximal", "box-friction", "pgs", dt=0.005)
    state = sim.initial_state()
    for i in range(120):
        state, _ = sim.step(state, i)
    contacts = collide(scene, state.E)
    problem = sim.formulation.assemble(state, 0.005, contacts)
    assert problem.n_contacts > 12
    _check(problem)


def test_bilateral_and_limit_rows_local_problem_matches_sparse_products() -> None:
    """Random sparse rows G, N, T, L (bodies of six columns) and a random diagonal mass."""
    rng = np.random.default_rng(0)
    nb, nc, mg, ml = 7, 9, 4, 3
    n = 6 * nb

    def rows(m: int) -> sp.csr_matrix:
        out = np.zeros((m, n))
        for i in range(m):
            for body in rng.choice(nb, size=2, replace=False):
                out[i, 6 * body : 6 * body + 6] = rng.standard_normal(6)
        return sp.csr_matrix(out)

    N = rows(nc)
    T = sp.csr_matrix(np.repeat(N.toarray(), 2, axis=0) * rng.standard_normal((2 * nc, 1)))
    problem = StepProblem(
        h=0.01,
        M=sp.diags(rng.uniform(0.5, 3.0, n)),
        f=rng.standard_normal(n),
        v=np.zeros(n),
        G=rows(mg),
        g=rng.standard_normal(mg),
        N=N,
        c=rng.standard_normal(nc),
        T=T,
        mu=np.full(nc, 0.4),
        L=rows(ml),
        l=rng.standard_normal(ml),
    )
    _check(problem)
