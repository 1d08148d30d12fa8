"""Parts of the compiled reduced step (:mod:`contactlab.reduced._step_kernels`) against
independent computations.

Facts: the step's ``M_r`` (summed over each node's support, by pairs of coordinates) is
the composite-rigid-body algorithm's (:meth:`contactlab.reduced.model.Model.mass_matrix`)
and the general path's ``J^T M J`` on the robots; a pair the measured pre-test declares
more than ``gap`` apart is more than ``gap`` apart by the GJK distance, and it declares
every pair the bounded pre-test declares.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.reduced import _step_kernels as K

try:
    from compiled_shapes import reduced_step, robots, shape_data, shape_distance, turned
except ImportError:  # tests/contactlab imported as a package
    from .compiled_shapes import reduced_step, robots, shape_data, shape_distance, turned


@robots
@pytest.mark.parametrize("name", ["solo12-stand", "humanoid-topple"])
def test_mass_matrix_is_the_composite_rigid_body_algorithms(name: str) -> None:
    """``M_r`` of the step (its bodies' terms, mirrored, plus the armature) equals the
    composite-rigid-body algorithm's and ``J^T M J`` of the general path to 1e-12 of its
    largest entry, at random states (three summation orders of the same sums)."""
    from contactlab.reduced.dynamics import mass_matrix
    from contactlab.reduced.kinematics import forward_kinematics
    from contactlab.reduced.model import Model

    sim = reduced_step(name)
    cs: Any = sim.compiled
    tree = sim.formulation.tree  # type: ignore[attr-defined]
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0 = cs._tree
    model = Model(tree)
    q0, _ = tree.initial_coordinates()
    rng = np.random.default_rng(11)
    armature = tree.per_dof("armature")
    for _ in range(4):
        q = q0 + rng.uniform(-0.5, 0.5, q0.size)
        qdot = rng.uniform(-2.0, 2.0, q0.size)
        E, X, Sb, Sbd, V = K._tree_kinematics(*cs._tree, q, qdot)
        J = K._jacobian(parent, X, Sb, ndof, dof0, cs._support, cs._count, cs._nq)
        bias = K._bias(parent, X, Sb, Sbd, ndof, dof0, qdot)
        upper, _ = K._mass_momentum(
            J, bias, E, V, cs._inertia, cs._support, cs._count, cs._gravity, 1e-3, cs._nq
        )
        assert np.all(np.tril(upper, -1) == 0.0)
        ours = upper + np.triu(upper, 1).T + np.diag(armature)
        crba = model.mass_matrix(q)
        general = mass_matrix(forward_kinematics(tree, q))
        scale = np.abs(crba).max()
        np.testing.assert_allclose(ours, crba, rtol=0, atol=1e-12 * scale)
        np.testing.assert_allclose(ours, general, rtol=0, atol=1e-12 * scale)


@robots
@pytest.mark.parametrize("angle", [0.01, 0.1, 0.3])
def test_measured_separations_hold(angle: float) -> None:
    """A direction kept for two of the humanoid's shapes at some poses (GJK's, as the step
    keeps it), then the shapes turned and moved by up to ``angle`` (rad, m): whenever the
    measured pre-test declares them more than ``gap`` apart, their GJK distance exceeds
    ``gap``; it declares every pair the bounded pre-test declares, and more once the shapes
    have turned by 0.1 rad; the extents
    it keeps are the shapes' largest values along the direction (:func:`_extent`)."""
    sim = reduced_step("humanoid-topple")
    kind, size, hull, radius, hv, hvs, hns, hnb = shape_data(sim.compiled)
    rng = np.random.default_rng(5)
    ns = kind.size
    bounded = measured = 0

    distance = shape_distance(sim.compiled)
    for _ in range(300):
        a, b = (int(x) for x in rng.choice(ns, size=2, replace=False))
        W = np.tile(np.eye(4), (ns, 1, 1))
        W[:, :3, :3] = turned(rng, W, np.pi)[:, :3, :3]
        W[:, :3, 3] = rng.normal(size=(ns, 3)) * 0.3
        _, _, v = distance(W, a, b)
        sep = (np.zeros((1, 3)), np.zeros((1, 2, 3)), np.zeros((1, 2)))
        K._keep_direction(W, a, b, kind, size, hull, hv, hvs, v, *sep, 0)
        W1 = turned(rng, W, angle)
        found, d, _ = distance(W1, a, b)
        for gap in (0.0, 0.005, 0.05):
            kept = tuple(x.copy() for x in sep)
            by_bound = K._separated(W1, a, b, kind, size, hull, radius, hv, hvs, *kept, 0, gap)
            by_measure = K._separated_exact(W1, a, b, kind, size, hull, hv, hvs, *kept, 0, gap)
            bounded += by_bound
            measured += by_measure
            assert by_measure or not by_bound
            if by_measure:
                assert found and d > gap
                u = kept[0][0]
                np.testing.assert_array_equal(kept[0][0], sep[0][0])  # the direction stays
                ea = K._extent(W1, a, kind[a], size[a], hull[a], hv, hvs, u)[0]
                eb = K._extent(W1, b, kind[b], size[b], hull[b], hv, hvs, -u)[0]
                np.testing.assert_array_equal(kept[2][0], [ea, eb])
    assert measured >= bounded > 100
    if angle >= 0.1:  # the bounds loosen as the shapes turn: the measure declares more
        assert measured > bounded
