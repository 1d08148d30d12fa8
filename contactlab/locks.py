"""An exclusive lock on a results folder, held while a sweep (or study) writes into it.

The lock is an advisory ``flock`` on ``FOLDER/.lock``: the operating system
releases it when the holder exits, however it ends (Ctrl-C, SIGKILL, a
crash), so a dead sweep never keeps a folder locked.  The file records the
holder's host and pid so that a second sweep can say who holds it.
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from contactlab.errors import ResultsError

LOCK_FILE = ".lock"


@contextmanager
def folder_lock(folder: Path | str, what: str = "sweep") -> Iterator[Path]:
    """Hold the exclusive lock of ``folder`` (created if missing) for the block.

    Raises
    ------
    ResultsError
        At once, when another process holds the lock (naming it), or when the
        lock file cannot be created.
    """
    root = Path(folder)
    path = root / LOCK_FILE
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as err:
        raise ResultsError(
            f"cannot lock the {what} folder {str(root)!r}: {err.strerror or err}; "
            "choose a writable --out"
        ) from err
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            raise ResultsError(
                f"the {what} folder {str(root)!r} is in use by {holder}; wait until it finishes "
                "or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"process {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
        try:
            yield root
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
