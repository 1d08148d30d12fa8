"""Joint kinds are described once: the joint map's own rows serve the maximal formulation.

Facts
-----
* For every registered joint kind that builds without parameters, and for composites
  (planar then a turn about the normal, translation then a ball, a turn and a slide
  along one axis), the rows the joint map declares (``Joint.constraint_geometry``)
  vanish, with their velocity rows, on bodies placed by that map's ``Q(q)``, ``S(q)``
  at random ``q``, ``qdot`` (1e-12: round-off of O(1) transforms), and have rank
  ``6 - ndof``: the maximal and reduced descriptions are the same joint.
* A composite that turns then slides across the turn axis has no rows of these
  primitives, nor has a spline curve joint: the maximal formulation refuses either
  with one line naming the joint and the way out.
* Joint friction takes its contact geometry from the joint map too: a prismatic joint
  without an axis slides along its default x, and so do its friction tangents.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.jointfriction import JointContactLayout, JointFriction
from contactlab.joints.kinds import JOINTS, build_joint, make_joint
from contactlab.joints.placement import place_bodies
from contactlab.maximal import scene_constraints, stack_rows
from contactlab.maximal.formulation import MaximalFormulation
from contactlab.scene import Body, JointSpec, Scene

COMPOSITES = {
    "planar-then-turn": [{"kind": "planar"}, {"kind": "revolute", "axis": (0.0, 0.0, 1.0)}],
    "slide-then-ball": [{"kind": "translational"}, {"kind": "spherical"}],
    "turn-and-slide": [
        {"kind": "revolute", "axis": (0.3, 0.4, 0.5)},
        {"kind": "prismatic", "axis": (0.3, 0.4, 0.5)},
    ],
}


def _kinds_with_rows() -> list[tuple[str, dict]]:
    out = []
    for kind in sorted(JOINTS.names()):
        try:
            joint = make_joint(kind)
        except ConfigurationError:  # kinds that need parameters (splines, surfaces, ...)
            continue
        if joint.constraint_geometry() is not None:
            out.append((kind, {}))
    return out + [("composite", {"joints": parts}) for parts in COMPOSITES.values()]


CASES = _kinds_with_rows()


def _scene(kind: str, params: dict, rng: np.random.Generator, **spec) -> Scene:
    joint = JointSpec(
        "j",
        kind,
        None,
        "b",
        frame_parent=se3.random_transform(rng, scale=0.5),
        frame_child=se3.random_transform(rng, scale=0.5),
        params=params,
        **spec,
    )
    return Scene("one", (Body("b", 2.0, [0.5, 0.7, 1.0]),), (joint,))


def test_every_kind_without_parameters_is_covered() -> None:
    names = {kind for kind, _ in CASES}
    assert {"fixed", "revolute", "continuous", "prismatic", "cylindrical", "planar"} <= names
    assert {"universal", "spherical", "spherical_euler", "translational", "free"} <= names


@pytest.mark.parametrize(
    ("kind", "params"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)]
)
def test_declared_rows_vanish_exactly_on_the_joint_maps_motions(kind: str, params: dict) -> None:
    rng = np.random.default_rng(len(kind) + 31 * len(params.get("joints", ())))
    probe = _scene(kind, params, rng)
    joint = build_joint(probe.joints[0])
    for _ in range(3):
        q, qdot = joint.sample(rng), rng.standard_normal(joint.ndof)
        scene = probe.with_(
            joints=(JointSpec(**{**probe.joints[0].__dict__, "q0": q, "qdot0": qdot}),)
        )
        E, phi = place_bodies(scene)
        rows = stack_rows(scene_constraints(scene), E, phi)
        assert rows.G.shape[0] == 6 - joint.ndof
        assert np.abs(rows.g).max(initial=0.0) < 1e-12
        assert np.abs(rows.G @ phi.reshape(-1)).max(initial=0.0) < 1e-12
        if rows.G.shape[0]:
            assert np.linalg.matrix_rank(rows.G.toarray(), tol=1e-9) == 6 - joint.ndof


def test_kinds_without_rows_are_refused_by_the_maximal_formulation() -> None:
    rng = np.random.default_rng(3)
    across = [{"kind": "revolute", "axis": (0.0, 0.0, 1.0)}, {"kind": "prismatic"}]
    frames = np.array([se3.make_transform(None, [0.1 * k, 0.0, 0.0]) for k in range(4)])
    for kind, params in (("composite", {"joints": across}), ("spline_curve", {"frames": frames})):
        scene = _scene(kind, params, rng)
        with pytest.raises(ConfigurationError) as err:
            MaximalFormulation(scene)
        message = str(err.value)
        assert "\n" not in message
        assert "'j'" in message and "no maximal equivalent" in message
        assert "--formulation reduced" in message


def test_friction_geometry_follows_the_joint_maps_axis() -> None:
    spec = JointSpec("rail", "prismatic", None, "b", friction=JointFriction())
    layout = JointContactLayout.from_scene(
        Scene("rail", (Body("b", 1.0, [1.0, 1.0, 1.0]),), (spec,))
    )
    axis = make_joint("prismatic").axis
    np.testing.assert_array_equal(axis, [1.0, 0.0, 0.0])
    assert np.all(layout.tangents == axis)
    assert layout.on_child.tolist() == [True] and layout.rotational.tolist() == [False]
