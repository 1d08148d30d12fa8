"""Anitescu--Hart single-QP friction: primal = dual, every backend, and the lift-off artefact."""

from __future__ import annotations

import numpy as np
import pytest
from model_problems import G_ACC, box_on_plane, random_contact_problem

import solvers
from contactlab.models import make_model
from contactlab.models.base import model_class

PROBLEMS = [
    random_contact_problem(20, bodies=3, contacts=5, mu=0.5),
    random_contact_problem(21, bodies=3, contacts=5, joints=2, limits=1, mu=0.3),
]
CLARABEL = "cvxpy:clarabel"


@pytest.mark.parametrize("k", [4, 8])
@pytest.mark.parametrize("index", range(len(PROBLEMS)))
def test_primal_and_dual_pyramid_have_the_same_velocities(k: int, index: int) -> None:
    p = PROBLEMS[index]
    ref = make_model("anitescu-hart", CLARABEL, form="dual", directions=k).solve(p, {})
    for form in ("primal", "dual"):
        for name in model_class("anitescu-hart").compatible_solvers(form=form):
            sol = make_model("anitescu-hart", name, form=form, directions=k).solve(p, {})
            tol = 200 * solvers.get_backend(name).tolerance.accuracy
            assert sol.status in ("optimal", "optimal_inaccurate"), (name, form, sol.status)
            assert np.max(np.abs(sol.v - ref.v)) < tol, (name, form)


@pytest.mark.parametrize("index", range(len(PROBLEMS)))
def test_primal_and_dual_exact_cone_agree(index: int) -> None:
    p = PROBLEMS[index]
    a = make_model("anitescu-hart", CLARABEL, form="primal", cone="soc").solve(p, {})
    b = make_model("anitescu-hart", CLARABEL, form="dual", cone="soc").solve(p, {})
    # interior-point accuracy (clarabel's declared 1e-6, times the conditioning)
    np.testing.assert_allclose(a.v, b.v, atol=2e-5)
    # impulses: normal ones agree and the friction lies in the cone
    np.testing.assert_allclose(a.lambda_N, b.lambda_N, atol=2e-5)
    for s in (a, b):
        lt = s.lambda_T.reshape(-1, 2)
        assert np.all(np.linalg.norm(lt, axis=1) <= p.mu * s.lambda_N + 1e-7)


def test_velocity_is_the_force_balance() -> None:
    """M v = f + N^T lambda_N + T^T lambda_T + ... for the recovered impulses (both forms)."""
    p = PROBLEMS[1]
    for form in ("primal", "dual"):
        for cone in ("pyramid", "soc"):
            s = make_model("anitescu-hart", CLARABEL, form=form, cone=cone).solve(p, {})
            rhs = p.f + p.G.T @ s.lambda_G + p.N.T @ s.lambda_N + p.T.T @ s.lambda_T
            rhs = rhs + p.L.T @ s.lambda_L
            np.testing.assert_allclose(p.M @ s.v, rhs, atol=1e-6)


@pytest.mark.parametrize("cone", ["pyramid", "soc"])
def test_sliding_box_lifts_off_at_mu_times_its_speed(cone: str) -> None:
    """The convex relaxation: N v+ = mu |T v+| at every contact, and the analytic step.

    A box sliding along t1 (aligned with a pyramid direction) with speed v0:
    minimising 1/2 m |v|^2 - f.v subject to v_z >= mu v_x gives
    v_x = (v0 - mu g h) / (1 + mu^2) and v_z = mu v_x.
    """
    mu, v0, h = 0.4, 1.0, 0.01
    p = box_on_plane(mu=mu, v0=(v0, 0.0), h=h)
    s = make_model("anitescu-hart", CLARABEL, cone=cone, solver_tol=1e-10).solve(p, {})
    vt = (p.T @ s.v).reshape(-1, 2)
    np.testing.assert_allclose(p.N @ s.v, mu * np.linalg.norm(vt, axis=1), rtol=1e-6)
    vx = (v0 - mu * G_ACC * h) / (1 + mu * mu)
    np.testing.assert_allclose(s.v, [0, 0, 0, vx, 0, mu * vx], atol=1e-7)


def test_pushed_box_relaxed_acceleration() -> None:
    """Pushed above mu m g from rest: v_x = h (F - mu m g) / (m (1 + mu^2)), v_z = mu v_x."""
    m, mu, h, F = 2.0, 0.5, 0.01, 15.0
    p = box_on_plane(m=m, mu=mu, h=h, force=(F, 0.0))
    s = make_model("anitescu-hart", "lemke", form="primal").solve(p, {})
    vx = h * (F - mu * m * G_ACC) / (m * (1 + mu * mu))
    np.testing.assert_allclose(s.v, [0, 0, 0, vx, 0, mu * vx], atol=1e-10)
