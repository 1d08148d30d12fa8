"""The Si & Guenter scenes: sizes, contact kinematics over a run, energy, recursive = dense."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.geometry.surfaces import surface_from
from contactlab.reduced import (
    Tree,
    energies,
    forward_dynamics_dense,
    forward_dynamics_recursive,
    forward_kinematics,
    simulate_adaptive,
)
from contactlab.reduced.integrators import Trajectory
from scenarios import SCENARIOS

# turn of half a revolution about the first tangent: the child's frame at the contact
FLIP = se3.make_transform(se3.exp_so3([np.pi, 0.0, 0.0]))


@pytest.fixture(scope="module")
def chain10() -> Tree:
    return Tree.from_scene(SCENARIOS["torus-chain"].build(n=10))


@pytest.fixture(scope="module")
def windmill() -> Tree:
    return Tree.from_scene(SCENARIOS["windmill"].build())


def test_sizes_match_si_guenter_table_1(chain10: Tree, windmill: Tree) -> None:
    """TC10 has 38 coordinates, TC20 78, the windmill 73 (Si & Guenter, Table 1)."""
    assert chain10.nq == 38
    assert Tree.from_scene(SCENARIOS["torus-chain"].build(n=20)).nq == 78
    assert windmill.nq == 73
    kinds = {
        (
            type(s.params["parent_surface"]).__name__,
            type(s.params["child_surface"]).__name__,
        )
        for s in windmill.specs
        if s.kind == "surface_surface"
    }
    for pair in [
        ("Sphere", "Sphere"),
        ("Sphere", "Ellipsoid"),
        ("Sphere", "Torus"),
        ("Torus", "Torus"),
        ("Torus", "Ellipsoid"),
    ]:
        assert pair in kinds


def _contact_errors(tree: Tree, q: np.ndarray) -> tuple[float, float]:
    """Largest distance between the two surface points and |n_A + n_B| over all contacts.

    The surfaces are evaluated on their own (lambdified frames), independently
    of the generated joint code; bodies come from the tree's kinematics.
    """
    kin = forward_kinematics(tree, q)
    E = kin.E
    dist, normal = 0.0, 0.0
    for spec in tree.specs:
        if spec.kind != "surface_surface":
            continue
        qi = q[tree.dofs(spec.name)]
        A = surface_from(spec.params["parent_surface"]).evaluate(qi[0], qi[1])
        B = surface_from(spec.params["child_surface"]).evaluate(qi[2], qi[3])
        p = tree.scene.body_index(spec.parent)
        c = tree.scene.body_index(spec.child)
        FA = E[p] @ spec.frame_parent @ A
        FB = E[c] @ spec.frame_child @ B
        dist = max(dist, float(np.linalg.norm(FA[:3, 3] - FB[:3, 3])))
        normal = max(normal, float(np.linalg.norm(FA[:3, 2] + FB[:3, 2])))
    return dist, normal


def test_torus_chain_contacts_stay_on_both_surfaces_and_tangent() -> None:
    """Over 0.5 s of a 4-torus chain every contact point lies on both tori, normals opposite."""
    tree = Tree.from_scene(SCENARIOS["torus-chain"].build(n=4))
    q, qdot = tree.initial_coordinates()
    traj = simulate_adaptive(tree, q, qdot, 0.5, rtol=1e-8, atol=1e-10)
    moved = np.abs(traj.q[-1] - traj.q[0]).max()
    assert moved > 0.05  # the contacts really roll and slide
    for qk in traj.q[:: max(1, len(traj.q) // 20)]:
        dist, normal = _contact_errors(tree, qk)
        assert dist < 1e-10 and normal < 1e-10


def test_windmill_contacts_stay_on_both_surfaces_and_tangent(windmill: Tree) -> None:
    """Over the 2 s windmill run every contact of the five surface pairs (sphere-sphere,
    sphere-ellipsoid, sphere-torus, torus-torus, torus-ellipsoid) lies on both surfaces
    with opposite normals, to 1e-10."""
    traj = _two_seconds("windmill", windmill)
    assert np.abs(traj.q[-1] - traj.q[0]).max() > 0.05  # the contacts really roll and slide
    for qk in traj.q[:: max(1, len(traj.q) // 20)]:
        dist, normal = _contact_errors(windmill, qk)
        assert dist < 1e-10 and normal < 1e-10


@pytest.mark.parametrize("which", ["chain10", "windmill"])
def test_recursive_and_dense_forward_dynamics_agree(
    which: str, request: pytest.FixtureRequest
) -> None:
    tree = request.getfixturevalue(which)
    rng = np.random.default_rng(3)
    q0, _ = tree.initial_coordinates()
    for _ in range(3):
        q = q0 + 0.2 * rng.standard_normal(tree.nq)
        qdot = rng.standard_normal(tree.nq)
        tau = 1e-3 * rng.standard_normal(tree.nq)
        rec = forward_dynamics_recursive(tree, q, qdot, tau)
        dense = forward_dynamics_dense(tree, q, qdot, tau)
        # accelerations reach ~1e3 rad/s^2 on the light tori: relative 1e-9 of the largest
        assert np.abs(rec - dense).max() <= 1e-9 * max(1.0, np.abs(dense).max())


_TRAJECTORIES: dict[str, Trajectory] = {}


def _two_seconds(which: str, tree: Tree) -> Trajectory:
    """2 s of the scene by DOP853 at rtol 1e-10 (computed once per module)."""
    if which not in _TRAJECTORIES:
        q, qdot = tree.initial_coordinates()
        _TRAJECTORIES[which] = simulate_adaptive(tree, q, qdot, 2.0, rtol=1e-10, atol=1e-12)
    return _TRAJECTORIES[which]


@pytest.mark.parametrize("which", ["chain10", "windmill"])
def test_energy_is_conserved_by_the_adaptive_integrator(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Conservative scenes, DOP853 at rtol 1e-10: total energy within 1e-6 relative over 2 s."""
    tree = request.getfixturevalue(which)
    traj = _two_seconds(which, tree)

    def total(qk: np.ndarray, qdk: np.ndarray) -> float:
        e = energies(forward_kinematics(tree, qk, qdk))
        return e["kinetic_energy"] + e["potential_energy"]

    E0 = total(traj.q[0], traj.qdot[0])
    kinetic0 = energies(forward_kinematics(tree, traj.q[0], traj.qdot[0]))["kinetic_energy"]
    scale = max(abs(E0), kinetic0)
    drift = max(abs(total(a, b) - E0) for a, b in zip(traj.q[::10], traj.qdot[::10]))
    assert drift / scale < 1e-6
    kinetic_end = energies(forward_kinematics(tree, traj.q[-1], traj.qdot[-1]))["kinetic_energy"]
    assert kinetic_end > 1e-3 * scale  # the system really moved


def test_prepared_model_runs_generated_joints_compiled(chain10: Tree) -> None:
    """contactlab.reduced.model.Model evaluates the generated joints in their compiled
    kernels and gives the recursive forward dynamics of the tree (1e-9 relative)."""
    from contactlab.reduced.model import Model

    model = Model(chain10)
    assert not model._python_other and model._batches
    rng = np.random.default_rng(4)
    q0, _ = chain10.initial_coordinates()
    q = q0 + 0.2 * rng.standard_normal(chain10.nq)
    qdot = rng.standard_normal(chain10.nq)
    ref = forward_dynamics_recursive(chain10, q, qdot)
    got = model.forward_dynamics(q, qdot)
    assert np.abs(got - ref).max() <= 1e-9 * max(1.0, np.abs(ref).max())


_CACHED_BUILD = """
import json, sys
import numpy as np
from contactlab.reduced import Tree
from contactlab.reduced.model import Model
from contactlab.reduced.integrators import Trajectory
from scenarios import SCENARIOS

chain = Tree.from_scene(SCENARIOS["torus-chain"].build(n=3))  # its hook is given as text
tree = Tree.from_scene(SCENARIOS["windmill"].build())
model = Model(tree)
q, qdot = tree.initial_coordinates()
qdd = model.forward_dynamics(q + 0.1, qdot)
print(json.dumps({
    "sympy": sorted(m for m in sys.modules if m == "sympy" or m.startswith("sympy.")),
    "generated_now": sum(
        bool(getattr(j, "generated_now", False)) for j in tree.joints + chain.joints
    ),
    "qdd": qdd.tolist(),
}))
"""


def test_cached_windmill_is_built_without_sympy(windmill: Tree, chain10: Tree) -> None:
    """Once the windmill's and the torus chain's joints are generated (the fixtures), a
    fresh process builds the scenes, their trees and a prepared model from the disk cache
    without importing sympy, and gets the same forward dynamics as this process (same
    compiled code: 1e-12)."""
    import json
    import subprocess
    import sys

    from contactlab.reduced.model import Model

    done = subprocess.run(
        [sys.executable, "-c", _CACHED_BUILD], capture_output=True, text=True, check=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["sympy"] == []
    assert out["generated_now"] == 0
    q, qdot = windmill.initial_coordinates()
    ref = Model(windmill).forward_dynamics(q + 0.1, qdot)
    np.testing.assert_allclose(out["qdd"], ref, rtol=0, atol=1e-12 * max(1.0, np.abs(ref).max()))
