"""The layer's one verdict on a backend's answer: its status, and whether a claimed solution holds.

A backend reports a status; the layer measures residuals the same way for
every backend (:mod:`solvers.residuals`) and judges the claim once, here:

- a claimed ``optimal`` whose largest residual exceeds
  ``IMPLAUSIBLE_FACTOR * max(tol, accuracy)`` is reported as
  ``optimal_inaccurate``;
- a claimed solution (``optimal`` or ``optimal_inaccurate``) whose largest
  residual is not finite or exceeds that limit times the data scale
  ``max(1, |q|_inf)`` is *implausible*: a caller should treat it as a failed
  solve (the contact models then fail the step as ``numerical_error``).

``accuracy`` is the backend's declared ``tolerance`` (what it reaches on
well-scaled problems), ``tol`` the tolerance requested.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

#: A claimed optimum whose layer residual exceeds this multiple of the tolerance is downgraded.
IMPLAUSIBLE_FACTOR = 1e3

#: Statuses that claim a solution.
CLAIMS = ("optimal", "optimal_inaccurate")


@dataclass(frozen=True)
class Verdict:
    """``status`` after the layer's check, ``plausible``, and a note for the message (or "")."""

    status: str
    plausible: bool
    note: str = ""


def verdict(
    status: str,
    residuals: dict[str, float],
    tol: float,
    accuracy: float,
    q: NDArray[np.float64],
) -> Verdict:
    """Judge a backend's ``status`` against the layer's ``residuals`` (problem data ``q``)."""
    worst = max(residuals.values()) if residuals else float("nan")
    limit = IMPLAUSIBLE_FACTOR * max(tol, accuracy)
    note = ""
    if status == "optimal" and worst > limit:
        note = (
            f"; the backend reported optimal but the layer's residual {worst:.2e} "
            f"exceeds {limit:.1e}: reported as optimal_inaccurate"
        )
        status = "optimal_inaccurate"
    scale = max(1.0, float(np.max(np.abs(q), initial=0.0)))
    plausible = status not in CLAIMS or bool(np.isfinite(worst) and worst <= limit * scale)
    return Verdict(status, plausible, note)
