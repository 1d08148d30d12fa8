"""Force elements: every wrench, K and D against central finite differences.

Perturbations follow the interface: ``E_i <- E_i exp([eps e_k])`` for K (with
body twists held fixed) and ``phi_i <- phi_i + eps e_k`` for D.  With
``eps = 1e-6`` the central-difference truncation error is ~eps^2 (1e-12) and
the round-off ~1e-16/eps (1e-10) relative to the wrench scale, so a
tolerance of 1e-6 relative to the largest entry is safe and still catches
any wrong term (wrong terms are O(1) relative).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad

from contactlab import forces, se3
from contactlab.errors import ConfigurationError
from contactlab.forces.muscle_curves import (
    ACTIVE_FORCE_LENGTH,
    FORCE_VELOCITY,
    PASSIVE_FORCE_LENGTH,
)
from contactlab.scene import Body, Scene

EPS = 1e-6
RTOL = 1e-6
NAMES = ("a", "b", "c", "d")


def _scene(fs: tuple = ()) -> Scene:
    bodies = [Body(n, mass=1.0 + k, inertia=[0.1, 0.2, 0.25]) for k, n in enumerate(NAMES)]
    return Scene(name="forces", bodies=tuple(bodies), forces=fs)


def _state(seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return se3.random_transform(rng, len(NAMES), scale=scale), rng.standard_normal((len(NAMES), 6))


def _perturbed(E: np.ndarray, i: int, k: int, eps: float) -> np.ndarray:
    d = np.zeros(6)
    d[k] = eps
    out = E.copy()
    out[i] = E[i] @ se3.exp_se3(d)
    return out


def _fd_stiffness(f, scene, E, phi) -> np.ndarray:
    n = 6 * scene.n_bodies
    K = np.zeros((n, n))
    for i in range(scene.n_bodies):
        for k in range(6):
            wp = f.wrench(scene, _perturbed(E, i, k, EPS), phi)
            wm = f.wrench(scene, _perturbed(E, i, k, -EPS), phi)
            K[:, 6 * i + k] = (wp - wm).reshape(-1) / (2 * EPS)
    return K


def _fd_damping(f, scene, E, phi) -> np.ndarray:
    n = 6 * scene.n_bodies
    D = np.zeros((n, n))
    for j in range(n):
        dp = phi.copy().reshape(-1)
        dm = dp.copy()
        dp[j] += EPS
        dm[j] -= EPS
        wp = f.wrench(scene, E, dp.reshape(phi.shape))
        wm = f.wrench(scene, E, dm.reshape(phi.shape))
        D[:, j] = -(wp - wm).reshape(-1) / (2 * EPS)
    return D


def _fd_gradient(f, scene, E, phi) -> np.ndarray:
    g = np.zeros((scene.n_bodies, 6))
    for i in range(scene.n_bodies):
        for k in range(6):
            vp = f.energy(scene, _perturbed(E, i, k, EPS), phi)
            vm = f.energy(scene, _perturbed(E, i, k, -EPS), phi)
            g[i, k] = (vp - vm) / (2 * EPS)
    return g


def _close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    # 1e-8 absolute floor: the round-off of a central difference of O(1..10)
    # wrenches is ~1e-16 * 10 / eps = 1e-9 (matters where K is exactly zero)
    scale = np.abs(expected).max()
    err = np.abs(actual - expected).max()
    assert err <= RTOL * scale + 1e-8, f"{what}: max error {err:.3e} vs scale {scale:.3e}"


def _check_derivatives(f, seed: int, conservative_at_rest: bool = True) -> None:
    scene = _scene((f,))
    E, phi = _state(seed)
    K = f.stiffness(scene, E, phi, symmetric=False).toarray()
    _close(K, _fd_stiffness(f, scene, E, phi), f"K of {type(f).__name__}")
    Ks = f.stiffness(scene, E, phi).toarray()
    np.testing.assert_allclose(Ks, 0.5 * (K + K.T), atol=1e-14 * (1 + np.abs(K).max()))
    _close(f.damping(scene, E, phi).toarray(), _fd_damping(f, scene, E, phi), "D")
    if conservative_at_rest:
        rest = np.zeros_like(phi)
        _close(f.wrench(scene, E, rest), -_fd_gradient(f, scene, E, rest), "wrench = -dV")


def _world_wrench_sum(f, scene, E, phi) -> np.ndarray:
    """Sum of the body wrenches expressed in the world frame: zero for internal forces."""
    w = f.wrench(scene, E, phi)
    return np.einsum("nji,nj->i", se3.adjoint(se3.inverse(E)), w)


# ----------------------------------------------------------------------------
# point force, springs, damping
# ----------------------------------------------------------------------------
def test_point_force() -> None:
    f = forces.PointForce("b", point=[0.3, -0.2, 0.5], force=[1.0, -2.0, 0.5])
    _check_derivatives(f, seed=1)
    scene = _scene((f,))
    E, phi = _state(1)
    w = f.wrench(scene, E, phi)
    # world resultant: the force itself, torque about the world origin x X F
    x = se3.transform_points(E[1], f.point)
    np.testing.assert_allclose(
        _world_wrench_sum(f, scene, E, phi), np.r_[np.cross(x, f.force), f.force], atol=1e-12
    )
    assert np.all(w[[0, 2, 3]] == 0.0)


@pytest.mark.parametrize(("b1", "b2"), [("a", "c"), ("d", None), (None, "b"), ("c", "c")], ids=str)
def test_zero_length_spring(b1, b2) -> None:
    f = forces.ZeroLengthSpring(b1, [0.1, 0.4, -0.3], b2, [-0.5, 0.2, 0.1], spring_constant=7.0)
    _check_derivatives(f, seed=2)
    scene = _scene((f,))
    E, phi = _state(2)
    x1 = f.point1 if b1 is None else se3.transform_points(E[NAMES.index(b1)], f.point1)
    x2 = f.point2 if b2 is None else se3.transform_points(E[NAMES.index(b2)], f.point2)
    assert f.energy(scene, E, phi) == pytest.approx(0.5 * 7.0 * np.sum((x1 - x2) ** 2), rel=1e-14)
    if b1 is not None and b2 is not None:
        np.testing.assert_allclose(_world_wrench_sum(f, scene, E, phi), 0.0, atol=1e-12)


def test_zero_length_spring_with_coincident_points() -> None:
    """At zero length the wrench vanishes and K is still defined (-k A^T A on the points)."""
    scene = _scene()
    E, phi = _state(3)
    p = se3.transform_points(E[0], [0.2, 0.0, 0.1])
    f = forces.ZeroLengthSpring("a", [0.2, 0.0, 0.1], None, p, spring_constant=3.0)
    np.testing.assert_allclose(f.wrench(scene, E, phi), 0.0, atol=1e-14)
    _close(
        f.stiffness(scene, E, phi, symmetric=False).toarray(),
        _fd_stiffness(f, scene, E, phi),
        "K at l = 0",
    )


def test_spring_damper() -> None:
    f = forces.SpringDamper(
        "a",
        [0.2, 0.1, 0.0],
        "c",
        [0.0, -0.3, 0.2],
        spring_constant=50.0,
        damping_coefficient=3.0,
        rest_length=0.8,
    )
    _check_derivatives(f, seed=4)
    scene = _scene((f,))
    E, phi = _state(4)
    np.testing.assert_allclose(_world_wrench_sum(f, scene, E, phi), 0.0, atol=1e-11)
    # the damper only dissipates: D is positive semi-definite
    assert np.linalg.eigvalsh(f.damping(scene, E, phi).toarray()).min() > -1e-12
    # power of the wrench = -dV/dt - (d/L) ldot^2
    l, ldot = f.path_length(scene, E, phi)
    power = np.sum(f.wrench(scene, E, phi) * phi)
    np.testing.assert_allclose(
        power, -50.0 * (l - 0.8) / 0.8 * ldot - 3.0 / 0.8 * ldot**2, rtol=1e-12
    )


def test_spring_damper_rate_matches_finite_difference() -> None:
    f = forces.SpringDamper(
        "b",
        [0.2, 0.1, 0.0],
        None,
        [1.0, 2.0, 0.0],
        spring_constant=1.0,
        damping_coefficient=0.0,
        rest_length=1.0,
    )
    scene = _scene((f,))
    E, phi = _state(5)
    _, ldot = f.path_length(scene, E, phi)
    lp, _ = f.path_length(scene, se3.integrate(E, phi, EPS), phi)
    lm, _ = f.path_length(scene, se3.integrate(E, phi, -EPS), phi)
    assert ldot == pytest.approx((lp - lm) / (2 * EPS), rel=1e-8)


def test_body_damping() -> None:
    f = forces.BodyDamping(angular=0.3, linear=2.0, bodies_named=("b", "d"))
    _check_derivatives(f, seed=6, conservative_at_rest=False)
    scene = _scene((f,))
    E, phi = _state(6)
    w = f.wrench(scene, E, phi)
    np.testing.assert_allclose(w[1], -np.r_[0.3 * phi[1, :3], 2.0 * phi[1, 3:]])
    assert np.all(w[[0, 2]] == 0.0)
    D = forces.BodyDamping(angular=1.0, linear=1.0).damping(scene, E, phi)
    np.testing.assert_array_equal(D.toarray(), np.eye(24))  # Sueda's notes §1.9.1: D = d I


# ----------------------------------------------------------------------------
# muscles
# ----------------------------------------------------------------------------
def _muscle(points, seed: int, lt: float, vt: float, activation: float = 0.7) -> forces.Muscle:
    """A muscle whose normalised length and velocity at state ``seed`` are ``lt`` and ``vt``."""
    probe = forces.Muscle(points, max_isometric_force=1.0, optimal_length=1.0)
    scene = _scene((probe,))
    E, phi = _state(seed)
    length, rate = probe.path_length(scene, E, phi)
    l_opt = 0.5 * length / lt
    return forces.Muscle(
        points,
        max_isometric_force=200.0,
        optimal_length=l_opt,
        tendon_slack_length=0.5 * length,
        max_contraction_velocity=abs(rate) / (l_opt * abs(vt)),
        activation=activation,
    )


# normalised lengths/velocities inside single cubic pieces of every curve, so
# the finite differences never straddle a breakpoint (the curves are C1, not C2)
CASES = [(1.1, 0.02), (1.1, -0.3), (0.85, 0.5), (1.5, -0.03)]


@pytest.mark.parametrize(("lt", "vt"), CASES)
def test_two_point_muscle(lt: float, vt: float) -> None:
    pts = (("a", [0.1, 0.2, 0.3]), ("c", [-0.2, 0.0, 0.4]))
    f = _muscle(pts, seed=7, lt=lt, vt=vt)
    scene = _scene((f,))
    E, phi = _state(7)
    got = f.normalized(*f.path_length(scene, E, phi))
    np.testing.assert_allclose(got, [lt, np.sign(got[1]) * abs(vt)], rtol=1e-12)
    _check_derivatives(f, seed=7)
    np.testing.assert_allclose(_world_wrench_sum(f, scene, E, phi), 0.0, atol=1e-9)


@pytest.mark.parametrize(("lt", "vt"), CASES)
def test_multi_point_muscle(lt: float, vt: float) -> None:
    """Origin on a, via points on b (two), a world pulley and c, insertion on d."""
    pts = (
        ("a", [0.1, 0.2, 0.3]),
        ("b", [0.0, 0.1, -0.1]),
        ("b", [0.2, -0.1, 0.0]),
        (None, [0.5, 0.5, 0.5]),
        ("c", [0.0, 0.3, 0.1]),
        ("d", [-0.2, 0.0, 0.4]),
    )
    f = _muscle(pts, seed=8, lt=lt, vt=vt)
    _check_derivatives(f, seed=8)


def test_muscle_tension_is_the_seed_formula() -> None:
    f = forces.Muscle.between(
        "a",
        [0, 0, 0],
        "b",
        [0, 0, 0],
        max_isometric_force=100.0,
        optimal_length=0.2,
        tendon_slack_length=0.1,
        max_contraction_velocity=5.0,
        activation=0.4,
    )
    length, rate = 0.32, 0.15  # l~ = 1.1, v~ = 0.15
    F, _, _ = f.tension(length, rate)
    expected = 100.0 * (
        0.4 * ACTIVE_FORCE_LENGTH.value(1.1) * FORCE_VELOCITY.value(0.15)
        + PASSIVE_FORCE_LENGTH.value(1.1)
    )
    assert F == pytest.approx(float(expected), rel=1e-14)


# ----------------------------------------------------------------------------
# muscle curves
# ----------------------------------------------------------------------------
CURVES = {
    "passive": PASSIVE_FORCE_LENGTH,
    "active": ACTIVE_FORCE_LENGTH,
    "velocity": FORCE_VELOCITY,
}


def test_curve_coefficients_match_the_seed() -> None:
    """Sueda's notes, eqs. (1.42) and (1.44), printed to 15 digits."""
    np.testing.assert_allclose(
        PASSIVE_FORCE_LENGTH.coeffs,
        [
            [2.55305620081729, -7.02386028610914, 6.38855196976641, -1.91774788447456],
            [-2.76122280853939, 14.6587935048229, -23.0429533092186, 11.3749950550874],
        ],
        rtol=1e-9,
    )
    np.testing.assert_allclose(
        ACTIVE_FORCE_LENGTH.coeffs,
        [
            [-39.881247949014, 68.3443204612586, -35.5324573534802, 5.83029153632759],
            [-0.322674853252855, -1.71744046959073, 4.40290549894003, -1.36279017609645],
            [4.85118460831817, -20.9908796589089, 28.3080866793169, -11.2356843095252],
        ],
        rtol=1e-9,
    )


def test_force_velocity_conditions() -> None:
    """Sueda's notes, eq. (1.45), and monotonicity (faster lengthening, more force)."""
    fv, dfv = FORCE_VELOCITY.evaluate(np.array([-1.0, 0.0, 1.0]))
    np.testing.assert_allclose(fv, [0.0, 1.0, 1.4], atol=1e-12)
    np.testing.assert_allclose(dfv, [0.0, 5.0, 0.0], atol=1e-10)
    a, b = FORCE_VELOCITY.coeffs[[0, 2], 0], FORCE_VELOCITY.coeffs[[0, 2], 1]
    np.testing.assert_allclose(6 * a * np.array([-1.0, 1.0]) + 2 * b, 0.0, atol=1e-10)
    x = np.linspace(-1.0, 1.0, 2001)
    assert np.all(np.diff(FORCE_VELOCITY.value(x)) >= -1e-12)


@pytest.mark.parametrize("name", list(CURVES))
def test_curves_are_c1_at_breakpoints(name: str) -> None:
    curve = CURVES[name]
    h = 1e-9
    for x in curve.breaks:
        (fl, fr), (dl, dr) = curve.evaluate(np.array([x - h, x + h]))
        assert abs(fl - fr) < 1e-7, (name, x)
        assert abs(dl - dr) < 1e-6, (name, x)


@pytest.mark.parametrize("name", list(CURVES))
def test_curve_derivative_and_integral(name: str) -> None:
    curve = CURVES[name]
    x = np.linspace(curve.breaks[0] - 0.2, curve.breaks[-1] + 0.2, 37)
    x = x[np.min(np.abs(x[:, None] - curve.breaks[None, :]), axis=1) > 1e-3]
    f, df = curve.evaluate(x)
    fd = (curve.value(x + EPS) - curve.value(x - EPS)) / (2 * EPS)
    np.testing.assert_allclose(df, fd, atol=1e-6)
    for xi in x[::5]:
        ref = quad(
            lambda t: float(curve.value(t)),
            curve.breaks[0],
            xi,
            points=list(curve.breaks),
            limit=200,
        )[0]
        assert float(curve.integral(xi)) == pytest.approx(ref, abs=1e-10)


# ----------------------------------------------------------------------------
# sums, implicit step, bad input
# ----------------------------------------------------------------------------
def _mixed_forces() -> tuple:
    return (
        forces.PointForce("a", [0.1, 0, 0], [0, 0, 3.0]),
        forces.ZeroLengthSpring("a", [0, 0.1, 0], "b", [0.2, 0, 0], spring_constant=5.0),
        forces.SpringDamper(
            "c",
            [0, 0, 0.1],
            None,
            [1, 1, 1],
            spring_constant=4.0,
            damping_coefficient=0.5,
            rest_length=0.5,
        ),
        forces.BodyDamping(angular=0.1, linear=0.2),
    )


def test_totals_sum_the_elements_in_both_call_forms() -> None:
    fs = _mixed_forces()
    scene = _scene(fs)
    E, phi = _state(9)
    assert forces.total_energy(fs, scene, E, phi) == pytest.approx(
        sum(f.energy(scene, E, phi) for f in fs), rel=1e-14
    )
    assert forces.total_energy(scene, E, phi) == forces.total_energy(fs, scene, E, phi)
    np.testing.assert_allclose(
        forces.total_wrench(scene, E, phi), sum(f.wrench(scene, E, phi) for f in fs), atol=1e-14
    )
    K = forces.total_stiffness(scene, E, phi, symmetric=False).toarray()
    np.testing.assert_allclose(
        K, sum(f.stiffness(scene, E, phi, symmetric=False).toarray() for f in fs), atol=1e-13
    )
    np.testing.assert_allclose(
        forces.total_stiffness(fs, scene, E, phi).toarray(), 0.5 * (K + K.T), atol=1e-13
    )
    np.testing.assert_allclose(
        forces.total_damping(scene, E, phi).toarray(),
        sum(f.damping(scene, E, phi).toarray() for f in fs),
        atol=1e-14,
    )


class _Total:
    """The sum of a force list seen as one element, for the finite-difference helpers."""

    def __init__(self, fs: tuple) -> None:
        self.fs = fs

    def wrench(self, scene, E, phi):
        return forces.total_wrench(self.fs, scene, E, phi)

    def energy(self, scene, E, phi):
        return forces.total_energy(self.fs, scene, E, phi)


def test_many_two_point_elements_at_once() -> None:
    """The vectorized sums over dozens of springs and straight muscles (shared bodies,
    world ends, both ends on one body) against finite differences of the summed wrench."""
    rng = np.random.default_rng(10)
    ends = [*NAMES, None]

    def pair() -> tuple:
        b1 = ends[rng.integers(4)]  # first end always on a body
        b2 = ends[rng.integers(5)]
        return b1, rng.uniform(-0.5, 0.5, 3), b2, rng.uniform(-0.5, 0.5, 3)

    fs = []
    for _ in range(20):
        b1, p1, b2, p2 = pair()
        fs.append(forces.ZeroLengthSpring(b1, p1, b2, p2, spring_constant=rng.uniform(1, 9)))
        b1, p1, b2, p2 = pair()
        fs.append(
            forces.SpringDamper(
                b1,
                p1,
                b2,
                p2,
                spring_constant=rng.uniform(1, 9),
                damping_coefficient=rng.uniform(0, 2),
                rest_length=rng.uniform(0.2, 1.0),
            )
        )
    fs.append(
        forces.Muscle.between(
            "a",
            [0.1, 0, 0],
            "b",
            [0, 0.2, 0],
            max_isometric_force=5.0,
            optimal_length=1.0,
            max_contraction_velocity=50.0,
        )
    )
    fs = tuple(fs)
    scene = _scene(fs)
    E, phi = _state(10)
    total = _Total(fs)
    K = forces.total_stiffness(scene, E, phi, symmetric=False).toarray()
    _close(K, _fd_stiffness(total, scene, E, phi), "summed K")
    _close(
        forces.total_damping(scene, E, phi).toarray(), _fd_damping(total, scene, E, phi), "summed D"
    )
    np.testing.assert_allclose(
        forces.total_wrench(scene, E, phi), sum(f.wrench(scene, E, phi) for f in fs), atol=1e-12
    )
    rest = np.zeros_like(phi)
    _close(
        forces.total_wrench(scene, E, rest),
        -_fd_gradient(total, scene, E, rest),
        "summed wrench = -dV",
    )


def test_linearly_implicit_step_is_stable_for_a_stiff_spring() -> None:
    """Sueda's notes, eq. (1.30): a stiff spring (omega h = 20) to a world point.

    The explicit step multiplies the oscillation amplitude by ~sqrt(1 + (omega h)^2)
    per step and explodes; the linearly implicit step is dissipative: the total
    (kinetic + spring) energy never increases.
    """
    spring = forces.ZeroLengthSpring(
        "a", [0.0, 0.0, 0.0], None, [0.0, 0.0, 0.0], spring_constant=4e4
    )
    scene = Scene(
        name="stiff", bodies=(Body("a", mass=1.0, inertia=[0.1, 0.1, 0.1]),), forces=(spring,)
    )
    M = np.diag(scene.spatial_inertia.reshape(-1))
    h = 0.1
    E = se3.make_transform(np.eye(3), [0.3, -0.1, 0.2])[None]
    phi = np.zeros((1, 6))
    energies = []
    for _ in range(50):
        A, b = forces.linearly_implicit_terms(scene.forces, scene, E, phi, h)
        phi = np.linalg.solve(M + A.toarray(), M @ phi.reshape(-1) + b).reshape(1, 6)
        E = se3.integrate(E, phi, h)
        energies.append(0.5 * phi[0] @ M @ phi[0] + spring.energy(scene, E, phi))
    assert np.all(np.diff(energies) <= 1e-12 * energies[0])
    assert energies[-1] < 1e-3 * energies[0]


def test_bad_input() -> None:
    scene = _scene()
    E, phi = _state(0)
    f = forces.ZeroLengthSpring("a", [0, 0, 0], "nope", [0, 0, 0], spring_constant=1.0)
    with pytest.raises(ConfigurationError, match="'nope'"):
        f.wrench(scene, E, phi)
    with pytest.raises(ConfigurationError, match="both ends are in the world"):
        forces.ZeroLengthSpring(None, [0, 0, 0], None, [1, 0, 0], spring_constant=1.0)
    with pytest.raises(ConfigurationError, match="spring_constant"):
        forces.ZeroLengthSpring("a", [0, 0, 0], "b", [0, 0, 0], spring_constant=-1.0)
    with pytest.raises(ConfigurationError, match="rest_length"):
        forces.SpringDamper("a", [0, 0, 0], "b", [0, 0, 0], 1.0, 1.0, rest_length=0.0)
    with pytest.raises(ConfigurationError, match="3-vector"):
        forces.PointForce("a", [0, 0], [0, 0, 1])
    with pytest.raises(ConfigurationError, match="activation"):
        forces.Muscle.between(
            "a",
            [0, 0, 0],
            "b",
            [0, 0, 0],
            max_isometric_force=1.0,
            optimal_length=1.0,
            activation=1.5,
        )
    with pytest.raises(ConfigurationError, match="at least two points"):
        forces.Muscle((("a", [0, 0, 0]),), max_isometric_force=1.0, optimal_length=1.0)
    same = forces.SpringDamper("a", [0, 0, 0], "a", [0, 0, 0], 1.0, 1.0, rest_length=1.0)
    with pytest.raises(ConfigurationError, match="zero length"):
        same.wrench(scene, E, phi)
    with pytest.raises(ConfigurationError, match=r"shape \(4, 4, 4\)"):
        forces.total_wrench((f,), scene, E[:2], phi)
