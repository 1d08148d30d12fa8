"""Frame springs (seed 001 §0.22): wrench, exact K and D against central differences.

The helpers of ``test_forces`` perturb body ``i`` as ``E_i <- E_i exp([eps e_k])``
(K, twists fixed) and ``phi_i <- phi_i + eps e_k`` (D) with eps = 1e-6, and
compare to 1e-6 of the largest entry (see that module for the error budget).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_forces import EPS, NAMES, _check_derivatives, _close, _perturbed, _scene, _state

from contactlab import forces, se3
from contactlab.errors import ConfigurationError
from contactlab.forces.frame_spring import so3_left_jacobian_inverse
from contactlab.scene import Body, Scene

RNG = np.random.default_rng(7)
FRAME_A = se3.random_transform(RNG, scale=0.5)
FRAME_B = se3.random_transform(RNG, scale=0.5)


def _spring(a, b, damped: bool = True) -> forces.FrameSpring:
    return forces.FrameSpring(
        a,
        b,
        FRAME_A,
        FRAME_B,
        k_t=40.0,
        k_r=3.0,
        d_t=2.5 if damped else 0.0,
        d_r=0.7 if damped else 0.0,
    )


def test_left_jacobian_inverse_is_the_derivative_of_log() -> None:
    """log(exp([eps w]) exp([v])) = v + eps J_l^{-1}(v) w + O(eps^2), also near 0."""
    for v in (np.array([0.3, -1.1, 0.8]), np.array([2e-5, 1e-5, -3e-5]), np.zeros(3)):
        J = so3_left_jacobian_inverse(v)
        fd = np.zeros((3, 3))
        for k in range(3):
            e = np.zeros(3)
            e[k] = EPS
            plus = se3.log_so3(se3.exp_so3(e) @ se3.exp_so3(v))
            minus = se3.log_so3(se3.exp_so3(-e) @ se3.exp_so3(v))
            fd[:, k] = (plus - minus) / (2 * EPS)
        np.testing.assert_allclose(J, fd, atol=1e-8)
        # U^T v = v: the rotational torque k_r v is the exact gradient of k_r |v|^2 / 2
        np.testing.assert_allclose(J.T @ v, v, atol=1e-15)


@pytest.mark.parametrize(("a", "b"), [("a", "c"), ("d", None), (None, "b")], ids=str)
@pytest.mark.parametrize("damped", [False, True])
def test_frame_spring_derivatives(a, b, damped) -> None:
    """Exact (non-symmetric) K, symmetric part, D, and wrench = -dV/d delta at rest."""
    _check_derivatives(_spring(a, b, damped), seed=11)


def test_frame_spring_is_internal_and_vanishes_at_rest_length() -> None:
    scene_bodies = _scene()
    E, phi = _state(3)
    f = _spring("a", "c", damped=False)
    scene = _scene((f,))
    w = f.wrench(scene, E, phi)
    # world resultant (forces and torques about the origin) of an elastic frame spring is 0
    total = np.einsum("nji,nj->i", se3.adjoint(se3.inverse(E)), w)
    np.testing.assert_allclose(total, 0.0, atol=1e-12 * (1 + np.abs(w).max()))
    # placing body c so that frame 2 coincides with frame 1: no wrench, no energy
    E2 = E.copy()
    E2[2] = E[0] @ FRAME_A @ se3.inverse(FRAME_B)
    rest = np.zeros_like(phi)
    assert f.energy(scene, E2, rest) == pytest.approx(0.0, abs=1e-20)
    np.testing.assert_allclose(f.wrench(scene, E2, rest), 0.0, atol=1e-12)
    assert scene_bodies.n_bodies == len(NAMES)


def test_frame_spring_energy_is_the_seed_formula() -> None:
    scene = _scene((_spring("b", "d"),))
    E, phi = _state(5)
    f = scene.forces[0]
    x1 = se3.transform_points(E[1] @ FRAME_A, np.zeros(3))
    x2 = se3.transform_points(E[3] @ FRAME_B, np.zeros(3))
    R21 = (E[1] @ FRAME_A)[:3, :3].T @ (E[3] @ FRAME_B)[:3, :3]
    phi_u = se3.log_so3(R21)
    expected = 0.5 * 40.0 * np.sum((x2 - x1) ** 2) + 0.5 * 3.0 * phi_u @ phi_u
    assert f.energy(scene, E, phi) == pytest.approx(expected, rel=1e-14)


def _world_perturbed(E: np.ndarray, i: int, k: int, eps: float) -> np.ndarray:
    """World perturbation: rotation exp([eps e_k]) R about the body origin, or a shift."""
    out = E.copy()
    if k < 3:
        e = np.zeros(3)
        e[k] = eps
        out[i][:3, :3] = se3.exp_so3(e) @ E[i][:3, :3]
    else:
        out[i][k - 3, 3] += eps
    return out


def test_world_jacobians_match_world_finite_differences() -> None:
    """Seed 001 §0.22.3: K and D for world wrenches, perturbations and twists."""
    f = _spring("a", "c")
    scene = _scene((f,))
    E, phi = _state(9)
    idx = np.array([0, 2])

    def world_wrench(Ev, phiv):
        w = f.wrench(scene, Ev, phiv)[idx]
        R = Ev[idx][:, :3, :3]
        return np.concatenate(
            [np.einsum("nij,nj->ni", R, w[:, :3]), np.einsum("nij,nj->ni", R, w[:, 3:])], axis=1
        ).reshape(-1)

    K = f.stiffness(scene, E, phi, symmetric=False).toarray()
    D = f.damping(scene, E, phi).toarray()
    sel = (6 * idx[:, None] + np.arange(6)).reshape(-1)
    Kw, Dw = forces.world_jacobians(
        E[idx], f.wrench(scene, E, phi)[idx], K[np.ix_(sel, sel)], D[np.ix_(sel, sel)]
    )
    fdK = np.zeros((12, 12))
    fdD = np.zeros((12, 12))
    R = E[idx][:, :3, :3]
    for j, i in enumerate(idx):
        for k in range(6):
            col = 6 * j + k
            fdK[:, col] = (
                world_wrench(_world_perturbed(E, i, k, EPS), phi)
                - world_wrench(_world_perturbed(E, i, k, -EPS), phi)
            ) / (2 * EPS)
            # world twist component k: body twist changes by R^T e_k in its 3-block
            d = np.zeros_like(phi)
            d[i, 3 * (k // 3) : 3 * (k // 3) + 3] = R[j].T[:, k % 3] * EPS
            fdD[:, col] = -(world_wrench(E, phi + d) - world_wrench(E, phi - d)) / (2 * EPS)
    _close(Kw, fdK, "world K")
    _close(Dw, fdD, "world D")


def test_non_symmetric_stiffness_changes_the_implicit_step() -> None:
    """Seed 001 §0.23: on a spinning body the exact K's skew part is not negligible.

    A body spinning at 6 rad/s on a frame spring to the world, one linearly implicit
    step (M + hD - h^2 K) phi+ = M phi + h (f + D phi) with h = 20 ms: the exact K and
    its symmetric part give steps that differ by more than 1e-3 of the twist.
    """
    f = forces.FrameSpring("a", None, FRAME_A, FRAME_B, k_t=400.0, k_r=30.0, d_t=1.0, d_r=0.2)
    body = Body("a", mass=2.0, inertia=[0.1, 0.2, 0.25])
    scene = Scene(name="spin", bodies=(body,), forces=(f,))
    E = se3.make_transform(se3.exp_so3([0.4, -0.3, 0.9]), [0.2, -0.1, 0.3])[None]
    phi = np.array([[1.0, 6.0, -2.0, 0.3, 0.0, -0.2]])
    M = np.diag(scene.spatial_inertia.reshape(-1))
    h = 0.02
    K = f.stiffness(scene, E, phi, symmetric=False).toarray()
    assert np.abs(K - K.T).max() > 0.1 * np.abs(K).max()
    D = f.damping(scene, E, phi).toarray()
    w = f.wrench(scene, E, phi).reshape(-1)
    rhs = M @ phi[0] + h * (w + D @ phi[0])
    exact = np.linalg.solve(M + h * D - h * h * K, rhs)
    sym = np.linalg.solve(M + h * D - h * h * 0.5 * (K + K.T), rhs)
    assert np.abs(exact - sym).max() > 1e-3 * np.abs(phi).max()


def test_frame_spring_oscillates_at_the_analytic_frequencies() -> None:
    """A body on a frame spring to the world, no gravity: small translational and
    rotational oscillations at sqrt(k_t/m) and sqrt(k_r/I) (period within 0.5 %)."""
    from contactlab.simulator import Simulator

    m, inertia, k_t, k_r = 2.0, np.array([0.1, 0.2, 0.25]), 50.0, 3.0
    f = forces.FrameSpring("a", None, k_t=k_t, k_r=k_r)
    body = Body("a", mass=m, inertia=inertia)
    E0 = se3.make_transform(se3.exp_so3([0.0, 0.0, 0.01]), [0.01, 0.0, 0.0])[None]
    scene = Scene(
        name="frame-spring",
        bodies=(body,),
        forces=(f,),
        gravity=np.zeros(3),
        initial_E=E0,
        initial_phi=np.zeros((1, 6)),
        dt=4e-3,
        duration=2.0,
    )
    run = Simulator(scene, "maximal", "frictionless", "kkt").run(duration=2.0)
    t = run.trajectory["t"]
    x = run.trajectory["position"][:, 0, 0]
    yaw = np.arctan2(run.trajectory["rotation"][:, 0, 1, 0], run.trajectory["rotation"][:, 0, 0, 0])
    for signal, omega in ((x, np.sqrt(k_t / m)), (yaw, np.sqrt(k_r / inertia[2]))):
        s = np.sign(signal)
        crossings = t[1:][s[1:] != s[:-1]]
        period = 2 * np.mean(np.diff(crossings))
        assert period == pytest.approx(2 * np.pi / omega, rel=5e-3)


def test_frame_spring_bad_input() -> None:
    with pytest.raises(ConfigurationError, match="both frames are in the world"):
        forces.FrameSpring(None, None, k_t=1.0)
    with pytest.raises(ConfigurationError, match="two different bodies"):
        forces.FrameSpring("a", "a", k_t=1.0)
    with pytest.raises(ConfigurationError, match="k_r"):
        forces.FrameSpring("a", None, k_r=-1.0)
    with pytest.raises(ConfigurationError, match="not a rigid transform"):
        forces.FrameSpring("a", None, frame_a=2 * np.eye(4), k_t=1.0)
    E, phi = _state(0)
    with pytest.raises(ConfigurationError, match="'nope'"):
        forces.FrameSpring("a", "nope", k_t=1.0).wrench(_scene(), E, phi)
    assert _perturbed(E, 0, 0, 0.0).shape == E.shape


# ----------------------------------------------------------------------------
# axial springs (seed 001 §0.12-0.14)
# ----------------------------------------------------------------------------
_TWO = (("a", [0.1, 0.4, -0.3]), ("c", [-0.5, 0.2, 0.1]))
_MULTI = (
    ("a", [0.1, 0.4, -0.3]),
    ("b", [0.3, -0.1, 0.2]),
    (None, [0.5, 0.5, 0.5]),
    ("d", [0.0, 0.2, 0.1]),
)


@pytest.mark.parametrize("law", ["linear", "quadratic-strain"])
@pytest.mark.parametrize("path", [_TWO, _MULTI], ids=["two-point", "multi-point"])
def test_axial_spring_derivatives(law, path) -> None:
    f = forces.AxialSpring(
        path, spring_constant=30.0, damping_coefficient=1.5, rest_length=0.8, law=law
    )
    _check_derivatives(f, seed=21)


@pytest.mark.parametrize("law", ["linear", "quadratic-strain"])
def test_axial_spring_tension_and_potential(law) -> None:
    """The seed's tension laws, and dV/dl = F(l, 0) (central difference, 1e-8)."""
    k, d, r = 30.0, 1.5, 0.8
    f = forces.AxialSpring(_TWO, spring_constant=k, damping_coefficient=d, rest_length=r, law=law)
    for length, rate in ((0.5, 0.3), (1.3, -0.7)):
        F, F_l, F_v = f.tension(length, rate)
        if law == "linear":
            expected = k * (length - r) + d * rate  # eq. 0.12.1
        else:
            expected = k * (length**2 - r**2) / (2 * r**2) * length + d * rate  # sigma l, §0.13
        assert F == pytest.approx(expected, rel=1e-14)
        assert F_v == d
        dl = 1e-6
        Fp, _, _ = f.tension(length + dl, rate)
        Fm, _, _ = f.tension(length - dl, rate)
        assert F_l == pytest.approx((Fp - Fm) / (2 * dl), rel=1e-8)
        dV = (f.potential(length + dl) - f.potential(length - dl)) / (2 * dl)
        assert dV == pytest.approx(f.tension(length, 0.0)[0], rel=1e-8)
    with pytest.raises(ConfigurationError, match="law"):
        forces.AxialSpring(_TWO, spring_constant=1.0, law="cubic")
    with pytest.raises(ConfigurationError, match="rest_length"):
        forces.AxialSpring(_TWO, spring_constant=1.0, law="quadratic-strain")
