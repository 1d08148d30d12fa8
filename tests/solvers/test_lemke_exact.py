"""An exact-arithmetic Lemke: the reference the float backend is checked against.

:func:`exact_lemke` runs the same method as ``solvers/backends/lemke.py``
(covering vector 1, lexicographic minimum-ratio rule with ties broken by the
rows of ``B^-1``) on the exact values of the float data.  Every double is a
dyadic rational, so scaling ``M`` and ``q`` by the largest denominator
``2^e`` gives integers; the tableau ``[I, -2^e M, -1 | 2^e q]`` (variables
``2^e w``, ``z``, ``2^e z0``: the same ratio tests) is pivoted with
integer-preserving (Bareiss) updates ``T_i <- (p T_i - T_ie T_r) / p_prev``,
whose divisions are exact, so no rounding enters anywhere.

The stored solutions ``*_z_exact`` of ``data/stack_lcps.npz`` were computed
with this function (49, 59, 54, 87 and 35 pivots; 1 to 17 s each).  The tests
re-derive one of them and check the function on a problem solved by hand.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

STACKS = np.load(Path(__file__).parent / "data" / "stack_lcps.npz")


def _lexmin(T: np.ndarray, col: np.ndarray, rows: list[int], rhs: int, n: int) -> int:
    """Row of ``rows`` minimising ``[b_i, B^-1_i] / col_i`` lexicographically (exactly)."""
    cand = rows
    for key in [rhs, *range(n)]:
        ratio = [Fraction(int(T[i, key]), int(col[i])) for i in cand]
        best = min(ratio)
        cand = [i for i, r in zip(cand, ratio) if r == best]
        if len(cand) == 1:
            break
    return cand[0]


def exact_lemke(
    M: np.ndarray, q: np.ndarray, max_iter: int = 5000
) -> tuple[str, list[Fraction] | None, int]:
    """Lexicographic Lemke in exact rational arithmetic: ``(status, z, pivots)``.

    ``status`` is ``"optimal"`` (``z`` exact) or ``"ray"`` (``z`` is ``None``).
    """
    n = q.size
    exact = [Fraction(float(v)) for v in np.concatenate([M.ravel(), q])]
    den = max(f.denominator for f in exact)  # a power of two: every denominator divides it
    ints = [f.numerator * (den // f.denominator) for f in exact]
    T = np.zeros((n, 2 * n + 2), dtype=object)
    T[:, :] = 0
    T[np.arange(n), np.arange(n)] = 1
    T[:, n : 2 * n] = -np.array(ints[: n * n], dtype=object).reshape(n, n)
    T[:, 2 * n] = -1
    T[:, 2 * n + 1] = np.array(ints[n * n :], dtype=object)
    rhs, prev = 2 * n + 1, 1  # values are T / prev
    if all(v >= 0 for v in ints[n * n :]):
        return "optimal", [Fraction(0)] * n, 0
    basis = list(range(n))
    entering = 2 * n
    r = _lexmin(T, -T[:, 2 * n], list(range(n)), rhs, n)
    for it in range(1, max_iter + 1):
        p = T[r, entering]
        factor = T[:, entering].copy()
        factor[r] = 0
        new = (p * T - np.outer(factor, T[r])) // prev
        new[r] = T[r]
        T, prev = new, p
        leaving, basis[r] = basis[r], entering
        if leaving == 2 * n:
            x = [Fraction(0)] * (2 * n + 1)
            for i, j in enumerate(basis):
                x[j] = Fraction(int(T[i, rhs]), int(prev))
            return "optimal", x[n : 2 * n], it
        entering = leaving + n if leaving < n else leaving - n
        col = T[:, entering]
        rows = [i for i in range(n) if col[i] * prev > 0]  # positive entries of B^-1 A_e
        if not rows:
            return "ray", None, it
        # the ratios b_i / col_i do not depend on the common denominator prev
        r = _lexmin(T, col, rows, rhs, n)
    raise RuntimeError("exact_lemke: pivot cap reached")


def test_exact_lemke_on_a_problem_solved_by_hand() -> None:
    """``M = [[2, 1], [1, 2]]``, ``q = (-5, -6)``: both ``w = 0``, ``z = (4/3, 7/3)``."""
    status, z, _ = exact_lemke(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-5.0, -6.0]))
    assert status == "optimal" and z == [Fraction(4, 3), Fraction(7, 3)]


def test_exact_lemke_reports_an_infeasible_problem_as_a_ray() -> None:
    """``w = -z - 1`` is never ``>= 0`` for ``z >= 0``: no solution, the walk ends on a ray."""
    status, z, _ = exact_lemke(np.array([[-1.0]]), np.array([-1.0]))
    assert status == "ray" and z is None


def test_exact_lemke_reproduces_the_stored_reference() -> None:
    """``box_pile10_31``: 35 exact pivots; the rational solution satisfies the LCP exactly
    and rounds to the stored ``z_exact`` bit for bit."""
    M, q = STACKS["box_pile10_31_M"], STACKS["box_pile10_31_q"]
    status, z, pivots = exact_lemke(M, q)
    assert status == "optimal" and pivots == 35
    Mf = [[Fraction(float(v)) for v in row] for row in M]
    w = [sum((a * b for a, b in zip(row, z)), Fraction(float(qi))) for row, qi in zip(Mf, q)]
    assert min(z) >= 0 and min(w) >= 0
    assert all(zi * wi == 0 for zi, wi in zip(z, w))
    np.testing.assert_array_equal(np.array([float(v) for v in z]), STACKS["box_pile10_31_z_exact"])
