"""The per-step table: rows appended one by one give the frame of the rows as a list."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt

from contactlab.step_table import BATCH, StepTable


def _rows() -> list[dict]:
    """Rows of a run: a fixed layout (the fast path), then rows that change it."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(40):  # past the capacity: the columns grow
        rows.append(
            {
                "step": i,
                "t": 1e-3 * (i + 1),
                "energy": float(rng.normal()),
                "status": "optimal" if i % 7 else "max_iterations",
                "iterations": int(rng.integers(0, 50)),
                "n_sliding": np.float64(i % 3),
            }
        )
    rows.append({**rows[-1], "step": 40, "iterations": 2.5})  # an integer column gets a float
    rows.append({**rows[-1], "step": 41, "energy": "nan?"})  # a number column gets a string
    rows.append({"step": 42, "t": 0.043, "extra": 1.0})  # keys missing, one new
    rows.append({"t": 0.044, "step": 43, "energy": 1.0})  # another order
    rows.append({**rows[5], "step": 44, "flag": True})  # a bool is not a number
    rows.append({**rows[5], "step": 45, "flag": False})
    # the same value types in another key order (two float columns swapped), then the layout
    # before it again
    swapped = ("step", "energy", "t", "status", "iterations", "n_sliding", "flag")
    rows.append({k: {**rows[5], "step": 46, "t": 9.0, "flag": True}[k] for k in swapped})
    rows.append({**rows[5], "step": 47, "flag": True})
    return rows


def _expected(rows: list[dict]) -> pd.DataFrame:
    """The frame of the rows: a column per key in order of first appearance, NaN (numbers)
    or None (other values) where a row lacks the key."""
    order: list[str] = []
    for r in rows:
        order += [k for k in r if k not in order]
    data = {}
    for key in order:
        values = [r.get(key) for r in rows]
        present = [v for v in values if v is not None]
        numbers = all(
            isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
            for v in present
        )
        if numbers:
            column = np.array([np.nan if v is None else float(v) for v in values])
            if all(isinstance(v, (int, np.integer)) for v in values):
                column = column.astype(np.int64)
            data[key] = column
        else:
            data[key] = values
    return pd.DataFrame(data)


def test_appended_rows_equal_the_rows_frame() -> None:
    rows = _rows()
    table = StepTable(16)
    for r in rows:
        table.append(r)
    assert len(table) == len(rows)
    pdt.assert_frame_equal(table.frame(), _expected(rows))
    # each row reads back with its values (the keys it lacks: NaN or None)
    for i in (0, 17, 39, 44, 46, 47):
        back = table[i]
        assert {k: back[k] for k in rows[i]} == rows[i]
        assert back["extra"] != back["extra"] and back["flag"] in (None, rows[i].get("flag"))


def test_uniform_rows_keep_their_types() -> None:
    rows = _rows()[:40]
    table = StepTable(4)
    for r in rows:
        table.append(r)
    frame = table.frame()
    pdt.assert_frame_equal(frame, _expected(rows))
    assert frame["step"].dtype == np.int64 and frame["iterations"].dtype == np.int64
    assert list(frame["status"]) == [r["status"] for r in rows]
    # the statuses are stored once per distinct value
    assert len({id(s) for s in table.column("status")}) == 2


def test_rows_read_while_appended_equal_the_rows_frame() -> None:
    """Many rows of one layout (held back and written into the columns in batches), read
    back between appends, then rows of another layout: every read sees every row so far."""
    base = _rows()
    rows = [{**base[i % 40], "step": i} for i in range(3 * BATCH + 5)] + base[40:]
    table = StepTable(8)
    for i, r in enumerate(rows):
        table.append(r)
        if i % 37 == 0:  # a read between appends sees the rows so far
            assert table[i] == {**table[i], **r}
            assert list(table.column("status")) == [x["status"] for x in rows[: i + 1]]
    assert len(table) == len(rows)
    pdt.assert_frame_equal(table.frame(), _expected(rows))


def test_rows_appended_as_values_equal_the_rows_frame() -> None:
    """Rows given as keys and values (a compiled step's row, with or without the values'
    types, mixed with rows given as dicts, across layout changes) give the frame of the
    rows as dicts."""
    base = _rows()
    rows = [{**base[i % 40], "step": i} for i in range(2 * BATCH + 3)] + base[40:]
    table = StepTable(8)
    for i, r in enumerate(rows):
        keys, values = tuple(r), tuple(r.values())
        if i % 5 == 0:
            table.append(r)
        elif i % 2:
            table.append_values(keys, values, tuple(map(type, values)))
        else:
            table.append_values(keys, values)
    assert len(table) == len(rows)
    pdt.assert_frame_equal(table.frame(), _expected(rows))
