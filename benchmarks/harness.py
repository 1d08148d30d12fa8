"""What the benchmarks share: their command line (``--out``), their clocks, the sentence
that describes the machine, and the writing of a table and its report.

Every benchmark writes ``<name>.csv`` (its measurements) and ``<name>.md`` (the report a
reader wants) to ``results/benchmarks/`` unless ``--out`` says otherwise (:func:`write`).
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

#: Where the benchmarks write their tables and reports.
RESULTS = Path("results/benchmarks")


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A benchmark's command line, described by the first line of its docstring ``doc``,
    with ``--out`` (the folder of its table and report, :data:`RESULTS` by default)."""
    out = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    out.add_argument("--out", type=Path, default=RESULTS, help="folder of the table and report")
    return out


def median_time(
    fn: Callable[[], object], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Median time of ``repeat`` calls of ``fn`` [s] on ``clock``, after one untimed call
    (which compiles or warms what the first call would)."""
    fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return float(np.median(times))


def best_time(fn: Callable[[], object], budget: float) -> float:
    """Fastest of repeated batches [s of CPU time per call], about ``budget`` s in total.

    Thread CPU time (not wall time) and the minimum over batches (as in
    :mod:`timeit`) are the estimates least disturbed by other processes
    sharing the machine.
    """
    clock = time.thread_time
    fn()
    t0 = clock()
    fn()
    one = max(clock() - t0, 1e-7)
    per_batch = max(1, int(0.02 / one))
    batches = max(5, int(budget / (per_batch * one)))
    samples = []
    for _ in range(min(batches, 200)):
        t0 = clock()
        for _ in range(per_batch):
            fn()
        samples.append((clock() - t0) / per_batch)
    return float(np.min(samples))


def load_average() -> float:
    """The one-minute load average of the machine (``nan`` where the system keeps none)."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def machine(load: bool = False, at: str = "start") -> str:
    """``Machine: <processor>, Python <version>, numpy <version>``; with ``load``, the
    number of cores and the load average now (``at`` the start or the end of a run) after
    the processor."""
    cpu = platform.processor() or platform.machine()
    shared = (
        f", {os.cpu_count()} cores, load average {load_average():.1f} at the {at} (shared machine)"
        if load
        else ""
    )
    return f"Machine: {cpu}{shared}, Python {platform.python_version()}, numpy {np.__version__}"


def load_span(before: float) -> str:
    """The sentence of a section timed on the shared machine: the load average ``before``
    it and now, after it."""
    return f"Load average {before:.2f} before, {load_average():.2f} after (2 cores, shared)."


def pile_phases(drop_steps: int, rest_steps: int) -> tuple[tuple[str, str, int], ...]:
    """The two phases of the box-pile benchmarks, ``(phase, layout, steps)``: from the drop
    (layout ``drop``, ``drop_steps`` steps) and at rest (layout ``stacked``, ``rest_steps``)."""
    return (("drop", "drop", drop_steps), ("rest", "stacked", rest_steps))


def markdown_table(df: pd.DataFrame) -> str:
    """``df`` as a Markdown table: floats to three significant digits, missing cells empty."""

    def cell(v: object) -> str:
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return ""
        return f"{v:.3g}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(False)]
    return "\n".join(lines)


def write(
    out: Path, name: str, df: pd.DataFrame, lines: list[str], float_format: str | None = None
) -> None:
    """``df`` to ``out/<name>.csv`` and the report ``lines`` to ``out/<name>.md`` (both
    whole, the folder made if missing); the report is printed too."""
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / f"{name}.csv", index=False, float_format=float_format)
    text = "\n".join(lines)
    (out / f"{name}.md").write_text(text + "\n")
    print(text)


def exponent(x: np.ndarray, t: np.ndarray) -> float:
    """The scaling exponent ``p`` of ``t ~ x^p``: the least-squares slope of ``log t`` over
    ``log x``."""
    return float(np.polyfit(np.log(np.asarray(x, float)), np.log(np.asarray(t, float)), 1)[0])


def exponents_text(x: pd.Series, df: pd.DataFrame, columns: tuple[str, ...]) -> str:
    """The scaling exponents of the time ``columns`` of ``df`` over ``x`` (rows of the
    same index), as ``name p, ...`` with each column's ``_s`` (seconds) suffix dropped."""
    return ", ".join(f"{col.removesuffix('_s')} {exponent(x, df[col]):.2f}" for col in columns)


def exponents_table(
    head: str, x: str, ranges: dict[str, pd.DataFrame], parts: dict[str, str]
) -> list[str]:
    """A Markdown table of scaling exponents: a row per time column of ``parts`` (column:
    label, under the header ``head``), a column per range of ``ranges`` (label: its rows),
    each the exponent of that time over the column ``x`` (:func:`exponent`)."""
    lines = ["| " + " | ".join([head, *ranges]) + " |", "| --- |" + " ---: |" * len(ranges)]
    for col, label in parts.items():
        cells = [f"{exponent(rows[x], rows[col]):.2f}" for rows in ranges.values()]
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return lines
