"""Sweep specifications written from Python values: a test states its grid as data and
varies it by key (``{**SWEEP, "dt": [...]}``) rather than by editing TOML text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def toml_value(value: Any) -> str:
    """``value`` (a bool, number, string, list or table of them) as a TOML value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str | Path):
        return json.dumps(str(value))  # a TOML basic string: JSON's escapes
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"no TOML value for {type(value).__name__}")


def _table(header: str, fields: dict[str, Any]) -> list[str]:
    return ["", header, *(f"{k} = {toml_value(v)}" for k, v in fields.items())]


def write_sweep(
    path: Path, sweep: dict[str, Any], scenarios: list[dict[str, Any]], **tables: dict[str, Any]
) -> Path:
    """Writes the sweep ``[sweep]`` with further tables (``model_options``, ...) and one
    ``[[scenarios]]`` entry per item of ``scenarios`` to ``path``; returns ``path``."""
    lines = _table("[sweep]", sweep)
    for name, fields in tables.items():
        lines += _table(f"[{name}]", fields)
    for scenario in scenarios:
        lines += _table("[[scenarios]]", scenario)
    path.write_text("\n".join(lines).lstrip("\n") + "\n")
    return path
