"""Joint constraints: exact derivatives, allowed motions, agreement with the joint maps.

Facts
-----
* ``G Phi = d/dt g(E(t))`` and ``Gdot Phi = d^2/dt^2 g(E(t))`` along
  ``E(t) = E exp(t [phi])`` at random (off-manifold) configurations, for
  every kind, body-body and body-world (central differences, step 1e-6 and
  1e-4: truncation ~1e-11 and ~1e-8 relative to O(1) values; tolerances
  1e-7 and 1e-5 leave a margin for round-off of ~1e-16/1e-12 and
  ~1e-16/1e-8).
* Bodies placed by the reduced formulation's joint maps ``Q(q)``, ``S(q)``
  for random ``q``, ``qdot`` satisfy ``g = 0`` and ``G Phi = 0``: the rows
  vanish on exactly the joint's configurations and motions.
* On the joint manifold the child's rows annihilate ``Ad(F_b) S`` and have
  rank ``6 - ndof``: exactly the allowed relative twists pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.joints.kinds import build_joint
from contactlab.joints.placement import place_bodies
from contactlab.maximal import scene_constraints, stack_rows
from contactlab.scene import Body, JointSpec, Scene

KINDS = {
    # kind: (axis, params, ndof)
    "fixed": (None, {}, 0),
    "revolute": ((0.3, -0.5, 0.8), {}, 1),
    "prismatic": ((0.6, 0.2, -0.4), {}, 1),
    "cylindrical": ((-0.2, 0.9, 0.1), {}, 2),
    "planar": ((0.1, 0.3, 1.0), {}, 3),
    "universal": (None, {"axes": ((1.0, 0.2, 0.0), (-0.2, 1.0, 0.3))}, 2),
    "spherical": (None, {}, 3),
    "translational": (None, {}, 3),
}


def two_body_scene(kind: str, world: bool, rng: np.random.Generator, **spec) -> Scene:
    axis, params, _ = KINDS[kind]
    bodies = (Body("a", 1.0, [1.0, 2.0, 2.5]), Body("b", 2.0, [0.5, 0.7, 1.0]))
    joint = JointSpec(
        "j",
        kind,
        None if world else "a",
        "b",
        frame_parent=se3.random_transform(rng, scale=0.5),
        frame_child=se3.random_transform(rng, scale=0.5),
        axis=axis,
        params=params,
        **spec,
    )
    root = (
        ()
        if world
        else (
            JointSpec(
                "root",
                "free",
                None,
                "a",
                q0=rng.standard_normal(6) * 0.5,
                qdot0=rng.standard_normal(6),
            ),
        )
    )
    return Scene("two", bodies, root + (joint,))


def joint_rows(scene: Scene, E, phi, bias=False):
    cons = [c for c in scene_constraints(scene) if c.row_owners() and c.row_owners()[0] == "j"]
    return stack_rows(cons, E, phi, bias)


@pytest.mark.parametrize("world", [False, True])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rows_are_the_exact_time_derivative_of_the_error(kind: str, world: bool) -> None:
    rng = np.random.default_rng(sorted(KINDS).index(kind) + 100 * world)
    scene = two_body_scene(kind, world, rng)
    for _ in range(3):
        E = se3.random_transform(rng, 2)
        phi = rng.standard_normal((2, 6))
        rows = joint_rows(scene, E, phi, bias=True)

        def g_at(t: float, E=E, phi=phi) -> np.ndarray:
            return joint_rows(scene, E @ se3.exp_se3(t * phi), phi).g

        d1 = (g_at(1e-6) - g_at(-1e-6)) / 2e-6
        d2 = (g_at(1e-4) - 2 * rows.g + g_at(-1e-4)) / 1e-8
        assert np.abs(rows.G @ phi.reshape(-1) - d1).max() < 1e-7
        assert np.abs(rows.bias - d2).max() < 1e-5


@pytest.mark.parametrize("world", [False, True])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rows_vanish_on_the_joint_maps_configurations_and_motions(kind: str, world: bool) -> None:
    rng = np.random.default_rng(7 + len(kind) + world)
    probe = two_body_scene(kind, world, rng)
    joint = build_joint(probe.joints[-1])
    for _ in range(3):
        q, qdot = joint.sample(rng), rng.standard_normal(joint.ndof)
        spec = probe.joints[-1]
        scene = probe.with_(
            joints=probe.joints[:-1] + (JointSpec(**{**spec.__dict__, "q0": q, "qdot0": qdot}),)
        )
        E, phi = place_bodies(scene)
        rows = joint_rows(scene, E, phi)
        assert np.abs(rows.g).max() < 1e-12
        assert np.abs(rows.G @ phi.reshape(-1)).max() < 1e-12


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_rows_annihilate_exactly_the_allowed_relative_twists(kind: str) -> None:
    rng = np.random.default_rng(11 + len(kind))
    probe = two_body_scene(kind, True, rng)
    spec = probe.joints[-1]
    joint = build_joint(spec)
    q = joint.sample(rng)
    scene = probe.with_(joints=(JointSpec(**{**spec.__dict__, "q0": q}),))
    E, phi = place_bodies(scene)
    G = joint_rows(scene, E, phi).G.toarray()[:, 6:]  # child block (parent is the world)
    _, S, _ = joint.evaluate(q, np.zeros(joint.ndof))
    allowed = se3.adjoint(spec.frame_child) @ S  # child body twists of the allowed motions
    assert G.shape[0] == 6 - joint.ndof
    assert np.all(np.abs(G @ allowed) < 1e-12)
    assert np.linalg.matrix_rank(G, tol=1e-9) == 6 - joint.ndof


def test_numerical_bias_of_the_base_class_matches_the_closed_forms() -> None:
    """The fallback ``Gdot Phi`` for user constraints (central differences of the rows)."""
    from contactlab.maximal import Constraint

    rng = np.random.default_rng(21)
    for kind in sorted(KINDS):
        (con,) = [
            c
            for c in scene_constraints(two_body_scene(kind, False, rng))
            if c.n_rows and c.row_owners()[0] == "j"
        ]
        E, phi = se3.random_transform(rng, 2), rng.standard_normal((2, 6))
        assert np.abs(Constraint.bias(con, E, phi) - con.bias(E, phi)).max() < 1e-7
