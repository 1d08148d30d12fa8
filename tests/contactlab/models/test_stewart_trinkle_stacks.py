"""Stewart--Trinkle with Lemke on ill-conditioned stacks: every step solved, the stack at rest.

Two runs that once stopped on a Lemke secondary ray although every step LCP
has a solution (an exact rational run of the same lexicographic method finds
one; ``tests/solvers/test_lemke_regressions.py`` holds the captured LCPs):

- ``mass-ratio-stack`` (a 10 kg cube on a 0.1 kg cube, side 0.2 m, mu = 0.5,
  k = 4) at h = 10 ms failed at step 27 (t = 0.27 s): the walk reached a
  basis where ``z0`` was 0 to rounding, then kept pivoting degenerately
  until the entering column had no positive entry;
- ``box-pile`` with 4 cubes (seed 0, h = 5 ms) failed at step 68 with the
  same mechanism and, once that was fixed, at step 100 with a pivot on an
  entry of 3e-8 that is exactly 0 for that basis (rounding carried over from
  bases of condition number 1e12 earlier in the walk).

Facts, with their tolerances:

- the stack, released at rest, stays at rest for 0.3 s at h = 10 ms, for
  mass ratios 100 and 1000: every step ``optimal`` with the solver's
  natural-map residual below the model's 1e-9; positions within 1e-9 m of
  the start (measured 6e-13 m at ratio 100), twists below 1e-9 (measured
  2e-11), penetration below 1e-9 m (measured 1e-13);
- at the last step the normal impulses carry the weights: the ground
  contacts ``(1 + ratio) m g h`` and the cube--cube contacts ``ratio m g h``
  (1e-9 N s; both are exact consequences of zero velocity before and after
  the step);
- the 4-cube pile runs 0.505 s (101 steps, through both old failures) with
  every step ``optimal``, solver residual below 1e-9, and the per-step
  normal-complementarity and cone metrics below 1e-9 (rounding of the
  solved LCP; no contact gains a tolerance).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

G = 9.81
LIGHT = 0.1  # mass of the bottom cube [kg] (scene default)


def stack_run(ratio: float, h: float, steps: int) -> tuple[list, np.ndarray, np.ndarray]:
    """Step the mass-ratio stack; return the step records, positions and twists."""
    scene = get_scenario("mass-ratio-stack").build(ratio=ratio, mass=LIGHT)
    sim = Simulator(scene, "maximal", "stewart-trinkle", "lemke", dt=h)
    state = sim.initial_state()
    E0, _ = sim.formulation.maximal(state)
    records, positions, twists = [], [np.asarray(E0)[:, :3, 3].copy()], []
    for i in range(steps):
        state, record = sim.step(state, i)
        E, phi = sim.formulation.maximal(state)
        records.append(record)
        positions.append(np.asarray(E)[:, :3, 3].copy())
        twists.append(np.asarray(phi).copy())
    return records, np.array(positions), np.array(twists)


@pytest.mark.parametrize("ratio", [100.0, 1000.0])
def test_mass_ratio_stack_stays_at_rest_with_every_step_solved(ratio: float) -> None:
    h, steps = 1e-2, 30  # 0.3 s; the old failure was at step 27
    records, pos, twist = stack_run(ratio, h, steps)
    assert [r.solution.status for r in records] == ["optimal"] * steps
    assert max(r.metrics["solver_residual"] for r in records) < 1e-9
    assert np.abs(pos - pos[0]).max() < 1e-9
    assert np.abs(twist).max() < 1e-9
    assert max(r.metrics["penetration"] for r in records) < 1e-9
    # the last step's normal impulses carry the weights, to 1e-9 of the weight: the
    # step LCP is solved to a velocity residual of ~4e-11 m/s, which on the 100 kg
    # upper cube of ratio 1000 is an impulse of ~8e-9 N s (measured 7.9e-9, 8e-10
    # of its weight), above an absolute 1e-9 N s
    last = records[-1]
    N = last.problem.N.toarray()
    ground = np.all(N[:, 6:] == 0.0, axis=1)  # rows acting on the bottom cube only
    lam = last.solution.lambda_N
    assert ground.any() and (~ground).any()
    assert lam[ground].sum() == pytest.approx((1.0 + ratio) * LIGHT * G * h, rel=1e-9)
    assert lam[~ground].sum() == pytest.approx(ratio * LIGHT * G * h, rel=1e-9)


def test_four_cube_pile_runs_through_the_old_failing_steps() -> None:
    scene = get_scenario("box-pile").build(n=4, seed=0)
    sim = Simulator(scene, "maximal", "stewart-trinkle", "lemke", dt=5e-3)
    run = sim.run(steps=101)
    steps = run.steps
    assert len(steps) == 101
    assert set(steps["status"]) == {"optimal"}
    assert steps["solver_residual"].max() < 1e-9
    assert steps["normal_complementarity"].max() < 1e-9
    assert steps["cone_violation"].max() < 1e-9
    assert steps["n_contacts"].iloc[[68, 100]].min() > 0  # the old failing steps had contacts
