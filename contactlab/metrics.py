"""Every per-step metric and run aggregate, defined once.

The names here are the column names of ``steps.csv`` and the keys of
``summary.json``; :data:`STEP_METRICS` documents each column (with its unit)
and :data:`RUN_AGGREGATES` each aggregate, and both tables are copied into
every ``summary.json`` so a results folder describes itself.

State metrics (energies, momentum, bilateral drift) are computed by the
formulation (:meth:`contactlab.formulation.Formulation.metrics`) because only
it knows its coordinates; their names are fixed here.  Contact metrics are
computed from the step problem and its solution by :func:`contact_metrics`,
the same way for every formulation, model and solver.

Conventions (see :mod:`contactlab.problem`): the normal impulses
``lambda_N >= 0`` push along the rows ``N``; the friction impulses
``lambda_T`` are in the orthonormal tangent basis ``T`` (rows ``2i``,
``2i+1`` for contact ``i``), so ``T_i v`` is the tangential slip velocity of
contact ``i`` [m/s] and ``lambda_T,i`` its friction impulse [N s].
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from contactlab.problem import StepProblem, StepSolution

if TYPE_CHECKING:
    import pandas as pd

Array = NDArray[np.float64]

#: Statuses whose velocities the simulator accepts (the run continues): the solver's
#: best iterate, finite, solved to its tolerance (``optimal``) or not.
USABLE_STATUSES: frozenset[str] = frozenset(
    {"optimal", "optimal_inaccurate", "max_iterations", "stalled", "time_limit"}
)
#: Usable statuses of a step that did not meet its tolerance: an *unconverged* step, kept
#: with its best iterate and residual, counted in the run summary (docs/reliability.md).
UNCONVERGED_STATUSES: frozenset[str] = USABLE_STATUSES - {"optimal"}


def unconverged_counts(statuses: Any) -> dict[str, int]:
    """``{status: count}`` of the unconverged steps among ``statuses`` (sorted by name)."""
    counts: dict[str, int] = {}
    for s in statuses:
        s = str(s)
        if s in UNCONVERGED_STATUSES:
            counts[s] = counts.get(s, 0) + 1
    return dict(sorted(counts.items()))


#: Slip speed above which a contact counts as sliding for the dissipation metric [m/s].
SLIP_THRESHOLD = 1e-3


@dataclass(frozen=True)
class Metric:
    """Documentation of one metric: its name, unit and meaning."""

    name: str
    unit: str
    doc: str

    def describe(self) -> str:
        return f"{self.doc} [{self.unit}]" if self.unit else self.doc


#: The columns of ``steps.csv``, in order.  Rows describe the state at the END of the step.
STEP_METRICS: tuple[Metric, ...] = (
    Metric("step", "", "index of the step, from 0"),
    Metric("t", "s", "time at the end of the step"),
    Metric("h", "s", "step size"),
    Metric("kinetic_energy", "J", "kinetic energy 1/2 v^T M v"),
    Metric("potential_energy", "J", "gravity plus force-element (spring) potential energy"),
    Metric("total_energy", "J", "kinetic plus potential energy"),
    Metric("linear_momentum_x", "kg m/s", "world linear momentum, x"),
    Metric("linear_momentum_y", "kg m/s", "world linear momentum, y"),
    Metric("linear_momentum_z", "kg m/s", "world linear momentum, z"),
    Metric("angular_momentum_x", "kg m^2/s", "angular momentum about the world origin, x"),
    Metric("angular_momentum_y", "kg m^2/s", "angular momentum about the world origin, y"),
    Metric("angular_momentum_z", "kg m^2/s", "angular momentum about the world origin, z"),
    Metric("constraint_error", "m or rad", "largest position-level bilateral (joint) drift"),
    Metric("status", "", "shared solver status of the step (optimal, max_iterations, ...)"),
    Metric(
        "solve_time_s",
        "s",
        "wall time of the whole contact-model solve (its set-up and the solver layer)",
    ),
    Metric(
        "model_setup_time_s",
        "s",
        "part of solve_time_s spent by the model outside the solver layer (rows, Delassus "
        "matrix, conversions to the solver problem, warm start)",
    ),
    Metric("iterations", "", "solver iterations, summed over the step's inner solves"),
    Metric("outer_iterations", "", "outer iterations of staggered schemes (0 otherwise)"),
    Metric(
        "n_contacts",
        "",
        "number of contacts found by collision (with the maximal option sleep: those posed, "
        "the contacts among sleeping bodies and the world left out)",
    ),
    Metric("penetration", "m", "deepest penetration among the contacts, max(-distance, 0)"),
    Metric(
        "normal_complementarity",
        "N s m/s",
        "max over contacts of |lambda_N,i (N v - c)_i|; 0 for an exact contact solution",
    ),
    Metric(
        "normal_feasibility",
        "m/s",
        "max over contacts of max(c - N v, 0): approach beyond what the contact allows",
    ),
    Metric(
        "cone_violation",
        "N s",
        "max over contacts of max(||lambda_T,i|| - mu_i lambda_N,i, 0): friction outside "
        "the Coulomb cone",
    ),
    Metric(
        "dissipation_violation",
        "N s",
        "max over sliding contacts (slip speed > slip threshold) of "
        "||lambda_T,i + mu_i lambda_N,i s_i|| with s_i the unit slip direction: friction "
        "not opposite the slip at full magnitude (maximal dissipation)",
    ),
    Metric("n_sliding", "", "contacts whose slip speed exceeds the slip threshold"),
    Metric(
        "sleeping_bodies",
        "",
        "bodies asleep at the end of the step (a column only with the maximal formulation's "
        "option sleep)",
    ),
    Metric("solver_residual", "", "largest residual (primal, dual, complementarity) reported"),
    Metric("collision_time_s", "s", "wall time of collision detection"),
    Metric("assembly_time_s", "s", "wall time of step-problem assembly"),
    Metric("step_time_s", "s", "wall time of the whole step"),
)

#: The aggregates of ``summary.json`` (see :func:`aggregate`).
RUN_AGGREGATES: tuple[Metric, ...] = (
    Metric("max_constraint_error", "m or rad", "largest constraint_error over the run"),
    Metric("max_penetration", "m", "largest penetration over the run"),
    Metric(
        "energy_change",
        "J",
        "E_end - E_0, total energy at the end minus at t = 0 (signed: negative when the "
        "scene lost energy)",
    ),
    Metric("energy_drift", "J", "|E_end - E_0|, the size of energy_change"),
    Metric(
        "energy_drift_relative",
        "",
        "energy_drift / S, S the scene's energy scale fixed by the initial state (initial "
        "kinetic energy + |g| L sum m_i + |initial force-element potential|, L the scene's "
        "length scale; see contactlab.divergence), so a blow-up reads as a large number; "
        "null when S < 1e-12 J",
    ),
    Metric("max_energy_deviation", "J", "max over steps of |E_t - E_0|"),
    Metric("median_solve_time_s", "s", "median of solve_time_s"),
    Metric("p90_solve_time_s", "s", "90th percentile of solve_time_s"),
    Metric("total_solve_time_s", "s", "sum of solve_time_s"),
    Metric("total_iterations", "", "sum of iterations"),
    Metric("success_rate", "", "fraction of steps whose status is 'optimal'"),
    Metric(
        "unconverged_steps",
        "",
        "steps kept with a usable status short of the tolerance (max_iterations, stalled, "
        "time_limit, optimal_inaccurate)",
    ),
    Metric(
        "max_unconverged_residual",
        "",
        "largest solver_residual of an unconverged step (null without such steps)",
    ),
    Metric("max_cone_violation", "N s", "largest cone_violation"),
    Metric("max_dissipation_violation", "N s", "largest dissipation_violation"),
    Metric("max_normal_complementarity", "N s m/s", "largest normal_complementarity"),
    Metric("max_contacts", "", "largest n_contacts"),
    Metric(
        "self_consistency",
        "m",
        "largest gap between the run's body positions and those of the same model at h/8 "
        "at the common times (contactlab.consistency; null unless asked for, e.g. by study 9)",
    ),
)


def describe_columns() -> dict[str, str]:
    """``{name: description [unit]}`` for every step metric and aggregate."""
    return {m.name: m.describe() for m in STEP_METRICS + RUN_AGGREGATES}


def state_metrics(
    E: Array,
    phi: Array,
    mdiag: Array,
    kinetic: float,
    potential: float,
    constraint_error: float,
) -> dict[str, float]:
    """The state columns of ``steps.csv`` (energies, world momentum, drift).

    Parameters
    ----------
    E : (n, 4, 4) body transforms.
    phi : (n, 6) body twists, angular part first [rad/s, m/s].
    mdiag : (n, 6) diagonal spatial inertia on principal axes [kg m^2, kg].
    kinetic, potential : energies as the formulation computes them [J].
    constraint_error : largest position-level bilateral drift [m or rad].

    The linear momentum is ``sum_i m_i R_i nu_i`` and the angular momentum
    about the world origin ``sum_i p_i x (m_i R_i nu_i) + R_i I_i omega_i``.
    """
    R, p = E[:, :3, :3], E[:, :3, 3]
    lin = mdiag[:, 3:4] * np.einsum("nab,nb->na", R, phi[:, 3:])
    ang = np.cross(p, lin) + np.einsum("nab,nb->na", R, mdiag[:, :3] * phi[:, :3])
    L, H = lin.sum(axis=0), ang.sum(axis=0)
    return {
        "kinetic_energy": float(kinetic),
        "potential_energy": float(potential),
        "total_energy": float(kinetic + potential),
        "linear_momentum_x": float(L[0]),
        "linear_momentum_y": float(L[1]),
        "linear_momentum_z": float(L[2]),
        "angular_momentum_x": float(H[0]),
        "angular_momentum_y": float(H[1]),
        "angular_momentum_z": float(H[2]),
        "constraint_error": float(constraint_error),
    }


def signed_distances(contacts: Any) -> Array:
    """Signed distances [m] of a contact set (negative when penetrating).

    Accepts a :class:`contactlab.collision.ContactSet` (or any object with a
    ``distance`` array), or ``None`` for no contacts.
    """
    value = getattr(contacts, "distance", None)
    return np.zeros(0) if value is None else np.asarray(value, dtype=float).reshape(-1)


def penetration(contacts: Any) -> float:
    """Deepest penetration ``max(-d_i, 0)`` [m] over the contacts (0 without contacts)."""
    d = signed_distances(contacts)
    return float(max(-d.min(), 0.0)) if d.size else 0.0


def _blocks(x: Array, nc: int) -> Array:
    return np.asarray(x, dtype=float).reshape(nc, 2) if nc else np.zeros((0, 2))


def contact_metrics(
    problem: StepProblem, solution: StepSolution, slip_threshold: float = SLIP_THRESHOLD
) -> dict[str, float]:
    """Complementarity, cone and maximal-dissipation metrics of one solved step.

    Parameters
    ----------
    problem : the step problem (rows ``N``, ``c``, ``T``, ``mu``).
    solution : the model's solution (``v``, ``lambda_N``, ``lambda_T``).
    slip_threshold : [m/s] slip speed above which a contact is sliding.

    Returns
    -------
    ``normal_complementarity``, ``normal_feasibility``, ``cone_violation``,
    ``dissipation_violation``, ``n_sliding`` (see :data:`STEP_METRICS`).
    Without contacts every value is 0.  A solution with torsional and rolling friction
    (its ``report`` carries the angular rows) has the cone and dissipation metrics
    measured on the wide cone (:mod:`contactlab.wide_metrics`).
    """
    nc = problem.n_contacts
    out = dict.fromkeys(
        (
            "normal_complementarity",
            "normal_feasibility",
            "cone_violation",
            "dissipation_violation",
            "n_sliding",
        ),
        0.0,
    )
    if nc == 0:
        return out
    v = np.asarray(solution.v, dtype=float)
    lam_n = np.asarray(solution.lambda_N, dtype=float).reshape(-1)
    gap_velocity = problem.N @ v - problem.c
    out["normal_complementarity"] = float(np.max(np.abs(lam_n * gap_velocity)))
    out["normal_feasibility"] = float(max(-gap_velocity.min(), 0.0))
    mu = np.asarray(problem.mu, dtype=float)
    T = problem.T
    if T is None or T.shape[0] != 2 * nc or np.size(solution.lambda_T) != 2 * nc:
        return out  # frictionless problem or model
    lam_t = _blocks(solution.lambda_T, nc)
    slip = _blocks(T @ v, nc)
    report = solution.report
    if all(hasattr(report, k) for k in ("rows", "impulse", "mu", "cone")):
        # torsional and rolling friction: the same metrics on the wide cone
        from contactlab.wide_metrics import wide_contact_metrics

        out.update(wide_contact_metrics(lam_n, lam_t, slip, mu, report, v, slip_threshold))
        return out
    lam_t_norm = np.linalg.norm(lam_t, axis=1)
    out["cone_violation"] = float(np.max(np.maximum(lam_t_norm - mu * lam_n, 0.0)))
    speed = np.linalg.norm(slip, axis=1)
    sliding = speed > slip_threshold
    out["n_sliding"] = float(np.count_nonzero(sliding))
    if np.any(sliding):
        direction = slip[sliding] / speed[sliding, None]
        ideal = -(mu[sliding] * lam_n[sliding])[:, None] * direction
        out["dissipation_violation"] = float(np.max(np.linalg.norm(lam_t[sliding] - ideal, axis=1)))
    return out


def solver_residual(solution: StepSolution) -> float:
    """Largest residual of the step: the model's own and every solver result's."""
    values = [float(solution.residual)]
    for result in solution.results:
        residuals = getattr(result, "residuals", None) or {}
        values.extend(float(r) for r in residuals.values())
    finite = [x for x in values if np.isfinite(x)]
    if len(finite) < len(values):
        return float("inf")
    return max(finite)


def _column(steps: pd.DataFrame, name: str) -> NDArray[Any]:
    if name not in steps:
        return np.zeros(0)
    import pandas as pd  # imported here: the formulations import this module for state_metrics

    return pd.to_numeric(steps[name], errors="coerce").to_numpy(dtype=float)


def _max(x: Array) -> float | None:
    x = x[np.isfinite(x)]
    return float(x.max()) if x.size else None


def _relative(drift: float, steps: pd.DataFrame, initial: Mapping[str, float]) -> float | None:
    scale = initial.get("energy_scale")
    if scale is not None and np.isfinite(scale):
        return drift / scale if scale > 1e-12 else None
    # runs recorded before the energy scale was part of the initial metrics
    kinetic = np.append(_column(steps, "kinetic_energy"), initial.get("kinetic_energy", np.nan))
    potential = np.append(
        _column(steps, "potential_energy"), initial.get("potential_energy", np.nan)
    )
    potential = potential[np.isfinite(potential)]
    spread = float(np.ptp(potential)) if potential.size else 0.0
    scale = max(_max(kinetic) or 0.0, spread)
    return drift / scale if scale > 1e-12 else None


def aggregate(steps: pd.DataFrame, initial: Mapping[str, float]) -> dict[str, float | None]:
    """The run aggregates of :data:`RUN_AGGREGATES` from the per-step table.

    Parameters
    ----------
    steps : one row per step with the columns of :data:`STEP_METRICS`.
    initial : state metrics at t = 0 (``total_energy``, ``kinetic_energy``).

    Values that cannot be computed (no steps, missing columns) are ``None``.
    """
    out: dict[str, float | None] = dict.fromkeys((m.name for m in RUN_AGGREGATES), None)
    n = len(steps)
    out["max_constraint_error"] = _max(_column(steps, "constraint_error"))
    out["max_penetration"] = _max(_column(steps, "penetration"))
    out["max_cone_violation"] = _max(_column(steps, "cone_violation"))
    out["max_dissipation_violation"] = _max(_column(steps, "dissipation_violation"))
    out["max_normal_complementarity"] = _max(_column(steps, "normal_complementarity"))
    out["max_contacts"] = _max(_column(steps, "n_contacts"))
    energy = _column(steps, "total_energy")
    e0 = initial.get("total_energy")
    if energy.size and e0 is not None and np.isfinite(e0):
        change = float(energy[-1]) - e0
        drift = abs(change)
        out["energy_change"] = change
        out["energy_drift"] = drift
        out["max_energy_deviation"] = _max(np.abs(energy - e0))
        out["energy_drift_relative"] = _relative(drift, steps, initial)
    solve = _column(steps, "solve_time_s")
    solve = solve[np.isfinite(solve)]
    if solve.size:
        out["median_solve_time_s"] = float(np.median(solve))
        out["p90_solve_time_s"] = float(np.percentile(solve, 90))
        out["total_solve_time_s"] = float(solve.sum())
    iterations = _column(steps, "iterations")
    if iterations.size:
        out["total_iterations"] = float(np.nansum(iterations))
    if n and "status" in steps:
        statuses = steps["status"].astype(str)
        out["success_rate"] = float(np.mean(statuses == "optimal"))
        loose = statuses.isin(UNCONVERGED_STATUSES).to_numpy()
        out["unconverged_steps"] = float(np.count_nonzero(loose))
        residual = _column(steps, "solver_residual")
        if loose.any() and residual.size == n:
            out["max_unconverged_residual"] = _max(residual[loose])
    return out
