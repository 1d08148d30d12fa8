"""Piecewise-cubic Hill-muscle curves (Sueda's notes §1.9.4, eqs. 1.40–1.46).

Each curve is a chain of cubics ``f_i(x) = a_i x^3 + b_i x^2 + c_i x + d_i``
(global power basis, as in the seed) fixed by point, slope and curvature
conditions plus value and slope continuity at interior breakpoints.  The
coefficients are solved here from the seed's conditions (the printed
coefficients of eqs. 1.42 and 1.44 are checked against them in the tests;
those of the force–velocity curve are missing from the transcription).
Beyond the first and last breakpoints a curve continues linearly with its
end slope, so every curve is C1 everywhere.

Corrections to the transcription: the right passive cubic must pass through
(1.7, 1.0) — the text says 1.8, but 1.7 is the end of its interval and the
printed coefficients give f(1.7) = 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

Array = NDArray[np.float64]

# (segment, derivative order, x, value)
Condition = tuple[int, int, float, float]


def _row(order: int, x: float) -> Array:
    return np.array(
        [[x**3, x**2, x, 1.0], [3 * x**2, 2 * x, 1.0, 0.0], [6 * x, 2.0, 0.0, 0.0]][order]
    )


@dataclass(frozen=True)
class PiecewiseCubic:
    """C1 chain of cubics on ``breaks`` (s+1,) with ``coeffs`` (s, 4) = ``(a, b, c, d)``."""

    breaks: Array
    coeffs: Array

    @classmethod
    def solve(cls, breaks: Sequence[float], conditions: Sequence[Condition]) -> PiecewiseCubic:
        """Solve for the coefficients from ``4s - 2(s-1)`` conditions plus C1 continuity."""
        b = np.asarray(breaks, float)
        s = len(b) - 1
        rows, rhs = [], []
        for seg, order, x, value in conditions:
            row = np.zeros(4 * s)
            row[4 * seg : 4 * seg + 4] = _row(order, x)
            rows.append(row)
            rhs.append(value)
        for k in range(1, s):  # f_{k-1} - f_k = 0 and f'_{k-1} - f'_k = 0 at b_k
            for order in (0, 1):
                row = np.zeros(4 * s)
                row[4 * (k - 1) : 4 * k] = _row(order, b[k])
                row[4 * k : 4 * k + 4] = -_row(order, b[k])
                rows.append(row)
                rhs.append(0.0)
        A = np.array(rows)
        if A.shape != (4 * s, 4 * s):
            raise ValueError(f"{len(conditions)} conditions for {s} cubics; need {2 * s + 2}")
        return cls(b, np.linalg.solve(A, np.array(rhs)).reshape(s, 4))

    def _segment(self, x: Array) -> NDArray[np.intp]:
        return np.clip(np.searchsorted(self.breaks, x, side="right") - 1, 0, len(self.coeffs) - 1)

    def _end_values(self) -> tuple[float, float, float, float]:
        x0, x1 = self.breaks[0], self.breaks[-1]
        a0, a1 = self.coeffs[0], self.coeffs[-1]
        return (
            float(_row(0, x0) @ a0),
            float(_row(1, x0) @ a0),
            float(_row(0, x1) @ a1),
            float(_row(1, x1) @ a1),
        )

    def value(self, x: ArrayLike) -> Array:
        """``f(x)``."""
        return self.evaluate(x)[0]

    def evaluate(self, x: ArrayLike) -> tuple[Array, Array]:
        """``(f(x), f'(x))``, linear continuation outside the breakpoints."""
        x = np.asarray(x, float)
        a, b, c, d = np.moveaxis(self.coeffs[self._segment(x)], -1, 0)
        f = ((a * x + b) * x + c) * x + d
        df = (3 * a * x + 2 * b) * x + c
        f0, s0, f1, s1 = self._end_values()
        x0, x1 = self.breaks[0], self.breaks[-1]
        left, right = x < x0, x > x1
        f = np.where(left, f0 + s0 * (x - x0), np.where(right, f1 + s1 * (x - x1), f))
        df = np.where(left, s0, np.where(right, s1, df))
        return f, df

    def integral(self, x: ArrayLike) -> Array:
        """``int_{x0}^{x} f`` with ``x0`` the first breakpoint (negative to its left)."""
        x = np.asarray(x, float)
        br, C = self.breaks, self.coeffs

        def anti(seg: NDArray[np.intp], t: Array) -> Array:
            a, b, c, d = np.moveaxis(C[seg], -1, 0)
            return (((a / 4 * t + b / 3) * t + c / 2) * t + d) * t

        segs = np.arange(len(C))
        pieces = anti(segs, br[1:]) - anti(segs, br[:-1])
        cumulative = np.concatenate([[0.0], np.cumsum(pieces)])
        k = self._segment(x)
        xc = np.clip(x, br[0], br[-1])
        inside = cumulative[k] + anti(k, xc) - anti(k, br[k])
        f0, s0, f1, s1 = self._end_values()
        dl = np.minimum(x - br[0], 0.0)
        dr = np.maximum(x - br[-1], 0.0)
        return inside + f0 * dl + 0.5 * s0 * dl**2 + f1 * dr + 0.5 * s1 * dr**2


# Sueda's notes, eq. (1.41): passive force–length f_P(l~), zero below l~ = 1.
PASSIVE_FORCE_LENGTH = PiecewiseCubic.solve(
    [1.0, 1.3, 1.7],
    [
        (0, 0, 1.0, 0.0),
        (0, 0, 1.3, 0.126110265892917),
        (1, 0, 1.7, 1.0),
        (0, 1, 1.0, 0.0),
        (0, 1, 1.3, 1.07051016402631),
        (1, 1, 1.7, 2.85714285714286),
    ],
)

# Sueda's notes, eq. (1.43): active force–length f_L(l~), peak 1 at l~ = 1.
ACTIVE_FORCE_LENGTH = PiecewiseCubic.solve(
    [0.4, 0.7, 1.2, 1.81],
    [
        (0, 0, 0.4, 0.0),
        (0, 1, 0.4, 0.0),
        (1, 0, 1.0, 1.0),
        (1, 1, 1.0, 0.0),
        (2, 0, 1.81, 0.0),
        (2, 1, 1.81, 0.0),
        (0, 0, 0.7, 0.767020368396388),
        (1, 0, 1.2, 0.89),
    ],
)

# Sueda's notes, eq. (1.45): force–velocity f_V(v~), v~ > 0 lengthening; 0 at the
# maximum shortening velocity v~ = -1, 1 when isometric, 1.4 when lengthening fast.
FORCE_VELOCITY = PiecewiseCubic.solve(
    [-1.0, -0.05, 0.05, 1.0],
    [
        (0, 0, -1.0, 0.0),
        (0, 1, -1.0, 0.0),
        (0, 2, -1.0, 0.0),
        (2, 0, 1.0, 1.4),
        (2, 1, 1.0, 0.0),
        (2, 2, 1.0, 0.0),
        (1, 0, 0.0, 1.0),
        (1, 1, 0.0, 5.0),
    ],
)
