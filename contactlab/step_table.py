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
        #: the columns in order, as (key, array or list, kind) for rows of the same keys
        self._plan: list[tuple[str, Any, int]] | None = None
        #: rows the numeric columns hold without growing
        self._room = 0
        #: the plan's keys, and the value types of a row it took: a row of the same keys
        #: and types is written without checking each value
        self._keys: tuple[str, ...] = ()
        self._types: tuple[type, ...] | None = None
        self._numbers: list[tuple[int, NDArray[Any]]] = []
        self._others: list[tuple[int, list[Any]]] = []
        #: the values of the last rows of the plan's keys and types, not yet in the columns
        self._pending: list[tuple[Any, ...]] = []

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
        plan = self._plan
        if plan is not None and self._n < self._room and len(row) == len(plan):
            types = self._types
            if types is not None:
                values = tuple(row.values())
                if tuple(map(type, values)) == types and tuple(row) == self._keys:
                    self._push(values)
                    return
            self._flush()
            if self._append_planned(row, plan):
                if types is None:
                    self._types = tuple(map(type, row.values()))
                return
        self._flush()
        self._append(row)
        self._plan = None
        self._types = None
        if len(row) == len(self._order):  # every column present: rows like it go fast
            numeric = self._numeric
            self._plan = [
                (key, numeric[key], _INT if key in self._ints else _FLOAT)
                if key in numeric
                else (key, self._other[key], _OTHER)
                for key in self._order
            ]
            self._room = min((c.size for c in numeric.values()), default=1 << 62)
            self._keys = tuple(self._order)
            self._numbers = [(j, c) for j, (_, c, kind) in enumerate(self._plan) if kind != _OTHER]
            self._others = [(j, c) for j, (_, c, kind) in enumerate(self._plan) if kind == _OTHER]

    def append_values(
        self,
        keys: tuple[str, ...],
        values: tuple[Any, ...],
        types: tuple[type, ...] | None = None,
    ) -> None:
        """Append the row ``dict(zip(keys, values))``; ``types`` the values' types when the
        caller knows them (else they are looked up). When the keys and types are those of
        the rows before, the values are kept as they are (no dict)."""
        if self._n < self._room and (keys is self._keys or keys == self._keys):
            if types is None:
                types = tuple(map(type, values))
            if types is self._types or types == self._types:
                # the same tuples next time: compared by identity
                self._keys, self._types = keys, types
                self._push(values)
                return
        self.append(dict(zip(keys, values, strict=True)))

    def _push(self, values: tuple[Any, ...]) -> None:
        """Keep a row of the plan's keys and types as its values, written by :meth:`_flush`."""
        pending = self._pending
        pending.append(values)
        self._n += 1
        if len(pending) >= BATCH:
            self._flush()

    def _flush(self) -> None:
        """Write the pending rows (values of the plan's keys, of the types of a row the plan
        took, so each fits its column) into the columns."""
        pending = self._pending
        if not pending:
            return
        n = self._n
        k = n - len(pending)
        columns = tuple(zip(*pending))
        for j, column in self._numbers:
            column[k:n] = columns[j]
        interned = self._interned
        for j, values_of in self._others:
            for value in columns[j]:
                hashable = type(value) is str or _hashable(value)
                values_of.append(interned.setdefault(value, value) if hashable else value)
        pending.clear()

    def _append_planned(self, row: Mapping[str, Any], plan: list[tuple[str, Any, int]]) -> bool:
        """Write ``row`` into the planned columns; ``False`` (nothing written) when its keys
        or value types differ from the plan's."""
        k = self._n
        for j, ((key, column, kind), (name, value)) in enumerate(zip(plan, row.items())):
            t = type(value)
            if (
                name != key
                or (kind == _INT and t not in _INTEGERS)
                or (kind == _FLOAT and t not in _NUMBERS)
            ):
                for _, values, done in plan[:j]:  # undo the lists' entries of this row
                    if done == _OTHER:
                        values.pop()
                return False
            if kind == _OTHER:
                hashable = t is str or _hashable(value)
                column.append(self._interned.setdefault(value, value) if hashable else value)
            else:
                column[k] = value
        self._n = k + 1
        return True

    def _append(self, row: Mapping[str, Any]) -> None:
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
        for key, column in self._numeric.items():  # a column the row lacks: room for it too
            if column.size <= k:
                self._numeric[key] = self._grow(column)
        if len(row) < len(self._order):
            self._ints.difference_update(key for key in self._numeric if key not in row)
        self._n = k + 1

    def column(self, key: str) -> Any:
        self._flush()
        if key in self._numeric:
            return self._numeric[key][: self._n]
        return self._other[key][: self._n]

    def __getitem__(self, i: int) -> dict[str, Any]:
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        self._flush()
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
        self._flush()
        data: dict[str, Any] = {}
        for key in self._order:
            column = self.column(key)
            if key in self._ints:
                column = column.astype(np.int64)
            data[key] = column.copy() if isinstance(column, np.ndarray) else list(column)
        return pd.DataFrame(data)


#: rows kept as tuples before they are written into the columns (at most)
BATCH = 64
#: column kinds of the planned rows
_FLOAT, _INT, _OTHER = 0, 1, 2
#: value types a planned float column takes (bools are not numbers here)
_NUMBERS = frozenset({float, int, np.float64, np.float32, np.int64, np.int32})
#: value types a planned integer column takes
_INTEGERS = frozenset({int, np.int64, np.int32})


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
