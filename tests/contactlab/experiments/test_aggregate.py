"""Aggregates against values computed by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from contactlab.errors import ConfigurationError
from contactlab.experiments.aggregate import (
    cost_matrix,
    performance_profile,
    performance_ratios,
    shifted_geometric_mean,
    solver_table,
)


def test_shifted_geometric_mean_hand_values() -> None:
    # (0 + 10)(10 + 10)(30 + 10) = 8000 = 20^3, so the mean is 20 - 10 = 10
    assert shifted_geometric_mean([0.0, 10.0, 30.0], 10.0) == pytest.approx(10.0, rel=1e-14)
    # (6 + 10)(15 + 10) = 400 = 20^2
    assert shifted_geometric_mean([6.0, 15.0], 10.0) == pytest.approx(10.0, rel=1e-14)
    # a constant sample is its own mean for any shift
    assert shifted_geometric_mean([3.5] * 4, 1.0) == pytest.approx(3.5, rel=1e-14)
    # between the geometric mean (shift -> 0) and the arithmetic mean (shift -> inf)
    x = np.array([1.0, 100.0])
    assert 10.0 < shifted_geometric_mean(x, 10.0) < 50.5


def test_shifted_geometric_mean_rejects_bad_input() -> None:
    with pytest.raises(ConfigurationError, match="penalty"):
        shifted_geometric_mean([1.0, np.inf])
    with pytest.raises(ConfigurationError, match="no values"):
        shifted_geometric_mean([])
    with pytest.raises(ConfigurationError, match="shift"):
        shifted_geometric_mean([1.0], 0.0)


def test_performance_profile_hand_values() -> None:
    # problems x solvers (A, B); B fails problem 3; nobody solves problem 4
    costs = np.array([[1.0, 2.0], [4.0, 2.0], [3.0, np.inf], [np.nan, np.inf]])
    r = performance_ratios(costs)
    np.testing.assert_array_equal(r[:3], [[1.0, 2.0], [2.0, 1.0], [1.0, np.inf]])
    assert np.all(np.isinf(r[3]))
    rho = performance_profile(costs, [1.0, 1.5, 2.0, 1e6])
    np.testing.assert_allclose(rho[:, 0], [2 / 4, 2 / 4, 3 / 4, 3 / 4])
    np.testing.assert_allclose(rho[:, 1], [1 / 4, 1 / 4, 2 / 4, 2 / 4])


def test_solver_table_hand_values() -> None:
    df = pd.DataFrame(
        {
            "solver": ["a", "a", "b", "b"],
            "problem": [1, 2, 1, 2],
            "solve_time_ms": [6.0, 15.0, 0.0, 5.0],
            "success": [True, True, True, False],
            "iterations_mean": [2.0, 4.0, 10.0, 20.0],
        }
    )
    table = solver_table(df, ["solver"], ["problem"], shift=10.0).set_index("solver")
    # a: (16 * 25)^(1/2) - 10 = 10; b: failure charged 10 x 15 = 150 -> (10 * 160)^(1/2) - 10 = 30
    assert table.loc["a", "shifted_gm"] == pytest.approx(10.0, rel=1e-12)
    assert table.loc["b", "shifted_gm"] == pytest.approx(30.0, rel=1e-12)
    assert table.loc["a", "shifted_gm_rel"] == pytest.approx(1.0)
    assert table.loc["b", "shifted_gm_rel"] == pytest.approx(3.0, rel=1e-12)
    assert table.loc["a", "success_rate"] == 1.0 and table.loc["b", "success_rate"] == 0.5
    assert table.loc["b", "mean_iterations"] == 15.0
    assert (table["n_problems"] == 2).all()
    costs = cost_matrix(df, ["solver"], ["problem"])
    assert costs.loc["2", "b"] == np.inf and costs.loc["1", "a"] == 6.0


def test_solvers_are_ranked_over_the_problems_every_one_attempted() -> None:
    # A ran on six problems, B only on the first two; on those two B takes twice A's
    # time, while A is very slow on the four B never saw.  Over all problems A would
    # look slower; over the common two, A is best and B is exactly twice as slow
    # (shift 0+: a shifted geometric mean with a tiny shift is the geometric mean).
    rows = [
        {"solver": "A", "problem": p, "solve_time_ms": 1.0 if p < 2 else 1e3, "success": True}
        for p in range(6)
    ]
    rows += [{"solver": "B", "problem": p, "solve_time_ms": 2.0, "success": True} for p in range(2)]
    table = solver_table(pd.DataFrame(rows), ["solver"], ["problem"], shift=1e-9)
    table = table.set_index("solver")
    assert table.loc["A", "n_problems"] == table.loc["B", "n_problems"] == 2
    assert (table.loc["A", "n_not_common"], table.loc["B", "n_not_common"]) == (4, 0)
    assert table.loc["A", "shifted_gm_rel"] == 1.0
    assert table.loc["B", "shifted_gm_rel"] == pytest.approx(2.0, rel=1e-6)
