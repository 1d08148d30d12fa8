"""Symbolic derivation and compiled code for joints given by their transform ``Q(q)``.

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
ones reduced (expanded with ``sin^2 = 1 - cos^2``), all of them put through
common-subexpression elimination, and printed as one kernel (C, or numba
without a C compiler) that evaluates every joint of the same
expression in a tree at once (``parameters`` stay symbols, so joints that
differ only in their values share the kernel).

The source is cached on disk, keyed by a hash of the expression: the
second time the same joint is built no derivation runs and numba loads its
own cache.  The folder is ``$CONTACTLAB_CACHE`` or
``$XDG_CACHE_HOME/contactlab`` (default ``~/.cache/contactlab``), under
``generated-joints/``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from contactlab._lazy import lazy_import

if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")  # loading cached code needs no sympy

#: bumped whenever the generated code changes shape (invalidates the cache)
CODEGEN_VERSION = "4"
#: entries of S and Sdot with at most this many operations are simplified
SIMPLIFY_MAX_OPS = 60
#: factors with at most this many operations are checked for a constant Jacobian
SCREW_MAX_OPS = 240
#: relative size of the numeric coefficients taken for rounding (see ``_drop_roundoff``)
SCREW_ROUNDOFF = 1e-13

_LOADED: dict[str, ModuleType] = {}
_KEYS: dict[tuple, str] = {}


def cache_dir() -> Path:
    """Folder holding the generated joint sources (created on demand)."""
    root = os.environ.get("CONTACTLAB_CACHE")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "contactlab"
    path = base / "generated-joints"
    path.mkdir(parents=True, exist_ok=True)
    return path


def expression_key(
    factors: Sequence[sp.Matrix], coordinates: Sequence[sp.Symbol], parameters: Sequence[sp.Symbol]
) -> str:
    """SHA-256 (hex, 24 characters) of the factors, their symbols and the generator version.

    Remembered per process (printing a large expression takes a while, and a
    scene builds many joints of the same expression).
    """
    memo = (tuple(factors), tuple(coordinates), tuple(parameters), backend())
    if memo in _KEYS:
        return _KEYS[memo]
    # the printed text, not srepr: symbol assumptions do not change the derivatives
    text = "|".join(
        [CODEGEN_VERSION, *(str(F.tolist()) for F in factors)]
        + [str(tuple(coordinates)), str(tuple(parameters))]
        + ([] if backend() == "numba" else [f"backend {backend()}"])
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    _KEYS[memo] = key
    return key


@cache
def module_digest(name: str) -> str:
    """SHA-256 (hex, 16 characters) of the source file of module ``name`` ("" if none)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # __main__ of an interactive session
        return ""
    origin = spec.origin if spec is not None else None
    if not origin or not os.path.isfile(origin):
        return ""
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:16]


def source_key(source: str, coordinates: Sequence[str], parameters: Sequence[str]) -> str:
    """SHA-256 (hex, 24 characters) of a joint's definition *text*: no sympy needed.

    ``source`` must fix the expression (the text of ``Q``, or the builder and the
    sources of the modules that write it out); the coordinate and parameter names,
    the generator version and the backend complete the key.
    """
    text = "|".join(
        [
            "source",
            CODEGEN_VERSION,
            backend(),
            source,
            repr(list(coordinates)),
            repr(list(parameters)),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cached_kernel(key: str) -> Callable[..., None] | None:
    """The compiled kernel of ``key`` from memory or disk, or ``None`` (no sympy involved)."""
    if key in _LOADED:
        return _LOADED[key].evaluate
    path = cache_dir() / f"joint_{key}.py"
    if not path.exists() or (backend() == "c" and not path.with_suffix(".so").exists()):
        return None
    _LOADED[key] = _import(path, key)
    return _LOADED[key].evaluate


def python_kernel(key: str) -> Callable[..., None]:
    """The kernel of ``key`` without numba compilation (ctypes for C, the Python source else)."""
    module = _LOADED[key]
    return getattr(module, "evaluate_py", None) or module.evaluate.py_func


def screw_factors(key: str, params: Sequence[float]) -> list | None:
    """``screw_factors(params)`` of the code of ``key`` (see :func:`screw_factors_source`)."""
    fn = getattr(_LOADED[key], "screw_factors", None)
    return None if fn is None else fn(params)


def is_generated(key: str) -> bool:
    """Whether the code of ``key`` is loaded or on disk (nothing to derive)."""
    return key in _LOADED or (cache_dir() / f"joint_{key}.py").exists()


def _vee(W: sp.Matrix) -> list[sp.Expr]:
    """``(W[2,1], W[0,2], W[1,0])``: the axial vector of a skew block."""
    return [W[2, 1], W[0, 2], W[1, 0]]


def _is_even_sine_power(x: sp.Basic) -> bool:
    return bool(x.is_Pow and isinstance(x.base, sp.sin) and x.exp.is_Integer and x.exp >= 2)


def _maybe_simplify(e: sp.Expr) -> sp.Expr:
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
        omega = _vee(Rt * Rk_[k])
        nu = Rt * pk_[k]
        omega_dot = _vee(Rdot.T * Rk_[k] + Rt * Rk_dot)
        nu_dot = Rdot.T * pk_[k] + Rt * pk_dot
        fix = _maybe_simplify if small else sp.expand
        for r in range(3):
            S[r, k] = fix(omega[r])
            S[r + 3, k] = fix(nu[r])
            Sdot[r, k] = fix(omega_dot[r])
            Sdot[r + 3, k] = fix(nu_dot[r])
    unique: dict[sp.Symbol, sp.Expr] = dict(assignments)
    return list(unique.items()), S, Sdot


def generate_source(
    factors: Sequence[sp.Matrix],
    coordinates: Sequence[sp.Symbol],
    parameters: Sequence[sp.Symbol],
    key: str,
) -> str:
    """Python/numba source of ``evaluate(q, qdot, dof0, nodes, params, Q, S, Sd)``.

    Each factor's value, ``S_f`` and ``Sdot_f`` are written out (after
    common-subexpression elimination over all of them); the product is
    formed by :func:`contactlab.reduced._general_kernels.compose`.  A single
    factor is written straight into the outputs.
    """
    n = len(coordinates)
    rates = sp.symbols(f"qd_0:{n}", real=True)
    single = len(factors) == 1
    outputs: list[tuple[str, sp.Expr]] = []
    held: list[tuple[sp.Symbol, sp.Expr]] = []
    for f, F in enumerate(factors):
        assignments, S, Sdot = derive(F, coordinates, rates, f"h{f}")
        held += assignments
        value = "Q[i, {}, {}]" if single else f"F[{f}, {{}}, {{}}]"
        jac = "S[i, {}, {}]" if single else f"SF[{f}, {{}}, {{}}]"
        jac_dot = "Sd[i, {}, {}]" if single else f"SdF[{f}, {{}}, {{}}]"
        for r in range(3):
            for c in range(4):
                outputs.append((value.format(r, c), F[r, c]))
        for r in range(6):
            for c in range(n):
                if single or S[r, c] != 0:
                    outputs.append((jac.format(r, c), S[r, c]))
                if single or Sdot[r, c] != 0:
                    outputs.append((jac_dot.format(r, c), Sdot[r, c]))
    names = {x: sp.Symbol(f"c_{k}") for k, x in enumerate(coordinates)}
    names.update({x: sp.Symbol(f"cd_{k}") for k, x in enumerate(rates)})
    names.update({x: sp.Symbol(f"p_{k}") for k, x in enumerate(parameters)})
    from sympy.printing.pycode import PythonCodePrinter

    printer = PythonCodePrinter({"fully_qualified_modules": True})
    pad = " " * 8

    def lines(pairs: list[tuple[str, sp.Expr]], temp: str) -> list[str]:
        exprs = [e.xreplace(names) for _, e in pairs]
        temps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(temp))
        out = [f"{pad}{printer.doprint(t)} = {printer.doprint(e)}" for t, e in temps]
        return out + [
            f"{pad}{target} = {printer.doprint(e)}" for (target, _), e in zip(pairs, reduced)
        ]

    body = [f"{pad}a = dof0[m]", f"{pad}i = nodes[m]"]
    body += [f"{pad}c_{k} = q[a + {k}]" for k in range(n)]
    body += [f"{pad}cd_{k} = qdot[a + {k}]" for k in range(n)]
    body += [f"{pad}qd[{k}] = cd_{k}" for k in range(n)] if not single else []
    body += [f"{pad}p_{k} = params[m, {k}]" for k in range(len(parameters))]
    # the intermediate values (derivatives of the larger factors) first, then the outputs
    body += lines([(str(x), e) for x, e in held], "t_")
    body += lines(outputs, "u_")
    if single:
        body += [f"{pad}Q[i, 3, {c}] = {1.0 if c == 3 else 0.0}" for c in range(4)]
    else:
        body += [f"{pad}compose(F, SF, SdF, qd, i, Q, S, Sd)"]
    m = len(factors)
    header = [
        f'"""Generated by contactlab.joints.codegen (version {CODEGEN_VERSION}); key {key}.',
        "",
        *[f"factor {f}: {sp.sstr(F.tolist())}" for f, F in enumerate(factors)],
        f"coordinates = {[str(x) for x in coordinates]}",
        f"parameters = {[str(x) for x in parameters]}",
        '"""',
        "import math",
        "",
        "import numpy as np",
        "from numba import njit",
        "",
        "from contactlab.reduced._general_kernels import compose",
        "",
        f"NDOF = {n}",
        f"NPARAMS = {len(parameters)}",
        "",
        "",
        "@njit(cache=True)",
        "def evaluate(q, qdot, dof0, nodes, params, Q, S, Sd):  # noqa",
    ]
    if not single:
        header += [
            f"    F = np.zeros(({m}, 4, 4))",
            f"    SF = np.zeros(({m}, 6, {n}))",
            f"    SdF = np.zeros(({m}, 6, {n}))",
            f"    qd = np.zeros({n})",
            *[f"    F[{f}, 3, 3] = 1.0" for f in range(m)],
        ]
    header += ["    for m in range(nodes.shape[0]):"]
    return "\n".join(header + body) + "\n" + screw_factors_source(factors, coordinates, parameters)


def _drop_roundoff(e: sp.Expr, coordinates: Sequence[sp.Symbol]) -> sp.Expr:
    """``e`` (expanded) without the terms in the coordinates whose numeric coefficient is
    below ``SCREW_ROUNDOFF`` times the largest one: the rounding of float entries (a unit
    axis whose squares sum to ``1 - 1e-17`` leaves ``1e-17 sin(q)`` beside a constant)."""
    terms = sp.Add.make_args(sp.expand(e))
    coefficients = [abs(float(t.as_coeff_Mul()[0])) for t in terms]
    tol = SCREW_ROUNDOFF * max([1.0, *coefficients])
    coords = set(coordinates)
    kept = [t for t, c in zip(terms, coefficients) if c > tol or not (t.free_symbols & coords)]
    return sp.Add(*kept)


def screw_factors_source(
    factors: Sequence[sp.Matrix], coordinates: Sequence[sp.Symbol], parameters: Sequence[sp.Symbol]
) -> str:
    """Python source of ``screw_factors(p)``: the joint as constant transforms and screws, or None.

    A factor whose Jacobian ``S_f`` is constant (free of the coordinates after
    the simplification of :func:`derive`) is ``F_f(q) = F_f(0) exp([xi] q)``
    with ``xi = sum_k S_k q_k`` (``S`` simplified as in :func:`derive`, rounding of
    float entries dropped): ``dF/dq_k = F [S_k]`` with constant ``S_k``
    makes the columns commute (mixed partials are equal), so the exponential
    splits into one screw per coordinate.  When every factor is constant or
    of that kind and the coordinates appear factor after factor in order,
    ``screw_factors(p)`` (``p`` the parameter values) returns, per factor,
    ``(F_f(0), ((k, xi_k), ...))``; a prepared model then evaluates the joint
    as a chain of revolute and prismatic nodes, as it does hand-written
    joints.  Otherwise it returns ``None``.
    """
    n = len(coordinates)
    allowed = set(parameters)
    zero = {x: 0 for x in coordinates}
    order: list[int] = []
    parts: list[tuple[sp.Matrix, list[tuple[int, list[sp.Expr]]]]] = []
    structured = True
    for F in factors:
        present = [k for k, x in enumerate(coordinates) if x in F.free_symbols]
        screws: list[tuple[int, list[sp.Expr]]] = []
        if present:
            if sp.count_ops(F) > SCREW_MAX_OPS:
                structured = False
                break
            R, pos = F[:3, :3], F[:3, 3]
            for k in present:
                x = coordinates[k]
                column = _vee(R.T * R.diff(x)) + list(R.T * pos.diff(x))
                column = [_drop_roundoff(_maybe_simplify(e), coordinates) for e in column]
                if any(not (e.free_symbols <= allowed) for e in column):
                    structured = False
                    break
                screws.append((k, column))
            if not structured:
                break
        F0 = sp.Matrix(F).xreplace(zero)
        if any(e.has(sp.zoo, sp.nan, sp.oo, -sp.oo) for e in F0):
            structured = False
            break
        order += present
        parts.append((F0, screws))
    lines = [
        "",
        "",
        "def screw_factors(p):  # noqa",
        '    """Constant transforms and screws (see contactlab.joints.codegen)."""',
    ]
    if not structured or order != list(range(n)):
        return "\n".join(lines + ["    return None", ""])
    from sympy.printing.pycode import PythonCodePrinter

    names = {x: sp.Symbol(f"p_{k}") for k, x in enumerate(parameters)}
    printer = PythonCodePrinter({"fully_qualified_modules": True})

    def num(e: sp.Expr) -> str:
        return f"float({printer.doprint(sp.sympify(e).xreplace(names))})"

    lines += [f"    p_{k} = p[{k}]" for k in range(len(parameters))]
    out = []
    for F0, screws in parts:
        rows = ", ".join("(" + ", ".join(num(F0[r, c]) for c in range(4)) + ")" for r in range(4))
        cols = ", ".join(
            f"({k}, (" + ", ".join(num(e) for e in column) + "))" for k, column in screws
        )
        out.append(f"(({rows}), ({cols}{',' if len(screws) == 1 else ''}))")
    lines.append("    return [" + ", ".join(out) + "]")
    return "\n".join(lines) + "\n"


# -- C backend ---------------------------------------------------------------------------
#: C source of the composition of factors (the same formulas as
#: :func:`contactlab.reduced._general_kernels.compose`), row-major arrays
_C_COMPOSE = r"""
#include <math.h>
#include <stdint.h>

static void cl_mul44(const double *A, const double *B, double *C) {
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 4; ++c) {
            double s = c == 3 ? A[4 * r + 3] : 0.0;
            for (int k = 0; k < 3; ++k) s += A[4 * r + k] * B[4 * k + c];
            C[4 * r + c] = s;
        }
    C[12] = C[13] = C[14] = 0.0;
    C[15] = 1.0;
}

/* Ad(G^-1) = [[R^T, 0], [[t] R^T, R^T]], t = -R^T p */
static void cl_adjoint_of_inverse(const double *G, double *A) {
    double t0 = -(G[0] * G[3] + G[4] * G[7] + G[8] * G[11]);
    double t1 = -(G[1] * G[3] + G[5] * G[7] + G[9] * G[11]);
    double t2 = -(G[2] * G[3] + G[6] * G[7] + G[10] * G[11]);
    for (int c = 0; c < 3; ++c) {
        double x0 = G[4 * c], x1 = G[4 * c + 1], x2 = G[4 * c + 2];
        double col[3] = {t1 * x2 - t2 * x1, t2 * x0 - t0 * x2, t0 * x1 - t1 * x0};
        for (int r = 0; r < 3; ++r) {
            A[6 * r + c] = G[4 * c + r];
            A[6 * (r + 3) + c + 3] = G[4 * c + r];
            A[6 * (r + 3) + c] = col[r];
            A[6 * r + c + 3] = 0.0;
        }
    }
}

/* out = ad(v) x */
static void cl_ad_mul(const double *v, const double *x, double *out) {
    double a0 = v[1] * x[2] - v[2] * x[1], a1 = v[2] * x[0] - v[0] * x[2],
           a2 = v[0] * x[1] - v[1] * x[0];
    double b0 = v[4] * x[2] - v[5] * x[1], b1 = v[5] * x[0] - v[3] * x[2],
           b2 = v[3] * x[1] - v[4] * x[0];
    double c0 = v[1] * x[5] - v[2] * x[4], c1 = v[2] * x[3] - v[0] * x[5],
           c2 = v[0] * x[4] - v[1] * x[3];
    out[0] = a0; out[1] = a1; out[2] = a2;
    out[3] = b0 + c0; out[4] = b1 + c1; out[5] = b2 + c2;
}

/* Q, S, Sd (S and Sd with sc columns) of the product of the m factors F (m, 4, 4),
   with SF, SdF (m, 6, n): S_FG = Ad(G^-1) S_F + S_G,
   Sd_FG = Ad(G^-1) Sd_F - ad(S_G qd) Ad(G^-1) S_F + Sd_G, last factor first */
static void cl_compose(int m, int n, const double *F, const double *SF, const double *SdF,
                       const double *qd, double *Q, double *S, double *Sd, int64_t sc) {
    double G[16], T[16], A[36], SG[6 * 16], SdG[6 * 16], v[6], x[6], y[6], z[6];
    for (int k = 0; k < 16; ++k) G[k] = F[16 * (m - 1) + k];
    for (int k = 0; k < 6 * n; ++k) {
        SG[k] = SF[6 * n * (m - 1) + k];
        SdG[k] = SdF[6 * n * (m - 1) + k];
    }
    for (int f = m - 2; f >= 0; --f) {
        cl_adjoint_of_inverse(G, A);
        for (int r = 0; r < 6; ++r) {
            double s = 0.0;
            for (int c = 0; c < n; ++c) s += SG[n * r + c] * qd[c];
            v[r] = s;
        }
        for (int c = 0; c < n; ++c) {
            for (int r = 0; r < 6; ++r) {
                double sx = 0.0, sy = 0.0;
                for (int k = 0; k < 6; ++k) {
                    sx += A[6 * r + k] * SF[6 * n * f + n * k + c];
                    sy += A[6 * r + k] * SdF[6 * n * f + n * k + c];
                }
                x[r] = sx;
                y[r] = sy;
            }
            for (int r = 0; r < 6; ++r) SG[n * r + c] += x[r];
            cl_ad_mul(v, x, z);
            for (int r = 0; r < 6; ++r) SdG[n * r + c] += y[r] - z[r];
        }
        cl_mul44(F + 16 * f, G, T);
        for (int k = 0; k < 16; ++k) G[k] = T[k];
    }
    for (int k = 0; k < 16; ++k) Q[k] = G[k];
    for (int r = 0; r < 6; ++r)
        for (int c = 0; c < n; ++c) {
            S[sc * r + c] = SG[n * r + c];
            Sd[sc * r + c] = SdG[n * r + c];
        }
}
"""

#: largest number of coordinates of a C kernel (the composition's scratch arrays)
C_MAX_NDOF = 16


def backend() -> str:
    """``"c"`` when a C compiler is found (``$CC``, ``cc``, ``gcc``), else ``"numba"``.

    ``$CONTACTLAB_JOINT_BACKEND`` (``c`` or ``numba``) chooses explicitly.  The C
    backend compiles a generated joint in about a second with the system's C
    compiler; numba takes tens of seconds for the large surface joints.
    """
    chosen = os.environ.get("CONTACTLAB_JOINT_BACKEND", "").strip().lower()
    if chosen == "numba":
        return "numba"
    if chosen not in ("", "c"):
        raise ValueError(f"CONTACTLAB_JOINT_BACKEND must be 'c' or 'numba', got {chosen!r}")
    if _compiler() is not None:
        return "c"
    if chosen == "c":
        raise RuntimeError("CONTACTLAB_JOINT_BACKEND=c but no C compiler (cc, gcc) was found")
    return "numba"


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name:
            found = shutil.which(name)
            if found:
                return found
    return None


def generate_c_source(
    factors: Sequence[sp.Matrix],
    coordinates: Sequence[sp.Symbol],
    parameters: Sequence[sp.Symbol],
    key: str,
) -> str:
    """C source of ``contactlab_joint_<key>`` (the same computation as :func:`generate_source`).

    Arguments: ``q, qdot`` (nq,), ``dof0, nodes`` (k,) int64, ``k``, ``params``
    (k, pstride), ``pstride``, ``Q`` (·, 4, 4), ``S`` and ``Sd`` (·, 6, sc), ``sc``;
    every array C-contiguous.
    """
    n = len(coordinates)
    if n > C_MAX_NDOF:
        raise ValueError(f"a C joint kernel takes at most {C_MAX_NDOF} coordinates, got {n}")
    rates = sp.symbols(f"qd_0:{n}", real=True)
    m = len(factors)
    single = m == 1
    outputs: list[tuple[str, sp.Expr]] = []
    held: list[tuple[sp.Symbol, sp.Expr]] = []
    for f, F in enumerate(factors):
        assignments, S, Sdot = derive(F, coordinates, rates, f"h{f}")
        held += assignments
        for r in range(3):
            for c in range(4):
                target = f"Qi[{4 * r + c}]" if single else f"F[{16 * f + 4 * r + c}]"
                outputs.append((target, F[r, c]))
        for r in range(6):
            for c in range(n):
                if single or S[r, c] != 0:
                    target = f"Si[{r} * sc + {c}]" if single else f"SF[{6 * n * f + n * r + c}]"
                    outputs.append((target, S[r, c]))
                if single or Sdot[r, c] != 0:
                    target = f"Sdi[{r} * sc + {c}]" if single else f"SdF[{6 * n * f + n * r + c}]"
                    outputs.append((target, Sdot[r, c]))
    names = {x: sp.Symbol(f"c_{k}") for k, x in enumerate(coordinates)}
    names.update({x: sp.Symbol(f"cd_{k}") for k, x in enumerate(rates)})
    names.update({x: sp.Symbol(f"p_{k}") for k, x in enumerate(parameters)})
    from sympy.printing.c import C99CodePrinter

    printer = C99CodePrinter()
    pad = " " * 8

    def lines(pairs: list[tuple[str, sp.Expr]], temp: str, declare: bool) -> list[str]:
        exprs = [e.xreplace(names) for _, e in pairs]
        temps, reduced = sp.cse(exprs, symbols=sp.numbered_symbols(temp))
        out = [f"{pad}const double {printer.doprint(t)} = {printer.doprint(e)};" for t, e in temps]
        kind = "const double " if declare else ""
        return out + [
            f"{pad}{kind}{target} = {printer.doprint(e)};" for (target, _), e in zip(pairs, reduced)
        ]

    body = [f"{pad}const int64_t a = dof0[mm], i = nodes[mm];"]
    body += [f"{pad}double *Qi = Q + 16 * i, *Si = S + 6 * sc * i, *Sdi = Sd + 6 * sc * i;"]
    body += [f"{pad}(void)Qi; (void)Si; (void)Sdi;"]
    body += [f"{pad}const double c_{k} = q[a + {k}];" for k in range(n)]
    body += [f"{pad}const double cd_{k} = qdot[a + {k}];" for k in range(n)]
    body += [f"{pad}qd[{k}] = cd_{k};" for k in range(n)] if not single else []
    body += [
        f"{pad}const double p_{k} = params[mm * pstride + {k}];" for k in range(len(parameters))
    ]
    body += lines([(str(x), e) for x, e in held], "t_", True)
    body += lines(outputs, "u_", False)
    if single:
        body += [f"{pad}Qi[{12 + c}] = {1.0 if c == 3 else 0.0};" for c in range(4)]
    else:
        body += [f"{pad}cl_compose({m}, {n}, F, SF, SdF, qd, Qi, Si, Sdi, sc);"]
    head = [
        f"/* Generated by contactlab.joints.codegen (version {CODEGEN_VERSION}); key {key}.",
        *[
            f"   factor {f}: {sp.sstr(F.tolist())}".replace("*/", "* /")
            for f, F in enumerate(factors)
        ],
        f"   coordinates = {[str(x) for x in coordinates]}",
        f"   parameters = {[str(x) for x in parameters]}",
        "*/",
        _C_COMPOSE,
        f"void contactlab_joint_{key}(const double *q, const double *qdot, const int64_t *dof0,",
        "        const int64_t *nodes, int64_t k, const double *params, int64_t pstride,",
        "        double *Q, double *S, double *Sd, int64_t sc) {",
    ]
    if not single:
        head += [
            f"    double F[{16 * m}] = {{0}}, SF[{6 * n * m}] = {{0}}, SdF[{6 * n * m}] = {{0}};",
            f"    double qd[{n}];",
            *[f"    F[{16 * f + 15}] = 1.0;" for f in range(m)],
        ]
    head += ["    (void)params; (void)pstride;", "    for (int64_t mm = 0; mm < k; ++mm) {"]
    return "\n".join(head + body + ["    }", "}"]) + "\n"


def _c_wrapper(key: str, n: int, n_params: int) -> str:
    """The Python module of a C kernel: ``evaluate`` (numba, calls the C symbol by name,
    cached by numba) and ``evaluate_py`` (ctypes, for single joints)."""
    return f'''"""Generated by contactlab.joints.codegen (version {CODEGEN_VERSION}); key {key}.

The joint maps are computed by joint_{key}.c compiled to joint_{key}.so beside this file.
"""
import ctypes
import math
import os

import llvmlite.binding as _llb
from numba import njit, types

_SO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "joint_{key}.so")
_llb.load_library_permanently(_SO)
_P = types.CPointer(types.float64)
_I = types.CPointer(types.int64)
_kernel = types.ExternalFunction(
    "contactlab_joint_{key}",
    types.void(_P, _P, _I, _I, types.int64, _P, types.int64, _P, _P, _P, types.int64),
)
_c = ctypes.CDLL(_SO).contactlab_joint_{key}
_c.restype = None

NDOF = {n}
NPARAMS = {n_params}


@njit(cache=True)
def evaluate(q, qdot, dof0, nodes, params, Q, S, Sd):  # noqa
    ok = q.flags.c_contiguous and qdot.flags.c_contiguous and dof0.flags.c_contiguous
    ok = ok and nodes.flags.c_contiguous and params.flags.c_contiguous
    ok = ok and Q.flags.c_contiguous and S.flags.c_contiguous and Sd.flags.c_contiguous
    if not ok:
        raise ValueError("generated joint kernels take C-contiguous arrays")
    _kernel(q.ctypes, qdot.ctypes, dof0.ctypes, nodes.ctypes, nodes.shape[0], params.ctypes,
            params.shape[1], Q.ctypes, S.ctypes, Sd.ctypes, S.shape[2])


def evaluate_py(q, qdot, dof0, nodes, params, Q, S, Sd):  # noqa
    """The same through ctypes (no numba compilation: one joint at a time)."""
    arrays = [q, qdot, dof0, nodes, params, Q, S, Sd]
    if not all(a.flags.c_contiguous for a in arrays):
        raise ValueError("generated joint kernels take C-contiguous arrays")
    p = [ctypes.c_void_p(a.ctypes.data) for a in arrays]
    _c(p[0], p[1], p[2], p[3], ctypes.c_int64(nodes.shape[0]), p[4],
       ctypes.c_int64(params.shape[1]), p[5], p[6], p[7], ctypes.c_int64(S.shape[2]))
'''


def _compile_c(source: str, so: Path) -> None:
    cc = _compiler()
    if cc is None:  # pragma: no cover - backend() checked it
        raise RuntimeError("no C compiler found")
    # per-process file names, renamed when complete: processes generating the same joint
    # at once (parallel test workers) never read each other's partial files
    c_tmp = so.with_suffix(f".{os.getpid()}.c")
    c_tmp.write_text(source)
    tmp = so.with_suffix(f".{os.getpid()}.so")
    cmd = [cc, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(c_tmp), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling {c_tmp} failed: {done.stderr.strip()[:2000]}")
    os.replace(c_tmp, so.with_suffix(".c"))
    os.replace(tmp, so)


def _import(path: Path, key: str) -> ModuleType:
    name = f"contactlab_generated_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - importlib contract
        raise ImportError(f"cannot import generated joint code {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def compiled_kernel(
    factors: Sequence[sp.Matrix],
    coordinates: Sequence[sp.Symbol],
    parameters: Sequence[sp.Symbol],
    key: str | None = None,
) -> tuple[str, Callable[..., None], bool]:
    """``(key, evaluate, was_cached)`` for ``Q = prod(factors)``: from memory, disk or new."""
    key = key or expression_key(factors, coordinates, parameters)
    if key in _LOADED:
        return key, _LOADED[key].evaluate, True
    path = cache_dir() / f"joint_{key}.py"
    cached = path.exists() and (backend() == "numba" or path.with_suffix(".so").exists())
    if not cached:
        if backend() == "c":
            so = path.with_suffix(".so")
            _compile_c(generate_c_source(factors, coordinates, parameters, key), so)
            source = _c_wrapper(key, len(coordinates), len(parameters))
            source += screw_factors_source(factors, coordinates, parameters)
        else:
            source = generate_source(factors, coordinates, parameters, key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    module = _import(path, key)
    _LOADED[key] = module
    return key, module.evaluate, cached
