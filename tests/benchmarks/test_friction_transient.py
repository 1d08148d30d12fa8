"""The long-transient summary of ``benchmarks.bench_friction`` counts what it claims."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks.bench_friction import transient_summary


def test_transient_summary_counts_and_quantiles() -> None:
    """On a table built by hand every count and quantile is known exactly.

    Step times 1..100 ms: the median is 50.5, the 90 % and 99 % quantiles (linear
    interpolation between order statistics) 90.1 and 99.01, the largest 100.  Two
    capped steps (3 and 7), three natural maps above 1e-6 among values and NaN
    (a step without a measured map is not counted, nor taken as the largest).
    """
    n = 100
    status = ["optimal"] * n
    status[3] = status[7] = "max_iterations"
    natural = np.full(n, 5e-7)
    natural[[3, 7, 50]] = [2e-6, 3e-3, 1.1e-6]
    natural[[10, 11]] = np.nan
    iterations = np.arange(n, dtype=float) % 10  # median 4.5, largest 9
    table = pd.DataFrame(
        {
            "status": status,
            "natural_map": natural,
            "iterations": iterations,
            "outer": np.zeros(n),
            "step_ms": np.arange(1, n + 1, dtype=float),
            "contacts": np.arange(n, dtype=float),
        }
    )
    s = transient_summary(table, 1e-6)
    assert s["steps"] == n
    assert s["not_optimal"] == 2 and s["first_not_optimal"] == 3
    assert s["above_tol"] == 3 and s["max_natural_map"] == 3e-3
    assert s["iterations_median"] == 4.5 and s["iterations_max"] == 9
    assert s["step_ms_median"] == 50.5 and s["step_ms_max"] == 100
    np.testing.assert_allclose([s["step_ms_p90"], s["step_ms_p99"]], [90.1, 99.01], rtol=1e-12)
    assert s["contacts_max"] == n - 1


def test_transient_summary_without_failures_or_maps() -> None:
    """No capped step: no first one; no measured natural map: the largest is NaN, none above."""
    table = pd.DataFrame(
        {
            "status": ["optimal"] * 3,
            "natural_map": [np.nan] * 3,
            "iterations": [1.0, 2.0, 3.0],
            "outer": [2.0, 5.0, 1.0],
            "step_ms": [1.0, 2.0, 3.0],
            "contacts": [0.0, 4.0, 8.0],
        }
    )
    s = transient_summary(table, 1e-6)
    assert s["not_optimal"] == 0 and np.isnan(s["first_not_optimal"])
    assert s["above_tol"] == 0 and np.isnan(s["max_natural_map"])
    assert s["outer_max"] == 5
