"""Newton–Euler in body coordinates: the Coriolis sign, gravity, free flight.

Facts
-----
* With ``M phidot = ad(phi)^T M phi`` and ``Edot = E [phi]`` the world linear
  and angular momenta are constant (central differences of step 1e-6 vanish
  to 1e-8 of their size), while the opposite sign changes them at O(1): the
  ``+`` of Sueda's notes eq. 1.21/1.28 is right.
* The rotated momentum ``exp(-h [omega]) M phi`` agrees with eq. 1.28's
  ``M phi + h ad(phi)^T M phi`` to O(h^2) (the difference over h^2 is
  constant as h halves).
* The gravity wrench is minus the derivative of the potential ``-m g . p``
  along body perturbations ``E exp([delta])`` (central differences).
* A torque-free asymmetric body (principal moments 0.1, 0.2, 0.25) keeps its
  kinetic energy and world angular momentum to O(h): over 2 s the relative
  errors are 2.3 %, 1.1 %, 0.55 % (energy) and 1.9 %, 0.97 %, 0.48 %
  (momentum) at h = 1e-2, 5e-3, 2.5e-3, halving with h; the explicit form
  of eq. 1.28 has twice these errors.
* A body thrown under gravity follows the semi-implicit Euler parabola
  ``z_k = z_0 + v_0 k h - g h^2 k (k + 1)/2`` exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from maximal_stepping import run

from contactlab import se3
from contactlab.maximal import MaximalFormulation
from contactlab.maximal import assembly as asm
from contactlab.scene import Body, Scene

MDIAG = np.array([[0.1, 0.2, 0.25, 2.0, 2.0, 2.0], [0.3, 0.05, 0.3, 0.7, 0.7, 0.7]])


def world_momenta(E: np.ndarray, phi: np.ndarray) -> np.ndarray:
    R, p = E[:, :3, :3], E[:, :3, 3]
    lin = MDIAG[:, 3:4] * np.einsum("nab,nb->na", R, phi[:, 3:])
    ang = np.cross(p, lin) + np.einsum("nab,nb->na", R, MDIAG[:, :3] * phi[:, :3])
    return np.concatenate([lin, ang], axis=1)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_coriolis_sign_conserves_world_momenta(sign: float) -> None:
    rng = np.random.default_rng(3)
    E, phi = se3.random_transform(rng, 2), rng.standard_normal((2, 6))
    phidot = sign * asm.coriolis(MDIAG, phi) / MDIAG
    eps = 1e-6
    plus = world_momenta(E @ se3.exp_se3(eps * phi), phi + eps * phidot)
    minus = world_momenta(E @ se3.exp_se3(-eps * phi), phi - eps * phidot)
    rate = np.abs((plus - minus) / (2 * eps)).max() / np.abs(world_momenta(E, phi)).max()
    if sign > 0:
        assert rate < 1e-8
    else:
        assert rate > 0.1


def test_rotated_momentum_is_eq_1_28_to_second_order() -> None:
    rng = np.random.default_rng(4)
    phi = rng.standard_normal((2, 6))
    ratios = []
    for h in (1e-2, 5e-3, 2.5e-3):
        explicit = MDIAG * phi + h * asm.coriolis(MDIAG, phi)
        ratios.append(np.abs(asm.rotated_momentum(MDIAG, phi, h) - explicit).max() / h**2)
    assert ratios[0] > 1e-3
    assert ratios[1] == pytest.approx(ratios[0], rel=0.02)
    assert ratios[2] == pytest.approx(ratios[0], rel=0.03)


def test_gravity_wrench_is_minus_the_potential_gradient() -> None:
    rng = np.random.default_rng(5)
    E = se3.random_transform(rng, 2)
    g = np.array([0.3, -1.0, -9.81])
    wrench = asm.gravity_wrench(MDIAG, g, E)
    eps = 1e-6
    for i in range(2):
        for k in range(6):
            d = np.zeros((2, 6))
            d[i, k] = eps
            fd = (
                asm.gravity_energy(MDIAG, g, E @ se3.exp_se3(d))
                - asm.gravity_energy(MDIAG, g, E @ se3.exp_se3(-d))
            ) / (2 * eps)
            assert -fd == pytest.approx(wrench[i, k], abs=1e-7)


def _free_body_errors(coriolis: str, h: float) -> tuple[float, float]:
    body = Body("b", 2.0, [0.1, 0.2, 0.25])
    E0 = se3.make_transform(se3.exp_so3([0.2, 0.4, -0.1]))
    scene = Scene(
        "free",
        (body,),
        gravity=np.zeros(3),
        initial_E=E0[None],
        initial_phi=np.array([[1.0, 3.0, -0.5, 0.3, -0.2, 0.1]]),
    )
    _, m = run(
        MaximalFormulation(scene, coriolis=coriolis),
        h,
        int(round(2.0 / h)),
        every=int(round(0.1 / h)),
    )
    K = np.array([x["kinetic_energy"] for x in m])
    H = np.array([[x[f"angular_momentum_{c}"] for c in "xyz"] for x in m])
    return float(np.abs(K - K[0]).max() / K[0]), float(
        np.linalg.norm(H - H[0], axis=1).max() / np.linalg.norm(H[0])
    )


def test_torque_free_body_conserves_energy_and_angular_momentum_to_first_order() -> None:
    errors = np.array([_free_body_errors("rotated", h) for h in (1e-2, 5e-3, 2.5e-3)])
    assert np.all(errors[0] < [0.025, 0.021])
    # first order: halving h halves both errors
    assert np.all((errors[:-1] / errors[1:] > 1.9) & (errors[:-1] / errors[1:] < 2.15))
    explicit = np.array(_free_body_errors("explicit", 1e-2))
    assert np.all(explicit > 1.8 * errors[0])


def test_thrown_body_follows_the_discrete_parabola() -> None:
    body = Body("b", 1.5, [0.1, 0.2, 0.25])
    phi0 = np.array([[0.0, 0.0, 0.0, 1.0, 0.0, 4.0]])
    scene = Scene("throw", (body,), initial_E=np.eye(4)[None], initial_phi=phi0)
    h, n = 1e-2, 80
    state, m = run(MaximalFormulation(scene), h, n)
    k = n
    assert state.E[0, 2, 3] == pytest.approx(
        4.0 * k * h - 9.81 * h * h * k * (k + 1) / 2, abs=1e-12
    )
    assert state.E[0, 0, 3] == pytest.approx(1.0 * k * h, abs=1e-12)
    # linear momentum changes by m g h per step
    assert m[-1]["linear_momentum_z"] - m[0]["linear_momentum_z"] == pytest.approx(
        -1.5 * 9.81 * n * h, abs=1e-12
    )


def test_fused_free_momentum_equals_the_numpy_construction() -> None:
    """The compiled free momentum of the midpoint rule (the step's default) against the
    numpy construction it replaces (``midpoint_momentum + h gravity_wrench``): the same
    operations in the same order, so equal to a few ulps at most (the order in which
    numpy's ``einsum`` sums three products depends on the SIMD width of the machine; on
    x86-64 with AVX-512 the two are equal to the bit).  Random bodies with spins from
    1e-6 to 30 rad/s, some at rest (the series branch of Rodrigues' formula)."""
    from contactlab import se3
    from contactlab.maximal import assembly as asm

    rng = np.random.default_rng(5)
    nb = 400
    mass = np.repeat(rng.uniform(0.5, 2, (nb, 1)), 3, 1)
    md = np.column_stack([rng.uniform(1e-3, 1e-2, (nb, 3)), mass])
    E = np.tile(np.eye(4), (nb, 1, 1))
    E[:, :3, :3] = se3.exp_so3(rng.standard_normal((nb, 3)))
    E[:, :3, 3] = rng.standard_normal((nb, 3))
    phi = rng.standard_normal((nb, 6)) * 10.0 ** rng.uniform(-6, 1.5, (nb, 1))
    phi[::7] = 0.0
    g = np.array([0.3, -0.2, -9.81])
    for h in (0.001, 0.005, 0.02):
        ref = (asm.midpoint_momentum(md, phi, h) + h * asm.gravity_wrench(md, g, E)).reshape(-1)
        out = asm._midpoint_free_momentum(md, phi, E, g, h, asm.MIDPOINT_ITERATIONS)
        scale = np.abs(ref).reshape(-1, 3).max(axis=1).repeat(3)
        assert np.all(np.abs(out - ref) <= 4 * np.finfo(float).eps * scale)
