"""Lemke's method on degenerate contact LCPs that once ended on a secondary ray.

``data/contact_lcps.npz`` holds three Stewart--Trinkle step LCPs (standard
form, ``M`` dense, ``q``) captured bit for bit from simulator runs with
``contactlab`` (k = 4 pyramid directions, h = 5 ms):

- ``box_slide_rest`` (n = 24): the ``box-slide`` cube (1 kg, side 0.2 m,
  mu = 0.3) at step 175, at rest on four corner contacts.  ``N M^-1 N^T`` has
  rank 3, the pyramid holds ``d`` and ``-d``, the friction right-hand sides
  are rounding noise (|q| < 3e-13) and the four normal ones differ by 1e-12.
  The previous ratio test (ties within 1e-12 of the ratio, absolute) pivoted
  on a row that was not the minimum, a basic value went negative by 2e-13,
  and the walk ended on a secondary ray after 23 pivots;
- ``box_pile`` (n = 54, ``box-pile`` n = 4, step 59): ended on a secondary
  ray under the previous rule, and under two intermediate rules: ties on
  ``b_i - col_i theta <= tol`` alone admitted a row with ``b = 4.5e-12`` and
  pivot entry ``1.4e-10`` (ratio 0.031 against the minimum 0.014); Harris's
  bound without the stability filter admitted a pivot entry of 1.3e-8 tied
  with one of 12 (rounding of an exact zero), which made the basis condition
  number 3e12;
- ``mass_ratio_stack`` (n = 72, ``mass-ratio-stack``, step 9): solved by the
  previous rule but not by the first intermediate rule above; kept so that
  the ratio test stays right on it.

All three have solutions: an exact-arithmetic (rational) run of the same
lexicographic method on the same data finds one (21, 56 and 121 pivots).
The facts checked: ``optimal``; ``z >= 0``; ``w = Mz + q >= -1e-12``;
natural-map residual ``max |min(z, w)| < 1e-9`` (the backend's declared
tolerance); and, for the resting cube, the normal impulses sum to its weight
times the step, ``m g h = 0.04905`` N s (1e-9).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import LCP, solve
from solvers.errors import ProblemError

DATA = np.load(Path(__file__).parent / "data" / "contact_lcps.npz")
CASES = ["box_slide_rest", "box_pile", "mass_ratio_stack"]


def captured(name: str) -> LCP:
    return LCP(sp.csr_matrix(DATA[f"{name}_M"]), DATA[f"{name}_q"].copy())


@pytest.mark.parametrize("name", CASES)
def test_lemke_solves_captured_degenerate_contact_lcp(name: str) -> None:
    lcp = captured(name)
    res = solve(lcp, "lemke")
    assert res.status == "optimal", res.message
    z = res.x
    w = np.asarray(lcp.M @ z + lcp.q)
    assert z.min() >= 0.0
    assert w.min() >= -1e-12
    assert np.abs(np.minimum(z, w)).max() < 1e-9
    assert res.max_residual < 1e-9


def test_resting_cube_lcp_is_degenerate_and_its_solution_carries_the_weight() -> None:
    lcp = captured("box_slide_rest")
    nc, k = 4, 4
    M = lcp.M.toarray()
    assert np.linalg.matrix_rank(M[:nc, :nc], tol=1e-9) == 3
    assert np.linalg.matrix_rank(M[: nc * (1 + k), : nc * (1 + k)], tol=1e-9) == 6
    assert np.abs(lcp.q[nc:]).max() < 3e-13
    z = solve(lcp, "lemke").x
    assert z[:nc].sum() == pytest.approx(1.0 * 9.81 * 5e-3, abs=1e-9)
    assert np.abs(z[nc * (1 + k) :]).max() < 1e-9  # sliding speed 0: the cube sticks


@pytest.mark.parametrize("name", CASES)
def test_captured_lcps_are_solved_by_the_first_walk(name: str) -> None:
    """The ratio-test rules alone (no restart) solve the three captured problems."""
    res = solve(captured(name), "lemke", restarts=False)
    assert res.status == "optimal" and "restart" not in res.message
    assert res.max_residual < 1e-9


def resting_cube_lcp(rng: np.random.Generator, angle: float) -> LCP:
    """Stewart--Trinkle LCP of a cube at rest on its four bottom corners.

    Cube: m = 1 kg, side s = 0.2 m, body frame aligned with the world, body
    inertia ``m s^2 / 6``; twists ``(omega, nu)``; a contact row at corner
    ``r`` along ``d`` is ``(r x d, d)``.  Pyramid: k = 4 directions starting
    at ``angle`` [rad]; mu = 0.3; h = 5 ms; gravity 9.81 m/s^2.  Rounding
    noise as a resting body leaves it: twist ``1e-13`` [m/s, rad/s] and
    normal right-hand sides ``1e-12`` [m/s] (standard normal draws).
    """
    m, s, h, g, mu, k, nc = 1.0, 0.2, 5e-3, 9.81, 0.3, 4, 4
    half = s / 2
    corners = np.array([[x, y, -half] for x in (-half, half) for y in (-half, half)])
    a = angle + 2 * np.pi * np.arange(k) / k
    dirs = np.column_stack([np.cos(a), np.sin(a), np.zeros(k)])

    def row(r: np.ndarray, d: np.ndarray) -> np.ndarray:
        return np.concatenate([np.cross(r, d), d])

    ez = np.array([0.0, 0.0, 1.0])
    C = np.array([row(r, ez) for r in corners] + [row(r, d) for r in corners for d in dirs])
    mass = np.r_[np.full(3, m * s * s / 6), np.full(3, m)]
    v = 1e-13 * rng.standard_normal(6)
    f = mass * v + h * np.r_[0, 0, 0, 0, 0, -m * g]
    W = C @ (C / mass).T
    qC = C @ (f / mass)
    qC[:nc] -= 1e-12 * rng.standard_normal(nc)
    E = np.kron(np.eye(nc), np.ones((k, 1)))
    top = np.hstack([W, np.vstack([np.zeros((nc, nc)), E])])
    bottom = np.hstack([mu * np.eye(nc), -E.T, np.zeros((nc, nc))])
    return LCP(sp.csr_matrix(np.vstack([top, bottom])), np.r_[qC, np.zeros(nc)])


def test_resting_cube_with_rounding_noise_sticks_for_every_draw() -> None:
    """40 noise draws, pyramid at random angles: optimal, and the physics of rest.

    The cube must stick: normal impulses sum to ``m g h`` and the friction
    impulses have no net horizontal component (nothing pushes sideways), to
    1e-9 N s; the sliding speeds are 0 (1e-9 m/s).  Measured on these 40
    draws (and on 400 from the same generator): the previous ratio test ended
    on a secondary ray on 5 (54), the first walk of the present rules on 1
    (12), the restarts on none (none).
    """
    rng = np.random.default_rng(7)
    nc, k = 4, 4
    for _ in range(40):
        angle = rng.uniform(0.0, np.pi / 2)
        lcp = resting_cube_lcp(rng, angle)
        res = solve(lcp, "lemke")
        assert res.status == "optimal", res.message
        z = res.x
        assert np.abs(np.minimum(z, lcp.M @ z + lcp.q)).max() < 1e-9
        assert z[:nc].sum() == pytest.approx(1.0 * 9.81 * 5e-3, abs=1e-9)
        a = angle + 2 * np.pi * np.arange(k) / k
        beta = z[nc : nc * (1 + k)].reshape(nc, k).sum(axis=0)
        assert abs(beta @ np.cos(a)) < 1e-9 and abs(beta @ np.sin(a)) < 1e-9
        assert np.abs(z[nc * (1 + k) :]).max() < 1e-9


@pytest.mark.parametrize("bad", [-1e-12, 1e-2, float("nan")])
def test_lemke_rejects_bad_zero_tolerance(bad: float) -> None:
    with pytest.raises(ProblemError, match="zero_rtol"):
        solve(captured("box_slide_rest"), "lemke", zero_rtol=bad)


# --- Ill-conditioned stacks: step LCPs on which the walk once ended on a secondary ray ---

STACKS = np.load(Path(__file__).parent / "data" / "stack_lcps.npz")
#: name: (contacts, pivots of the exact rational lexicographic walk)
STACK_CASES = {
    "mass_ratio_stack_h5": (8, 49),
    "mass_ratio_stack_h10": (12, 59),
    "box_pile_68": (10, 54),
    "box_pile_100": (12, 87),
    "box_pile10_31": (8, 35),
}


def stack_lcp(name: str) -> LCP:
    return LCP(sp.csr_matrix(STACKS[f"{name}_M"]), STACKS[f"{name}_q"].copy())


def contact_velocities(lcp: LCP, z: np.ndarray, nc: int, k: int = 4) -> np.ndarray:
    """``(N v - c, D v, s)`` of a Stewart--Trinkle solution (the rows of ``w`` less ``E s``).

    Rows: ``nc`` normal, ``nc k`` pyramid, ``nc`` slack; ``w_D = D v + E s``.
    """
    w = np.asarray(lcp.M @ z + lcp.q)
    s = z[nc * (1 + k) :]
    return np.concatenate([w[:nc], w[nc : nc * (1 + k)] - np.repeat(s, k), s])


@pytest.mark.parametrize("name", list(STACK_CASES))
def test_lemke_solves_captured_stack_lcp(name: str) -> None:
    """``data/stack_lcps.npz``: Stewart--Trinkle step LCPs (k = 4, standard form) captured
    from ``mass-ratio-stack`` (ratio 100; h = 5 ms step 192, h = 10 ms step 27) and
    ``box-pile`` (n = 4, seed 0, h = 5 ms; steps 68 and 100; n = 10, step 31).

    All but the step-100 one ended on a secondary ray because ``z0`` reached 0
    (0, 2e-15, 2e-14 and 0) without leaving: the row of ``z0`` tied in the ratio test, the
    lexicographic rule chose another, and the degenerate walk went on until the
    entering column had no positive entry (the basis there has condition number
    1e3..4e4, so the ray is the walk's, not the arithmetic's).  At step 100 of
    the pile the walk pivoted on an entry of 3e-8 that is exactly 0 for that
    basis (condition number 5e3): rounding carried over from bases of
    condition number 1e12 forty pivots earlier.  The facts: ``optimal`` on the
    first walk; ``z >= 0``; ``w >= -1e-12``; ``max |z w| < 1e-12``; natural-map
    residual below the backend's declared 1e-9 (measured <= 1e-14).
    """
    lcp = stack_lcp(name)
    res = solve(lcp, "lemke", restarts=False)
    assert res.status == "optimal", res.message
    assert "restart" not in res.message
    z = res.x
    w = np.asarray(lcp.M @ z + lcp.q)
    assert z.min() >= 0.0
    assert w.min() >= -1e-12
    assert np.abs(z * w).max() < 1e-12
    assert np.abs(np.minimum(z, w)).max() < 1e-9
    assert res.max_residual < 1e-9


@pytest.mark.parametrize("name", list(STACK_CASES))
def test_stack_lcp_solution_against_exact_arithmetic(name: str) -> None:
    """The stored ``*_z_exact`` come from the same lexicographic method run in exact
    rational arithmetic on the same (dyadic) data, with integer-preserving pivots
    (``STACK_CASES`` gives its pivot count); they are solutions, so the problems
    are solvable and the old rays were numerical.

    Impulses are not unique (redundant corner contacts), velocities need not be
    either.  On four problems the contact-space velocities ``N v - c``, ``D v``
    and the sliding speeds ``s`` agree with the exact solution's to 1e-12
    (measured 5e-15), though the impulses differ by up to 0.25 N s.  On
    ``mass_ratio_stack_h10`` the two solutions differ in normal velocity by
    1.8e-5 m/s: both satisfy the LCP to 1e-14, so the LCP has two solution
    velocities there, and only the LCP conditions are checked.
    """
    nc, _ = STACK_CASES[name]
    lcp = stack_lcp(name)
    z_exact = STACKS[f"{name}_z_exact"]
    w_exact = np.asarray(lcp.M @ z_exact + lcp.q)
    assert np.abs(np.minimum(z_exact, w_exact)).max() < 1e-12  # a solution of the float data
    z = solve(lcp, "lemke").x
    if name != "mass_ratio_stack_h10":
        diff = contact_velocities(lcp, z, nc) - contact_velocities(lcp, z_exact, nc)
        assert np.abs(diff).max() < 1e-12


def test_resting_stack_lcp_carries_the_weights() -> None:
    """``mass_ratio_stack_h5`` is the stack at rest (0.1 kg under 10 kg, h = 5 ms): the
    normal impulses sum to ``(1 + ratio) m g h`` (ground) plus ``ratio m g h``
    (between the cubes) = 0.985905 N s, to 1e-9."""
    lcp = stack_lcp("mass_ratio_stack_h5")
    z = solve(lcp, "lemke").x
    assert z[:8].sum() == pytest.approx((1.0 + 2.0 * 100.0) * 0.1 * 9.81 * 5e-3, abs=1e-9)


def test_ray_reached_with_z0_at_rounding_level_returns_the_current_point() -> None:
    """``mass_ratio10_h5_337`` (``mass-ratio-stack`` ratio 10, h = 5 ms, step 337, at rest).

    The walk's ``z0`` falls to 5.3e-13 at pivot 7, just above ``zero_tol``
    (5e-13), and the walk ends on a ray six degenerate pivots later.  Since
    ``w = Mz + q + z0``, the point reached solves the LCP to ``z0``, far within
    the declared 1e-9, and is returned on the first walk.  Facts: ``optimal``
    without restart; natural-map residual below 1e-9 (measured 4.2e-11, the
    tableau's rounding); contact velocities within 1e-10 of the exact
    solution's (54 rational pivots).
    """
    lcp = stack_lcp("mass_ratio10_h5_337")
    res = solve(lcp, "lemke", restarts=False)
    assert res.status == "optimal", res.message
    z = res.x
    assert z.min() >= 0.0
    assert np.abs(np.minimum(z, lcp.M @ z + lcp.q)).max() < 1e-9
    diff = contact_velocities(lcp, z, 10) - contact_velocities(
        lcp, STACKS["mass_ratio10_h5_337_z_exact"], 10
    )
    assert np.abs(diff).max() < 1e-10


def test_heavy_stack_step_is_solved_within_tolerance_by_the_restart_ladder() -> None:
    """``mass_ratio1e4_h10_13`` (ratio 10,000: 1000 kg on 0.1 kg, h = 10 ms, step 13).

    Impulses reach 49 N s while velocities are 0.1 m/s, and ``zero_tol``
    (relative to the largest of both) clamps up to 5e-10 per pivot: the first
    walk's basis, re-solved with the original ``q``, leaves ``w`` at -1.3e-8,
    above the declared tolerance, and the ladder's restart with
    ``zero_rtol = 1e-12`` reaches 4.2e-11.  Facts: ``optimal``; natural-map
    residual below 1e-9; contact velocities within 1e-10 of the exact
    solution's (35 rational pivots).
    """
    lcp = stack_lcp("mass_ratio1e4_h10_13")
    res = solve(lcp, "lemke")
    assert res.status == "optimal", res.message
    z = res.x
    assert z.min() >= 0.0
    assert np.abs(np.minimum(z, lcp.M @ z + lcp.q)).max() < 1e-9
    diff = contact_velocities(lcp, z, 8) - contact_velocities(
        lcp, STACKS["mass_ratio1e4_h10_13_z_exact"], 8
    )
    assert np.abs(diff).max() < 1e-10
