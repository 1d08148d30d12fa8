"""The velocity-level problem of one time step, shared by every formulation.

A formulation (maximal or reduced) assembles a :class:`StepProblem`; a contact
model (:mod:`contactlab.models`) turns it into one or more solver problems
(:mod:`solvers`) and returns a :class:`StepSolution`.  Models never see bodies
or joints, only these matrices, so every model works with every formulation.

With generalized velocities ``v`` (maximal: stacked body twists ``Phi``,
reduced: ``qdot``) the step is

.. math::

    M v^+ = f + G^T \\lambda_G + N^T \\lambda_N + T^T \\lambda_T + L^T \\lambda_L

    G v^+ = g, \\quad N v^+ \\ge c, \\quad L v^+ \\ge l_{rhs}

with the normal impulses ``lambda_N >= 0`` complementary to ``N v+ - c``, the
friction impulses on the tangent rows ``T`` bounded by the friction model, and
``L`` other unilateral rows (joint limits) with ``lambda_L >= 0``.  All
impulses are [N s] (generalized).  Signs: impulses push along +row, so contact
impulses are non-negative (seed 000 eqs. 1.79–1.88; the seed's eq. 1.84 is
written with the opposite sign of ``N^T alpha``, a transcription slip).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]


def _empty_rows(n: int) -> sp.csr_matrix:
    return sp.csr_matrix((0, n))


@dataclass
class StepProblem:
    """Matrices of one step (see the module docstring).

    Attributes
    ----------
    h : step size [s].
    M : (n, n) sparse SPD generalized mass (maximal: block diagonal 6x6 per
        body; reduced: ``M_r``, or the implicit ``M + hD - h^2 K``).
    f : (n,) free momentum, ``M v + h f_ext`` [N s].
    v : (n,) velocities at the start of the step.
    G, g : (mg, n) bilateral rows and right-hand side (Baumgarte included).
    N, c : (nc, n) contact normal rows and right-hand side (gap and
        penetration feedback included).
    T : (2 nc, n) tangent rows, two orthonormal directions per contact:
        rows ``2i`` and ``2i+1`` belong to contact ``i``.  Models build the
        k-direction pyramid from these (``d_j = cos(a_j) t1 + sin(a_j) t2``).
    mu : (nc,) friction coefficients.
    L, l : (ml, n) other unilateral rows (joint limits) and right-hand side.
    contacts : the contact set that produced N and T (geometry for metrics),
        or ``None``.
    directions : k, the number of pyramid directions requested by the scene.
    info : free-form data from assembly (e.g. row ownership per joint).
    """

    h: float
    M: sp.spmatrix
    f: Array
    v: Array
    G: sp.spmatrix | None = None
    g: Array | None = None
    N: sp.spmatrix | None = None
    c: Array | None = None
    T: sp.spmatrix | None = None
    mu: Array | None = None
    L: sp.spmatrix | None = None
    l: Array | None = None
    contacts: Any = None
    directions: int = 4
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = self.M.shape[0]
        self.M = sp.csc_matrix(self.M)
        self.f = np.asarray(self.f, dtype=float)
        self.v = np.asarray(self.v, dtype=float)
        if self.G is None:
            self.G, self.g = _empty_rows(n), np.zeros(0)
        if self.N is None:
            self.N, self.c = _empty_rows(n), np.zeros(0)
        if self.T is None:
            self.T = _empty_rows(n)
        if self.mu is None:
            self.mu = np.zeros(self.N.shape[0])
        if self.L is None:
            self.L, self.l = _empty_rows(n), np.zeros(0)
        for rows, rhs in (("G", "g"), ("N", "c"), ("L", "l")):
            if getattr(self, rhs) is None:
                raise ConfigurationError(
                    f"StepProblem: rows {rows} given without their right-hand side {rhs}; "
                    f"pass {rhs} with one entry per row of {rows}"
                )
        self.G, self.N, self.T, self.L = (
            sp.csr_matrix(x) for x in (self.G, self.N, self.T, self.L)
        )
        self.g, self.c, self.l = (np.asarray(x, dtype=float) for x in (self.g, self.c, self.l))
        self.mu = np.asarray(self.mu, dtype=float)

    @property
    def n(self) -> int:
        """Number of generalized velocities."""
        return int(self.M.shape[0])

    @property
    def n_contacts(self) -> int:
        return 0 if self.N is None else int(self.N.shape[0])


@dataclass
class StepSolution:
    """What a contact model returns for one step.

    v : (n,) velocities at the end of the step.
    lambda_G, lambda_N, lambda_T, lambda_L : impulses on the rows of the
        problem [N s]; ``lambda_T`` is (2 nc,) in the ``T`` basis whatever
        cone representation the model used internally.
    status : shared solver status of the step ("optimal", "max_iterations", ...).
    iterations : solver iterations (summed over inner solves) and
        ``outer_iterations`` for staggered schemes.
    solve_time : [s] wall time spent in the solver layer.
    results : the raw :class:`solvers.SolverResult` objects, in order.
    """

    v: Array
    lambda_G: Array
    lambda_N: Array
    lambda_T: Array
    lambda_L: Array = field(default_factory=lambda: np.zeros(0))
    status: str = "optimal"
    iterations: int = 0
    outer_iterations: int = 0
    solve_time: float = 0.0
    residual: float = 0.0
    results: list[Any] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)
