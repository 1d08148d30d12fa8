"""Build step of the package: the optional compiled-ahead dynamics kernels.

``contactlab/reduced/_cfast.c`` (forward dynamics, inverse dynamics and the
mass matrix of a prepared model) is compiled when the package is installed, so
that the first call in a fresh process does not wait for numba.  The
extension is optional: without a C compiler (or numpy headers) the install
goes on with a warning and the model uses its numba kernels instead
(``contactlab.reduced.model.COMPILED_AHEAD`` says which is in use).
Everything else is declared in ``pyproject.toml``.
"""

from __future__ import annotations

from setuptools import Extension, setup


def _extensions() -> list[Extension]:
    try:
        import numpy
    except ImportError:  # no numpy in the build environment: numba kernels only
        return []
    return [
        Extension(
            "contactlab.reduced._cfast",
            ["contactlab/reduced/_cfast.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O3"],
            optional=True,
        )
    ]


setup(ext_modules=_extensions())
