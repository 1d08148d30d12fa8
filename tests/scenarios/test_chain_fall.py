"""A planar chain of five box links falling on the ground, on the default route.

Scene ``chain-fall``: a base link on a planar joint (x, z and the pitch about
y) and four links on hinges about y, released in a staircase 0.1-0.3 m above
the ground.  In reduced coordinates nothing can move along y, so the friction
rows along y of its contact problem have a zero diagonal: the box-friction LCP
by projected Gauss--Seidel stopped at the first landing ("pgs needs a positive
diagonal of M"), and in maximal coordinates it left most steps short of its
tolerance.

Facts, in both formulations, with no formulation option, model or solver given:

* every step is solved to its tolerance (status ``optimal``) and the run ends ``ok``;
* penetration never exceeds the distance fallen in one step at the impact
  speed ``v h``, ``v = sqrt(2 g (z_top - w / 2))`` (a contact is first seen
  within its 5 mm margin, so a link that was outside it can travel at most
  ``v h`` into the ground before the contact rows act);
* the chain comes to rest lying flat: kinetic energy below 1e-9 J from 0.8 s
  (against ``m g w = 0.1 J`` per link), every link's centre at ``w / 2`` to
  1e-6 m, the links end to end (centres ``length`` apart along x to 1e-6 m);
* the two formulations agree on where it rests: heights to 1e-6 m, positions
  along x to 5 mm, 0.5 % of the chain's length: during the 0.1 s of the
  landing the links slide 5 cm, and the maximal formulation holds the hinges
  by velocity rows with Baumgarte feedback (drift up to 1e-3 rad while the
  links strike) where the reduced one holds them exactly.

PGS itself, asked for in reduced coordinates, now runs the scene to its end:
the zero-diagonal rows are solved in closed form
(``tests/solvers/test_pgs_decoupled.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.runspec import simulate
from contactlab.scenario import get_scenario

DURATION = 1.0
G = 9.81


@pytest.fixture(scope="module")
def runs():
    return {
        form: simulate("chain-fall", {"duration": DURATION}, formulation=form)
        for form in ("reduced", "maximal")
    }


@pytest.mark.parametrize("form", ["reduced", "maximal"])
def test_default_route_solves_every_step(runs, form):
    run = runs[form]
    assert (run.model, run.solver) == ("box-friction", "osqp")
    assert run.defaults["defaulted"] == ["model", "solver"]
    assert run.status == "ok", run.message
    assert run.n_steps == round(DURATION / run.dt)
    assert (run.steps["status"] == "optimal").all()
    assert run.unconverged()["steps"] == 0


@pytest.mark.parametrize("form", ["reduced", "maximal"])
def test_chain_lands_within_one_step_of_travel_and_rests_flat(runs, form):
    run = runs[form]
    p = get_scenario("chain-fall").defaults()
    half = 0.5 * p["width"]
    top = run.trajectory["position"][0, :, 2].max()
    speed = np.sqrt(2.0 * G * (top - half))
    assert run.steps["penetration"].max() <= speed * run.dt
    late = run.steps["t"].to_numpy() >= 0.8
    assert run.steps["kinetic_energy"].to_numpy()[late].max() < 1e-9
    final = run.trajectory["position"][-1]
    np.testing.assert_allclose(final[:, 2], half, atol=1e-6)
    np.testing.assert_allclose(np.diff(final[:, 0]), p["length"], atol=1e-6)
    np.testing.assert_allclose(final[:, 1], 0.0, atol=1e-9)


def test_the_formulations_agree_on_where_the_chain_rests(runs):
    reduced = runs["reduced"].trajectory["position"][-1]
    maximal = runs["maximal"].trajectory["position"][-1]
    np.testing.assert_allclose(reduced[:, 2], maximal[:, 2], atol=1e-6)
    np.testing.assert_allclose(reduced[:, 0], maximal[:, 0], atol=5e-3)


def test_pgs_runs_the_reduced_chain_through_its_landing():
    """The first landing (step 12 onwards) used to stop the run on the zero diagonal;
    every step is now solved or kept unconverged with its residual, never refused."""
    run = simulate(
        "chain-fall", {"duration": 0.3}, formulation="reduced", model="box-friction", solver="pgs"
    )
    assert run.n_steps == 30 and run.status in ("ok", "inaccurate")
    assert run.steps["n_contacts"].max() > 0
    assert np.isfinite(run.trajectory["position"]).all()
