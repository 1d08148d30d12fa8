"""Entry point of the command line: Ctrl-C while the program starts is an interrupt too.

Importing :mod:`contactlab.cli` loads numpy, scipy and numba (seconds on a busy or cold
machine); a Ctrl-C then would end in a traceback of the import machinery.  Here it is
the same one line and exit code 130 as a Ctrl-C during a command.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: exit code of an interrupted command (128 + SIGINT), as :func:`contactlab.cli.main`
INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    """Import the command line and run it; a Ctrl-C outside a command is exit 130."""
    try:
        from contactlab.cli import main as cli_main

        code = cli_main(argv)
    except KeyboardInterrupt:
        print("contactlab: interrupted; nothing was written", file=sys.stderr)
        code = INTERRUPTED
    if code == INTERRUPTED:
        _handled_interrupt()
    return code


def _handled_interrupt() -> None:
    """Tell CPython that the Ctrl-C was handled.

    An interrupt that passed through a ``PyRun_*`` call inside an extension module's
    import (numba's start-up runs code that way) marks itself unhandled in CPython, which
    then ends the process by SIGINT (status -2) after our exit code 130 was chosen.
    """
    try:
        import ctypes

        ctypes.c_int.in_dll(ctypes.pythonapi, "_Py_UnhandledKeyboardInterrupt").value = 0
    except (ImportError, ValueError, AttributeError, OSError):  # another Python: no such flag
        pass
