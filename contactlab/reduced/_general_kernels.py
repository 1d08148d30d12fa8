"""Compiled composition of joint factors for generated joints (Si & Guenter).

A generated joint's transform is a product ``Q = F_1 F_2 ... F_m`` of
factors whose values, Jacobians ``S_f`` and derivatives ``Sdot_f`` the
generated code fills in.  With ``G`` the product of the factors after
``f`` (suffix), the product rule for body twists gives (as for
:class:`~contactlab.joints.maps.CompositeJoint`)

.. math::

    S_{F_f G} = \\mathrm{Ad}(G^{-1}) S_f + S_G, \\qquad
    \\dot S_{F_f G} = \\mathrm{Ad}(G^{-1}) \\dot S_f
        - \\mathrm{ad}(S_G \\dot q)\\, \\mathrm{Ad}(G^{-1}) S_f + \\dot S_G,

applied from the last factor to the first.
"""

from __future__ import annotations

import numpy as np

from contactlab.reduced._kernels import _ad_mul_into, _adjoint_of_inverse_into, _mul44_into
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 13.0


@njit(cache=True)
def compose(F, SF, SdF, qd, i, Q, S, Sd):  # noqa: ANN001, ANN201
    """Write ``Q[i]``, ``S[i]``, ``Sd[i]`` of the product of the factors ``F`` (m, 4, 4)."""
    m = F.shape[0]
    n = SF.shape[2]
    G = F[m - 1].copy()
    SG = SF[m - 1].copy()
    SdG = SdF[m - 1].copy()
    A = np.empty((6, 6))
    T = np.empty((4, 4))
    v = np.empty(6)
    x = np.empty(6)
    y = np.empty(6)
    for f in range(m - 2, -1, -1):
        _adjoint_of_inverse_into(G, A)
        for r in range(6):
            s = 0.0
            for c in range(n):
                s += SG[r, c] * qd[c]
            v[r] = s
        for c in range(n):
            for r in range(6):
                sx = 0.0
                sy = 0.0
                for k in range(6):
                    sx += A[r, k] * SF[f, k, c]
                    sy += A[r, k] * SdF[f, k, c]
                x[r] = sx
                y[r] = sy
            SG[:, c] += x
            _ad_mul_into(v, x, x)
            for r in range(6):
                SdG[r, c] += y[r] - x[r]
        _mul44_into(F[f], G, T)
        G[:, :] = T
    Q[i] = G
    for r in range(6):
        for c in range(n):
            S[i, r, c] = SG[r, c]
            Sd[i, r, c] = SdG[r, c]


@njit(cache=True)
def pack_joint_maps(Q, S, Sd, nd, ext):  # noqa: ANN001, ANN201
    """Rows of the model's ``ext`` (m, 88) from the stacks ``Q`` (m, 4, 4), ``S``, ``Sd`` (m, 6, 6).

    ``ext[i] = (Q_i, S_i, Sd_i)`` row-major, as :mod:`contactlab.reduced._fast`
    reads it; only the first ``nd[i]`` columns of ``S_i`` and ``Sd_i`` are
    copied (the others are zero).
    """
    for i in range(ext.shape[0]):
        e = ext[i]
        for r in range(4):
            for c in range(4):
                e[4 * r + c] = Q[i, r, c]
        k = nd[i]
        for r in range(6):
            for c in range(6):
                if c < k:
                    e[16 + 6 * r + c] = S[i, r, c]
                    e[52 + 6 * r + c] = Sd[i, r, c]
                else:
                    e[16 + 6 * r + c] = 0.0
                    e[52 + 6 * r + c] = 0.0
