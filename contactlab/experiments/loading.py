"""Load any results folder (a run, a comparison or a sweep) into pandas and numpy.

>>> res = load_results("results/scratch/box-incline")     # doctest: +SKIP
>>> res.kind, res.steps.columns[:3].tolist()               # doctest: +SKIP
('run', ['t', 'kinetic_energy', 'potential_energy'])

A **run** folder holds ``summary.json``, ``steps.csv`` and ``trajectory.npz``
and loads as :class:`contactlab.results.RunData` (``summary`` dict, ``steps``
DataFrame, ``trajectory`` dict of arrays: ``t``, ``body_names``,
``position`` (T+1, nb, 3), ``rotation`` (T+1, nb, 3, 3), ``twist`` (T+1, nb, 6));
a **comparison** folder ``comparison.csv`` and one run folder per
combination under ``runs/``; a **sweep** folder ``sweep.parquet`` (or
``sweep.csv``) and its runs under ``runs/``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from contactlab.errors import ConfigurationError
from contactlab.results import RunData

RUN_FILES = ("summary.json", "steps.csv", "trajectory.npz")


def folder_kind(folder: Path | str) -> str:
    """``"run"``, ``"comparison"`` or ``"sweep"`` by the files the folder holds."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(
            f"{str(folder)!r} is a file, not a results folder; pass the folder written by "
            "run, compare or sweep"
        )
    if not folder.is_dir():
        raise ConfigurationError(f"results folder {str(folder)!r} does not exist")
    if (folder / "sweep.parquet").exists() or (folder / "sweep.csv").exists():
        return "sweep"
    if (folder / "comparison.csv").exists():
        return "comparison"
    if (folder / "summary.json").exists():
        return "run"
    raise ConfigurationError(
        f"{str(folder)!r} is not a results folder: it holds none of summary.json, "
        "comparison.csv, sweep.parquet; pass the folder written by run, compare or sweep"
    )


@dataclass
class TableResults:
    """A comparison or sweep folder: its table and lazy access to its runs."""

    folder: Path
    table: pd.DataFrame
    kind: str
    aggregates: pd.DataFrame | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def run(self, index: int) -> RunData:
        """The run of row ``index`` of the table."""
        return load_run_folder(self.folder / str(self.table.iloc[index]["folder"]))


def load_run_folder(folder: Path | str) -> RunData:
    """Read a run folder with :func:`contactlab.results.load_run`.

    A run that failed before its first step has only ``summary.json``; it
    loads with an empty ``steps`` table and no trajectory.
    """
    from contactlab.results import load_run, read_summary_file

    folder = Path(folder)
    summary_path = folder / "summary.json"
    if folder.exists() and not folder.is_dir():
        raise ConfigurationError(f"{str(folder)!r} is a file, not a run folder; pass the folder")
    if not folder.exists():
        raise ConfigurationError(f"run folder {str(folder)!r} does not exist")
    if not summary_path.exists():
        raise ConfigurationError(f"{str(folder)!r} holds no summary.json; it is not a run folder")
    if (folder / "steps.csv").exists():
        return load_run(folder)
    summary = read_summary_file(folder)
    if summary.get("steps") or (folder / "trajectory.npz").exists():
        # only a run that failed before its first step has no table
        raise ConfigurationError(
            f"{str(folder)!r} is not a complete results folder: steps.csv is missing "
            f"(the summary records {summary.get('steps')} steps); write the run again with "
            "`contactlab run`"
        )
    return RunData(folder, summary, pd.DataFrame(), {})


def load_table(folder: Path | str) -> TableResults:
    """Load a comparison or sweep folder (a run folder is an error)."""
    res = load_results(folder)
    if not isinstance(res, TableResults):
        raise ConfigurationError(
            f"{str(folder)!r} is a run folder; a comparison or sweep folder was expected"
        )
    return res


def load_results(folder: Path | str) -> RunData | TableResults:
    """Load a run, comparison or sweep folder (detected by its files)."""
    folder = Path(folder)
    kind = folder_kind(folder)
    if kind == "run":
        return load_run_folder(folder)
    if kind == "comparison":
        table = read_table(folder / "comparison.csv", TABLE_COLUMNS)
        extra: dict[str, Any] = {}
        skipped = folder / "skipped.csv"
        if skipped.exists():
            extra["skipped"] = read_table(skipped, ())
        return TableResults(folder, table, kind, extra=extra)
    parquet = folder / "sweep.parquet"
    table = read_table(parquet if parquet.exists() else folder / "sweep.csv", ("folder",))
    agg_path = folder / "aggregates.csv"
    aggregates = read_table(agg_path, ()) if agg_path.exists() else None
    return TableResults(folder, table, kind, aggregates=aggregates)


#: columns every comparison table holds
TABLE_COLUMNS = ("formulation", "model", "solver", "folder")


def read_table(path: Path, columns: tuple[str, ...]) -> pd.DataFrame:
    """A results table (CSV or Parquet) with ``columns``; one :class:`ResultsError` otherwise."""
    from contactlab.errors import ResultsError

    try:
        if path.suffix == ".parquet":
            table = pd.read_parquet(path)
        else:
            table = pd.read_csv(path)
    except Exception as err:  # pandas' ParserError, UnicodeDecodeError, pyarrow's errors
        if not isinstance(err, (OSError, ValueError)) and "arrow" not in type(err).__module__:
            raise
        reason = " ".join(str(err).split())[:200] or type(err).__name__
        raise ResultsError(
            f"{str(path)!r} is unreadable or corrupt ({reason}); write it again (the command "
            "that made the folder rebuilds it and reuses its finished runs)"
        ) from err
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ResultsError(
            f"{str(path)!r} is not a results table: it has no column {missing[0]!r} (columns: "
            f"{', '.join(map(str, table.columns[:6])) or 'none'}); write it again with the "
            "command that made the folder"
        )
    return table
