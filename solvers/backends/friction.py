"""Frictional-contact backends: ``nsgs``, ``apgd``, ``admm`` and ``ipm`` (compiled, numba).

Each takes a :class:`~solvers.frictional.FrictionalContact` natively
(``accepts_fc``), reports the natural-map residual of
:func:`solvers.frictional.fc_residuals` (Siconos / FCLIB's ``fc3d`` error,
``||r - P_K(r - û)||_2 / ||q||_2``) as its stopping test, and returns
``max_iterations`` (never ``optimal``) when its cap is reached first.

- ``nsgs``: block nonsmooth Gauss--Seidel over the 3x3 diagonal blocks with an
  exact local solver per law and cone (:mod:`solvers.backends.fc_local`),
  over-relaxation ``omega`` (default 1), scalar rows in the same sweep, warm
  start.  ``max_iter`` counts sweeps (default 10000).  Both laws, every cone.
  For the Coulomb law the sweeps solve the CCP with De Saxcé's shift frozen
  and update the shift as an outer fixed point (:func:`~solvers.backends.fc_kernels.nsgs`);
  ``direct=True`` applies the exact one-contact Coulomb solver in the sweep
  instead, as Siconos's NSGS does.  Measured on the 20-degree incline's step
  problems (a box on four redundant contacts, Delassus blocks with
  normal-tangent coupling 1.5 against a diagonal of 4): the direct sweep
  cycles (natural map 2e-2 after 5000 sweeps, at every ``omega`` tried from
  0.3 to 1), the shifted one converges.
- ``apgd``: Nesterov's accelerated projected gradient with backtracking and
  gradient restart on the CCP; the Coulomb law (not the optimality condition
  of one minimisation) through the same outer fixed point on De Saxcé's shift
  as ``nsgs`` (:func:`~solvers.backends.fc_kernels.apgd`).  ``max_iter``
  default 20000.
- ``admm``: ADMM with residual-balancing penalty ``rho`` (setting ``rho``,
  default ``1e-3 mean(diag W)``, then balanced) and conjugate-gradient ``W + rho I`` solves; both
  laws (De Saxcé's fixed point inside the splitting for Coulomb).
  ``max_iter`` default 5000.

- ``ipm``: primal-dual interior point on the velocity form (Mehrotra, Nesterov--Todd
  scaling; :mod:`solvers.backends.fc_ipm`), one sparse Cholesky of ``M + Ĉ'ΘĈ`` per
  iteration (by 6x6 blocks, or ``qdldl``'s LDL' with bilateral rows), 17--23 iterations on 10- to 200-box pile steps where the
  first-order methods take thousands.  Needs ``FrictionalContact.factor`` (the models
  pass it in maximal coordinates) or a ``W`` of at most 600 rows; bilateral rows in a
  quasi-definite border of the normal matrix.  Warm start (the CCP; the Coulomb fixed
  point starts from zero impulses): impulses that meet the tolerance are returned as they
  are, others become an interior point pushed 3x their natural map inside the cones
  (:meth:`~solvers.backends.fc_ipm.VelocityForm.impulse_point`; 0-2 iterations per step on
  the 1000-box pile at rest, cold 6).  The Coulomb
  law through De Saxcé's fixed point of CCPs (each round solved to 0.3 of the current
  Coulomb residual, starting from the previous round's iterate pushed into the interior:
  on a 200-box step 28 rounds, 447 iterations from fresh starts, 150-170 this way; the
  shift update relaxed while the residual rises).  ``max_iter`` counts
  interior-point iterations (default 100, 500 for the Coulomb law); a run stalled
  short of ``tol`` near the cones' boundary is finished by at most 200 ``nsgs`` sweeps.

All of them need the diagonal of ``W`` positive on contact normal rows; a
contact whose 3x3 block is singular is still handled by the local solvers'
closed forms only if its normal entry is positive.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.frictional import FrictionalContact
from solvers.result import RawSolution


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


def _no_settings(name: str, settings: dict[str, Any], known: tuple[str, ...]) -> None:
    if settings:
        raise ProblemError(
            "backend_settings", f"{name} does not know {sorted(settings)}; it takes {list(known)}"
        )


def _status(res: float, tol: float, capped: bool) -> str:
    if not np.isfinite(res):
        return "numerical_error"
    if res <= tol:
        return "optimal"
    return "max_iterations" if capped else "numerical_error"


class FrictionBackend(Backend):
    """Base of the compiled frictional-contact backends."""

    kind = "iterative"
    required_modules: ClassVar[tuple[str, ...]] = ("numba",)
    accepts_fc: ClassVar[bool] = True
    #: Whether the Coulomb law (not only the CCP) is solved natively.
    solves_coulomb: ClassVar[bool] = True
    supports_warm_start = True
    tolerance = 1e-6
    default_tol = 1e-6

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
        bad = np.flatnonzero(diag[: 3 * problem.nc : 3] <= 0.0)
        if bad.size:
            raise IncompatibleProblem(
                f"{self.name} needs a positive normal diagonal of W; contact {int(bad[0])} has "
                f"W_nn = {diag[3 * bad[0]]:g}; drop the contact or regularise W"
            )

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        """Solve one local frictional-contact problem (each backend below overrides this)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not solve frictional-contact problems"
        )


class NSGSBackend(FrictionBackend):
    """Block nonsmooth Gauss--Seidel with exact local solvers."""

    name = "nsgs"
    description = "nonsmooth block Gauss-Seidel, exact local solvers (CCP and Coulomb)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.backends.fc_kernels import nsgs

        settings = dict(opts.settings)
        omega = float(settings.pop("omega", 1.0))
        direct = bool(settings.pop("direct", False))
        _no_settings(self.name, settings, ("omega", "direct"))
        if not 0.0 < omega < 2.0:
            raise ProblemError("omega", f"the relaxation factor must lie in (0, 2), got {omega}")
        cap = 10000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, kind = _codes(problem)
        r = _start(problem, opts)
        args = (*_csr(problem), problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo)
        t1 = time.perf_counter()
        sweeps, res = nsgs(*args, problem.nc, r, omega, opts.tol, cap, direct)
        t2 = time.perf_counter()
        msg = f"nsgs: natural-map residual {res:.3e} after {sweeps} sweeps (tol {opts.tol:g})"
        status = _status(res, opts.tol, sweeps >= cap)
        return RawSolution(r, None, status, msg, int(sweeps), t1 - t0, t2 - t1)


class APGDBackend(FrictionBackend):
    """Accelerated projected gradient (Nesterov) with adaptive step and restart."""

    name = "apgd"
    description = "accelerated projected gradient with restart (CCP; Coulomb by a fixed point)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.backends.fc_kernels import apgd

        _no_settings(self.name, dict(opts.settings), ())
        cap = 20000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, kind = _codes(problem)
        r = _start(problem, opts)
        t1 = time.perf_counter()
        it, res = apgd(
            *_csr(problem), problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo,
            problem.nc, r, opts.tol, cap,
        )  # fmt: skip
        t2 = time.perf_counter()
        msg = f"apgd: natural-map residual {res:.3e} after {it} iterations (tol {opts.tol:g})"
        return RawSolution(
            r, None, _status(res, opts.tol, it >= cap), msg, int(it), t1 - t0, t2 - t1
        )


class ADMMBackend(FrictionBackend):
    """ADMM with an adaptive penalty."""

    name = "admm"
    kind = "admm"
    description = "ADMM with adaptive penalty (CCP and Coulomb)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.backends.fc_kernels import admm

        settings = dict(opts.settings)
        diag = problem.W.diagonal()
        rho = float(settings.pop("rho", 1e-3 * float(np.mean(diag)) if diag.size else 1.0))
        _no_settings(self.name, settings, ("rho",))
        if not rho > 0.0:
            raise ProblemError("rho", f"the penalty must be positive, got {rho}")
        cap = 5000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, kind = _codes(problem)
        r = _start(problem, opts)
        t1 = time.perf_counter()
        it, res, rho_end = admm(
            *_csr(problem), problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo,
            problem.nc, r, rho, opts.tol, cap,
        )  # fmt: skip
        t2 = time.perf_counter()
        msg = (
            f"admm: natural-map residual {res:.3e} after {it} iterations "
            f"(tol {opts.tol:g}, final rho {rho_end:.3g})"
        )
        return RawSolution(
            r, None, _status(res, opts.tol, it >= cap), msg, int(it), t1 - t0, t2 - t1
        )


class IPMBackend(FrictionBackend):
    """Primal-dual interior point on the velocity form (:mod:`solvers.backends.fc_ipm`)."""

    name = "ipm"
    kind = "interior_point"
    required_modules = ("numba", "qdldl")
    description = (
        "primal-dual interior point, velocity form, sparse LDL' (CCP; Coulomb by a fixed point)"
    )
    supports_warm_start = True
    #: A warm start's impulses that miss the tolerance become an interior point pushed
    #: inside the cones by this multiple of their natural map (times the free velocity's
    #: scale; :meth:`~solvers.backends.fc_ipm.VelocityForm.impulse_point`).
    warm_push = 3.0
    #: The CCP's natural map is checked every other iteration while above this multiple of
    #: the tolerance (``ipm_ccp(far=...)``).
    check_far = 30.0
    # an interior iterate spreads its error over every contact: at the natural map 1e-6 the
    # body velocities of a three-cube step differ from the reference by 2.8e-5 m/s, at 1e-8
    # they agree to 1e-5 like the other backends' at 1e-6
    default_tol = 1e-8
    #: Models pass ``W``'s factor ``(C, M^-1)`` with the local problem
    #: (``FrictionalContact.factor``).
    uses_fc_factor = True
    #: Whether a fixed-point round starts from the previous round's iterate, and how far
    #: into the interior it is pushed (times the change of the slack the new shift makes).
    warm_rounds = True
    push = 1.0
    #: Each round's CCP is solved to this fraction of the current Coulomb residual.
    inner_factor = 0.3
    #: Gauss--Seidel sweeps that may finish a run stalled short of the tolerance.
    polish_sweeps = 200
    #: Largest ``W`` factored by its eigendecomposition when the problem carries no factor.
    dense_limit = 600

    def check_fc(self, problem: FrictionalContact) -> None:
        super().check_fc(problem)
        if problem.factor is None and problem.n > self.dense_limit:
            raise IncompatibleProblem(
                f"ipm needs the factor W = C diag(d) C' (FrictionalContact(factor=...)) for "
                f"problems over {self.dense_limit} rows; this one has {problem.n}"
            )

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        import scipy.sparse as sp

        from solvers.backends.fc_ipm import VelocityForm, eig_factor, ipm_ccp
        from solvers.backends.fc_kernels import factor_velocity, matvec, natural_map, support_shift

        _no_settings(self.name, dict(opts.settings), ())
        law, kind = _codes(problem)
        cap = (100 if law == 0 else 500) if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        if problem.factor is not None:
            C, d = problem.factor
            C = sp.csr_matrix(C)
        else:
            Cd, d = eig_factor(problem.W.toarray())
            C = sp.csr_matrix(Cd)
        form = VelocityForm(problem, C, d)
        # no BLAS call on a long vector: on a loaded machine its thread start-up cost ms
        qnorm = math.sqrt(float(np.einsum("i,i->", problem.q, problem.q)))
        u = np.empty(problem.n)
        if problem.factor is not None:
            # u = W r + q through the factor (W itself is never formed on this path)
            fptr, fidx, fval = C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data
            fd, ftmp = np.ascontiguousarray(d, dtype=np.float64), np.empty(C.shape[1])

            def velocity(r: np.ndarray, q: np.ndarray) -> None:
                factor_velocity(fptr, fidx, fval, fd, r, q, ftmp, u)

        else:
            ptr, idx, val = _csr(problem)

            def velocity(r: np.ndarray, q: np.ndarray) -> None:
                matvec(ptr, idx, val, r, q, u)

        def residual(r: np.ndarray) -> tuple[float, np.ndarray]:
            velocity(r, problem.q)
            res = natural_map(
                law, kind, problem.mu, problem.dirs, problem.row_lo, problem.nc, r, u, qnorm
            )
            return float(res), u

        t1 = time.perf_counter()
        if law == 0:
            rounds = 1
            point = None
            if opts.x0 is not None:
                r = _start(problem, opts)
                res, _ = residual(r)
                if res <= opts.tol:
                    total, reason = 0, "converged at the warm start"
                else:
                    push = min(max(self.warm_push * res, 1e-12), 1e-2)
                    point = form.impulse_point(r, problem.q, push)
            if opts.x0 is None or point is not None:
                r, total, res, reason = ipm_ccp(
                    form, problem.q, opts.tol, cap, residual, point=point, far=self.check_far
                )
        else:
            # De Saxcé's fixed point: a sequence of CCPs with the shift h(u_t) frozen in q,
            # each solved to a tenth of the current Coulomb residual (not below tol / 2)
            qs = problem.q.copy()
            res, _ = residual(np.zeros(problem.n))
            total, rounds, reason = 0, 0, "cap"
            r = np.zeros(problem.n)
            normal_rows = np.arange(0, 3 * problem.nc, 3)
            theta, prev = 1.0, np.inf
            while total < cap:
                rounds += 1
                # the shift h(u_t) of the last solution, relaxed by theta (halved while the
                # Coulomb residual stalls: the plain iteration can settle in a 2-cycle, on a
                # 100-box step at 2.0e-5 / 2.2e-5 after 30 rounds)
                old = qs[normal_rows].copy()
                support_shift(kind, problem.mu, problem.dirs, problem.nc, problem.q, u, qs)
                if rounds > 1:
                    if res > prev:
                        theta = max(0.5 * theta, 0.125)
                    elif res < 0.7 * prev:
                        theta = min(2.0 * theta, 1.0)
                    qs[normal_rows] = old + theta * (qs[normal_rows] - old)
                prev = res

                def inner(r_in: np.ndarray) -> tuple[float, np.ndarray]:
                    velocity(r_in, qs)
                    out = natural_map(
                        0, kind, problem.mu, problem.dirs, problem.row_lo, problem.nc, r_in, u,
                        qnorm,
                    )  # fmt: skip
                    return float(out), u

                inner_tol = max(0.5 * opts.tol, self.inner_factor * res)
                warm = rounds > 1 and self.warm_rounds and form.last is not None
                start = (*form.last, self.push) if warm and form.last is not None else None
                r, it, _, reason = ipm_ccp(form, qs, inner_tol, cap - total, inner, start)
                total += it
                res, _ = residual(r)
                if res <= opts.tol or not np.isfinite(res):
                    break
        sweeps = 0
        if res > opts.tol and np.all(np.isfinite(r)):
            # near the cones' boundary the scaling loses digits (the iterates stall around
            # 1e-7): finish from the interior point's impulses with Gauss--Seidel sweeps
            from solvers.backends.fc_kernels import nsgs

            r = r.copy()
            ptr, idx, val = _csr(problem)
            args = (ptr, idx, val, problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo)
            sweeps, res = nsgs(*args, problem.nc, r, 1.0, opts.tol, self.polish_sweeps, False)
            res = float(res)
            reason = "converged" if res <= opts.tol else reason
        t2 = time.perf_counter()
        msg = (
            f"ipm: natural-map residual {res:.3e} after {total} iterations"
            + (f" and {sweeps} nsgs sweeps" if sweeps else "")
            + (f" in {rounds} fixed-point rounds" if law == 1 else "")
            + f" (tol {opts.tol:g}; {reason})"
        )
        capped = reason == "cap" or total >= cap
        if capped and res > opts.tol:
            reason = "iteration cap"
        status = _status(res, opts.tol, capped)
        return RawSolution(r, None, status, msg, total + int(sweeps), t1 - t0, t2 - t1)


FRICTION_BACKENDS: list[type[Backend]] = [NSGSBackend, APGDBackend, ADMMBackend, IPMBackend]
