"""Soft constraints by regularization (ArtiSynth notes §0.11).

A constraint ``phi(q) = 0`` enforced by the potential ``U = phi^T alpha^-1 phi / 2``
with damping ``beta`` has the force ``lambda = -alpha^-1 (phi + beta phidot)``
(eq. 0.7).  Averaged over the step, with ``phibar = (phi_k + phi_k+1)/2``,
``phidot ~ G v+`` and ``phi_k+1 ~ phi_k + h G v+``, the impulse
``lam = h lambdabar`` satisfies

.. math::

    G v^+ + \\frac{\\gamma \\alpha}{h^2} \\tilde\\lambda = -\\frac{\\gamma \\phi_k}{h},
    \\qquad \\gamma = (1/2 + \\beta/h)^{-1}.

Re-derived: ``alpha lambdabar = -phibar - beta G v+ = -phi_k - (h/2 + beta) G v+``;
multiplying by ``h/(h/2 + beta) = gamma`` and dividing by ``h`` gives the row
above.  (The transcription prints ``-phi_k + (h/2 + beta) G v`` in eq. 0.8, a
sign slip: the rearranged eq. 0.9 that follows has the sign derived here.)
For a unilateral row (contact) the same diagonal enters the LCP,
``N v+ + C z >= -gamma d / h`` with ``d <= 0`` the penetration (eq. 0.10); a
contact still apart (``d > 0``) keeps its hard right-hand side.

Every contact model and backend receives the regularized problem unchanged by
**augmentation**: each soft row ``r`` gets one extra velocity ``s_r`` of mass
``C_r = gamma alpha / h^2`` and zero free momentum, and the row becomes
``[G_r, C_r e_r]``.  Stationarity in ``s_r`` gives ``C_r s_r = C_r lambda_r``,
so ``s_r = lambda_r`` and the row reads ``G_r v + C_r lambda_r = rhs_r``: the
regularized KKT matrix ``[[M, -G^T], [G, C]]`` (eq. 0.9), whose Schur
complement is ``G M^-1 G^T + C``.  A zero compliance adds nothing: the row is
the formulation's hard row, Baumgarte term included.

Static meaning: at rest (``G v = 0``) under a load ``F`` the impulse is ``h F``
and the row gives ``phi = -alpha F``: the joint sags by force times compliance,
whatever ``beta``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]

#: key of the contacts in a per-constraint mapping
CONTACTS = "contacts"


def _value(x: Any, what: str) -> float:
    ok = isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool)
    if not ok or not np.isfinite(x) or x < 0:
        raise ConfigurationError(f"{what} must be a finite number >= 0, got {x!r}")
    return float(x)


def per_owner(value: Any, owners: list[str], what: str, unit: str) -> dict[str, float]:
    """``value`` (a number for every joint and the contacts, or a mapping) per owner name.

    Owners are the joint/constraint names and ``"contacts"``; an unknown name
    in a mapping is a :class:`ConfigurationError` listing the known ones.
    """
    names = [*owners, CONTACTS]
    if isinstance(value, Mapping):
        unknown = sorted(set(map(str, value)) - set(names))
        if unknown:
            raise ConfigurationError(
                f"{what} names {', '.join(map(repr, unknown))}, which is neither a joint of the "
                f"scene nor 'contacts'; known: {', '.join(names)}"
            )
        return {n: _value(value.get(n, 0.0), f"{what}[{n!r}] [{unit}]") for n in names}
    v = _value(value, f"{what} [{unit}]")
    return {n: v for n in names}


@dataclass(frozen=True)
class Regularization:
    """Per-row compliance ``alpha`` and damping ``beta`` [s] of a scene's constraints.

    alpha_G, beta_G : (mg,) per bilateral row (from the row owners).
    alpha_N, beta_N : of every contact normal row.
    """

    alpha_G: Array
    beta_G: Array
    alpha_N: float
    beta_N: float

    @classmethod
    def build(cls, compliance: Any, damping: Any, row_owners: NDArray[np.str_]) -> Regularization:
        owners = list(dict.fromkeys(np.asarray(row_owners, dtype=str).tolist()))
        a = per_owner(compliance, owners, "compliance", "m/N or rad/(N m)")
        b = per_owner(damping, owners, "compliance_damping", "s")
        alpha_G = np.array([a[o] for o in np.asarray(row_owners, dtype=str)], dtype=float)
        beta_G = np.array([b[o] for o in np.asarray(row_owners, dtype=str)], dtype=float)
        return cls(alpha_G, beta_G, a[CONTACTS], b[CONTACTS])

    @property
    def soft_rows(self) -> NDArray[np.bool_]:
        return self.alpha_G > 0.0

    @property
    def any(self) -> bool:
        return bool(np.any(self.alpha_G > 0.0) or self.alpha_N > 0.0)


def gamma(beta: Array | float, h: float) -> Array:
    """``(1/2 + beta/h)^-1`` (eq. 0.9)."""
    return 1.0 / (0.5 + np.asarray(beta, dtype=float) / h)


@dataclass
class Augmented:
    """The problem's matrices with one extra velocity per soft row."""

    M: sp.csc_matrix
    f: Array
    v: Array
    G: sp.csr_matrix
    g: Array
    N: sp.csr_matrix
    c: Array
    T: sp.csr_matrix
    n_soft: int


def augment(
    reg: Regularization,
    h: float,
    M: sp.spmatrix,
    f: Array,
    v: Array,
    G: sp.spmatrix,
    g: Array,
    g_error: Array,
    N: sp.spmatrix,
    c: Array,
    T: sp.spmatrix,
    distance: Array,
) -> Augmented:
    """Regularized rows as an augmented problem (module docstring)."""
    soft_g = np.flatnonzero(reg.alpha_G > 0.0)
    nc = N.shape[0]
    soft_n = np.arange(nc) if reg.alpha_N > 0.0 else np.zeros(0, dtype=np.int64)
    gam_g = gamma(reg.beta_G[soft_g], h)
    C_g = gam_g * reg.alpha_G[soft_g] / h**2
    g = np.array(g, dtype=float)
    g[soft_g] = -gam_g * np.asarray(g_error, dtype=float)[soft_g] / h
    gam_n = float(gamma(reg.beta_N, h))
    C_n = np.full(soft_n.size, gam_n * reg.alpha_N / h**2)
    c = np.array(c, dtype=float)
    d = np.asarray(distance, dtype=float)
    c[soft_n] = np.where(d[soft_n] > 0.0, c[soft_n], -gam_n * d[soft_n] / h)
    ns = soft_g.size + soft_n.size
    if ns == 0:
        return Augmented(
            sp.csc_matrix(M), f, v, sp.csr_matrix(G), g, sp.csr_matrix(N), c, sp.csr_matrix(T), 0
        )
    cols_g = np.arange(soft_g.size)
    cols_n = soft_g.size + np.arange(soft_n.size)
    Sg = sp.csr_matrix((C_g, (soft_g, cols_g)), shape=(G.shape[0], ns))
    Sn = sp.csr_matrix((C_n, (soft_n, cols_n)), shape=(nc, ns))
    C = np.concatenate([C_g, C_n])
    return Augmented(
        M=sp.csc_matrix(sp.block_diag([M, sp.diags(C)])),
        f=np.concatenate([f, np.zeros(ns)]),
        v=np.concatenate([v, np.zeros(ns)]),
        G=sp.csr_matrix(sp.hstack([G, Sg])),
        g=g,
        N=sp.csr_matrix(sp.hstack([N, Sn])),
        c=c,
        T=sp.csr_matrix(sp.hstack([T, sp.csr_matrix((T.shape[0], ns))])),
        n_soft=ns,
    )
