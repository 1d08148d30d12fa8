"""The subspace finish of the compiled pile step (projected Gauss--Seidel with subspace
minimization, :func:`contactlab.maximal._pile_kernels._pgs_sm`).

Facts:

* along a 50-cube drop (fall, landing, start of rest) every step it takes is
  converged at the default tolerance, and its impulses solve the general path's
  box-friction LCP (``W``, ``q`` built by ``BoxFriction``'s own rows and
  ``M^-1``): ``z_n >= 0``, ``|z_t| <= mu z_n``, and the natural map of the LCP at
  ``z`` within the tolerance; from the same states plain Gauss--Seidel stops at its
  sweep cap on some of those steps (they are the landing steps the finish is for);
* on landing steps of a 12-cube drop it agrees with Lemke's method on the same
  ``W``, ``q`` (box friction written as a standard LCP, solved by complementary
  pivoting to rounding): solved to 1e-10, the contact velocities ``w = W z + q``
  and the body twists agree to 1e-8 and 1e-7, so the difference is the
  tolerance's, not another solution's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from contactlab.models.box_rows import box_rows
from contactlab.models.common import MassInverse
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers import LCP, solve

#: tolerance of the comparison with Lemke's solution (both solved to 1e-10 and 1e-12:
#: the difference of the contact velocities is at most a small multiple of that
#: residual where the LCP's w is unique; measured 4e-11 to 1.5e-10)
TIGHT = 1e-10
W_AGREE = 1e-8
#: the same for the bodies' twists (M^-1 C^T maps dw up by the inverse masses)
V_AGREE = 1e-7


def _lcp(problem: Any) -> tuple[np.ndarray, np.ndarray, Any, MassInverse]:
    """``W``, ``q`` (rows [N; T], T per contact) of the general path's box-friction LCP."""
    rows = box_rows(problem)
    minv = MassInverse(problem.M)
    W = minv.delassus(rows.C).toarray()
    q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
    return W, q, rows, minv


def _natural(W: np.ndarray, q: np.ndarray, mu: np.ndarray, z: np.ndarray) -> float:
    """``max |z - Pi(z - w)|`` of the box-friction LCP (bounds ``+-mu z_n`` on T rows)."""
    nc = mu.shape[0]
    w = W @ z + q
    zn, zt = z[:nc], z[nc:]
    bound = np.repeat(mu * np.maximum(zn, 0.0), 2)
    return float(
        max(
            np.abs(zn - np.maximum(zn - w[:nc], 0.0)).max(),
            np.abs(zt - np.clip(zt - w[nc:], -bound, bound)).max(),
        )
    )


def _standard_form(W: np.ndarray, q: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Box friction as a standard LCP ``0 <= x _|_ M x + Q >= 0`` in ``x = (z_n, b+, b-,
    lam)``: ``z_t = b+ - b-`` per tangent row, ``0 <= b+ _|_ w_t + lam``,
    ``0 <= b- _|_ -w_t + lam``, ``0 <= lam _|_ mu z_n - b+ - b-``.  A solution gives
    ``|z_t| <= mu z_n`` with ``w_t = 0`` inside, ``w_t <= 0`` at ``+mu z_n`` and
    ``w_t >= 0`` at ``-mu z_n``: the box-friction conditions."""
    nc = mu.shape[0]
    n2 = 2 * nc
    N, T = slice(0, nc), slice(nc, 3 * nc)
    a, b, c, d = 0, nc, 3 * nc, 5 * nc
    M = np.zeros((7 * nc, 7 * nc))
    Q = np.zeros(7 * nc)
    M[a:b, a:b], M[a:b, b:c], M[a:b, c:d] = W[N, N], W[N, T], -W[N, T]
    M[b:c, a:b], M[b:c, b:c], M[b:c, c:d] = W[T, N], W[T, T], -W[T, T]
    M[c:d, a:b], M[c:d, b:c], M[c:d, c:d] = -W[T, N], -W[T, T], W[T, T]
    M[b:c, d:] = M[c:d, d:] = np.eye(n2)
    M[d:, a:b] = np.repeat(np.diag(mu), 2, axis=0)
    M[d:, b:c] = M[d:, c:d] = -np.eye(n2)
    Q[a:b], Q[b:c], Q[c:d] = q[N], q[T], -q[T]
    return M, Q


def test_every_landing_step_converges_and_solves_the_lcp() -> None:
    """A 50-cube drop (60 steps): every step with contacts is ``optimal``; its impulses are
    feasible and the natural map of the general path's LCP at them is within the
    tolerance; plain Gauss--Seidel from the same states caps on some of these steps."""
    scene = get_scenario("box-pile").build(n=50, seed=0)
    sim = Simulator(scene, "maximal", "box-friction", "pgs")
    plain = Simulator(scene, "maximal", "box-friction", "pgs")
    assert sim.compiled is not None and plain.compiled is not None
    assert sim.compiled.finish
    plain.compiled.finish = False
    # the whole step's contacts as one problem (on this run the islands' solves cap one
    # landing step: tests/contactlab/test_pile_islands.py)
    sim.compiled.islands = plain.compiled.islands = False
    model: Any = sim.model
    tol = model.tol
    state = sim.initial_state()
    checked = capped = 0
    for i in range(60):
        before = state
        state, record = sim.step(state, i)
        nc = record.metrics["n_contacts"]
        if nc == 0:
            continue
        assert record.metrics["status"] == "optimal"
        assert record.metrics["solver_residual"] <= tol
        problem, solution = record.problem, record.solution
        W, q, rows, minv = _lcp(problem)
        assert record.contacts is not None
        mu = np.asarray(record.contacts.mu, dtype=float)
        z = np.concatenate([solution.lambda_N, solution.lambda_T])
        assert solution.lambda_N.min() >= 0.0
        bound = np.repeat(mu * solution.lambda_N, 2)
        assert np.all(np.abs(solution.lambda_T) <= bound * (1.0 + 1e-15))
        # the kernel's residual and this one sum W z in different orders
        assert _natural(W, q, mu, z) <= tol + 1e-12 * np.abs(W).max() * np.abs(z).sum()
        v = minv.vec(problem.f + rows.C.T @ z)
        assert np.abs(v - solution.v).max() <= 1e-12 * max(np.abs(v).max(), 1.0)
        _, rp = plain.step(before, i)
        capped += rp.metrics["status"] != "optimal"
        checked += 1
    assert checked >= 30
    assert capped >= 1  # the landing: plain Gauss--Seidel does not reach 1e-6 there


def test_landing_steps_agree_with_lemke() -> None:
    """Landing steps of a 12-cube drop (14 to 27 contacts): the subspace finish solved to
    1e-10 and Lemke's method on the same W, q give the same w and twists."""
    scene = get_scenario("box-pile").build(n=12, seed=0)
    sim = Simulator(scene, "maximal", "box-friction", "pgs")
    tight = Simulator(scene, "maximal", "box-friction", "pgs", model_options={"solver_tol": TIGHT})
    assert tight.compiled is not None
    state = sim.initial_state()
    compared = 0
    for i in range(49):
        before = state
        state, record = sim.step(state, i)
        if i not in (40, 41, 48):
            continue
        nc = record.metrics["n_contacts"]
        _, rt = tight.step(before, i)
        assert rt.metrics["status"] == "optimal"
        W, q, rows, minv = _lcp(rt.problem)
        assert rt.contacts is not None
        mu = np.asarray(rt.contacts.mu, dtype=float)
        M, Q = _standard_form(W, q, mu)
        res = solve(LCP(M, Q), "lemke")
        assert res.status == "optimal"
        x = res.x
        z_lemke = np.concatenate([x[:nc], x[nc : 3 * nc] - x[3 * nc : 5 * nc]])
        assert _natural(W, q, mu, z_lemke) <= 1e-9  # Lemke's solution, to rounding
        z = np.concatenate([rt.solution.lambda_N, rt.solution.lambda_T])
        assert _natural(W, q, mu, z) <= TIGHT + 1e-12 * np.abs(W).max() * np.abs(z).sum()
        assert np.abs((W @ z + q) - (W @ z_lemke + q)).max() <= W_AGREE
        v_lemke = minv.vec(rt.problem.f + rows.C.T @ z_lemke)
        assert np.abs(rt.solution.v - v_lemke).max() <= V_AGREE
        compared += 1
    assert compared == 3
