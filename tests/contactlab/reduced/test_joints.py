"""Every joint's S and Sdot against finite differences of its own Q (Sueda's notes, eq. 2.29)."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.joints.kinds import build_joint, make_joint
from contactlab.joints.maps import Joint
from contactlab.joints.spherical import SphericalExpJoint
from contactlab.scene import JointSpec

EPS = 1e-6
# central differences: truncation ~EPS^2 * |Q'''| ~ 1e-11, round-off ~1e-16 / EPS = 1e-10
TOL = 1e-6


def fd_S(joint: Joint, q: np.ndarray) -> np.ndarray:
    Qinv = se3.inverse(joint.Q(q))
    cols = []
    for k in range(joint.ndof):
        dq = np.zeros_like(q)
        dq[k] = EPS
        dQ = (joint.Q(q + dq) - joint.Q(q - dq)) / (2 * EPS)
        cols.append(se3.unbracket6(Qinv @ dQ))
    return np.array(cols).T.reshape(6, joint.ndof)


@pytest.mark.parametrize("trial", range(3))
def test_S_columns_are_body_derivatives_of_Q(joint: Joint, trial: int) -> None:
    rng = np.random.default_rng(10 + trial)
    q = joint.sample(rng)
    # the bracket of each column must be the exact matrix Q^-1 dQ/dq (no non-twist part)
    Qinv = se3.inverse(joint.Q(q))
    for k in range(joint.ndof):
        dq = np.zeros_like(q)
        dq[k] = EPS
        M = Qinv @ (joint.Q(q + dq) - joint.Q(q - dq)) / (2 * EPS)
        np.testing.assert_allclose(M, se3.bracket6(joint.S(q)[:, k]), atol=TOL)
    np.testing.assert_allclose(joint.S(q), fd_S(joint, q), atol=TOL)


@pytest.mark.parametrize("trial", range(3))
def test_Sdot_is_time_derivative_of_S(joint: Joint, trial: int) -> None:
    rng = np.random.default_rng(20 + trial)
    q = joint.sample(rng)
    qdot = rng.standard_normal(joint.ndof)
    fd = (joint.S(q + EPS * qdot) - joint.S(q - EPS * qdot)) / (2 * EPS)
    np.testing.assert_allclose(joint.Sdot(q, qdot), fd, atol=TOL)


def test_spherical_small_angles_match_series_region() -> None:
    """Near q = 0 (series branch) and across the series/closed-form switch."""
    joint = SphericalExpJoint()
    rng = np.random.default_rng(3)
    for scale in (0.0, 1e-7, 1e-3, 9e-3, 1.1e-2, 2.0):
        d = rng.standard_normal(3)
        q = scale * d / np.linalg.norm(d)
        qdot = rng.standard_normal(3)
        if scale > 1e-5:
            np.testing.assert_allclose(joint.S(q), fd_S(joint, q), atol=TOL)
        fd = (joint.S(q + EPS * qdot) - joint.S(q - EPS * qdot)) / (2 * EPS)
        np.testing.assert_allclose(joint.Sdot(q, qdot), fd, atol=TOL)


def test_spherical_reparameterization_keeps_rotation_and_angular_velocity() -> None:
    joint = SphericalExpJoint()
    rng = np.random.default_rng(5)
    d = rng.standard_normal(3)
    q = 4.0 * d / np.linalg.norm(d)
    qdot = rng.standard_normal(3)
    q2, qdot2 = joint.reparameterize(q, qdot)
    assert np.linalg.norm(q2) == pytest.approx(2 * np.pi - 4.0)
    np.testing.assert_allclose(joint.Q(q2), joint.Q(q), atol=1e-12)
    np.testing.assert_allclose(joint.S(q2) @ qdot2, joint.S(q) @ qdot, atol=1e-12)
    assert joint.reparameterize(q2, qdot2) is None


def test_composite_reparameterizes_its_spherical_part() -> None:
    joint = make_joint("free")
    q = np.array([0.0, 0.0, 3.5, 1.0, 2.0, 3.0])
    qdot = np.arange(1.0, 7.0)
    q2, qdot2 = joint.reparameterize(q, qdot)
    np.testing.assert_allclose(joint.Q(q2), joint.Q(q), atol=1e-12)
    np.testing.assert_allclose(joint.S(q2) @ qdot2, joint.S(q) @ qdot, atol=1e-12)
    np.testing.assert_allclose(q2[3:], q[3:])


def test_revolute_is_rotation_about_its_axis() -> None:
    joint = make_joint("revolute", (0, 0, 2.0))
    Q = joint.Q(np.array([np.pi / 2]))
    np.testing.assert_allclose(Q[:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(joint.S([0.3])[:, 0], [0, 0, 1, 0, 0, 0])


def test_spline_curve_interpolates_like_a_b_spline() -> None:
    """Translations only: Q's position is the ordinary cubic B-spline of the points."""
    pts = np.array([[0, 0, 0], [1, 2, 0], [3, 1, 1], [4, 4, 2], [6, 3, 1.0]])
    joint = make_joint("spline_curve", params={"frames": se3.make_transform(None, pts)})
    for q in (0.0, 0.3, 1.0, 1.7):
        s = min(int(q), 1)
        u = q - s
        b = (
            np.array(
                [(1 - u) ** 3, 3 * u**3 - 6 * u**2 + 4, -3 * u**3 + 3 * u**2 + 3 * u + 1, u**3]
            )
            / 6
        )
        np.testing.assert_allclose(joint.Q([q])[:3, 3], b @ pts[s : s + 4], atol=1e-12)


def test_unknown_kind_and_bad_sizes_are_reported() -> None:
    with pytest.raises(UnknownNameError, match="unknown joint kind 'hinge'"):
        make_joint("hinge")
    spec = JointSpec("j", "spherical", None, "b", q0=[0.1, 0.2])
    with pytest.raises(ConfigurationError, match="3 coordinates but q0"):
        build_joint(spec)
    with pytest.raises(ConfigurationError, match="spline curve"):
        make_joint("spline_curve")
