"""Exception tree of the solver layer.

Every error the layer raises derives from :class:`SolverError`, so callers can
catch one type.  Errors about user input carry the offending field or name.
"""

from __future__ import annotations


class SolverError(Exception):
    """Root of every exception raised by :mod:`solvers`."""


class ProblemError(SolverError, ValueError):
    """A problem (QP, LCP, blocks) is malformed.

    Parameters
    ----------
    field
        Name of the offending field (``"P"``, ``"l"``, ``"blocks.mu"``, ...).
    message
        What is wrong and what was expected.
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")


class SolverNotFound(SolverError, LookupError):
    """A backend name is unknown or its package is not installed.

    Parameters
    ----------
    name
        The requested backend name.
    installed
        Names of the backends that are installed and usable.
    reason
        Why the backend cannot be used (missing module and the pip extra
        that provides it), or ``None`` for an unknown name.
    """

    def __init__(self, name: str, installed: list[str], reason: str | None = None) -> None:
        self.name = name
        self.installed = list(installed)
        self.reason = reason
        head = (
            f"backend {name!r} is unavailable: {reason}" if reason else f"unknown backend {name!r}"
        )
        super().__init__(f"{head}; installed backends: {', '.join(self.installed) or 'none'}")


class IncompatibleProblem(SolverError, TypeError):
    """A backend cannot take this problem form and no automatic conversion applies.

    The message names a conversion that would help or the backends that fit.
    """
