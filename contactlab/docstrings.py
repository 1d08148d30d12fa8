"""Descriptions read from docstrings, whole: the summary paragraph and the parameter entries.

``contactlab list`` shows what a scenario, formulation, model or joint kind
is and what each of its parameters means from their docstrings.  Entries
are written ``name : description`` (numpy style, with or without a
``Parameters`` heading), and a description continues on the following lines
that are indented deeper; both functions here join those lines, so nothing
is cut mid-sentence.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

_ENTRY = re.compile(r"^(?P<names>[A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_][\w]*)*)\s*:\s*(?P<text>.*)$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def doc_of(obj: Any) -> str:
    """The cleaned docstring of ``obj`` (``""`` when it has none)."""
    return inspect.getdoc(obj) or ""


def summary(doc: str) -> str:
    """The first paragraph of ``doc`` on one line."""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split())


def parameter_docs(doc: str) -> dict[str, str]:
    """``{name: description}`` of every ``name : description`` entry of ``doc``.

    The description takes in the lines below the entry that are indented
    deeper than it, up to a blank line or a line indented as far or less.
    ``a, b : text`` gives both names the text.  The first entry of a name wins.
    """
    lines = doc.splitlines()
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        found = _ENTRY.match(line.strip())
        if not found or not line.strip():
            i += 1
            continue
        depth = _indent(line)
        parts = [found.group("text").strip()]
        j = i + 1
        while j < len(lines) and lines[j].strip() and _indent(lines[j]) > depth:
            parts.append(lines[j].strip())
            j += 1
        text = " ".join(p for p in parts if p)
        for name in re.split(r"\s*,\s*", found.group("names")):
            out.setdefault(name, text)
        i = j
    return out
