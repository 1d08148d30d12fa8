"""The compiled Lemke method (:mod:`solvers.numerics.lemke_kernel`).

The ``lemke`` backend runs this walk; its result is checked here against independent
references (the LCP's own conditions, brute-force enumeration of complementary bases,
the physics of a resting cube), and the backend is checked to report the walk's outcome.

Facts:

* on the three captured degenerate contact LCPs of ``test_lemke_regressions.py`` (each
  once ended on a secondary ray) it finds a solution: ``z >= 0``, ``w = Mz + q >=
  -1e-12``, natural-map residual below the backend's declared accuracy 1e-9, the
  resting cube's normal impulses summing to its weight times the step; the backend
  returns that ``z`` with status ``optimal`` and the walk's message;
* on LCPs with a P-matrix (a unique solution) it gives the solution found by
  enumerating every complementary basis (n <= 12), to 1e-10, and for larger n a point
  meeting the LCP's conditions to 1e-10 (the unique solution);
* an infeasible LCP ends on a secondary ray; the pivot cap stops the walk with
  ``max_iterations``; ``q >= 0`` gives ``z = 0`` without a pivot; the backend reports
  each of these statuses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from test_lemke import enumerate_lcp

from solvers import LCP, solve
from solvers.numerics import lemke_kernel as LK

pytest.importorskip("numba")

DATA = np.load(Path(__file__).parent / "data" / "contact_lcps.npz")
CASES = ["box_slide_rest", "box_pile", "mass_ratio_stack"]
STATUS = {LK.OPTIMAL: "optimal", LK.MAX_ITERATIONS: "max_iterations", LK.RAY: "ray_termination"}


def _kernel(M: np.ndarray, q: np.ndarray, **kw: Any) -> tuple[np.ndarray, np.ndarray]:
    return LK.solve_dense(M, q, **kw)


@pytest.mark.parametrize("name", CASES)
def test_solves_the_captured_degenerate_contact_lcps(name: str) -> None:
    M, q = DATA[f"{name}_M"], DATA[f"{name}_q"]
    z, info = _kernel(M, q)
    assert info[LK.I_STATUS] == LK.OPTIMAL, LK.message(info)
    w = M @ z + q
    assert z.min() >= 0.0
    assert w.min() >= -1e-12
    assert np.abs(np.minimum(z, w)).max() < 1e-9
    assert LK.natural_residual(M, q, z) == pytest.approx(np.abs(np.minimum(z, w)).max(), abs=1e-15)
    ref = solve(LCP(sp.csr_matrix(M), q.copy()), "lemke")
    assert ref.status == "optimal"
    assert np.abs(z - ref.x).max() <= 1e-9 * max(1.0, np.abs(q).max())
    # the backend reports the walk's ending (z0 leaving, reaching 0 or a ray within the tolerance)
    assert LK.message(info).split(" after")[0] == ref.message.split(" after")[0]


def test_resting_cube_normal_impulses_carry_its_weight() -> None:
    M, q = DATA["box_slide_rest_M"], DATA["box_slide_rest_q"]
    z, info = _kernel(M, q)
    nc, k = 4, 4
    assert z[:nc].sum() == pytest.approx(1.0 * 9.81 * 5e-3, abs=1e-9)
    assert np.abs(z[nc * (1 + k) :]).max() < 1e-9  # sliding speed 0: the cube sticks


@pytest.mark.parametrize("name", CASES)
def test_first_walk_alone_solves_the_captured_lcps(name: str) -> None:
    M, q = DATA[f"{name}_M"], DATA[f"{name}_q"]
    z, info = _kernel(M, q, restarts=False)
    assert info[LK.I_STATUS] == LK.OPTIMAL and info[LK.I_RESTART] == 0
    assert LK.natural_residual(M, q, z) < 1e-9


@pytest.mark.parametrize("seed", range(6))
def test_p_matrix_lcps_have_their_unique_solution(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 5 + 7 * seed
    A = rng.standard_normal((n, n))
    S = rng.standard_normal((n, n))
    M = A @ A.T / n + 0.1 * np.eye(n) + 0.5 * (S - S.T)  # positive definite: a P-matrix
    q = rng.standard_normal(n)
    z, info = _kernel(M, q)
    assert info[LK.I_STATUS] == LK.OPTIMAL
    w = M @ z + q
    assert z.min() >= 0.0 and w.min() >= -1e-10 and np.abs(z * w).max() < 1e-10
    if n <= 12:
        (ref,) = enumerate_lcp(M, q)  # a P-matrix: exactly one complementary solution
        assert np.abs(z - ref).max() < 1e-10


def test_infeasible_lcp_ends_on_a_ray_as_the_backend() -> None:
    # w_0 = -z_0 + z_1 - 1, w_1 = -z_0 - 1 < 0 for every z >= 0: no solution
    M = np.array([[-1.0, 1.0], [-1.0, 0.0]])
    q = np.array([-1.0, -1.0])
    z, info = _kernel(M, q)
    assert STATUS[int(info[LK.I_STATUS])] == "ray_termination"
    assert np.all(np.isnan(z))
    assert "secondary ray" in LK.message(info)
    assert info[LK.I_RESTART] == 3  # every restart tried
    ref = solve(LCP(sp.csr_matrix(M), q), "lemke")
    assert ref.status == "ray_termination"


def test_pivot_cap_and_trivial_lcp() -> None:
    M, q = DATA["box_pile_M"], DATA["box_pile_q"]
    z, info = _kernel(M, q, max_iter=3)
    assert STATUS[int(info[LK.I_STATUS])] == "max_iterations"
    assert info[LK.I_PIVOTS] == 3
    ref = solve(LCP(sp.csr_matrix(M), q.copy()), "lemke", max_iter=3)
    assert ref.status == "max_iterations"
    assert np.abs(z - ref.x).max() <= 1e-9 * max(1.0, np.abs(q).max())
    z, info = _kernel(M, np.abs(q))
    assert info[LK.I_STATUS] == LK.OPTIMAL and info[LK.I_PIVOTS] == 0 and not z.any()
