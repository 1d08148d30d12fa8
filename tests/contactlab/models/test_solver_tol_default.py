"""The inner-solve tolerance of a contact model when ``solver_tol`` is left unset.

Facts: PGS is asked for its declared accuracy (1e-6: Gauss--Seidel does not
reach 1e-9 on redundant contacts within its sweep cap), the frictional-contact
backends for 1e-6, every other backend for 1e-9; every model x solver pair of
the friction benchmark gets by default the tolerance its row measured; an
explicit ``solver_tol`` wins; the request reaches the solver layer (a
resting-stack step by PGS stops at a residual within 1e-6, not 1e-9).
"""

from __future__ import annotations

import pytest

from contactlab.errors import ConfigurationError
from contactlab.models.base import make_model
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers.backend_registry import get_backend
from solvers.backends.base import Backend

#: the solver layer's one default request, declared by the backend base class
DEFAULT_SOLVER_TOL = Backend.tolerance.request


def test_unset_tolerance_is_the_backends_default_request() -> None:
    assert get_backend("pgs").tolerance.request == 1e-6
    assert make_model("box-friction", "pgs").tol == 1e-6
    assert make_model("frictionless", "pgs").tol == 1e-6
    assert DEFAULT_SOLVER_TOL == 1e-9
    assert make_model("box-friction", "osqp").tol == DEFAULT_SOLVER_TOL
    assert make_model("stewart-trinkle", "lemke").tol == DEFAULT_SOLVER_TOL
    assert make_model("box-friction", "pgs", solver_tol=1e-8).tol == 1e-8


def test_unset_tolerance_is_the_benchmarks() -> None:
    """Every pair of ``benchmarks/bench_friction.py`` that names a tolerance, except the rows
    labelled with another one on purpose (``(tol 1e-4)``: a loosened baseline), asks for
    that tolerance when the user leaves ``solver_tol`` unset."""
    from benchmarks.bench_friction import PAIRS

    checked = 0
    for label, model, solver, options, _ in PAIRS:
        if "solver_tol" not in options or "(tol " in label:
            continue
        rest = {k: v for k, v in options.items() if k != "solver_tol"}
        assert make_model(model, solver, **rest).tol == options["solver_tol"], label
        checked += 1
    assert checked >= 15
    assert make_model("anitescu-hart", "ipm", cone="soc").tol == 1e-6


def test_bad_tolerance_is_one_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="solver_tol"):
        make_model("box-friction", "pgs", solver_tol=0.0)


def test_default_request_reaches_the_solver() -> None:
    scene = get_scenario("box-stack").build(n=2)
    # through the solver layer (the default route of the stack is the compiled maximal
    # step, which has no inner results; its own tolerance is checked below)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=0.01, formulation_options={"compiled": False}
    )
    fast = Simulator(scene, "maximal", "box-friction", "pgs", dt=0.01)
    assert fast.compiled is not None and fast.model.tol == 1e-6
    state = fast_state = sim.initial_state()
    for i in range(3):
        state, record = sim.step(state, i)
        fast_state, fast_record = fast.step(fast_state, i)
        assert fast_record.metrics["status"] == "optimal"
        assert fast_record.metrics["solver_residual"] <= 1e-6
    inner = record.solution.results
    assert inner and all(r.status == "optimal" for r in inner)
    # stopped at the default request: residual within 1e-6 (the layer's own measure)
    assert all(r.max_residual <= 1e-6 for r in inner)
    assert all("(tol 1e-06)" in r.message for r in inner)
