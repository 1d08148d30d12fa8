"""Pieces every contact model shares: the mass inverse, stacked rows, the friction pyramid.

All models eliminate the velocities the same way.  With the impulses
``lambda`` on stacked rows ``C`` (right-hand sides ``b``) the step's
stationarity condition ``M v = f + C^T lambda`` gives

.. math::

    v = M^{-1}(f + C^T \\lambda), \\qquad
    C v - b = \\underbrace{C M^{-1} C^T}_{\\text{Delassus}} \\lambda
              + (C M^{-1} f - b),

the dual quadratic program of the contact QP (Sueda's notes, eq. (1.83), with the
sign of eq. (1.84) corrected to ``M v = f + N^T alpha``) and the matrix/vector
of every LCP below.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactlab.contact.friction_cone import direction_sum, pyramid_directions
from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.problem import StepProblem
from solvers import STATUSES, SolverResult
from solvers.conversions import spd_inverse
from solvers.errors import ProblemError

Array = NDArray[np.float64]


class MassInverse:
    """``M^{-1}`` of an SPD mass matrix, explicit and sparse when ``M`` is block diagonal.

    Rigid-body mass matrices (6x6 blocks) are inverted block by block; a dense
    reduced mass matrix is factorised once (``splu``) and applied by solves.
    """

    def __init__(self, M: sp.spmatrix) -> None:
        Mc = sp.csr_matrix(M)
        diag = Mc.diagonal()
        if Mc.nnz == np.count_nonzero(diag) and np.all(diag > 0):
            # maximal coordinates on principal axes: M is diagonal
            self._inv = sp.diags(1.0 / diag, format="csr")
            return
        try:
            self._inv = spd_inverse(Mc)
        except ProblemError as err:
            raise SingularSystemError(
                "the mass matrix M is not symmetric positive definite; check body masses and "
                "inertias (every body needs m > 0 and a positive definite inertia)"
            ) from err

    def apply(self, B: sp.spmatrix | Array) -> Array | sp.csr_matrix:
        """``M^{-1} B`` (sparse if ``M^{-1}`` is explicit and ``B`` sparse)."""
        if isinstance(self._inv, spla.SuperLU):
            dense = cast(sp.spmatrix, B).toarray() if sp.issparse(B) else np.asarray(B, float)
            return np.asarray(self._inv.solve(dense))
        return self._inv @ B

    def vec(self, x: Array) -> Array:
        """``M^{-1} x`` for a vector ``x``."""
        return np.asarray(self.apply(np.asarray(x, dtype=float).reshape(-1, 1))).reshape(-1)

    def delassus(self, A: sp.spmatrix, B: sp.spmatrix | None = None) -> sp.csr_matrix:
        """``A M^{-1} B^T`` (``B = A`` gives the Delassus matrix, symmetric to rounding)."""
        other = A if B is None else B
        return sp.csr_matrix(A @ self.apply(sp.csc_matrix(other.T)))

    def norm(self, x: Array) -> float:
        """``||x||_{M^{-1}} = sqrt(x^T M^{-1} x)`` (Sueda's notes, Alg. 7 stopping test)."""
        return float(np.sqrt(max(float(x @ self.vec(x)), 0.0)))


@dataclass
class Rows:
    """Constraint rows stacked for one problem, with the slice of every named block.

    ``C`` (m, n), right-hand side ``b`` (m,), and ``lo``/``hi`` the bounds of
    the impulses on the rows (``-inf..inf`` bilateral, ``0..inf`` unilateral).
    """

    C: sp.csr_matrix
    b: Array
    lo: Array
    hi: Array
    slices: dict[str, slice] = field(default_factory=dict)

    @property
    def m(self) -> int:
        return int(self.C.shape[0])

    def part(self, x: Array, name: str) -> Array:
        """The entries of ``x`` (one per row) that belong to block ``name`` (empty if absent)."""
        s = self.slices.get(name)
        return np.zeros(0) if s is None else np.asarray(x[s])


def stack_rows(n: int, *blocks: tuple[str, sp.spmatrix, Array, str]) -> Rows:
    """Stack ``(name, rows, rhs, kind)`` blocks; kind is ``"free"`` or ``"nonneg"``."""
    mats, rhs, los, his, slices, start = [], [], [], [], {}, 0
    for name, A, b, kind in blocks:
        m = A.shape[0]
        mats.append(sp.csr_matrix(A))
        rhs.append(np.asarray(b, dtype=float))
        los.append(np.full(m, -np.inf if kind == "free" else 0.0))
        his.append(np.full(m, np.inf))
        slices[name] = slice(start, start + m)
        start += m
    C = sp.vstack(mats, format="csr") if mats else sp.csr_matrix((0, n))
    return Rows(C, _cat(rhs), _cat(los), _cat(his), slices)


def _cat(parts: list[Array]) -> Array:
    return np.concatenate(parts) if parts else np.zeros(0)


def pyramid_angles(k: int) -> tuple[Array, Array]:
    """``(cos a_j, sin a_j)`` with ``a_j = 2 pi j / k``, the pyramid's tangent directions."""
    d = pyramid_directions(k)
    return d[:, 0], d[:, 1]


def pyramid_sum(nc: int, k: int) -> sp.csr_matrix:
    """``E^T``-like summation ``(nc, nc k)``: row ``i`` adds the ``k`` impulses of contact ``i``."""
    return sp.csr_matrix(direction_sum(nc, k).T)


def pyramid_to_tangent(beta: Array, k: int) -> Array:
    """Friction impulse in the ``T`` basis, ``(2 nc,)``, from pyramid impulses ``(nc k,)``."""
    B = np.asarray(beta, dtype=float).reshape(-1, k)
    cos, sin = pyramid_angles(k)
    return np.column_stack([B @ cos, B @ sin]).reshape(-1)


#: most pyramid directions per contact: every contact gets this many impulse rows, so a
#: mistyped ``directions=1000000000`` would allocate without end
MAX_DIRECTIONS = 1024


def check_directions(k: object) -> None:
    """Raise :class:`ConfigurationError` unless ``k`` is ``None`` or an even integer in
    ``[4, MAX_DIRECTIONS]``."""
    if k is None:
        return
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 4 or k % 2:
        raise ConfigurationError(
            f"option directions must be an even integer >= 4 (or None for the scene's), got {k!r}"
        )
    if k > MAX_DIRECTIONS:
        raise ConfigurationError(
            f"option directions={k} is beyond the limit of {MAX_DIRECTIONS} pyramid directions "
            "per contact; give fewer (4 to 64 are usual)"
        )


_RANK = {s: i for i, s in enumerate(STATUSES)}


def worst_status(results: list[SolverResult], extra: str = "optimal") -> str:
    """The worst status among inner solves (order of :data:`solvers.STATUSES`)."""
    statuses = [r.status for r in results] + [extra]
    return max(statuses, key=lambda s: _RANK.get(s, len(STATUSES)))


def contact_rows(problem: StepProblem) -> Rows:
    """``C = [G; N; L]`` with right-hand sides ``[g; c; l]``."""
    d = problem
    return stack_rows(
        problem.n,
        ("G", d.G, d.g, "free"),
        ("N", d.N, d.c, "nonneg"),
        ("L", d.L, d.l, "nonneg"),
    )


def check_form(form: str) -> None:
    """Raise :class:`ConfigurationError` unless the option ``form`` is primal or dual."""
    if form not in ("primal", "dual"):
        raise ConfigurationError(f"option form must be 'primal' or 'dual', got {form!r}")


def check_cone(cone: str, allowed: tuple[str, ...]) -> None:
    """Raise :class:`ConfigurationError` unless the option ``cone`` is one of ``allowed``."""
    if cone not in allowed:
        raise ConfigurationError(f"option cone must be one of {list(allowed)}, got {cone!r}")


def check_outer(options: dict[str, Any]) -> None:
    """Check the outer-loop options ``tol`` (> 0) and ``max_outer`` (>= 1)."""
    if not float(options["tol"]) > 0:
        raise ConfigurationError(f"option tol must be > 0, got {options['tol']}")
    if int(options["max_outer"]) < 1:
        raise ConfigurationError(f"option max_outer must be >= 1, got {options['max_outer']}")
