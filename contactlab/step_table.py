"""The per-step table of a run (the rows of ``steps.csv``), stored as columns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray


class StepTable:
    """The rows of ``steps.csv`` as columns: a float64 array per numeric metric.

    A list of one dict per step costs about 2 kB per step (the dict and a
    Python float per entry); the columns cost 8 bytes per value, grown by
    doubling, and any non-numeric value (a status) is stored once per distinct
    value.  Iterating yields each row as a dict, as the list did.
    """

    #: bytes per step of a typical row (about 30 metrics), for the memory estimate
    ROW_BYTES = 8 * 40

    def __init__(self, capacity: int = 16) -> None:
        self._capacity = max(int(capacity), 1)
        self._n = 0
        self._numeric: dict[str, NDArray[Any]] = {}
        self._other: dict[str, list[Any]] = {}
        self._order: list[str] = []
        self._interned: dict[Any, Any] = {}
        #: numeric columns whose every value so far was an integer (kept int64)
        self._ints: set[str] = set()

    @classmethod
    def from_columns(
        cls, columns: Mapping[str, Any], n: int, ints: frozenset[str] = frozenset()
    ) -> StepTable:
        """A table of ``n`` rows from whole columns (arrays of numbers, or lists of other
        values such as statuses), in the given order; the ``ints`` columns hold integers."""
        table = cls(n)
        for key, values in columns.items():
            table._order.append(key)
            if isinstance(values, np.ndarray):
                table._numeric[key] = np.array(values[:n], dtype=np.float64)
                if key in ints:
                    table._ints.add(key)
            else:
                table._other[key] = [table._interned.setdefault(v, v) for v in list(values)[:n]]
        table._n = n
        return table

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def _grow(self, column: NDArray[Any]) -> NDArray[Any]:
        bigger = np.full(max(16, 2 * column.size), np.nan)
        bigger[: column.size] = column
        return bigger

    def append(self, row: Mapping[str, Any]) -> None:
        k = self._n
        for key, value in row.items():
            if key not in self._numeric and key not in self._other:
                self._order.append(key)
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, bool
                ):
                    self._numeric[key] = np.full(max(self._capacity, k + 1), np.nan)
                    if k == 0 and isinstance(value, (int, np.integer)):
                        self._ints.add(key)
                else:
                    self._other[key] = [None] * k
            if key in self._numeric:
                if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
                    value, bool
                ):
                    column = self._numeric[key]
                    if k >= column.size:
                        column = self._numeric[key] = self._grow(column)
                    column[k] = value
                    if not isinstance(value, (int, np.integer)):
                        self._ints.discard(key)
                    continue
                # a value that is not a number after numbers: the column becomes a list
                column = self._numeric.pop(key)
                ints = key in self._ints
                self._ints.discard(key)
                self._other[key] = [int(x) if ints else float(x) for x in column[:k]]
            values = self._other[key]
            values.extend([None] * (k - len(values)))
            values.append(self._interned.setdefault(value, value) if _hashable(value) else value)
        for values in self._other.values():
            if len(values) < k + 1:
                values.append(None)
        if len(row) < len(self._order):
            self._ints.difference_update(key for key in self._numeric if key not in row)
        self._n = k + 1

    def column(self, key: str) -> Any:
        if key in self._numeric:
            return self._numeric[key][: self._n]
        return self._other[key][: self._n]

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        out: dict[str, Any] = {}
        for key in self._order:
            if key in self._numeric:
                x = float(self._numeric[key][i])
                out[key] = int(x) if key in self._ints else x
            else:
                out[key] = self._other[key][i]
        return out

    def __iter__(self) -> Any:
        return (self[i] for i in range(self._n))

    def frame(self) -> pd.DataFrame:
        data: dict[str, Any] = {}
        for key in self._order:
            column = self.column(key)
            if key in self._ints:
                column = column.astype(np.int64)
            data[key] = column.copy() if isinstance(column, np.ndarray) else list(column)
        return pd.DataFrame(data)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
