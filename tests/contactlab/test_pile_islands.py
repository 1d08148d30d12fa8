"""The compiled pile step solves island by island
(:func:`contactlab.maximal._pile_kernels._solve_islands`).

Facts:

* the islands are the connected components of the bodies joined by contacts (the
  ground joins nothing): the kernel's grouping equals ``scipy``'s connected components
  of that graph, and each island's height order is the step's height order restricted
  to it;
* two box piles 10 m apart on one ground step, in one scene, as each steps in a scene
  of its own, to 1e-12 over 100 steps of 5 ms (fall, landing, rest; measured: equal bit
  for bit): an island is solved from its own data with its own stopping test.  Solved
  as one problem (``islands = False``) the whole step's stopping test stops the solver
  at another iterate and the piles move off their alone trajectories (measured: 8e-5 m
  after 100 steps; held to more than 1e-6);
* every island's solution meets the tolerance: along a 50-cube drop (fall, landing and
  start of rest; 60 steps), on every step the natural map of the general path's
  box-friction LCP (``W``, ``q`` from ``BoxFriction``'s own rows), restricted to each
  island's rows, is within the solver's tolerance on every step reported ``optimal``
  (as are the step's reported LCP residuals), and a step reported ``max_iterations`` has
  an island above it; the landing steps have many islands.  (One landing step of this
  drop, 128 contacts, stops at the sweep cap in its largest island, as the whole
  problem's solve does from the same state.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from contactlab.maximal import _pile_kernels as K
from contactlab.models.box_rows import box_rows
from contactlab.models.common import MassInverse
from contactlab.scenario import get_scenario
from contactlab.scene import Scene
from contactlab.simulator import Simulator

FarPiles = Callable[..., tuple[Scene, Scene, Scene]]  # conftest.far_apart_piles

pytest.importorskip("numba")
STEPS = 100


def trajectory(scene: Scene, islands: bool, option: bool = False) -> tuple[np.ndarray, int]:
    """Body transforms over the run (box friction by ``pgs``, the compiled step, the model
    option ``islands`` set to ``option``) and the most islands met in a step."""
    sim = Simulator(scene, "maximal", "box-friction", "pgs", model_options={"islands": option})
    assert sim.compiled is not None  # the compiled step takes the option too
    sim.compiled.islands = islands
    state = sim.initial_state()
    out = [state.E.copy()]
    most = 0
    for i in range(STEPS):
        state, record = sim.step(state, i)
        assert record.metrics["status"] == "optimal"
        most = max(most, int(sim.compiled.last_times["islands"]))
        out.append(state.E.copy())
    return np.array(out), most


def test_two_far_apart_piles_step_as_they_do_alone(far_piles: FarPiles) -> None:
    a, b, both = far_piles()
    (ta, _), (tb, _) = trajectory(a, True), trajectory(b, True)
    tab, most = trajectory(both, True, option=True)
    assert np.max(np.abs(ta[-1, :, :3, 3] - ta[0, :, :3, 3])) > 0.2  # the boxes fell and landed
    assert most >= 2
    assert np.max(np.abs(tab[:, :6] - ta)) <= 1e-12
    assert np.max(np.abs(tab[:, 6:] - tb)) <= 1e-12
    # solved as one problem, the shared stopping test moves the piles off their own runs
    whole, _ = trajectory(both, False)
    apart = max(np.max(np.abs(whole[:, :6] - ta)), np.max(np.abs(whole[:, 6:] - tb)))
    assert apart > 1e-6


def test_islands_are_the_connected_components() -> None:
    rng = np.random.default_rng(5)
    nb, nc = 40, 90
    a = rng.integers(0, nb, nc).astype(np.int64)
    b = rng.integers(-1, nb, nc).astype(np.int64)
    b[rng.random(nc) < 0.6] = -1  # most contacts on the ground
    b[b == a] = -1
    up = np.argsort(rng.random(nc), kind="mergesort").astype(np.int64)
    count, off, members, order = K.island_contacts(a, b, nb, up)
    joined = b >= 0
    graph = sp.coo_matrix((np.ones(joined.sum()), (a[joined], b[joined])), shape=(nb, nb))
    ncomp, comp = connected_components(graph, directed=False)
    assert ncomp >= count > 1
    rank = np.empty(nc, dtype=np.int64)
    rank[up] = np.arange(nc)
    seen = np.zeros(nc, dtype=bool)
    for k in range(count):
        mem = members[off[k] : off[k + 1]]
        assert np.all(np.diff(mem) > 0)
        seen[mem] = True
        # one component per island, and no contact of it elsewhere
        assert np.unique(comp[a[mem]]).size == 1
        assert np.sum(comp[a] == comp[a[mem[0]]]) == mem.size
        # the island's height order is the step's, restricted to the island
        assert sorted(order[off[k] : off[k + 1]]) == list(range(mem.size))
        assert np.all(np.diff(rank[mem[order[off[k] : off[k + 1]]]]) > 0)
    assert seen.all()


def _natural(W: np.ndarray, q: np.ndarray, mu: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Per contact, ``max |z - Pi(z - w)|`` over its three rows of the box-friction LCP
    (rows ``[N; T]``, bounds ``+-mu z_n`` on the T rows)."""
    nc = mu.shape[0]
    w = W @ z + q
    zn, zt = z[:nc], z[nc:]
    bound = np.repeat(mu * np.maximum(zn, 0.0), 2)
    normal = np.abs(zn - np.maximum(zn - w[:nc], 0.0))
    tangent = np.abs(zt - np.clip(zt - w[nc:], -bound, bound)).reshape(nc, 2).max(axis=1)
    return np.maximum(normal, tangent)


def test_every_island_meets_the_tolerance() -> None:
    scene = get_scenario("box-pile").build(n=50, seed=0)
    sim = Simulator(scene, "maximal", "box-friction", "pgs")
    assert sim.compiled is not None and sim.compiled.islands
    model: Any = sim.model
    tol = model.tol
    state = sim.initial_state()
    checked = most = capped = 0
    for i in range(60):
        state, record = sim.step(state, i)
        nc = record.metrics["n_contacts"]
        if nc == 0:
            continue
        problem, solution = record.problem, record.solution
        rows = box_rows(problem)
        minv = MassInverse(problem.M)
        W = minv.delassus(rows.C).toarray()
        q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
        contacts = record.contacts
        assert contacts is not None
        mu = np.asarray(contacts.mu, dtype=float)
        z = np.concatenate([solution.lambda_N, solution.lambda_T])
        per_contact = _natural(W, q, mu, z)
        a = np.asarray(contacts.body_a, dtype=np.int64)
        b = np.asarray(contacts.body_b, dtype=np.int64)
        nb = scene.n_bodies
        joined = b >= 0
        graph = sp.coo_matrix((np.ones(joined.sum()), (a[joined], b[joined])), shape=(nb, nb))
        _, comp = connected_components(graph, directed=False)
        island = np.unique(comp[a], return_inverse=True)[1]
        count = int(island.max()) + 1
        assert count == sim.compiled.last_times["islands"]
        most = max(most, count)
        # the kernel's residual and this one sum W z in different orders
        slack = 1e-12 * np.abs(W).max() * np.abs(z).sum()
        worst = np.array([per_contact[island == k].max() for k in range(count)])
        if record.metrics["status"] == "optimal":
            assert worst.max() <= tol + slack
            assert record.metrics["solver_residual"] <= tol
            checked += 1
        else:  # an island stopped at its cap: the step says so
            assert record.metrics["status"] == "max_iterations"
            assert worst.max() > tol
            capped += 1
    assert checked >= 30 and capped <= 2
    assert most >= 10  # the cubes land apart: many islands
