"""Contact constraint rows in maximal coordinates (Sueda's notes §1.11).

A contact at world point ``x`` with unit normal ``n`` (from body B toward
body A, see :mod:`contactlab.collision.contacts`) constrains the relative
velocity of the two material points that coincide at ``x``.  The world
velocity of body ``i``'s material point with local coordinates
``x_i = R_i^T (x - p_i)`` is ``R_i Gamma(x_i) phi_i`` (Sueda's notes, eq. 1.75), so

.. math::

    n^T v_{rel} = n^T R_a \\Gamma(x_a) \\phi_a - n^T R_b \\Gamma(x_b) \\phi_b
    \\ge c \\qquad \\text{(eq. 1.77-1.78)}

Since ``Gamma(x) = [[x]^T, I]``, the 1x6 block of body ``i`` for a world
direction ``d`` is ``[x_i x m, m]`` with ``m = R_i^T d`` (``d^T R [x]^T =
(x x R^T d)^T``).  The same blocks with the two tangent directions give the
friction rows ``T``.  Columns are 6 per body, twists angular first in body
coordinates; the world (``-1``) has no columns.

Right-hand side (gap-aware, with penetration feedback)
------------------------------------------------------
For a contact at signed distance ``d``:

* ``d > 0`` (inside the margin, not touching): ``c = -d / h``; the contact
  point's velocity, linearized at the start of the step, may close at most
  the gap in one step, so a falling body does not stop short at the margin.
  It does not land exactly on the surface: rotation over the step and
  joint-coupled links take points below it (``chain-floor``: 2.9 mm deep
  with 3 links, 6.7 mm with 5, at h = 5 ms), which the feedback below removes.
* ``d <= 0`` (touching or penetrating): ``c = min(beta (-d), max_correction)``,
  Baumgarte feedback (Sueda's notes, eq. 1.82, velocity-level form with
  ``gamma = beta``) that removes a fraction ``beta h`` of the penetration per
  step, capped at ``max_correction`` [m/s] so deep overlaps are not resolved
  explosively.

``beta = params.stabilization`` [1/s] when set, else ``0.2 / h``: 20 % of
the penetration per step is fast enough that resting bodies do not sink
(the depth decays geometrically, by 0.8 per step) and slow enough that the
correction velocity ``0.2 d / h`` stays small, so they do not jitter.

Restitution (Newton's impact law)
---------------------------------
With the pre-step normal velocity ``u = (N Phi)_i`` (the state's twists;
``N J qdot = N Phi`` in reduced coordinates) and the contact's coefficient
``e`` in [0, 1], a contact *bounces* when

* it approaches faster than the threshold, ``u < -restitution_threshold``, and
* it touches now or would touch within the step at that speed,
  ``d + h u <= 0``,

and then its row demands ``N Phi+ >= max(c, -e u)``: the contact leaves at
``e |u|`` (or faster, if penetration feedback asks for more; the two are not
added, so feedback never adds energy to a bounce).  Every other contact keeps
``c`` above, bit for bit, and so does every contact when ``e = 0``.

The gap.  A contact still ``d > 0`` apart that would not close it this step
keeps the gap-aware ``-d / h`` and approaches; if gravity closes the gap
within the step, the body lands on the surface at about its impact speed and
bounces on the next step, from ``d = 0``.  A contact that closes the gap
within the step bounces in that step at the velocity Newton's law demands,
``e |u|`` exactly, but from where it is, up to ``|u| h`` above the surface
(as speculative contacts do): the velocity (hence the energy) is exact and
the position is off by at most ``|u| h``, ``O(h)``.  A ball dropped from ``H``
so rebounds to ``e^2 H + (1 - e^2) d + e (1 - e) |u| h / 2`` (``d`` the gap of
the impact step, the last term semi-implicit Euler's), within ``O(h)`` of
Newton's ``e^2 H``.  The alternatives are worse: applying restitution only
from ``d <= 0`` reads the impact speed after the gap-aware row has already
cut it to ``d / h`` and loses the bounce; making the step land on the surface
and bounce from it would leave a velocity that is wrong by up to ``|u|``.

The threshold keeps resting contacts at rest: a resting contact's pre-step
normal velocity is the previous solution's, ``>= 0`` up to the solver's
tolerance, so it never bounces however large ``e`` is.

Per material pair: ``ContactParams.restitution_pairs`` overrides the
scene-wide ``restitution`` (the rule of ``mu_pairs``, see
:meth:`contactlab.scene.ContactParams.restitution_of`);
:func:`contact_restitution` looks the coefficients up per contact.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.collision.contacts import ContactSet
from contactlab.collision.shape_table import WORLD_MATERIAL
from contactlab.csr import csr, empty_csr, index_dtype
from contactlab.errors import ConfigurationError, StateError
from contactlab.scene import ContactParams, Scene
from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Array = NDArray[np.float64]

#: Fraction of the penetration removed per step when ``stabilization`` is None.
DEFAULT_FEEDBACK_FRACTION = 0.2


def tangent_basis(normal: Array) -> tuple[Array, Array]:
    """Orthonormal tangents ``(t1, t2)`` with ``t1 x t2 = n`` for unit normals (m, 3).

    The branch-free construction of Duff et al. (2017, "Building an
    orthonormal basis, revisited") is smooth in ``n`` except at
    ``n = (0, 0, -1)`` and gives ``t1 = e_x, t2 = e_y`` for ``n = e_z``, so on
    level ground the friction pyramid's directions are the world x and y axes
    (and on a plane tilted about y, ``t1`` points along the slope).
    """
    n = np.ascontiguousarray(normal, dtype=float).reshape(-1, 3)
    return _tangent_basis(n)  # type: ignore[no-any-return]


@njit(cache=True)
def _tangent_basis(n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`tangent_basis`, normal by normal."""
    m = n.shape[0]
    t1 = np.empty((m, 3))
    t2 = np.empty((m, 3))
    for i in range(m):
        nx, ny, nz = n[i, 0], n[i, 1], n[i, 2]
        s = 1.0 if nz >= 0.0 else -1.0
        a = -1.0 / (s + nz)
        b = nx * ny * a
        t1[i, 0] = 1.0 + s * nx * nx * a
        t1[i, 1] = s * b
        t1[i, 2] = -s * nx
        t2[i, 0] = b
        t2[i, 1] = s + ny * ny * a
        t2[i, 2] = -ny
    return t1, t2


def contact_rhs(
    distance: Array,
    h: float,
    params: ContactParams,
    normal_velocity: Array | None = None,
    restitution: Array | float | None = None,
) -> Array:
    """Right-hand side ``c`` of ``N v >= c`` (see the module docstring) [m/s].

    Parameters
    ----------
    distance : (nc,) signed distances [m].
    h : step size [s].
    params : contact parameters (stabilization, max_correction, restitution,
        restitution_threshold).
    normal_velocity : (nc,) pre-step normal velocities ``N Phi`` [m/s]; without
        them no contact bounces (the plastic right-hand side).
    restitution : (nc,) or scalar coefficients ``e`` in [0, 1]; ``None`` =
        ``params.restitution`` for every contact.
    """
    d = np.asarray(distance, dtype=float)
    beta = (
        params.stabilization
        if params.stabilization is not None
        else (DEFAULT_FEEDBACK_FRACTION / h)
    )
    if not (np.isfinite(beta) and beta >= 0.0):
        raise ConfigurationError(
            f"contact stabilization must be a finite rate >= 0 [1/s], got {beta}"
        )
    if not (params.max_correction >= 0.0):
        raise ConfigurationError(
            f"contact max_correction must be >= 0 [m/s], got {params.max_correction}"
        )
    c = np.where(d > 0.0, -d / h, np.minimum(beta * (-d), params.max_correction))
    if normal_velocity is None:
        return c
    return _with_restitution(c, d, h, params, normal_velocity, restitution)


def _with_restitution(
    c: Array,
    d: Array,
    h: float,
    params: ContactParams,
    normal_velocity: Array,
    restitution: Array | float | None,
) -> Array:
    """``c`` raised to ``-e u`` on the contacts that bounce (module docstring)."""
    u = np.asarray(normal_velocity, dtype=float)
    if u.shape != d.shape:
        raise StateError(
            f"contact_rhs: normal_velocity must have shape {d.shape} (one per contact), "
            f"got {u.shape}"
        )
    e = np.broadcast_to(
        np.asarray(params.restitution if restitution is None else restitution, dtype=float),
        d.shape,
    )
    if not np.all(np.isfinite(e) & (e >= 0.0) & (e <= 1.0)):
        raise ConfigurationError(
            "contact restitution coefficients must be finite and in [0, 1]; fix "
            "ContactParams.restitution / restitution_pairs"
        )
    threshold = params.restitution_threshold
    if not (np.isfinite(threshold) and threshold >= 0.0):
        raise ConfigurationError(
            f"ContactParams.restitution_threshold must be a finite speed >= 0 [m/s], "
            f"got {threshold}"
        )
    bounce = (e > 0.0) & (u < -threshold) & (d + h * u <= 0.0)
    if not np.any(bounce):
        return c
    return np.where(bounce, np.maximum(c, -e * u), c)


def contact_restitution(scene: Scene, contacts: ContactSet) -> Array | None:
    """Per-contact coefficients of restitution (nc,), or ``None`` when scene-wide.

    ``None`` (use ``scene.contact.restitution`` for every contact) unless the
    scene sets ``restitution_pairs``; then each contact gets
    :meth:`~contactlab.scene.ContactParams.restitution_of` of its two
    materials: a body's ``Body.material``, a static shape's ``material``
    attribute, else ``"world"`` (the materials collision uses for friction).
    Looked up through an (n_materials, n_materials) table, vectorized over contacts.
    """
    params = scene.contact
    if not params.restitution_pairs or len(contacts) == 0:
        return None
    body_mat = [b.material for b in scene.bodies]
    static_mat = [str(getattr(s, "material", WORLD_MATERIAL)) for s in scene.static_shapes]
    names = sorted(set(body_mat) | set(static_mat))
    index = {m: i for i, m in enumerate(names)}
    table = np.array([[params.restitution_of(a, b) for b in names] for a in names])
    body_idx = np.array([index[m] for m in body_mat], dtype=np.int64)
    static_idx = np.array([index[m] for m in static_mat] or [0], dtype=np.int64)
    a, b = contacts.body_a, contacts.body_b
    mat_a = body_idx[np.maximum(a, 0)]
    mat_b = np.where(
        b >= 0, body_idx[np.maximum(b, 0)], static_idx[np.where(b < 0, contacts.shape_b, 0)]
    )
    return table[mat_a, mat_b]


@njit(cache=True, fastmath={"contract"})
def _direction_in_body(dirs, E, i, d, body, m):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``m = R' dirs[i, d]`` of ``body``, multiply-adds fused as the BLAS product of
    the numpy construction fused them (bit for bit the rows it built on x86-64)."""
    for j in range(3):
        acc = 0.0
        for k in range(3):
            acc += dirs[i, d, k] * E[body, k, j]
        m[j] = acc


@njit(cache=True)
def _within(body, nb):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Every index of ``body`` in ``[-1, nb - 1]``."""
    for i in range(body.shape[0]):
        if body[i] >= nb or body[i] < -1:
            return False
    return True


@njit(cache=True)
def _contact_directions(normal):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Per contact its normal and the tangents ``t1, t2`` of :func:`tangent_basis` as
    ``dirs`` (nc, 3, 3) (``dirs[i, d]``: row ``d`` of contact ``i``), and ``t1, t2``."""
    nc = normal.shape[0]
    t1, t2 = _tangent_basis(normal)
    dirs = np.empty((nc, 3, 3))
    for i in range(nc):
        for k in range(3):
            dirs[i, 0, k] = normal[i, k]
            dirs[i, 1, k] = t1[i, k]
            dirs[i, 2, k] = t2[i, k]
    return dirs, t1, t2


@njit(cache=True)
def _contact_block(a, b, E, point, dirs, i, x, m, out):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Contact ``i``'s normal and tangent rows into ``out`` (3, 12): ``[x x m, m]`` on body
    ``a[i]``'s six columns, then its negative on body ``b[i]``'s (zero for the world,
    ``b[i] = -1``), with ``x`` the contact point and ``m`` the row's direction in the
    body's frame; ``x`` and ``m`` are work space (3,)."""
    for side in range(2):
        body = a[i] if side == 0 else b[i]
        s = 6 * side
        if body < 0:
            for d in range(3):
                for j in range(6):
                    out[d, s + j] = 0.0
            continue
        sign = 1.0 if side == 0 else -1.0
        for j in range(3):
            x[j] = 0.0
            for k in range(3):
                x[j] += E[body, k, j] * (point[i, k] - E[body, k, 3])
        for d in range(3):
            _direction_in_body(dirs, E, i, d, body, m)
            out[d, s + 0] = sign * (x[1] * m[2] - x[2] * m[1])
            out[d, s + 1] = sign * (x[2] * m[0] - x[0] * m[2])
            out[d, s + 2] = sign * (x[0] * m[1] - x[1] * m[0])
            for j in range(3):
                out[d, s + 3 + j] = sign * m[j]


@njit(cache=True)
def _rows_csr(a, b, E, point, normal, index):  # type: ignore[no-untyped-def]  # pragma: no cover
    """CSR arrays of the normal rows N (nc, 6 nb) and tangent rows T (2 nc, 6 nb).

    Row ``i`` of N (direction ``normal[i]``) and rows ``2i, 2i+1`` of T (the
    tangents ``t1, t2`` of :func:`tangent_basis`) hold ``[x x m, m]`` on body
    ``a[i]``'s six columns and its negative on body ``b[i]``'s (none when
    ``b[i] = -1``, the world), with ``x`` the contact point and ``m`` the
    direction in the body's frame (:func:`_contact_block`, also the compiled pile
    step's rows), the lower body's columns first (sorted column indices).  Index
    arrays of dtype ``index`` (np.int32 or np.int64).
    """
    nc = a.shape[0]
    dirs, _, _ = _contact_directions(normal)
    indptr_n = np.zeros(nc + 1, dtype=index)
    for i in range(nc):
        indptr_n[i + 1] = indptr_n[i] + (12 if b[i] >= 0 else 6)
    nnz = indptr_n[nc]
    data = np.empty((3, nnz))
    cols = np.empty(nnz, dtype=index)
    x = np.empty(3)
    m = np.empty(3)
    block = np.empty((3, 12))
    for i in range(nc):
        pos = indptr_n[i]
        swap = b[i] >= 0 and b[i] < a[i]
        _contact_block(a, b, E, point, dirs, i, x, m, block)
        for side in range(2):
            body = a[i] if side == 0 else b[i]
            if body < 0:
                continue
            start = pos + (6 if (side == 0) == swap else 0)
            for j in range(6):
                cols[start + j] = 6 * body + j
            for d in range(3):
                for j in range(6):
                    data[d, start + j] = block[d, 6 * side + j]
    indptr_t = np.zeros(2 * nc + 1, dtype=index)
    data_t = np.empty(2 * nnz)
    cols_t = np.empty(2 * nnz, dtype=index)
    for i in range(nc):
        lo, hi = indptr_n[i], indptr_n[i + 1]
        width = hi - lo
        for d in range(2):
            r = 2 * i + d
            start = indptr_t[r]
            for q in range(width):
                data_t[start + q] = data[1 + d, lo + q]
                cols_t[start + q] = cols[lo + q]
            indptr_t[r + 1] = start + width
    return data[0].copy(), cols, indptr_n, data_t, cols_t, indptr_t


def contact_rows(
    contacts: ContactSet,
    E: Array,
    nb: int,
    h: float,
    params: ContactParams,
    phi: Array | None = None,
    restitution: Array | None = None,
) -> tuple[sp.csr_matrix, Array, sp.csr_matrix, Array]:
    """Normal rows, right-hand side, tangent rows and friction coefficients.

    Parameters
    ----------
    contacts : the contact set (normals from B toward A).
    E : (nb, 4, 4) body transforms.
    nb : number of bodies (6 columns each).
    h : step size [s].
    params : the scene's contact parameters (stabilization, max_correction,
        restitution, restitution_threshold).
    phi : (nb, 6) pre-step body twists; given, the right-hand side applies
        restitution to the contacts that bounce (module docstring), without
        them it is the plastic one.
    restitution : (nc,) per-contact coefficients (:func:`contact_restitution`);
        ``None`` = ``params.restitution``.

    Returns
    -------
    N : (nc, 6 nb) normal rows, Sueda's notes eq. 1.78.
    c : (nc,) right-hand side of ``N Phi >= c`` [m/s].
    T : (2 nc, 6 nb) tangent rows; rows ``2i, 2i+1`` are contact ``i``'s
        ``t1, t2`` from :func:`tangent_basis`.
    mu : (nc,) friction coefficients.
    """
    if not (np.isfinite(h) and h > 0):
        raise ConfigurationError(f"contact_rows: step size h must be positive [s], got {h}")
    E = np.asarray(E, dtype=float)
    if E.shape != (nb, 4, 4):
        raise StateError(f"contact_rows: E must have shape ({nb}, 4, 4), got {E.shape}")
    nc = len(contacts)
    n_cols = 6 * nb
    if nc == 0:
        return empty_csr(n_cols), np.zeros(0), empty_csr(n_cols), np.zeros(0)
    a = np.ascontiguousarray(contacts.body_a, dtype=np.int64)
    b = np.ascontiguousarray(contacts.body_b, dtype=np.int64)
    for name, body in (("body_a", a), ("body_b", b)):
        if not _within(body, nb):
            raise ConfigurationError(
                f"contact_rows: contacts.{name} holds indices outside [-1, {nb - 1}]"
            )
    # one compiled pass: the tangent basis, then body a's 6 columns and body b's, the
    # lower body index first so that column indices are sorted within each row
    data_n, cols_n, ptr_n, data_t, cols_t, ptr_t = _rows_csr(
        a,
        b,
        E,
        np.ascontiguousarray(contacts.point, dtype=float),
        np.ascontiguousarray(contacts.normal, dtype=float),
        index_dtype(max(n_cols, 24 * nc)),
    )
    N = csr(data_n, cols_n, ptr_n, (nc, n_cols))
    T = csr(data_t, cols_t, ptr_t, (2 * nc, n_cols))
    u = None
    if phi is not None and (params.restitution > 0.0 or restitution is not None):
        phi = np.asarray(phi, dtype=float)
        if phi.size != n_cols:
            raise StateError(
                f"contact_rows: phi must hold {n_cols} numbers (nb, 6), got {phi.shape}"
            )
        u = N @ phi.reshape(-1)
    c = contact_rhs(contacts.distance, h, params, u, restitution)
    return N, c, T, np.asarray(contacts.mu, dtype=float).copy()
