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
ones simplified, all of them put through common-subexpression elimination,
and printed as one numba kernel that evaluates every joint of the same
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
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

import sympy as sp
from sympy.printing.pycode import PythonCodePrinter

#: bumped whenever the generated code changes shape (invalidates the cache)
CODEGEN_VERSION = "1"
#: entries of S and Sdot with at most this many operations are simplified
SIMPLIFY_MAX_OPS = 60

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
    memo = (tuple(factors), tuple(coordinates), tuple(parameters))
    if memo in _KEYS:
        return _KEYS[memo]
    # the printed text, not srepr: symbol assumptions do not change the derivatives
    text = "|".join(
        [CODEGEN_VERSION, *(str(F.tolist()) for F in factors)]
        + [str(tuple(coordinates)), str(tuple(parameters))]
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    _KEYS[memo] = key
    return key


def is_generated(key: str) -> bool:
    """Whether the code of ``key`` is loaded or on disk (nothing to derive)."""
    return key in _LOADED or (cache_dir() / f"joint_{key}.py").exists()


def _vee(W: sp.Matrix) -> list[sp.Expr]:
    """``(W[2,1], W[0,2], W[1,0])``: the axial vector of a skew block."""
    return [W[2, 1], W[0, 2], W[1, 0]]


def _maybe_simplify(e: sp.Expr) -> sp.Expr:
    if e.is_Number or e.is_Symbol:
        return e
    return sp.simplify(e)


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
        f'"""Generated by contactlab.reduced.codegen (version {CODEGEN_VERSION}); key {key}.',
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
    return "\n".join(header + body) + "\n"


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
    cached = path.exists()
    if not cached:
        source = generate_source(factors, coordinates, parameters, key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    module = _import(path, key)
    _LOADED[key] = module
    return key, module.evaluate, cached
