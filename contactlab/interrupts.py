"""What a Ctrl-C looks like once it has passed through other code.

A ``KeyboardInterrupt`` does not always arrive as itself. Raised inside a compiled numba
kernel it comes back as a ``SystemError`` ("returned a result with an exception set");
raised while a C extension initialises (scipy's HiGHS wrapper, loaded on the first import
of :mod:`scipy.optimize`) it comes back as ``ImportError: initialization failed``. In both
the interrupt is kept in the exception's cause or context chain, which is what the
command line looks for.

A ``KeyboardInterrupt`` can also be lost: raised in Python code that C code called back and
whose error that C code then clears (a rare race, met as a run that went on stepping after
its Ctrl-C). :func:`install` makes Python's handler also remember the interrupt, and a run
loop asks :data:`PENDING` at every step, so a lost one still stops the run there.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

#: exit code of an interrupted command (128 + SIGINT)
INTERRUPTED = 130

#: set when an interrupt left a C extension half initialised (see :func:`interrupted`)
HALF_INITIALISED = False

#: set by the handler of :func:`install` when a Ctrl-C arrived (read by run loops)
PENDING = False


def _remember_and_raise(signum: int, frame: FrameType | None) -> None:
    global PENDING
    PENDING = True
    raise KeyboardInterrupt


def install() -> None:
    """Remember every Ctrl-C (:data:`PENDING`) as well as raising it, where SIGINT has
    Python's own handler and this is the main thread (elsewhere nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _remember_and_raise)


def caused_by_interrupt(err: BaseException) -> bool:
    """Whether ``err`` is a ``KeyboardInterrupt`` or has one in its cause or context chain."""
    seen: set[int] = set()
    link: BaseException | None = err
    while link is not None and id(link) not in seen:
        if isinstance(link, KeyboardInterrupt):
            return True
        seen.add(id(link))
        link = link.__cause__ or link.__context__
    return False


def interrupted(err: BaseException) -> bool:
    """Whether ``err`` is an interrupt; remembers one that broke an extension's import.

    A half-initialised extension module (pybind11's, for instance) can abort the
    interpreter's shutdown ("Fatal Python error: PyThreadState_Get ... runtime state:
    finalizing"), so :func:`contactlab.launch.run` then ends the process without it.
    """
    global HALF_INITIALISED
    if not caused_by_interrupt(err):
        return False
    link: BaseException | None = err
    while link is not None and not isinstance(link, KeyboardInterrupt):
        if isinstance(link, ImportError):
            HALF_INITIALISED = True
        link = link.__cause__ or link.__context__
    return True
