"""The dense direct finish of the compiled pile step
(:func:`contactlab.maximal._pile_kernels._dense_finish`, Lemke's method on an island's
dense ``W``).

Facts:

* on box-friction problems with redundant contacts (twelve contacts on four bodies:
  ``W`` of 36 rows and rank at most 24) built around a known solution, the finish
  returns impulses that solve the LCP: ``z_n >= 0``, ``|z_t| <= mu z_n`` and the natural
  map of the LCP (``W = C M^-1 C^T`` and ``q`` formed here from the rows) within 1e-9 of
  the scale of ``q`` (a solution; with ``W`` singular the impulses are not unique, so
  they are not compared with ``z*``);
* along a 50-cube drop (fall, landing, start of rest), solved island by island, every
  step with contacts is ``optimal`` and the natural map of the general path's LCP
  (``W``, ``q`` from ``BoxFriction``'s own rows) is within the tolerance on every
  island; before the dense finish one landing step of this run (128 contacts) stopped
  at the sweep cap in its largest island.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contactlab.maximal import _pile_kernels as K
from contactlab.models.box_rows import box_rows
from contactlab.models.common import MassInverse
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")


def _natural3(W: np.ndarray, q: np.ndarray, mu3: np.ndarray, z: np.ndarray) -> float:
    """``max |z - Pi(z - w)|`` with rows per contact (normal, two tangents)."""
    w = W @ z + q
    zn = z[0::3]
    out = np.abs(zn - np.maximum(zn - w[0::3], 0.0)).max()
    bound = mu3[0::3] * np.maximum(zn, 0.0)
    for d in (1, 2):
        zt = z[d::3]
        out = max(out, np.abs(zt - np.clip(zt - w[d::3], -bound, bound)).max())
    return float(out)


def _problem(seed: int) -> dict[str, Any]:
    """Twelve contacts between four bodies and the world, random rows, and ``q`` chosen
    so that a known impulse ``z*`` (some contacts off, some sliding, some sticking) solves
    the box-friction LCP."""
    rng = np.random.default_rng(seed)
    nb, nc = 4, 12
    n = 6 * nb
    m3 = 3 * nc
    a = rng.integers(0, nb, nc)
    b = np.array([-1 if rng.random() < 0.4 else int(rng.integers(0, nb)) for _ in range(nc)])
    b[b == a] = -1
    J = rng.normal(size=(m3, 12))
    dinv = rng.uniform(0.5, 2.0, n)
    ca = np.repeat(6 * a, 3).astype(np.int64)
    cb = np.repeat(np.where(b >= 0, 6 * b, n), 3).astype(np.int64)
    J[:, 6:][cb == n] = 0.0
    DJ = np.empty_like(J)
    C = np.zeros((m3, n))
    for r in range(m3):
        DJ[r, :6] = dinv[ca[r] : ca[r] + 6] * J[r, :6]
        C[r, ca[r] : ca[r] + 6] += J[r, :6]
        if cb[r] < n:
            DJ[r, 6:] = dinv[cb[r] : cb[r] + 6] * J[r, 6:]
            C[r, cb[r] : cb[r] + 6] += J[r, 6:]
    W = C @ np.diag(dinv) @ C.T
    mu3 = np.full(m3, 0.5)
    z = np.zeros(m3)
    w = np.zeros(m3)
    for i in range(nc):
        kind = i % 3
        if kind == 0:  # separating
            w[3 * i] = rng.uniform(0.1, 1.0)
            continue
        z[3 * i] = rng.uniform(0.5, 1.5)
        if kind == 1:  # sticking
            z[3 * i + 1 : 3 * i + 3] = rng.uniform(-0.3, 0.3, 2) * z[3 * i]
        else:  # sliding along +t1, inside the bound in t2
            z[3 * i + 1] = 0.5 * z[3 * i]
            w[3 * i + 1] = -rng.uniform(0.1, 1.0)
            z[3 * i + 2] = 0.1 * z[3 * i]
    q = w - W @ z
    assert _natural3(W, q, mu3, z) <= 1e-12 * np.abs(q).max()
    return {
        "J": J, "DJ": DJ, "ca": ca, "cb": cb, "rhs": -q, "mu3": mu3, "f": np.zeros(n),
        "dinv": dinv, "W": W, "q": q
    }  # fmt: skip


def _assert_solves_general_lcp(record: Any, tol: float) -> None:
    """The step's impulses meet ``z_n >= 0``, ``|z_t| <= mu z_n`` and the natural map of the
    general path's LCP (``W``, ``q`` from ``BoxFriction``'s own rows, sparse) within
    ``tol``, up to the summation order of ``W z``."""
    problem, solution = record.problem, record.solution
    nc = record.metrics["n_contacts"]
    rows = box_rows(problem)
    minv = MassInverse(problem.M)
    W = minv.delassus(rows.C)
    q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
    assert record.contacts is not None
    mu = np.asarray(record.contacts.mu, dtype=float)
    zn, zt = solution.lambda_N, solution.lambda_T
    assert zn.min() >= 0.0
    bound = np.repeat(mu * zn, 2)
    assert np.all(np.abs(zt) <= bound * (1.0 + 1e-15))
    z = np.concatenate([zn, zt])
    w = W @ z + q
    natural = max(
        np.abs(zn - np.maximum(zn - w[:nc], 0.0)).max(),
        np.abs(zt - np.clip(zt - w[nc:], -bound, bound)).max(),
    )
    # the kernel's residual and this one sum W z in different orders
    assert natural <= tol + 1e-12 * abs(W).max() * np.abs(z).sum()


@pytest.mark.parametrize("seed", range(6))
def test_dense_finish_solves_box_friction_with_redundant_contacts(seed: int) -> None:
    p = _problem(seed)
    W, q, mu3 = p["W"], p["q"], p["mu3"]
    assert np.linalg.matrix_rank(W) <= 24 < W.shape[0]  # redundant contacts
    z = np.zeros(W.shape[0])
    solved, _ = K._dense_finish(
        p["J"], p["DJ"], p["ca"], p["cb"], p["rhs"], mu3, p["f"], p["dinv"], z, 1e-9
    )
    assert solved
    scale = np.abs(q).max()
    assert z[0::3].min() >= 0.0
    bound = mu3[0::3] * z[0::3]
    for d in (1, 2):
        assert np.all(np.abs(z[d::3]) <= bound * (1.0 + 1e-12))
    assert _natural3(W, q, mu3, z) <= 1e-9 * scale


def _drop_steps_solved(n: int, steps: int) -> int:
    """Steps the ``n``-cube box-pile drop by the compiled pile step (islands and finishes
    on), asserts each step with contacts optimal and solving the general path's LCP
    (:func:`_assert_solves_general_lcp`), and returns the number of such steps."""
    scene = get_scenario("box-pile").build(n=n, seed=0)
    sim = Simulator(scene, "maximal", "box-friction", "pgs")
    assert sim.compiled is not None and sim.compiled.islands and sim.compiled.finish
    model: Any = sim.model
    tol = model.tol
    state = sim.initial_state()
    checked = 0
    for i in range(steps):
        state, record = sim.step(state, i)
        if record.metrics["n_contacts"] == 0:
            continue
        assert record.metrics["status"] == "optimal", i
        _assert_solves_general_lcp(record, tol)
        checked += 1
    return checked


def test_every_landing_step_of_a_50_cube_drop_is_solved_island_by_island() -> None:
    assert _drop_steps_solved(n=50, steps=60) >= 30


def _island_lcp(d: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``W = C M^-1 C^T`` and ``q = C M^-1 f - b`` of a stored island, formed here from its
    rows as a dense matrix over the island's bodies (the world's slot ``6 nb`` dropped)."""
    J, ca, cb, dinv = d["J"], d["ca"], d["cb"], d["dinv"]
    n = dinv.shape[0]
    C = np.zeros((J.shape[0], n + 6))
    for r in range(J.shape[0]):
        C[r, ca[r] : ca[r] + 6] += J[r, :6]
        C[r, cb[r] : cb[r] + 6] += J[r, 6:]
    C = C[:, :n]
    W = C @ np.diag(dinv) @ C.T
    q = C @ (dinv * d["f"]) - d["rhs"]
    return W, q


def _stored_island() -> dict[str, np.ndarray]:
    """The largest island of a landing step of the 200-cube drop (``box-pile``, n = 200,
    seed 0, within its first 100 steps): 45 contacts, 135 rows, ``W`` of rank 66; with its
    warm start.  Gauss--Seidel and the subspace finish stop at the
    10000-sweep cap on it (natural map 2.1e-6), and Lemke's method without re-solves of
    its tableau went astray on a degenerate basis."""
    path = Path(__file__).parent / "data" / "drop200_island135.npz"
    with np.load(path) as data:
        return {k: data[k] for k in data.files}


def test_stored_degenerate_island_is_solved_by_the_dense_finish() -> None:
    d = _stored_island()
    W, q = _island_lcp(d)
    assert np.linalg.matrix_rank(W) < 3 * W.shape[0] // 4  # redundant contacts (66 of 135)
    z = np.zeros(W.shape[0])
    solved, _ = K._dense_finish(
        d["J"], d["DJ"], d["ca"], d["cb"], d["rhs"], d["mu3"], d["f"], d["dinv"], z, 1e-6
    )
    assert solved
    assert z[0::3].min() >= 0.0
    bound = d["mu3"][0::3] * z[0::3]
    for k in (1, 2):
        assert np.all(np.abs(z[k::3]) <= bound * (1.0 + 1e-12))
    # the walk's re-solves from the data bring it to the backend's accuracy, 1e-9 of the
    # scale of q (measured 3e-12); W and q formed here sum in another order than the kernel
    assert _natural3(W, q, d["mu3"], z) <= 1e-9 * max(1.0, np.abs(q).max())


def test_stored_degenerate_island_is_solved_from_its_warm_start() -> None:
    """The island's step (sweeps, subspace finish, dense finish) ends optimal, its natural
    map within the default tolerance on ``W`` and ``q`` formed independently."""
    d = _stored_island()
    W, q = _island_lcp(d)
    z = d["z"].copy()
    v = np.empty(d["dinv"].shape[0] + 6)
    K._velocity(d["J"], d["ca"], d["cb"], d["f"], d["dinv"], z, v)
    tol = 1e-6
    status, _, residual = K._solve(
        d["J"], d["DJ"], d["A"], d["ca"], d["cb"], d["rhs"], d["diag"], d["mu3"], d["unit"],
        d["up"], d["f"], d["dinv"], v, z, 1.0, tol, 10000, 8, True,
    )  # fmt: skip
    assert status == K.OPTIMAL
    assert residual <= tol
    # the kernel's residual and this one sum W z in different orders
    assert _natural3(W, q, d["mu3"], z) <= tol + 1e-12 * np.abs(W).max() * np.abs(z).sum()


def test_every_step_of_a_200_cube_100_step_drop_is_solved() -> None:
    """Every step of the 200-cube drop over 100 steps (81 with contacts; landing), solved
    island by island with the subspace and dense finishes, is optimal, with ``z_n >= 0``,
    ``|z_t| <= mu z_n`` and the natural map of the general path's LCP (``W``, ``q`` from
    ``BoxFriction``'s own rows, sparse) within the tolerance; before the dense finish took
    the ``lemke`` backend's walk one step stopped at the sweep cap (three before the
    dense finish)."""
    assert _drop_steps_solved(n=200, steps=100) >= 75  # 81 steps with contacts measured


def test_stored_large_island_is_solved_by_the_block_finish() -> None:
    """An island of 321 rows (107 contacts) of the settling 200-cube drop (``box-pile``,
    n = 200, seed 0, in its first second), above the dense finish's limit, with its warm
    start: before the block finish its step stopped at the 10000 cap (natural map 8e-6);
    with it the step is optimal and the natural map of the LCP, on ``W`` and ``q`` formed
    here, is within the default tolerance."""
    path = Path(__file__).parent / "data" / "drop200_island321.npz"
    with np.load(path) as data:
        d = {k: data[k] for k in data.files}
    assert d["rhs"].shape[0] > K.DENSE_ROWS
    W, q = _island_lcp(d)
    z = d["z"].copy()
    v = np.empty(d["dinv"].shape[0] + 6)
    K._velocity(d["J"], d["ca"], d["cb"], d["f"], d["dinv"], z, v)
    tol = 1e-6
    status, _, residual = K._solve(
        d["J"], d["DJ"], d["A"], d["ca"], d["cb"], d["rhs"], d["diag"], d["mu3"], d["unit"],
        d["up"], d["f"], d["dinv"], v, z, 1.0, tol, 10000, 8, True,
    )  # fmt: skip
    assert status == K.OPTIMAL
    assert residual <= tol
    assert z[0::3].min() >= 0.0
    bound = d["mu3"][0::3] * z[0::3]
    for k in (1, 2):
        assert np.all(np.abs(z[k::3]) <= bound * (1.0 + 1e-12))
    # the kernel's residual and this one sum W z in different orders
    assert _natural3(W, q, d["mu3"], z) <= tol + 1e-12 * np.abs(W).max() * np.abs(z).sum()


def test_block_finish_solves_the_worst_contact_and_keeps_the_twists() -> None:
    """One call of the block finish on the stored 321-row island at its warm start
    (natural map 8e-6 at the worst contact): the block around the worst contact is solved
    with the other impulses held, so afterwards that contact's rows are within the
    tolerance on ``W`` and ``q`` formed here (every other row of its block too, with the
    impulses outside the block unchanged), and the twists the kernel moved block by block
    are ``M^-1 (f + C^T z)`` of the new impulses."""
    path = Path(__file__).parent / "data" / "drop200_island321.npz"
    with np.load(path) as data:
        d = {k: data[k] for k in data.files}
    W, q = _island_lcp(d)
    mu3 = d["mu3"]
    z0 = d["z"].copy()

    def contact_residuals(z: np.ndarray) -> np.ndarray:
        w = W @ z + q
        zn = z[0::3]
        out = np.abs(zn - np.maximum(zn - w[0::3], 0.0))
        bound = mu3[0::3] * np.maximum(zn, 0.0)
        for k in (1, 2):
            zt = z[k::3]
            out = np.maximum(out, np.abs(zt - np.clip(zt - w[k::3], -bound, bound)))
        return out

    before = contact_residuals(z0)
    worst = int(np.argmax(before))
    tol = 1e-6
    assert before[worst] > 5.0 * tol
    z = z0.copy()
    v = np.empty(d["dinv"].shape[0] + 6)
    K._velocity(d["J"], d["ca"], d["cb"], d["f"], d["dinv"], z, v)
    solved = K._block_finish(d["J"], d["DJ"], d["ca"], d["cb"], d["rhs"], mu3, d["dinv"], v, z, tol)
    assert solved >= 1
    after = contact_residuals(z)
    slack = 1e-12 * np.abs(W).max() * np.abs(z).sum()  # summation order
    assert after[worst] <= tol + slack
    moved = np.flatnonzero(np.any((z != z0).reshape(-1, 3), axis=1))
    assert worst in moved or before[worst] <= tol
    assert len(moved) <= K.BLOCKS * K.BLOCK_CONTACTS
    if K.BLOCKS == 1:  # later blocks may share bodies with an earlier one
        assert np.all(after[moved] <= tol + slack)
    # the twists: v = M^-1 (f + C^T z), formed densely here
    n = d["dinv"].shape[0]
    C = np.zeros((z.shape[0], n + 6))
    for r in range(z.shape[0]):
        C[r, d["ca"][r] : d["ca"][r] + 6] += d["J"][r, :6]
        C[r, d["cb"][r] : d["cb"][r] + 6] += d["J"][r, 6:]
    v_ref = d["dinv"] * (d["f"] + C[:, :n].T @ z)
    assert np.allclose(v[:n], v_ref, rtol=1e-12, atol=1e-12 * np.abs(v_ref).max())
