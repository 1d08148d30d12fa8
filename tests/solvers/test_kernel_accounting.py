"""Kernel accounting (:func:`solvers.jit.kernel_accounting`): calls counted exactly, nested
calls once, and nothing wrapped outside the block."""

from __future__ import annotations

import numpy as np

import solvers.jit as jit
from solvers.jit import kernel_accounting, njit


@njit(cache=False)
def _inner(x):  # type: ignore[no-untyped-def]
    return 2.0 * x


@njit(cache=False)
def _outer(x):  # type: ignore[no-untyped-def]
    s = 0.0
    for _ in range(3):
        s += _inner(x)
    return s


@njit(cache=False)
def _late_outer(x):  # type: ignore[no-untyped-def]
    # first compiled inside the accounting block, while ``_inner`` is a proxy here
    return _inner(x) + 1.0


def _two_kernels(x: float) -> float:
    return float(_inner(x) + _outer(x))


def _name(f: object) -> str:
    return f"{__name__}.{f.py_func.__name__}"  # type: ignore[attr-defined]


def test_disabled_accounting_is_numbas_dispatcher() -> None:
    from numba.core.registry import CPUDispatcher

    original = _inner
    assert type(original) is CPUDispatcher
    assert jit._DISPATCHERS[id(original)] is original
    with kernel_accounting():
        assert globals()["_inner"] is not original  # the proxy while the block runs
    assert globals()["_inner"] is original  # the same object afterwards, not a wrapper
    import solvers.backends.fc_ipm as fc_ipm

    kernels = [v for v in vars(fc_ipm).values() if id(v) in jit._DISPATCHERS]
    assert kernels and all(type(v) is CPUDispatcher for v in kernels)


def test_k_calls_record_k_calls() -> None:
    _inner(1.0), _outer(1.0)  # compiled before the block
    for k in (1, 7, 50):
        with kernel_accounting() as account:
            for i in range(k):
                assert _inner(float(i)) == 2.0 * i
        assert account.calls == k
        assert account.per_kernel == {_name(_inner): [k, account.ns]}
        assert account.ns >= 0


def test_nested_calls_counted_once() -> None:
    _inner(1.0), _outer(1.0)
    with kernel_accounting() as account:
        # a kernel calling a kernel three times: one call, the inner ones unseen
        assert _outer(1.0) == 6.0
    assert account.calls == 1 and set(account.per_kernel) == {_name(_outer)}
    with kernel_accounting() as account:
        # a Python function calling two kernels: two calls
        assert _two_kernels(1.0) == 8.0
    assert account.calls == 2
    assert {k: v[0] for k, v in account.per_kernel.items()} == {_name(_inner): 1, _name(_outer): 1}
    assert account.ns == sum(v[1] for v in account.per_kernel.values())


def test_kernel_first_compiled_inside_the_block() -> None:
    with kernel_accounting() as account:
        assert _late_outer(np.float64(2.0)) == 5.0
    assert account.calls == 1 and set(account.per_kernel) == {_name(_late_outer)}
    assert _late_outer(np.float64(3.0)) == 7.0  # and the compiled code still right outside
