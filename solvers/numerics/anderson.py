"""Anderson acceleration (type II) of a fixed point ``y = g(y)``: one history, two users.

From the last ``depth`` differences of iterates ``dY``, of residuals ``dR``
(``r = g(y) - y``) and of a measure of the residuals ``dW`` (``r`` itself, or a linear
image of it such as the velocity change it causes), the next iterate is

.. math::  y_+ = y + \\theta r - (dY + \\theta\\, dR)\\, \\gamma, \\qquad
           \\gamma = \\arg\\min \\| w - dW \\gamma \\|,

the combination of the recent iterates whose linearised residual is smallest
(Walker and Ni, SIAM J. Numer. Anal. 49, 2011); with ``theta = 1`` it is
``g(y) - (dY + dR) gamma``.  When the map is affine near the solution (settled active
sets) this is a Krylov (GMRES-like) acceleration of it.  When to forget the history
and how much to relax belong to the caller: Staggered Projections restarts when the
residual grows (:class:`contactlab.models.staggered.Anderson`), the De Saxcé shift of
the frictional-contact backends halves ``theta`` when the natural map rises
(``solvers.backends.friction``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


class AndersonHistory:
    """The last ``depth`` differences of iterates, residuals and residual measures.

    ``rcond`` is the cut-off of the least squares (:func:`numpy.linalg.lstsq`).
    """

    def __init__(self, depth: int, rcond: float) -> None:
        self.depth, self.rcond = depth, rcond
        self.dY: list[Array] = []
        self.dR: list[Array] = []
        self.dW: list[Array] = []
        self.last: tuple[Array, Array, Array] | None = None

    def forget(self) -> None:
        """Drop the history (the next pair starts a new one)."""
        self.dY, self.dR, self.dW = [], [], []
        self.last = None

    def record(self, y: Array, r: Array, w: Array | None = None) -> None:
        """Add the pair ``(y, r)`` (and the measure ``w`` of ``r``, default ``r``)."""
        w = r if w is None else w
        if self.last is not None:
            y0, r0, w0 = self.last
            self.dY.append(y - y0)
            self.dR.append(r - r0)
            self.dW.append(w - w0)
            extra = len(self.dY) - self.depth
            if extra > 0:
                del self.dY[:extra], self.dR[:extra], self.dW[:extra]
        self.last = (y, r, w)

    def mix(self, y: Array, r: Array, theta: float = 1.0, image: Array | None = None) -> Array:
        """The next iterate from the newest recorded pair ``(y, r)``.

        ``image``: ``y + theta r`` when the caller has it (``g(y)`` for ``theta = 1``).
        """
        base = y + theta * r if image is None else image
        if not self.dW:
            return base
        assert self.last is not None
        gamma = np.linalg.lstsq(np.column_stack(self.dW), self.last[2], rcond=self.rcond)[0]
        step = np.column_stack(self.dY) + theta * np.column_stack(self.dR)
        return base - step @ gamma
