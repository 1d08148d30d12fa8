"""Derivatives of inverse and forward dynamics against central differences and Pinocchio."""

from __future__ import annotations

import importlib.util
from importlib import metadata

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


# Joints that expand to revolute/prismatic/fixed nodes only (the composite form's domain).
SCREW = ["fixed", "revolute", "prismatic", "planar", "translational", "universal_axes",
         "spherical_euler", "cylindrical", "revolute", "prismatic", "revolute"]  # fmt: skip


@pytest.mark.parametrize(
    "kinds",
    [ANALYTIC + ["revolute", "prismatic", "revolute"], sorted(JOINTS), SCREW],
    ids=["compiled-joints", "with-spline-fallback", "screw-joints-composite-form"],
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
def test_composite_form_equals_the_per_coordinate_recursion(seed: int) -> None:
    """The world-frame composite form equals Guenter & Rose's per-coordinate recursion (1e-12)."""
    model = Model(springy_tree(seed, SCREW))
    assert model.screw_only
    q, qd, qdd, w = _state(model, seed)
    a = inverse_dynamics_derivatives(model, q, qd, qdd, w, composite=True)
    b = inverse_dynamics_derivatives(model, q, qd, qdd, w, composite=False)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12 * np.abs(y).max())


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


# -- free and spherical joints in the composite form -------------------------------

# Trees of free (both coordinate orders), spherical and screw joints: no joint evaluated
# from its maps, so the composite form (local body-frame columns, chain rule through J_r).
BALL = ["free_translation_first", "spherical", "revolute", "spherical", "prismatic",
        "fixed", "revolute", "spherical", "universal", "revolute"]  # fmt: skip
ROTATION_FIRST = ["free", "revolute", "spherical", "revolute", "spherical", "cylindrical"]
# Central differences at h = 1e-5 on these trees: truncation h^2 |f'''| / 6 and rounding
# 1e-16 |f| / h both stay near 1e-11 of the scale, far below the 1e-7 asked.
REL_BALL = 1e-7


@pytest.mark.parametrize(
    "kinds", [BALL, ROTATION_FIRST], ids=["translation-first", "rotation-first"]
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_free_and_spherical_composite_form_matches_central_differences(
    kinds: list[str], seed: int
) -> None:
    """dtau/dq, dtau/dqdot, M of the composite form with free and spherical joints: central
    differences of the inverse dynamics (1e-7 of the scale) and the per-coordinate recursion
    of Guenter & Rose (1e-12), with body wrenches, springs and dampers."""
    model = Model(springy_tree(seed, kinds))
    assert not model.has_other_joints and not model.screw_only
    q, qd, qdd, w = _state(model, seed)
    got = inverse_dynamics_derivatives(model, q, qd, qdd, w)
    ref = (
        central(lambda x: model.inverse_dynamics(x, qd, qdd, w), q),
        central(lambda x: model.inverse_dynamics(q, x, qdd, w), qd),
        central(lambda x: model.inverse_dynamics(q, qd, x, w), qdd),
    )
    other = inverse_dynamics_derivatives(model, q, qd, qdd, w, composite=False)
    for g, r, o in zip(got, ref, other):
        np.testing.assert_allclose(g, r, rtol=0, atol=REL_BALL * np.abs(r).max())
        np.testing.assert_allclose(g, o, rtol=0, atol=1e-12 * np.abs(o).max())


@pytest.mark.parametrize(
    "kinds", [BALL, ROTATION_FIRST], ids=["translation-first", "rotation-first"]
)
@pytest.mark.parametrize("seed", [0, 1])
def test_forward_derivatives_with_free_and_spherical_joints(kinds: list[str], seed: int) -> None:
    """The one-call forward-dynamics partials: central differences of the forward dynamics
    (1e-7 of the scale) and -M^-1 times the recursion's inverse-dynamics partials at the
    forward dynamics' qddot (1e-10)."""
    model = Model(springy_tree(seed, kinds))
    q, qd, _, w = _state(model, seed)
    tau = np.random.default_rng(seed).standard_normal(model.nq)
    got = forward_dynamics_derivatives(model, q, qd, tau, w)
    ref = (
        central(lambda x: model.forward_dynamics(x, qd, tau, w), q),
        central(lambda x: model.forward_dynamics(q, x, tau, w), qd),
        central(lambda x: model.forward_dynamics(q, qd, x, w), tau),
    )
    qdd = model.forward_dynamics(q, qd, tau, w)
    dq, dqd, M = inverse_dynamics_derivatives(model, q, qd, qdd, w, composite=False)
    Minv = np.linalg.inv(M)
    for g, r, o in zip(got, ref, (-Minv @ dq, -Minv @ dqd, Minv)):
        np.testing.assert_allclose(g, r, rtol=0, atol=REL_BALL * np.abs(r).max())
        np.testing.assert_allclose(g, o, rtol=0, atol=1e-10 * np.abs(o).max())


def test_derivatives_name_a_wrong_length() -> None:
    """A vector of the wrong length gets one error naming it and the length asked."""
    from contactlab.errors import ConfigurationError

    model = Model(springy_tree(0, BALL))
    q, qd, _, _ = _state(model, 0)
    with pytest.raises(ConfigurationError, match="tau must have shape"):
        forward_dynamics_derivatives(model, q, qd, np.zeros(model.nq + 1))
    with pytest.raises(ConfigurationError, match="qddot must have shape"):
        inverse_dynamics_derivatives(model, q, qd, np.zeros(model.nq - 1))


try:
    metadata.distribution("example-robot-data")
    HAS_ERD = True
except metadata.PackageNotFoundError:
    HAS_ERD = False


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


@pytest.mark.skipif(not (HAS_PIN and HAS_ERD), reason="needs pinocchio and example-robot-data")
@pytest.mark.parametrize("seed", [0, 1])
def test_floating_base_derivatives_match_pinocchio_on_solo12(seed: int) -> None:
    """solo12 on a free joint: RNEA and ABA derivatives equal Pinocchio's (free flyer) to 1e-9
    of their scale.

    The coordinates differ (position and rotation vector here; Pinocchio differentiates
    along body-frame twists, v = T(q) qdot), so the state has the base at rest and level
    (rotation vector 0, base velocity 0, base acceleration or base torque 0), where T = 1
    and the only terms of the chain rule left are the derivatives of T^T and T^-1 along the
    rotation vector: dtau/dq = dtau_dq + [[0, -[tau_lin]], [0, -[tau_ang]/2]] (J_r's
    derivative at 0 is -[.]/2) and dqddot/dq = ddq_dq + [[0, -[a_lin]], [0, -[a_ang]/2]],
    both in the base rows and rotation columns (tau, a the base's wrench and acceleration).
    """
    import warnings

    import pinocchio as pin

    from contactlab.reduced.pinocchio_ import PinocchioCoordinates
    from contactlab.reduced.urdf import load_urdf
    from contactlab.reduced.urdf_geometry import example_robot_data

    path = example_robot_data() / "solo_description/robots/solo12.urdf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = Model.from_scene(load_urdf(path, collision="none", fixed_base=False))
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    data = pm.createData()
    peer = PinocchioCoordinates(model.tree, pm)
    rng = np.random.default_rng(seed)
    q, qd, qdd = model.random_state(rng)
    q[3:6] = 0.0  # level base: R = J_r = 1
    qd[:6] = 0.0  # base at rest
    qdd[:6] = 0.0
    springs = np.diag(model.dofp[0]), np.diag(model.dofp[1])
    assert not model.dofp[3].any()  # no rotor inertia in the file (Pinocchio's armature 0)
    qp = peer.configuration(q)
    T, _ = peer.velocity_map(q, qd)
    np.testing.assert_allclose(T, np.eye(model.nq), atol=1e-15)

    dq, dqd, M = inverse_dynamics_derivatives(model, q, qd, qdd)
    pin.computeRNEADerivatives(pm, data, qp, qd, qdd)
    tau = pin.rnea(pm, data, qp, qd, qdd)
    ref_q = data.dtau_dq.copy()
    ref_q[0:3, 3:6] += -_skew(tau[0:3])
    ref_q[3:6, 3:6] += -0.5 * _skew(tau[3:6])
    Mp = np.triu(data.M) + np.triu(data.M, 1).T
    for got, ref in ((dq - springs[0], ref_q), (dqd - springs[1], data.dtau_dv), (M, Mp)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * np.abs(ref).max())

    tau = np.concatenate([np.zeros(6), rng.uniform(-1, 1, model.nq - 6)])  # base unactuated
    fq, fqd, Minv = forward_dynamics_derivatives(model, q, qd, tau)
    damping = model.dofp[1] * qd  # Pinocchio's ABA leaves joint damping out
    pin.computeABADerivatives(pm, data, qp, qd, tau - damping)
    a = pin.aba(pm, data, qp, qd, tau - damping)
    ref_q = data.ddq_dq.copy()
    ref_q[0:3, 3:6] += -_skew(a[0:3])
    ref_q[3:6, 3:6] += -0.5 * _skew(a[3:6])
    Minv_p = np.triu(data.Minv) + np.triu(data.Minv, 1).T
    ref_qd = data.ddq_dv - Minv_p @ springs[1]
    for got, ref in ((fq, ref_q), (fqd, ref_qd), (Minv, Minv_p)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-9 * np.abs(ref).max())


def test_forward_derivatives_refuse_a_singular_mass_matrix() -> None:
    """At |r| = 2 pi the rotation vector's J_r is singular, so is M = J_r^T M_loc J_r (two zero
    eigenvalues): one SingularSystemError, no NaN matrices."""
    from contactlab.errors import SingularSystemError

    scene = Scene(
        "ball",
        (Body("a", 1.0, np.array([0.1, 0.2, 0.3])),),
        (JointSpec("ja", "spherical", None, "a"),),
    )
    model = Model.from_scene(scene)
    q = np.array([2 * np.pi, 0.0, 0.0])
    assert np.linalg.eigvalsh(model.mass_matrix(q))[1] < 1e-12
    with pytest.raises(SingularSystemError, match="not positive definite"):
        forward_dynamics_derivatives(model, q, np.zeros(3))
