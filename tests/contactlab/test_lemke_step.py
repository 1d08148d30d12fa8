"""The compiled Stewart--Trinkle step by Lemke (:mod:`contactlab.maximal.lemke_step`).

Facts:

* it poses the general route's LCP: from each state of a 4-cube drop (fall, landing,
  rest) the LCP solution it keeps solves the LCP the general model hands to the solver
  layer (``z >= 0``, natural-map residual below the backend's accuracy 1e-9 times
  ``max(1, |q|)``);
* it is the general route's step: a cube at rest on an incline, a cube sliding down a
  steeper one and a cube launched along the ground (sliding, then at rest) follow the
  general route's trajectory to 1e-10 (poses and twists; same rules, same LCP, the
  rounding of two summation orders); from each state of the 4-cube drop the two give
  the same next twists and poses to 1e-10 (Lemke's answer is fixed to the clamps'
  ``zero_tol``, 1e-11 of the data's scale; 6e-11 m/s measured at most: on a few steps
  one keeps the walk's point and the other the one re-solved from the data, both within
  the tolerance); a pile's whole run is not compared, as the steps' differences of that
  size grow through the landing's contacts;
* the cube sliding down the incline (its slip along one of the pyramid's directions)
  accelerates at Coulomb's ``g (sin theta - mu cos theta)``, to 1e-6;
* it reports a step stopped at the pivot cap as ``max_iterations`` with the general
  route's residual (``strict``: the run's failure); a step beyond the backend's dense
  limit, and any set-up outside its scope, take the general path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.errors import StepFailure
from contactlab.maximal import lemke_step as LS
from contactlab.maximal.lemke_step import LemkeContactStep
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

#: agreement of the compiled and general steps (poses and twists) [m, rad, m/s, rad/s]
AGREE = 1e-10
#: a landing pile's step: its LCP is degenerate (redundant corners), and the two walks end on
#: points each within the backend's accuracy (natural map <= 1e-9 max(1, |q|), asserted
#: below), chosen between the walk's point and the one re-solved from the data; the general
#: route's re-solves go through LAPACK, whose rounding depends on the OpenBLAS kernel set
#: (largest gap over the 200 steps 6e-11 with SkylakeX, 1.03e-10 with Sandybridge)
PILE_AGREE = 1e-9


def _pair(scene: Any, **kw: Any) -> tuple[Simulator, Simulator]:
    fast = Simulator(scene, "maximal", "stewart-trinkle", "lemke", **kw)
    general = Simulator(
        scene, "maximal", "stewart-trinkle", "lemke", formulation_options={"compiled": False}, **kw
    )
    assert isinstance(fast.compiled, LemkeContactStep) and general.compiled is None
    return fast, general


def _gap(a: Any, b: Any) -> float:
    return float(max(np.abs(a.phi - b.phi).max(), np.abs(a.E - b.E).max()))


@pytest.mark.parametrize(
    ("name", "kw", "steps"),
    [
        ("box-incline", {"angle_deg": 20.0, "mu": 0.5}, 150),  # at rest
        ("box-incline", {"angle_deg": 30.0, "mu": 0.3}, 150),  # sliding
        ("box-slide", {}, 200),  # sliding, then at rest
    ],
)
def test_single_cube_trajectories_equal_the_general_route(
    name: str, kw: dict[str, float], steps: int
) -> None:
    fast, general = _pair(get_scenario(name).build(**kw))
    a = b = fast.initial_state()
    for i in range(steps):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        assert ra.metrics["status"] == rb.metrics["status"] == "optimal"
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        assert _gap(a, b) <= AGREE, i
        assert ra.metrics["solver_residual"] <= 1e-9
    assert np.abs(ra.solution.lambda_N - rb.solution.lambda_N).sum() <= 1e-10 * steps


def test_sliding_cube_follows_the_pyramid_law() -> None:
    theta, mu = np.radians(30.0), 0.3
    scene = get_scenario("box-incline").build(angle_deg=30.0, mu=mu)
    sim = Simulator(scene, "maximal", "stewart-trinkle", "lemke")
    down = np.asarray(scene.extras["downhill"], dtype=float)
    state = sim.initial_state()
    speeds = []
    for i in range(120):
        state, _ = sim.step(state, i)
        R = state.E[0, :3, :3]
        speeds.append(float((R @ state.phi[0, 3:]) @ down))
    # steady sliding (after the first contact steps): the speed grows by a h per step.  The
    # plane is tilted about y, so the contact's first tangent (a normal without a y part)
    # is the downhill direction, one of the pyramid's: its friction is mu lambda_N, as the
    # Coulomb cone's
    accel = np.diff(speeds[40:]) / sim.dt
    assert accel == pytest.approx(9.81 * (np.sin(theta) - mu * np.cos(theta)), rel=1e-6)


def test_steps_of_a_pile_solve_the_general_lcp_and_equal_its_steps() -> None:
    fast, general = _pair(get_scenario("box-pile").build(n=4, seed=0))
    captured: list[Any] = []
    model: Any = general.model
    run = model.run

    def capture(problem: Any, warm: Any = None) -> Any:
        captured.append(problem)
        return run(problem, warm)

    model.run = capture
    state = fast.initial_state()
    solved = 0
    for i in range(200):
        captured.clear()
        a, ra = fast.step(state, i)
        b, rb = general.step(state, i)
        assert ra.metrics["status"] == rb.metrics["status"] == "optimal"
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        assert _gap(a, b) <= PILE_AGREE, i
        if captured and captured[0].n:
            lcp = captured[0]
            x = fast.compiled.last_solution  # type: ignore[union-attr]
            assert x.shape == lcp.q.shape
            w = lcp.M @ x + lcp.q
            scale = max(1.0, float(np.abs(lcp.q).max()))
            # z >= 0 and the natural map within the accuracy (hence w >= -1e-9 |q|)
            assert x.min() >= 0.0
            assert np.abs(np.minimum(x, w)).max() <= 1e-9 * scale
            solved += 1
        state = a
    assert solved >= 150  # the steps with contacts (landing at about step 40)


def test_pivot_cap_is_reported_with_the_general_residual() -> None:
    scene = get_scenario("box-pile").build(n=4, seed=0)
    fast, general = _pair(scene, model_options={"max_iter": 5})
    state = fast.initial_state()
    capped = 0
    for i in range(80):
        a, ra = fast.step(state, i)
        b, rb = general.step(state, i)
        assert ra.metrics["status"] == rb.metrics["status"]
        if ra.metrics["status"] == "max_iterations":
            capped += 1
            assert ra.metrics["iterations"] == rb.metrics["iterations"] == 5
            assert ra.metrics["solver_residual"] == pytest.approx(
                rb.metrics["solver_residual"], rel=1e-9, abs=1e-14
            )
            assert _gap(a, b) <= AGREE
        state = a
    assert capped > 0
    strict = Simulator(
        scene, "maximal", "stewart-trinkle", "lemke", model_options={"max_iter": 5}, strict=True
    )
    with pytest.raises(StepFailure, match="max_iterations"):
        strict.run(steps=80)


def test_a_step_beyond_the_dense_limit_takes_the_general_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(LS, "MAX_DENSE", 30)  # five contacts and more (k = 4: 6 per contact)
    fast, general = _pair(get_scenario("box-pile").build(n=4, seed=0))
    state = fast.initial_state()
    general_steps = 0
    for i in range(80):
        a, ra = fast.step(state, i)
        b, _ = general.step(state, i)
        assert _gap(a, b) <= AGREE
        if ra.metrics["n_contacts"] > 5:
            assert ra.solution.results, i  # the general route's record (its solver results)
            general_steps += 1
        state = a
    assert general_steps > 0


def test_scope() -> None:
    scene = get_scenario("box-pile").build(n=2, seed=0)

    def compiled(**kw: Any) -> Any:
        args = {"model": "stewart-trinkle", "solver": "lemke", **kw}
        return Simulator(scene, "maximal", args.pop("model"), args.pop("solver"), **args).compiled

    assert isinstance(compiled(), LemkeContactStep)
    assert isinstance(
        compiled(model_options={"directions": 8, "solver_settings": {"zero_rtol": 1e-10}}),
        LemkeContactStep,
    )
    assert compiled(formulation_options={"compiled": False}) is None
    assert compiled(solver="nsgs") is None  # the frictional-contact route
    assert compiled(model_options={"solver_settings": {"pivot_tol": "x"}}) is None
    assert not isinstance(compiled(model="box-friction"), LemkeContactStep)
    assert compiled(collide=lambda scene, E: get_scenario("box-pile")) is None
