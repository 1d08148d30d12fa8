"""Progress of long runs, comparisons and sweeps, on stderr.

On a terminal a live bar (tqdm) redraws itself in place.  Anywhere else (a
log file, a pipe, a CI job) a redrawing bar would leave one carriage-return
update per redraw in the log; there :func:`progress_bar` writes whole lines
instead: one at the first update after :data:`DELAY_S` seconds, then at most
one every :data:`LOG_INTERVAL_S` seconds, and a final line with the count and
the elapsed time when the work ends.  Both stay silent for work that shows no
progress within :data:`DELAY_S` seconds (a quick run, or one whose error is then
the only line).
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Any

#: seconds of work before anything is shown (short runs print no progress at all)
DELAY_S = 1.0
#: seconds between two progress lines when stderr is not a terminal
LOG_INTERVAL_S = 30.0


def is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is an interactive terminal (a closed or odd stream is not)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class LineProgress:
    """Progress as whole lines (no carriage returns), for logs: the interface of
    the tqdm calls used here (``update``, ``close``, context manager)."""

    def __init__(
        self,
        total: int | None,
        desc: str = "",
        unit: str = "it",
        initial: int = 0,
        file: IO[str] | None = None,
        delay: float | None = None,
        interval: float | None = None,
    ) -> None:
        self.total = total
        self.desc = desc
        self.unit = unit
        self.n = initial
        self.file = file
        self.delay = DELAY_S if delay is None else delay
        self.interval = LOG_INTERVAL_S if interval is None else interval
        self.start = time.monotonic()
        self.last: float | None = None
        self.closed = False

    def _line(self) -> str:
        done = f"{self.n}/{self.total}" if self.total is not None else str(self.n)
        head = f"{self.desc}: " if self.desc else ""
        return f"{head}{done} {self.unit}s, {time.monotonic() - self.start:.0f} s"

    def _write(self, text: str) -> None:
        stream = self.file if self.file is not None else sys.stderr
        print(text, file=stream, flush=True)

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.start < self.delay:
            return
        if self.last is None or now - self.last >= self.interval:
            self.last = now
            self._write(self._line())

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.last is not None:  # only after a line was shown: a quick failure stays one line
            finished = self.total is None or self.n >= self.total
            self._write(self._line() + (" (done)" if finished else " (stopped)"))

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class _Silent:
    """No progress at all (``--quiet``)."""

    n = 0

    def update(self, n: int = 1) -> None:
        self.n += n

    def close(self) -> None:
        pass

    def __enter__(self) -> _Silent:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def progress_bar(
    total: int | None,
    desc: str = "",
    unit: str = "it",
    initial: int = 0,
    disable: bool = False,
    file: IO[str] | None = None,
) -> Any:
    """A progress display on ``file`` (stderr by default) that suits where it goes.

    A terminal gets a tqdm bar shown after :data:`DELAY_S` seconds; anything else
    gets :class:`LineProgress`.  ``disable`` shows nothing.  The object has
    ``update(n)``, ``close()`` and works as a context manager.
    """
    if disable:
        return _Silent()
    stream = file if file is not None else sys.stderr
    if not is_terminal(stream):
        return LineProgress(total, desc, unit, initial, file=file)
    from tqdm import tqdm

    return tqdm(
        total=total,
        desc=desc or None,
        unit=unit,
        initial=initial,
        delay=DELAY_S,
        file=stream,
        dynamic_ncols=True,
    )
