"""Optimality residuals computed by the layer itself, the same way for every backend.

All residuals are absolute infinity norms in the units of the problem.

QP (OSQP form, multipliers ``y`` with ``P x + q + A^T y - S^T z_soc = 0``):

- primal: ``max(l - A x, A x - u, 0)`` and cone violation ``max(||x_t|| - mu x_n, 0)``;
- dual: ``||P x + q + A^T y - S^T z_soc||`` plus dual-cone violation;
- complementarity: for each row ``max(min(y_i^+, |u_i - (Ax)_i|), min(y_i^-, |(Ax)_i - l_i|))``
  (a positive multiplier must sit on an active upper bound, a negative one on an
  active lower bound; with an infinite bound the multiplier itself is the
  violation) and ``|z_soc_i . (S x)_i|`` per cone.

LCP (``w = M z + q``): the split ``w = w^+ - w^-`` pairs ``w^+`` with
``z - lo`` and ``w^-`` with ``hi - z``;

- primal: bound violation ``max(lo - z, z - hi, 0)`` (friction bounds from the
  blocks included);
- dual: ``w^+`` on rows with ``lo = -inf`` and ``w^-`` on rows with
  ``hi = +inf`` (a force that the bound cannot balance);
- complementarity: ``max(min(z - lo, w^+), min(hi - z, w^-))``; for disc
  friction blocks the natural-map residual ``||z_t - Pi_disc(z_t - w_t)||``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.problems import LCP, QP


def _inf_norm(v: NDArray[np.float64]) -> float:
    return float(np.max(np.abs(v))) if v.size else 0.0


def soc_operator(qp: QP, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``S x``: per cone ``(mu x_n, x_t1, x_t2)``, shape ``(nc, 3)``."""
    assert qp.soc is not None
    return np.column_stack([qp.soc.mu * x[qp.soc.normal], x[qp.soc.tangent]])


def soc_adjoint(qp: QP, z_soc: NDArray[np.float64]) -> NDArray[np.float64]:
    """``S^T z_soc`` as an ``(n,)`` vector."""
    assert qp.soc is not None
    out = np.zeros(qp.n)
    np.add.at(out, qp.soc.normal, qp.soc.mu * z_soc[:, 0])
    np.add.at(out, qp.soc.tangent.ravel(), z_soc[:, 1:].ravel())
    return out


def _cone_violation(s: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.maximum(np.linalg.norm(s[:, 1:], axis=1) - s[:, 0], 0.0)


def qp_residuals(
    qp: QP,
    x: NDArray[np.float64],
    y: NDArray[np.float64] | None,
    z_soc: NDArray[np.float64] | None = None,
) -> dict[str, float]:
    """Primal, dual and complementarity residuals of a QP candidate ``(x, y, z_soc)``."""
    Ax = np.asarray(qp.A @ x)
    primal = _inf_norm(np.maximum(np.maximum(qp.l - Ax, Ax - qp.u), 0.0))
    yv = np.zeros(qp.m) if y is None else y
    grad = np.asarray(qp.P @ x + qp.q + qp.A.T @ yv)
    comp_terms = [
        np.minimum(np.maximum(yv, 0.0), np.abs(qp.u - Ax)),
        np.minimum(np.maximum(-yv, 0.0), np.abs(Ax - qp.l)),
    ]
    dual_extra = 0.0
    comp_extra = 0.0
    if qp.soc is not None:
        s = soc_operator(qp, x)
        primal = max(primal, _inf_norm(_cone_violation(s)))
        if z_soc is not None:
            grad = grad - soc_adjoint(qp, z_soc)
            dual_extra = _inf_norm(_cone_violation(z_soc))
            comp_extra = _inf_norm(np.sum(z_soc * s, axis=1))
    comp = max(max((_inf_norm(t) for t in comp_terms), default=0.0), comp_extra)
    return {"primal": primal, "dual": max(_inf_norm(grad), dual_extra), "complementarity": comp}


def lcp_bounds(lcp: LCP, z: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Effective bounds at ``z``: the stored ones, with box-friction rows set to ``±mu z_n``.

    Disc-friction rows keep infinite bounds; their condition is handled separately.
    """
    lo, hi = lcp.lo.copy(), lcp.hi.copy()
    blk = lcp.blocks
    if blk is not None and blk.cone == "box":
        bound = np.repeat(blk.mu * np.maximum(z[blk.normal], 0.0), blk.tangent.shape[1])
        lo[blk.tangent.ravel()] = -bound
        hi[blk.tangent.ravel()] = bound
    return lo, hi


def project_disc(v: NDArray[np.float64], radius: NDArray[np.float64]) -> NDArray[np.float64]:
    """Project rows of ``v`` (``(nc, 2)``) onto discs of the given radii."""
    norm = np.linalg.norm(v, axis=1)
    scale = np.where(norm > radius, radius / np.maximum(norm, 1e-300), 1.0)
    return v * scale[:, None]


def lcp_residuals(lcp: LCP, z: NDArray[np.float64]) -> dict[str, float]:
    """Primal, dual and complementarity residuals of a box-LCP candidate ``z``."""
    w = lcp.w(z)
    lo, hi = lcp_bounds(lcp, z)
    primal_v = np.maximum(np.maximum(lo - z, z - hi), 0.0)
    wp, wm = np.maximum(w, 0.0), np.maximum(-w, 0.0)
    dual_v = np.where(lo == -np.inf, wp, 0.0) + np.where(hi == np.inf, wm, 0.0)
    comp_v = np.maximum(np.minimum(np.abs(z - lo), wp), np.minimum(np.abs(hi - z), wm))
    blk = lcp.blocks
    extra_p = extra_c = 0.0
    if blk is not None and blk.cone == "disc":
        t = blk.tangent
        rows = t.ravel()
        primal_v[rows] = 0.0
        dual_v[rows] = 0.0
        comp_v[rows] = 0.0
        radius = blk.mu * np.maximum(z[blk.normal], 0.0)
        extra_p = _inf_norm(np.maximum(np.linalg.norm(z[t], axis=1) - radius, 0.0))
        extra_c = _inf_norm(z[t] - project_disc(z[t] - w[t], radius))
    return {
        "primal": max(_inf_norm(primal_v), extra_p),
        "dual": _inf_norm(dual_v),
        "complementarity": max(_inf_norm(comp_v), extra_c),
    }
