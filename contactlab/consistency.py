"""Self-consistency of a model: the gap between its trajectory at ``h`` and at ``h / r``.

Le Lidec et al. ("Contact Models in Robotics: a Comparative Analysis", T-RO 2024, §V)
judge a contact model by how far its trajectory at the simulation step moves when the
step is refined: a model whose answer depends on ``h`` beyond the integrator's own
``O(h)`` is not consistent.  The error here is the largest distance between the bodies'
centres of mass of the two runs at the common times ``t_k = k h``, over the run [m]
(the run aggregate ``self_consistency`` of :data:`contactlab.metrics.RUN_AGGREGATES`).

Example: a box sliding to rest at constant deceleration ``a = mu g`` under the
velocity-level step (positions advanced with the new velocity) is at
``x_h(t) = v0 t - a t^2 / 2 - a h t / 2`` while it slides, so the gap to ``h / 8`` is
``(7/16) a h t``: first order, as the integrator is (tested).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.simulator import Simulator

Array = NDArray[np.float64]


def positions(sim: Simulator, steps: int, every: int = 1) -> Array:
    """``(steps // every + 1, nb, 3)`` centres of mass at t = 0 and every ``every`` steps."""
    state = sim.initial_state()
    E, _ = sim.formulation.maximal(state)
    out = [E[:, :3, 3].copy()]
    for j in range(steps):
        state, _ = sim.step(state, j)
        if (j + 1) % every == 0:
            E, _ = sim.formulation.maximal(state)
            out.append(E[:, :3, 3].copy())
    return np.array(out)


def self_consistency(
    scene: Scene,
    formulation: str,
    model: str,
    solver: str,
    h: float,
    steps: int,
    model_options: dict[str, Any] | None = None,
    refine: int = 8,
    formulation_options: dict[str, Any] | None = None,
) -> tuple[float, Array]:
    """``(max gap [m], gap per common time)`` between the runs at ``h`` and ``h / refine``."""
    if not (isinstance(refine, int) and refine >= 2):
        raise ConfigurationError(
            f"self_consistency: refine must be an integer >= 2, got {refine!r}"
        )
    runs = []
    for dt, every in ((h, 1), (h / refine, refine)):
        sim = Simulator(
            scene, formulation, model, solver, dt=dt, model_options=dict(model_options or {}),
            formulation_options=formulation_options,
        )  # fmt: skip
        runs.append(positions(sim, steps * every, every))
    gap = np.linalg.norm(runs[0] - runs[1], axis=2).max(axis=1)
    return float(gap.max()), gap
