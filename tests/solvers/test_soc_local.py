"""Newton's one-contact solver on the exact friction cone (:mod:`solvers.numerics.soc_local`).

Facts, on random 3x3 SPD blocks ``A``, friction coefficients and velocities ``b`` covering
separation (the apex), sticking (the interior) and sliding (the cone's boundary):

* its impulse is the minimiser of ``1/2 r'A r + b'r`` over ``K = {||r_t|| <= mu r_n}``:
  the optimality conditions ``r ∈ K``, ``u = A r + b ∈ K*``, ``r . u = 0`` hold to 1e-10
  (relative to the sizes of ``r``, ``u`` and ``b``), which by strict convexity make it the
  unique solution;
* it is :func:`solvers.numerics.fc_local.ccp_local`'s impulse (64-angle scan and
  bisection) to 1e-10 wherever that one meets the same conditions; on the one draw of
  20,000 (measured) where it does not, the scan missed a narrow arc of the boundary and
  returned the apex: there Newton's impulse has the lower objective and meets the
  conditions (a case kept below as data);
* the starting angle does not change the answer (to 1e-10).
"""

from __future__ import annotations

import numpy as np
import pytest

from solvers.numerics.fc_local import ccp_local
from solvers.numerics.soc_local import soc_ccp_local

pytest.importorskip("numba")

#: agreement and optimality tolerance, relative (the two solvers end at rounding level)
TOL = 1e-10
DIRS = np.zeros((0, 2))


def _cases(n: int, seed: int) -> list[tuple[np.ndarray, float, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        q = rng.normal(size=(3, 3))
        a = q @ q.T + 0.05 * np.eye(3)
        out.append((a, float(rng.uniform(0.05, 2.0)), rng.normal(size=3)))
    return out


def _kkt(a: np.ndarray, mu: float, b: np.ndarray, r: np.ndarray) -> float:
    """The largest violation of ``r ∈ K``, ``u ∈ K*``, ``r . u = 0``, relative."""
    u = a @ r + b
    scale = max(1.0, float(np.abs(b).max()), float(np.abs(r).max()))
    cone = max(float(np.hypot(r[1], r[2]) - mu * r[0]), -float(r[0]), 0.0)
    dual = max(float(mu * np.hypot(u[1], u[2]) - u[0]), 0.0)
    comp = abs(float(r @ u))
    return max(cone, dual, comp / scale) / scale


def _newton(a: np.ndarray, mu: float, b: np.ndarray, guess: np.ndarray) -> np.ndarray:
    r = np.zeros(3)
    soc_ccp_local(mu, a, b, r, guess)
    return r


def _scan(a: np.ndarray, mu: float, b: np.ndarray) -> np.ndarray:
    r = np.zeros(3)
    ccp_local(0, mu, DIRS, a, b, r)
    return r


def test_newton_is_the_minimiser_and_the_scans_answer() -> None:
    kinds = {"apex": 0, "interior": 0, "boundary": 0}
    worst = 0.0
    for a, mu, b in _cases(4000, 1):
        r = _newton(a, mu, b, np.zeros(3))
        assert _kkt(a, mu, b, r) <= TOL
        if not r.any():
            kinds["apex"] += 1
        elif np.hypot(r[1], r[2]) < mu * r[0] * (1 - 1e-9):
            kinds["interior"] += 1
        else:
            kinds["boundary"] += 1
        ref = _scan(a, mu, b)
        if _kkt(a, mu, b, ref) <= TOL:
            worst = max(worst, float(np.abs(r - ref).max()) / max(1.0, float(np.abs(ref).max())))
    assert worst <= TOL
    # every regime is exercised
    assert min(kinds.values()) >= 300, kinds


def test_start_angle_does_not_change_the_answer() -> None:
    rng = np.random.default_rng(2)
    for a, mu, b in _cases(1000, 3):
        r0 = _newton(a, mu, b, np.zeros(3))
        r1 = _newton(a, mu, b, rng.normal(size=3))
        assert np.abs(r1 - r0).max() <= TOL * max(1.0, float(np.abs(r0).max()))


def test_narrow_arc_missed_by_the_scan() -> None:
    a = np.array(
        [
            [1.6642202782208877, 0.3149875701444863, 3.1212156701050873],
            [0.3149875701444863, 0.3207351879208019, 0.5925346906959333],
            [3.1212156701050873, 0.5925346906959333, 6.095588818550084],
        ]
    )
    b = np.array([1.8259225561436245, -1.4952231421678306, 0.7531729887731696])
    mu = 1.0908152504048132
    ref = _scan(a, mu, b)
    r = _newton(a, mu, b, np.zeros(3))
    assert _kkt(a, mu, b, r) <= TOL
    # the scan's apex is not optimal there: u = b is outside the dual cone
    assert _kkt(a, mu, b, ref) > 1e-5

    def f(x: np.ndarray) -> float:
        return float(0.5 * x @ a @ x + b @ x)

    assert f(r) < f(ref)


def test_frictionless_contact() -> None:
    a = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
    for bn, expect in ((-1.0, 0.5), (1.0, 0.0)):
        r = _newton(a, 0.0, np.array([bn, 0.4, -0.2]), np.zeros(3))
        assert r == pytest.approx([expect, 0.0, 0.0], abs=1e-15)
