"""Objects defined in a user's Python file, named ``path/to/file.py:name``.

Wherever a name is taken from the user (a scenario, a contact model), a file
outside any installed package may stand in for it: ``scenes.py:make_scene``
names the function ``make_scene`` of ``scenes.py``, ``my_model.py:MyModel``
the class ``MyModel`` of ``my_model.py``.  The file is imported once per
process (a second lookup reuses the module unless the file changed), with one
clear error for a file that does not exist, does not import, or does not
define the name.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from contactlab.errors import ConfigurationError


def names_file_object(name: str) -> bool:
    """Whether ``name`` has the form ``file.py:attribute``."""
    path, sep, attr = name.rpartition(":")
    return bool(sep) and path.endswith(".py") and bool(attr) and attr.isidentifier()


def existing_file(path: Path, what: str) -> Path:
    """``path`` resolved, or :class:`ConfigurationError` when it is missing or not a file."""
    if not path.exists():
        raise ConfigurationError(f"{what} {str(path)!r} not found; check the path")
    if not path.is_file():
        raise ConfigurationError(f"{what} {str(path)!r} is not a file")
    return path.resolve()


def import_file(file: str) -> ModuleType:
    """The module of the Python file ``file`` (imported on first use)."""
    path = existing_file(Path(file), "Python file")
    stat = path.stat()
    # a file edited since its last import is imported again
    key = f"{path}:{stat.st_mtime_ns}:{stat.st_size}"
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    module_name = f"contactlab_user_{digest}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigurationError(f"Python file {file!r} cannot be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as err:
        del sys.modules[module_name]
        raise ConfigurationError(
            f"Python file {file!r} has a syntax error at line {err.lineno}: {err.msg}"
        ) from err
    except ImportError as err:
        del sys.modules[module_name]
        raise ConfigurationError(f"Python file {file!r} cannot be imported: {err}") from err
    except (Exception, SystemExit) as err:
        # the user's own code failed while the file was imported: its line, not ours
        del sys.modules[module_name]
        raise ConfigurationError(
            f"Python file {file!r} raised {user_failure(err, path)} while it was imported; "
            "fix the file"
        ) from err
    return module


def user_failure(err: BaseException, path: Path) -> str:
    """``"ZeroDivisionError at line 3: division by zero"``: the exception and the last line
    of ``path`` it passed through."""
    line = None
    tb = err.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).resolve() == path:
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" at line {line}" if line is not None else ""
    text = " ".join(str(err).split())
    return f"{type(err).__name__}{where}" + (f": {text}" if text else "")


def guarded(function: Any, name: str) -> Any:
    """``function`` of the user's file ``name`` (``file.py:attribute``), whose failures
    (any exception, ``sys.exit``) become one :class:`ConfigurationError` naming the file,
    line and exception; ``inspect.signature`` still sees the original parameters."""
    import functools

    path = Path(name.rpartition(":")[0]).resolve()

    @functools.wraps(function)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except (ConfigurationError, KeyboardInterrupt):
            raise
        except (Exception, SystemExit) as err:
            raise ConfigurationError(f"{name} raised {user_failure(err, path)}") from err

    return call


def file_object(name: str) -> Any:
    """The object ``attribute`` of ``file.py:attribute``, or :class:`ConfigurationError`
    naming the file and what it defines."""
    file, _, attr = name.rpartition(":")
    module = import_file(file)
    found = getattr(module, attr, None)
    if found is None:
        defined = sorted(
            k for k, v in vars(module).items() if callable(v) and not k.startswith("_")
        )
        raise ConfigurationError(
            f"Python file {file!r} defines no {attr!r}; it defines {', '.join(defined) or '(none)'}"
        )
    return found
