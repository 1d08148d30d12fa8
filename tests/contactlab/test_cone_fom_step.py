"""The compiled disc-cone step by first-order methods (``apgd``, ``admm``;
:mod:`contactlab.maximal._cone_fom_kernels`): the general backends' iterations on the exact
cone with ``W x`` read through the contact rows.

Facts:

* it follows the general route's ``apgd`` and ``admm`` (same local problem, iterations,
  shift rule, warm start and stopping test; ``W x`` summed in another order): solved to
  1e-9 (natural map relative to ``||q||``), the trajectories of a cube at rest, a cube
  sliding on the floor, a cube sliding down a 30° incline and a stacked 6-cube pile, for
  Coulomb's law and Anitescu--Hart's cone problem, stay within 1e-6 m/s of the general
  route's over 30 to 60 steps, every step solved (measured: at most 4.6e-7 m/s, ADMM's
  slide; 1e-6 m/s is the velocity agreement the ``nsgs`` route's test asks of two solves
  to 1e-9: ``1e-9 ||q||`` with ``||q|| <= 1`` m/s here, times the conditioning of ``W``);
* on a landing 6-cube pile (Anitescu--Hart, whose velocities are unique: a strictly
  convex program in the twists) each step from the same state gives the general route's
  next velocities to 1e-6 m/s wherever both solve it to 1e-9 (measured 3.1e-8);
* its fixed points are the compiled ``nsgs`` step's: from the same states, solved to 1e-9,
  the contact velocities ``W r + q`` of the general route's local problem agree to
  1e-6 m/s on a landing 4-cube pile (Anitescu--Hart) and for Coulomb's law on the
  incline, the slide and the stacked pile, steps with a unique solution (measured:
  at most 8e-9 m/s; on a random pile Coulomb's law has several solutions and the three
  methods may stop at different ones, 2e-3 m/s apart, measured);
* a step stopped at its iteration cap reports ``max_iterations`` with the general route's
  natural-map residual of its impulses (strict: the run's failure), and the scope takes
  exactly the set-ups the kernels implement (``admm``'s ``rho``; any other setting keeps
  the general path, which reports it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.models.fc_route import local_step
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers.numerics.fc_kernels import natural_map

pytest.importorskip("numba")

#: agreement of velocities between two solves to 1e-9 of a problem [m/s] (module docstring)
VEL = 1e-6
FINE = 1e-9  # the tolerance the comparisons solve to (natural map relative to ||q||)
METHODS = ("apgd", "admm")
LAWS = [("coulomb", {}, "coulomb"), ("anitescu-hart", {"cone": "soc"}, "ccp")]
SCENES: list[tuple[str, dict[str, Any], int]] = [
    ("box-pile", {"n": 1, "layout": "stacked"}, 40),  # a cube at rest
    ("box-slide", {}, 60),
    ("box-incline", {"angle_deg": 30.0}, 40),
    ("box-pile", {"n": 6, "layout": "stacked"}, 30),
]


def _sim(scene: Any, model: str, opts: dict[str, Any], solver: str, **kw: Any) -> Simulator:
    return Simulator(scene, "maximal", model, solver, model_options=opts, **kw)


def _pair(scene: Any, model: str, opts: dict[str, Any], solver: str) -> tuple[Any, Any]:
    fast = _sim(scene, model, opts, solver)
    general = _sim(scene, model, opts, solver, formulation_options={"compiled": False})
    assert type(fast.compiled).__name__ == "ConeContactStep" and general.compiled is None
    return fast, general


def _velocities(record: Any, law: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """The general route's local problem of a step, the step's impulses and ``W r + q``."""
    step = local_step(record.problem, law, "soc")
    z = record.solution
    r = np.concatenate([z.lambda_N, z.lambda_T])[step.order]
    return step.fc, r, np.asarray(step.fc.W @ r + step.fc.q)


@pytest.mark.parametrize("solver", METHODS)
@pytest.mark.parametrize(("model", "opts", "law"), LAWS)
def test_trajectories_follow_the_general_route(solver, model, opts, law) -> None:  # noqa: ANN001
    for name, params, steps in SCENES:
        scene = get_scenario(name).build(**params)
        fast, general = _pair(scene, model, {**opts, "solver_tol": FINE}, solver)
        a, b = fast.initial_state(), general.initial_state()
        touching = 0
        for i in range(steps):
            a, ra = fast.step(a, i)
            b, rb = general.step(b, i)
            assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"], (name, i)
            # every step solved: the comparison does not hang on where a capped run stops
            assert ra.metrics["status"] == rb.metrics["status"] == "optimal", (name, i)
            touching += ra.metrics["n_contacts"] > 0
            assert np.abs(a.phi - b.phi).max() <= VEL, (name, i)
        assert touching >= steps // 2, name


@pytest.mark.parametrize("solver", METHODS)
def test_steps_of_a_landing_pile_equal_the_general_route(solver: str) -> None:
    scene = get_scenario("box-pile").build(n=6, seed=1)
    opts = {"cone": "soc", "solver_tol": FINE}
    fast, general = _pair(scene, "anitescu-hart", opts, solver)
    state = fast.initial_state()
    compared = 0
    for i in range(90):
        a, ra = fast.step(state, i)
        b, rb = general.step(state, i)
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        if ra.metrics["n_contacts"] and ra.metrics["status"] == rb.metrics["status"] == "optimal":
            assert np.abs(a.phi - b.phi).max() <= VEL, i
            compared += 1
        state = a
    assert compared >= 55  # measured: 60 (apgd) and 65 (admm) of 68 steps with contacts


CASES = [
    ("anitescu-hart", {"cone": "soc"}, "ccp", "box-pile", {"n": 4, "seed": 3}, range(20, 90, 3)),
    ("coulomb", {}, "coulomb", "box-incline", {"angle_deg": 30.0}, range(5, 40, 5)),
    ("coulomb", {}, "coulomb", "box-slide", {}, range(2, 60, 6)),
    ("coulomb", {}, "coulomb", "box-pile", {"n": 6, "layout": "stacked"}, range(2, 30, 4)),
]


@pytest.mark.parametrize(("model", "opts", "law", "name", "params", "at"), CASES)
def test_fixed_points_are_the_nsgs_steps(model, opts, law, name, params, at) -> None:  # noqa: ANN001
    scene = get_scenario(name).build(**params)
    opts = {**opts, "solver_tol": FINE}
    sims = {s: _sim(scene, model, opts, s) for s in ("nsgs", *METHODS)}
    assert all(type(s.compiled).__name__ == "ConeContactStep" for s in sims.values())
    state = sims["nsgs"].initial_state()
    compared = 0
    for i in range(max(at) + 1):
        new, rn = sims["nsgs"].step(state, i)
        if i in at and rn.metrics["n_contacts"]:
            records = [rn] + [sims[s].step(state, i)[1] for s in METHODS]
            if all(r.metrics["status"] == "optimal" for r in records):
                u = [_velocities(r, law)[2] for r in records]
                for other in u[1:]:
                    assert np.abs(other - u[0]).max() <= VEL, i
                compared += 1
        state = new
    assert compared >= 5


@pytest.mark.parametrize("solver", METHODS)
def test_a_capped_step_reports_its_residual(solver: str) -> None:
    from contactlab.errors import StepFailure

    scene = get_scenario("box-stack").build(n=3)
    sim = _sim(scene, "coulomb", {"max_iter": 1}, solver)
    assert type(sim.compiled).__name__ == "ConeContactStep"
    state, rec = sim.step(sim.initial_state(), 0)
    m = rec.metrics
    # APGD runs a Coulomb island left at the cap once more with the general backend's
    # refresh rule (contactlab.maximal._cone_fom_kernels.REFRESH_RETRY): two runs of 1
    assert m["status"] == "max_iterations" and m["iterations"] == (2 if solver == "apgd" else 1)
    fc, r, u = _velocities(rec, "coulomb")
    res = natural_map(1, 0, fc.mu, np.zeros((0, 2)), fc.row_lo, fc.nc, r, u,
                      float(np.linalg.norm(fc.q)))  # fmt: skip
    model: Any = sim.model
    assert res > model.tol and res == pytest.approx(m["solver_residual"], rel=1e-6)
    strict = _sim(scene, "coulomb", {"max_iter": 1}, solver, strict=True)
    with pytest.raises(StepFailure, match="max_iterations"):
        strict.step(strict.initial_state(), 0)


def test_scope() -> None:
    from contactlab.maximal.cone_step import model_law

    pile = get_scenario("box-pile").build(n=4)
    for model, opts, _ in LAWS:
        for solver in METHODS:
            assert type(_sim(pile, model, opts, solver).compiled).__name__ == "ConeContactStep"
        rho = {**opts, "solver_settings": {"rho": 0.5}}
        step: Any = _sim(pile, model, rho, "admm").compiled
        assert step is not None and step.rho == 0.5
        # settings the kernels do not implement keep the general path, which names them
        sim = _sim(pile, model, {**opts, "solver_settings": {"omega": 1.2}}, "apgd")
        assert sim.compiled is None
        found = model_law(sim.model, sim.collide)
        assert isinstance(found, str) and "omega" in found
        for settings in ({"direct": True}, {"rho": -1.0}):
            assert _sim(pile, model, {**opts, "solver_settings": settings}, "admm").compiled is None
        assert _sim(pile, model, {**opts, "islands": True}, "apgd").compiled is None
        assert _sim(pile, model, opts, "padmm").compiled is None
