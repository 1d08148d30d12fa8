"""Entry point of the command line: Ctrl-C while the program starts is an interrupt too.

Importing :mod:`contactlab.cli` loads numpy, scipy and numba (seconds on a busy or cold
machine); a Ctrl-C then would end in a traceback of the import machinery.  Here it is
the same one line and exit code 130 as a Ctrl-C during a command.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from contactlab import interrupts
from contactlab.interrupts import INTERRUPTED


def main(argv: Sequence[str] | None = None) -> int:
    """Import the command line and run it; a Ctrl-C outside a command is exit 130."""
    try:
        from contactlab.cli import main as cli_main

        code = cli_main(argv)
    except Exception as err:
        # an interrupt while an extension module initialises is an ImportError whose
        # cause is the KeyboardInterrupt (contactlab.interrupts)
        if not interrupts.interrupted(err):
            raise
        print("contactlab: interrupted; nothing was written", file=sys.stderr)
        code = INTERRUPTED
    except KeyboardInterrupt:
        print("contactlab: interrupted; nothing was written", file=sys.stderr)
        code = INTERRUPTED
    if code == INTERRUPTED:
        _handled_interrupt()
    return code


def run() -> None:
    """The ``contactlab`` script: :func:`main`, then exit with its code.

    After a Ctrl-C that left a C extension half initialised, the process ends without the
    interpreter's shutdown, which such a module can abort; nothing of ours is pending then
    (no results folder is written on an interrupt) and the standard streams are flushed.
    """
    code = main()
    if code == INTERRUPTED and interrupts.HALF_INITIALISED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    raise SystemExit(code)


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
