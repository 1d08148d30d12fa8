"""Joint rows and contact rows in one step problem (the product path: simulator + model).

Fact: a uniform rod (length 1 m, mass 2 kg) hinged at one end and resting
horizontally with a small sphere at its other end on a frictionless floor is
held in equilibrium by two equal supports, ``m g / 2`` each (moments about
either support).  After 50 steps at h = 1e-3 with the frictionless contact
QP (OSQP) the contact impulse per step over h and the
hinge's vertical reaction both equal 9.81 N to 1e-4 relative, and the rod
stays at rest (speeds below 1e-6 m/s).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.maximal import MaximalFormulation
from contactlab.scene import Body, JointSpec, Scene
from contactlab.shapes import Plane, Sphere
from contactlab.simulator import Simulator


def test_hinged_rod_on_the_floor_splits_its_weight_between_hinge_and_contact() -> None:
    m, L, r = 2.0, 1.0, 0.01
    tip = se3.make_transform(None, [L / 2, 0.0, 0.0])
    rod = Body(
        "rod", m, [1e-4, m * L * L / 12, m * L * L / 12], shapes=(Sphere(radius=r, pose=tip),)
    )
    # bodies jointed to the world do not collide with it, so the hinge sits on a welded post
    post = Body("post", 1.0, [0.01, 0.01, 0.01])
    weld = JointSpec(
        "weld", "fixed", None, "post", frame_child=se3.make_transform(None, [0, 0, -r])
    )
    hinge = JointSpec(
        "hinge",
        "revolute",
        "post",
        "rod",
        frame_child=se3.make_transform(None, [-L / 2, 0, 0]),
        axis=(0.0, 1.0, 0.0),
    )
    # the hinge at height r, so the tip sphere just touches the floor z = 0
    scene = Scene(
        "rod",
        (rod, post),
        (weld, hinge),
        static_shapes=(Plane(),),
        initial_E=np.stack(
            [se3.make_transform(None, [L / 2, 0, r]), se3.make_transform(None, [0, 0, r])]
        ),
    )
    form = MaximalFormulation(scene)
    sim = Simulator(scene, form, "frictionless", "osqp", dt=1e-3)
    state = sim.initial_state()
    for k in range(50):
        state, record = sim.step(state, k)
    problem, solution = record.problem, record.solution
    assert problem.n_contacts == 1
    assert solution.lambda_N[0] / 1e-3 == pytest.approx(m * 9.81 / 2, rel=1e-4)
    hinge_wrench = form.reaction_wrenches(problem, solution)["hinge"][0]  # on the rod
    assert (state.E[0, :3, :3] @ hinge_wrench[3:])[2] == pytest.approx(m * 9.81 / 2, rel=1e-4)
    assert np.abs(state.phi).max() < 1e-6
