"""Joint friction scenes (REDMAX 27–33): BISP against Staggered Projections, and physical facts.

* BISP (reduced coordinates) and Staggered Projections on the equivalent
  maximal model (``joint-friction-sp``) compute the same friction law by
  independent routes (velocities and one traversal vs the joints' own
  multipliers); the two formulations differ at first order in ``h``, so
  their trajectories must agree to a small fraction of the motion and the
  difference must halve with ``h``.
* A slider with joint friction on an incline accelerates at
  ``g (sin a - mu cos a)`` (block on an incline) in both models, and holds
  when ``tan a < mu``.
* A four-bar whose loop (closing joint included) has enough joint friction
  holds still under gravity, and swings without it.
* The walking four-bar moves forward under its driven crank, and does not
  when the ground has no friction (no horizontal force: the centre of mass
  keeps its horizontal position up to the step's momentum error).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.runspec import build_simulator

SOLVER = "qpsolvers:proxqp"
G = 9.81


def _run(name: str, form: str, model: str, steps: int, dt: float | None = None, **params):
    sim = build_simulator(name, params, formulation=form, model=model, solver=SOLVER, dt=dt)
    return sim, sim.run(steps=steps)


def _difference(name: str, steps: int, dt: float, **params) -> tuple[float, float]:
    """Largest body-position difference BISP vs maximal SP, and the largest displacement [m]."""
    _, a = _run(name, "reduced", "bisp", steps, dt, **params)
    _, b = _run(name, "maximal", "joint-friction-sp", steps, dt, **params)
    pa, pb = a.trajectory["position"], b.trajectory["position"]
    assert a.steps["status"].eq("optimal").all() and b.steps["status"].eq("optimal").all()
    return float(np.abs(pa - pb).max()), float(np.abs(pa - pa[0]).max())


@pytest.mark.parametrize(
    ("name", "tol"),
    # measured at h = 1e-2 over 0.2 s: 0.30 %, 0.06 %, 1e-9 (pure translation)
    [("jf-revolute", 0.005), ("jf-spherical", 0.002), ("jf-prismatic", 1e-6)],
)
def test_bisp_agrees_with_staggered_projections_on_the_maximal_model(name, tol):
    diff, disp = _difference(name, 20, 1e-2)
    assert disp > 0.01
    assert diff < tol * disp


@pytest.mark.parametrize("name", ["jf-revolute", "jf-external"])
def test_bisp_and_maximal_sp_converge_together_as_h_shrinks(name):
    """First order: the difference at h/2 is about half of that at h (measured 0.54, 0.45)."""
    params = {"angle_deg": 45.0} if name == "jf-external" else {}
    coarse, disp = _difference(name, 20, 1e-2, **params)
    fine, _ = _difference(name, 40, 5e-3, **params)
    assert coarse < 0.06 * disp
    assert fine < 0.65 * coarse


@pytest.mark.parametrize(("form", "model"), [("reduced", "bisp"), ("maximal", "joint-friction-sp")])
def test_slider_on_incline_accelerates_as_a_block_on_an_incline(form, model):
    """Implicit Euler gives ``s_n = a h^2 n (n + 1) / 2`` exactly; eps = 1e-6 bounds the error."""
    h, n, mu, incline = 1e-2, 20, 0.8, np.pi / 3
    _, run = _run("jf-prismatic", form, model, n, h, mu=mu, sliders=1)
    p = run.trajectory["position"][:, 0]
    a = G * (np.sin(incline) - mu * np.cos(incline))
    assert np.linalg.norm(p[-1] - p[0]) == pytest.approx(a * h * h * n * (n + 1) / 2, rel=1e-5)
    _, held = _run("jf-prismatic", form, model, n, h, mu=mu, sliders=1, incline_deg=35.0)
    q = held.trajectory["position"][:, 0]
    assert np.abs(q - q[0]).max() < 1e-9  # tan 35 deg = 0.70 < 0.8


def test_fourbar_with_joint_friction_holds_and_without_swings():
    """Released at rest under gravity: mu = 3 at all joints (the loop joint too) holds it."""
    _, held = _run("jf-fourbar", "reduced", "bisp", 30, mu=3.0)
    _, free = _run("jf-fourbar", "reduced", "bisp", 30, mu=0.0)
    dq_held = np.abs(held.trajectory["q"] - held.trajectory["q"][0]).max()
    dq_free = np.abs(free.trajectory["q"] - free.trajectory["q"][0]).max()
    assert dq_held < 1e-8
    assert dq_free > 0.05
    assert held.steps["constraint_error"].max() < 1e-6


def _walk(mu_ground: float, steps: int) -> float:
    # The foot's stick phases make the staggered loop converge slowly (a rate
    # of about 0.994 per iteration); 20 iterations instead of the reference's
    # 100 change the distance walked by 4 % and keep the test fast.
    sim = build_simulator(
        "walking-fourbar",
        {"mu_ground": mu_ground},
        formulation="reduced",
        model="bisp",
        solver=SOLVER,
        model_options={"max_outer": 20},
    )
    run = sim.run(steps=steps)
    m = sim.scene.masses
    com = np.einsum("b,tbi->ti", m, run.trajectory["position"]) / m.sum()
    assert run.steps["n_contacts"].max() >= 3
    return float(com[-1, 0] - com[0, 0])


def test_walking_fourbar_walks_forward_only_with_ground_friction():
    """0.4 s (0.8 crank turn at 4 pi rad/s).

    Measured: +4.8 cm with mu = 0.8, -0.04 cm with mu = 0.
    """
    forward = _walk(0.8, 80)
    slipping = _walk(0.0, 80)
    assert forward > 0.03
    assert abs(slipping) < 0.1 * forward


def test_driven_crank_follows_its_prescribed_angle_against_joint_friction():
    """Scene 32: the prescribed crank (Sueda's notes §2.9) turns at -4 pi rad/s although every joint
    has friction; the hinged base swings in reaction and the loop stays closed."""
    sim, run = _run("jf-crank", "reduced", "bisp", 20)
    tree = sim.formulation.tree
    q, t = run.trajectory["q"], run.trajectory["t"]
    crank = q[:, tree.dofs("crank_joint")].ravel()
    np.testing.assert_allclose(crank, np.deg2rad(60.0) - 4 * np.pi * t, atol=1e-8)
    assert np.abs(q[:, tree.dofs("root")]).max() > 0.1
    assert run.steps["constraint_error"].max() < 1e-3  # [m], Baumgarte 1/h on the loop
