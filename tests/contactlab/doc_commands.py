"""The ``contactlab ...`` command lines a documentation page shows, for the tests that
run them (```bash blocks, ``test_docs.py``) and parse them (the others,
``test_docs_examples.py``)."""

from __future__ import annotations

import re
from pathlib import Path

FENCE = re.compile(r"^```(\w*)\s*$")
INLINE = re.compile(r"`(?:\.venv/bin/)?(contactlab [^`]+)`")


def page_commands(page: Path) -> list[tuple[int, str, str | None]]:
    """``(line, command, block)`` of every ``contactlab`` command of ``page``: in a fenced
    code block (``block`` its language, ``""`` for none; lines continued by a backslash
    joined) or in an inline code span outside the blocks (``block`` ``None``)."""
    out: list[tuple[int, str, str | None]] = []
    language: str | None = None
    pending = ""
    for number, line in enumerate(page.read_text().splitlines(), 1):
        match = FENCE.match(line.strip())
        if match:
            language = None if language is not None else match.group(1)
            continue
        if language is None:
            out += [(number, m.group(1), None) for m in INLINE.finditer(line)]
            continue
        text = pending + line.strip()
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        if text.startswith("contactlab "):
            out.append((number, text, language))
    return out
