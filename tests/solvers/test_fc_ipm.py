"""The ``ipm`` frictional-contact backend (interior point on the velocity form).

Facts: on random problems of each law and cone and on pile step problems it
agrees with Clarabel's interior-point SOC solution in contact velocities to
1e-6 m/s (the issue's requirement; the velocities of the CCP are unique even
when ``W`` is singular); the factor it works on reproduces ``W``; its
iteration count on a pile step stays in the tens (Mehrotra's
predictor-corrector: independent of the conditioning that makes first-order
methods take thousands); box friction at 1e-6 through it has no capped step
in a pile's landing transient.  Clarabel references and the random problems
are those of ``test_frictional.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_frictional import CASES, clarabel_reference, random_problem, stored_pile

from contactlab.collision import collide
from contactlab.models.fc_route import local_step
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers import IncompatibleProblem, solve
from solvers.frictional import FrictionalContact

pytest.importorskip("numba")
pytest.importorskip("qdldl")


@pytest.mark.parametrize(("law", "cone"), CASES)
def test_ipm_agrees_with_clarabel_on_random_problems(law: str, cone: str) -> None:
    """Natural map 1e-8 (relative to ||q||, about 3): velocities within 1e-6 m/s."""
    problem = random_problem(law, cone, seed=3)
    u_ref = problem.velocity(clarabel_reference(problem))
    res = solve(problem, "ipm", tol=1e-8)
    assert res.status == "optimal", res.message
    assert res.residuals["natural_map"] <= 1e-8
    np.testing.assert_allclose(res.w, u_ref, atol=1e-6)
    if law == "ccp":
        # Mehrotra's method: tens of iterations, not thousands (measured 10-17, plus 32
        # Gauss-Seidel sweeps finishing the exact cone's run, which stalls at 2.9e-7)
        assert res.iterations <= 60


def test_ipm_on_the_stored_pile_step() -> None:
    """The 10-box pile step of ``test_frictional`` (no factor: the eigendecomposition path)."""
    ccp, _ = stored_pile("ccp")
    u_ref = ccp.velocity(clarabel_reference(ccp))
    res = solve(ccp, "ipm", tol=1e-8)
    assert res.status == "optimal", res.message
    np.testing.assert_allclose(res.w, u_ref, atol=1e-6)
    cou, _ = stored_pile("coulomb")
    ref = solve(cou, "nsgs", tol=1e-6, max_iter=100000)
    other = solve(cou, "ipm", tol=1e-8)
    assert ref.success and other.status == "optimal", other.message
    np.testing.assert_allclose(other.w, ref.w, atol=1e-6)


@pytest.fixture(scope="module")
def landing_pile() -> tuple:
    """A 12-box pile 0.3 s after its drop (box friction by PGS): boxes still settling."""
    scene = get_scenario("box-pile").build(n=12)
    sim = Simulator(scene, "maximal", "box-friction", "pgs", dt=0.005)
    state = sim.initial_state()
    for i in range(60):
        state, _ = sim.step(state, i)
    return scene, sim, state


def test_ipm_on_a_pile_step_with_the_factor(landing_pile: tuple) -> None:
    """The step's own factor ``W = C M^-1 C'`` (to round-off), and Clarabel's velocities."""
    scene, sim, state = landing_pile
    problem = sim.formulation.assemble(state, 0.005, collide(scene, state.E))
    assert problem.n_contacts > 12
    for cone in ("soc", "pyramid"):
        fc = local_step(problem, "ccp", cone, 4, factor=True).fc
        C, d = fc.factor
        W = fc.W.toarray()
        assert np.max(np.abs((C.toarray() * d) @ C.toarray().T - W)) <= 1e-12 * np.abs(W).max()
        u_ref = fc.velocity(clarabel_reference(fc))
        res = solve(fc, "ipm", tol=1e-8)
        assert res.status == "optimal", res.message
        assert res.iterations <= 60
        np.testing.assert_allclose(res.w, u_ref, atol=1e-6, err_msg=cone)


def test_box_friction_at_1e6_has_no_capped_step_in_the_landing_transient(
    landing_pile: tuple,
) -> None:
    """Ten steps of the settling pile, box friction at natural map 1e-6 through ``ipm``."""
    scene, _, state = landing_pile
    sim = Simulator(
        scene, "maximal", "box-friction", "ipm", dt=0.005, model_options={"solver_tol": 1e-6}
    )
    for i in range(10):
        state, record = sim.step(state, i)
        assert record.solution.status == "optimal", (i, record.solution.status)


def test_ipm_bilateral_and_unilateral_scalar_rows() -> None:
    """Scalar rows share the problem (a joint's bilateral rows in a quasi-definite border of
    the normal matrix): the same velocities as nsgs run to 1e-10, within 1e-6 m/s."""
    rng = np.random.default_rng(2)
    nc, ms, nv = 5, 3, 30
    C = rng.normal(size=(3 * nc + ms, nv))
    q = rng.normal(size=3 * nc + ms)
    lo = [-np.inf, 0.0, -np.inf]
    for law in ("ccp", "coulomb"):
        p = FrictionalContact(C @ C.T, q, np.full(nc, 0.5), law, "soc", row_lo=lo)
        res = solve(p, "ipm", tol=1e-9)
        ref = solve(p, "nsgs", tol=1e-10, max_iter=200000)
        assert res.status == "optimal" and ref.status == "optimal", res.message
        np.testing.assert_allclose(res.w, ref.w, atol=1e-6)
        assert np.max(np.abs(res.w[3 * nc :][[0, 2]])) <= 1e-8  # bilateral rows: u = 0


def test_ipm_refuses_a_large_w_without_its_factor() -> None:
    """One clear error naming the way out."""
    big = FrictionalContact(np.eye(603), np.ones(603), np.full(201, 0.5), "ccp", "soc")
    with pytest.raises(IncompatibleProblem, match="factor"):
        solve(big, "ipm")
