"""Facts about the SE(3) algebra of :mod:`contactlab.se3` (Sueda's notes §1.1–1.5).

Independent references: ``scipy.linalg.expm``/``logm`` for the exponential
and logarithm, and central finite differences for every derivative
(``Edot``, ``Ad-dot``, the material Jacobian, the right Jacobian).  Central
differences with step ``eps`` have truncation error ``O(eps^2)`` and
round-off ``O(1e-16 / eps)``; with ``eps = 1e-6`` both are below ``1e-9``
for the unit-scale quantities used here, hence the ``1e-8`` tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from contactlab import se3
from contactlab.errors import ConfigurationError

EPS = 1e-6
FD_TOL = 1e-8

finite = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
vec3 = arrays(np.float64, (3,), elements=finite)
vec6 = arrays(np.float64, (6,), elements=finite)
quat = arrays(np.float64, (4,), elements=finite).filter(lambda q: np.linalg.norm(q) > 1e-3)


def _axis_angle(rng: np.random.Generator, angles: np.ndarray) -> np.ndarray:
    axes = rng.standard_normal((len(angles), 3))
    axes /= np.linalg.norm(axes, axis=1, keepdims=True)
    return axes * angles[:, None]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240611)


# Angles covering the Taylor branch (< 1e-4), the switch point, generic
# values and the neighbourhood of pi where the trace formula fails.
ANGLES = np.array(
    [
        0.0,
        1e-12,
        1e-8,
        5e-5,
        9.99e-5,
        1.01e-4,
        1e-3,
        0.3,
        1.0,
        2.0,
        3.0,
        np.pi - 1e-3,
        np.pi - 1e-6,
        np.pi - 1e-9,
    ]
)


# ----------------------------------------------------------------------------
# brackets
# ----------------------------------------------------------------------------
def test_bracket3_is_cross_product(rng: np.random.Generator) -> None:
    w, b = rng.standard_normal((2, 10, 3))
    np.testing.assert_allclose((se3.bracket3(w) @ b[..., None])[..., 0], np.cross(w, b), atol=1e-14)
    np.testing.assert_allclose(se3.unbracket3(se3.bracket3(w)), w, atol=1e-15)


def test_bracket6_roundtrip_and_layout(rng: np.random.Generator) -> None:
    phi = rng.standard_normal((4, 6))
    B = se3.bracket6(phi)
    np.testing.assert_allclose(se3.unbracket6(B), phi, atol=1e-15)
    np.testing.assert_allclose(B[:, :3, 3], phi[:, 3:])  # linear part in the last column
    np.testing.assert_allclose(B[:, 3], 0.0)


# ----------------------------------------------------------------------------
# exp / log against scipy
# ----------------------------------------------------------------------------
def test_exp_so3_matches_expm(rng: np.random.Generator) -> None:
    w = np.concatenate([_axis_angle(rng, ANGLES), 2.0 * rng.standard_normal((20, 3))])
    R = se3.exp_so3(w)
    for wi, Ri in zip(w, R):
        np.testing.assert_allclose(Ri, scipy.linalg.expm(se3.bracket3(wi)), atol=1e-13)
    assert se3.is_rotation(R, tol=1e-12)


def test_exp_se3_matches_expm(rng: np.random.Generator) -> None:
    w = np.concatenate([_axis_angle(rng, ANGLES), 2.0 * rng.standard_normal((20, 3))])
    phi = np.concatenate([w, rng.standard_normal((len(w), 3))], axis=1)
    E = se3.exp_se3(phi)
    for p, Ei in zip(phi, E):
        np.testing.assert_allclose(Ei, scipy.linalg.expm(se3.bracket6(p)), atol=1e-12)


def _logm_blocks(A: np.ndarray) -> np.ndarray:
    """``logm`` of each (k, k) matrix of the stack ``A``, in one call.

    The principal logarithm is a primary matrix function, so the logarithm of
    a block-diagonal matrix is the block-diagonal of the blocks' logarithms;
    one call on the stack costs what one call on a single block does.
    """
    n, k = A.shape[0], A.shape[-1]
    L = np.real(scipy.linalg.logm(scipy.linalg.block_diag(*A)))
    return np.array([L[i * k : (i + 1) * k, i * k : (i + 1) * k] for i in range(n)])


def test_log_so3_matches_logm_away_from_pi(rng: np.random.Generator) -> None:
    # logm is ill-conditioned at pi; there the round trip below is the reference.
    w = _axis_angle(rng, rng.uniform(0.0, 3.0, 30))
    R = se3.exp_so3(w)
    np.testing.assert_allclose(se3.bracket3(se3.log_so3(R)), _logm_blocks(R), atol=1e-10)


def test_log_se3_matches_logm(rng: np.random.Generator) -> None:
    E = se3.random_transform(rng, 30)
    E = E[np.linalg.norm(se3.log_so3(E[:, :3, :3]), axis=-1) <= 3.0]
    assert len(E) >= 20  # most random rotations are well away from pi
    np.testing.assert_allclose(se3.bracket6(se3.log_se3(E)), _logm_blocks(E), atol=1e-9)


def test_log_exp_round_trip_every_angle(rng: np.random.Generator) -> None:
    w = _axis_angle(rng, ANGLES[ANGLES < np.pi - 1e-7])
    np.testing.assert_allclose(se3.log_so3(se3.exp_so3(w)), w, atol=1e-12, rtol=1e-10)
    phi = np.concatenate([w, rng.standard_normal((len(w), 3))], axis=1)
    np.testing.assert_allclose(se3.log_se3(se3.exp_se3(phi)), phi, atol=1e-11, rtol=1e-11)


def test_exp_log_round_trip_at_pi(rng: np.random.Generator) -> None:
    # At theta = pi the logarithm is +-w; exp(log R) = R and |log R| <= pi must hold.
    w = _axis_angle(rng, np.array([np.pi, np.pi - 1e-9, np.pi - 1e-6] * 4))
    R = se3.exp_so3(w)
    lw = se3.log_so3(R)
    assert np.all(np.linalg.norm(lw, axis=1) <= np.pi + 1e-12)
    np.testing.assert_allclose(se3.exp_so3(lw), R, atol=1e-12)
    E = se3.make_transform(R, rng.standard_normal((len(w), 3)))
    np.testing.assert_allclose(se3.exp_se3(se3.log_se3(E)), E, atol=1e-7)


def test_log_of_diagonal_half_turns() -> None:
    # Rotations by pi about coordinate axes: the trace formula gives 0/0 here.
    for k in range(3):
        R = -np.eye(3)
        R[k, k] = 1.0
        w = se3.log_so3(R)
        assert abs(np.linalg.norm(w) - np.pi) < 1e-12
        assert abs(abs(w[k]) - np.pi) < 1e-12


@settings(max_examples=50, deadline=None)
@given(vec6)
def test_property_exp_log_round_trip(phi: np.ndarray) -> None:
    E = se3.exp_se3(phi)
    assert se3.is_rotation(E[:3, :3], tol=1e-12)
    np.testing.assert_allclose(se3.exp_se3(se3.log_se3(E)), E, atol=1e-9)


@settings(max_examples=50, deadline=None)
@given(vec3)
def test_property_log_is_principal(w: np.ndarray) -> None:
    lw = se3.log_so3(se3.exp_so3(w))
    assert np.linalg.norm(lw) <= np.pi + 1e-12
    if np.linalg.norm(w) < np.pi - 1e-6:
        np.testing.assert_allclose(lw, w, atol=1e-9)


# ----------------------------------------------------------------------------
# time derivatives
# ----------------------------------------------------------------------------
def test_Edot_is_E_bracket_phi(rng: np.random.Generator) -> None:
    """Sueda's notes eq. (1.8), checked as in eq. (1.11) with a central difference."""
    E = se3.random_transform(rng, 10)
    phi = rng.standard_normal((10, 6))
    fd = (se3.integrate(E, phi, EPS) - se3.integrate(E, phi, -EPS)) / (2 * EPS)
    np.testing.assert_allclose(fd, E @ se3.bracket6(phi), atol=FD_TOL)


def test_integrate_is_one_parameter_subgroup(rng: np.random.Generator) -> None:
    E = se3.random_transform(rng, 5)
    phi = rng.standard_normal((5, 6))
    two_steps = se3.integrate(se3.integrate(E, phi, 0.3), phi, 0.3)
    np.testing.assert_allclose(two_steps, se3.integrate(E, phi, 0.6), atol=1e-12)


def test_adjoint_dot_by_finite_differences(rng: np.random.Generator) -> None:
    """Sueda's notes eqs. (1.19)–(1.20): Ad-dot = Ad(E) ad(phi)."""
    E = se3.random_transform(rng, 10)
    phi = rng.standard_normal((10, 6))
    fd = (se3.adjoint(se3.integrate(E, phi, EPS)) - se3.adjoint(se3.integrate(E, phi, -EPS))) / (
        2 * EPS
    )
    np.testing.assert_allclose(fd, se3.adjoint_dot(E, phi), atol=FD_TOL)


def test_gamma_gives_world_point_velocity(rng: np.random.Generator) -> None:
    """Sueda's notes eq. (1.12): d/dt (E x) = R Gamma(x) phi."""
    E = se3.random_transform(rng, 10)
    phi = rng.standard_normal((10, 6))
    x = rng.standard_normal((10, 3))
    fd = (
        se3.transform_points(se3.integrate(E, phi, EPS), x)
        - se3.transform_points(se3.integrate(E, phi, -EPS), x)
    ) / (2 * EPS)
    v = (E[:, :3, :3] @ se3.gamma(x) @ phi[..., None])[..., 0]
    np.testing.assert_allclose(fd, v, atol=FD_TOL)


def test_right_jacobian_by_finite_differences(rng: np.random.Generator) -> None:
    w = np.concatenate(
        [_axis_angle(rng, np.array([0.0, 1e-6, 1e-3, 0.5, 2.0, 3.0])), rng.standard_normal((4, 3))]
    )
    for wi in w:
        R = se3.exp_so3(wi)
        cols = []
        for k in range(3):
            e = np.zeros(3)
            e[k] = EPS
            dR = (se3.exp_so3(wi + e) - se3.exp_so3(wi - e)) / (2 * EPS)
            cols.append(se3.unbracket3(R.T @ dR))
        np.testing.assert_allclose(np.stack(cols, axis=1), se3.so3_right_jacobian(wi), atol=FD_TOL)


# ----------------------------------------------------------------------------
# adjoint
# ----------------------------------------------------------------------------
def test_adjoint_is_a_homomorphism(rng: np.random.Generator) -> None:
    E1, E2 = se3.random_transform(rng, (2, 10))
    np.testing.assert_allclose(
        se3.adjoint(se3.compose(E1, E2)), se3.adjoint(E1) @ se3.adjoint(E2), atol=1e-12
    )


def test_adjoint_inverse(rng: np.random.Generator) -> None:
    E = se3.random_transform(rng, 10)
    np.testing.assert_allclose(se3.inverse(E) @ E, np.broadcast_to(np.eye(4), E.shape), atol=1e-14)
    np.testing.assert_allclose(se3.adjoint_inverse(E), np.linalg.inv(se3.adjoint(E)), atol=1e-12)


def test_adjoint_transforms_twists(rng: np.random.Generator) -> None:
    """Ad(E) phi = vee(E [phi] E^-1) (Sueda's notes eq. 1.15)."""
    E = se3.random_transform(rng, 10)
    phi = rng.standard_normal((10, 6))
    lhs = (se3.adjoint(E) @ phi[..., None])[..., 0]
    rhs = se3.unbracket6(E @ se3.bracket6(phi) @ se3.inverse(E))
    np.testing.assert_allclose(lhs, rhs, atol=1e-12)


def test_ad_is_lie_bracket(rng: np.random.Generator) -> None:
    phi, psi = rng.standard_normal((2, 10, 6))
    A, B = se3.bracket6(phi), se3.bracket6(psi)
    np.testing.assert_allclose(
        (se3.ad(phi) @ psi[..., None])[..., 0], se3.unbracket6(A @ B - B @ A), atol=1e-13
    )


@settings(max_examples=50, deadline=None)
@given(vec6, vec6, vec6)
def test_property_adjoint_homomorphism(a: np.ndarray, b: np.ndarray, phi: np.ndarray) -> None:
    E1, E2 = se3.exp_se3(a), se3.exp_se3(b)
    lhs = se3.adjoint(E1 @ E2) @ phi
    rhs = se3.adjoint(E1) @ (se3.adjoint(E2) @ phi)
    np.testing.assert_allclose(lhs, rhs, atol=1e-9 * (1 + np.abs(rhs).max()))


# ----------------------------------------------------------------------------
# quaternions
# ----------------------------------------------------------------------------
def test_quaternion_of_axis_angle() -> None:
    """ArtiSynth notes §0.2: q = (cos(theta/2), sin(theta/2) u) is the rotation exp(theta [u])."""
    u = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    for theta in (0.0, 0.1, 1.5, 3.0, np.pi):
        q = np.concatenate([[np.cos(theta / 2)], np.sin(theta / 2) * u])
        np.testing.assert_allclose(
            se3.quaternion_to_rotation(q), se3.exp_so3(theta * u), atol=1e-14
        )


def test_quaternion_rotation_round_trips(rng: np.random.Generator) -> None:
    w = np.concatenate([_axis_angle(rng, ANGLES), rng.standard_normal((20, 3))])
    R = se3.exp_so3(w)
    q = se3.rotation_to_quaternion(R)
    np.testing.assert_allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-15)
    assert np.all(q[:, 0] >= 0.0)
    np.testing.assert_allclose(se3.quaternion_to_rotation(q), R, atol=1e-14)


@settings(max_examples=50, deadline=None)
@given(quat)
def test_property_quaternion_round_trip(q: np.ndarray) -> None:
    q = q / np.linalg.norm(q)
    q2 = se3.rotation_to_quaternion(se3.quaternion_to_rotation(q))
    # q and -q are the same rotation
    assert min(np.abs(q2 - q).max(), np.abs(q2 + q).max()) < 1e-12


def test_zero_quaternion_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="zero norm"):
        se3.quaternion_to_rotation(np.zeros(4))


# ----------------------------------------------------------------------------
# batching and sampling
# ----------------------------------------------------------------------------
def test_batched_equals_elementwise(rng: np.random.Generator) -> None:
    phi = rng.standard_normal((3, 4, 6))
    E = se3.exp_se3(phi)
    assert E.shape == (3, 4, 4, 4)
    for i in range(3):
        for j in range(4):
            np.testing.assert_allclose(E[i, j], se3.exp_se3(phi[i, j]), atol=1e-15)
            np.testing.assert_allclose(se3.adjoint(E)[i, j], se3.adjoint(E[i, j]), atol=1e-15)


def test_is_rotation_rejects_reflections_and_shears() -> None:
    assert se3.is_rotation(np.eye(3))
    assert not se3.is_rotation(np.diag([1.0, 1.0, -1.0]))
    assert not se3.is_rotation(np.eye(3) + 1e-3 * np.triu(np.ones((3, 3)), 1))


def test_random_rotation_is_uniform_in_mean(rng: np.random.Generator) -> None:
    # Haar measure on SO(3): E[R] = 0; each entry has variance 1/3, so the mean
    # of 20000 samples has std sqrt(1/3/20000) = 0.004; 0.025 is > 6 sigma.
    R = se3.random_rotation(rng, 20000)
    assert se3.is_rotation(R, tol=1e-12)
    assert np.abs(R.mean(axis=0)).max() < 0.025
