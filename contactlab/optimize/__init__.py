"""Trajectory optimization over the reduced-coordinate dynamics (Guenter & Rose).

:class:`SpacetimeProblem` and :func:`optimize` minimize the integral of the
squared joint torques between two states; ``contactlab optimize`` runs them
from the command line (:mod:`contactlab.optimize.command`).
"""

from contactlab.optimize.spacetime import METHODS, SpacetimeProblem, SpacetimeResult, optimize

__all__ = ["METHODS", "SpacetimeProblem", "SpacetimeResult", "optimize"]
