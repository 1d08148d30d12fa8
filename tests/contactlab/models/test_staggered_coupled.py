"""Staggered Projections from a coupled start (``coupled``, contactlab.models.staggered).

A fixed point of the alternation satisfies the normal complementarity with
the friction maximally dissipative in its set of radius ``mu lambda_N``: the
Coulomb law with the model's cone (Stewart--Trinkle for the pyramid, box
friction for the box).  Solved coupled (``ipm``), that point is confirmed by
the alternation in two outer iterations (the first check of the stopping
test comes after the second contact QP), and the step is the alternation's:

- on a landed pile step its velocities are those of the alternation alone run
  to its stopping test, and of an independent solution of the law
  (Stewart--Trinkle by Lemke for the pyramid, Coulomb by ``nsgs`` for the exact
  cone on the sliding stack), within the
  tolerance the alternation's own stopping test leaves: ``TOL_V`` = 1e-5 m/s as
  in ``test_staggered_convergence.py`` (OSQP's declared accuracy; the test's
  relative 1e-6 of the impulse scale is below 1e-6 m/s for these 1 kg
  boxes).  Measured: 1e-7 to 5.4e-6 m/s;
- the friction natural map it records at the returned iterate is within the
  tolerance of the stopping test, the stop is on the test (the history's last
  change ``<= tol``), not on the cap;
- a coupled solve that fails (capped) leaves the step to the alternation
  alone: the same iterates as ``coupled=None``, to the last bit.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from model_problems import random_contact_problem

from contactlab.collision import collide
from contactlab.errors import ConfigurationError
from contactlab.models import make_model
from contactlab.models.common import MassInverse, pyramid_to_tangent
from contactlab.models.frictionless import ContactQP
from contactlab.models.staggered import (
    proximal_contact,
    tangent_to_pyramid,
)
from contactlab.problem import StepProblem
from contactlab.simulator import Simulator

sys.path.insert(0, str(Path(__file__).parent))
from test_staggered_convergence import TOL_V, landed_pile, sliding_stack_step  # noqa: E402


def pile_steps(n: int, count: int) -> list[StepProblem]:
    """``count`` successive step problems of ``n`` boxes landed 0.6 s (box friction steps them)."""
    h = 0.005
    scene, state = landed_pile(n, 0.6, h)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=h, model_options={"solver_tol": 1e-8}
    )
    out = []
    for _ in range(count):
        E, _ = sim.formulation.maximal(state)
        problem = sim.formulation.assemble(state, h, collide(scene, E))
        out.append(problem)
        cache: dict[str, Any] = dict(state.cache)
        s = sim.model.solve(problem, cache)
        new = sim.formulation.advance(state, s, h)
        state = replace(new, cache={**new.cache, **cache, **s.cache})
    return out


@pytest.fixture(scope="module")
def pile() -> list[StepProblem]:
    return pile_steps(10, 2)


def converged_on_its_test(s: Any) -> None:
    assert s.status == "optimal"
    assert s.report.history[-1] <= 1e-6  # the stopping test, relative change
    assert np.all(s.report.produced[-1] <= 1e-6)  # velocity change and friction natural map


def test_pyramid_pile_step_confirmed_in_two_outer_iterations(pile: list[StepProblem]) -> None:
    for problem in pile:
        assert problem.n_contacts >= 30
        st = make_model("stewart-trinkle", "lemke").solve(problem, {})
        alone = make_model("staggered-projections", "qpsolvers:clarabel", coupled=None)
        coupled = make_model("staggered-projections", "qpsolvers:clarabel")
        a, c = alone.solve(problem, {}), coupled.solve(problem, {})
        converged_on_its_test(a)
        converged_on_its_test(c)
        assert c.report.coupled["used"] and c.report.coupled["status"] == "optimal"
        assert c.outer_iterations == 2 < 10 <= a.outer_iterations  # measured: 13-14 alone
        assert np.max(np.abs(c.v - a.v)) < TOL_V
        assert np.max(np.abs(c.v - st.v)) < TOL_V


def test_box_pile_steps_by_pgs_match_the_alternation(pile: list[StepProblem]) -> None:
    """Box cone, inner PGS at 1e-7 as in the benchmark; reference: the alternation alone.

    (The box-friction LCP by PGS stops at its sweep cap on these steps at 1e-8 and
    1e-10, and at 1e-6 is 2e-5 m/s off; measured.)"""
    for problem in pile:
        options: dict[str, Any] = {"cone": "box", "solver_tol": 1e-7}
        a = make_model("staggered-projections", "pgs", coupled=None, **options).solve(problem, {})
        c = make_model("staggered-projections", "pgs", **options).solve(problem, {})
        converged_on_its_test(a)
        converged_on_its_test(c)
        assert c.report.coupled["used"]
        assert c.outer_iterations == 2 < 10 <= a.outer_iterations  # measured: 14-17 alone
        assert np.max(np.abs(c.v - a.v)) < TOL_V  # measured: 1.4e-6, 5.4e-6


def test_sliding_stack_soc_agrees_with_coulomb() -> None:
    """The exact cone: the Coulomb law by nsgs (another backend) as reference, ipm's start."""
    p = sliding_stack_step()
    ref = make_model("coulomb", "nsgs", solver_tol=1e-10).solve(p, {})
    s = make_model("staggered-projections", "cvxpy:clarabel", cone="soc").solve(p, {})
    converged_on_its_test(s)
    assert ref.status == "optimal" and s.outer_iterations == 2
    assert np.max(np.abs(s.lambda_T)) > 1e-3  # friction carries load, the top cube slides
    assert np.max(np.abs(s.v - ref.v)) < TOL_V


@pytest.mark.parametrize("seed", [30, 31, 32])
@pytest.mark.parametrize("form", ["dual", "primal"])
def test_joints_and_limits_match_stewart_trinkle(seed: int, form: str) -> None:
    """Random problems with joints and a limit (``test_model_staggered.py``'s): the coupled
    start carries ``lambda_G`` and ``lambda_L``; both forms stop at 2 on Lemke's velocities
    within 1e-6 of their scale (the stopping test's relative tolerance; measured 3e-9)."""
    p = random_contact_problem(seed, bodies=3, contacts=5, joints=2, limits=1, mu=0.4)
    st = make_model("stewart-trinkle", "lemke").solve(p, {})
    s = make_model("staggered-projections", "osqp", solver_tol=1e-10, form=form).solve(p, {})
    converged_on_its_test(s)
    assert st.status == "optimal" and s.outer_iterations == 2 and s.report.coupled["used"]
    assert np.max(np.abs(s.v - st.v)) < 1e-6 * np.max(np.abs(st.v))


def test_proximal_contact_qp_keeps_the_normal_impulses_of_the_coupled_point(
    pile: list[StepProblem],
) -> None:
    """The contact QP's normal impulses are not unique on a face resting on four corners.

    At the coupled point (friction frozen at its ``lambda_T``), Clarabel, which takes
    no start, returns the same velocities (to 1e-8 m/s; measured 5e-10) with the
    normal impulses redistributed by over 1e-3 N s (measured 9e-3 to 1.4e-2, against
    0.2-0.4 N s), which moves the friction's set; with the proximal term the
    minimiser is unique and is the coupled point's: within Clarabel's declared
    accuracy 1e-5 (measured 2e-6 to 3e-6 N s), velocities within ``TOL_V``.
    """
    for problem in pile:
        c = make_model("coulomb", "ipm", cone="box", solver_tol=1e-9).solve(problem, {})
        assert c.status == "optimal"
        model = make_model("staggered-projections", "qpsolvers:clarabel", cone="box")
        minv = MassInverse(problem.M)
        contact_qp = ContactQP(model, problem, "dual", minv)
        rows = contact_qp.rows
        lam = np.zeros(rows.m)
        lam[rows.slices["N"]] = c.lambda_N
        f = problem.f + problem.T.T @ c.lambda_T
        plain = contact_qp.solve(f, (c.v, lam))
        eps = 1e-3 * float(np.mean(contact_qp.P.diagonal()))
        prox = proximal_contact(model, contact_qp, f, (c.v, lam), eps)
        assert np.max(np.abs(plain.v - c.v)) < 1e-8
        assert np.max(np.abs(plain.lam - lam)) > 1e-3
        assert np.max(np.abs(prox.lam - lam)) < 1e-5
        assert np.max(np.abs(prox.v - c.v)) < TOL_V


def test_failed_coupled_solve_falls_back_to_the_alternation(pile: list[StepProblem]) -> None:
    """A coupled solve stopped at its cap (one interior-point iteration, no Newton finish:
    with the finish, whose cap is its own, the pyramid law converges from there) leaves the
    step to the alternation alone, exactly."""
    problem = pile[0]
    alone = make_model("staggered-projections", "osqp", coupled=None).solve(problem, {})
    capped = make_model(
        "staggered-projections", "osqp", coupled_max_iter=1, coupled_settings={"newton": 0}
    ).solve(problem, {})
    record = capped.report.coupled
    assert not record["used"] and record["status"] == "max_iterations"
    assert capped.outer_iterations == alone.outer_iterations
    np.testing.assert_array_equal(capped.v, alone.v)
    assert capped.status == alone.status


def test_status_is_the_alternations_own() -> None:
    """With one outer iteration the stopping test is never evaluated: capped, though the
    coupled solve met its tolerance."""
    p = sliding_stack_step()
    s = make_model("staggered-projections", "osqp", max_outer=1).solve(p, {})
    assert s.report.coupled["status"] == "optimal" and s.report.coupled["used"]
    assert s.status == "max_iterations" and s.outer_iterations == 1


@pytest.mark.parametrize("k", [4, 6, 8])
def test_pyramid_decomposition_inverts_the_directions(k: int) -> None:
    """beta >= 0 on two neighbouring directions, summing back to y, with sum(beta) <= r for y
    in the k-gon of circumradius r (its vertices r d_j have sum 1 r)."""
    rng = np.random.default_rng(k)
    y = rng.normal(size=(50, 2))
    beta = tangent_to_pyramid(y.ravel(), k).reshape(-1, k)
    assert np.all(beta >= 0.0) and np.all(np.count_nonzero(beta, axis=1) <= 2)
    np.testing.assert_allclose(pyramid_to_tangent(beta.ravel(), k), y.ravel(), atol=1e-12)
    a = 2 * np.pi * np.arange(k) / k
    vertices = np.column_stack([np.cos(a), np.sin(a)])
    np.testing.assert_allclose(tangent_to_pyramid(vertices.ravel(), k).reshape(k, k), np.eye(k),
                               atol=1e-12)  # fmt: skip


def test_bad_coupled_options_name_the_option() -> None:
    with pytest.raises(ConfigurationError, match="option coupled='pgs'.*fit"):
        make_model("staggered-projections", "osqp", coupled="pgs")  # no pyramid Coulomb
    with pytest.raises(ConfigurationError, match="option coupled must be"):
        make_model("staggered-projections", "osqp", coupled=1)
    with pytest.raises(ConfigurationError, match="option coupled_tol"):
        make_model("staggered-projections", "osqp", coupled_tol=0.0)
