"""The exact Coulomb law as De Saxcé's nonlinear complementarity problem.

Per contact ``i`` with impulse ``r_i = (lambda_N, lambda_T)`` and relative
velocity ``u_i = (N_i v - c_i, T_i v)`` (``v = M^-1 (f + C^T z)``, see
:mod:`contactlab.models.fc_route`):

.. math::

    K_{\\mu_i} \\ni r_i \\perp \\hat u_i \\in K_{\\mu_i}^*, \\qquad
    \\hat u_i = (u_{N,i} + \\mu_i \\|u_{T,i}\\|,\\ u_{T,i}),

which says: ``lambda_N >= 0`` complementary to ``u_N >= 0`` (no separation
while sliding, unlike Anitescu--Hart's ``u_N = mu |u_T|``), friction inside
the cone, and a sliding contact's friction opposite the slip at full
magnitude ``mu lambda_N`` (maximal dissipation).  Joints (``G``) and limits
(``L``) are scalar rows of the same problem.  It is not a convex program:
the solver layer's ``nsgs``, ``apgd`` and ``admm`` solve it natively (``apgd``
and ``admm`` through a fixed point on De Saxcé's shift), and ``pgs`` through
friction blocks (cones ``soc`` and ``box``).

Options
-------
cone : ``"soc"`` (exact cone, default), ``"box"`` (``|lambda_T,k| <= mu lambda_N``)
    or ``"pyramid"`` (``directions`` sides; nsgs, apgd and admm only).
directions : pyramid sides (even, >= 4); ``None`` uses the scene's.
torsion, rolling, spin_cone : torsional and rolling friction (MuJoCo's ``condim`` 4 and 6,
    coefficients in metres; :mod:`contactlab.models.spin`); with either > 0 the exact cone
    is widened and the problem goes to the SOC QP backends (De Saxcé's fixed point around
    them) or natively to ``nsgs``, ``apgd``, ``admm`` and ``padmm``.
"""

from __future__ import annotations

from typing import Any

from contactlab.errors import ConfigurationError
from contactlab.memory import ModelMemory
from contactlab.models.base import SolvingModel, register_model
from contactlab.models.common import check_cone, check_directions
from contactlab.models.fc_route import solve_as_fc
from contactlab.models.spin import SPIN_DEFAULTS, check_spin_options, solve_rigid, spin_active
from contactlab.problem import StepProblem, StepSolution
from solvers.frictional import problem_kind


@register_model("coulomb")
class Coulomb(SolvingModel):
    """Exact Coulomb friction (De Saxcé's NCP) on the local frictional-contact problem."""

    forms = ("fc",)
    defaults = {"cone": "soc", "directions": None, **SPIN_DEFAULTS}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_cone(options["cone"], ("soc", "box", "pyramid"))
        check_directions(options["directions"])
        check_spin_options(options)
        if spin_active(options) and options["cone"] != "soc":
            raise ConfigurationError(
                f"model 'coulomb': torsion and rolling widen the exact cone; use cone='soc' "
                f"(got cone={options['cone']!r})"
            )

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        if spin_active(options):
            return [("soc_qp",), ("fc_wide_coulomb",)]
        return [(problem_kind("coulomb", options["cone"]),)]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if spin_active(self.options):
            return solve_rigid(self, problem, "coulomb", cache)
        k = int(self.options["directions"] or problem.directions)
        return solve_as_fc(self, problem, cache, "coulomb", self.options["cone"], k)
