"""The friction natural map is zero exactly at maximal dissipation (contactlab.models.friction_map).

Facts: the projections onto the box, the disc and the 4-direction pyramid
(the diamond ``|y_1| + |y_2| <= r``) are the analytic nearest points; at the
solutions of three independent models (Stewart--Trinkle by Lemke for the
pyramid, box friction by PGS at 1e-10 for the box, Anitescu--Hart with the
exact cone by interior point for the disc) the natural map of their friction
is zero to the solvers' accuracy (Lemke is exact to round-off, hence 1e-10
m/s; PGS's residual 1e-10 N s times Delassus entries of a few 1/kg, 1e-8 m/s;
Clarabel through cvxpy at its default tolerances: measured 1.8e-7 m/s at 1 m/s,
hence 1e-6); with no friction at all it is the slip velocity itself;
and Staggered Projections' record of what its steps produce is within its
tolerance where it stops on its criterion.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from model_problems import box_on_plane

from contactlab.models import make_model
from contactlab.models.common import MassInverse
from contactlab.models.friction_map import natural_map, project, tangent_weight

sys.path.insert(0, str(Path(__file__).parent))
from test_staggered_convergence import sliding_stack_step  # noqa: E402


def test_projections_are_the_nearest_points() -> None:
    z = np.array([[2.0, 0.0], [1.0, 1.0], [0.2, -0.3], [3.0, 4.0]])
    r = np.ones(4)
    np.testing.assert_allclose(
        project(z, r, "box"), [[1.0, 0.0], [1.0, 1.0], [0.2, -0.3], [1.0, 1.0]]
    )
    np.testing.assert_allclose(
        project(z, r, "soc"), [[1.0, 0.0], [2**-0.5, 2**-0.5], [0.2, -0.3], [0.6, 0.8]]
    )
    # the diamond |y1| + |y2| <= 1: (3, 4) projects onto the edge x + y = 1 at its end (0, 1)
    np.testing.assert_allclose(
        project(z, r, "pyramid", 4),
        [[1.0, 0.0], [0.5, 0.5], [0.2, -0.3], [0.0, 1.0]],
        atol=1e-12,
    )
    assert np.all(project(z, np.zeros(4), "pyramid", 4) == 0.0)


def _natural(problem, solution, cone: str, k: int = 4) -> np.ndarray:  # type: ignore[no-untyped-def]
    d = problem
    w = tangent_weight(d.T, MassInverse(problem.M))
    u = np.asarray(d.T @ solution.v)
    return natural_map(solution.lambda_T, u, d.mu * solution.lambda_N, w, cone, k)


@pytest.mark.parametrize(
    ("model", "solver", "options", "cone", "atol"),
    [
        ("stewart-trinkle", "lemke", {}, "pyramid", 1e-10),
        ("box-friction", "pgs", {"solver_tol": 1e-10}, "box", 1e-8),
        ("anitescu-hart", "cvxpy:clarabel", {"cone": "soc"}, "soc", 1e-6),
    ],
)
def test_zero_at_maximal_dissipation(
    model: str, solver: str, options: dict[str, object], cone: str, atol: float
) -> None:
    p = sliding_stack_step()  # the top cube slides at 1 m/s, the others stick
    s = make_model(model, solver, **options).solve(p, {})
    assert s.status == "optimal"
    assert np.max(np.abs(s.lambda_T)) > 1e-3  # friction carries load
    assert np.max(np.abs(_natural(p, s, cone))) < atol  # [m/s]


def test_no_friction_leaves_the_slip() -> None:
    p = box_on_plane(v0=(0.5, 0.0))
    s = make_model("frictionless", "lemke").solve(p, {})
    d = p
    u = np.asarray(d.T @ s.v)
    w = tangent_weight(d.T, MassInverse(p.M))
    # y = 0 with a radius wide enough to hold y - u / w: e = w (0 - (-u / w)) = u
    e = natural_map(np.zeros_like(u), u, np.full(p.n_contacts, 1e3), w, "soc")
    np.testing.assert_allclose(e.ravel(), u, atol=1e-12)
    assert np.max(np.abs(u)) > 0.4  # the box slides at about 0.5 m/s


def test_staggered_stop_is_a_solution_of_the_coupled_problem() -> None:
    """Where Anderson-accelerated Staggered Projections stops on its test, velocities and the
    friction's natural map are within the tolerance too (measured: 2e-9 and 2e-9)."""
    s = make_model("staggered-projections", "osqp", coupled=None).solve(sliding_stack_step(), {})
    produced = s.report.produced
    assert s.status == "optimal" and produced.shape == (s.report.history.size, 2)
    assert np.all(produced[-1] <= 1e-6)
