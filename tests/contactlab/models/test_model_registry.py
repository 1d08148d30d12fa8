"""Model registry, options and solver compatibility."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from model_problems import box_on_plane

import solvers
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.models import make_model, model_names
from contactlab.models.base import model_class
from contactlab.problem import StepProblem

MODELS = [
    "anitescu-hart",
    "box-friction",
    "frictionless",
    "staggered-projections",
    "stewart-trinkle",
]


def test_every_model_is_registered() -> None:
    assert set(MODELS) <= set(model_names())


def test_unknown_model_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownNameError, match="known models: anitescu-hart"):
        make_model("coulomn", "osqp")


@pytest.mark.parametrize("name", MODELS)
def test_compatible_solvers_are_available_and_accepted(name: str) -> None:
    fitting = model_class(name).compatible_solvers()
    assert fitting, name
    assert set(fitting) <= set(solvers.available_backends()) | {"cvxpy"}
    for backend in fitting:
        make_model(name, backend)  # must not raise


def test_capabilities_decide_the_lists() -> None:
    avail = set(solvers.available_backends())
    assert "kkt" in model_class("frictionless").compatible_solvers()
    if "lemke" in avail:
        # Lemke on the LCP, or a backend solving its Coulomb law with the pyramid itself
        fitting = model_class("stewart-trinkle").compatible_solvers()
        assert fitting[0] == "lemke"
        for name in fitting[1:]:
            backend = solvers.get_backend(name)
            assert getattr(backend, "accepts_fc", False) and backend.solves_coulomb
    if "pgs" in avail:
        assert "pgs" in model_class("box-friction").compatible_solvers()
        assert "pgs" in model_class("anitescu-hart").compatible_solvers(form="primal")
        assert "pgs" not in model_class("anitescu-hart").compatible_solvers(form="dual")
    for name in model_class("anitescu-hart").compatible_solvers(cone="soc"):
        # a cone QP backend, or a frictional-contact backend solving the CCP itself
        backend = solvers.get_backend(name)
        assert backend.supports_soc or getattr(backend, "accepts_fc", False)
    assert "kkt" not in model_class("staggered-projections").compatible_solvers()


def test_unsupported_pairing_lists_the_backends_that_fit() -> None:
    with pytest.raises(IncompatibleError, match="backends that fit: .*lemke"):
        make_model("stewart-trinkle", "osqp")
    with pytest.raises(IncompatibleError, match="second-order cones.*cvxpy:clarabel"):
        make_model("anitescu-hart", "osqp", cone="soc")


def test_kkt_refuses_a_step_with_contacts_but_solves_joints_only() -> None:
    model = make_model("frictionless", "kkt")
    with pytest.raises(IncompatibleError, match="backends that fit: .*osqp"):
        model.solve(box_on_plane(), {})
    # one body, a joint fixing its angular velocity and vertical speed
    M = sp.diags([1.0, 2.0, 3.0, 4.0, 4.0, 4.0])
    G = sp.csr_matrix(np.eye(6)[[0, 1, 2, 5]])
    f = np.array([1.0, 1.0, 1.0, 2.0, -4.0, 8.0])
    sol = model.solve(StepProblem(h=0.01, M=M, f=f, v=np.zeros(6), G=G, g=np.full(4, 0.5)), {})
    # free rows: M v = f; constrained rows: v = g, impulse = M v - f
    np.testing.assert_allclose(sol.v, [0.5, 0.5, 0.5, 0.5, -1.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(sol.lambda_G, [-0.5, 0.0, 0.5, -6.0], atol=1e-12)


def test_bad_options_are_configuration_errors() -> None:
    with pytest.raises(ConfigurationError, match="no option.*'cones'"):
        make_model("anitescu-hart", "osqp", cones="soc")
    with pytest.raises(ConfigurationError, match="cone must be one of"):
        make_model("box-friction", "pgs", cone="pyramid")
    with pytest.raises(ConfigurationError, match="form must be"):
        make_model("frictionless", "osqp", form="both")
    with pytest.raises(ConfigurationError, match="max_outer"):
        make_model("staggered-projections", "osqp", max_outer=0)
    with pytest.raises(ConfigurationError, match="directions must be an even integer"):
        make_model("stewart-trinkle", "lemke", directions=5)
    # a step problem asking for an odd pyramid is refused when it is built (StepProblem)
    with pytest.raises(ConfigurationError, match="directions must be an even integer"):
        make_model("stewart-trinkle", "lemke").solve(box_on_plane(directions=5), {})
    with pytest.raises(ConfigurationError, match="solver_tol"):
        make_model("frictionless", "osqp", solver_tol=0.0)
    with pytest.raises(ConfigurationError, match="cone must be one of"):
        model_class("anitescu-hart").compatible_solvers(cone="disc")
    with pytest.raises(UnknownNameError, match="unknown solver 'gurobi'"):
        make_model("frictionless", "gurobi")


def test_aliases_are_listed_with_their_target() -> None:
    if "cvxpy:clarabel" in solvers.available_backends():
        fitting = model_class("anitescu-hart").compatible_solvers(cone="soc")
        assert "cvxpy" in fitting
        assert make_model("anitescu-hart", "cvxpy", cone="soc").backend.name == "cvxpy:clarabel"


def test_models_declare_their_problem_forms() -> None:
    for name in MODELS:
        assert set(model_class(name).forms) <= {"qp", "lcp"} and model_class(name).forms


@pytest.mark.parametrize("name", MODELS)
def test_steps_without_contacts_reduce_to_the_kkt_solution(name: str) -> None:
    """No contacts: every model gives M v = f + G^T lambda_G, G v = g (free body: v = M^-1 f)."""
    M = sp.diags([1.0, 2.0, 3.0, 4.0, 4.0, 4.0])
    f = np.arange(6.0)
    G = sp.csr_matrix(np.eye(6)[:2])
    free = StepProblem(h=0.01, M=M, f=f, v=np.zeros(6))
    joint = StepProblem(h=0.01, M=M, f=f, v=np.zeros(6), G=G, g=np.ones(2))
    for solver in model_class(name).compatible_solvers()[:3]:
        model = make_model(name, solver)
        tol = 10 * solvers.get_backend(solver).tolerance.accuracy
        s = model.solve(free, {})
        assert s.status == "optimal"
        np.testing.assert_allclose(s.v, f / M.diagonal(), atol=tol)
        s = model.solve(joint, {})
        np.testing.assert_allclose(s.v, [1, 1, 2 / 3, 0.75, 1.0, 1.25], atol=tol)
        np.testing.assert_allclose(M @ s.v, f + G.T @ s.lambda_G, atol=tol)
