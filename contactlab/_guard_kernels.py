"""The divergence guard's per-step verdict in one compiled kernel.

:func:`verdict` applies the bounds of :class:`~contactlab.divergence.DivergenceGuard`
(energy gain, drift, joint separation, penetration, speeds, in that order) to flat
arrays and returns which one the state breaks, or :data:`OK`.  It compares as the
guard's numpy code does: a NaN energy gain, drift, penetration depth or speed
breaks no bound (the finiteness check of the state reports it), a NaN joint
separation does, and where numpy's ``argmax`` would pick the first NaN of a
search the kernel picks it too.  The guard builds its error message in Python,
only for a state the kernel finds broken.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

COMPILE_SECONDS: float | None = None

#: verdicts: every bound holds, or the first bound broken
OK, ENERGY, DRIFT, JOINT, PENETRATION, LINEAR_SPEED, ANGULAR_SPEED = range(7)


@njit(cache=True)
def _first_argmax(x: NDArray[np.float64]) -> int:  # pragma: no cover - compiled
    """numpy's ``argmax``: the first NaN, else the first largest value."""
    k = 0
    for i in range(x.size):
        if math.isnan(x[i]):
            return i
        if x[i] > x[k]:
            k = i
    return k


@njit(cache=True)
def _speeds_over(
    speed2: NDArray[np.float64], budget: float, inverse: NDArray[np.float64]
) -> bool:  # pragma: no cover - compiled
    over = speed2 - budget * inverse
    return bool(over[_first_argmax(over)] > 0.0)


@njit(cache=True)
def verdict(  # noqa: PLR0913
    gain: float,
    energy_bound: float,
    drift: float,
    drift_bound: float,
    E: NDArray[np.float64],
    both: NDArray[np.int64],
    anchors: NDArray[np.float64],
    initial: NDArray[np.float64],
    joint_bound: NDArray[np.float64],
    distance: NDArray[np.float64],
    body_a: NDArray[np.int64],
    body_b: NDArray[np.int64],
    radii: NDArray[np.float64],
    least_radius: float,
    phi: NDArray[np.float64],
    speeds: bool,
    budget: float,
    inv_mass: NDArray[np.float64],
    inv_inertia: NDArray[np.float64],
    least_inv_mass: float,
    least_inv_inertia: float,
) -> int:  # pragma: no cover - compiled
    """The first bound the state breaks (:data:`ENERGY` ... :data:`ANGULAR_SPEED`) or
    :data:`OK`.

    ``energy_bound`` is ``inf`` when the energy is unbounded; ``both`` the (2k,) parent
    then child body indices of the k checked joints (-1: the world), ``anchors`` their
    (2k, 3) frame origins in those bodies; ``radii`` the (nb + 1,) body radii with the
    world's (infinite) last; ``speeds`` whether the speeds are bounded, by
    ``budget * inv_mass`` and ``budget * inv_inertia`` squared.
    """
    if gain > energy_bound:
        return ENERGY
    if drift > drift_bound:
        return DRIFT
    k = initial.size
    if k:
        over = np.empty(k)
        gap = np.empty((2 * k, 3))
        for j in range(2 * k):
            b = both[j]
            for r in range(3):
                if b < 0:
                    gap[j, r] = anchors[j, r]
                else:
                    gap[j, r] = (
                        E[b, r, 0] * anchors[j, 0]
                        + E[b, r, 1] * anchors[j, 1]
                        + E[b, r, 2] * anchors[j, 2]
                        + E[b, r, 3]
                    )
        for j in range(k):
            s = 0.0
            for r in range(3):
                d = gap[j, r] - gap[k + j, r]
                s += d * d
            over[j] = (math.sqrt(s) - initial[j]) - joint_bound[j]
        if not over[_first_argmax(over)] <= 0.0:
            return JOINT
    m = distance.size
    if m:
        deepest = -distance[0]
        for i in range(m):
            depth = -distance[i]
            if math.isnan(depth) or math.isnan(deepest):
                deepest = math.nan
            elif depth > deepest:
                deepest = depth
        if not deepest <= least_radius:
            over = np.empty(m)
            for i in range(m):
                over[i] = -distance[i] - min(radii[body_a[i]], radii[body_b[i]])
            if over[_first_argmax(over)] > 0.0:
                return PENETRATION
    nb = phi.shape[0]
    if speeds and nb:
        linear2 = np.empty(nb)
        angular2 = np.empty(nb)
        top_linear = top_angular = -1.0
        for i in range(nb):
            linear2[i] = phi[i, 3] * phi[i, 3] + phi[i, 4] * phi[i, 4] + phi[i, 5] * phi[i, 5]
            angular2[i] = phi[i, 0] * phi[i, 0] + phi[i, 1] * phi[i, 1] + phi[i, 2] * phi[i, 2]
            # the largest, NaN when any is (as numpy's max)
            if math.isnan(linear2[i]) or math.isnan(top_linear):
                top_linear = math.nan
            elif linear2[i] > top_linear:
                top_linear = linear2[i]
            if math.isnan(angular2[i]) or math.isnan(top_angular):
                top_angular = math.nan
            elif angular2[i] > top_angular:
                top_angular = angular2[i]
        if top_linear <= budget * least_inv_mass and top_angular <= budget * least_inv_inertia:
            return OK
        if _speeds_over(linear2, budget, inv_mass):
            return LINEAR_SPEED
        if _speeds_over(angular2, budget, inv_inertia):
            return ANGULAR_SPEED
    return OK
