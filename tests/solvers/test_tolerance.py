"""One tolerance per backend, resolved in one place.

Facts: every registered backend declares one :class:`~solvers.tolerance.Tolerance`
and no second attribute; its accuracy and default request are the ones a user
got before the two were one attribute (measured per backend: the table below);
:func:`~solvers.tolerance.requested_tol` is what :func:`solvers.solve` and a
contact model ask for (a caller's tolerance wins, then a model's measured one,
then the backend's request); a float declaration is read as the accuracy with
the parent's request, and an older ``default_tol`` declaration as the request.
"""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from contactlab.models.base import make_model
from solvers import LCP, ProblemError
from solvers.backend_registry import registered
from solvers.backends.base import Backend
from solvers.tolerance import DEFAULT_REQUEST, Tolerance, requested_tol

#: accuracy of each solver that both ``cvxpy`` and ``qpsolvers`` reach (the solver's own
#: accuracy, whichever layer calls it; both ask for 1e-9 by default)
BOTH_LAYERS = {
    "clarabel": 1e-05,
    "cvxopt": 1e-06,
    "daqp": 1e-06,
    "ecos": 0.0001,
    "gurobi": 1e-06,
    "mosek": 1e-06,
    "osqp": 1e-05,
    "piqp": 1e-06,
    "proxqp": 1e-06,
    "scs": 0.0001,
}

#: (accuracy, default request) of every built-in backend, measured before the two
#: attributes ``tolerance`` and ``default_tol`` became one ``Tolerance``.
MEASURED = {
    "admm": (1e-06, 1e-06),
    "apgd": (1e-06, 1e-06),
    "ipm": (1e-06, 1e-06),
    "kkt": (1e-09, 1e-09),
    "lemke": (1e-09, 1e-09),
    "nsgs": (1e-06, 1e-06),
    "osqp": (1e-05, 1e-09),
    "padmm": (1e-06, 1e-06),
    "pgs": (1e-06, 1e-06),
    "ppivot": (1e-09, 1e-09),
    **{
        f"{layer}:{solver}": (accuracy, 1e-09)
        for layer in ("cvxpy", "qpsolvers")
        for solver, accuracy in BOTH_LAYERS.items()
    },
    "qpsolvers:highs": (1e-06, 1e-09),
    "qpsolvers:hpipm": (1e-06, 1e-09),
    "qpsolvers:qpalm": (1e-05, 1e-09),
    "qpsolvers:qpoases": (1e-06, 1e-09),
    "qpsolvers:qpswift": (1e-06, 1e-09),
    "qpsolvers:quadprog": (1e-06, 1e-09),
}


def test_every_measured_backend_is_registered() -> None:
    assert set(MEASURED) <= set(registered())


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_every_backend_keeps_the_default_its_users_got(name: str) -> None:
    accuracy, request = MEASURED[name]
    cls = registered()[name]
    assert cls.tolerance == Tolerance(accuracy, request)
    assert requested_tol(cls) == request
    assert not hasattr(cls, "default_tol")  # one attribute


def test_solve_and_models_resolve_the_same_request() -> None:
    if "pgs" in solvers.available_backends():  # the request reaches the backend
        lcp = LCP(np.array([[2.0, 1.0], [1.0, 2.0]]), [-1.0, 1.0])
        assert "(tol 1e-06)" in solvers.solve(lcp, "pgs").message
    for model, solver in [
        ("box-friction", "pgs"),
        ("box-friction", "lemke"),
        ("anitescu-hart", "osqp"),
        ("anitescu-hart", "nsgs"),
    ]:
        m = make_model(model, solver)
        expected = type(m).benchmarked_tol.get(solver, MEASURED[solver][1])
        assert m.tol == expected == requested_tol(m.backend, None, type(m).benchmarked_tol)
    assert requested_tol(registered()["pgs"], 1e-8) == 1e-8  # the caller's tolerance wins
    with pytest.raises(ProblemError, match="tol"):
        requested_tol(registered()["pgs"], -1.0)


def test_a_float_declaration_is_the_accuracy_and_default_tol_the_request() -> None:
    class Plain(Backend):
        name = "plain-for-tolerance"
        tolerance = 1e-4  # type: ignore[assignment]

    class Older(Plain):
        name = "older-for-tolerance"
        default_tol = 1e-5

    class Child(Older):
        name = "child-for-tolerance"
        tolerance = 3e-4  # type: ignore[assignment]

    assert Plain.tolerance == Tolerance(1e-4, DEFAULT_REQUEST)
    assert Older.tolerance == Tolerance(1e-4, 1e-5) and not hasattr(Older, "default_tol")
    assert Child.tolerance == Tolerance(3e-4, 1e-5)
    with pytest.raises(ValueError, match="request"):
        Tolerance(1e-6, 0.0)
