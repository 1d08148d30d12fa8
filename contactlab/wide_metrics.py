"""Cone and maximal-dissipation metrics of contacts with torsional and rolling friction.

A model with torsional/rolling friction (:mod:`contactlab.models.spin`) reports, beside
``lambda_T``, the angular rows ``S`` (torsion, roll 1, roll 2 per contact), their impulses
and coefficients.  The friction of contact ``i`` is then the wide vector
``l = (lambda_t1, lambda_t2, lambda_s, lambda_r1, lambda_r2)`` with the coefficients
``D = diag(mu, mu, mu_t, mu_r, mu_r)`` and the velocity ``u = (T_i v, S_i v)``.  The
metrics keep the units and meaning they have for 3-row contacts (they equal them when
``mu_t = mu_r = 0``), measuring every component in sliding-friction units (scaled by
``mu / mu_j``):

- cone violation: elliptic ``mu max(||D^-1 l|| - lambda_N, 0)``; separate cones: the
  largest of ``||l_t|| - mu lambda_N`` and ``mu (||l_g|| / mu_g - lambda_N)`` per group;
- maximal dissipation: the friction that maximizes the dissipation ``-l . u`` over the
  cone is ``l* = -lambda_N D^2 u / ||D u||`` (elliptic; per group
  ``-mu_g lambda_N u_g / ||u_g||`` for separate cones); the violation is
  ``mu ||D^-1 (l - l*)||`` over the contacts (groups) that move, ``||D u|| > mu`` times the
  slip threshold.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def _groups(cone: str) -> list[list[int]]:
    return [[0, 1, 2, 3, 4]] if cone == "elliptic" else [[0, 1], [2], [3, 4]]


def wide_contact_metrics(
    lam_n: Array, lam_t: Array, slip: Array, mu: Array, report: Any, v: Array, threshold: float
) -> dict[str, float]:
    """``cone_violation``, ``dissipation_violation`` and ``n_sliding`` on the wide cones.

    ``lam_t`` and ``slip`` are ``(nc, 2)``; ``report`` carries ``rows`` (3 nc, n),
    ``impulse`` (nc, 3), ``mu`` (nc, 3) and ``cone`` (``"elliptic"`` or ``"separate"``).
    """
    nc = lam_n.size
    spin_u = np.asarray(report.rows @ v).reshape(nc, 3)
    lam = np.column_stack([lam_t, np.asarray(report.impulse, float)])
    u = np.column_stack([slip, spin_u])
    coef = np.column_stack([mu, mu, np.asarray(report.mu, float)])
    used = coef > 0
    safe = np.where(used, coef, 1.0)
    ref = np.maximum(mu, 1e-300)[:, None]
    cone_v = np.zeros(nc)
    diss = np.zeros(nc)
    moving = np.zeros(nc, dtype=bool)
    for group in _groups(str(report.cone)):
        g = np.array(group)
        mask = used[:, g]
        scaled = np.where(mask, lam[:, g] / safe[:, g], 0.0)
        over = np.linalg.norm(scaled, axis=1) - lam_n
        # components with a zero coefficient must carry no impulse
        stray = np.linalg.norm(np.where(mask, 0.0, lam[:, g]), axis=1)
        cone_v = np.maximum(cone_v, ref[:, 0] * np.maximum(over, 0.0) + stray)
        du = np.where(mask, u[:, g] * safe[:, g], 0.0)
        norm = np.linalg.norm(du, axis=1)
        move = norm > mu * threshold
        moving |= move
        ideal = (
            -lam_n[:, None]
            * np.where(mask, du * safe[:, g], 0.0)
            / np.maximum(norm, 1e-300)[:, None]
        )
        gap = (
            ref
            * np.linalg.norm(np.where(mask, (lam[:, g] - ideal) / safe[:, g], 0.0), axis=1)[:, None]
        )
        diss = np.maximum(diss, np.where(move, gap[:, 0], 0.0))
    return {
        "cone_violation": float(cone_v.max()) if nc else 0.0,
        "dissipation_violation": float(diss.max()) if nc else 0.0,
        "n_sliding": float(np.count_nonzero(moving)),
    }
