"""Box friction: the LCP with friction blocks (PGS) against the fixed point on the bounds."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from model_problems import G_ACC, random_contact_problem

import solvers
from contactlab.models import make_model
from contactlab.models.base import model_class
from contactlab.problem import StepProblem, StepSolution

SEEDS = [40, 41, 42]


def problem(seed: int) -> StepProblem:
    return random_contact_problem(seed, bodies=3, contacts=5, joints=1, limits=1, mu=0.4)


def box_conditions(p: StepProblem, s: StepSolution) -> float:
    """Violation of ArtiSynth notes eq. (0.6): |lambda_T| <= mu lambda_N, sign, complementarity."""
    bound = np.repeat(p.mu * s.lambda_N, 2)
    vt = p.T @ s.v
    lt = s.lambda_T
    inside = np.maximum(np.abs(lt) - bound, 0.0)
    # at +bound the tangential velocity must be <= 0, at -bound >= 0, strictly inside = 0
    at_hi, at_lo = np.isclose(lt, bound, atol=1e-7), np.isclose(lt, -bound, atol=1e-7)
    wrong = np.where(at_hi, np.maximum(vt, 0), np.where(at_lo, np.maximum(-vt, 0), np.abs(vt)))
    wrong[bound <= 1e-8] = 0.0  # a separating contact: no friction, any tangential velocity
    return float(max(inside.max(initial=0.0), wrong.max(initial=0.0)))


@pytest.mark.parametrize("seed", SEEDS)
def test_lcp_and_fixed_point_give_the_same_velocities(seed: int) -> None:
    p = problem(seed)
    lcp = make_model("box-friction", "pgs").solve(p, {})
    fixed = make_model("box-friction", "osqp", solver_tol=1e-10).solve(p, {})
    assert lcp.status == "optimal" and fixed.status == "optimal"
    assert fixed.outer_iterations < 100
    np.testing.assert_allclose(fixed.v, lcp.v, atol=1e-6)
    assert box_conditions(p, lcp) < 1e-6
    assert box_conditions(p, fixed) < 1e-5


@pytest.mark.parametrize("seed", SEEDS)
def test_disc_projection_matches_the_cone_fixed_point(seed: int) -> None:
    p = problem(seed)
    pgs = make_model("box-friction", "pgs", cone="disc").solve(p, {})
    soc = make_model("box-friction", "cvxpy:clarabel", cone="disc", solver_tol=1e-8).solve(p, {})
    assert pgs.status == "optimal" and soc.status == "optimal"
    # clarabel reaches about 1e-6 on the cone; the fixed point adds its own 1e-6
    np.testing.assert_allclose(soc.v, pgs.v, atol=5e-5)
    lt = pgs.lambda_T.reshape(-1, 2)
    assert np.all(np.linalg.norm(lt, axis=1) <= p.mu * pgs.lambda_N + 1e-8)


def test_sliding_point_contact_disc_opposes_the_slip() -> None:
    """A point mass sliding at 1 m/s along (3, 4)/5: the disc friction is exactly opposite."""
    m, mu, h = 2.0, 0.3, 0.01
    M = sp.diags([1.0, 1.0, 1.0, m, m, m])
    rows = np.zeros((3, 6))
    rows[:, 3:] = np.eye(3)[[2, 0, 1]]
    v = np.array([0, 0, 0, 0.6, 0.8, 0.0])
    f = M @ v + h * np.array([0, 0, 0, 0, 0, -m * G_ACC])
    p = StepProblem(
        h=h,
        M=M,
        f=f,
        v=v,
        N=sp.csr_matrix(rows[:1]),
        c=np.zeros(1),
        T=sp.csr_matrix(rows[1:]),
        mu=np.array([mu]),
    )
    s = make_model("box-friction", "pgs", cone="disc").solve(p, {})
    speed = 1.0 - mu * G_ACC * h
    np.testing.assert_allclose(s.v, [0, 0, 0, 0.6 * speed, 0.8 * speed, 0], atol=1e-9)
    np.testing.assert_allclose(s.lambda_T, -mu * m * G_ACC * h * np.array([0.6, 0.8]), atol=1e-9)


def test_every_fitting_backend_gives_the_same_velocities_or_reports_failure() -> None:
    """Agreement within each backend's accuracy; never a wrong answer labelled optimal.

    A backend whose result fails the layer's residual check despite a success
    status (HiGHS 1.15 through qpsolvers once returned zeros as "found" here)
    makes the step ``numerical_error``.
    """
    p = problem(SEEDS[1])
    ref = make_model("box-friction", "pgs").solve(p, {})
    agreeing = []
    for name in model_class("box-friction").compatible_solvers():
        s = make_model("box-friction", name).solve(p, {})
        # the fixed point's 1e-6 relative stop on top of each backend's accuracy
        tol = 200 * solvers.get_backend(name).tolerance.accuracy + 1e-5
        error = float(np.max(np.abs(s.v - ref.v)))
        if s.status in ("optimal", "optimal_inaccurate"):
            assert error < tol, (name, error)
            agreeing.append(name)
        else:
            assert s.status == "numerical_error" and error > tol, (name, s.status, error)
    assert {"osqp", "pgs", "cvxpy:clarabel"} <= set(agreeing)
