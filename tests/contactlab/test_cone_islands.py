"""The compiled exact-cone steps solve island by island
(:func:`contactlab.maximal._cone_kernels._nsgs_islands`,
:func:`contactlab.maximal._cone_fom_kernels._solve_islands`).

Facts:

* two 6-box piles 10 m apart on one ground step, in one scene, as each steps in a scene of
  its own, to 1e-12 over 60 steps of 5 ms (fall, landing, start of rest), for both laws
  by ``nsgs``, ``apgd`` and ``admm``: an island is solved from its own data with its own
  stopping test (the natural map relative to its own ``||q_k||``);
* every island solved within the tolerance is the whole step within it: along a 30-cube
  drop (the landing steps have many islands), on every step reported ``optimal`` the
  natural map of the general route's local problem
  (:func:`contactlab.models.fc_route.local_step`, the whole step's ``W``, ``q``) is within
  the tolerance, and the reported residual is that problem's on every step;
* island solves agree with whole-problem solves: from the same recorded states of that
  drop, Anitescu--Hart's step (its velocities unique: a strictly convex program in ``v``)
  solved to 1e-9 island by island and as one problem (``islands = False``) gives the same
  next velocities to 1e-6 m/s, as two solvers of it do (``test_cone_step``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.models.fc_route import local_step
from contactlab.scenario import get_scenario
from contactlab.scene import Scene
from contactlab.simulator import Simulator
from solvers.numerics.fc_kernels import natural_map

pytest.importorskip("numba")

STEPS = 60
TOL = 1e-6  # the default tolerance (natural map relative to ||q||)
VEL = 1e-6  # agreement of velocities of a problem with a unique solution [m/s]
LAWS = [("coulomb", {}, "coulomb"), ("anitescu-hart", {"cone": "soc"}, "ccp")]
SOLVERS = ["nsgs", "apgd", "admm"]


def _sim(scene: Scene, model: str, opts: dict[str, Any], solver: str) -> Any:
    sim = Simulator(scene, "maximal", model, solver, model_options=opts)
    assert sim.compiled is not None and sim.compiled.islands  # the default
    return sim


def trajectory(scene: Scene, model: str, opts: dict[str, Any], solver: str) -> tuple[Any, int]:
    """Body transforms over the run and the most islands met in a step."""
    sim = _sim(scene, model, opts, solver)
    state = sim.initial_state()
    out = [state.E.copy()]
    most = 0
    for i in range(STEPS):
        state, _ = sim.step(state, i)
        most = max(most, int(sim.compiled.last_times["islands"]))
        out.append(state.E.copy())
    return np.array(out), most


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("model", "opts", "law"), LAWS)
def test_two_far_apart_piles_step_as_they_do_alone(model, opts, law, solver, far_piles) -> None:  # noqa: ANN001
    a, b, both = far_piles()  # the two far-apart 6-box piles (conftest)
    ta, _ = trajectory(a, model, opts, solver)
    tb, _ = trajectory(b, model, opts, solver)
    tab, most = trajectory(both, model, opts, solver)
    assert np.max(np.abs(ta[-1, :, :3, 3] - ta[0, :, :3, 3])) > 0.1  # the boxes fell and landed
    assert most >= 2
    assert np.max(np.abs(tab[:, :6] - ta)) <= 1e-12
    assert np.max(np.abs(tab[:, 6:] - tb)) <= 1e-12


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("model", "opts", "law"), LAWS)
def test_every_island_converged_is_the_whole_step_converged(model, opts, law, solver) -> None:  # noqa: ANN001
    scene = get_scenario("box-pile").build(n=30, seed=0)
    sim = _sim(scene, model, {**opts, "max_iter": 2000}, solver)
    state = sim.initial_state()
    optimal = most = 0
    for i in range(55):
        state, rec = sim.step(state, i)
        m = rec.metrics
        if m["n_contacts"] == 0:
            continue
        step = local_step(rec.problem, law, "soc")
        z = rec.solution
        r = np.concatenate([z.lambda_N, z.lambda_T])[step.order]
        fc = step.fc
        u = np.asarray(fc.W @ r + fc.q)
        qn = float(np.linalg.norm(fc.q))
        res = natural_map(1 if law == "coulomb" else 0, 0, fc.mu, np.zeros((0, 2)), fc.row_lo,
                          fc.nc, r, u, qn)  # fmt: skip
        # the reported residual is the whole problem's (the sums differ in order only)
        assert res == pytest.approx(m["solver_residual"], rel=1e-6, abs=1e-12)
        if m["status"] == "optimal":
            optimal += 1
            assert res <= TOL * (1 + 1e-9)
        most = max(most, int(sim.compiled.last_times["islands"]))
    assert optimal >= 20 and most >= 5


@pytest.mark.parametrize("solver", SOLVERS)
def test_island_solves_agree_with_whole_solves(solver: str) -> None:
    scene = get_scenario("box-pile").build(n=30, seed=0)
    opts = {"cone": "soc", "solver_tol": 1e-9}
    run = _sim(scene, "anitescu-hart", opts, solver)
    whole = _sim(scene, "anitescu-hart", opts, solver)
    whole.compiled.islands = False
    state = run.initial_state()
    compared = many = 0
    for i in range(55):
        nxt, ra = run.step(state, i)
        islands = int(run.compiled.last_times["islands"])
        other, rb = whole.step(state, i)
        assert whole.compiled.last_times["islands"] == (1 if ra.metrics["n_contacts"] else 0)
        if ra.metrics["status"] == rb.metrics["status"] == "optimal" and ra.metrics["n_contacts"]:
            assert np.abs(nxt.phi - other.phi).max() <= VEL, i
            compared += 1
            many += islands >= 5
        state = nxt
    assert compared >= 20 and many >= 3
