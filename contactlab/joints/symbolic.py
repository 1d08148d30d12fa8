"""Symbolic derivation of a joint given by its transform ``Q(q)``: ``S`` and ``Sdot``.

Si & Guenter (Si & Guenter, eq. 9 and 12): the columns of the joint Jacobian
are the body twists of ``Q`` per unit rate of each coordinate, and ``Sdot``
is their derivative along ``qdot``.  With ``Q = [[R, p], [0, 1]]``,
``R_k = dR/dq_k`` and ``p_k = dp/dq_k``,

.. math::

    S_k = \\begin{pmatrix} (R^T R_k)^\\vee \\\\ R^T p_k \\end{pmatrix}, \\qquad
    \\dot S_k = \\begin{pmatrix} (\\dot R^T R_k + R^T \\dot R_k)^\\vee \\\\
                 \\dot R^T p_k + R^T \\dot p_k \\end{pmatrix},

with ``dR/dt = sum_j R_j qdot_j`` and ``d R_k/dt = sum_j R_kj qdot_j``
(second derivatives of ``Q``).  The entries are derived with sympy, small
ones reduced (expanded with ``sin^2 = 1 - cos^2``).  The code is written from
them by :mod:`contactlab.joints.kernel_source` and cached by
:mod:`contactlab.joints.kernel_cache`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from contactlab._lazy import lazy_import

if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")

#: entries of S and Sdot with at most this many operations are simplified
SIMPLIFY_MAX_OPS = 60
#: factors with at most this many operations are checked for a constant Jacobian
SCREW_MAX_OPS = 240
#: relative size of the numeric coefficients taken for rounding (see ``drop_roundoff``)
SCREW_ROUNDOFF = 1e-13


def vee(W: sp.Matrix) -> list[sp.Expr]:
    """``(W[2,1], W[0,2], W[1,0])``: the axial vector of a skew block."""
    return [W[2, 1], W[0, 2], W[1, 0]]


def _is_even_sine_power(x: sp.Basic) -> bool:
    return bool(x.is_Pow and isinstance(x.base, sp.sin) and x.exp.is_Integer and x.exp >= 2)


def expand_sine_squares(e: sp.Expr) -> sp.Expr:
    """``e`` expanded with ``sin^2 = 1 - cos^2``: a canonical form in which the Pythagorean
    identities cancel (a revolute joint's ``S`` becomes a constant, its ``Sdot`` zero).

    Much cheaper than :func:`sympy.simplify` (whose trigonometric search took two thirds
    of the derivation time of the surface joints) and enough for the joint maps.
    """
    if e.is_Number or e.is_Symbol:
        return e
    e = sp.expand(e)
    if not e.has(sp.sin):
        return e
    e = e.replace(
        _is_even_sine_power,
        lambda x: (1 - sp.cos(x.base.args[0]) ** 2) ** (x.exp // 2) * x.base ** (x.exp % 2),
    )
    return sp.expand(e)


def _placeholders(
    prefix: str, M: sp.Matrix, assignments: list[tuple[sp.Symbol, sp.Expr]]
) -> sp.Matrix:
    """``M`` with every non-constant entry replaced by a new symbol (kept in ``assignments``)."""
    out = sp.zeros(*M.shape)
    for r in range(M.shape[0]):
        for c in range(M.shape[1]):
            e = M[r, c]
            if e.is_Number:
                out[r, c] = e
            else:
                x = sp.Symbol(f"{prefix}_{r}_{c}")
                assignments.append((x, e))
                out[r, c] = x
    return out


def derive(
    Q: sp.Matrix, coordinates: Sequence[sp.Symbol], rates: Sequence[sp.Symbol], tag: str = "f"
) -> tuple[list[tuple[sp.Symbol, sp.Expr]], sp.Matrix, sp.Matrix]:
    """Symbolic ``S`` and ``Sdot`` (6, n) of the transform ``Q`` (Si & Guenter, eq. 9 and 12).

    A small ``Q`` (at most :data:`SIMPLIFY_MAX_OPS` operations) gets ``S``
    and ``Sdot`` as simplified expressions of the coordinates (a revolute
    joint's ``S`` becomes a constant).  A larger one keeps ``R``, its first
    and second partial derivatives and those of ``p`` as named
    intermediate values (returned as assignments), in terms of which
    ``S`` and ``Sdot`` are short sums of products, as in D*.
    """
    n = len(coordinates)
    small = sp.count_ops(Q) <= SIMPLIFY_MAX_OPS
    assignments: list[tuple[sp.Symbol, sp.Expr]] = []
    hold = (
        (lambda name, M: M)
        if small
        else (lambda name, M: _placeholders(f"{tag}{name}", M, assignments))
    )
    R, p = Q[:3, :3], Q[:3, 3]
    present = [x in Q.free_symbols for x in coordinates]
    zero3, zero1 = sp.zeros(3, 3), sp.zeros(3, 1)
    Rk = [R.diff(x) if ok else zero3 for x, ok in zip(coordinates, present)]
    pk = [p.diff(x) if ok else zero1 for x, ok in zip(coordinates, present)]
    Rkj = [
        [Rk[k].diff(x) if present[k] and ok else zero3 for x, ok in zip(coordinates, present)]
        for k in range(n)
    ]
    pkj = [
        [pk[k].diff(x) if present[k] and ok else zero1 for x, ok in zip(coordinates, present)]
        for k in range(n)
    ]
    R_ = hold("R", R)
    Rk_ = [hold(f"R{k}", Rk[k]) for k in range(n)]
    pk_ = [hold(f"p{k}", pk[k]) for k in range(n)]
    Rdot = sp.zeros(3, 3)
    for j in range(n):
        if present[j]:
            Rdot += Rk_[j] * rates[j]
    S = sp.zeros(6, n)
    Sdot = sp.zeros(6, n)
    Rt = R_.T
    for k in range(n):
        if not present[k]:
            continue
        Rk_dot, pk_dot = sp.zeros(3, 3), sp.zeros(3, 1)
        for j in range(n):
            if present[j]:
                Rk_dot += (
                    hold(f"R{k}{j}", Rkj[k][j]) * rates[j]
                    if j >= k
                    else (hold(f"R{j}{k}", Rkj[j][k]) * rates[j])
                )
                pk_dot += (
                    hold(f"p{k}{j}", pkj[k][j]) * rates[j]
                    if j >= k
                    else (hold(f"p{j}{k}", pkj[j][k]) * rates[j])
                )
        omega = vee(Rt * Rk_[k])
        nu = Rt * pk_[k]
        omega_dot = vee(Rdot.T * Rk_[k] + Rt * Rk_dot)
        nu_dot = Rdot.T * pk_[k] + Rt * pk_dot
        fix = expand_sine_squares if small else sp.expand
        for r in range(3):
            S[r, k] = fix(omega[r])
            S[r + 3, k] = fix(nu[r])
            Sdot[r, k] = fix(omega_dot[r])
            Sdot[r + 3, k] = fix(nu_dot[r])
    unique: dict[sp.Symbol, sp.Expr] = dict(assignments)
    return list(unique.items()), S, Sdot


def drop_roundoff(e: sp.Expr, coordinates: Sequence[sp.Symbol]) -> sp.Expr:
    """``e`` (expanded) without the terms in the coordinates whose numeric coefficient is
    below ``SCREW_ROUNDOFF`` times the largest one: the rounding of float entries (a unit
    axis whose squares sum to ``1 - 1e-17`` leaves ``1e-17 sin(q)`` beside a constant)."""
    terms = sp.Add.make_args(sp.expand(e))
    coefficients = [abs(float(t.as_coeff_Mul()[0])) for t in terms]
    tol = SCREW_ROUNDOFF * max([1.0, *coefficients])
    coords = set(coordinates)
    kept = [t for t, c in zip(terms, coefficients) if c > tol or not (t.free_symbols & coords)]
    return sp.Add(*kept)
