"""A backend's tolerance, declared once, and the one function that resolves a request.

Every backend declares one :class:`Tolerance` (``Backend.tolerance``): the
*accuracy* it reaches with default settings on well-scaled problems (a
capability the plausibility verdict uses, :mod:`solvers.verdict`) and the
*request* it is asked for when the caller names no tolerance.  The two differ
on purpose: OSQP reaches about 1e-5 but is asked for 1e-9 (it polishes towards
it), while Gauss--Seidel and the frictional-contact backends are asked for
what they reach (1e-6).  :func:`requested_tol` is where a request is resolved
-- by :func:`solvers.solve` and by the contact models alike -- so the default a
user gets is written in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from solvers.errors import ProblemError

#: The request of a backend that declares none: direct and interior-point solvers reach it.
DEFAULT_REQUEST = 1e-9


@dataclass(frozen=True)
class Tolerance:
    """What a backend reaches and what it is asked for by default.

    Attributes
    ----------
    accuracy
        Max residual the backend reaches on well-scaled problems with default
        settings: a declared capability (the verdict's ``accuracy``), not a request.
    request
        The tolerance :func:`requested_tol` asks for when the caller gives none.
    """

    accuracy: float
    request: float = DEFAULT_REQUEST

    def __post_init__(self) -> None:
        for name in ("accuracy", "request"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                raise ValueError(
                    f"Tolerance.{name} must be a positive finite number, not {value!r}"
                )


def requested_tol(
    backend: Any, tol: float | None = None, preferred: Mapping[str, float] | None = None
) -> float:
    """The tolerance ``backend`` is asked for: ``tol`` if given, else the default request.

    Parameters
    ----------
    backend
        A backend class or instance (its ``name`` and ``tolerance``).
    tol
        The caller's tolerance, or ``None``.
    preferred
        ``{backend name: tolerance}`` a caller measured for its problems (a contact
        model's ``benchmarked_tol``), taking precedence over the backend's request.

    Raises
    ------
    ProblemError
        If the resolved tolerance is not a positive finite number.
    """
    if tol is None:
        tol = (preferred or {}).get(backend.name, backend.tolerance.request)
    if not (np.isfinite(tol) and tol > 0):
        raise ProblemError("tol", f"must be a positive finite number, got {tol}")
    return float(tol)
