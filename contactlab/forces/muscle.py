"""Hill-type muscle along a path of body points (Sueda's notes §1.9.4–1.9.5).

Rigid tendon, zero pennation [Millard et al. 2013].  The scalar tension is

.. math::

    F = f_{opt}\\,\\big(a\\, f_L(\\tilde l)\\, f_V(\\tilde v) + f_P(\\tilde l)\\big),
    \\qquad \\tilde l = \\frac{l - l_T}{l_{opt}},\\qquad
    \\tilde v = \\frac{\\dot l}{l_{opt}\\, v_{max}}

(eqs. 1.38, 1.47, 1.49, 1.59), with ``l`` the total length of the path
through its via points (eq. 1.57) and the piecewise-cubic curves of
:mod:`contactlab.forces.muscle_curves`.  The tension acts along every
segment of the path (eq. 1.60); ``K`` and ``D`` follow from
:class:`~contactlab.forces.path.PathForce` with

.. math::

    \\frac{\\partial F}{\\partial l} = \\frac{f_{opt}}{l_{opt}}
        (a f_L' f_V + f_P'),\\qquad
    \\frac{\\partial F}{\\partial \\dot l} = \\frac{f_{opt}\\, a f_L f_V'}{l_{opt} v_{max}}.

A two-point path is the straight muscle of §1.9.4; more points give the
multi-point muscle of §1.9.5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from contactlab.errors import ConfigurationError
from contactlab.forces.base import nonnegative, positive
from contactlab.forces.muscle_curves import (
    ACTIVE_FORCE_LENGTH,
    FORCE_VELOCITY,
    PASSIVE_FORCE_LENGTH,
)
from contactlab.forces.path import PathForce, PathPoint, as_path


@dataclass(frozen=True)
class Muscle(PathForce):
    """Hill-type muscle (see the module docstring).

    Parameters
    ----------
    points : ``((body name or None, (3,) point [m]), ...)``, at least two: the
        origin, via points, insertion; ``None`` marks a world point.
    max_isometric_force : f_opt [N].
    optimal_length : l_opt, optimal fibre length [m].
    tendon_slack_length : l_T, length of the (rigid) tendon [m].
    max_contraction_velocity : v_max [optimal lengths / s].
    activation : a in [0, 1] (constant).

    Notes
    -----
    :meth:`energy` is the potential of the tension at zero velocity
    (``f_V(0) = 1``): ``V(l) = f_opt l_opt int (a f_L + f_P) dl~``, so that
    ``wrench = -dV/d delta`` when the muscle is not changing length.  The
    active part is work done by the muscle, not stored elastic energy; it is
    reported so that energy balances can be closed at fixed activation.
    """

    points: Sequence[tuple[str | None, ArrayLike]]
    max_isometric_force: float
    optimal_length: float
    tendon_slack_length: float = 0.0
    max_contraction_velocity: float = 10.0
    activation: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", as_path(self.points, "Muscle"))
        if all(name is None for name, _ in self.points):  # type: ignore[misc]
            raise ConfigurationError("Muscle: every path point is in the world; name a body")
        positive(self.max_isometric_force, "Muscle max_isometric_force [N]")
        positive(self.optimal_length, "Muscle optimal_length [m]")
        nonnegative(self.tendon_slack_length, "Muscle tendon_slack_length [m]")
        positive(self.max_contraction_velocity, "Muscle max_contraction_velocity [l_opt/s]")
        if not (0.0 <= self.activation <= 1.0):
            raise ConfigurationError(f"Muscle activation must be in [0, 1], got {self.activation}")

    @classmethod
    def between(
        cls,
        body1: str | None,
        point1: ArrayLike,
        body2: str | None,
        point2: ArrayLike,
        **params: float,
    ) -> Muscle:
        """The straight two-point muscle of Sueda's notes §1.9.4."""
        return cls(points=((body1, point1), (body2, point2)), **params)

    def path(self) -> tuple[PathPoint, ...]:
        return tuple(self.points)  # type: ignore[arg-type]

    def normalized(self, length: float, rate: float) -> tuple[float, float]:
        """Normalised fibre length ``l~`` and velocity ``v~`` (eqs. 1.47, 1.49)."""
        lt = (length - self.tendon_slack_length) / self.optimal_length
        vt = rate / (self.optimal_length * self.max_contraction_velocity)
        return lt, vt

    def tension(self, length: float, rate: float) -> tuple[float, float, float]:
        lt, vt = self.normalized(length, rate)
        fl, dfl = ACTIVE_FORCE_LENGTH.evaluate(lt)
        fv, dfv = FORCE_VELOCITY.evaluate(vt)
        fp, dfp = PASSIVE_FORCE_LENGTH.evaluate(lt)
        a, fo, lo = self.activation, self.max_isometric_force, self.optimal_length
        F = fo * (a * fl * fv + fp)
        F_l = fo * (a * dfl * fv + dfp) / lo
        F_v = fo * a * fl * dfv / (lo * self.max_contraction_velocity)
        return float(F), float(F_l), float(F_v)

    def potential(self, length: float) -> float:
        lt, _ = self.normalized(length, 0.0)
        integral = self.activation * ACTIVE_FORCE_LENGTH.integral(lt)
        integral = integral + PASSIVE_FORCE_LENGTH.integral(lt)
        return float(self.max_isometric_force * self.optimal_length * np.asarray(integral))
