"""Frictional-contact problems in FCLIB's local and global forms, with their residuals.

Local form (FCLIB ``fclib_local``): find impulses ``r`` and velocities ``u``

.. math:: u = W r + q, \\qquad \\text{law}(r_i, u_i; \\mu_i) \\text{ for every contact } i,

with ``W`` the ``(3 nc, 3 nc)`` Delassus matrix, three rows per contact in the
order ``(normal, tangent 1, tangent 2)``.  Optional *scalar rows* after the
contacts carry a lower bound ``row_lo``: ``-inf`` for a bilateral row
(``u = 0``, ``r`` free) or ``0`` for a unilateral row without friction
(``0 <= r ⟂ u >= 0``); they let a joint or a joint limit share the sweep.

Global form (FCLIB ``fclib_global``): ``M v = H r + f`` (plus ``G' r_b`` for
bilateral rows ``G v + b = 0``), ``u = H' v + w``; for an SPD ``M`` it reduces
to the local form with ``W = H' M^{-1} H``, ``q = H' M^{-1} f + w``
(:meth:`GlobalFrictionalContact.to_local`).

The cone is data: ``"soc"`` (the exact Coulomb cone ``||r_t|| <= mu r_n``),
``"pyramid"`` (``directions`` sides: ``r_t`` in ``mu r_n`` times the convex
hull of the unit directions at angles ``2 pi j / k``, Anitescu--Hart's
pyramid) or ``"box"`` (``|r_tk| <= mu r_n``, box friction).  Two laws:

- ``"ccp"`` -- the cone complementarity problem ``K ∋ r ⟂ u ∈ K*``
  (Anitescu--Hart's relaxation; a sliding contact separates at
  ``u_n = h(u_t)``);
- ``"coulomb"`` -- the Coulomb law as De Saxcé's NCP ``K ∋ r ⟂ û ∈ K*``,
  ``û = (u_n + h(u_t), u_t)`` with the cone's support function ``h``
  (``mu ||u_t||`` for the exact cone): no separation while sliding, friction
  opposite the slip at full magnitude.

Residuals (:func:`fc_residuals`):

- ``natural_map`` -- the natural map of Siconos's ``fc3d`` error,
  ``||r - P_K(r - û)||_2 / ||q||_2`` (``û = u`` for the CCP; divided by 1 when
  ``||q||_2`` is below machine epsilon), summed over contacts and scalar rows.
  The numerator is Siconos's; Siconos 4.4's ``fc3d_compute_error`` divides it by
  ``max(||q||_2, ||r||_2, ||u||_2)``, so this number is never the smaller
  (``tests/solvers/test_siconos_oracle.py``).
  It adds impulses and velocities (``ρ = 1``), so for contact problems in SI
  units it is in [N s] per [m/s] of ``||q||``, i.e. dimensionless relative to
  the free velocity; this is the number every backend's ``tol`` refers to;
- ``signorini`` [N s or m/s] -- ``max_i |min(r_n, u_n)|`` with
  ``max(-r_n, -u_n, 0)`` (non-zero for the CCP while sliding: its gap);
- ``cone`` [N s] -- ``max_i`` distance of ``r_t`` outside ``mu r_n`` times the section;
- ``dissipation`` [N s] -- ``max_i |r_t + mu r_n u_t/||u_t|| |`` over contacts
  sliding faster than ``1e-6`` m/s with ``r_n > 0`` (exact cone), the metric
  ``contactlab.metrics`` records for steps.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from solvers.errors import ProblemError
from solvers.numerics.fc_kernels import (
    csr_symmetric,
    factor_diagonal,
    factor_soc_residuals,
    factor_velocity,
    natural_map,
    soc_measures,
)
from solvers.problems import Matrix, _as_sparse, _as_vector, is_symmetric

Law = Literal["ccp", "coulomb"]
Cone = Literal["soc", "pyramid", "box"]
LAWS: tuple[str, ...] = ("ccp", "coulomb")
CONES: tuple[str, ...] = ("soc", "pyramid", "box")

#: Slip speed above which the dissipation measure looks at a contact [m/s].
SLIP_SPEED = 1e-6

Vec = NDArray[np.float64]


def cone_directions(cone: str, directions: int) -> Vec:
    """``(k, 2)`` vertices of the cone's section at ``mu = 1`` in angular order.

    ``(0, 2)`` for the exact cone; the ``k`` unit directions at ``2 pi j / k``
    for the pyramid; the four corners ``(±1, ±1)`` for the box.
    """
    if cone == "soc":
        return np.zeros((0, 2))
    if cone == "box":
        return np.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]])
    a = 2.0 * np.pi * np.arange(directions) / directions
    return np.column_stack([np.cos(a), np.sin(a)])


def problem_kind(law: str, cone: str) -> str:
    """The problem kind (:mod:`solvers.fitting`) of a law and cone."""
    if law == "ccp":
        return "fc_ccp_soc" if cone == "soc" else "fc_ccp_poly"
    return "fc_coulomb_pyramid" if cone == "pyramid" else "fc_coulomb"


def _symmetric(W: sp.csr_matrix) -> bool:
    """``W`` equals its transpose to ``1e-8 max|W|`` (compiled check, no transpose formed)."""
    scale = max(float(np.abs(W.data).max()) if W.nnz else 0.0, 1.0)
    return bool(
        csr_symmetric(W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data, 1e-8 * scale)
    )


def _check_choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ProblemError(name, f"must be one of {list(allowed)}, got {value!r}")


def _check_mu(mu: Vec) -> None:
    bad = np.flatnonzero(mu < 0)
    if bad.size:
        raise ProblemError(
            "mu", f"friction coefficients must be >= 0; mu[{bad[0]}] = {mu[bad[0]]} is negative"
        )


class FrictionalContact:
    """Local frictional-contact problem ``u = W r + q`` with a law and a cone per contact.

    Parameters
    ----------
    W
        ``(3 nc + ms, 3 nc + ms)`` symmetric positive semidefinite Delassus
        matrix (sparse or dense), contact rows first; ``None`` with ``factor``
        given: formed from the factor only if something asks for it (the
        velocity ``W r + q`` goes through the factor).
    q
        ``(3 nc + ms,)`` free velocity [m/s].
    mu
        ``(nc,)`` friction coefficients [-], finite and non-negative.
    law
        ``"ccp"`` or ``"coulomb"``.
    cone
        ``"soc"``, ``"pyramid"`` or ``"box"``.
    directions
        Sides of the pyramid (even, >= 4); ignored for the other cones.
    row_lo
        ``(ms,)`` lower bounds of the scalar rows after the contacts, each
        ``-inf`` (bilateral) or ``0`` (unilateral without friction).
    factor
        Optional ``(C, d)``: a sparse ``(3 nc + ms, nv)`` matrix and a positive
        ``(nv,)`` vector with ``W = C diag(d) C'`` (the rows and the inverse
        diagonal mass of a step in maximal coordinates), for backends that
        work on the velocity form (``ipm``); not checked against ``W``.
    """

    #: whether contacts have wide cones (:class:`solvers.frictional_wide.WideFrictionalContact`)
    is_wide = False

    def __init__(
        self,
        W: Matrix | None,
        q: ArrayLike,
        mu: ArrayLike,
        law: str = "coulomb",
        cone: str = "soc",
        directions: int = 4,
        row_lo: ArrayLike | None = None,
        factor: tuple[sp.csr_matrix, Vec] | None = None,
    ) -> None:
        q_arr = np.asarray(q, dtype=np.float64).reshape(-1)
        n = q_arr.shape[0]
        mu_arr = np.asarray(mu, dtype=np.float64).reshape(-1)
        self.mu = _as_vector("mu", mu_arr, mu_arr.shape[0], finite=True)
        _check_mu(self.mu)
        nc = self.mu.shape[0]
        lo = np.zeros(0) if row_lo is None else np.asarray(row_lo, dtype=np.float64).reshape(-1)
        if 3 * nc + lo.shape[0] != n:
            raise ProblemError(
                "q",
                f"has {n} rows, expected 3 per contact plus one per scalar row: "
                f"3 * {nc} + {lo.shape[0]} = {3 * nc + lo.shape[0]}",
            )
        if lo.size and not np.all((lo == 0.0) | (lo == -np.inf)):
            raise ProblemError("row_lo", "each scalar row's bound must be 0 or -inf")
        self.q = _as_vector("q", q_arr, n, finite=True)
        if W is None and factor is None:
            raise ProblemError(
                "W", "is required unless factor=(C, d) with W = C diag(d) C' is given"
            )
        self._W: sp.csr_matrix | None = None
        self._diag: Vec | None = None
        if W is not None:
            self._W = _as_sparse("W", W, (n, n), "csr")
            if not _symmetric(self._W):
                raise ProblemError("W", "must be symmetric (a Delassus matrix H' M^-1 H is)")
        _check_choice("law", law, LAWS)
        _check_choice("cone", cone, CONES)
        if cone == "pyramid" and (
            isinstance(directions, bool) or int(directions) != directions or directions < 4
        ):
            raise ProblemError("directions", f"must be an integer >= 4, got {directions!r}")
        self.law = law
        self.cone = cone
        self.directions = int(directions) if cone == "pyramid" else 4
        self.row_lo = lo.copy()
        if factor is not None:
            C_f, d_f = factor
            if C_f.shape[0] != n or np.shape(d_f) != (C_f.shape[1],) or np.any(d_f <= 0):
                raise ProblemError(
                    "factor", f"needs C with {n} rows and a positive d with one entry per column"
                )
        self.factor = factor
        if factor is not None:
            # compiled products with the factor: u = C (d * (C' r)) + q
            C_csr = factor[0]
            if not (sp.issparse(C_csr) and C_csr.format == "csr"):
                C_csr = sp.csr_matrix(C_csr)
            self._fptr = C_csr.indptr.astype(np.int64)
            self._fidx = C_csr.indices.astype(np.int64)
            self._fval = np.ascontiguousarray(C_csr.data, dtype=np.float64)
            self._fd = np.ascontiguousarray(factor[1], dtype=np.float64)

    @property
    def factor_arrays(self) -> tuple[NDArray[np.int64], NDArray[np.int64], Vec, Vec]:
        """``(indptr, indices, data, d)`` of the factor's CSR ``C`` (int64 indices) and ``d``."""
        if self.factor is None:
            raise ProblemError("factor", "this problem carries no factor W = C diag(d) C'")
        return self._fptr, self._fidx, self._fval, self._fd

    @property
    def W(self) -> sp.csr_matrix:
        """The Delassus matrix; given, or formed once from ``factor`` on first use."""
        if self._W is None:
            C, d = self.factor  # type: ignore[misc]
            C = sp.csr_matrix(C)
            W = (C @ sp.diags(np.asarray(d, dtype=np.float64)) @ C.T).tocsr()
            self._W = (0.5 * (W + W.T)).tocsr()  # equal up to rounding: make it exact
            self._W.sort_indices()
        return self._W

    @property
    def nc(self) -> int:
        """Number of contacts."""
        return int(self.mu.shape[0])

    @property
    def n(self) -> int:
        """Number of rows ``3 nc + ms``."""
        return int(self.q.shape[0])

    @property
    def kind(self) -> str:
        """Kind for :func:`solvers.fitting.fit` (registered by :mod:`solvers.fc_dispatch`)."""
        return problem_kind(self.law, self.cone)

    @property
    def dirs(self) -> Vec:
        """Vertices of the cone's section at ``mu = 1`` (see :func:`cone_directions`)."""
        return cone_directions(self.cone, self.directions)

    def velocity(self, r: Vec) -> Vec:
        """``u = W r + q`` (through the factor when ``W`` was not given)."""
        if self._W is None:
            u = np.empty(self.n)
            tmp = np.empty(self._fd.shape[0])
            r = np.ascontiguousarray(r, dtype=np.float64)
            factor_velocity(self._fptr, self._fidx, self._fval, self._fd, r, self.q, tmp, u)
            return u
        return np.asarray(self._W @ r + self.q)

    def diagonal(self) -> Vec:
        """The diagonal of ``W``, through the factor (``sum_k C_ik^2 d_k``) if W is not formed."""
        if self._W is None:
            if self._diag is None:
                # compiled; the sums in the order of np.bincount over the rows' entries
                diag = factor_diagonal(self._fptr, self._fidx, self._fval, self._fd)
                diag.flags.writeable = False
                self._diag = diag
            return self._diag
        return np.asarray(self._W.diagonal())

    def with_law(self, law: str) -> FrictionalContact:
        """The same data under another law."""
        return FrictionalContact(
            self._W, self.q, self.mu, law, self.cone, self.directions, self.row_lo, self.factor
        )

    def __repr__(self) -> str:
        return (
            f"FrictionalContact(nc={self.nc}, scalar_rows={self.row_lo.size}, law={self.law!r}, "
            f"cone={self.cone!r}, nnz(W)={'lazy' if self._W is None else self._W.nnz})"
        )


class GlobalFrictionalContact:
    """Global frictional-contact problem (FCLIB ``fclib_global``).

    .. math::

        M v = H r + G^T r_b + f, \\quad u = H^T v + w, \\quad G v + b = 0,
        \\quad \\text{law}(r_i, u_i; \\mu_i)

    Parameters
    ----------
    M
        ``(n, n)`` symmetric positive definite mass matrix.
    H
        ``(n, 3 nc)`` contact Jacobian transposed (columns normal first).
    f
        ``(n,)`` free momentum / force term.
    w
        ``(3 nc,)`` contact velocity offset [m/s].
    mu
        ``(nc,)`` friction coefficients.
    G, b
        Optional bilateral rows ``G (mb, n)`` with ``G v + b = 0``.
    law, cone, directions
        As in :class:`FrictionalContact`.
    """

    def __init__(
        self,
        M: Matrix,
        H: Matrix,
        f: ArrayLike,
        w: ArrayLike,
        mu: ArrayLike,
        G: Matrix | None = None,
        b: ArrayLike | None = None,
        law: str = "coulomb",
        cone: str = "soc",
        directions: int = 4,
    ) -> None:
        mu_arr = np.asarray(mu, dtype=np.float64).reshape(-1)
        self.mu = _as_vector("mu", mu_arr, mu_arr.shape[0], finite=True)
        _check_mu(self.mu)
        nc = self.mu.shape[0]
        f_arr = np.asarray(f, dtype=np.float64).reshape(-1)
        n = f_arr.shape[0]
        self.f = _as_vector("f", f_arr, n, finite=True)
        self.M = _as_sparse("M", M, (n, n), "csc")
        if not is_symmetric(self.M, 1e-8):
            raise ProblemError("M", "must be symmetric positive definite")
        self.H = _as_sparse("H", H, (n, 3 * nc), "csc")
        self.w = _as_vector("w", w, 3 * nc, finite=True)
        if (G is None) != (b is None):
            raise ProblemError("G/b", "give both G and b for bilateral rows, or neither")
        self.G = _as_sparse("G", G, None, "csr") if G is not None else sp.csr_matrix((0, n))
        if self.G.shape[1] != n:
            raise ProblemError("G", f"has {self.G.shape[1]} columns, expected {n}")
        self.b = _as_vector("b", b, self.G.shape[0], finite=True) if b is not None else np.zeros(0)
        _check_choice("law", law, LAWS)
        _check_choice("cone", cone, CONES)
        self.law = law
        self.cone = cone
        self.directions = int(directions)

    @property
    def nc(self) -> int:
        """Number of contacts."""
        return int(self.mu.shape[0])

    @property
    def kind(self) -> str:
        """The kind of its local form (the layer converts it first)."""
        return problem_kind(self.law, self.cone)

    def to_local(self) -> FrictionalContact:
        """The local problem in ``(r, r_b)``: contacts, then bilateral rows ``G v + b = 0``."""
        from solvers.conversions import spd_inverse

        Minv = spd_inverse(self.M)
        C = sp.vstack([self.H.T, self.G], format="csr")
        MinvCT = Minv @ C.T.tocsc() if sp.issparse(Minv) else Minv.solve(C.T.toarray())
        W = sp.csr_matrix(C @ MinvCT)
        W = (W + W.T) * 0.5
        Minv_f = Minv @ self.f if sp.issparse(Minv) else Minv.solve(self.f)
        q = np.asarray(C @ Minv_f) + np.concatenate([self.w, self.b])
        lo = np.full(self.G.shape[0], -np.inf)
        return FrictionalContact(W, q, self.mu, self.law, self.cone, self.directions, lo)

    def velocity(self, r_local: Vec) -> Vec:
        """``v = M^{-1}(f + H r + G' r_b)`` from the local unknowns ``(r, r_b)``."""
        from scipy.sparse.linalg import spsolve

        C = sp.vstack([self.H.T, self.G], format="csr")
        return np.asarray(spsolve(self.M.tocsc(), self.f + C.T @ r_local))


def _support(problem: FrictionalContact, ut: Vec) -> Vec:
    """``h(u_t)`` per contact for ``ut`` of shape ``(nc, 2)``."""
    if problem.cone == "soc":
        return problem.mu * np.linalg.norm(ut, axis=1)
    return problem.mu * np.max(-(ut @ problem.dirs.T), axis=1)


def fc_residuals(problem: FrictionalContact, r: Vec) -> dict[str, float]:
    """Natural-map, Signorini, cone and dissipation residuals of ``r`` (module docstring)."""
    return residuals_and_velocity(problem, r)[0]


def residuals_and_velocity(problem: FrictionalContact, r: Vec) -> tuple[dict[str, float], Vec]:
    """:func:`fc_residuals` and the velocity ``u = W r + q`` they were measured at."""
    if problem.is_wide:
        return problem.residuals_and_velocity(r)  # type: ignore[attr-defined,no-any-return]
    nc = problem.nc
    law = 0 if problem.law == "ccp" else 1
    if problem._W is None and problem.cone == "soc":
        # through the factor, the exact cone: the same kernels in one call
        u = np.empty(problem.n)
        nat, sig, cone, dis = factor_soc_residuals(
            problem._fptr, problem._fidx, problem._fval, problem._fd,
            np.ascontiguousarray(r, dtype=np.float64), problem.q, np.empty(problem._fd.shape[0]),
            u, law, problem.mu, problem.dirs, problem.row_lo, nc,
            math.sqrt(float(np.einsum("i,i->", problem.q, problem.q))), SLIP_SPEED,
        )  # fmt: skip
        measures = {"natural_map": float(nat), "signorini": float(sig), "cone": float(cone),
                    "dissipation": float(dis)}  # fmt: skip
        return measures, u
    u = problem.velocity(r)
    kind = 0 if problem.cone == "soc" else 1
    nat = float(
        natural_map(
            law,
            kind,
            problem.mu,
            problem.dirs,
            problem.row_lo,
            nc,
            np.ascontiguousarray(r, dtype=np.float64),
            u,
            math.sqrt(float(np.einsum("i,i->", problem.q, problem.q))),  # no BLAS threads
        )
    )
    out = {"natural_map": nat, "signorini": 0.0, "cone": 0.0, "dissipation": 0.0}
    if nc == 0:
        return out, u
    if problem.cone == "soc":  # compiled, contact by contact (the same arithmetic)
        sig, cone, dis = soc_measures(
            np.ascontiguousarray(r, dtype=np.float64), u, problem.mu, nc, SLIP_SPEED
        )
        out["signorini"], out["cone"], out["dissipation"] = float(sig), float(cone), float(dis)
        return out, u
    R = r[: 3 * nc].reshape(nc, 3)
    U = u[: 3 * nc].reshape(nc, 3)
    rn, un = R[:, 0], U[:, 0]
    out["signorini"] = float(
        np.max(np.maximum(np.abs(np.minimum(rn, un)), np.maximum(np.maximum(-rn, -un), 0.0)))
    )
    rt, ut = R[:, 1:], U[:, 1:]
    if problem.cone == "soc":
        outside = np.linalg.norm(rt, axis=1) - problem.mu * rn
    else:
        # distance outside the polygon mu r_n conv(dirs), by edge half-planes
        d = problem.dirs
        e = np.roll(d, -1, axis=0) - d
        nrm = np.column_stack([e[:, 1], -e[:, 0]])
        nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
        offset = np.sum(nrm * d, axis=1)
        outside = np.max(rt @ nrm.T - np.outer(problem.mu * rn, offset), axis=1)
    out["cone"] = float(np.max(np.maximum(outside, 0.0)))
    speed = np.linalg.norm(ut, axis=1)
    sliding = (speed > SLIP_SPEED) & (rn > 0)
    if np.any(sliding) and problem.cone == "soc":
        ideal = -(problem.mu * rn)[sliding, None] * ut[sliding] / speed[sliding, None]
        out["dissipation"] = float(np.max(np.linalg.norm(rt[sliding] - ideal, axis=1)))
    elif np.any(sliding):
        # polyhedral cones: the dissipated power falls short of its maximum mu r_n h(u_t)
        power = -np.sum(rt * ut, axis=1) - rn * _support(problem, ut)
        out["dissipation"] = float(np.max(np.abs(power[sliding]) / speed[sliding]))
    return out, u
