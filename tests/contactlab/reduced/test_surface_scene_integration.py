"""Integrators of the reduced formulation on the surface-joint scenes (torus chain, windmill).

Order of the second-order integrators and of the fourth-order composition of the
midpoint rule against the adaptive solution at rtol 1e-12, and the midpoint
rules' energy error where the windmill's coordinates turn fastest.  Energies are
measured against the largest kinetic energy of the run: ``E(0)`` depends on
where gravity's zero is (docs/reduced-integration.md).
"""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from contactlab.formulation import make_formulation
from contactlab.reduced import dynamics as dyn
from contactlab.reduced import simulate_adaptive
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.steppers import DEFAULT_SUBSTEP_ANGLE, step_midpoint
from contactlab.reduced.tree import Tree
from contactlab.scenario import get_scenario

from .scenes import run_without_contacts

#: a torus chain of three tori (10 coordinates) over T [s]
TORI, T = 3, 0.1


@cache
def _torus_chain() -> tuple:  # (scene, tree, reference body positions at T)
    scene = get_scenario("torus-chain").build(n=TORI)
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    ref = simulate_adaptive(tree, q0, v0, T, rtol=1e-12, atol=1e-13, t_eval=np.array([T]))
    return scene, tree, forward_kinematics(tree, ref.q[-1]).E[:, :3, 3]


@pytest.mark.parametrize(
    ("integrator", "order", "steps"),
    [
        ("trapezoidal", 2, (4e-3, 2e-3, 1e-3)),
        ("bridson-marino", 2, (4e-3, 2e-3, 1e-3)),
        ("midpoint", 2, (4e-3, 2e-3, 1e-3)),
        ("midpoint4", 4, (5e-3, 2.5e-3, 1.25e-3)),
    ],
)
def test_order_on_the_torus_chain(integrator: str, order: int, steps: tuple) -> None:
    """Torus-torus surface joints (varying M, chart Sdot in the bias): body positions at
    T = 0.1 s against DOP853 at rtol 1e-12 fall by 2^order +- 10 % per halving of h
    (4 +- 0.4 for the second-order integrators at the scene's own step and its halves
    and double, 16 +- 1.6 for the triple jump at 5, 2.5 and 1.25 ms; measured 4.00-4.02,
    3.98-3.99, 4.00 and about 16).  Every step is one step of its integrator
    (``substep_angle=inf``: the triple jump takes substeps by default)."""
    scene, _, p_ref = _torus_chain()
    options = {"substep_angle": math.inf} if integrator == "midpoint4" else {}
    errors = [
        np.abs(
            run_without_contacts(scene, integrator, h, T, **options)[1].E[:, :3, 3] - p_ref
        ).max()
        for h in steps
    ]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0**order
    assert np.all(np.abs(ratios - expected) <= 0.1 * expected), (errors, ratios)


@cache
def _windmill_reference() -> tuple:  # (scene, tree, DOP853 samples every step over 0.45 s)
    scene = get_scenario("windmill").build()
    tree = Tree.from_scene(scene)
    q0, v0 = tree.initial_coordinates()
    samples = np.arange(226) * scene.dt
    ref = simulate_adaptive(tree, q0, v0, samples[-1], rtol=1e-8, atol=1e-10, t_eval=samples)
    return scene, tree, ref


def _windmill_energy(tree: Tree, q: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    e = dyn.energies(forward_kinematics(tree, q, v))
    return e["total_energy"], e["kinetic_energy"]


def test_midpoint4_keeps_the_windmill_energy_through_its_fastest_passes() -> None:
    """The windmill (73 coordinates on 18 surface joints) by the triple jump of the
    midpoint rule at its own 2 ms step at its default substep angle (0.025 rad) through the fastest
    pass of its first 0.45 s, found on the adaptive solution (DOP853, rtol 1e-8): a
    surface coordinate turning at 243 rad/s at 0.318 s, next to the largest kinetic energy
    (9.29 J at 0.316 s).  From the adaptive state 30 ms before that pass to 20 ms after
    it, the largest |E(t) - E(0)|, checked every step, stays within 1e-3 of |E(0)| =
    0.117 J (measured 6.2e-7 J; 1.2e-6 J when the triple jump bounded the velocity's relative
    change by ``sqrt(angle)``), so also within 1e-3 of the largest kinetic energy (2 s runs:
    `python -m benchmarks.bench_reduced_integrators --drift`)."""
    scene, tree, ref = _windmill_reference()
    angle = make_formulation("reduced", scene, integrator="midpoint4").substep_angle
    assert angle == DEFAULT_SUBSTEP_ANGLE["midpoint4"] == 0.025

    def energies(q: np.ndarray, v: np.ndarray) -> tuple[float, float]:
        return _windmill_energy(tree, q, v)

    E0 = energies(ref.q[0], ref.qdot[0])[0]
    speed = np.abs(ref.qdot).max(axis=1)
    fastest = int(np.argmax(speed))
    start, stop = fastest - 15, fastest + 10
    kinetic = [energies(q, v)[1] for q, v in zip(ref.q, ref.qdot)]
    assert start <= int(np.argmax(kinetic)) <= stop  # the exchange peaks in the window
    assert max(kinetic) > 9.0  # E(0) is not the energy scale
    q, v = ref.q[start], ref.qdot[start]
    err, top = np.empty(stop - start), 0.0
    for k in range(err.size):
        q, v = step_midpoint(tree, q, v, scene.dt, angle, order=4)
        err[k], top = energies(q, v)[0] - E0, max(top, float(np.abs(v).max()))
    assert top >= 0.9 * speed[fastest]  # through the pass
    assert np.abs(err).max() <= 1e-3 * abs(E0), (np.abs(err).max(), E0)


def test_midpoint4_keeps_the_windmill_energy_through_a_race() -> None:
    """A pass where the windmill's coordinates race: a state (``data/windmill_race.npz``)
    at 1.71 s of the 2 s run of ``midpoint4`` at substep_angle 0.0125 through the reduced
    formulation, 6 ms before a surface coordinate (the contact point's longitude on a torus,
    its relative curvature against the ellipsoid degenerating) accelerates past 3500 rad/s
    and back within a fraction of a millisecond.  The error of a substep of relative
    velocity change ``rho`` there is ``(hs |qdot|) rho^4``: with ``rho`` bounded by the
    substep angle it is of the order ``angle^5`` of the rest of the run, so over the three
    steps through the race the largest ``|E(t) - E(t0)|`` stays within 1e-3 of the scene's
    ``|E(0)| = 0.117 J`` at the default angle (measured 2.0e-5 J; with the earlier bound, about
    ``rho <= sqrt(angle)`` 8.3e-4 J at 0.025 and 4.2e-4 J at 0.0125 rad, the loss of the
    2 s run), and halving the angle cuts it by more than 16 (measured 1.5e-8 J at 0.0125: the
    error falls faster than ``angle^4`` once the race is resolved)."""
    scene = get_scenario("windmill").build()
    tree = Tree.from_scene(scene)
    E0 = _windmill_energy(tree, *tree.initial_coordinates())[0]
    data = np.load(Path(__file__).parent / "data" / "windmill_race.npz")
    E_start = _windmill_energy(tree, data["q"], data["qdot"])[0]
    assert abs(E_start - E0) < 1e-5  # a state of the scene's own run
    worst = {}
    for angle in (DEFAULT_SUBSTEP_ANGLE["midpoint4"], 0.5 * DEFAULT_SUBSTEP_ANGLE["midpoint4"]):
        q, v, err = data["q"], data["qdot"], 0.0
        for _ in range(3):
            q, v = step_midpoint(tree, q, v, scene.dt, angle, order=4)
            err = max(err, abs(_windmill_energy(tree, q, v)[0] - E_start))
        worst[angle] = err
    # the race, on the adaptive solution from the same state (sampled every 2 us)
    samples = np.linspace(0.0, 3 * scene.dt, 3001)
    ref = simulate_adaptive(
        tree, data["q"], data["qdot"], samples[-1], rtol=1e-8, atol=1e-10, t_eval=samples
    )
    assert np.abs(data["qdot"]).max() < 400.0 < 3000.0 < np.abs(ref.qdot).max()
    assert worst[0.025] <= 1e-3 * abs(E0), worst
    assert worst[0.0125] <= worst[0.025] / 16.0, worst
