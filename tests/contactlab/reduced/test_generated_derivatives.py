"""Derivatives of inverse dynamics through joints generated from their transform Q(q)."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.reduced.derivatives import (
    forward_dynamics_derivatives,
    inverse_dynamics_derivatives,
)
from contactlab.reduced.generated_derivatives import derivative_function
from contactlab.reduced.model import Model
from contactlab.scene import JointSpec, Scene

from .conftest import box_body

# generated joints that are not chains of revolute/prismatic screws (OTHER nodes)
HELIX = {"Q": "rot_z(t) * trans(0, 0, s * t)", "coordinates": ["t"], "parameters": {"s": 0.3}}
CURVE = {
    "Q": "trans(u, k * u**2, 0) * rot_z(atan(2 * k * u)) * rot_x(w)",
    "coordinates": ["u", "w"],
    "parameters": {"k": 0.8},
}


def _scene(seed: int) -> Scene:
    """revolute, helix, curve slider, spherical, helix: a chain with a branch, springs on."""
    rng = np.random.default_rng(seed)
    kinds = [
        ("revolute", {}, None),
        ("transform", HELIX, 0),
        ("transform", CURVE, 1),
        ("spherical", {}, 2),
        ("transform", HELIX, 1),
    ]
    bodies, joints = [], []
    for i, (kind, params, parent) in enumerate(kinds):
        bodies.append(box_body(f"b{i}", rng.uniform(0.5, 2.0), tuple(rng.uniform(0.1, 0.6, 3))))
        joints.append(
            JointSpec(
                f"j{i}",
                kind,
                None if parent is None else f"b{parent}",
                f"b{i}",
                frame_parent=se3.random_transform(rng, scale=0.4),
                frame_child=se3.random_transform(rng, scale=0.4),
                axis=rng.standard_normal(3),
                params=params,
                stiffness=float(rng.uniform(0, 3)),
                damping=float(rng.uniform(0, 1)),
            )
        )
    return Scene("generated", tuple(bodies), tuple(joints))


def _central(f, x: np.ndarray, h: float = 1e-6) -> np.ndarray:  # noqa: ANN001
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = h
        cols.append((f(x + e) - f(x - e)) / (2 * h))
    return np.array(cols).T


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generated_joint_derivatives_match_central_differences(seed: int) -> None:
    """dtau/dq and dtau/dqdot with the generated joints' maps differentiated symbolically:
    central differences to 1e-7 of their size (truncation ~1e-12, rounding ~1e-10), and
    the difference columns they replace to the differences' own error (1e-7)."""
    model = Model.from_scene(_scene(seed))
    assert model.has_other_joints
    assert all(derivative_function(j) is not None for _, j, _, _ in model._other)
    rng = np.random.default_rng(seed)
    q, qd, qdd = model.random_state(rng)
    qd, qdd = 2 * qd, 3 * qdd
    dq, dqd, _ = inverse_dynamics_derivatives(model, q, qd, qdd)
    Kq = _central(lambda x: model.inverse_dynamics(x, qd, qdd), q)
    Kv = _central(lambda x: model.inverse_dynamics(q, x, qdd), qd)
    assert np.abs(dq - Kq).max() <= 1e-7 * np.abs(Kq).max()
    assert np.abs(dqd - Kv).max() <= 1e-7 * np.abs(Kv).max()
    fq, fqd, _ = inverse_dynamics_derivatives(model, q, qd, qdd, generated="differences")
    assert np.abs(dq - fq).max() <= 1e-7 * np.abs(fq).max()
    assert np.abs(dqd - fqd).max() <= 1e-7 * np.abs(fqd).max()
    # the columns of the generated joints' coordinates are now exact, not differences
    cols = model.other_coordinates
    assert np.abs(dq[:, cols] - fq[:, cols]).max() > 0.0


def test_forward_dynamics_derivatives_through_generated_joints() -> None:
    model = Model.from_scene(_scene(3))
    rng = np.random.default_rng(3)
    q, qd, _ = model.random_state(rng)
    tau = rng.uniform(-1, 1, model.nq)
    aq, av, _ = forward_dynamics_derivatives(model, q, qd, tau)
    Aq = _central(lambda x: model.forward_dynamics(x, qd, tau), q)
    Av = _central(lambda x: model.forward_dynamics(q, x, tau), qd)
    assert np.abs(aq - Aq).max() <= 1e-7 * np.abs(Aq).max()
    assert np.abs(av - Av).max() <= 1e-7 * np.abs(Av).max()
