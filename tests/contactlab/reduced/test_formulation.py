"""The reduced formulation in the shared step pipeline."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg as spla

from contactlab.formulation import make_formulation
from contactlab.problem import StepSolution
from contactlab.reduced import (
    Tree,
    forward_kinematics,
    simulate_adaptive,
    step_linearly_implicit,
)
from contactlab.scene import JointSpec

from .scenes import chain, spherical_double_pendulum


def test_assemble_and_advance_are_one_linearly_implicit_step() -> None:
    scene = chain(3, q0=[0.3, -0.2, 0.5], stiffness=2.0, damping=0.1)
    form = make_formulation("reduced", scene)
    state = form.initial_state()
    tree = form.tree
    kin = forward_kinematics(tree, state.q, state.qdot)
    np.testing.assert_allclose(state.E, kin.E)
    h = 1e-2
    for _ in range(3):
        problem = form.assemble(state, h)
        assert problem.n == tree.nq and problem.G.shape == (0, tree.nq)
        v = spla.spsolve(problem.M, problem.f)
        expected = step_linearly_implicit(tree, state.q, state.qdot, h)
        state = form.advance(state, StepSolution(v, np.zeros(0), np.zeros(0), np.zeros(0)), h)
        np.testing.assert_allclose(state.q, expected[0], atol=1e-12)
        np.testing.assert_allclose(state.qdot, expected[1], atol=1e-12)
    np.testing.assert_allclose(state.phi, forward_kinematics(tree, state.q, state.qdot).phi)


def test_metrics_report_energy_and_momentum() -> None:
    form = make_formulation("reduced", spherical_double_pendulum())
    m = form.metrics(form.initial_state())
    assert m["total_energy"] == pytest.approx(m["kinetic_energy"] + m["potential_energy"])
    assert m["constraint_error"] == 0.0 and m["kinetic_energy"] > 0


def test_reduced_and_maximal_converge_to_the_same_trajectory() -> None:
    """Both first order: the distance to the adaptive reference halves with h."""
    from contactlab.simulator import Simulator

    scene = chain(2, q0=[0.7, 0.3])
    tree = Tree.from_scene(scene)
    q0, qdot0 = tree.initial_coordinates()
    T = 0.2  # past the initial transient where the gap is not yet asymptotic
    ref = simulate_adaptive(tree, q0, qdot0, T, rtol=1e-11, atol=1e-12, t_eval=[T])
    p_ref = forward_kinematics(tree, ref.q[-1]).E[:, :3, 3]
    err: dict[str, list[float]] = {"reduced": [], "maximal": []}
    gap = []
    for h in (4e-3, 2e-3):
        end = {}
        for form in err:
            run = Simulator(scene, form, "frictionless", "kkt", dt=h).run(steps=round(T / h))
            end[form] = run.trajectory["position"][-1]
            err[form].append(np.abs(end[form] - p_ref).max())
        gap.append(np.abs(end["reduced"] - end["maximal"]).max())
    for form, e in err.items():
        assert 1.7 < e[0] / e[1] < 2.3, (form, e)
    assert 1.7 < gap[0] / gap[1] < 2.3, gap


def test_loop_closures_become_constraint_rows() -> None:
    scene = chain(2)
    loop = JointSpec("close", "revolute", None, "link1", closes_loop=True)
    form = make_formulation("reduced", scene.with_(joints=scene.joints + (loop,)))
    assert [c.name for c in form.constraints] == ["close"]  # type: ignore[attr-defined]
