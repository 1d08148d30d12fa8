"""Build step of the package: the optional compiled-ahead dynamics kernels.

``contactlab/reduced/_cfast.c`` (forward dynamics, inverse dynamics and the
mass matrix of a prepared model) is compiled when the package is installed, so
that the first call in a fresh process does not wait for numba.  The
extension is optional: without a C compiler (or numpy headers) the install
goes on with a warning and the model uses its numba kernels instead
(``contactlab.reduced.model.COMPILED_AHEAD`` says which is in use).  An
editable install whose ``_cfast.c`` changed after the build is detected and
served by numba until ``pip install -e .`` runs again.
Everything else is declared in ``pyproject.toml``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "contactlab/reduced/_cfast.c"


def _sha256(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:  # no numpy in the build environment: numba kernels only
        return []
    return [
        Extension(
            "contactlab.reduced._cfast",
            [SOURCE],
            include_dirs=[numpy.get_include()],
            # the module reports the source it was built from, so that an editable
            # install whose C file changed since the build is detected (model.py)
            define_macros=[("CFAST_SOURCE_SHA256", f'"{_sha256(SOURCE)}"')],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]


setup(ext_modules=_extensions())
