"""Maximal-dissipation, Signorini and self-consistency metrics on analytic cases.

- A box sliding on the plane under ``coulomb`` (exact cone): every sliding contact's
  friction is ``-mu lambda_N s`` (s the unit slip), so the dissipation violation is zero to
  the solver's tolerance; under the box cone (``|lambda_k| <= mu lambda_N`` per axis) a slip
  at angle ``theta`` to the first tangent saturates the corner ``-mu lambda_N (1, 1)`` and
  the violation is ``mu lambda_N ||(1 - cos theta, 1 - sin theta)||`` exactly.
- A sphere sliding under Anitescu--Hart (exact cone) separates at ``N v = mu ||T v||`` (the
  convex relaxation's spurious normal velocity): the Signorini metric
  ``|lambda_N (N v - c)|`` is ``lambda_N mu ||T v||``, while ``coulomb`` keeps it at the
  solver's tolerance.
- Self-consistency of a sliding box (constant deceleration ``mu g``): the gap between the
  runs at ``h`` and ``h/8`` grows as ``(7/16) mu g h t`` while both slide.
- With torsional friction the metrics use the wide cone: a spinning sphere under
  ``coulomb`` dissipates maximally, and a torsional impulse beyond ``mu_t lambda_N``
  shows in the cone violation.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import metrics as M
from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.consistency import self_consistency
from contactlab.scene import ContactParams, Scene
from contactlab.shapes import Box, Plane, Sphere
from contactlab.simulator import Simulator

G = 9.81


def _box(vx: float, vy: float, mu: float, h: float) -> Scene:
    body, _ = body_from_shape("box", Box(half_extents=np.array([0.1, 0.1, 0.05])), mass=2.0)
    return Scene(
        "box",
        (body,),
        static_shapes=(Plane(),),
        initial_E=se3.make_transform(None, [0.0, 0.0, 0.05])[None],
        initial_phi=np.array([[0.0, 0.0, 0.0, vx, vy, 0.0]]),
        contact=ContactParams(mu=mu, stabilization=0.0),
        dt=h,
    )


def _sphere(phi: list[float], mu: float, h: float) -> Scene:
    body, _ = body_from_shape("ball", Sphere(radius=0.1), mass=1.0)
    return Scene(
        "ball",
        (body,),
        static_shapes=(Plane(),),
        initial_E=se3.make_transform(None, [0.0, 0.0, 0.1])[None],
        initial_phi=np.array([phi]),
        contact=ContactParams(mu=mu, stabilization=0.0),
        dt=h,
    )


def test_sliding_box_obeys_maximal_dissipation_under_coulomb() -> None:
    h, mu = 1e-3, 0.4
    sim = Simulator(
        _box(1.0, 0.5, mu, h),
        "maximal",
        "coulomb",
        "nsgs",
        dt=h,
        model_options={"solver_tol": 1e-12, "max_iter": 100000},
    )
    state = sim.initial_state()
    for j in range(20):
        state, record = sim.step(state, j)
        row = record.metrics
        assert row["n_sliding"] == 4
        scale = mu * record.solution.lambda_N.max()
        assert row["dissipation_violation"] <= 1e-8 * scale
        assert row["cone_violation"] <= 1e-8 * scale


@pytest.mark.parametrize("theta", [np.pi / 6, np.pi / 3])
def test_box_cone_violates_maximal_dissipation_by_the_corner_gap(theta: float) -> None:
    h, mu = 1e-3, 0.4
    scene = _box(np.cos(theta), np.sin(theta), mu, h)
    sim = Simulator(
        scene,
        "maximal",
        "coulomb",
        "nsgs",
        dt=h,
        model_options={"cone": "box", "solver_tol": 1e-12, "max_iter": 100000},
    )
    state, record = sim.step(sim.initial_state(), 0)
    sol, problem = record.solution, record.problem
    # the tangent basis of the plane contacts: the slip angle in that basis
    slip = (problem.T @ sol.v).reshape(-1, 2)
    lam_t = sol.lambda_T.reshape(-1, 2)
    assert np.allclose(np.abs(lam_t), mu * sol.lambda_N[:, None], rtol=1e-8)  # the corner
    angle = np.arctan2(np.abs(slip[:, 1]), np.abs(slip[:, 0]))
    gap = np.hypot(1 - np.cos(angle), 1 - np.sin(angle)) * mu * sol.lambda_N
    assert record.metrics["dissipation_violation"] == pytest.approx(gap.max(), rel=1e-6)
    assert gap.max() > 0.1 * mu * sol.lambda_N.max()


def test_anitescu_hart_spurious_normal_velocity_shows_in_the_signorini_metric() -> None:
    h, mu = 1e-3, 0.3
    scene = _sphere([0.0, 0.0, 0.0, 2.0, 0.0, 0.0], mu, h)
    out = {}
    for model, options in (("anitescu-hart", {"cone": "soc"}), ("coulomb", {})):
        sim = Simulator(
            scene,
            "maximal",
            model,
            "nsgs",
            dt=h,
            model_options={"solver_tol": 1e-12, "max_iter": 100000, **options},
        )
        _, record = sim.step(sim.initial_state(), 0)
        sol, problem = record.solution, record.problem
        un = float((problem.N @ sol.v - problem.c)[0])
        ut = float(np.linalg.norm(problem.T @ sol.v))
        out[model] = (record.metrics["normal_complementarity"], un, ut, sol.lambda_N[0])
    signorini, un, ut, lam = out["anitescu-hart"]
    assert un == pytest.approx(mu * ut, rel=1e-8)
    assert signorini == pytest.approx(lam * mu * ut, rel=1e-8)
    assert out["coulomb"][0] <= 1e-9 * signorini


def test_self_consistency_of_a_sliding_box_is_first_order() -> None:
    h, mu, steps = 4e-3, 0.3, 50  # slides 0.2 s (stops after 1 / (mu g) = 0.34 s)
    scene = _box(1.0, 0.0, mu, h)
    worst, gap = self_consistency(
        scene, "maximal", "coulomb", "nsgs", h, steps, {"solver_tol": 1e-12, "max_iter": 100000}
    )
    t = h * np.arange(steps + 1)
    expected = 7.0 / 16.0 * mu * G * h * t
    assert np.abs(gap - expected).max() <= 1e-6 * expected.max()
    assert worst == pytest.approx(expected.max(), rel=1e-6)


def test_wide_cone_metrics_with_torsion() -> None:
    pytest.importorskip("cvxpy")
    h, mu_t = 2e-3, 0.02
    scene = _sphere([0.0, 0.0, 20.0, 0.0, 0.0, 0.0], 0.5, h)
    sim = Simulator(
        scene,
        "maximal",
        "coulomb",
        "cvxpy:clarabel",
        dt=h,
        model_options={"torsion": mu_t, "solver_tol": 1e-10},
    )
    _, record = sim.step(sim.initial_state(), 0)
    row, sol = record.metrics, record.solution
    assert row["n_sliding"] == 1  # spinning counts as moving on the wide cone
    assert row["dissipation_violation"] <= 1e-7 * 0.5 * sol.lambda_N[0]
    # a torsional impulse 10 % beyond the cone: violation mu * 0.1 lambda_N
    sol.report.impulse[0, 0] *= 1.1
    bad = M.contact_metrics(record.problem, sol)
    assert bad["cone_violation"] == pytest.approx(0.5 * 0.1 * sol.lambda_N[0], rel=1e-6)
