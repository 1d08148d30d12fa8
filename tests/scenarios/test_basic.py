"""The jointed scenarios (pendulum, chain, branching, spring-chain, spring-damper).

Facts
-----
* ``pendulum`` at 5 deg (1 m, 2 cm square link) on the maximal formulation
  at h = 1e-3: the half period between the first two zero crossings matches
  the compound-pendulum formula ``T = 2 pi sqrt(I_pivot / (m g d))`` within
  1 % (measured +0.048 %, which is the 5 deg amplitude correction
  ``theta^2/16 = 0.048 %``).
* Initial placement from the joints' q0 reproduces REDMAX scene 0's geometry:
  link centres at ``sum`` of 10 cm segments along the accumulated hinge angles.
* The maximal and reduced formulations, independent discretizations of the
  same dynamics (one with constraint rows, one with joint coordinates),
  converge to the same motion: the largest body-position difference after
  0.2 s halves with h (measured ratios 1.96-1.99 from h = 4e-3 to 2e-3;
  differences 1.0e-3, 3.0e-4, 6.7e-5, 6.5e-4 m at h = 2e-3 for chain (scene
  1), branching, spring-chain, spring-damper).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.runspec import simulate
from contactlab.scenario import get_scenario


def test_pendulum_small_amplitude_period_matches_the_compound_pendulum() -> None:
    length, width, mass, g = 1.0, 0.02, 1.0, 9.81
    h = 1e-3
    run = simulate(
        "pendulum",
        {"angle_deg": 5.0},
        formulation="maximal",
        solver="kkt",
        dt=h,
        steps=1300,
        progress=False,
    )
    x = run.trajectory["position"][:, 0, 0]  # horizontal offset of the link centre
    t = run.trajectory["t"]
    k = np.flatnonzero(np.sign(x[1:]) != np.sign(x[:-1]))[:2]
    crossings = t[k] + (t[k + 1] - t[k]) * x[k] / (x[k] - x[k + 1])
    d = 0.5 * length
    inertia = mass * (length**2 + width**2) / 12 + mass * d * d
    period = 2 * np.pi * np.sqrt(inertia / (mass * g * d))
    assert 2 * (crossings[1] - crossings[0]) == pytest.approx(period, rel=0.01)
    assert (
        run.steps["constraint_error"].max() < 1e-12
    )  # a single hinge about the pivot does not drift


def test_chain_defaults_place_redmax_scene_0() -> None:
    from contactlab.formulation import make_formulation

    scene = get_scenario("chain").build()
    E = make_formulation("maximal", scene).initial_state().E
    angles = np.deg2rad([45, 45, 90, 90, 135])  # revolute, fixed, revolute, fixed, revolute
    d = np.stack([np.cos(angles), np.zeros(5), -np.sin(angles)], axis=1)
    ends = np.vstack([np.zeros(3), np.cumsum(0.1 * d, axis=0)])
    assert np.allclose(E[:, :3, 3], ends[:-1] + 0.05 * d, atol=1e-14)
    assert [b.mass for b in scene.bodies] == pytest.approx([0.01] * 5, rel=1e-12)


@pytest.mark.parametrize(
    "name, params",
    [
        ("chain", {"n_links": 3, "joints": "R", "axes": "zyz", "angles_deg": (0.0, 90.0, 90.0)}),
        ("branching", {}),
        ("spring-chain", {}),
        ("spring-damper", {}),
    ],
)
def test_maximal_and_reduced_converge_to_the_same_motion(name: str, params: dict) -> None:
    diffs = []
    for h in (4e-3, 2e-3):
        end = {}
        for formulation in ("maximal", "reduced"):
            run = simulate(
                name,
                params,
                formulation=formulation,
                solver="kkt",
                dt=h,
                steps=int(round(0.2 / h)),
                progress=False,
            )
            assert run.status == "ok"
            end[formulation] = run.trajectory["position"][-1]
        diffs.append(np.abs(end["maximal"] - end["reduced"]).max())
    assert diffs[1] < 2e-3
    assert 1.8 < diffs[0] / diffs[1] < 2.2
