"""The compiled disc-cone step (:mod:`contactlab.maximal.cone_step`): the exact Coulomb law
(De Saxcé) and Anitescu--Hart with the exact cone, by block NSGS on the bodies' twists.

Facts:

* it is the general route's ``nsgs`` (same local problem, contact order, local solver,
  shift rule, warm start and stopping test) with ``W r`` read from the bodies' twists:
  from each state of a 6-cube drop (fall, landing, rest) the two give the same next
  velocities to 1e-6 m/s on every step both solve to 1e-9, for both laws and for
  Coulomb's exact one-contact solver (``direct``) too (the sums
  differ in order only; at the default 1e-6 one may stop a sweep before the other,
  1.2e-5 m/s apart on one landing step);
* its solution solves the general route's problem: on every step of a 50-cube drop that
  it reports ``optimal`` (sweep cap 1,000; 24 of 50 steps with contacts, measured) the
  impulses satisfy De Saxcé's conditions on the general route's local problem
  (:func:`contactlab.models.fc_route.local_step`, ``u = W r + q``): the natural map of
  :func:`solvers.numerics.fc_kernels.natural_map` within the tolerance, the distances of
  ``r`` to the cone and of ``û = (u_n + mu ||u_t||, u_t)`` to the dual cone (at least
  ``(|r_t| - mu r_n) / sqrt(1 + mu^2)`` and ``-u_n / sqrt(1 + mu^2)``) within the natural
  map's bound ``tol ||q||``, and ``r . û`` per contact within that bound times the sizes of
  ``r`` and ``u``; a step it reports ``max_iterations`` carries that problem's residual;
* on steps whose solution is unique (Anitescu--Hart: the cone problem's velocities, a
  strictly convex program in ``v``; Coulomb: a cube sliding down an incline and a pile at
  rest), solved to 1e-9 as the peers are, its contact velocities are ``ipm``'s,
  Clarabel's (the SOC QP, a fixed point of them for Coulomb) and Siconos's NSGS (Coulomb,
  where the system Python imports it) to 1e-6 m/s;
* it is taken exactly for the set-ups in its scope; a step stopped at its sweep cap
  reports ``max_iterations`` with its residual (strict: the run's failure).
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

#: agreement of velocities between two solvers of a problem with a unique solution [m/s]
VEL = 1e-6
TOL = 1e-6  # the default tolerance of nsgs (natural map relative to ||q||)
#: De Saxcé's conditions hold to this multiple of the natural map's tolerance
BOUND = 1.0
LAWS = [("coulomb", {}), ("anitescu-hart", {"cone": "soc"})]


def _sim(scene: Any, model: str, opts: dict[str, Any], solver: str = "nsgs", **kw: Any) -> Any:
    return Simulator(scene, "maximal", model, solver, model_options=opts, **kw)


def _local(record: Any, law: str) -> tuple[Any, np.ndarray]:
    """The general route's local problem of a compiled step and the step's impulses on it."""
    step = local_step(record.problem, law, "soc")
    z = record.solution
    full = np.concatenate([z.lambda_N, z.lambda_T])
    return step.fc, full[step.order]


def _u(fc: Any, r: np.ndarray) -> np.ndarray:
    return np.asarray(fc.W @ r + fc.q)


@pytest.mark.parametrize("islands", [False, True])
@pytest.mark.parametrize(
    ("model", "opts"), [*LAWS, ("coulomb", {"solver_settings": {"direct": True}})]
)
def test_steps_equal_the_general_nsgs(model: str, opts: dict[str, Any], islands: bool) -> None:
    scene = get_scenario("box-pile").build(n=6, seed=1)
    # to 1e-9: two runs stopped at 1e-6 may stop a sweep apart (1e-5 m/s, measured)
    opts = {**opts, "solver_tol": 1e-9}
    fast = _sim(scene, model, opts)
    # island by island (the compiled step's default) as the general route's option islands
    # (solvers.islands.solve_islands: each island's problem alone, its own stopping test);
    # the whole problem at once as the general route without it
    general = _sim(
        scene, model, {**opts, "islands": islands}, formulation_options={"compiled": False}
    )
    assert fast.compiled is not None and general.compiled is None
    fast.compiled.islands = islands
    state = fast.initial_state()
    compared = 0
    for i in range(90):
        a, ra = fast.step(state, i)
        b, rb = general.step(state, i)
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        if ra.metrics["status"] == rb.metrics["status"] == "optimal":
            assert np.abs(a.phi - b.phi).max() <= VEL, i
            compared += 1
        state = a
    # the exact one-contact solver cycles on redundant contacts (53 of 90 steps solved to 1e-9)
    assert compared >= (40 if "solver_settings" in opts else 80)


def test_de_saxce_conditions_on_a_50_box_drop() -> None:
    scene = get_scenario("box-pile").build(n=50, seed=0)
    # a cap of 1,000 sweeps (default 10,000) keeps the landing's capped steps short
    sim = _sim(scene, "coulomb", {"max_iter": 1000})
    state = sim.initial_state()
    optimal = contact_steps = 0
    worst = [0.0]
    for i in range(70):
        state, rec = sim.step(state, i)
        m = rec.metrics
        if m["n_contacts"] == 0:
            continue
        contact_steps += 1
        fc, r = _local(rec, "coulomb")
        u = _u(fc, r)
        nc = fc.nc
        qn = float(np.linalg.norm(fc.q))
        res = natural_map(1, 0, fc.mu, np.zeros((0, 2)), fc.row_lo, nc, r, u, qn)
        if m["status"] != "optimal":
            assert m["status"] == "max_iterations"
            assert res == pytest.approx(m["solver_residual"], rel=1e-6, abs=1e-12)
            continue
        optimal += 1
        assert res <= TOL * (1 + 1e-9)
        rc, uc = r.reshape(nc, 3), u.reshape(nc, 3)
        slip = np.linalg.norm(uc[:, 1:], axis=1)
        u_hat_n = uc[:, 0] + fc.mu * slip
        scale = TOL * qn
        # r in K, û in K* (u_n + mu |u_t| >= mu |u_t|: u_n >= 0), r . û = 0
        # distances to the cones within the natural map's bound: the distance of û to K*
        # is at least -u_n / sqrt(1 + mu^2), that of r to K (|r_t| - mu r_n) / sqrt(1 + mu^2)
        lean = np.sqrt(1.0 + fc.mu**2)
        cone_gap = (np.linalg.norm(rc[:, 1:], axis=1) - fc.mu * rc[:, 0]) / lean
        worst[0] = max(worst[0], cone_gap.max() / scale, (-uc[:, 0] / lean).max() / scale)
        assert np.all(cone_gap <= BOUND * scale)
        assert np.all(-uc[:, 0] / lean <= BOUND * scale)
        # per contact r . û >= 0 (r in K, û in K*), so the sum bounds every term
        comp = rc[:, 0] * u_hat_n + np.sum(rc[:, 1:] * uc[:, 1:], axis=1)
        assert np.all(comp >= -scale * (np.abs(rc).sum(axis=1) + 1e-12))
        assert np.all(np.abs(comp) <= scale * (np.abs(rc).sum(axis=1) + np.abs(uc).sum(axis=1)))
    print(f"{optimal} of {contact_steps} steps with contacts optimal, worst {worst[0]:.2f}")
    assert contact_steps >= 40 and optimal >= 20  # measured: 24 of 50 within 1,000 sweeps


def _poses(name: str, params: dict[str, Any], model: str, opts: dict[str, Any], at: range) -> list:
    scene = get_scenario(name).build(**params)
    # solved to 1e-9, as the peers: at 1e-6 the velocities are within about 2e-6 m/s
    sim = _sim(scene, model, {**opts, "solver_tol": 1e-9})
    state = sim.initial_state()
    out = []
    for i in range(max(at) + 1):
        state, rec = sim.step(state, i)
        # the steps it solves to 1e-9 (Gauss--Seidel may stop at its cap on a landing)
        if i in at and rec.metrics["n_contacts"] > 0 and rec.metrics["status"] == "optimal":
            out.append(rec)
    return out


CASES = [
    ("anitescu-hart", {"cone": "soc"}, "ccp", "box-pile", {"n": 4, "seed": 3}, range(30, 90, 4)),
    ("coulomb", {}, "coulomb", "box-incline", {"angle_deg": 30.0}, range(5, 40, 5)),
    ("coulomb", {}, "coulomb", "box-pile", {"n": 6, "layout": "stacked"}, range(2, 30, 5)),
]


def _clarabel(fc: Any) -> np.ndarray:
    """Clarabel's impulses: the cone problem as an SOC QP, Coulomb's law as the fixed point
    of those problems on De Saxcé's shift ``mu ||u_t||``."""
    from solvers import FrictionalContact, solve
    from solvers.fc_dispatch import to_qp

    ccp = fc.with_law("ccp")
    if fc.law == "ccp":
        return np.asarray(solve(to_qp(ccp), "cvxpy:clarabel", tol=1e-10).x)
    shift = np.zeros(fc.n)
    for _ in range(200):
        shifted = FrictionalContact(ccp.W, ccp.q + shift, ccp.mu, "ccp", "soc", row_lo=ccp.row_lo)
        r = np.asarray(solve(to_qp(shifted), "cvxpy:clarabel", tol=1e-10).x)
        u = _u(fc, r).reshape(-1, 3)
        new = np.zeros(fc.n)
        new[0::3] = fc.mu * np.linalg.norm(u[:, 1:], axis=1)
        if np.abs(new - shift).max() < 1e-11:
            break
        shift = new
    return r


@pytest.mark.parametrize(("model", "opts", "law", "scene", "params", "at"), CASES)
def test_agrees_with_ipm_and_clarabel(model, opts, law, scene, params, at) -> None:  # noqa: ANN001
    import solvers

    pytest.importorskip("clarabel")
    records = _poses(scene, params, model, opts, at)
    assert len(records) >= 5
    for rec in records:
        fc, r = _local(rec, law)
        u = _u(fc, r)
        res = solvers.solve(fc, "ipm", tol=1e-9)
        assert res.status == "optimal"
        assert np.abs(_u(fc, res.x) - u).max() <= VEL
        assert np.abs(_u(fc, _clarabel(fc)) - u).max() <= VEL


def test_agrees_with_siconos() -> None:
    from solvers.peers import siconos

    reason = siconos.unavailable()
    if reason is not None:
        pytest.skip(reason)
    records = _poses("box-incline", {"angle_deg": 30.0}, "coulomb", {}, range(5, 40, 5))
    records += _poses("box-pile", {"n": 6, "layout": "stacked"}, "coulomb", {}, range(2, 30, 5))
    problems, ours = [], []
    for rec in records:
        fc, r = _local(rec, "coulomb")
        problems.append((fc.W, fc.q, fc.mu))
        ours.append(_u(fc, r))
    answers = siconos.fc3d(problems, tol=1e-10, max_iter=100000)
    for answer, u in zip(answers, ours, strict=True):
        assert answer["info"] == 0
        assert np.abs(answer["u"] - u).max() <= VEL


def test_scope_and_route() -> None:
    pile = get_scenario("box-pile").build(n=4)
    for model, opts in LAWS:
        step = _sim(pile, model, opts).compiled
        assert type(step).__name__ == "ConeContactStep"
        direct = {**opts, "solver_settings": {"direct": True}}
        assert type(_sim(pile, model, direct).compiled).__name__ == "ConeContactStep"
        assert _sim(pile, model, opts, "ipm").compiled is None
        omega = {**opts, "solver_settings": {"omega": 1.2}}
        assert _sim(pile, model, omega).compiled is None
        assert _sim(pile, model, opts, formulation_options={"compiled": False}).compiled is None
    assert _sim(pile, "anitescu-hart", {"cone": "pyramid"}).compiled is None
    assert _sim(pile, "coulomb", {"cone": "box"}).compiled is None
    assert _sim(pile, "coulomb", {"torsion": 0.01}).compiled is None
    # the model option islands keeps the general route (the batched runner's)
    assert _sim(pile, "coulomb", {"islands": True}).compiled is None
    chain = get_scenario("chain-floor").build()
    assert _sim(chain, "coulomb", {}).compiled is None


def test_a_capped_step_reports_its_residual() -> None:
    from contactlab.errors import StepFailure

    scene = get_scenario("box-stack").build(n=3)
    sim = _sim(scene, "coulomb", {"max_iter": 1})
    assert sim.compiled is not None
    state = sim.initial_state()
    state, rec = sim.step(state, 0)
    m = rec.metrics
    assert m["status"] == "max_iterations" and m["iterations"] == 1
    fc, r = _local(rec, "coulomb")
    res = natural_map(1, 0, fc.mu, np.zeros((0, 2)), fc.row_lo, fc.nc, r, _u(fc, r),
                      float(np.linalg.norm(fc.q)))  # fmt: skip
    assert res > TOL and res == pytest.approx(m["solver_residual"], rel=1e-6)
    strict = _sim(scene, "coulomb", {"max_iter": 1}, strict=True)
    with pytest.raises(StepFailure, match="max_iterations"):
        strict.step(strict.initial_state(), 0)
