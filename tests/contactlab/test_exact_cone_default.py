"""The default backend of the exact-cone models: ``coulomb`` (exact cone by default) and
``anitescu-hart`` with ``cone="soc"``, named without a solver, get accelerated projected
gradient (:data:`contactlab.scenario.EXACT_CONE_SOLVER`), which the compiled exact-cone
step takes.

Facts:

* the choice: the exact-cone models get ``apgd`` in either formulation, with or without
  joints; the polyhedral cones keep the first backend of their tables (``pgs`` for the
  box cone of ``coulomb``, OSQP for Anitescu--Hart's pyramid), and a solver the user names
  is kept;
* Anitescu--Hart's default is a converged one: a 20-cube pile dropped in layers and
  stepped through its landing (0.5 s at h = 5 ms, every layer has hit the one below),
  with only the model and its cone named, ends ``ok`` with every step's solve ``optimal``
  and its natural-map residual (relative to ``||q||``, the layer's measure) within the
  default tolerance (a convex problem: projected gradient converges on it);
* Coulomb's law is a fixed point over the friction cone, not a convex program; on the same
  drop its default run steps every step to within 1e-5 of ``||q||`` (measured: one step
  of 100 left at the 20,000-iteration cap at 1.8e-6, where ``pgs`` leaves 9 at its cap
  and ``nsgs`` 15, each at up to 7.7e-6), and any step it leaves unsolved is reported
  ``max_iterations``; so on the 50-cube drop, where one landing step stopped at 2.0e-3
  before an island left at the cap was solved again with the general backend's refresh
  rule (``REFRESH_RETRY`` of :mod:`contactlab.maximal._cone_fom_kernels`).
"""

from __future__ import annotations

from typing import Any

import pytest

from contactlab.models import make_model
from contactlab.models.base import SolvingModel
from contactlab.scenario import EXACT_CONE_SOLVER, complete_setup, get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

EXACT = [("coulomb", {}), ("anitescu-hart", {"cone": "soc"})]


@pytest.mark.parametrize("model, options", EXACT, ids=["coulomb", "anitescu-hart-soc"])
@pytest.mark.parametrize(
    "scenario, formulation",
    [("box-pile", "maximal"), ("chain-fall", "maximal"), ("chain-fall", "reduced")],
)
def test_exact_cone_models_default_to_apgd(
    model: str, options: dict[str, Any], scenario: str, formulation: str
) -> None:
    scene = get_scenario(scenario).build()
    setup, defaulted = complete_setup(scene, (formulation,), None, model, None, options)
    assert EXACT_CONE_SOLVER == "apgd"
    assert (setup.model, setup.solver) == (model, "apgd")
    assert "solver" in defaulted


@pytest.mark.parametrize(
    "model, options, solver",
    [("coulomb", {"cone": "box"}, "pgs"), ("anitescu-hart", {}, "osqp")],
    ids=["coulomb-box", "anitescu-hart-pyramid"],
)
def test_polyhedral_cones_keep_their_first_backend(
    model: str, options: dict[str, Any], solver: str
) -> None:
    scene = get_scenario("box-pile").build()
    setup, _ = complete_setup(scene, ("maximal",), None, model, None, options)
    assert setup.solver == solver


def test_a_named_solver_is_kept() -> None:
    scene = get_scenario("box-pile").build()
    setup, defaulted = complete_setup(scene, ("maximal",), None, "coulomb", "nsgs", {})
    assert setup.solver == "nsgs" and "solver" not in defaulted


def _drop(
    model: str, options: dict[str, Any], n: int = 20
) -> tuple[Any, list[str], list[float], float]:
    """The default run of ``model`` on an ``n``-cube drop: run, statuses, residuals, tolerance."""
    scene = get_scenario("box-pile").build(n=n)
    sim = Simulator(scene, "maximal", model, dt=0.005, model_options=options)
    assert sim.model.solver == "apgd"
    made = make_model(model, "apgd", **options)
    assert isinstance(made, SolvingModel)
    tol = made.tol
    statuses: list[str] = []
    residuals: list[float] = []

    def check(state: Any, record: Any) -> None:
        statuses.append(record.metrics["status"])
        if record.metrics["n_contacts"] > 0:
            residuals.append(record.metrics["solver_residual"])

    run = sim.run(duration=0.5, callback=check)
    assert len(statuses) == 100
    return run, statuses, residuals, tol


def test_default_anitescu_hart_drop_solves_every_step() -> None:
    run, statuses, residuals, tol = _drop("anitescu-hart", {"cone": "soc"})
    assert run.status == "ok", run.message
    assert set(statuses) == {"optimal"}
    assert residuals and max(residuals) <= tol


@pytest.mark.parametrize("n", [20, 50])
def test_default_coulomb_drop_stays_near_its_tolerance(n: int) -> None:
    run, statuses, residuals, tol = _drop("coulomb", {}, n)
    assert set(statuses) <= {"optimal", "max_iterations"}, sorted(set(statuses))
    assert residuals and max(residuals) <= 10 * tol
    assert (run.status == "ok") == (set(statuses) == {"optimal"})
