"""What the compiled frictional-contact backends share: the base class (capability flags,
the check of the normal diagonal), the CSR arrays and warm start of a problem, the
elimination of its free rows (:class:`FreeRows`), the status of a run, and the rounding
floor of the natural map (:mod:`solvers.backends.friction` lists the backends)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.frictional import FrictionalContact
from solvers.numerics.fc_kernels import matvec
from solvers.numerics.fc_methods import Cones, natural_map_cones
from solvers.numerics.fc_schur import recover_free, schur_free_rows, split_rows
from solvers.result import RawSolution
from solvers.tolerance import Tolerance


def _csr(problem: FrictionalContact) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    W = problem.W
    return W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data


def _start(problem: FrictionalContact, opts: SolveOptions) -> np.ndarray:
    if opts.x0 is None:
        return np.zeros(problem.n)
    r = np.array(opts.x0, dtype=np.float64)
    if r.shape != (problem.n,):
        raise ProblemError("warm_start", f"has shape {r.shape}, expected ({problem.n},)")
    return r


def _codes(problem: FrictionalContact) -> tuple[int, int]:
    return (0 if problem.law == "ccp" else 1), (0 if problem.cone == "soc" else 1)


def _wide(problem: FrictionalContact) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """The cone code and flat arrays of a wide problem (:mod:`solvers.numerics.fc_wide`)."""
    return problem.sep, problem.offsets, problem.mu_rows, problem.family  # type: ignore[attr-defined]


def _wide_flag(problem: FrictionalContact) -> tuple[Any, ...]:
    """``(wide, sep, off, mr, fam)``: 1 and :func:`_wide` for a wide problem, else 0 and
    placeholders of the same types (unused by the kernels)."""
    if problem.is_wide:
        return (1, *_wide(problem))
    return (0, 0, np.zeros(1, dtype=np.int64), np.zeros(1), np.zeros(1, dtype=np.int64))


def _cones(problem: FrictionalContact) -> Cones:
    """The feasible set of ``problem``'s contacts for :mod:`solvers.numerics.fc_methods`'
    kernels."""
    wide, sep, off, mr, fam = _wide_flag(problem)
    kind = _codes(problem)[1]
    return Cones(
        wide, kind, problem.mu, problem.dirs, sep, off, mr, fam, problem.row_lo, problem.nc
    )


class FreeRows:
    """A problem's free scalar rows (``row_lo = -inf``: joints) eliminated by their Schur
    complement (:mod:`solvers.numerics.fc_schur`): the kept rows' problem (``csr``, ``q``,
    ``cones``, the same law), the tolerance that stops it where the whole problem is within
    a given one, and the whole problem's impulses and natural map from its solution.

    The kept rows' velocities are the whole problem's and the free rows' are zero, so the
    natural map's numerator is the kept rows' own; only its scale differs (``||q||`` of
    the whole problem, the residual every backend's ``tol`` refers to), which
    :meth:`tol` carries over.
    """

    #: pivots of ``W_FF`` at most this share of their diagonal entry are taken as
    #: dependent rows (a closed loop's redundant joint rows): the rows then stay in the
    #: iteration (the elimination's rounding grows as ``1 / pivot``)
    PIVOT_RTOL = 1e-10
    #: the most free rows eliminated (a dense factorisation, ``nf^3 / 3`` products)
    MAX_FREE = 2000

    def __init__(self, problem: FrictionalContact, parts: tuple[Any, ...]) -> None:
        self.problem = problem
        free, keep, ptr, idx, val, qk, L, Y, J = parts
        self.free, self.keep, self.L, self.Y, self.J = free, keep, L, Y, J
        self.csr = (ptr, idx, val)
        self.q = qk
        self.cones = _cones(problem)._replace(row_lo=_kept_bounds(problem, keep))
        self.qnorm = float(np.sqrt(np.dot(problem.q, problem.q)))
        self.kept_qnorm = float(np.sqrt(np.dot(qk, qk)))

    @classmethod
    def of(cls, problem: FrictionalContact) -> FreeRows | None:
        """The elimination of ``problem``'s free rows; ``None`` without free rows, with more
        than :attr:`MAX_FREE`, or with dependent ones (the rows then stay in the iteration)."""
        lo = problem.row_lo
        nfree = int(np.count_nonzero(lo == -np.inf))
        if nfree == 0 or nfree > cls.MAX_FREE:
            return None
        first = problem.n - lo.size
        free, keep = split_rows(lo, first)
        ok, *parts = schur_free_rows(*_csr(problem), problem.q, free, keep, cls.PIVOT_RTOL)
        if not ok:
            return None
        return cls(problem, (free, keep, *parts))

    def start(self, r: np.ndarray) -> np.ndarray:
        """The kept rows' share of a warm start of the whole problem."""
        return np.ascontiguousarray(r[self.keep])

    def tol(self, tol: float) -> float:
        """The kept rows' tolerance (relative to their own ``||q_K||``, the scale their
        natural map is divided by) that stops them where the whole problem's natural map,
        relative to its ``||q||``, is within ``tol``."""
        return tol * _scale(self.qnorm) / _scale(self.kept_qnorm)

    def whole(self, rk: np.ndarray, law: int) -> tuple[np.ndarray, float]:
        """The whole problem's impulses from the kept rows' ``rk``, and their natural-map
        residual of ``law`` (relative to ``||q||``), measured on ``W`` itself."""
        p = self.problem
        r = np.empty(p.n)
        recover_free(self.L, self.Y, self.J, rk, self.free, self.keep, r)
        u = np.empty(p.n)
        matvec(*_csr(p), r, p.q, u)
        return r, float(natural_map_cones(_cones(p), law, r, u, self.qnorm))


def _scale(qnorm: float) -> float:
    """The natural map's divisor for a free velocity of norm ``qnorm`` (1 below eps)."""
    return qnorm if qnorm > 2.220446049250313e-16 else 1.0


def _kept_bounds(problem: FrictionalContact, keep: np.ndarray) -> np.ndarray:
    """The bounds of the kept scalar rows (``keep``: the kept rows, contacts first)."""
    first = problem.n - problem.row_lo.size
    return np.ascontiguousarray(problem.row_lo[keep[keep >= first] - first])


def _no_settings(name: str, settings: dict[str, Any], known: tuple[str, ...]) -> None:
    if settings:
        raise ProblemError(
            "backend_settings", f"{name} does not know {sorted(settings)}; it takes {list(known)}"
        )


def rounding_floor(problem: FrictionalContact, qnorm: float) -> float:
    """The natural map's rounding floor per unit of ``max |r|``: ``eps sqrt(n) max_i W_ii``
    over the map's scale ``||q||`` (``W`` is positive semidefinite: ``|W_ij| <= max_i W_ii``).

    ``u = W r + q`` is summed over ``n`` products of at most ``max W_ii |r|_inf`` each, so
    its rounding grows with ``|r|_inf``; and ``r - û`` loses every digit of ``û`` below the
    unit of ``r``.  Impulses far beyond the data's scale have a natural map made of rounding:
    when ``W`` annihilates a direction inside the cones (a hinged paddle's contact forces
    whose lines cross the hinge axis: any multiple of them stops it) the interior point can
    follow that ray; on such a step of ``tumble.xml`` a round's CCP reached ``|r| = 2e14``,
    where ``u`` is rounding noise of 1e-2 and the map read 2.7e-8.  A natural map is
    therefore taken as at least ``rounding_floor * |r|_inf`` (below 1e-15 of the tolerance
    for impulses of the data's scale).
    """
    diag = problem.diagonal()
    wmax = float(np.max(diag)) if diag.size else 0.0
    scale = qnorm if qnorm > 2.220446049250313e-16 else 1.0
    return 2.220446049250313e-16 * math.sqrt(problem.n) * max(wmax, 1.0) / scale


def floored(res: float, r: np.ndarray, floor: float) -> float:
    """``res`` raised to the rounding floor of impulses ``r`` (:func:`rounding_floor`)."""
    big = float(np.max(np.abs(r), initial=0.0))
    return max(res, floor * big) if math.isfinite(big) else math.inf


def within_rounding(res: float, r: np.ndarray, floor: float) -> float:
    """``res``, or ``inf`` if it is within the rounding floor of impulses ``r``: the residual
    an interior-point loop is given, so that it stops there (reason ``"not finite"``) and
    returns its best checked iterate instead of following a ray of ``W``'s null space
    inside the cones until its iterates overflow."""
    return res if res > floor * float(np.max(np.abs(r), initial=0.0)) else math.inf


def _status(res: float, tol: float, capped: bool) -> str:
    """``optimal`` within ``tol``; short of it, ``max_iterations`` at the cap, else ``stalled``
    (the best iterate, finite, is kept); ``numerical_error`` only for a non-finite residual."""
    if not np.isfinite(res):
        return "numerical_error"
    if res <= tol:
        return "optimal"
    return "max_iterations" if capped else "stalled"


class FrictionBackend(Backend):
    """Base of the compiled frictional-contact backends."""

    kind = "iterative"
    required_modules: ClassVar[tuple[str, ...]] = ("numba",)
    accepts_fc: ClassVar[bool] = True
    #: Whether the Coulomb law (not only the CCP) is solved natively.
    solves_coulomb: ClassVar[bool] = True
    #: Whether wide cones (torsional and rolling rows) are solved natively.
    accepts_fc_wide: ClassVar[bool] = False
    supports_warm_start = True
    tolerance = Tolerance(1e-6, request=1e-6)

    @classmethod
    def forms(cls) -> list[str]:
        return [
            "frictional contact (ccp, coulomb)"
            if cls.solves_coulomb
            else "frictional contact (ccp)"
        ]

    def check_fc(self, problem: FrictionalContact) -> None:
        """Raise :class:`IncompatibleProblem` unless every normal diagonal entry is positive."""
        diag = problem.diagonal()
        normals = problem.offsets[:-1] if problem.is_wide else np.arange(0, 3 * problem.nc, 3)  # type: ignore[attr-defined]
        bad = np.flatnonzero(diag[normals] <= 0.0)
        if bad.size:
            raise IncompatibleProblem(
                f"{self.name} needs a positive normal diagonal of W; contact {int(bad[0])} has "
                f"W_nn = {diag[normals[bad[0]]]:g}; drop the contact or regularise W"
            )

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        """Solve one local frictional-contact problem (each backend below overrides this)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not solve frictional-contact problems"
        )
