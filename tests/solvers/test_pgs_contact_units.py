"""``pgs`` solves a strongly coupled box-friction contact as one unit.

The stored LCP (``data/tumble_box_step40.npz``): step 40 of ``scenarios/data/tumble.xml``
(reduced coordinates, ``box-friction``, h = 5 ms), the hinged paddle striking the ground
with four corner contacts.  The paddle's hinge is one coordinate, so ``W = u u'`` (rank one)
and the contacts slide far from the hinge: ``mu |W_nt| = 1.90`` against ``W_nn = 0.243``.
Row by row, a normal update that closes ``w_n`` is undone by the friction update that
follows (its bound ``mu z_n`` moves ``w_n`` four to eight times as far), the next normal update
drops ``z_n`` to zero, and Gauss--Seidel cycles: on the run, 356 of 400 steps ended at the
sweep cap with residuals up to 0.1.

Facts: the rank-one structure and the coupling are in the data; row-wise sweeps stay at a
residual of order 0.1; ``pgs`` (contact units) meets the tolerance, and its ``w`` equals the
analytic solution: sliding at the bound, ``u'z`` is fixed by ``w_n = 0`` of the leading
contact, ``W z = -(q_n / u_n) u``.  The exact local solve satisfies the box-friction
conditions on random positive definite blocks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, FrictionBlocks, solve

pytest.importorskip("numba")

TOL = 1e-6


def stored() -> dict[str, np.ndarray]:
    d = np.load(Path(__file__).parent / "data" / "tumble_box_step40.npz")
    return {k: d[k] for k in d.files}


def natural_map(W: np.ndarray, q: np.ndarray, z: np.ndarray, d: dict[str, np.ndarray]) -> float:
    """``max |z - Pi(z - w)|`` with the box bounds following the normal impulses."""
    w = W @ z + q
    lo, hi = d["lo"].copy(), d["hi"].copy()
    for n, t, mu in zip(d["normal"], d["tangent"], d["mu"], strict=True):
        lo[t], hi[t] = -mu * max(z[n], 0.0), mu * max(z[n], 0.0)
    return float(np.max(np.abs(z - np.clip(z - w, lo, hi))))


def test_paddle_block_is_rank_one_and_friction_dominates() -> None:
    d = stored()
    W = d["W"]
    s = np.linalg.svd(W, compute_uv=False)
    assert s[1] <= 1e-12 * s[0]
    for n, t, mu in zip(d["normal"], d["tangent"], d["mu"], strict=True):
        assert mu * np.max(np.abs(W[n, t])) > 4.0 * W[n, n]


def test_row_wise_sweeps_cycle() -> None:
    """The previous update order (every row its own unit) does not approach a solution."""
    from solvers.backends.pgs_kernel import pgs_sweeps

    d = stored()
    W, q = d["W"], d["q"]
    A = sp.csr_matrix(W)
    n = q.size
    owner = np.full(n, -1, dtype=np.int64)
    mu_row = np.zeros(n)
    for k, t, mu in zip(d["normal"], d["tangent"], d["mu"], strict=True):
        owner[t], mu_row[t] = k, mu
    rows = np.flatnonzero(np.diag(W) > 0).astype(np.int64)
    z = np.zeros(n)
    pgs_sweeps(
        A.indptr.astype(np.int64),
        A.indices.astype(np.int64),
        A.data,
        np.diag(W).copy(),
        q,
        d["lo"],
        d["hi"],
        owner,
        mu_row,
        rows,
        np.full(rows.size, -1, dtype=np.int64),
        np.full(rows.size, -2, dtype=np.int64),
        np.zeros((rows.size, 9)),
        np.zeros(rows.size),
        z,
        1.0,
        1000,
    )
    assert natural_map(W, q, z, d) > 1e-2


def test_pgs_meets_the_tolerance_at_the_analytic_solution() -> None:
    d = stored()
    W, q = d["W"], d["q"]
    blocks = FrictionBlocks(d["normal"], d["tangent"], d["mu"], cone="box")
    res = solve(LCP(sp.csr_matrix(W), q, d["lo"], d["hi"], blocks), "pgs", tol=TOL)
    assert res.status == "optimal"
    z = res.x
    assert natural_map(W, q, z, d) <= TOL
    # W = u u': u'z is one number, fixed where the leading contact closes (w_n = 0)
    k = int(np.argmax(np.diag(W)))
    u = W[:, k] / np.sqrt(W[k, k])
    n0 = int(d["normal"][0])
    expected = -(q[n0] / u[n0]) * u
    assert np.allclose(W @ z, expected, rtol=0.0, atol=1e-9 * np.max(np.abs(expected)) + TOL)


def test_local_solve_meets_the_box_conditions() -> None:
    """On 2,000 random SPD blocks (with mu from 0.1 to 1.5) a consistent active set is
    found, and it satisfies the local problem's natural map to rounding."""
    from solvers.backends.pgs_kernel import local_contact_solve

    rng = np.random.default_rng(7)
    S, b = np.zeros((3, 3)), np.zeros(3)
    for m in (2, 3):
        for _ in range(1000):
            B = rng.normal(size=(m, m))
            A = B @ B.T + 0.05 * np.eye(m)
            r = rng.normal(size=m)
            mu = rng.uniform(0.1, 1.5)
            A3 = np.zeros((3, 3))
            A3[:m, :m] = A
            r3 = np.zeros(3)
            r3[:m] = r
            x = np.zeros(3)
            assert local_contact_solve(A3.ravel(), r3, m, mu, x, S, b)
            x = x[:m]
            w = A @ x + r
            lo = np.r_[0.0, np.full(m - 1, -mu * x[0])]
            hi = np.r_[np.inf, np.full(m - 1, mu * x[0])]
            scale = np.max(np.abs(r)) + np.max(np.abs(A)) * np.max(np.abs(x))
            assert np.max(np.abs(x - np.clip(x - w, lo, hi))) <= 1e-10 * scale
