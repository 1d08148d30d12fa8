"""Staggered Projections against Stewart--Trinkle (Lemke) on random contact problems.

Both solve the same conditions with the pyramid (a fixed point of the two
projections satisfies the normal complementarity and the KKT conditions of
the friction QP, which are the Stewart--Trinkle conditions with the cone row's
multiplier as slack), so their velocities agree; the staggered iteration
stops on a relative M^-1-norm change of 1e-6.
"""

from __future__ import annotations

import numpy as np
import pytest
from model_problems import box_on_plane, random_contact_problem

import solvers
from contactlab.models import make_model
from contactlab.models.base import model_class
from contactlab.models.common import pyramid_angles
from contactlab.problem import StepProblem, StepSolution

SEEDS = [30, 31, 32]


def problem(seed: int) -> StepProblem:
    return random_contact_problem(seed, bodies=3, contacts=5, joints=2, limits=1, mu=0.4)


def inside_pyramid(s: StepSolution, p: StepProblem, k: int, tol: float) -> bool:
    """lambda_T,i in the regular k-gon of circumradius mu lambda_N,i (edge normals (2j+1) pi/k)."""
    a = (2 * np.arange(k) + 1) * np.pi / k
    normals = np.column_stack([np.cos(a), np.sin(a)])
    lt = s.lambda_T.reshape(-1, 2)
    support = (p.mu * s.lambda_N)[:, None] * np.cos(np.pi / k)
    return bool(np.all(lt @ normals.T <= support + tol))


def dissipation_gap(s: StepSolution, p: StepProblem, k: int | None) -> float:
    """Max over sliding contacts of |dissipation - the largest the cone allows|.

    Maximal dissipation: -lambda_T . v_t = mu lambda_N max_j (-d_j . v_t)
    (pyramid) or mu lambda_N |v_t| (exact cone).
    """
    vt = (p.T @ s.v).reshape(-1, 2)
    lt = s.lambda_T.reshape(-1, 2)
    sliding = np.linalg.norm(vt, axis=1) > 1e-6
    if k is None:
        best = np.linalg.norm(vt, axis=1)
    else:
        cos, sin = pyramid_angles(k)
        best = np.max(-(vt[:, :1] * cos + vt[:, 1:] * sin), axis=1)
    gap = np.abs(-np.sum(lt * vt, axis=1) - p.mu * s.lambda_N * best)
    return float(np.max(gap[sliding], initial=0.0))


@pytest.mark.parametrize("seed", SEEDS)
def test_staggered_projections_converge_to_the_stewart_trinkle_solution(seed: int) -> None:
    p = problem(seed)
    st = make_model("stewart-trinkle", "lemke").solve(p, {})
    sp_ = make_model("staggered-projections", "osqp", coupled=None, solver_tol=1e-10).solve(p, {})
    assert st.status == "optimal" and sp_.status == "optimal"
    assert 1 < sp_.outer_iterations < 100
    scale = np.max(np.abs(st.v))
    assert np.max(np.abs(sp_.v - st.v)) < 1e-4 * scale
    for s in (st, sp_):
        assert inside_pyramid(s, p, 4, 1e-6)
        assert np.all(s.lambda_N >= -1e-7)
    assert dissipation_gap(st, p, 4) < 1e-8
    assert dissipation_gap(sp_, p, 4) < 1e-5


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_exact_cone_friction_is_maximally_dissipative(seed: int) -> None:
    p = problem(seed)
    s = make_model(
        "staggered-projections", "cvxpy:clarabel", coupled=None, cone="soc", solver_tol=1e-8
    ).solve(p, {})
    assert s.status == "optimal"
    lt = s.lambda_T.reshape(-1, 2)
    assert np.all(np.linalg.norm(lt, axis=1) <= p.mu * s.lambda_N + 1e-6)
    assert dissipation_gap(s, p, None) < 1e-4


def test_warm_start_from_the_previous_friction() -> None:
    p = problem(SEEDS[0])
    model = make_model("staggered-projections", "osqp", coupled=None, solver_tol=1e-10)
    cache: dict = {}
    cold = model.solve(p, cache)
    warm = model.solve(p, cache)
    assert warm.outer_iterations <= 2 < cold.outer_iterations
    np.testing.assert_allclose(warm.v, cold.v, atol=1e-6)


def test_iteration_cap_is_reported() -> None:
    s = make_model("staggered-projections", "osqp", coupled=None, max_outer=2).solve(
        problem(SEEDS[0]), {}
    )
    assert s.status == "max_iterations" and s.outer_iterations == 2


def test_stewart_trinkle_slack_is_the_sliding_speed() -> None:
    """For a slide along a pyramid direction, s = -min_j d_j . v_t = |v_t|."""
    p = box_on_plane(v0=(1.0, 0.0))
    s = make_model("stewart-trinkle", "lemke").solve(p, {})
    np.testing.assert_allclose(s.report.sliding_speed, s.v[3], rtol=1e-9)


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_staggered_box_and_disc_cones_match_the_box_friction_lcp(seed: int) -> None:
    """A fixed point with the box (disc) friction QP satisfies the box (disc) friction LCP."""
    p = problem(seed)
    for cone, lcp_cone, solver in (("box", "box", "pgs"), ("soc", "disc", "cvxpy:clarabel")):
        sp_ = make_model(
            "staggered-projections", solver, coupled=None, cone=cone, solver_tol=1e-8
        ).solve(p, {})
        lcp = make_model("box-friction", "pgs", cone=lcp_cone).solve(p, {})
        assert sp_.status == "optimal" and lcp.status == "optimal"
        assert np.max(np.abs(sp_.v - lcp.v)) < 1e-4 * np.max(np.abs(lcp.v))


def test_staggered_projections_agree_across_backends() -> None:
    p = problem(SEEDS[1])
    ref = make_model("stewart-trinkle", "lemke").solve(p, {})
    fitting = set(model_class("staggered-projections").compatible_solvers())
    picks = ["osqp", "qpsolvers:clarabel", "qpsolvers:proxqp", "qpsolvers:daqp", "cvxpy:piqp"]
    for name in [n for n in picks if n in fitting]:
        s = make_model("staggered-projections", name, coupled=None).solve(p, {})
        tol = 200 * solvers.get_backend(name).tolerance.accuracy + 1e-5
        assert s.status == "optimal", (name, s.status)
        assert np.max(np.abs(s.v - ref.v)) < tol, (name, np.max(np.abs(s.v - ref.v)))
