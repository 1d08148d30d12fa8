"""Shared helpers: the backends to parametrise over, skipped with the reason when missing."""

from __future__ import annotations

import pytest

from solvers import backend_table


def backend_params(*, qp: bool | None = None) -> list[pytest.param]:
    """One ``pytest.param`` per known backend; unavailable ones skip with their reason."""
    from solvers.backend_registry import registered

    params = []
    for row in backend_table():
        cls = registered()[row["name"]]
        if qp is True and not cls.accepts_qp:
            continue
        marks = [] if row["available"] else [pytest.mark.skip(reason=row["reason"])]
        params.append(pytest.param(row["name"], id=row["name"], marks=marks))
    return params


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``backend_name`` over every known backend (``qp_backend_name``: QP-capable)."""
    if "backend_name" in metafunc.fixturenames:
        metafunc.parametrize("backend_name", backend_params())
    if "qp_backend_name" in metafunc.fixturenames:
        metafunc.parametrize("qp_backend_name", backend_params(qp=True))
