"""The local frictional-contact problem with wide cones: torsional and rolling rows.

:class:`WideFrictionalContact` is :class:`~solvers.frictional.FrictionalContact` with a
cone dimension per contact (3 to 6 rows: normal, two sliding rows, then optionally the
spin row about the normal and two rolling rows, MuJoCo's ``condim`` 4 and 6) and a
friction coefficient per tangential row, held in flat arrays:

- ``offsets`` ``(nc + 1,)``: contact ``i`` owns rows ``offsets[i] .. offsets[i+1] - 1``,
  its normal row first;
- ``mu_rows`` ``(offsets[-1],)``: the coefficient of each tangential row (``mu`` on the
  sliding rows, ``mu_t`` and ``mu_r`` [m] on the spin and rolling rows; the entry of a
  normal row is unused);
- ``family`` ``(offsets[-1],)``: a label per row (0 normal, 1 sliding, 2 spin, 3 rolling);
  consecutive rows of one family form one group of the separate cone.

The cone (``cone``) is ``"elliptic"`` (``||D^-1 r_T|| <= r_n``, MuJoCo's, the
coefficients ``D = diag(mu_rows)`` of the contact) or ``"separate"`` (``||r_g|| <= mu_g
r_n`` per family, each bounded by the full normal impulse); the laws are the CCP
(Anitescu--Hart's relaxation, ``K ∋ r ⟂ u ∈ K*``) and Coulomb's in De Saxcé's form
(``K ∋ r ⟂ (u_n + h(u_T), u_T) ∈ K*``, ``h`` the dual norm: ``||D u_T||`` elliptic,
``sum_g mu_g ||u_g||`` separate).  Scalar rows (``row_lo``) follow the contacts as in
:class:`~solvers.frictional.FrictionalContact`.  The compiled maps (projection, local
solver, natural map) are :mod:`solvers.numerics.fc_wide`; the problem kinds
``fc_wide_ccp`` and ``fc_wide_coulomb`` are registered by :mod:`solvers.fc_dispatch`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from solvers.errors import ProblemError
from solvers.frictional import LAWS, FrictionalContact, _check_choice
from solvers.problems import Matrix, _as_sparse, _as_vector

WIDE_CONES: tuple[str, ...] = ("elliptic", "separate")

#: the family labels of a contact's rows by its dimension (normal, sliding, spin, rolling)
FAMILIES: dict[int, tuple[int, ...]] = {
    3: (0, 1, 1),
    4: (0, 1, 1, 2),
    5: (0, 1, 1, 3, 3),
    6: (0, 1, 1, 2, 3, 3),
}

Vec = NDArray[np.float64]


def wide_kind(law: str) -> str:
    """The problem kind (:mod:`solvers.fitting`) of a wide problem under ``law``."""
    return "fc_wide_ccp" if law == "ccp" else "fc_wide_coulomb"


class WideFrictionalContact(FrictionalContact):
    """Local frictional-contact problem ``u = W r + q`` with a wide cone per contact.

    Parameters
    ----------
    W
        ``(m + ms, m + ms)`` symmetric positive semidefinite Delassus matrix,
        ``m = offsets[-1]`` contact rows first.
    q
        ``(m + ms,)`` free velocity.
    offsets
        ``(nc + 1,)`` increasing integers from 0, each contact 3 to 6 rows.
    mu_rows
        ``(m,)`` friction coefficient of each row (finite, >= 0; a normal row's is unused).
    law
        ``"ccp"`` or ``"coulomb"``.
    cone
        ``"elliptic"`` or ``"separate"``.
    row_lo
        ``(ms,)`` bounds of the scalar rows (``-inf`` bilateral, ``0`` unilateral).
    family
        ``(m,)`` family label per row; default by each contact's dimension
        (:data:`FAMILIES`).
    """

    is_wide = True

    def __init__(
        self,
        W: Matrix,
        q: ArrayLike,
        offsets: ArrayLike,
        mu_rows: ArrayLike,
        law: str = "coulomb",
        cone: str = "elliptic",
        row_lo: ArrayLike | None = None,
        family: ArrayLike | None = None,
    ) -> None:
        off = np.asarray(offsets)
        if off.ndim != 1 or off.size < 1 or not np.issubdtype(off.dtype, np.integer):
            raise ProblemError("offsets", "must be a 1-d integer array starting at 0")
        off = off.astype(np.int64)
        dims = np.diff(off)
        if off[0] != 0 or np.any((dims < 3) | (dims > 6)):
            raise ProblemError(
                "offsets", "must start at 0 and give each contact 3 to 6 rows (normal first)"
            )
        m = int(off[-1])
        q_arr = np.asarray(q, dtype=np.float64).reshape(-1)
        n = q_arr.shape[0]
        lo = np.zeros(0) if row_lo is None else np.asarray(row_lo, dtype=np.float64).reshape(-1)
        if m + lo.shape[0] != n:
            raise ProblemError(
                "q", f"has {n} rows, expected the contacts' {m} plus {lo.shape[0]} scalar rows"
            )
        if lo.size and not np.all((lo == 0.0) | (lo == -np.inf)):
            raise ProblemError("row_lo", "each scalar row's bound must be 0 or -inf")
        self.q = _as_vector("q", q_arr, n, finite=True)
        mr = _as_vector("mu_rows", mu_rows, m, finite=True)
        if np.any(mr < 0):
            bad = int(np.flatnonzero(mr < 0)[0])
            raise ProblemError("mu_rows", f"coefficients must be >= 0; mu_rows[{bad}] = {mr[bad]}")
        if family is None:
            fam = np.concatenate([FAMILIES[int(d)] for d in dims]) if dims.size else np.zeros(0)
        else:
            fam = np.asarray(family).reshape(-1)
            if fam.shape != (m,):
                raise ProblemError("family", f"has shape {fam.shape}, expected ({m},)")
        self.family = np.ascontiguousarray(fam, dtype=np.int64)
        if np.any(self.family[off[:-1]] != 0) if dims.size else False:
            raise ProblemError("family", "each contact's first (normal) row must have family 0")
        mr[off[:-1]] = 1.0  # the normal rows' entries are unused
        if cone == "separate" and m:
            same = (self.family[1:] == self.family[:-1]) & (self.family[1:] != 0)
            clash = np.flatnonzero(same & (mr[1:] != mr[:-1]))
            if clash.size:
                j = int(clash[0])
                raise ProblemError(
                    "mu_rows",
                    f"the separate cone takes one coefficient per family; rows {j} and "
                    f"{j + 1} of one family differ ({mr[j]} and {mr[j + 1]})",
                )
        self.mu_rows = mr
        self.offsets = off
        _check_choice("law", law, LAWS)
        _check_choice("cone", cone, WIDE_CONES)
        self.law = law
        self.cone = cone
        self.directions = 4
        self.row_lo = lo.copy()
        self.mu = mr[off[:-1] + 1].copy()  # the sliding coefficient of each contact
        self._W = _as_sparse("W", W, (n, n), "csr")
        self._W.sort_indices()
        from solvers.frictional import _symmetric

        if not _symmetric(self._W):
            raise ProblemError("W", "must be symmetric (a Delassus matrix H' M^-1 H is)")
        self._diag = None
        self.factor = None

    @property
    def nc(self) -> int:
        return int(self.offsets.size - 1)

    @property
    def sep(self) -> int:
        """The cone code of :mod:`solvers.numerics.fc_wide` (0 elliptic, 1 separate)."""
        return 0 if self.cone == "elliptic" else 1

    @property
    def kind(self) -> str:
        return wide_kind(self.law)

    @property
    def dirs(self) -> Vec:
        return np.zeros((0, 2))

    @property
    def normal_rows(self) -> NDArray[np.int64]:
        """The row of each contact's normal component."""
        return self.offsets[:-1]

    def with_law(self, law: str) -> WideFrictionalContact:
        return WideFrictionalContact(
            self._W, self.q, self.offsets, self.mu_rows, law, self.cone, self.row_lo, self.family
        )

    def project(self, x: ArrayLike) -> Vec:
        """Euclidean projection of ``x`` onto the product of the cones and scalar bounds."""
        from solvers.numerics.fc_wide import project_all_wide

        x = np.ascontiguousarray(x, dtype=np.float64)
        out = np.empty_like(x)
        project_all_wide(
            self.sep, self.offsets, self.mu_rows, self.family, self.row_lo, self.nc, x, out
        )
        return out

    def support(self, u: ArrayLike) -> Vec:
        """``(nc,)`` dual norm ``h(u_T)`` of each contact's tangential velocity."""
        from solvers.numerics.fc_wide import support_all

        u = np.ascontiguousarray(u, dtype=np.float64)
        out = np.empty(self.nc)
        support_all(self.sep, self.offsets, self.mu_rows, self.family, self.nc, u, out)
        return out

    def residuals_and_velocity(self, r: Vec) -> tuple[dict[str, float], Vec]:
        """Natural map (of the law), Signorini and cone measures, and ``u = W r + q``.

        ``dissipation`` is the gap of the dissipated power to its maximum,
        ``max |r_T . u_T + r_n h(u_T)| / ||u_T||`` over contacts sliding faster than
        ``1e-6`` (in the rows' own units) with ``r_n > 0``.
        """
        from solvers.frictional import SLIP_SPEED
        from solvers.numerics.fc_wide import natural_map_wide, wide_measures

        r = np.ascontiguousarray(r, dtype=np.float64)
        u = self.velocity(r)
        law = 0 if self.law == "ccp" else 1
        qnorm = math.sqrt(float(np.einsum("i,i->", self.q, self.q)))
        args = (self.sep, self.offsets, self.mu_rows, self.family)
        nat = float(natural_map_wide(law, *args, self.row_lo, self.nc, r, u, qnorm))
        sig, cone = wide_measures(*args, self.nc, r, u) if self.nc else (0.0, 0.0)
        dis = 0.0
        if self.nc:
            tang = np.ones(self.offsets[-1], dtype=bool)
            tang[self.offsets[:-1]] = False
            owner = np.repeat(np.arange(self.nc), np.diff(self.offsets))
            rt = np.where(tang, r[: self.offsets[-1]], 0.0)
            ut = np.where(tang, u[: self.offsets[-1]], 0.0)
            power = np.bincount(owner, rt * ut, self.nc)
            speed = np.sqrt(np.bincount(owner, ut * ut, self.nc))
            rn = r[self.offsets[:-1]]
            sliding = (speed > SLIP_SPEED) & (rn > 0)
            if np.any(sliding):
                gap = np.abs(power + rn * self.support(u))
                dis = float(np.max(gap[sliding] / speed[sliding]))
        out = {"natural_map": nat, "signorini": float(sig), "cone": float(cone), "dissipation": dis}
        return out, u

    def __repr__(self) -> str:
        dims = np.bincount(np.diff(self.offsets), minlength=7)[3:]
        return (
            f"WideFrictionalContact(nc={self.nc} (rows 3..6: {dims.tolist()}), "
            f"scalar_rows={self.row_lo.size}, law={self.law!r}, cone={self.cone!r}, "
            f"nnz(W)={self._W.nnz if self._W is not None else 0})"
        )


def wide_problem(
    W: Matrix,
    q: ArrayLike,
    dims: ArrayLike,
    coefficients: ArrayLike,
    law: str,
    cone: str,
    row_lo: ArrayLike | None = None,
) -> WideFrictionalContact:
    """A wide problem from each contact's dimension and its tangential coefficients
    (``coefficients`` flat, ``dims[i] - 1`` per contact)."""
    d = np.asarray(dims, dtype=np.int64)
    off = np.concatenate([[0], np.cumsum(d)]).astype(np.int64)
    coef = np.asarray(coefficients, dtype=np.float64).reshape(-1)
    mr = np.ones(int(off[-1]))
    tang = np.ones(int(off[-1]), dtype=bool)
    tang[off[:-1]] = False
    if coef.size != int(tang.sum()):
        raise ProblemError(
            "coefficients",
            f"has {coef.size} entries, expected {int(tang.sum())} (d - 1 per contact)",
        )
    mr[tang] = coef
    return WideFrictionalContact(W, q, off, mr, law, cone, row_lo)
