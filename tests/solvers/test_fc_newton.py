"""Semismooth Newton on the box law (:mod:`solvers.backends.fc_newton`), ``ipm``'s finish.

Facts: the piece ``A + B W`` of the min-function is its derivative away from kinks
(central differences); the augmented sparse system in ``(δv, δr)`` solves the dense
Newton system without forming ``W``; on small random box-law problems (singular ``W``)
Newton's iteration from zero ends in a handful of steps at Lemke's solution of the
equivalent LCP (an independent pivoting method); on a stored 100-box pile step on which
``ipm``'s fixed point and its Gauss--Seidel sweeps stop short of 1e-6, the Newton finish
reaches it; on a stored step of the 100-box pile landing from a drop, the plain fallback
handing over to Newton converges where 500 iterations report the cap.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest
from fc_newton_setup import DATA, check_finish, check_piece_derivative, stored_step
from fc_newton_setup import factored as factored_on
from test_frictional import random_problem

from solvers import LCP, ProblemError, solve
from solvers.frictional import FrictionalContact, fc_residuals

pytest.importorskip("numba")

#: a random box-law problem with a factor ``W = C diag(d) C'``
factored = partial(factored_on, "box")


def piece(newton, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:  # type: ignore[no-untyped-def]
    """``Φ(r)``, the dense ``J = A + B W`` and the piece's selection arrays."""
    n, nc = newton.n, newton.nc
    u = np.empty(n)
    newton.velocity(r, u)
    phi, beta, adiag, aoff = np.empty(n), np.empty(n), np.empty(n), np.empty(2 * nc)
    newton.pieces(r, u, phi, beta, adiag, aoff)
    J = np.diag(adiag) + beta[:, None] * newton.problem.W.toarray()
    rows = np.sort(np.concatenate([3 * np.arange(nc) + 1, 3 * np.arange(nc) + 2]))
    J[rows, 3 * (rows // 3)] += aoff
    return phi, J, (beta, adiag, aoff)


@pytest.mark.parametrize("seed", [0, 1, 3])
def test_min_function_jacobian_matches_finite_differences(seed: int) -> None:
    """At a random point with pressed, free, sticking and sliding rows, central differences
    with step 1e-7 along a random direction (the same piece at both ends, checked) equal
    ``J δ`` to 1e-7 of its largest entry: ``Φ`` is affine on a piece, so only rounding
    (about 1e-9 here) separates them."""
    from solvers.backends.fc_newton import BoxNewton

    fc, C, d = factored(seed)
    newton = BoxNewton(fc, C, d)
    rng = np.random.default_rng(seed)
    r = np.zeros(fc.n)
    r[::3] = rng.uniform(0.0, 0.5, fc.nc) * np.where(rng.random(fc.nc) < 0.8, 1.0, -1.0)
    for k in (1, 2):  # tangent impulses inside and outside their bounds
        r[k::3] = fc.mu * np.abs(r[::3]) * rng.uniform(-1.5, 1.5, fc.nc)
    _, _, sel = piece(newton, r)
    beta, adiag, _ = sel
    # every kind of row occurs: active velocity rows and impulse rows, sliding entries
    assert np.any(beta[::3] > 0) and np.any(adiag[::3] > 0)
    assert np.any(beta[1::3] > 0) and np.any(sel[2] != 0)
    check_piece_derivative(partial(piece, newton), r, rng)


def test_augmented_system_solves_the_newton_system() -> None:
    """``[diag(d)^-1, -C'; B C, A + ε B diag W]`` in ``(δv, δr)`` gives the ``δr`` of
    ``(J + ε B diag W) δr = -Φ`` formed densely (to 1e-10 relative), and ``C δv = W δr``."""
    import scipy.sparse.linalg as spla

    from solvers.backends.fc_newton import BoxNewton

    fc, C, d = factored(4)
    newton = BoxNewton(fc, C, d)
    r = np.random.default_rng(4).normal(scale=0.3, size=fc.n)
    r[::3] = np.abs(r[::3])
    phi, J, (beta, adiag, aoff) = piece(newton, r)
    eps = 1e-3
    K = newton.matrix(beta, adiag, aoff, eps)
    sol = spla.splu(K).solve(np.concatenate([np.zeros(newton.nv), -phi]))
    dense = np.linalg.solve(J + np.diag(eps * beta * fc.W.diagonal()), -phi)
    np.testing.assert_allclose(sol[newton.nv :], dense, atol=1e-10 * np.abs(dense).max())
    np.testing.assert_allclose(C @ sol[: newton.nv], fc.W @ dense, atol=1e-10)


def box_law_lcp(fc: FrictionalContact) -> tuple[np.ndarray, np.ndarray]:
    """The box law as a standard LCP in ``(r_n, β+, β-, λ)``, ``r_t = β+ - β-``.

    ``0 <= r_n ⟂ u_n >= 0``, ``0 <= β± ⟂ λ ± u_t >= 0``, ``0 <= λ ⟂ mu r_n - β+ - β- >= 0``
    per axis (Stewart and Trinkle's friction LCP with the two directions of each axis).
    """
    nc, W, q = fc.nc, fc.W.toarray(), fc.q
    nrm = 3 * np.arange(nc)
    tan = np.sort(np.concatenate([nrm + 1, nrm + 2]))
    m = 2 * nc
    I, Z = np.eye(m), np.zeros
    Mu = np.zeros((m, nc))
    Mu[np.arange(m), np.arange(m) // 2] = fc.mu[np.arange(m) // 2]
    Wnn, Wnt = W[np.ix_(nrm, nrm)], W[np.ix_(nrm, tan)]
    Wtn, Wtt = W[np.ix_(tan, nrm)], W[np.ix_(tan, tan)]
    M = np.block(
        [
            [Wnn, Wnt, -Wnt, Z((nc, m))],
            [Wtn, Wtt, -Wtt, I],
            [-Wtn, -Wtt, Wtt, I],
            [Mu, -I, -I, Z((m, m))],
        ]
    )
    return M, np.concatenate([q[nrm], q[tan], -q[tan], np.zeros(m)])


@pytest.mark.parametrize("seed", [0, 3, 5, 6])
def test_newton_agrees_with_lemke_on_random_box_law_problems(seed: int) -> None:
    """From ``r = 0`` to natural map 1e-10 in at most 10 steps (measured 5-8: the
    min-function is piecewise affine, Newton's iteration ends once its piece is found),
    velocities within 1e-8 m/s of Lemke's on the LCP (natural map of Lemke's impulses
    below 1e-12).  ``W`` is singular on these problems (rank 33-35 of 36)."""
    from solvers.backends.fc_newton import BoxNewton

    fc, C, d = factored(seed)
    assert np.linalg.matrix_rank(fc.W.toarray()) < fc.n
    M, q = box_law_lcp(fc)
    lem = solve(LCP(M, q), "lemke")
    assert lem.status == "optimal", lem.message
    nc, m = fc.nc, 2 * fc.nc
    r_ref = np.zeros(fc.n)
    r_ref[0::3] = lem.x[:nc]
    rt = lem.x[nc : nc + m] - lem.x[nc + m : nc + 2 * m]
    r_ref[1::3], r_ref[2::3] = rt[0::2], rt[1::2]
    assert fc_residuals(fc, r_ref)["natural_map"] <= 1e-12
    r, its, res, reason = BoxNewton(fc, C, d).solve(np.zeros(fc.n), 1e-10, 50)
    assert reason == "converged" and res <= 1e-10 and its <= 10, (its, res, reason)
    assert fc_residuals(fc, r)["natural_map"] <= 1e-10
    np.testing.assert_allclose(fc.velocity(r), fc.velocity(r_ref), atol=1e-8)


def stored_capped_step() -> FrictionalContact:
    """A 100-box box-law step (493 contacts) of the landed pile's transient."""
    return stored_step("pile100_box_capped", "box")


def test_newton_finish_reaches_the_tolerance_on_a_pile_step() -> None:
    """``ipm`` with its Newton finish (default cap 300) returns ``optimal`` at 1e-6, judged by
    the layer's own natural map of the returned impulses (without the finish, 500
    iterations and 200 sweeps left 8.2e-6, measured); a short budget's status is the truth
    about its iterate (:func:`fc_newton_setup.check_finish`)."""
    check_finish(stored_capped_step())


def test_newton_setting_is_checked() -> None:
    fc = random_problem("coulomb", "box", seed=3)
    with pytest.raises(ProblemError, match="newton"):
        solve(fc, "ipm", newton=-1)


def test_default_budget_converges_on_a_hard_drop_step() -> None:
    """A box-law step of the 100-box pile landing from a drop (399 contacts, step 174 of the
    benchmark's long transient, from its warm start): on 500 interior-point iterations the
    status is the truth about the iterate (``optimal`` exactly when the layer's own natural
    map is within 1e-6, else ``max_iterations``; measured: capped, the accelerated fixed
    point and Newton's finish stop short); on the default budget (the plain fallback,
    Newton again, the sweeps) ``optimal``, judged by the layer's own natural map (1,029
    iterations reported, 555 of them the interior point's, measured)."""
    z = np.load(DATA / "drop100_box_capped.npz")
    fc = stored_step("drop100_box_capped", "box")
    short = solve(fc, "ipm", tol=1e-6, warm_start=z["warm"], max_iter=500)
    met = fc_residuals(fc, short.x)["natural_map"] <= 1e-6
    assert short.status == ("optimal" if met else "max_iterations"), short.message
    done = solve(fc, "ipm", tol=1e-6, warm_start=z["warm"])
    assert done.status == "optimal", done.message
    assert fc_residuals(fc, done.x)["natural_map"] <= 1e-6


def test_larger_rho_finds_the_piece_on_a_drop_step() -> None:
    """A box-law step of the 100-box pile landing from a drop (337 contacts, step 90 of the
    benchmark's long transient), stored with its warm start and the iterate at which the
    plain fallback, Newton and the sweeps stopped before the ``ρ`` ladder (natural map
    1.55e-6 after 10,250 iterations, tolerance 1e-6).  There, at ``ρ = 1/diag W`` and ten
    times it, no step length decreases Newton's merit: the piece selected by ``r - ρ u``
    keeps eight contacts on the wrong side of a kink (two corners pressed that the solution
    releases), where the least-squares solution of the piece leaves most of ``||Φ||``.  At a
    thousand times it Newton converges (natural map, by the layer's own measure, at most
    1e-6); and ``ipm`` from the warm start, climbing that ladder, converges (without the
    plain fallback: 146 iterations reported, 75 of them the interior point's, measured)."""
    from solvers.backends.fc_newton import BoxNewton

    z = np.load(DATA / "drop100_box_step90.npz")
    fc = stored_step("drop100_box_step90", "box")
    C, d = fc.factor
    stalled = z["stalled"]
    assert fc_residuals(fc, stalled)["natural_map"] > 1.5e-6
    newton = BoxNewton(fc, C, d)
    for scale, expect in ((1.0, "no descent"), (10.0, "no descent"), (1000.0, "converged")):
        newton.scale_rho(scale)
        r, _, res, why = newton.solve(stalled, 1e-6, 300)
        assert why == expect, (scale, why, res)
    assert fc_residuals(fc, r)["natural_map"] <= 1e-6
    done = solve(fc, "ipm", tol=1e-6, warm_start=z["warm"])
    assert done.status == "optimal", done.message
    assert fc_residuals(fc, done.x)["natural_map"] <= 1e-6
