"""The compiled maximal contact step (:mod:`contactlab.maximal.compiled_step`).

Facts:

* it poses the general path's problem: at every step of a pile's drop, landing and
  rest, its rows give the Delassus matrix ``W = C M^-1 C^T``, the vector
  ``q = C M^-1 f - b`` and the 3x3 blocks that choose the exactly solved contacts
  of the general path (``BoxFriction`` on the formulation's own assembly) to 1e-12;
* its solution solves that problem: ``v = M^-1 (f + C^T z)`` and the natural-map
  residual of the box-friction LCP at ``z`` is within the solver's tolerance on every
  step it reports ``optimal``;
* without its subspace finish and its islands (``finish = False``, ``islands = False``)
  it is the same Gauss--Seidel (same
  row order, projections, local solves, warm start and stopping rule) with ``W z``
  read from the bodies' twists: along a 12-cube
  drop (fall, landing, rest; 100 steps at the default tolerance), from each state
  the compiled step gives the general step's next state to 1e-10.  The two evaluate
  ``W z`` by sums in different orders, so their iterates differ by rounding, which a
  whole run carries forward through the pile's dynamics (2e-15 after the first
  contacts, 7e-11 to 1.6e-10 after 100 steps depending on the BLAS kernels); two
  whole runs are held to 1e-8.  The first two facts do not depend on that;
* it is taken exactly for the set-ups in its scope, and a step it cannot take goes
  through the general path with the same warm starts.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.maximal import _pile_kernels as K
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS, _midpoint_free_momentum
from contactlab.models.box_rows import box_rows
from contactlab.models.common import MassInverse
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

#: agreement of one step from the same state (E and phi) [m, rad/s, m/s]
AGREE = 1e-10
#: agreement of two whole runs of 100 steps, each from its own states
RUN_AGREE = 1e-8
#: agreement of the posed problems, relative to the largest entry
POSED = 1e-12


def _pair(scene, **kw):  # noqa: ANN001, ANN202
    args = {"formulation": "maximal", "model": "box-friction", "solver": "pgs", **kw}
    fast = Simulator(scene, **args)
    general = Simulator(scene, formulation_options={"compiled": False}, **args)
    return fast, general


def test_pile_steps_equal_the_general_paths() -> None:
    """A 12-cube drop (fall, landing, rest; 100 steps): from each state of the general
    path's run, the compiled step gives the general step's E and phi within 1e-10, with
    the same contacts, status and metrics; and the two runs, each from its own states,
    stay within 1e-8 of each other."""
    scene = get_scenario("box-pile").build(n=12, seed=0)
    fast, general = _pair(scene)
    assert fast.compiled is not None and general.compiled is None
    # plain Gauss--Seidel to the cap on the whole step's contacts, the general path's method
    # (the subspace finish of the steps it has not solved in its first sweeps:
    # tests/contactlab/test_pile_subspace.py; the islands: tests/contactlab/test_pile_islands.py)
    fast.compiled.finish = False
    fast.compiled.islands = False
    a, b = fast.initial_state(), general.initial_state()
    step_worst, run_worst, most = 0.0, 0.0, 0
    for i in range(100):
        one, ro = fast.step(b, i)  # the compiled step from the general path's state
        b, rb = general.step(b, i)
        a, _ = fast.step(a, i)
        assert ro.metrics["n_contacts"] == rb.metrics["n_contacts"]
        assert ro.metrics["status"] == rb.metrics["status"]
        assert set(ro.metrics) == set(rb.metrics)
        most = max(most, ro.metrics["n_contacts"])
        step_worst = max(step_worst, np.abs(one.E - b.E).max(), np.abs(one.phi - b.phi).max())
        run_worst = max(run_worst, np.abs(a.E - b.E).max(), np.abs(a.phi - b.phi).max())
        for key in ("kinetic_energy", "potential_energy", "linear_momentum_z", "penetration"):
            assert ro.metrics[key] == pytest.approx(rb.metrics[key], rel=1e-8, abs=1e-10)
    assert most >= 30  # the cubes landed on the ground and on each other
    assert step_worst <= AGREE
    # each run carries its own rounding through the pile's dynamics (7e-11 to 1.6e-10 after
    # 100 steps, depending on the BLAS kernels of the general path's products)
    assert run_worst <= RUN_AGREE


def _general_lcp(problem):  # noqa: ANN001, ANN202
    """``W``, ``q`` and the rows of the general path's box-friction LCP (rows [N; T])."""
    rows = box_rows(problem)
    minv = MassInverse(problem.M)
    W = minv.delassus(rows.C).toarray()
    q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
    return W, q, rows, minv


def _compiled_rows(sim, state, contacts):  # noqa: ANN001, ANN202
    """The compiled step's ``C`` ([N; T], dense), ``M^-1``, ``f``, ``b`` and 3x3 blocks."""
    mdiag = sim.formulation.mass_diagonal
    dinv = 1.0 / mdiag.reshape(-1)
    f = _midpoint_free_momentum(
        np.ascontiguousarray(mdiag), np.ascontiguousarray(state.phi),
        np.ascontiguousarray(state.E), np.asarray(sim.scene.gravity, dtype=float), sim.dt,
        MIDPOINT_ITERATIONS,
    )  # fmt: skip
    J, _, A, _, _ = K._rows(
        contacts.body_a, contacts.body_b, np.ascontiguousarray(state.E), contacts.point,
        contacts.normal, dinv,
    )  # fmt: skip
    nc, nb = len(contacts), sim.scene.n_bodies
    C = np.zeros((3 * nc, 6 * nb))
    for i in range(nc):
        for d in range(3):
            row = i if d == 0 else nc + 2 * i + d - 1
            for side, body in enumerate((contacts.body_a[i], contacts.body_b[i])):
                if body >= 0:
                    C[row, 6 * body : 6 * body + 6] = J[3 * i + d, 6 * side : 6 * side + 6]
    h, d = sim.dt, contacts.distance
    b = np.zeros(3 * nc)
    b[:nc] = np.where(d > 0.0, -d / h, np.minimum(0.2 / h * (-d), sim.scene.contact.max_correction))
    return C, dinv, f, b, A


def test_posed_problem_and_solution_are_the_general_paths() -> None:
    """Along a compiled run: W, q and the blocks within 1e-12 of the general problem's;
    v = M^-1 (f + C^T z) and the LCP's natural map at z within the tolerance."""
    scene = get_scenario("box-pile").build(n=12, seed=1)
    fast, _ = _pair(scene)
    tol = fast.model.tol
    state = fast.initial_state()
    checked = optimal = 0
    for i in range(90):
        before = state
        state, record = fast.step(state, i)
        contacts = record.contacts
        if contacts is None or len(contacts) == 0:
            continue
        problem, solution = record.problem, record.solution
        W, q, rows, minv = _general_lcp(problem)
        C, dinv, f, b, A = _compiled_rows(fast, before, contacts)
        W_fast = (C * dinv) @ C.T
        q_fast = C @ (dinv * f) - b
        scale_w, scale_q = np.abs(W).max(), max(np.abs(q).max(), 1.0)
        assert np.abs(W_fast - W).max() <= POSED * scale_w
        assert np.abs(q_fast - q).max() <= POSED * scale_q
        nc = len(contacts)
        for k in range(nc):  # the contact blocks the exact local solves use
            idx = [k, nc + 2 * k, nc + 2 * k + 1]
            assert np.abs(A[k].reshape(3, 3) - W[np.ix_(idx, idx)]).max() <= POSED * scale_w
        z = np.concatenate([solution.lambda_N, solution.lambda_T])
        v = minv.vec(problem.f + rows.C.T @ z)
        assert np.abs(v - solution.v).max() <= 1e-12 * max(np.abs(v).max(), 1.0)
        if solution.status == "optimal":
            w = W @ z + q
            zn, zt = z[:nc], z[nc:]
            bound = np.repeat(scene.contact.mu * np.maximum(zn, 0.0), 2)
            natural = max(
                np.abs(zn - np.maximum(zn - w[:nc], 0.0)).max(),
                np.abs(zt - np.clip(zt - w[nc:], -bound, bound)).max(),
            )
            # the kernel's residual and this one sum W z differently: rounding of ||W z||
            assert natural <= tol + 1e-12 * (np.abs(W).max() * np.abs(z).sum())
            optimal += 1
        checked += 1
    assert checked >= 60 and optimal >= 50


def test_scope() -> None:
    """The compiled step is taken for free bodies with box friction by pgs on their
    defaults, and for nothing else."""
    from contactlab.runspec import RunSpec, build_simulator

    pile = get_scenario("box-pile").build(n=4)
    assert Simulator(pile).compiled is not None  # the scene's default route
    assert build_simulator(RunSpec("box-pile", {"n": 4})).compiled is not None
    assert Simulator(get_scenario("box-stack").build(n=2)).compiled is not None
    outside: list[dict[str, Any]] = [
        {"formulation_options": {"compiled": False}},
        {"formulation_options": {"coriolis": "rotated"}},
        {"formulation_options": {"integrator": "implicit-euler"}},
        {"model_options": {"cone": "disc"}},
        {"model_options": {"row_order": "rows"}},
        {"model_options": {"solver_settings": {"omega": 1.2}}},
        {"solver": "osqp"},
        {"solver": "nsgs"},
        {"model": "frictionless"},
    ]
    for kw in outside:
        args: dict[str, Any] = {
            "formulation": "maximal", "model": "box-friction", "solver": "pgs", **kw
        }  # fmt: skip
        assert Simulator(pile, **args).compiled is None, kw
    bouncy = get_scenario("box-pile").build(n=4)
    from dataclasses import replace

    bouncy = replace(bouncy, contact=replace(bouncy.contact, restitution=0.5))
    assert Simulator(bouncy, "maximal", "box-friction", "pgs").compiled is None
    chain = get_scenario("chain-floor").build()
    assert Simulator(chain, "maximal", "box-friction", "pgs").compiled is None
    assert (
        Simulator(pile, "maximal", "box-friction", "pgs", collide=lambda s, E: None).compiled
        is None
    )


def test_a_step_it_cannot_take_goes_through_the_general_path(monkeypatch) -> None:  # noqa: ANN001
    """A step the kernel declines (a decoupled row) is the general path's step, and the
    next compiled step warm-starts from the general step's impulses."""
    scene = get_scenario("box-pile").build(n=6, seed=2)
    fast, general = _pair(scene)
    # the general path's method (plain Gauss--Seidel on the whole step's contacts)
    fast.compiled.finish = False
    fast.compiled.islands = False
    a, b = fast.initial_state(), general.initial_state()
    original = K.contact_step
    declined: list[bool] = []

    def decline_every_fourth(*args):  # noqa: ANN002, ANN202
        out = original(*args)
        if len(declined) < 1000 and args[6].shape[0] > 0 and len(declined) % 4 == 0:
            out[-1][K.I_STATUS] = K.DECOUPLED
        declined.append(out[-1][K.I_STATUS] == K.DECOUPLED)
        return out

    monkeypatch.setattr(K, "contact_step", decline_every_fourth)
    worst = 0.0
    for i in range(70):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        worst = max(worst, np.abs(a.E - b.E).max(), np.abs(a.phi - b.phi).max())
    assert sum(declined) >= 5
    assert worst <= AGREE
