"""Integrators of the reduced formulation on the surface-joint scenes (torus chain, windmill).

Order of the second-order integrators and of the fourth-order composition of the
midpoint rule against the adaptive solution at rtol 1e-12, and the midpoint
rules' energy error where the windmill's coordinates turn fastest.  Energies are
measured against the largest kinetic energy of the run: ``E(0)`` depends on
where gravity's zero is (docs/reduced-integration.md).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from contactlab.reduced import dynamics as dyn
from contactlab.reduced import simulate_adaptive
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.steppers import step_midpoint
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
    3.98-3.99, 4.00 and about 16)."""
    scene, _, p_ref = _torus_chain()
    errors = [
        np.abs(run_without_contacts(scene, integrator, h, T)[1].E[:, :3, 3] - p_ref).max()
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


def test_midpoint4_keeps_the_windmill_energy_through_its_fastest_passes() -> None:
    """The windmill (73 coordinates on 18 surface joints) by the triple jump of the
    midpoint rule at its own 2 ms step with substep_angle 0.025 rad through the fastest
    pass of its first 0.45 s, found on the adaptive solution (DOP853, rtol 1e-8): a
    surface coordinate turning at 243 rad/s at 0.318 s, next to the largest kinetic energy
    (9.29 J at 0.316 s).  From the adaptive state 30 ms before that pass to 20 ms after
    it, the largest |E(t) - E(0)|, checked every step, stays within 1e-3 of |E(0)| =
    0.117 J (measured 1.2e-6 J), so also within 1e-3 of the largest kinetic energy (2 s runs:
    `python -m benchmarks.bench_reduced_integrators --drift`)."""
    scene, tree, ref = _windmill_reference()

    def energies(q: np.ndarray, v: np.ndarray) -> tuple[float, float]:
        e = dyn.energies(forward_kinematics(tree, q, v))
        return e["total_energy"], e["kinetic_energy"]

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
        q, v = step_midpoint(tree, q, v, scene.dt, 0.025, order=4)
        err[k], top = energies(q, v)[0] - E0, max(top, float(np.abs(v).max()))
    assert top >= 0.9 * speed[fastest]  # through the pass
    assert np.abs(err).max() <= 1e-3 * abs(E0), (np.abs(err).max(), E0)
