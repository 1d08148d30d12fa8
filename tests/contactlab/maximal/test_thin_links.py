"""Thin links in maximal coordinates: the gyroscopic step of the maximal formulation.

The REDMAX double spherical pendulum (two 1 x 1 x 10 cm links, I_max / I_min =
50.5) diverged at its default step (h = 10 ms) with the ``rotated`` gyroscopic
term: turning ``I omega`` by ``exp(-h [omega])`` multiplies the spin about the
long axis by ``1 + h^2 |omega_perp|^2 (I_max / I_min - 1) / 2`` per step,
although a symmetric body keeps that spin exactly (Euler's equations:
``I_z omega_z' = (I_x - I_y) omega_x omega_y = 0``).  The default is now the
implicit midpoint rule, which keeps the rotational kinetic energy, ``|I omega|``
and the symmetric spin.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.errors import DivergenceError
from contactlab.maximal import assembly as asm
from contactlab.maximal.formulation import MaximalFormulation
from contactlab.runspec import simulate
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

# the REDMAX link: 10 g, 1 x 1 x 10 cm
LINK = np.array([8.4166666667e-06, 8.4166666667e-06, 1.6666666667e-07, 0.01, 0.01, 0.01])


def test_midpoint_gyroscopic_step_keeps_energy_momentum_and_symmetric_spin() -> None:
    rng = np.random.default_rng(7)
    mdiag = np.vstack([LINK, [0.1, 0.2, 0.25, 2.0, 2.0, 2.0]])
    for h in (1e-3, 1e-2, 5e-2):
        phi = 5.0 * rng.standard_normal((2, 6))
        p = asm.midpoint_momentum(mdiag, phi, h)
        w, w_new = phi[:, :3], p[:, :3] / mdiag[:, :3]
        energy = np.sum(mdiag[:, :3] * w * w, axis=1)
        np.testing.assert_allclose(np.sum(p[:, :3] * w_new, axis=1), energy, rtol=1e-12)
        np.testing.assert_allclose(
            np.linalg.norm(p[:, :3], axis=1),
            np.linalg.norm(mdiag[:, :3] * w, axis=1),
            rtol=1e-12,
        )
        # the symmetric link keeps its spin about the long axis exactly
        assert p[0, 2] == pytest.approx(LINK[2] * w[0, 2], rel=1e-12, abs=1e-20)
        # the linear momentum only turns
        np.testing.assert_allclose(
            np.linalg.norm(p[:, 3:], axis=1), np.linalg.norm(mdiag[:, 3:] * phi[:, 3:], axis=1)
        )
        # and the step is the Euler equations to first order (eq. 1.23)
        explicit = mdiag * phi + h * asm.coriolis(mdiag, phi)
        scale = np.abs(mdiag * phi).max(axis=1, keepdims=True)
        assert np.all(np.abs(p - explicit) / scale < 40 * (h * 5.0 * 3) ** 2)


def test_rotated_step_feeds_the_long_axis_spin_by_the_predicted_factor() -> None:
    # the cause of the divergence, to second order in h
    w = np.array([[3.0, 4.0, 0.2]])  # |omega_perp| = 5 rad/s
    phi = np.hstack([w, np.zeros((1, 3))])
    ratio = LINK[0] / LINK[2]
    for h in (1e-3, 2e-3):
        spin = asm.rotated_momentum(LINK[None], phi, h)[0, 2] / LINK[2]
        predicted = 1 + h**2 * 25.0 * (ratio - 1) / 2
        assert spin / 0.2 == pytest.approx(predicted, rel=3e-3)
    # about 6 % per step at the scene's default h = 10 ms
    assert 1 + 1e-4 * 25.0 * (ratio - 1) / 2 == pytest.approx(1.062, abs=1e-3)


def test_redmax_spherical_default_maximal_run_is_stable_and_passive() -> None:
    """The whole default run (h = 10 ms, 5 s, guard on) completes; the passive scene never
    gains energy and loses at most 10 % of m g l over 5 s (velocity-level stabilization
    dissipates, first order in h); the joints stay within 1 mm; link 1 (one joint on its
    axis) keeps zero spin about its axis."""
    run = simulate("redmax-spherical", formulation="maximal")
    assert run.status == "ok" and len(run.steps) == 500 and run.solver == "kkt"
    energy = run.steps["total_energy"].to_numpy()
    e0 = run.initial_metrics["total_energy"]
    mgl = 0.02 * 9.81 * 0.2  # both links' weight across the pendulum's length [J]
    assert energy.max() - e0 < 1e-3 * mgl  # measured: -5.4e-5 J (never above E(0))
    assert e0 - energy[-1] < 0.1 * mgl  # measured: 3.75e-3 J = 9.6 % of 0.039 J
    assert run.steps["constraint_error"].max() < 1e-3  # measured: 5.7e-4 m
    assert np.abs(run.trajectory["twist"][:, 1, 2]).max() < 1e-10


def test_redmax_spherical_with_the_rotated_step_diverges_where_it_did() -> None:
    scene = get_scenario("redmax-spherical").build()
    sim = Simulator(scene, MaximalFormulation(scene, coriolis="rotated"), "frictionless", "kkt")
    with pytest.raises(DivergenceError, match=r"step 1[0-9]{2} .*energy gain"):
        sim.run(duration=2.0)
