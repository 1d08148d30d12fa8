"""What a run produces: the record of one step and the finished run.

:class:`StepRecord` is what :meth:`contactlab.simulator.Simulator.step` returns beside the
new state; :class:`Run` is what :meth:`~contactlab.simulator.Simulator.run` returns (the
per-step table, the trajectory, the aggregates), and what :mod:`contactlab.results` writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contactlab import metrics as M
from contactlab.collision.contacts import ContactSet
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import Scene, State
from contactlab.spec import RunSpec

#: Callback run after every step; returning ``True`` stops the run early.
StepCallback = Callable[[State, "StepRecord"], "bool | None"]


@dataclass
class StepRecord:
    """What one step produced.

    index : step index from 0.
    t : time at the end of the step [s].
    h : step size [s].
    metrics : the row of ``steps.csv`` (see :data:`contactlab.metrics.STEP_METRICS`).
    problem, solution : the step problem and the model's solution.
    contacts : the contact set used by the step (``None`` without collision).
    """

    index: int
    t: float
    h: float
    metrics: dict[str, Any]
    problem: StepProblem
    solution: StepSolution
    contacts: ContactSet | None = None


@dataclass
class Run:
    """A finished (or, attached to a :class:`StepFailure`, interrupted) run.

    spec : the run's :class:`~contactlab.runspec.RunSpec` with the scene's choices
        filled in (formulation, model, solver, step size; ``scenario`` is the
        scene's name, ``duration`` the time the run was asked to simulate); the
        run's ``formulation``, ``model``, ``solver``, ``dt``, ``model_options``,
        ``formulation_options``, ``strict`` and ``parameters`` read it.
    scene : the scene that was stepped.
    steps : one row per step (columns of :data:`contactlab.metrics.STEP_METRICS`).
    trajectory : ``t`` (T+1,), ``body_names`` (nb,), ``position`` (T+1, nb, 3),
        ``rotation`` (T+1, nb, 3, 3), ``twist`` (T+1, nb, 6) body-frame twists
        angular first; ``q``, ``qdot`` (T+1, nq) for reduced runs.
    initial_metrics : the formulation's state metrics at t = 0.
    status : ``"ok"`` (every step optimal), ``"inaccurate"`` (some steps
        unconverged: kept with their best iterate, see :mod:`contactlab.simulator`),
        ``"stopped"`` (a callback ended it), ``"diverged"`` (the divergence
        guard stopped it) or ``"failed"``.
    defaults : the choices taken from the scene's defaults and why (empty when all
        were given).
    """

    spec: RunSpec
    scene: Scene
    steps: pd.DataFrame
    trajectory: dict[str, NDArray[Any]]
    initial_metrics: dict[str, float]
    wall_time_s: float
    status: str
    message: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def formulation(self) -> str:
        return str(self.spec.formulation)

    @property
    def model(self) -> str:
        return str(self.spec.model)

    @property
    def solver(self) -> str:
        return str(self.spec.solver)

    @property
    def dt(self) -> float:
        """Step size [s]."""
        return float(self.spec.dt)  # type: ignore[arg-type]

    @property
    def model_options(self) -> dict[str, Any]:
        return dict(self.spec.model_options)

    @property
    def formulation_options(self) -> dict[str, Any]:
        """Options of the formulation (integrator, ...); empty for its defaults."""
        return dict(self.spec.formulation_options)

    @property
    def strict(self) -> bool:
        """Whether the first unconverged step was to stop the run (``Simulator(strict=)``)."""
        return self.spec.strict

    @property
    def parameters(self) -> dict[str, Any]:
        """The scene's parameters."""
        return dict(self.spec.params)

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def duration(self) -> float:
        """Simulated time [s]."""
        t = self.trajectory["t"]
        return float(t[-1] - t[0]) if len(t) else 0.0

    def aggregates(self) -> dict[str, float | None]:
        """Run aggregates (see :func:`contactlab.metrics.aggregate`)."""
        return M.aggregate(self.steps, self.initial_metrics)

    def unconverged(self) -> dict[str, Any]:
        """The steps kept short of their tolerance: ``steps`` (count), ``by_status``,
        ``first_step`` (index or ``None``) and ``max_residual`` (``None`` without any)."""
        if not len(self.steps) or "status" not in self.steps:
            return {"steps": 0, "by_status": {}, "first_step": None, "max_residual": None}
        statuses = self.steps["status"].astype(str)
        loose = statuses.isin(M.UNCONVERGED_STATUSES).to_numpy()
        residual = None
        if loose.any() and "solver_residual" in self.steps:
            values = pd.to_numeric(self.steps["solver_residual"], errors="coerce").to_numpy()
            residual = float(np.nanmax(values[loose])) if np.isfinite(values[loose]).any() else None
        return {
            "steps": int(np.count_nonzero(loose)),
            "by_status": M.unconverged_counts(statuses),
            "first_step": int(self.steps["step"].to_numpy()[loose][0]) if loose.any() else None,
            "max_residual": residual,
        }
