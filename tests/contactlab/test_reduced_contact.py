"""Contact in reduced coordinates: rows through ``J_mr`` (Sueda's notes, eq. 2.100–2.101).

The reduced formulation poses contact rows ``N_r = N_m J``, ``T_r = T_m J``, so
every maximal contact model runs unchanged on ``qdot``.  Fact: a 2-link chain
whose tip sphere presses on the floor and slides (scene ``jf-external``,
started touching) moves the same in both formulations as ``h -> 0``; the
formulations differ at first order, and the difference shrinks by at least
half when ``h`` halves (measured over 0.2 s: by 3.2x for all three models).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.reduced.kinematics import forward_kinematics
from contactlab.runspec import build_simulator
from scenarios.joint_friction import external

# PIQP solves the dense reduced problems accurately; OSQP stops at its
# iteration cap on them (anitescu-hart, staggered-projections) at this size.
SOLVER = "qpsolvers:piqp"
START = {"angle_deg": 44.4}  # sphere 0.1 mm above the floor


def _final_positions(model: str, form: str, dt: float, duration: float = 0.1):
    sim = build_simulator("jf-external", START, formulation=form, model=model, solver=SOLVER, dt=dt)
    run = sim.run(steps=int(round(duration / dt)))
    assert run.steps["status"].eq("optimal").all()
    assert run.steps["n_contacts"].min() >= 1  # in contact throughout
    return run.trajectory["position"]


@pytest.mark.parametrize("model", ["frictionless", "anitescu-hart", "staggered-projections"])
def test_articulated_contact_agrees_between_formulations_as_h_shrinks(model):
    diffs = []
    for dt in (1e-2, 5e-3):
        a = _final_positions(model, "reduced", dt)
        b = _final_positions(model, "maximal", dt)
        diffs.append(float(np.abs(a[-1] - b[-1]).max()))
        disp = float(np.abs(a[-1] - a[0]).max())
    assert disp > 0.01
    assert diffs[0] < 0.02 * disp  # measured 1.3 % at h = 1e-2
    assert diffs[1] < 0.5 * diffs[0]


def test_reduced_contact_rows_are_maximal_rows_times_J():
    from contactlab.collision import collide
    from contactlab.contact.rows import contact_rows
    from contactlab.formulation import make_formulation

    scene = external(angle_deg=44.6)  # slightly penetrating: one contact
    form = make_formulation("reduced", scene)
    state = form.initial_state()
    contacts = collide(scene, state.E)
    problem = form.assemble(state, 1e-2, contacts)
    kin = forward_kinematics(form.tree, state.q, state.qdot)
    N, _, T, _ = contact_rows(contacts, kin.E, scene.n_bodies, 1e-2, scene.contact)
    np.testing.assert_allclose(problem.N.toarray(), N @ kin.J, atol=1e-14)
    np.testing.assert_allclose(problem.T.toarray(), T @ kin.J, atol=1e-14)
    # the reduced normal row is the tip's vertical velocity per joint rate (finite differences)
    eps = 1e-7
    z = []
    for k in range(2):
        dq = np.zeros(2)
        dq[k] = eps
        Ek = forward_kinematics(form.tree, state.q + dq).E
        z.append((Ek[1] @ np.array([0.05, 0, 0, 1]))[2] - (kin.E[1] @ np.array([0.05, 0, 0, 1]))[2])
    np.testing.assert_allclose(problem.N.toarray()[0], np.array(z) / eps, rtol=1e-5)
