"""Analytic derivatives of the joint maps of generated joints, from their symbolic derivation.

The recursive inverse-dynamics derivatives (:mod:`contactlab.reduced._derivative_kernels`)
need, for a joint's coordinate ``a``, the derivatives of its joint Jacobian
``S(q)`` and of its bias ``c(q, qdot) = Sdot qdot`` (joint frame):

.. math::

    \\frac{\\partial S}{\\partial q_a}, \\qquad
    \\frac{\\partial c}{\\partial q_a}, \\qquad
    \\frac{\\partial c}{\\partial \\dot q_a} .

For a joint generated from its transform (:class:`~contactlab.joints.transform.TransformJoint`),
``S`` and ``Sdot`` are the symbolic expressions of Si & Guenter's eq. 9 and 12
(:func:`contactlab.joints.symbolic.derive` applied to ``Q`` = the product of
its factors); their partials are taken symbolically and evaluated by a numpy
function (``sympy.lambdify``) built once per expression.  A joint whose
product is larger than :data:`MAX_OPS` operations (the surface joints, whose
factors are large) has none: its columns stay the central differences of
:mod:`contactlab.reduced.derivatives`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab._lazy import lazy_import
from contactlab.reduced.tree import Array

if TYPE_CHECKING:
    import sympy as sp

    from contactlab.reduced.model import Model
else:
    sp = lazy_import("sympy")

#: products ``Q`` with more operations than this keep the difference columns
MAX_OPS = 400

_FUNCTIONS: dict[str, Callable[..., Any] | None] = {}


def derivative_function(joint: Any) -> Callable[..., Any] | None:
    """``f(q, qdot, params) -> (dS (n, 6, n), dc/dq (n, 6), dc/dqdot (n, 6))``, or ``None``.

    Built from the joint's symbolic ``Q`` once per expression (``joint.key``).
    """
    key = getattr(joint, "key", None)
    if key is None or not hasattr(joint, "_derive_symbols"):
        return None
    if key in _FUNCTIONS:
        return _FUNCTIONS[key]
    from contactlab.joints import symbolic

    factors, coords, psyms = joint._derive_symbols()
    Q = sp.Matrix(factors[0])
    for F in factors[1:]:
        Q = Q * sp.Matrix(F)
    if sp.count_ops(Q) > MAX_OPS:
        _FUNCTIONS[key] = None
        return None
    n = len(coords)
    rates = sp.symbols(f"qd_0:{n}", real=True)
    held, S, Sdot = symbolic.derive(Q, coords, rates, "g")
    back = dict(held)
    S = S.xreplace(back)
    Sdot = Sdot.xreplace(back)
    c = Sdot * sp.Matrix(rates)
    entries = [e for x in coords for e in S.diff(x)]  # (n, 6, n), row-major
    entries += [e for x in coords for e in c.diff(x)]  # (n, 6)
    entries += [e for r in rates for e in c.diff(r)]  # (n, 6)
    fun = sp.lambdify((*coords, *rates, *psyms), entries, "math", cse=True)
    m1, m2 = 6 * n * n, 6 * n * n + 6 * n

    def evaluate(q: Array, qdot: Array, params: Array) -> tuple[Array, Array, Array]:
        flat = np.array(fun(*q, *qdot, *params), dtype=float)
        return flat[:m1].reshape(n, 6, n), flat[m1:m2].reshape(n, 6), flat[m2:].reshape(n, 6)

    try:  # functions the math module lacks (a Piecewise, ...): keep the differences
        evaluate(np.full(n, 0.1), np.full(n, 0.1), np.asarray(joint.params[0], dtype=float))
    except (NameError, TypeError, ValueError, ZeroDivisionError):
        _FUNCTIONS[key] = None
        return None
    _FUNCTIONS[key] = evaluate
    return evaluate


def joint_map_derivatives(model: Model, q: Array, qdot: Array) -> tuple[Array, Array]:
    """``(dext (m, 6, 6, 8), coordinates left to differences)`` of a model's ``OTHER`` nodes.

    Rows of joints without analytic maps are NaN (the kernel skips them) and
    their coordinates are returned for the difference columns.
    """
    others = model._other
    dext = np.full((len(others), 6, 6, 8), np.nan)
    left: list[Array] = []
    for row, joint, a, k in others:
        fun = derivative_function(joint)
        if fun is None:
            left.append(np.arange(a, a + k))
            continue
        dS, dcq, dcqd = fun(q[a : a + k], qdot[a : a + k], joint.params[0])  # type: ignore[attr-defined]
        out = dext[row]
        out[:] = 0.0
        out[:k, :, :k] = dS
        out[:k, :, 6] = dcq
        out[:k, :, 7] = dcqd
    idx = np.concatenate(left).astype(np.int64) if left else np.zeros(0, dtype=np.int64)
    return dext, idx
