"""Derivatives of inverse and forward dynamics against central differences and Pinocchio."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from contactlab import se3
from contactlab.reduced import _fast
from contactlab.reduced.derivatives import (
    forward_dynamics_derivatives,
    inverse_dynamics_derivatives,
)
from contactlab.reduced.model import Model
from contactlab.reduced.pinocchio_ import to_pinocchio
from contactlab.scene import Body, JointSpec, Scene

from .conftest import JOINTS
from .test_model import ANALYTIC, springy_tree

# Central differences with step h have truncation error ~h^2 |f'''| and
# rounding ~1e-16 |f| / h; h = 1e-5 keeps both near 1e-10 of the scale.
H = 1e-5
REL = 1e-6


def central(f, x: np.ndarray) -> np.ndarray:  # noqa: ANN001
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e[k] = H
        cols.append((f(x + e) - f(x - e)) / (2 * H))
    return np.array(cols).T


def _state(model: Model, seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    q, qd, qdd = model.random_state(rng)
    return q, 2 * qd, 3 * qdd, rng.standard_normal((model.tree.scene.n_bodies, 6))


@pytest.mark.parametrize(
    "kinds",
    [ANALYTIC + ["revolute", "prismatic", "revolute"], sorted(JOINTS)],
    ids=["compiled-joints", "with-spline-fallback"],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_inverse_dynamics_derivatives_match_central_differences(
    kinds: list[str], seed: int
) -> None:
    """dtau/dq, dtau/dqdot, dtau/dqddot = M on random trees of every joint kind, 1e-6 relative."""
    model = Model(springy_tree(seed, kinds))
    q, qd, qdd, w = _state(model, seed)
    dq, dqd, M = inverse_dynamics_derivatives(model, q, qd, qdd, w)
    ref_q = central(lambda x: model.inverse_dynamics(x, qd, qdd, w), q)
    ref_qd = central(lambda x: model.inverse_dynamics(q, x, qdd, w), qd)
    ref_qdd = central(lambda x: model.inverse_dynamics(q, qd, x, w), qdd)
    for got, ref in ((dq, ref_q), (dqd, ref_qd), (M, ref_qdd)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=REL * np.abs(ref).max())


@pytest.mark.parametrize("seed", [2, 3])
def test_forward_dynamics_derivatives_match_central_differences(seed: int) -> None:
    """dqddot/dq, dqddot/dqdot and dqddot/dtau = M^{-1} against central differences of FD."""
    model = Model(springy_tree(seed, ANALYTIC))
    q, qd, _, w = _state(model, seed)
    tau = np.random.default_rng(seed).standard_normal(model.nq)
    dq, dqd, Minv = forward_dynamics_derivatives(model, q, qd, tau, w)
    ref = (
        central(lambda x: model.forward_dynamics(x, qd, tau, w), q),
        central(lambda x: model.forward_dynamics(q, x, tau, w), qd),
        central(lambda x: model.forward_dynamics(q, qd, x, w), tau),
    )
    for got, r in zip((dq, dqd, Minv), ref):
        np.testing.assert_allclose(got, r, rtol=0, atol=REL * np.abs(r).max())


def test_spherical_coefficients_are_continuous_across_the_series_switch() -> None:
    """Series (t < 1) and closed forms of b, c, b1, c1, b2, c2 agree at t = 1 to 1e-12.

    b2 and c2 are also the derivatives of b1 and c1 divided by t (central differences).
    """
    below = np.array(_fast._coefficients(1.0 - 1e-12))
    above = np.array(_fast._coefficients(1.0 + 1e-12))
    np.testing.assert_allclose(below, above, rtol=1e-11)
    for t in (0.3, 2.0):
        b, c, b1, c1, b2, c2 = _fast._coefficients(t)
        up, dn = _fast._coefficients(t + 1e-6), _fast._coefficients(t - 1e-6)
        np.testing.assert_allclose(
            [(up[0] - dn[0]) / 2e-6 / t, (up[1] - dn[1]) / 2e-6 / t], [b1, c1], rtol=1e-8
        )
        np.testing.assert_allclose(
            [(up[2] - dn[2]) / 2e-6 / t, (up[3] - dn[3]) / 2e-6 / t], [b2, c2], rtol=1e-7
        )


# -- Pinocchio -----------------------------------------------------------------

HAS_PIN = importlib.util.find_spec("pinocchio") is not None


def _tree_scene(rng: np.random.Generator, parents: list[int], kinds: list[str]) -> Scene:
    bodies, joints = [], []
    for i, (p, kind) in enumerate(zip(parents, kinds)):
        x, y, z = rng.uniform(0.1, 0.6, 3)
        m = rng.uniform(0.5, 2.0)
        bodies.append(
            Body(f"b{i}", m, m / 12 * np.array([y * y + z * z, z * z + x * x, x * x + y * y]))
        )
        joints.append(
            JointSpec(
                f"j{i}",
                kind,
                None if p < 0 else f"b{p}",
                f"b{i}",
                frame_parent=se3.random_transform(rng, scale=0.4),
                frame_child=se3.random_transform(rng, scale=0.4),
                axis=rng.standard_normal(3),
            )
        )
    return Scene("pin", tuple(bodies), tuple(joints))


@pytest.mark.skipif(not HAS_PIN, reason="pinocchio is not installed (pip install pin)")
@pytest.mark.parametrize("shape", ["chain", "tree"])
def test_derivatives_match_pinocchio(shape: str) -> None:
    """RNEA and ABA derivatives equal Pinocchio's computeRNEA/ABADerivatives to 1e-9."""
    import pinocchio as pin

    rng = np.random.default_rng(11)
    n = 8
    parents = [i - 1 for i in range(n)] if shape == "chain" else [(i - 1) // 2 for i in range(n)]
    kinds = ["revolute" if rng.random() < 0.7 else "prismatic" for _ in range(n)]
    model = Model.from_scene(_tree_scene(rng, parents, kinds))
    pm = to_pinocchio(model.tree)
    data = pm.createData()
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    tau = model.inverse_dynamics(q, qd, qdd)
    np.testing.assert_allclose(pin.rnea(pm, data, q, qd, qdd), tau, atol=1e-9)
    dq, dqd, M = inverse_dynamics_derivatives(model, q, qd, qdd)
    pin.computeRNEADerivatives(pm, data, q, qd, qdd)
    np.testing.assert_allclose(dq, data.dtau_dq, atol=1e-9)
    np.testing.assert_allclose(dqd, data.dtau_dv, atol=1e-9)
    np.testing.assert_allclose(M, np.triu(data.M) + np.triu(data.M, 1).T, atol=1e-9)
    fq, fqd, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    pin.computeABADerivatives(pm, data, q, qd, tau)
    np.testing.assert_allclose(fq, data.ddq_dq, atol=1e-9)
    np.testing.assert_allclose(fqd, data.ddq_dv, atol=1e-9)
    np.testing.assert_allclose(Minv, np.triu(data.Minv) + np.triu(data.Minv, 1).T, atol=1e-9)
