"""Solver-comparison aggregates: shifted geometric mean and Dolan–Moré performance profiles.

The conventions follow benchmarks of optimization software (qpbenchmark,
Mittelmann's benchmarks):

* **success rate**: the fraction of problems a solver solves;
* **shifted geometric mean** of a cost (time) over the problems,

  .. math::

      \\mathrm{sgm}_s(x) = \\Big(\\prod_{i=1}^{n} (x_i + s)\\Big)^{1/n} - s,

  computed through logarithms, with failures charged a penalty cost (the
  time limit); the table reports it divided by the best solver's, so the
  best solver has 1.0 and a solver with Y is "Y times slower";
* **performance profile** (Dolan and Moré, 2002): with
  :math:`r_{p,s} = t_{p,s} / \\min_{s'} t_{p,s'}` the ratio of solver ``s``
  on problem ``p`` to the best solver on that problem (:math:`\\infty` on
  failure), :math:`\\rho_s(\\tau) = |\\{p : r_{p,s} \\le \\tau\\}| / n_p` is the
  fraction of problems solver ``s`` solves within a factor ``tau`` of the best.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]


def shifted_geometric_mean(values: ArrayLike, shift: float = 10.0) -> float:
    """Shifted geometric mean of non-negative ``values`` with shift ``shift`` (same unit).

    Raises
    ------
    ConfigurationError
        If the values are empty, negative or not finite, or the shift is not positive.
    """
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ConfigurationError("shifted geometric mean of no values; pass at least one")
    if not np.all(np.isfinite(v)) or np.any(v < 0):
        raise ConfigurationError(
            "shifted geometric mean needs finite non-negative values; charge failures a "
            "finite penalty (the time limit) instead of inf/NaN"
        )
    if not (np.isfinite(shift) and shift > 0):
        raise ConfigurationError(f"shift must be a positive number, got {shift}")
    return float(np.exp(np.mean(np.log(v + shift))) - shift)


def performance_ratios(costs: ArrayLike) -> Array:
    """Ratios ``r[p, s] = cost[p, s] / min_s cost[p, s]`` of a (problems, solvers) table.

    Failures are ``inf`` or ``NaN`` in ``costs`` and give ``inf``; a problem no
    solver solves gives ``inf`` for everyone.  Costs must be positive.
    """
    c = np.asarray(costs, dtype=float)
    if c.ndim != 2:
        raise ConfigurationError(f"costs must be a (problems, solvers) table, got shape {c.shape}")
    c = np.where(np.isfinite(c), c, np.inf)
    if np.any(c <= 0):
        raise ConfigurationError("performance ratios need positive costs (times > 0)")
    best = c.min(axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        r = c / best
    return np.where(np.isfinite(best), r, np.inf)


def performance_profile(costs: ArrayLike, taus: ArrayLike) -> Array:
    """Dolan–Moré profile ``rho[k, s]``: fraction of problems with ratio ``<= taus[k]``."""
    r = performance_ratios(costs)
    t = np.asarray(taus, dtype=float).reshape(-1)
    return (r[None, :, :] <= t[:, None, None]).mean(axis=1)


def profile_taus(costs: ArrayLike, n: int = 200) -> Array:
    """A log-spaced grid from 1 to just past the largest finite ratio."""
    r = performance_ratios(costs)
    finite = r[np.isfinite(r)]
    top = max(2.0, float(finite.max()) * 1.05) if finite.size else 2.0
    return np.unique(np.concatenate([[1.0], np.geomspace(1.0, top, n), finite]))


def solver_table(
    df: pd.DataFrame,
    solver_cols: Sequence[str],
    problem_cols: Sequence[str],
    cost: str = "solve_time_ms",
    success: str = "success",
    shift: float = 10.0,
    penalty: float | None = None,
    iterations: str = "iterations_mean",
) -> pd.DataFrame:
    """qpbenchmark-style table, one row per solver (a combination of ``solver_cols``).

    Parameters
    ----------
    df : one row per run with the columns named below.
    solver_cols : columns identifying what is compared (e.g. ``["model", "solver"]``).
    problem_cols : columns identifying a problem (everything else of the spec).
    cost : the cost column (positive; e.g. total solver time of the run [ms]).
    success : boolean column.
    shift : the shift of the geometric mean, in the unit of ``cost``.
    penalty : cost charged to a failure (the time limit); default ten times the
        largest cost of a successful run.
    iterations : column averaged into ``mean_iterations`` when present.

    Returns
    -------
    DataFrame with ``success_rate`` (fraction of the problems the solver was
    run on), ``n_problems``, ``shifted_gm`` (raw) and ``shifted_gm_rel`` (divided
    by the smallest), ``mean_iterations`` if the ``iterations`` column exists,
    and ``n_not_common``: the solver's problems left out because some compared
    solver did not attempt them.  As in qpbenchmark, every number is taken over
    the problems that every compared solver attempted, so solvers are ranked
    on the same problem set; with no such problem, the table is per solver
    and ``shifted_gm_rel`` is NaN (nothing to compare on).
    """
    if df.empty:
        raise ConfigurationError("no runs to aggregate")
    solver_key = key_column(df, solver_cols, "/")
    problem_key = key_column(df, problem_cols, "|") if problem_cols else pd.Series("all", df.index)
    n_solvers = solver_key.nunique()
    common = (
        problem_key.groupby(problem_key)
        .transform(lambda p: solver_key[p.index].nunique() == n_solvers)
        .astype(bool)
    )
    left_out = (~common).groupby([df[c] for c in solver_cols], dropna=False).sum()
    comparable = bool(common.any())
    if comparable:
        df = df[common]
    ok = df[success].astype(bool)
    if penalty is None:
        good = df.loc[ok, cost]
        penalty = 10.0 * float(good.max()) if len(good) else 1.0
    charged = np.where(ok, df[cost].astype(float), penalty)
    work = df.assign(_charged=charged, _ok=ok)
    rows = []
    for key, group in work.groupby(list(solver_cols), sort=True, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(solver_cols, key))
        row["n_problems"] = int(group[list(problem_cols)].drop_duplicates().shape[0])
        row["n_not_common"] = int(left_out.get(key if len(key) > 1 else key[0], 0))
        row["success_rate"] = float(group["_ok"].mean())
        row["shifted_gm"] = shifted_geometric_mean(group["_charged"], shift)
        if iterations in group:
            row["mean_iterations"] = float(group[iterations].mean())
        rows.append(row)
    table = pd.DataFrame(rows)
    best = table["shifted_gm"].min()
    table["shifted_gm_rel"] = table["shifted_gm"] / best if best > 0 and comparable else np.nan
    return table


def key_column(df: pd.DataFrame, columns: Sequence[str], sep: str) -> pd.Series:
    """Row-wise text key of ``columns`` (missing values spelled out, not dropped)."""
    return df[list(columns)].apply(lambda col: col.map(str)).agg(sep.join, axis=1)


def cost_matrix(
    df: pd.DataFrame,
    solver_cols: Sequence[str],
    problem_cols: Sequence[str],
    cost: str = "solve_time_ms",
    success: str = "success",
) -> pd.DataFrame:
    """(problems, solvers) cost table: ``inf`` for a failure, ``NaN`` for a run not made."""
    solver_key = key_column(df, solver_cols, "/")
    problem_key = key_column(df, problem_cols, "|") if problem_cols else "all"
    value = np.where(df[success].astype(bool), df[cost].astype(float), np.inf)
    table = pd.DataFrame({"problem": problem_key, "solver": solver_key, "cost": value})
    return table.pivot_table(
        index="problem", columns="solver", values="cost", aggfunc="min", dropna=False
    )
