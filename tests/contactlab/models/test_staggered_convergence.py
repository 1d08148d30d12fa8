"""Staggered Projections stops on its own criterion in few outer iterations.

Unaccelerated, the alternation of the contact and friction QPs converges
linearly: on the sliding 3-cube stack below the friction impulse changes by a
factor of about 0.9 per outer iteration and a cold start needs 92-94 outer
iterations to meet the stopping test (relative change 1e-6 in the ``M^-1``
norm; 108 when scaled by the impulse alone), and stops 2e-6 m/s from the
fixed point (the slow contraction leaves about ten times the last change);
on a landed pile of boxes the tail contracts by about 0.96 per iteration
(measured on the 10-box pile).  Anderson acceleration of the outer
fixed point on the friction impulse, with the residual measured by the
velocity change it causes (``M^-1/2 T' dy``), needs a handful: 6 on the stack,
12-16 on the 10-box pile (measured).

Reference: Stewart--Trinkle solved by Lemke on the same step problem.  A fixed
point of Staggered Projections with the pyramid satisfies the Stewart--Trinkle
conditions, so the velocities agree.  Tolerance 1e-5 m/s: the declared
accuracy of OSQP (``solvers.get_backend("osqp").tolerance.accuracy``, 1e-5) at
velocities of order 1 m/s; the stopping test itself leaves an error of the
order of its last change, ``1e-6`` of the total impulse (about 0.6 sqrt(kg) m/s
on the pile, i.e. under 1e-6 m/s for its 1 kg boxes).  Measured: below 1e-8
m/s on the stack (accelerated), below 3e-6 m/s on the pile.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from model_problems import box_on_plane

from contactlab.collision import collide
from contactlab.models import make_model
from contactlab.problem import StepProblem
from contactlab.scenario import get_scenario
from contactlab.scene import State
from contactlab.simulator import Simulator

TOL_V = 1e-5  # [m/s], see the module docstring


def sliding_stack_step() -> StepProblem:
    """Second step of a 3-cube stack whose top cube slides at 1 m/s, 30 deg off the axes."""
    scene = get_scenario("box-stack").build(n=3)
    phi = scene.initial_phi.copy()
    az = np.radians(30.0)
    phi[2, 3:] = [np.cos(az), np.sin(az), 0.0]
    scene = replace(scene, initial_phi=phi)
    sim = Simulator(scene, "maximal", "stewart-trinkle", "lemke", dt=0.01)
    state, _ = sim.step(sim.initial_state(), 0)
    _, record = sim.step(state, 1)
    assert record.problem.n_contacts >= 12
    return record.problem


def reference(problem: StepProblem) -> np.ndarray:
    st = make_model("stewart-trinkle", "lemke").solve(problem, {})
    assert st.status == "optimal"
    return st.v


def test_acceleration_stops_the_sliding_stack_in_a_handful_of_outer_iterations() -> None:
    p = sliding_stack_step()
    v_ref = reference(p)
    plain = make_model(
        "staggered-projections", "osqp", coupled=None, accelerate=False, max_outer=300
    )
    s_plain = plain.solve(p, {})
    s = make_model("staggered-projections", "osqp", coupled=None).solve(p, {})
    assert s_plain.status == "optimal" and s_plain.outer_iterations > 80
    assert s.status == "optimal" and s.outer_iterations <= 12
    assert np.max(np.abs(s.v - v_ref)) < TOL_V
    assert np.max(np.abs(s_plain.v - v_ref)) < TOL_V
    # the recorded history ends on the stopping test
    history = s.report.history
    assert history.size == s.outer_iterations - 1 and history[-1] <= 1e-6


@pytest.mark.parametrize("solver", ["qpsolvers:clarabel", "qpsolvers:proxqp"])
def test_acceleration_holds_for_other_qp_backends(solver: str) -> None:
    model = make_model("staggered-projections", solver, coupled=None)
    p = sliding_stack_step()
    s = model.solve(p, {})
    assert s.status == "optimal" and s.outer_iterations <= 12
    assert np.max(np.abs(s.v - reference(p))) < TOL_V


def landed_pile(n: int, settle: float, h: float) -> tuple[Any, State]:
    scene = get_scenario("box-pile").build(n=n)
    # the general layers: plain Gauss--Seidel (the compiled pile step's subspace finish
    # lands the pile in another state)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=h, model_options={"solver_tol": 1e-4},
        formulation_options={"compiled": False},
    )  # fmt: skip
    state = sim.initial_state()
    for i in range(int(round(settle / h))):
        state, _ = sim.step(state, i)
    return scene, state


def test_pile_steps_stop_on_the_criterion_and_match_stewart_trinkle() -> None:
    """10 boxes landed for 0.6 s (the contact benchmark's pile), then 3 steps of h = 5 ms.

    Each step starts from the previous step's friction carried per persistent
    contact (the collision lists the pile's contacts in another order every
    step).  Measured: 12-16 outer iterations per step; unaccelerated, 80-100.
    """
    h = 0.005
    scene, state = landed_pile(10, 0.6, h)
    # Clarabel (interior point) solves every inner QP to its tolerance; OSQP takes as many
    # outer iterations but stops some friction QPs of the pile at its iteration cap
    sim = Simulator(
        scene,
        "maximal",
        "staggered-projections",
        "qpsolvers:clarabel",
        dt=h,
        model_options={"coupled": None},
    )
    for _ in range(3):
        E, _ = sim.formulation.maximal(state)
        problem = sim.formulation.assemble(state, h, collide(scene, E))
        assert problem.n_contacts >= 30
        cache = dict(state.cache)
        s = sim.model.solve(problem, cache)
        assert s.status == "optimal"
        assert s.outer_iterations <= 25
        assert s.report.history[-1] <= 1e-6  # stopped on its criterion, not on the cap
        assert np.max(np.abs(s.v - reference(problem))) < TOL_V
        new = sim.formulation.advance(state, s, h)
        state = replace(new, cache={**new.cache, **cache, **s.cache})


def test_warm_start_follows_contacts_listed_in_another_order() -> None:
    """Re-solving a pile step from its own result takes 2 outer iterations in any contact order."""
    h = 0.005
    scene, state = landed_pile(6, 0.6, h)
    sim = Simulator(
        scene, "maximal", "staggered-projections", "osqp", dt=h, model_options={"coupled": None}
    )
    E, _ = sim.formulation.maximal(state)
    contacts = collide(scene, E)
    problem = sim.formulation.assemble(state, h, contacts)
    cache: dict[str, Any] = {}
    first = sim.model.solve(problem, cache)
    order = np.random.default_rng(0).permutation(problem.n_contacts)
    # the contacts keep their identities in the new order (the simulator's contact ids)
    shuffled = replace(
        sim.formulation.assemble(state, h, contacts.select(order)),
        contact_ids=problem.contact_ids[order],
        contact_origin=problem.contact_origin[order],
    )
    again = sim.model.solve(shuffled, cache)
    assert first.status == again.status == "optimal"
    assert again.outer_iterations <= 2 < first.outer_iterations
    np.testing.assert_allclose(again.v, first.v, atol=TOL_V)


@pytest.mark.parametrize("gap", [2e-3, 1e-3])
def test_contacts_without_impulse_stop_at_once(gap: float) -> None:
    """A box sliding 1-2 mm above the ground, inside the contact margin, not touching.

    The step's fall (h^2 g = 1e-3 m) does not close the gap, so the contacts
    carry no impulse; OSQP returns rounding noise (1e-12 N s).  Measured
    against that noise the relative test would never be met (100 outer
    iterations); measured against the free momentum it stops at the first check.
    """
    p = box_on_plane(v0=(0.5, 0.0))
    p = replace(p, c=np.full(4, -gap / p.h))  # gap-aware rows: approach up to gap / h
    s = make_model("staggered-projections", "osqp", coupled=None).solve(p, {})
    assert s.status == "optimal" and s.outer_iterations == 2
    assert np.max(np.abs(s.lambda_N)) < 1e-9
    # free fall and free slide: v = M^-1 f
    np.testing.assert_allclose(s.v, np.linalg.solve(p.M.toarray(), p.f), atol=1e-9)
