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
    errors = [np.abs(run_without_contacts(scene, integrator, h, T)[1].E[:, :3, 3] - p_ref).max() for h in steps]
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0**order
    assert np.all(np.abs(ratios - expected) <= 0.1 * expected), (errors, ratios)


def test_midpoint4_keeps_the_windmill_energy_through_its_fastest_passes() -> None:
    """The windmill (73 coordinates on 18 surface joints) by the triple jump of the
    midpoint rule at its own 2 ms step with substep_angle 0.025 rad over its first
    0.42 s: the kinetic energy peaks at 9.29 J (0.33 s) and surface coordinates turn
    at 60-176 rad/s at 0.38-0.41 s (bodies spinning at up to 100 rad/s).  The largest
    |E(t) - E(0)|, checked every step, stays within 1e-3 of |E(0)| = 0.117 J (measured
    5.1e-5 J at 0.40 s), so also within 1e-3 of the largest kinetic energy; the
    midpoint rule at substep_angle 0.05 reaches 3.1e-3 J there (2 s runs:
    `python -m benchmarks.bench_reduced_integrators --drift`)."""
    scene = get_scenario("windmill").build()
    tree = Tree.from_scene(scene)
    q, v = tree.initial_coordinates()

    def energies(q: np.ndarray, v: np.ndarray) -> tuple[float, float]:
        e = dyn.energies(forward_kinematics(tree, q, v))
        return e["total_energy"], e["kinetic_energy"]

    E0, kmax = energies(q, v)
    err = np.empty(210)
    for k in range(err.size):
        q, v = step_midpoint(tree, q, v, scene.dt, 0.025, order=4)
        e, ke = energies(q, v)
        err[k], kmax = e - E0, max(kmax, ke)
    assert kmax > 9.0  # the exchange is underway: E(0) is not its scale
    assert np.abs(err).max() <= 1e-3 * abs(E0), (np.abs(err).max(), E0)
