"""Compiled kernels of the reduced contact step (:mod:`contactlab.reduced.compiled_step`).

Two calls per step over flat arrays:

* :func:`tracked_contacts` (:func:`step_contacts`, the contact set's columns and the
  contacts' identities): the world poses of the collision shapes at the body
  transforms, their contacts with the ground planes and with each other
  (sphere--sphere, sphere--box, box--box and any shape against a mesh's hull,
  static shapes included; the narrow phases, conventions and order of
  :class:`contactlab.collision.Collider`) and whether two shapes of other kinds
  come within reach of each other (then the driver asks the general collider
  for that step).
* :func:`contact_step`: the step of :class:`~contactlab.reduced.formulation.ReducedFormulation`
  with the box-friction LCP solved by projected Gauss--Seidel
  (:mod:`solvers.backends.pgs`): joint maps, kinematics, ``M_r`` and the
  free momentum (``coriolis="rotated_linear"``, joint springs and dampers
  implicit), contact rows ``N = N_m J`` and ``T = T_m J``, the tree factor
  ``M = L^T L`` (:func:`_ltl`, no fill-in) reused for ``M^-1 C^T`` and the free
  velocity, the sweeps in height order
  from the carried-over impulses (on the velocity, or on ``W = C M^-1 C^T`` when the
  rows are fewer than twice the coordinates), the velocity, the exponential
  update of free joints and the state metrics of the new state.

Node kinds (per tree joint): ``FIXED``, ``REVOLUTE``, ``PRISMATIC`` (the codes
of :mod:`contactlab.reduced._kernels`), and the free joint as a spherical and a
translational joint, translation first (``FREE_TF``: ``Q = [[R(r), t]]``,
``q = (t, r)``) or rotation first (``FREE_RF``: ``Q = [[R(r), R t]]``,
``q = (r, t)``), ``r`` a rotation vector (Grassia's chart switch past pi).
"""

from __future__ import annotations

import numpy as np

from contactlab.collision.boxes import MAX_BOX_CONTACTS, _box_box_pair
from contactlab.collision.convex import no_hull, signed_distance_v
from contactlab.collision.hulls import MAX_MESH_CONTACTS, _mesh_pair, mesh_scratch, reduce_plane
from contactlab.collision.round_shapes import CYLINDER_RIM_SAMPLES
from contactlab.contact.identity import _identify
from contactlab.contact.rows import _tangent_basis
from contactlab.models.delassus import carried_impulses, friction_vectors
from contactlab.reduced import _kernels
from solvers.jit import njit

#: CPU seconds of a cold compilation of these kernels (not measured).
COMPILE_SECONDS: float | None = None

FIXED, REVOLUTE, PRISMATIC, FREE_TF, FREE_RF = 0, 1, 2, 3, 4
#: shape kinds (as :mod:`contactlab.collision.shape_table`)
SPHERE, CAPSULE, BOX, CYLINDER, MESH = 0, 1, 2, 3, 4
#: most contacts of one hull with one plane (``ContactParams.hull_plane_points`` is at most
#: :data:`contactlab.collision.hulls.MAX_MESH_CONTACTS`)
MAX_MESH = 8

#: [m] added to the margin when deciding whether two shapes may touch (the narrow phases
#: of other kinds than hulls measure their distances their own way, to rounding)
SLACK = 1e-6
#: rim samples per cylinder cap (:data:`contactlab.collision.round_shapes.CYLINDER_RIM_SAMPLES`)
RIM = CYLINDER_RIM_SAMPLES
#: statuses of :func:`contact_step`
OPTIMAL, MAX_ITERATIONS, NUMERICAL_ERROR, NOT_SPD, DECOUPLED = 0, 1, 2, 3, 4


# ----------------------------------------------------------------------------
# SO(3) / SE(3)
# ----------------------------------------------------------------------------
@njit(cache=True)
def _sinc(t):  # noqa: ANN001, ANN202
    """``a = sin t / t``, ``b = (1 - cos t) / t^2``, ``c = (t - sin t) / t^3``."""
    if t < 1e-3:
        t2 = t * t
        return (
            1.0 - t2 / 6.0 + t2 * t2 / 120.0,
            0.5 - t2 / 24.0 + t2 * t2 / 720.0,
            1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0,
        )
    s, c = np.sin(t), np.cos(t)
    return s / t, (1.0 - c) / (t * t), (t - s) / (t * t * t)


@njit(cache=True)
def _skew(w, W):  # noqa: ANN001, ANN202
    W[0, 0], W[0, 1], W[0, 2] = 0.0, -w[2], w[1]
    W[1, 0], W[1, 1], W[1, 2] = w[2], 0.0, -w[0]
    W[2, 0], W[2, 1], W[2, 2] = -w[1], w[0], 0.0


@njit(cache=True)
def _rodrigues(w, ca, cb, out):  # noqa: ANN001, ANN202
    """``I + ca [w] + cb [w]^2`` into ``out`` (3, 3), with ``[w]^2 = w w^T - |w|^2 I``."""
    x, y, z = w[0], w[1], w[2]
    n2 = x * x + y * y + z * z
    out[0, 0] = 1.0 + cb * (x * x - n2)
    out[1, 1] = 1.0 + cb * (y * y - n2)
    out[2, 2] = 1.0 + cb * (z * z - n2)
    out[0, 1] = -ca * z + cb * x * y
    out[1, 0] = ca * z + cb * x * y
    out[0, 2] = ca * y + cb * x * z
    out[2, 0] = -ca * y + cb * x * z
    out[1, 2] = -ca * x + cb * y * z
    out[2, 1] = ca * x + cb * y * z


@njit(cache=True)
def _exp_so3(w, R):  # noqa: ANN001, ANN202
    a, b, _ = _sinc(np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]))
    _rodrigues(w, a, b, R)


@njit(cache=True)
def _right_jacobian(w, Jr):  # noqa: ANN001, ANN202
    """``J_r(w) = I - b [w] + c [w]^2``."""
    _, b, c = _sinc(np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]))
    _rodrigues(w, -b, c, Jr)


@njit(cache=True)
def _log_so3(R, w):  # noqa: ANN001, ANN202
    """Rotation vector (``|w| <= pi``) of ``R`` through its unit quaternion (Shepperd)."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr >= R[0, 0] and tr >= R[1, 1] and tr >= R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + tr)
        q0 = 0.25 * s
        q1 = (R[2, 1] - R[1, 2]) / s
        q2 = (R[0, 2] - R[2, 0]) / s
        q3 = (R[1, 0] - R[0, 1]) / s
    elif R[0, 0] >= R[1, 1] and R[0, 0] >= R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2])
        q0 = (R[2, 1] - R[1, 2]) / s
        q1 = 0.25 * s
        q2 = (R[0, 1] + R[1, 0]) / s
        q3 = (R[0, 2] + R[2, 0]) / s
    elif R[1, 1] >= R[2, 2]:
        s = 2.0 * np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2])
        q0 = (R[0, 2] - R[2, 0]) / s
        q1 = (R[0, 1] + R[1, 0]) / s
        q2 = 0.25 * s
        q3 = (R[1, 2] + R[2, 1]) / s
    else:
        s = 2.0 * np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1])
        q0 = (R[1, 0] - R[0, 1]) / s
        q1 = (R[0, 2] + R[2, 0]) / s
        q2 = (R[1, 2] + R[2, 1]) / s
        q3 = 0.25 * s
    if q0 < 0.0:
        q0, q1, q2, q3 = -q0, -q1, -q2, -q3
    sv = np.sqrt(q1 * q1 + q2 * q2 + q3 * q3)
    if sv < 1e-12:
        scale = 2.0 / max(q0, 1e-300)
    else:
        scale = 2.0 * np.arctan2(sv, q0) / sv
    w[0], w[1], w[2] = scale * q1, scale * q2, scale * q3


@njit(cache=True)
def _chart(R, guess, w):  # noqa: ANN001, ANN202
    """Rotation vector of ``R`` on the branch ``r + 2 pi k r/|r|`` nearest ``guess``
    (:meth:`SphericalExpJoint.chart`)."""
    _log_so3(R, w)
    theta = np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    if theta < 1e-12:
        return
    g = (guess[0] * w[0] + guess[1] * w[1] + guess[2] * w[2]) / theta
    k = np.round((g - theta) / (2.0 * np.pi))
    scale = 1.0 + 2.0 * np.pi * k / theta
    for i in range(3):
        w[i] *= scale


@njit(cache=True)
def _exp_se3(phi, E):  # noqa: ANN001, ANN202
    w = phi[:3]
    a, b, c = _sinc(np.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]))
    R = np.empty((3, 3))
    V = np.empty((3, 3))
    _rodrigues(w, a, b, R)
    _rodrigues(w, b, c, V)
    for i in range(4):
        for j in range(4):
            E[i, j] = 0.0
    E[3, 3] = 1.0
    for i in range(3):
        acc = 0.0
        for j in range(3):
            E[i, j] = R[i, j]
            acc += V[i, j] * phi[3 + j]
        E[i, 3] = acc


# ----------------------------------------------------------------------------
# joint maps and kinematics
# ----------------------------------------------------------------------------
@njit(cache=True)
def _free_maps(kind, a, q, Q, S):  # noqa: ANN001, ANN202
    """``Q`` (4, 4) and ``S`` (6, 6) of a free node at ``q[a:a+6]`` (module docstring)."""
    if kind == FREE_TF:
        t, r = q[a : a + 3], q[a + 3 : a + 6]
    else:
        r, t = q[a : a + 3], q[a + 3 : a + 6]
    R = np.empty((3, 3))
    Jr = np.empty((3, 3))
    _exp_so3(r, R)
    _right_jacobian(r, Jr)
    for i in range(4):
        for j in range(4):
            Q[i, j] = 0.0
    Q[3, 3] = 1.0
    for i in range(6):
        for j in range(6):
            S[i, j] = 0.0
    for i in range(3):
        for j in range(3):
            Q[i, j] = R[i, j]
    if kind == FREE_TF:
        for i in range(3):
            Q[i, 3] = t[i]
            for j in range(3):
                S[3 + i, j] = R[j, i]  # translation: (0; R^T)
                S[i, 3 + j] = Jr[i, j]  # rotation: (J_r; 0)
    else:
        T = np.empty((3, 3))
        _skew(t, T)
        for i in range(3):
            Q[i, 3] = R[i, 0] * t[0] + R[i, 1] * t[1] + R[i, 2] * t[2]
            S[3 + i, 3 + i] = 1.0  # translation: (0; I)
            for j in range(3):
                S[i, j] = Jr[i, j]  # rotation: (J_r; -[t] J_r)
                S[3 + i, j] = -(T[i, 0] * Jr[0, j] + T[i, 1] * Jr[1, j] + T[i, 2] * Jr[2, j])


@njit(cache=True)
def _tree_kinematics(kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, qdot):  # noqa: ANN001, ANN202
    """Joint maps at ``q`` and the recursion of :func:`_kernels.kinematics` (``Sdot = 0``:
    revolute and prismatic joints have none, free joints hold their twist over a step)."""
    n = kind.shape[0]
    Q = np.empty((n, 4, 4))
    S = np.zeros((n, 6, 6))
    Sd = np.zeros((n, 6, 6))
    codes = np.empty(n, dtype=np.int64)
    for i in range(n):
        codes[i] = kind[i] if kind[i] <= PRISMATIC else 4
    _kernels.evaluate_simple(codes, axis, q, dof0, Q, S)
    for i in range(n):
        if kind[i] > PRISMATIC:
            _free_maps(kind[i], dof0[i], q, Q[i], S[i])
    return _kernels.kinematics(parent, Fp, Fci, AdFc, Q, S, Sd, ndof, dof0, qdot)


@njit(cache=True)
def _shape_poses(E, node, pose, W):  # noqa: ANN001, ANN202
    """World poses ``E[node] @ pose`` of the shapes (a static shape's, ``node`` -1: its pose)."""
    for s in range(node.shape[0]):
        k = node[s]
        if k < 0:
            for i in range(4):
                for j in range(4):
                    W[s, i, j] = pose[s, i, j]
            continue
        for i in range(3):
            for j in range(4):
                acc = E[k, i, 3] if j == 3 else 0.0
                for m in range(3):
                    acc += E[k, i, m] * pose[s, m, j]
                W[s, i, j] = acc
        W[s, 3, 0], W[s, 3, 1], W[s, 3, 2], W[s, 3, 3] = 0.0, 0.0, 0.0, 1.0


# ----------------------------------------------------------------------------
# contacts with the ground planes
# ----------------------------------------------------------------------------
@njit(cache=True)
def _point_plane(x, radius, n, off, margin, shape, plane, out_p, out_d, out_s, out_pl, c):  # noqa: ANN001, ANN202
    """A sphere of ``radius`` at ``x`` against ``n . x <= off`` (:func:`points_plane`)."""
    dist = x[0] * n[0] + x[1] * n[1] + x[2] * n[2] - off - radius
    if dist < margin:
        for i in range(3):
            out_p[c, i] = x[i] - radius * n[i] - 0.5 * dist * n[i]
        out_d[c] = dist
        out_s[c] = shape
        out_pl[c] = plane
        return c + 1
    return c


@njit(cache=True)
def _cylinders_plane(W, s_kind, s_size, pl_n, pl_off, margin, P, D, SH, PL, c):  # noqa: ANN001, ANN202, PLR0913
    """The cylinders' rim points against the planes, in the order of
    :func:`contactlab.collision.round_shapes.cylinder_plane` over the rows (plane, cylinder):
    per cap (bottom, then top) the deepest rim points of all rows, then their rim samples
    (those within half a sample spacing of the deepest point left out)."""
    ns = s_kind.shape[0]
    npl = pl_n.shape[0]
    spacing = 2.0 * np.pi / RIM
    x = np.empty(3)
    u = np.empty(3)
    for sign in (-1.0, 1.0):
        for part in range(2):
            for p in range(npl):
                nrm = pl_n[p]
                for s in range(ns):
                    if s_kind[s] != CYLINDER:
                        continue
                    r, hh = s_size[s, 0], s_size[s, 1]
                    na = nrm[0] * W[s, 0, 2] + nrm[1] * W[s, 1, 2] + nrm[2] * W[s, 2, 2]
                    for i in range(3):
                        u[i] = nrm[i] - na * W[s, i, 2]
                    ln = np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
                    defined = ln > 1e-6
                    for i in range(3):
                        u[i] = -u[i] / (ln if defined else 1.0)
                    if part == 0:
                        if defined:
                            for i in range(3):
                                x[i] = W[s, i, 3] + sign * hh * W[s, i, 2] + r * u[i]
                            c = _point_plane(x, 0.0, nrm, pl_off[p], margin, s, p, P, D, SH, PL, c)
                        continue
                    ang_u = np.arctan2(
                        u[0] * W[s, 0, 1] + u[1] * W[s, 1, 1] + u[2] * W[s, 2, 1],
                        u[0] * W[s, 0, 0] + u[1] * W[s, 1, 0] + u[2] * W[s, 2, 0],
                    )
                    for j in range(RIM):
                        angle = 2.0 * np.pi * j / RIM
                        gap = abs((angle - ang_u + np.pi) % (2.0 * np.pi) - np.pi)
                        if defined and gap < 0.5 * spacing:
                            continue
                        ca, sa = np.cos(angle), np.sin(angle)
                        for i in range(3):
                            x[i] = W[s, i, 3] + sign * hh * W[s, i, 2]
                            x[i] += r * (ca * W[s, i, 0] + sa * W[s, i, 1])
                        c = _point_plane(x, 0.0, nrm, pl_off[p], margin, s, p, P, D, SH, PL, c)
    return c


@njit(cache=True)
def _sphere_sphere(ca, ra, cb, rb, margin, P, N, D, c):  # noqa: ANN001, ANN202
    """:func:`contactlab.collision.round_shapes.sphere_sphere` of one pair."""
    d0, d1, d2 = ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2]
    L = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if L > 1e-12:
        n0, n1, n2 = d0 / L, d1 / L, d2 / L
    else:
        n0, n1, n2 = 0.0, 0.0, 1.0
    dist = L - ra - rb
    if not dist < margin:
        return c
    n = (n0, n1, n2)
    for i in range(3):
        N[c, i] = n[i]
        P[c, i] = 0.5 * ((ca[i] - ra * n[i]) + (cb[i] + rb * n[i]))
    D[c] = dist
    return c + 1


@njit(cache=True)
def _sphere_box(ca, r, Rb, pb, h, margin, P, N, D, c):  # noqa: ANN001, ANN202
    """:func:`contactlab.collision.boxes.sphere_box` of one pair (box axes the columns of
    ``Rb``)."""
    cl = np.empty(3)
    q = np.empty(3)
    diff = np.empty(3)
    for i in range(3):
        acc = 0.0
        for j in range(3):
            acc += Rb[j, i] * (ca[j] - pb[j])
        cl[i] = acc
        q[i] = min(max(acc, -h[i]), h[i])
        diff[i] = acc - q[i]
    L = np.sqrt(diff[0] * diff[0] + diff[1] * diff[1] + diff[2] * diff[2])
    nl = np.zeros(3)
    if L > 1e-12:
        for i in range(3):
            nl[i] = diff[i] / L
        dist = L - r
    else:  # the centre inside: out through the nearest face
        k = 0
        best = h[0] - abs(cl[0])
        for i in range(1, 3):
            dep = h[i] - abs(cl[i])
            if dep < best:
                best, k = dep, i
        sign = 1.0 if cl[k] >= 0.0 else -1.0
        nl[k] = sign
        q[k] = sign * h[k]
        dist = -best - r
    if not dist < margin:
        return c
    for i in range(3):
        n_i = 0.0
        ob = 0.0
        for j in range(3):
            n_i += Rb[i, j] * nl[j]
            ob += Rb[i, j] * q[j]
        ob += pb[i]
        N[c, i] = n_i
        P[c, i] = 0.5 * (ob + (ca[i] - r * n_i))
    D[c] = dist
    return c + 1


@njit(cache=True)
def _boxes_apart(W, a, b, box_c, box_h, gap):  # noqa: ANN001, ANN202
    """Whether the bounding boxes of shapes ``a`` and ``b`` (centre ``box_c`` and half
    extents ``box_h`` in the shape's frame, the shape inside) are more than ``gap`` apart
    along one of the 15 axes of the separating-axis test: then so are the shapes."""
    R = np.empty((3, 3))
    absR = np.empty((3, 3))
    t = np.empty(3)
    ta = np.empty(3)
    # the centres in the world, their offset in a's frame, b's axes in a's frame
    for i in range(3):
        acc = W[b, i, 3] - W[a, i, 3]
        for j in range(3):
            acc += W[b, i, j] * box_c[b, j] - W[a, i, j] * box_c[a, j]
        t[i] = acc
    for i in range(3):
        ta[i] = W[a, 0, i] * t[0] + W[a, 1, i] * t[1] + W[a, 2, i] * t[2]
        for j in range(3):
            R[i, j] = W[a, 0, i] * W[b, 0, j] + W[a, 1, i] * W[b, 1, j] + W[a, 2, i] * W[b, 2, j]
            absR[i, j] = abs(R[i, j]) + 1e-12
    ea, eb = box_h[a], box_h[b]
    for i in range(3):  # a's axes
        rb = eb[0] * absR[i, 0] + eb[1] * absR[i, 1] + eb[2] * absR[i, 2]
        if abs(ta[i]) > ea[i] + rb + gap:
            return True
    for j in range(3):  # b's axes
        ra = ea[0] * absR[0, j] + ea[1] * absR[1, j] + ea[2] * absR[2, j]
        if abs(ta[0] * R[0, j] + ta[1] * R[1, j] + ta[2] * R[2, j]) > ra + eb[j] + gap:
            return True
    for i in range(3):  # a_i x b_j, of length sqrt(1 - R_ij^2)
        i1, i2 = (i + 1) % 3, (i + 2) % 3
        for j in range(3):
            j1, j2 = (j + 1) % 3, (j + 2) % 3
            length = np.sqrt(max(1.0 - R[i, j] * R[i, j], 0.0))
            if length < 1e-6:  # (nearly) parallel axes: the face axes decide
                continue
            ra = ea[i1] * absR[i2, j] + ea[i2] * absR[i1, j]
            rb = eb[j1] * absR[i, j2] + eb[j2] * absR[i, j1]
            if abs(ta[i2] * R[i1, j] - ta[i1] * R[i2, j]) > ra + rb + gap * length:
                return True
    return False


#: what a separation proven along a cached direction must exceed besides the gap asked for:
#: far above the rounding of the support values (about 1e-15 m on a robot's scale)
SEPARATION_EPS = 1e-9


@njit(cache=True)
def _extent(W, s, kind, size, hull, hull_v, hull_vs, u):  # noqa: ANN001, ANN202
    """The largest and the smallest ``u . (x - o)`` over shape ``s`` (pose ``W[s]``, origin
    ``o``; the whole shape: a sphere's or capsule's radius included), and ``u`` in the
    shape's frame."""
    l0 = W[s, 0, 0] * u[0] + W[s, 1, 0] * u[1] + W[s, 2, 0] * u[2]
    l1 = W[s, 0, 1] * u[0] + W[s, 1, 1] * u[1] + W[s, 2, 1] * u[2]
    l2 = W[s, 0, 2] * u[0] + W[s, 1, 2] * u[1] + W[s, 2, 2] * u[2]
    if kind == MESH:
        hi, lo = -np.inf, np.inf
        for v in range(hull_vs[hull], hull_vs[hull + 1]):
            x = hull_v[v, 0] * l0 + hull_v[v, 1] * l1 + hull_v[v, 2] * l2
            hi = max(hi, x)
            lo = min(lo, x)
        return hi, lo, l0, l1, l2
    if kind == SPHERE:
        e = size[0]
    elif kind == CAPSULE:
        e = size[1] * abs(l2) + size[0]
    elif kind == CYLINDER:
        e = size[1] * abs(l2) + size[0] * np.sqrt(min(max(1.0 - l2 * l2, 0.0), 1.0))
    else:
        e = size[0] * abs(l0) + size[1] * abs(l1) + size[2] * abs(l2)
    return e, -e, l0, l1, l2


@njit(cache=True)
def _reach(W, s, kind, size, hull, hull_v, hull_vs, radius, u, kept_l, kept_value):  # noqa: ANN001, ANN202
    """An upper bound on ``u . (x - o)`` over shape ``s`` (:func:`_extent`'s largest value;
    exact but for a hull's): a hull's from its value ``kept_value`` along the direction
    ``kept_l`` in its frame, plus the change of the direction in its frame times the
    hull's radius about its origin (``|max l'.v - max l.v| <= |l' - l| max |v|``)."""
    if kind != MESH:
        return _extent(W, s, kind, size, hull, hull_v, hull_vs, u)[0]
    d2 = 0.0
    for i in range(3):
        li = W[s, 0, i] * u[0] + W[s, 1, i] * u[1] + W[s, 2, i] * u[2]
        d2 += (li - kept_l[i]) ** 2
    return kept_value + np.sqrt(d2) * radius


@njit(cache=True)
def _separated(  # noqa: ANN201, PLR0913
    W, a, b, s_kind, s_size, s_hull, s_radius, hull_v, hull_vs, sep_dir, sep_loc, sep_val, k, gap,
):  # fmt: skip
    """Whether shapes ``a`` and ``b`` are proven more than ``gap`` apart along the direction
    ``u = sep_dir[k]`` kept for candidate pair ``k`` (zero when none is kept), ``b``
    beyond ``a``: ``min u.y`` over ``b`` less ``max u.x`` over ``a`` bounds their distance
    from below.  Hulls' extents are bounded (:func:`_reach`) from those kept with the
    direction (``sep_loc[k]``, ``sep_val[k]``: ``u`` in ``a``'s frame and ``-u`` in ``b``'s,
    with the extents along them); the other kinds' are exact."""
    u = sep_dir[k]
    if u[0] == 0.0 and u[1] == 0.0 and u[2] == 0.0:
        return False
    w = -u
    ha = _reach(
        W, a, s_kind[a], s_size[a], s_hull[a], hull_v, hull_vs, s_radius[a], u,
        sep_loc[k, 0], sep_val[k, 0],
    )  # fmt: skip
    hb = _reach(
        W, b, s_kind[b], s_size[b], s_hull[b], hull_v, hull_vs, s_radius[b], w,
        sep_loc[k, 1], sep_val[k, 1],
    )  # fmt: skip
    pa = W[a, 0, 3] * u[0] + W[a, 1, 3] * u[1] + W[a, 2, 3] * u[2]
    pb = W[b, 0, 3] * u[0] + W[b, 1, 3] * u[1] + W[b, 2, 3] * u[2]
    return (pb - hb) - (pa + ha) > gap + SEPARATION_EPS


@njit(cache=True)
def _separated_exact(  # noqa: ANN201, PLR0913
    W, a, b, s_kind, s_size, s_hull, hull_v, hull_vs, sep_dir, sep_loc, sep_val, k, gap,
):  # fmt: skip
    """:func:`_separated` with the hulls' extents along the kept direction measured
    (:func:`_extent`, a scan of the vertices) instead of bounded: whether shapes ``a`` and
    ``b`` are proven more than ``gap`` apart along ``sep_dir[k]``, before GJK is asked.
    When they are, the measured extents replace the kept ones (the direction stays), so
    that the next steps' bounds start from them."""
    u = sep_dir[k]
    if u[0] == 0.0 and u[1] == 0.0 and u[2] == 0.0:
        return False
    ext = np.empty(2)
    loc = np.empty((2, 3))
    w = np.empty(3)
    for side in range(2):
        s = a if side == 0 else b
        sg = 1.0 if side == 0 else -1.0  # a's extent along u, b's along -u
        for i in range(3):
            w[i] = sg * u[i]
        e, _, l0, l1, l2 = _extent(W, s, s_kind[s], s_size[s], s_hull[s], hull_v, hull_vs, w)
        ext[side] = e
        loc[side, 0], loc[side, 1], loc[side, 2] = l0, l1, l2
    pa = W[a, 0, 3] * u[0] + W[a, 1, 3] * u[1] + W[a, 2, 3] * u[2]
    pb = W[b, 0, 3] * u[0] + W[b, 1, 3] * u[1] + W[b, 2, 3] * u[2]
    if not (pb - ext[1]) - (pa + ext[0]) > gap + SEPARATION_EPS:
        return False
    for side in range(2):
        for i in range(3):
            sep_loc[k, side, i] = loc[side, i]
        sep_val[k, side] = ext[side]
    return True


@njit(cache=True)
def _keep_direction(  # noqa: ANN201, PLR0913
    W, a, b, s_kind, s_size, s_hull, hull_v, hull_vs, v, sep_dir, sep_loc, sep_val, k,
):  # fmt: skip
    """Keep for candidate pair ``k`` the direction of ``v`` (any length; none when it is
    zero), oriented so that ``b`` lies farthest beyond ``a`` along it, with the shapes'
    extents along it (:func:`_separated`)."""
    n2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2]
    if not (n2 > 1e-300 and np.isfinite(n2)):
        for i in range(3):
            sep_dir[k, i] = 0.0
        return
    r = 1.0 / np.sqrt(n2)
    u = np.empty(3)
    for i in range(3):
        u[i] = v[i] * r
    a_hi, a_lo, a0, a1, a2 = _extent(W, a, s_kind[a], s_size[a], s_hull[a], hull_v, hull_vs, u)
    b_hi, b_lo, b0, b1, b2 = _extent(W, b, s_kind[b], s_size[b], s_hull[b], hull_v, hull_vs, u)
    pa = W[a, 0, 3] * u[0] + W[a, 1, 3] * u[1] + W[a, 2, 3] * u[2]
    pb = W[b, 0, 3] * u[0] + W[b, 1, 3] * u[1] + W[b, 2, 3] * u[2]
    if (pb + b_lo) - (pa + a_hi) >= (pa + a_lo) - (pb + b_hi):  # b beyond a along u
        sign, ea, eb = 1.0, a_hi, -b_lo
    else:
        sign, ea, eb = -1.0, -a_lo, b_hi
    for i, (x, y) in enumerate(((a0, b0), (a1, b1), (a2, b2))):
        sep_dir[k, i] = sign * u[i]
        sep_loc[k, 0, i] = sign * x
        sep_loc[k, 1, i] = -sign * y
    sep_val[k, 0] = ea
    sep_val[k, 1] = eb


@njit(cache=True)
def _hull_of(kind, h, hull_v, hull_vs, hull_ns, hull_nb):  # noqa: ANN001, ANN202
    """The hull argument of :func:`signed_distance_v` for a shape of ``kind`` (hull ``h``),
    as :func:`contactlab.collision.hulls._mesh_pair` builds it."""
    if kind == MESH:
        return (
            hull_v[hull_vs[h] : hull_vs[h + 1]],
            hull_ns[hull_vs[h] : hull_vs[h + 1] + 1],
            hull_nb,
        )
    return no_hull()


#: a hull's vertices within the margin of a plane are looked for among those found within
#: ``margin + KEEP_BAND`` of it at a reference pose, while the hull has moved along the
#: plane's normal by less than ``KEEP_BAND`` since (:func:`_hull_plane_points`) [m]
KEEP_BAND = 2e-3
#: the header of a row of ``plane_keep`` (count + 1, the direction, offset,
#: radius and margin kept)
KEEP_HEAD = 7


@njit(cache=True)
def _hull_plane_points(  # noqa: ANN201, PLR0913
    W, s, h, l0, l1, l2, base, nrm, margin, hull_v, hull_vs, centre, kept, CP, CD,
):  # fmt: skip
    """The vertices of hull ``h`` (shape ``s``, pose ``W[s]``) within ``margin`` of a plane,
    in vertex order: their points (halfway to the plane) into ``CP`` and distances
    ``v . l + base`` into ``CD``; returns their number.

    ``kept`` (``KEEP_HEAD`` + the hull's vertex count) carries from step to step the
    vertices found within ``margin + KEEP_BAND`` at a reference pose: the count plus one
    (zero: none kept), the plane's normal ``l_0`` in the hull's frame, the offset
    ``c . l_0 + base_0`` of the hull's box centre ``c``, the hull's radius ``r`` about
    it and the margin, then the vertices.  A vertex's distance changes since by
    ``(v - c) . (l - l_0) + (c . l + base - c . l_0 - base_0)``, at most
    ``r |l - l_0| + |c . l + base - c . l_0 - base_0|``: while that stays below
    ``KEEP_BAND``, no vertex left out comes within the margin and the kept ones are
    scanned (the same distances, by the same expression, in the same order); otherwise
    every vertex is, and the kept set starts again from the pose."""
    c0, c1, c2 = centre[0], centre[1], centre[2]
    base_c = c0 * l0 + c1 * l1 + c2 * l2 + base
    m = 0
    if kept[0] > 0.0 and kept[6] == margin:
        d0, d1, d2 = l0 - kept[1], l1 - kept[2], l2 - kept[3]
        drift = kept[5] * np.sqrt(d0 * d0 + d1 * d1 + d2 * d2) + abs(base_c - kept[4])
        if drift + SEPARATION_EPS < KEEP_BAND:
            for j in range(int(kept[0]) - 1):
                v = int(kept[KEEP_HEAD + j])
                dist = hull_v[v, 0] * l0 + hull_v[v, 1] * l1 + hull_v[v, 2] * l2 + base
                if dist < margin:
                    for i in range(3):
                        xi = W[s, i, 3] + W[s, i, 0] * hull_v[v, 0]
                        xi += W[s, i, 1] * hull_v[v, 1] + W[s, i, 2] * hull_v[v, 2]
                        CP[m, i] = xi - 0.5 * dist * nrm[i]
                    CD[m] = dist
                    m += 1
            return m
    n = 0
    r2 = 0.0
    reach = margin + KEEP_BAND
    for v in range(hull_vs[h], hull_vs[h + 1]):
        e0, e1, e2 = hull_v[v, 0] - c0, hull_v[v, 1] - c1, hull_v[v, 2] - c2
        r2 = max(r2, e0 * e0 + e1 * e1 + e2 * e2)
        dist = hull_v[v, 0] * l0 + hull_v[v, 1] * l1 + hull_v[v, 2] * l2 + base
        if dist < reach:
            kept[KEEP_HEAD + n] = v
            n += 1
        if dist < margin:
            for i in range(3):
                xi = W[s, i, 3] + W[s, i, 0] * hull_v[v, 0]
                xi += W[s, i, 1] * hull_v[v, 1] + W[s, i, 2] * hull_v[v, 2]
                CP[m, i] = xi - 0.5 * dist * nrm[i]
            CD[m] = dist
            m += 1
    kept[0] = n + 1.0
    kept[1], kept[2], kept[3] = l0, l1, l2
    kept[4] = base_c
    kept[5] = np.sqrt(r2) * (1.0 + 1e-12)
    kept[6] = margin
    return m


@njit(cache=True)
def step_contacts(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    E, s_node, s_kind, s_pose, s_size, s_hull, s_radius, s_planes,
    hull_v, hull_vs, hull_fn, hull_fs, hull_fv, hull_fvs, hull_ns, hull_nb, max_face,
    pl_n, pl_off, margin, plane_points, near_a, near_b, box_c, box_h,
    sep_dir, sep_loc, sep_val, plane_keep,
):  # fmt: skip
    """The contacts of the shapes (on bodies ``s_node`` of the transforms ``E``, -1 for
    static shapes) with the planes ``n . x <= off`` and with each other, as
    :class:`contactlab.collision.Collider` finds them, in its order.

    Plane contacts (shapes with ``s_planes``) first, ordered as :meth:`Collider._planes`
    orders them: by kind (sphere, capsule, box, cylinder, mesh), then plane, then shape (a
    capsule's first end spheres, then its second ones; a box's corners in ``(-1, 1)^3``
    order; at most ``plane_points`` of a hull, picked by
    :func:`contactlab.collision.hulls.reduce_plane`).  Then the candidate pairs
    ``(near_a, near_b)`` (shape pairs on different bodies that may collide, sorted)
    whose bounding spheres and world bounding boxes grown by ``margin / 2``
    (:meth:`ShapeTable.aabbs`) overlap, each oriented so that its first
    kind is the lower, grouped by kind pair in ascending order, through the collider's
    narrow phases (sphere--sphere, sphere--box, box--box, any kind against a mesh's hull),
    unless their bounding boxes (``box_c``, ``box_h``: centres and half extents in the
    shapes' frames) are farther apart than ``margin`` (no contact then);
    the contacts whose first shape is static last, with the shapes exchanged and the
    normal negated.  A candidate pair of any other kinds within ``margin`` of touching
    (the GJK distance of :func:`contactlab.collision.convex.signed_distance_v`) sets the
    returned flag: the driver then asks the general collider.

    Returns per contact its first shape, its second shape (-1 for a plane), its plane
    (-1 for a shape pair), point, normal and distance, and the flag.
    """
    ns = s_node.shape[0]
    W = np.empty((ns, 4, 4))
    _shape_poses(E, s_node, s_pose, W)
    # world bounding boxes grown by margin / 2 (ShapeTable.aabbs): the broad phase
    ext = np.empty((ns, 3))
    for s in range(ns):
        kd = s_kind[s]
        r, hh = s_size[s, 0], s_size[s, 1]
        for i in range(3):
            if kd == BOX or kd == MESH:
                e = 0.0
                for j in range(3):
                    e += abs(W[s, i, j]) * s_size[s, j]
            elif kd == SPHERE:
                e = r
            elif kd == CAPSULE:
                e = abs(W[s, i, 2]) * hh + r
            else:
                e = abs(W[s, i, 2]) * hh + r * np.sqrt(min(max(1.0 - W[s, i, 2] ** 2, 0.0), 1.0))
            ext[s, i] = e + 0.5 * margin + SLACK
    fallback = False
    npair = near_a.shape[0]
    cand = np.empty(npair, dtype=np.int64)
    code = np.empty(npair, dtype=np.int64)
    m_c = 0
    for k in range(npair):
        a, b = near_a[k], near_b[k]
        d2 = 0.0
        for i in range(3):
            e = W[a, i, 3] - W[b, i, 3]
            d2 += e * e
        reach = s_radius[a] + s_radius[b] + margin + SLACK
        if d2 >= reach * reach:
            continue
        apart = False
        for i in range(3):
            if abs(W[a, i, 3] - W[b, i, 3]) > ext[a, i] + ext[b, i]:
                apart = True
                break
        if apart or _boxes_apart(W, a, b, box_c, box_h, margin + SLACK):
            continue
        ka, kb = s_kind[a], s_kind[b]
        lo_k, hi_k = min(ka, kb), max(ka, kb)
        if hi_k == MESH:
            # no contact when the pair is proven farther apart than the margin along the
            # direction kept from an earlier step, or when the narrow phase's own distance
            # (the call :func:`_mesh_pair` makes, with its arguments) says so
            if _separated(
                W, a, b, s_kind, s_size, s_hull, s_radius, hull_v, hull_vs,
                sep_dir, sep_loc, sep_val, k, margin,
            ) or _separated_exact(
                W, a, b, s_kind, s_size, s_hull, hull_v, hull_vs,
                sep_dir, sep_loc, sep_val, k, margin,
            ):  # fmt: skip
                continue
            a0, b0 = a, b
            if ka > kb:
                a, b, ka, kb = b, a, kb, ka
            HA = _hull_of(ka, s_hull[a], hull_v, hull_vs, hull_ns, hull_nb)
            HB = _hull_of(kb, s_hull[b], hull_v, hull_vs, hull_ns, hull_nb)
            ra = s_size[a, 0] if (ka == CAPSULE or ka == SPHERE) else 0.0
            rb = s_size[b, 0] if (kb == CAPSULE or kb == SPHERE) else 0.0
            found, d, nv, _, _ = signed_distance_v(
                ka, W[a, :3, :3].copy(), W[a, :3, 3].copy(), s_size[a], HA,
                kb, W[b, :3, :3].copy(), W[b, :3, 3].copy(), s_size[b], HB, margin + ra + rb,
            )  # fmt: skip
            _keep_direction(
                W, a0, b0, s_kind, s_size, s_hull, hull_v, hull_vs, nv, sep_dir, sep_loc, sep_val, k
            )
            if not found or d - ra - rb >= margin:
                continue
            cand[m_c] = k
            code[m_c] = lo_k * 8 + hi_k
            m_c += 1
            continue
        if (lo_k == SPHERE and (hi_k == SPHERE or hi_k == BOX)) or (lo_k == BOX and hi_k == BOX):
            cand[m_c] = k
            code[m_c] = lo_k * 8 + hi_k
            m_c += 1
            continue
        if fallback:
            continue
        if _separated(
            W, a, b, s_kind, s_size, s_hull, s_radius, hull_v, hull_vs,
            sep_dir, sep_loc, sep_val, k, margin + SLACK,
        ):  # fmt: skip
            continue
        ra = s_size[a, 0] if (ka == CAPSULE or ka == SPHERE) else 0.0
        rb = s_size[b, 0] if (kb == CAPSULE or kb == SPHERE) else 0.0
        cutoff = margin + ra + rb + SLACK
        found, d, nv, _, _ = signed_distance_v(
            ka, W[a, :3, :3].copy(), W[a, :3, 3].copy(), s_size[a], no_hull(),
            kb, W[b, :3, :3].copy(), W[b, :3, 3].copy(), s_size[b], no_hull(), cutoff,
        )  # fmt: skip
        _keep_direction(
            W, a, b, s_kind, s_size, s_hull, hull_v, hull_vs, nv, sep_dir, sep_loc, sep_val, k
        )
        if found and d - ra - rb < margin + SLACK:
            fallback = True
    npl = pl_n.shape[0]
    cap = 0
    for s in range(ns):
        kd = s_kind[s]
        if kd == SPHERE:
            cap += 1
        elif kd == CAPSULE:
            cap += 2
        elif kd == BOX:
            cap += 8
        elif kd == CYLINDER:
            cap += 2 * (1 + RIM)
        elif kd == MESH:
            cap += plane_points
    cap *= npl
    cap += m_c * max(MAX_BOX_CONTACTS, MAX_MESH_CONTACTS)
    P = np.empty((cap, 3))
    NRM = np.empty((cap, 3))
    D = np.empty(cap)
    SH = np.empty(cap, dtype=np.int64)
    SB = np.full(cap, -1, dtype=np.int64)
    PL = np.empty(cap, dtype=np.int64)
    c = 0
    x = np.empty(3)
    most = 1
    for h in range(hull_vs.shape[0] - 1):
        most = max(most, hull_vs[h + 1] - hull_vs[h])
    CP = np.empty((most, 3))
    CD = np.empty(most)
    keep = np.empty(most, dtype=np.int64)
    # cylinders and plane-less shapes: the planes' rows of the excluded shapes are skipped
    kind_p = s_kind.copy()
    for s in range(ns):
        if not s_planes[s]:
            kind_p[s] = -1
    for kd in (SPHERE, CAPSULE, BOX, CYLINDER, MESH):
        if kd == CYLINDER:
            c = _cylinders_plane(W, kind_p, s_size, pl_n, pl_off, margin, P, D, SH, PL, c)
            continue
        for p in range(npl):
            nrm = pl_n[p]
            off = pl_off[p]
            if kd == CAPSULE:
                for end in (-1.0, 1.0):
                    for s in range(ns):
                        if kind_p[s] != CAPSULE:
                            continue
                        for i in range(3):
                            x[i] = W[s, i, 3] + end * s_size[s, 1] * W[s, i, 2]
                        c = _point_plane(x, s_size[s, 0], nrm, off, margin, s, p, P, D, SH, PL, c)
                continue
            for s in range(ns):
                if kind_p[s] != kd:
                    continue
                if kd == SPHERE:
                    for i in range(3):
                        x[i] = W[s, i, 3]
                    c = _point_plane(x, s_size[s, 0], nrm, off, margin, s, p, P, D, SH, PL, c)
                elif kd == BOX:
                    for si in (-1.0, 1.0):
                        for sj in (-1.0, 1.0):
                            for sk in (-1.0, 1.0):
                                lx, ly, lz = si * s_size[s, 0], sj * s_size[s, 1], sk * s_size[s, 2]
                                for i in range(3):
                                    x[i] = W[s, i, 0] * lx + W[s, i, 1] * ly + W[s, i, 2] * lz
                                    x[i] += W[s, i, 3]
                                c = _point_plane(x, 0.0, nrm, off, margin, s, p, P, D, SH, PL, c)
                else:  # a hull's vertices (:func:`contactlab.collision.hulls._plane_kernel`)
                    h = s_hull[s]
                    l0 = W[s, 0, 0] * nrm[0] + W[s, 1, 0] * nrm[1] + W[s, 2, 0] * nrm[2]
                    l1 = W[s, 0, 1] * nrm[0] + W[s, 1, 1] * nrm[1] + W[s, 2, 1] * nrm[2]
                    l2 = W[s, 0, 2] * nrm[0] + W[s, 1, 2] * nrm[1] + W[s, 2, 2] * nrm[2]
                    base = W[s, 0, 3] * nrm[0] + W[s, 1, 3] * nrm[1] + W[s, 2, 3] * nrm[2] - off
                    if base - s_radius[s] >= margin + SLACK:  # every vertex above the margin
                        continue
                    m = _hull_plane_points(
                        W, s, h, l0, l1, l2, base, nrm, margin, hull_v, hull_vs, box_c[s],
                        plane_keep[s, p], CP, CD,
                    )  # fmt: skip
                    cnt = reduce_plane(CP, CD, m, nrm, keep, plane_points)
                    for j in range(cnt):
                        for i in range(3):
                            P[c, i] = CP[keep[j], i]
                        D[c] = CD[keep[j]]
                        SH[c] = s
                        PL[c] = p
                        c += 1
    for j in range(c):
        for i in range(3):
            NRM[j, i] = pl_n[PL[j], i]
    # -- shape pairs: by kind pair, then in candidate order --------------------------
    if m_c > 0:
        by_code = np.argsort(code[:m_c], kind="mergesort")
        FA, FB, poly, buf, MCP, MCD, mkeep = mesh_scratch(max_face)
        work = np.empty((9, 3))
        pts = np.zeros((max(MAX_BOX_CONTACTS, MAX_MESH_CONTACTS), 3))
        nms = np.zeros((max(MAX_BOX_CONTACTS, MAX_MESH_CONTACTS), 3))
        dss = np.zeros(max(MAX_BOX_CONTACTS, MAX_MESH_CONTACTS))
        RA = np.empty((3, 3))
        RB = np.empty((3, 3))
        pA = np.empty(3)
        pB = np.empty(3)
        first = c
        flipped = np.zeros(cap, dtype=np.bool_)
        for t in range(m_c):
            k = cand[by_code[t]]
            a, b = near_a[k], near_b[k]
            if s_kind[a] > s_kind[b]:
                a, b = b, a
            ka, kb = s_kind[a], s_kind[b]
            for i in range(3):
                pA[i] = W[a, i, 3]
                pB[i] = W[b, i, 3]
                for j in range(3):
                    RA[i, j] = W[a, i, j]
                    RB[i, j] = W[b, i, j]
            c0 = c
            if kb == MESH:
                cnt = _mesh_pair(
                    ka, RA, pA, s_size[a], s_hull[a], kb, RB, pB, s_size[b], s_hull[b],
                    hull_v, hull_vs, hull_fn, hull_fs, hull_fv, hull_fvs, hull_ns, hull_nb,
                    margin, pts, nms, dss, FA, FB, poly, buf, MCP, MCD, mkeep,
                )  # fmt: skip
                for j in range(cnt):
                    for i in range(3):
                        P[c, i] = pts[j, i]
                        NRM[c, i] = nms[j, i]
                    D[c] = dss[j]
                    c += 1
            elif kb == BOX and ka == BOX:
                cnt = _box_box_pair(
                    RA.T.copy(), pA, s_size[a], RB.T.copy(), pB, s_size[b], margin,
                    pts, nms, dss, poly, buf, work,
                )  # fmt: skip
                for j in range(cnt):
                    for i in range(3):
                        P[c, i] = pts[j, i]
                        NRM[c, i] = nms[j, i]
                    D[c] = dss[j]
                    c += 1
            elif kb == BOX:
                c = _sphere_box(pA, s_size[a, 0], RB, pB, s_size[b], margin, P, NRM, D, c)
            else:
                c = _sphere_sphere(pA, s_size[a, 0], pB, s_size[b, 0], margin, P, NRM, D, c)
            static_a = s_node[a] < 0
            for j in range(c0, c):
                SH[j], SB[j], PL[j] = a, b, -1
                flipped[j] = static_a
        # the contacts whose first shape is static go last, exchanged (static geometry is B)
        n_flip = 0
        for j in range(first, c):
            n_flip += 1 if flipped[j] else 0
        if n_flip > 0:
            order = np.empty(c - first, dtype=np.int64)
            u = 0
            for j in range(first, c):
                if not flipped[j]:
                    order[u] = j
                    u += 1
            for j in range(first, c):
                if flipped[j]:
                    order[u] = j
                    u += 1
            P2, N2, D2 = P[first:c].copy(), NRM[first:c].copy(), D[first:c].copy()
            A2, B2 = SH[first:c].copy(), SB[first:c].copy()
            for u in range(c - first):
                j = order[u] - first
                t = first + u
                for i in range(3):
                    P[t, i] = P2[j, i]
                    NRM[t, i] = -N2[j, i] if flipped[order[u]] else N2[j, i]
                D[t] = D2[j]
                if flipped[order[u]]:
                    SH[t], SB[t] = B2[j], A2[j]
                else:
                    SH[t], SB[t] = A2[j], B2[j]
    return (
        SH[:c].copy(),
        SB[:c].copy(),
        PL[:c].copy(),
        P[:c].copy(),
        NRM[:c].copy(),
        D[:c].copy(),
        fallback,
    )


@njit(cache=True)
def tracked_contacts(  # noqa: ANN201, PLR0913
    E, s_node, s_kind, s_pose, s_size, s_hull, s_radius, s_planes,
    hull_v, hull_vs, hull_fn, hull_fs, hull_fv, hull_fvs, hull_ns, hull_nb, max_face,
    pl_n, pl_off, margin, plane_points, near_a, near_b, box_c, box_h,
    t_body, t_local, t_material, plane_local, plane_material, mu_table,
    old_pair, old_point, old_ids, start, radius2, sep_dir, sep_loc, sep_val, plane_keep,
):  # fmt: skip
    """:func:`step_contacts`, then the columns of the step's
    :class:`~contactlab.collision.contacts.ContactSet` (bodies, shapes within their bodies
    or the static shapes, friction coefficients from the materials' table) and the
    contacts' identities (:func:`contactlab.contact.identity.identify` against the previous
    track ``old_pair``, ``old_point``, ``old_ids``; every contact new when it is empty).

    Returns, packed in few arrays (the caller unpacks them by views): ``(point, normal)``
    (2, nc, 3), ``(distance, mu)`` (2, nc), ``(body_a, body_b, shape_a, shape_b, ids,
    origin)`` (6, nc), the pairs ``(nc, 4)``, then the fallback flag of
    :func:`step_contacts`, ``next_id`` and whether the pairs' keys were too wide for one
    integer (the caller then identifies them itself)."""
    sa, sb, pl, point, normal, dist, fallback = step_contacts(
        E, s_node, s_kind, s_pose, s_size, s_hull, s_radius, s_planes,
        hull_v, hull_vs, hull_fn, hull_fs, hull_fv, hull_fvs, hull_ns, hull_nb, max_face,
        pl_n, pl_off, margin, plane_points, near_a, near_b, box_c, box_h,
        sep_dir, sep_loc, sep_val, plane_keep,
    )  # fmt: skip
    nc = sa.shape[0]
    PN = np.empty((2, nc, 3))
    PN[0] = point
    PN[1] = normal
    DM = np.empty((2, nc))
    DM[0] = dist
    mu = DM[1]
    columns = np.empty((6, nc), dtype=np.int64)
    body_a, body_b, shape_a, shape_b = columns[0], columns[1], columns[2], columns[3]
    pair = np.empty((nc, 4), dtype=np.int64)
    for k in range(nc):
        a = sa[k]
        body_a[k] = t_body[a]
        shape_a[k] = t_local[a]
        b = sb[k]
        if b >= 0:
            body_b[k] = t_body[b]
            shape_b[k] = t_local[b]
            mu[k] = mu_table[t_material[a], t_material[b]]
        else:
            body_b[k] = -1
            shape_b[k] = plane_local[pl[k]]
            mu[k] = mu_table[t_material[a], plane_material[pl[k]]]
        pair[k, 0], pair[k, 1] = body_a[k], body_b[k]
        pair[k, 2], pair[k, 3] = shape_a[k], shape_b[k]
    wide = False
    next_id = start
    ids, origin = columns[4], columns[5]
    origin[:] = -1
    if old_ids.shape[0] == 0 or nc == 0:
        for k in range(nc):
            ids[k] = start + k
        next_id = start + nc
    else:
        found = _identify(old_pair, old_point, old_ids, pair, point, start, radius2)
        if found is None:
            wide = True
            ids[:] = start
        else:
            found_ids, found_origin, next_id = found
            ids[:] = found_ids
            origin[:] = found_origin
    return PN, DM, columns, pair, fallback, next_id, wide


# ----------------------------------------------------------------------------
# the step
# ----------------------------------------------------------------------------
@njit(cache=True)
def _jacobian(parent, X, Sb, ndof, dof0, support, n_support, nq):  # noqa: ANN001, ANN202
    """``J_mr`` (6 n, nq), rows in tree order, filled on each node's support only (the
    coordinates of its ancestors and its own): ``J_i = X_i J_p + Sb_i`` (Alg. 1)."""
    n = parent.shape[0]
    J = np.zeros((6 * n, nq))
    for i in range(n):
        p = parent[i]
        r0 = 6 * i
        if p >= 0:
            for u in range(n_support[p]):
                c = support[p, u]
                for r in range(6):
                    acc = 0.0
                    for k in range(6):
                        acc += X[i, r, k] * J[6 * p + k, c]
                    J[r0 + r, c] = acc
        for c in range(ndof[i]):
            for r in range(6):
                J[r0 + r, dof0[i] + c] = Sb[i, r, c]
    return J


@njit(cache=True)
def _bias(parent, X, Sb, Sbd, ndof, dof0, qdot):  # noqa: ANN001, ANN202
    """``Jdot qdot`` (n, 6), the second output of :func:`_kernels.jacobian_products` at
    ``x = qdot``, with the same operations in the same order, without a temporary per
    node: ``y_i = Sb_i qdot + X_i y_p``,
    ``z_i = Sbd_i qdot + (X_i z_p - ad(Sb_i qdot) X_i y_p)``."""
    n = parent.shape[0]
    y = np.zeros((n, 6))
    z = np.zeros((n, 6))
    s = np.empty(6)
    xy = np.empty(6)
    xz = np.empty(6)
    for i in range(n):
        for r in range(6):
            a = 0.0
            b = 0.0
            for c in range(ndof[i]):
                a += Sb[i, r, c] * qdot[dof0[i] + c]
                b += Sbd[i, r, c] * qdot[dof0[i] + c]
            s[r] = a
            y[i, r] = a
            z[i, r] = b
        p = parent[i]
        if p >= 0:
            for r in range(6):
                a = 0.0
                b = 0.0
                for c in range(6):
                    a += X[i, r, c] * y[p, c]
                    b += X[i, r, c] * z[p, c]
                xy[r] = a
                xz[r] = b
            # ad(s) xy = (w x xy_w, n x xy_w + w x xy_n), s = (w, n)
            a0 = s[1] * xy[2] - s[2] * xy[1]
            a1 = s[2] * xy[0] - s[0] * xy[2]
            a2 = s[0] * xy[1] - s[1] * xy[0]
            b0 = s[4] * xy[2] - s[5] * xy[1]
            b1 = s[5] * xy[0] - s[3] * xy[2]
            b2 = s[3] * xy[1] - s[4] * xy[0]
            c0 = s[1] * xy[5] - s[2] * xy[4]
            c1 = s[2] * xy[3] - s[0] * xy[5]
            c2 = s[0] * xy[4] - s[1] * xy[3]
            z[i, 0] += xz[0] - a0
            z[i, 1] += xz[1] - a1
            z[i, 2] += xz[2] - a2
            z[i, 3] += xz[3] - (b0 + c0)
            z[i, 4] += xz[4] - (b1 + c1)
            z[i, 5] += xz[5] - (b2 + c2)
            for r in range(6):
                y[i, r] += xy[r]
    return z


@njit(cache=True)
def _dof_parents(parent, ndof, dof0, nq):  # noqa: ANN001, ANN202
    """Each coordinate's parent in the tree of coordinates: the one before it on its
    joint, else the last of the nearest ancestor joint that has coordinates (-1 at the
    root).  ``M_ij`` is zero unless one of ``i``, ``j`` is an ancestor of the other.
    A numbering in which a parent does not come first gives the chain ``k - 1`` (every
    coordinate an ancestor of the later ones: a dense factor)."""
    lam = np.empty(nq, dtype=np.int64)
    ok = True
    for i in range(parent.shape[0]):
        p = parent[i]
        while p >= 0 and ndof[p] == 0:
            p = parent[p]
        last = dof0[p] + ndof[p] - 1 if p >= 0 else -1
        for c in range(ndof[i]):
            k = dof0[i] + c
            lam[k] = last if c == 0 else k - 1
            ok = ok and lam[k] < k
    if not ok:
        for k in range(nq):
            lam[k] = k - 1
    return lam


@njit(cache=True)
def _ltl(A, lam):  # noqa: ANN001, ANN202
    """``A = L^T L`` in place (Featherstone's LTL factor, *Rigid Body Dynamics
    Algorithms* 6.5): ``L`` lower triangular, ``L_ki`` non-zero only for ``i`` an
    ancestor of ``k`` in the coordinates' tree ``lam`` (:func:`_dof_parents`), so the
    factor has no fill-in and the solves touch the ancestors only.  ``A`` (symmetric)
    holds ``L`` in its lower triangle on return; ``False`` when ``A`` is not positive
    definite."""
    n = A.shape[0]
    for k in range(n - 1, -1, -1):
        if not A[k, k] > 0.0:
            return False
        d = np.sqrt(A[k, k])
        A[k, k] = d
        i = lam[k]
        while i >= 0:
            A[k, i] /= d
            i = lam[i]
        i = lam[k]
        while i >= 0:
            a = A[k, i]
            j = i
            while j >= 0:
                A[i, j] -= a * A[k, j]
                j = lam[j]
            i = lam[i]
    return True


@njit(cache=True)
def _ltl_solve(L, lam, x):  # noqa: ANN001, ANN202
    """``x = (L^T L)^-1 x`` in place: ``L^T y = x`` from the leaves up, then ``L x = y``
    from the root down, each over the ancestors."""
    n = L.shape[0]
    for k in range(n - 1, -1, -1):
        x[k] /= L[k, k]
        i = lam[k]
        while i >= 0:
            x[i] -= L[k, i] * x[k]
            i = lam[i]
    for k in range(n):
        i = lam[k]
        while i >= 0:
            x[k] -= L[k, i] * x[i]
            i = lam[i]
        x[k] /= L[k, k]


@njit(cache=True)
def _wrench_row(E, k, point, d, sign, row6):  # noqa: ANN001, ANN202
    """``sign [x x m, m]`` of direction ``d`` at ``point`` in body ``k``'s frame."""
    r0, r1, r2 = point[0] - E[k, 0, 3], point[1] - E[k, 1, 3], point[2] - E[k, 2, 3]
    x0 = E[k, 0, 0] * r0 + E[k, 1, 0] * r1 + E[k, 2, 0] * r2
    x1 = E[k, 0, 1] * r0 + E[k, 1, 1] * r1 + E[k, 2, 1] * r2
    x2 = E[k, 0, 2] * r0 + E[k, 1, 2] * r1 + E[k, 2, 2] * r2
    m0 = d[0] * E[k, 0, 0] + d[1] * E[k, 1, 0] + d[2] * E[k, 2, 0]
    m1 = d[0] * E[k, 0, 1] + d[1] * E[k, 1, 1] + d[2] * E[k, 2, 1]
    m2 = d[0] * E[k, 0, 2] + d[1] * E[k, 1, 2] + d[2] * E[k, 2, 2]
    row6[0] = sign * (x1 * m2 - x2 * m1)
    row6[1] = sign * (x2 * m0 - x0 * m2)
    row6[2] = sign * (x0 * m1 - x1 * m0)
    row6[3] = sign * m0
    row6[4] = sign * m1
    row6[5] = sign * m2


@njit(cache=True, fastmath={"reassoc", "contract"})
def _row_dot(C, r, v):  # noqa: ANN001, ANN202
    """``C_r . v``, its terms summed in the order the vector units take (reassociated:
    the same sum to rounding, without a chain of dependent additions)."""
    acc = 0.0
    for a in range(v.shape[0]):
        acc += C[r, a] * v[a]
    return acc


@njit(cache=True)
def _bounds(a, z, owner, mu_row, lo, hi):  # noqa: ANN001, ANN202
    """The bounds of row ``a`` at impulses ``z``: a friction row's ``+-mu z_n`` of its
    contact's normal impulse, else its fixed ``lo``, ``hi``."""
    if owner[a] >= 0:
        hb = mu_row[a] * max(z[owner[a]], 0.0)
        return -hb, hb
    return lo[a], hi[a]


@njit(cache=True)
def _natural(C, b, v, z, owner, mu_row, lo, hi, order):  # noqa: ANN001, ANN202
    """``max |z - Pi(z - w)|`` with ``w = C v - b``
    (:func:`solvers.backends.pgs_kernel.natural_residual`)."""
    worst = 0.0
    for j in range(order.shape[0]):
        a = order[j]
        w = _row_dot(C, a, v) - b[a]
        la, hb = _bounds(a, z, owner, mu_row, lo, hi)
        worst = max(worst, abs(z[a] - min(max(z[a] - w, la), hb)))
    return worst


@njit(cache=True)
def _project_row(a, w, z, diag, owner, mu_row, lo, hi, omega):  # noqa: ANN001, ANN202
    """One projected Gauss--Seidel update of row ``a`` with ``w = W_a z + q_a``: ``z_a``
    moved in place, its pre-update natural residual and the change of ``z_a``."""
    la, hb = _bounds(a, z, owner, mu_row, lo, hi)
    residual = abs(z[a] - min(max(z[a] - w, la), hb))
    za = min(max(z[a] - omega * w / diag[a], la), hb)
    dz = za - z[a]
    z[a] = za
    return residual, dz


@njit(cache=True)
def _sweeps(C, Kr, W, q_w, diag, b, v, z, owner, mu_row, lo, hi, order, omega, sweeps):  # noqa: ANN001, ANN202, PLR0913
    """Projected Gauss--Seidel sweeps over the rows in ``order``
    (:func:`solvers.backends.pgs_kernel.pgs_sweeps`, one row per unit); the largest
    pre-update residual of the last sweep.  With the Delassus matrix ``W = C M^-1 C^T``
    (``W`` not empty) a row's ``w = W_r z + q_w_r``, ``q_w = C u_free - b``: fewer
    operations per row when the rows are fewer than the coordinates they move; without it
    ``w`` is read as ``C_r v - b_r`` and ``v`` moved by ``K_r dz`` after each update."""
    nq = v.shape[0]
    delassus = W.shape[0] > 0
    worst = 0.0
    for _ in range(sweeps):
        worst = 0.0
        for j in range(order.shape[0]):
            a = order[j]
            if owner[a] >= 0 and mu_row[a] * z[owner[a]] <= 0.0:
                worst = max(worst, abs(z[a]))
                dz = -z[a]
                z[a] = 0.0
            else:
                if delassus:
                    w = q_w[a] + _row_dot(W, a, z)
                else:
                    w = _row_dot(C, a, v) - b[a]
                residual, dz = _project_row(a, w, z, diag, owner, mu_row, lo, hi, omega)
                worst = max(worst, residual)
            if dz != 0.0 and not delassus:
                for k in range(nq):
                    v[k] += Kr[a, k] * dz
    return worst


@njit(cache=True)
def _sweeps_delassus(W, q_w, w, step, z, owner, mu_row, lo, hi, order, sweeps):  # noqa: ANN001, ANN202, PLR0913
    """:func:`_sweeps` on the Delassus matrix ``W`` with ``w = W z + q_w`` kept up to date:
    formed afresh from the impulses at the start, then moved by ``W_a dz`` (``W``
    symmetric: row ``a`` is column ``a``) after each update of ``z_a``, so that a row reads
    its ``w_a`` instead of summing ``W_a . z`` (the same values to rounding; the caller
    judges convergence by the natural residual at velocities formed afresh).  ``step``
    holds ``omega / W_aa`` per row, so that an update multiplies where it divided (the same
    update to rounding, a division less on the chain of dependent rows); a friction row's
    bound is read once, and the residuals are taken in the last sweep only (the one
    returned)."""
    m = z.shape[0]
    for a in range(m):
        w[a] = q_w[a] + _row_dot(W, a, z)
    worst = 0.0
    for s in range(sweeps):
        last = s == sweeps - 1
        for j in range(order.shape[0]):
            a = order[j]
            za = z[a]
            o = owner[a]
            if o >= 0:
                hb = mu_row[a] * z[o]
                if hb <= 0.0:
                    if last:
                        worst = max(worst, abs(za))
                    dz = -za
                    z[a] = 0.0
                    if dz != 0.0:
                        for k in range(m):
                            w[k] += W[a, k] * dz
                    continue
                la = -hb
            else:
                la, hb = lo[a], hi[a]
            wa = w[a]
            if last:
                worst = max(worst, abs(za - min(max(za - wa, la), hb)))
            zn = min(max(za - step[a] * wa, la), hb)
            dz = zn - za
            z[a] = zn
            if dz != 0.0:
                for k in range(m):
                    w[k] += W[a, k] * dz
    return worst


@njit(cache=True)
def _velocity(u_free, Kr, z, v):  # noqa: ANN001, ANN202
    """``v = u_free + K z`` (``K`` by rows ``Kr``), afresh from the impulses."""
    v[:] = u_free
    for r in range(z.shape[0]):
        if z[r] != 0.0:
            for a in range(v.shape[0]):
                v[a] += Kr[r, a] * z[r]


@njit(cache=True)
def _mass_momentum(J, bias, E, V, inertia, support, n_support, gravity, h, nq):  # noqa: ANN001, ANN202
    """The bodies' terms of ``M_r`` (its upper triangle, ``sum_i J_i^T diag(m_i) J_i``
    over each node's support) and of the free momentum (``J_i^T`` of the node's momentum
    rotated over the step, gravity's impulse less the inertia times the bias acceleration
    ``bias``, :meth:`ReducedFormulation.assemble`), at the Jacobian ``J``
    (:func:`_jacobian`), transforms ``E`` and twists ``V``."""
    n = n_support.shape[0]
    M = np.zeros((nq, nq))
    f = np.zeros(nq)
    p = np.empty(6)
    acc = np.empty(6)
    Rt = np.empty((3, 3))
    mw = np.empty(3)
    most = 0
    for i in range(n):
        most = max(most, n_support[i])
    Jc = np.empty((6, most))
    mrow = np.empty(most)
    for i in range(n):
        r0 = 6 * i
        ns = n_support[i]
        # the node's Jacobian on its support, gathered; its term J_i^T diag(m_i) J_i of
        # M by pairs of support coordinates, each entry summed over the six rows at once
        for r in range(6):
            for u in range(ns):
                Jc[r, u] = J[r0 + r, support[i, u]]
        for u in range(ns):
            cu = support[i, u]
            m_i = inertia[i]
            x0, x1, x2 = m_i[0] * Jc[0, u], m_i[1] * Jc[1, u], m_i[2] * Jc[2, u]
            x3, x4, x5 = m_i[3] * Jc[3, u], m_i[4] * Jc[4, u], m_i[5] * Jc[5, u]
            for v in range(u, ns):
                mrow[v] = (
                    x0 * Jc[0, v] + x1 * Jc[1, v] + x2 * Jc[2, v]
                    + x3 * Jc[3, v] + x4 * Jc[4, v] + x5 * Jc[5, v]
                )  # fmt: skip
            for v in range(u, ns):
                M[cu, support[i, v]] += mrow[v]
        # bias acceleration Jdot qdot of the node
        for r in range(6):
            acc[r] = bias[i, r]
        w0, w1, w2 = V[i, 0], V[i, 1], V[i, 2]
        Iw0, Iw1, Iw2 = inertia[i, 0] * w0, inertia[i, 1] * w1, inertia[i, 2] * w2
        # angular: I w - h w x I w; linear: exp(-h [w]) m v
        p[0] = Iw0 - h * (w1 * Iw2 - w2 * Iw1)
        p[1] = Iw1 - h * (w2 * Iw0 - w0 * Iw2)
        p[2] = Iw2 - h * (w0 * Iw1 - w1 * Iw0)
        mw[0], mw[1], mw[2] = -h * w0, -h * w1, -h * w2
        _exp_so3(mw, Rt)
        for a in range(3):
            p[3 + a] = 0.0
            for b in range(3):
                p[3 + a] += Rt[a, b] * inertia[i, 3 + b] * V[i, 3 + b]
        # gravity (0, R^T m g) minus the inertia times the bias acceleration
        for a in range(3):
            g = 0.0
            for b in range(3):
                g += E[i, b, a] * gravity[b]
            p[3 + a] += h * (inertia[i, 3 + a] * g - inertia[i, 3 + a] * acc[3 + a])
            p[a] -= h * inertia[i, a] * acc[a]
        for u in range(ns):
            s = 0.0
            for r in range(6):
                s += Jc[r, u] * p[r]
            f[support[i, u]] += s
    return M, f


@njit(cache=True)
def _kept_kinematics(kin, q, qdot):  # noqa: ANN001, ANN202
    """Whether ``kin = (E, X, Sb, Sbd, V, q, qdot, valid)`` holds the kinematics at these
    ``q`` and ``qdot`` (the new state of the previous step, :func:`full_step`)."""
    q_k, qdot_k, valid = kin[5], kin[6], kin[7]
    if valid[0] != 1 or q_k.shape[0] != q.shape[0]:
        return False
    for a in range(q.shape[0]):
        if q_k[a] != q[a] or qdot_k[a] != qdot[a]:
            return False
    return True


@njit(cache=True)
def _keep_kinematics(kin, E, X, Sb, Sbd, V, q, qdot):  # noqa: ANN001, ANN202
    """Store the kinematics at ``(q, qdot)`` in ``kin`` (:func:`_kept_kinematics`)."""
    E_k, X_k, Sb_k, Sbd_k, V_k, q_k, qdot_k, valid = kin
    valid[0] = 0
    if q_k.shape[0] != q.shape[0] or E_k.shape[0] != E.shape[0]:
        return
    E_k[:] = E
    X_k[:] = X
    Sb_k[:] = Sb
    Sbd_k[:] = Sbd
    V_k[:] = V
    q_k[:] = q
    qdot_k[:] = qdot
    valid[0] = 1


@njit(cache=True)
def _system(  # noqa: ANN201, PLR0913
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau, kin,
):  # fmt: skip
    """The node transforms ``E``, the Jacobian ``J_mr`` and ``M = M_r + h D - h^2 K`` (full,
    symmetric) with the free momentum ``f`` of :meth:`ReducedFormulation.assemble`
    (``coriolis="rotated_linear"``, joint springs and dampers implicit, the applied joint
    forces ``tau``); the kinematics from ``kin`` when it holds those at ``(q, qdot)``
    (:func:`_kept_kinematics`)."""
    n = kind.shape[0]
    nq = q.shape[0]
    if _kept_kinematics(kin, q, qdot) and kin[0].shape[0] == n:
        E, X, Sb, Sbd, V = kin[0], kin[1], kin[2], kin[3], kin[4]
    else:
        E, X, Sb, Sbd, V = _tree_kinematics(kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, qdot)
    J = _jacobian(parent, X, Sb, ndof, dof0, support, n_support, nq)
    bias = _bias(parent, X, Sb, Sbd, ndof, dof0, qdot)
    M, f = _mass_momentum(J, bias, E, V, inertia, support, n_support, gravity, h, nq)
    for a in range(nq):
        f[a] += h * tau[a]
        f[a] += armature[a] * qdot[a] + h * (
            -stiffness[a] * (q[a] - rest[a]) - damping[a] * qdot[a]
        )
        f[a] += h * (damping[a] * qdot[a])
        M[a, a] += armature[a] + h * damping[a] + h * h * stiffness[a]
        for b in range(a + 1, nq):
            M[b, a] = M[a, b]
    return E, J, M, f


@njit(cache=True)
def _contact_rows(  # noqa: ANN201, PLR0913
    E, J, support, n_support, q, h, c_node_a, c_node_b, point, normal, dist, beta, max_corr,
    lim_dof, lim_sign, lim_bound, t1, t2,
):  # fmt: skip
    """The rows ``C = [N; T; L]`` (m, nq) and their right-hand side ``b``: contact ``k``'s
    normal row ``k`` and tangent rows ``nc + 2k``, ``nc + 2k + 1`` (directions ``normal``,
    ``t1``, ``t2`` at ``point``, nodes ``c_node_a`` / ``c_node_b``, -1 the world), then the
    limit rows ``lim_sign e_dof . qdot+ >= lim_sign (lim_bound - q_dof) / h``."""
    nq = q.shape[0]
    nc = dist.shape[0]
    ml = lim_dof.shape[0]
    m = 3 * nc + ml
    C = np.zeros((m, nq))
    dvec = np.empty(3)
    row6 = np.empty(6)
    for k in range(nc):
        for side in range(2):
            node = c_node_a[k] if side == 0 else c_node_b[k]
            if node < 0:
                continue
            sign = 1.0 if side == 0 else -1.0
            r0 = 6 * node
            for dd in range(3):
                for i in range(3):
                    dvec[i] = normal[k, i] if dd == 0 else (t1[k, i] if dd == 1 else t2[k, i])
                _wrench_row(E, node, point[k], dvec, sign, row6)
                row = k if dd == 0 else nc + 2 * k + dd - 1
                for u in range(n_support[node]):
                    cu = support[node, u]
                    s = 0.0
                    for r in range(6):
                        s += row6[r] * J[r0 + r, cu]
                    C[row, cu] += s
    b = np.zeros(m)
    for k in range(nc):
        d = dist[k]
        b[k] = -d / h if d > 0.0 else min(beta * (-d), max_corr)
    for j in range(ml):
        r = 3 * nc + j
        C[r, lim_dof[j]] = lim_sign[j]
        b[r] = lim_sign[j] * (lim_bound[j] - q[lim_dof[j]]) / h
    return C, b


@njit(cache=True)
def _inverse_rows(L, lam, C):  # noqa: ANN001, ANN202
    """``K^T = M^-1 C^T`` (nq, m) by the factor ``M = L^T L`` (:func:`_ltl`) and the
    diagonal of ``W = C M^-1 C^T`` (``|Y_r|^2``), all rows at once, coordinate by
    coordinate: the inner loops run along the rows (contiguous), each row summed in the
    order of a triangular solve of its own (``L^T Y = C^T`` from the leaves up, then
    ``L K^T = Y`` from the root down, each coordinate updated from its ancestors only)."""
    nq = L.shape[0]
    m = C.shape[0]
    Kt = np.ascontiguousarray(C.T)
    diag = np.zeros(m)
    for k in range(nq - 1, -1, -1):
        d = L[k, k]
        for r in range(m):
            Kt[k, r] /= d
            diag[r] += Kt[k, r] * Kt[k, r]
        i = lam[k]
        while i >= 0:
            lki = L[k, i]
            for r in range(m):
                Kt[i, r] -= lki * Kt[k, r]
            i = lam[i]
    for k in range(nq):
        i = lam[k]
        while i >= 0:
            lki = L[k, i]
            for r in range(m):
                Kt[k, r] -= lki * Kt[i, r]
            i = lam[i]
        d = L[k, k]
        for r in range(m):
            Kt[k, r] /= d
    return Kt, diag


@njit(cache=True)
def contact_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    c_node_a, c_node_b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_order, old_normal, old_friction, ids, origin,
    lim_dof, lim_sign, lim_bound, old_limit,
    tol, max_iter, omega, check_every, kin,
):  # fmt: skip
    """One step (module docstring).  Nodes in tree order; contacts on nodes ``c_node_a``
    and ``c_node_b`` (-1 for the world), normals from B toward A.  ``tau`` (nq,) the
    applied joint forces of the step; the limit rows ``lim_sign e_dof . qdot+ >=
    lim_sign (lim_bound - q_dof) / h`` (:class:`~contactlab.reduced.constraints.JointLimit`:
    sign +1 a lower bound, -1 an upper one) follow the contact rows, warm-started from
    ``old_limit`` when it has as many rows.  ``kin`` the kinematics of the previous step's new state
    (:func:`_kept_kinematics`), used when they are at ``(q, qdot)``.

    Returns ``q+``, ``qdot+``, the step's velocity ``v`` (``qdot+`` but for the free
    joints' coordinate rates, re-mapped to their new chart), the impulses ``z`` on the
    rows ``[N; T]``, the friction impulses as world vectors, ``N v - c`` and ``T v`` at
    the new velocities, the status code, the sweeps, the three LCP residuals (primal, dual,
    complementarity) and the natural-map residual.
    """
    nq = q.shape[0]
    E, J, M, f = _system(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau, kin,
    )  # fmt: skip
    lam = _dof_parents(parent, ndof, dof0, nq)
    L = M.copy()
    nc = dist.shape[0]
    ml = lim_dof.shape[0]
    m = 3 * nc + ml
    z = np.zeros(m)
    friction = np.zeros((nc, 3))
    gap = np.zeros(nc)
    slip = np.zeros(2 * nc)
    res = np.zeros(4)
    if not _ltl(L, lam):
        return q, qdot, qdot, z, friction, gap, slip, NOT_SPD, 0, res
    u_free = f.copy()
    _ltl_solve(L, lam, u_free)
    # -- contact rows C = [N; T] (nc + 2 nc, nq) and right-hand side ---------------------
    t1, t2 = _tangent_basis(normal)
    C, b = _contact_rows(
        E, J, support, n_support, q, h, c_node_a, c_node_b, point, normal, dist, beta,
        max_corr, lim_dof, lim_sign, lim_bound, t1, t2,
    )  # fmt: skip
    # -- K = M^-1 C^T by the factor: a row of W z is C_r v with v = M^-1 (f + C^T z) kept
    # up to date (the same LCP, w = W z + q = C v - b); W = C K is formed only when its
    # rows are shorter than those of C and K together (few rows, many coordinates)
    # all rows at once, coordinate by coordinate: the inner loops run along the rows
    # (contiguous), each row summed in the order of a triangular solve of its own
    # (M = L^T L, :func:`_ltl`: L^T Y = C^T from the leaves up, diag W = |Y_r|^2, then
    # L K = Y from the root down, each coordinate updated from its ancestors only)
    Kt, diag = _inverse_rows(L, lam, C)
    Kr = np.ascontiguousarray(Kt.T)
    # -- rows in height order: per contact its normal and tangent rows, lowest first ----
    up = np.argsort(point[:, 2], kind="mergesort")
    order = np.empty(m, dtype=np.int64)
    for j in range(nc):
        k = up[j]
        order[3 * j] = k
        order[3 * j + 1] = nc + 2 * k
        order[3 * j + 2] = nc + 2 * k + 1
    for r in range(3 * nc, m):
        order[r] = r
    lo = np.empty(m)
    hi = np.empty(m)
    owner = np.full(m, -1, dtype=np.int64)
    mu_row = np.zeros(m)
    for k in range(nc):
        lo[k], hi[k] = 0.0, np.inf
        for t in range(2):
            r = nc + 2 * k + t
            lo[r], hi[r] = -np.inf, np.inf
            owner[r] = k
            mu_row[r] = mu[k]
    for r in range(3 * nc, m):
        lo[r], hi[r] = 0.0, np.inf
    dmax = 0.0
    for r in range(m):
        dmax = max(dmax, diag[r])
    for r in range(m):
        if diag[r] <= 1e-24 * dmax:  # a decoupled row: the general solver's closed form
            return q, qdot, qdot, z, friction, gap, slip, DECOUPLED, 0, res
    # -- warm start carried over from the recorded contacts ------------------------------
    if carry:
        zn, zt = carried_impulses(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2)
        for k in range(nc):
            z[k] = zn[k]
            z[nc + 2 * k] = zt[2 * k]
            z[nc + 2 * k + 1] = zt[2 * k + 1]
    if old_limit.shape[0] == ml:
        for j in range(ml):
            z[3 * nc + j] = old_limit[j]
    for r in range(m):
        z[r] = min(max(z[r], lo[r]), hi[r])
    v = np.empty(nq)
    _velocity(u_free, Kr, z, v)
    # -- projected Gauss--Seidel (solvers.backends.pgs.PGSBackend.solve_lcp) ------------
    status = MAX_ITERATIONS
    sweeps = 0
    residual = _natural(C, b, v, z, owner, mu_row, lo, hi, order)
    # sweeps on W = C K^T when a row of W is shorter than a row of C and K together
    delassus = m < 2 * nq
    if delassus and residual > tol:
        W = np.empty((m, m))
        q_w = np.empty(m)
        for a in range(m):
            q_w[a] = _row_dot(C, a, u_free) - b[a]
            for r in range(a, m):  # W is symmetric: the upper triangle, mirrored
                w_ar = _row_dot(C, a, Kr[r])
                W[a, r] = w_ar
                W[r, a] = w_ar
    else:
        W = np.empty((0, 0))
        q_w = np.empty(0)
    w_run = np.empty(q_w.shape[0])
    step = np.empty(q_w.shape[0])
    for a in range(q_w.shape[0]):
        step[a] = omega / diag[a]
    if residual <= tol:
        status = OPTIMAL
    else:
        while True:
            if sweeps >= max_iter:
                status = MAX_ITERATIONS
                break
            chunk = min(check_every, max_iter - sweeps)
            if delassus:
                estimate = _sweeps_delassus(
                    W, q_w, w_run, step, z, owner, mu_row, lo, hi, order, chunk
                )
            else:
                estimate = _sweeps(
                    C, Kr, W, q_w, diag, b, v, z, owner, mu_row, lo, hi, order, omega, chunk
                )
            sweeps += chunk
            if estimate <= 10.0 * tol or sweeps >= max_iter or not np.isfinite(estimate):
                # the velocity afresh from the impulses (no drift of the running updates)
                _velocity(u_free, Kr, z, v)
                residual = _natural(C, b, v, z, owner, mu_row, lo, hi, order)
            if not np.isfinite(residual):
                status = NUMERICAL_ERROR
                break
            if residual <= tol:
                status = OPTIMAL
                break
    # -- residuals of the LCP (solvers.residuals.lcp_residuals) -------------------------
    _velocity(u_free, Kr, z, v)
    primal = dual = comp = 0.0
    for r in range(m):
        w = -b[r]
        for a in range(nq):
            w += C[r, a] * v[a]
        la, hb = _bounds(r, z, owner, mu_row, lo, hi)
        primal = max(primal, la - z[r], z[r] - hb)
        wp_, wm_ = max(w, 0.0), max(-w, 0.0)
        if la == -np.inf:
            dual = max(dual, wp_)
        if hb == np.inf:
            dual = max(dual, wm_)
        comp = max(comp, min(abs(z[r] - la), wp_), min(abs(hb - z[r]), wm_))
        if r < nc:
            gap[r] = w
        elif r < 3 * nc:
            slip[r - nc] = w
    res[0], res[1], res[2], res[3] = primal, dual, comp, residual
    friction = friction_vectors(z[nc:].copy(), t1, t2)
    q_new, v_new = advance(kind, q, v, h)
    return q_new, v_new, v, z, friction, gap, slip, status, sweeps, res


@njit(cache=True)
def advance(kind, q, qdot, h):  # noqa: ANN001, ANN201
    """:meth:`Tree.advance`: ``q + h qdot`` on revolute and prismatic joints; a free joint
    moves by ``Q exp(h [S qdot])``, re-charted, keeping its joint twist, then switches its
    rotation chart past pi (:meth:`SphericalExpJoint.reparameterize`)."""
    q_new = q + h * qdot
    v_new = qdot.copy()
    dof = 0
    Q = np.empty((4, 4))
    S = np.empty((6, 6))
    Qn = np.empty((4, 4))
    ex = np.empty((4, 4))
    psi = np.empty(6)
    r = np.empty(3)
    guess = np.empty(3)
    Jr = np.empty((3, 3))
    for i in range(kind.shape[0]):
        k = kind[i]
        if k <= PRISMATIC:
            dof += 0 if k == FIXED else 1
            continue
        a = dof
        dof += 6
        _free_maps(k, a, q, Q, S)
        for x in range(6):
            psi[x] = 0.0
            for y in range(6):
                psi[x] += S[x, y] * qdot[a + y]
        for x in range(6):
            psi[x] *= h
        _exp_se3(psi, ex)
        for x in range(6):
            psi[x] /= h
        Qn[:] = Q @ ex
        ro = a + 3 if k == FREE_TF else a  # rotation coordinates
        to = a if k == FREE_TF else a + 3  # translation coordinates
        for x in range(3):
            guess[x] = q[ro + x] + h * qdot[ro + x]
        _chart(Qn[:3, :3], guess, r)
        for x in range(3):
            q_new[ro + x] = r[x]
        for x in range(3):
            if k == FREE_TF:
                q_new[to + x] = Qn[x, 3]
            else:
                q_new[to + x] = Qn[0, x] * Qn[0, 3] + Qn[1, x] * Qn[1, 3] + Qn[2, x] * Qn[2, 3]
        _free_maps(k, a, q_new, Q, S)
        v_new[a : a + 6] = np.linalg.solve(S, psi)
        # chart switch past pi (the translation coordinates keep their values)
        theta = np.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
        if theta > np.pi:
            _right_jacobian(r, Jr)
            om = Jr @ v_new[ro : ro + 3]
            r2 = r * (1.0 - 2.0 * np.pi / theta)
            _right_jacobian(r2, Jr)
            v_new[ro : ro + 3] = np.linalg.solve(Jr, om)
            q_new[ro : ro + 3] = r2
    return q_new, v_new


@njit(cache=True)
def _body_measures(E, V, inertia, gravity):  # noqa: ANN001, ANN202
    """The kinetic energy of the bodies at transforms ``E`` and twists ``V``, the gravity
    energy ``-sum m g . p`` and the world linear and angular momenta."""
    n = E.shape[0]
    kinetic = 0.0
    grav = 0.0
    mom = np.zeros(6)
    lin = np.empty(3)
    for i in range(n):
        for r in range(6):
            kinetic += 0.5 * inertia[i, r] * V[i, r] * V[i, r]
        for a in range(3):
            grav -= inertia[i, 3] * E[i, a, 3] * gravity[a]
        for a in range(3):
            s = 0.0
            t = 0.0
            for b in range(3):
                s += E[i, a, b] * V[i, 3 + b]
                t += E[i, a, b] * inertia[i, b] * V[i, b]
            lin[a] = inertia[i, 3] * s
            mom[a] += lin[a]
            mom[3 + a] += t
        px, py, pz = E[i, 0, 3], E[i, 1, 3], E[i, 2, 3]
        mom[3] += py * lin[2] - pz * lin[1]
        mom[4] += pz * lin[0] - px * lin[2]
        mom[5] += px * lin[1] - py * lin[0]
    return kinetic, grav, mom


#: entries of the ``info`` array of :func:`full_step`
(
    I_STATUS, I_SWEEPS, I_PRIMAL, I_DUAL, I_COMP, I_NATURAL, I_KINETIC, I_GRAVITY, I_SPRING,
    I_MOMENTUM, I_NORMAL_COMP, I_NORMAL_FEAS, I_CONE, I_DISSIPATION, I_SLIDING,
    I_PENETRATION, I_FINITE, I_LIMIT,
) = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 20, 21, 22)  # fmt: skip
N_INFO = 23


@njit(cache=True)
def _state_measures(  # noqa: ANN201, PLR0913
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, qdot, inertia, gravity,
    body_of_node, E_s, phi_s, armature, stiffness, rest, info,
):  # fmt: skip
    """The kinematics of the state ``(q, qdot)``: its bodies' transforms and twists into
    ``E_s``, ``phi_s`` (scene order), its kinetic (armature included), gravity and spring
    energies, world momenta and finiteness into ``info`` (entries ``I_*``).  Returns the
    kinematics ``E, X, Sb, Sbd, V`` (tree order)."""
    E, X, Sb, Sbd, V = _tree_kinematics(kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, qdot)
    kinetic, grav, mom = _body_measures(E, V, inertia, gravity)
    finite = True
    for i in range(kind.shape[0]):
        E_s[body_of_node[i]] = E[i]
        phi_s[body_of_node[i]] = V[i]
        for r in range(6):
            finite = finite and np.isfinite(V[i, r])
        for r in range(3):
            for c in range(4):
                finite = finite and np.isfinite(E[i, r, c])
    spring = 0.0
    for a in range(q.shape[0]):
        kinetic += 0.5 * armature[a] * qdot[a] * qdot[a]
        spring += 0.5 * stiffness[a] * (q[a] - rest[a]) * (q[a] - rest[a])
        finite = finite and np.isfinite(q[a]) and np.isfinite(qdot[a])
    info[I_KINETIC], info[I_GRAVITY], info[I_SPRING] = kinetic, grav, spring
    for r in range(6):
        info[I_MOMENTUM + r] = mom[r]
    info[I_FINITE] = 1.0 if finite else 0.0
    return E, X, Sb, Sbd, V


@njit(cache=True)
def _contact_metrics(  # noqa: ANN201, PLR0913
    dist, gap, slip, z, mu, slip_threshold, q_new, lim_dof, lim_sign, lim_bound, info,
):  # fmt: skip
    """The contact metrics of :func:`contactlab.metrics.contact_metrics` from the contacts'
    normal velocities ``gap`` and tangential velocities ``slip`` (two per contact) and
    the impulses ``z = [N; T; ...]``, the penetration, and the joint limits' violation at
    ``q_new`` (the constraint error), into ``info``."""
    nc = dist.shape[0]
    pen = 0.0
    for k in range(nc):
        pen = max(pen, -dist[k])
        lam = z[k]
        info[I_NORMAL_COMP] = max(info[I_NORMAL_COMP], abs(lam * gap[k]))
        info[I_NORMAL_FEAS] = max(info[I_NORMAL_FEAS], -gap[k])
        l0, l1 = z[nc + 2 * k], z[nc + 2 * k + 1]
        info[I_CONE] = max(info[I_CONE], np.sqrt(l0 * l0 + l1 * l1) - mu[k] * lam)
        s0, s1 = slip[2 * k], slip[2 * k + 1]
        speed = np.sqrt(s0 * s0 + s1 * s1)
        if speed > slip_threshold:
            info[I_SLIDING] += 1.0
            i0 = -(mu[k] * lam) * s0 / speed
            i1 = -(mu[k] * lam) * s1 / speed
            e = np.sqrt((l0 - i0) ** 2 + (l1 - i1) ** 2)
            info[I_DISSIPATION] = max(info[I_DISSIPATION], e)
    info[I_PENETRATION] = pen
    worst = 0.0
    for j in range(lim_dof.shape[0]):
        worst = max(worst, -lim_sign[j] * (q_new[lim_dof[j]] - lim_bound[j]))
    info[I_LIMIT] = worst


@njit(cache=True)
def step_end(  # noqa: ANN201, PLR0913
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, v, h, inertia, gravity,
    body_of_node, E_s, phi_s, armature, stiffness, rest, dist, b, C, z, mu,
    slip_threshold, lim_sign, lim_dof, lim_bound, t1, t2, info,
):  # fmt: skip
    """The end of a reduced contact step from its velocity ``v`` and impulses
    ``z = [N; T; L]`` (the exact-cone and Lemke steps alike): the position update, the new
    bodies' transforms and twists into ``E_s``, ``phi_s``, the energies, momenta and
    finiteness (:func:`_state_measures`), and the contact and limit metrics at ``v`` into
    ``info`` (:func:`contactlab.metrics.contact_metrics`'s).  Returns ``q_new``, ``v_new``
    and the friction impulses as vectors."""
    nq = q.shape[0]
    nc = dist.shape[0]
    q_new, v_new = advance(kind, q, v, h)
    _state_measures(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q_new, v_new, inertia, gravity,
        body_of_node, E_s, phi_s, armature, stiffness, rest, info,
    )  # fmt: skip
    # contact metrics at the step's velocity (contactlab.metrics.contact_metrics)
    gap = np.empty(nc)
    slip = np.empty(2 * nc)
    for k in range(nc):
        g = -b[k]
        s0 = 0.0
        s1 = 0.0
        for a in range(nq):
            g += C[k, a] * v[a]
            s0 += C[nc + 2 * k, a] * v[a]
            s1 += C[nc + 2 * k + 1, a] * v[a]
        gap[k], slip[2 * k], slip[2 * k + 1] = g, s0, s1
    _contact_metrics(
        dist, gap, slip, z, mu, slip_threshold, q_new, lim_dof, lim_sign, lim_bound, info
    )
    friction = friction_vectors(z[nc : 3 * nc].copy(), t1, t2)
    return q_new, v_new, friction


@njit(cache=True)
def contact_nodes(body_a, body_b, node_of_body):  # noqa: ANN001, ANN201
    """The tree nodes of the contacts' bodies ``body_a``, ``body_b`` (``-1``: the world)."""
    nc = body_a.shape[0]
    node_a = np.empty(nc, dtype=np.int64)
    node_b = np.empty(nc, dtype=np.int64)
    for k in range(nc):
        node_a[k] = node_of_body[body_a[k]] if body_a[k] >= 0 else -1
        node_b[k] = node_of_body[body_b[k]] if body_b[k] >= 0 else -1
    return node_a, node_b


@njit(cache=True)
def full_step(  # noqa: ANN201, PLR0913, PLR0915
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    node_of_body, body_of_node, body_a, body_b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_normal, old_friction, ids, origin,
    lim_dof, lim_sign, lim_bound, old_limit,
    tol, max_iter, omega, check_every, slip_threshold, kin,
):  # fmt: skip
    """:func:`contact_step` on contacts between scene bodies ``body_a``, ``body_b``, then
    the new state's body transforms and twists in scene order and the step's measurements
    (``info``, entries ``I_*``: solver status and sweeps, LCP residuals, energies, world
    momenta, the contact metrics of :func:`contactlab.metrics.contact_metrics`, the
    penetration and whether the new state is finite).  ``kin`` keeps the kinematics of the
    new state for the next step (:func:`_kept_kinematics`)."""
    node_a, node_b = contact_nodes(body_a, body_b, node_of_body)
    old_order = np.argsort(old_ids, kind="mergesort")
    q_new, v_new, v, z, friction, gap, slip, status, sweeps, res = contact_step(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
        node_a, node_b, point, normal, dist, mu, beta, max_corr,
        carry, old_ids, old_order, old_normal, old_friction, ids, origin,
        lim_dof, lim_sign, lim_bound, old_limit,
        tol, max_iter, omega, check_every, kin,
    )  # fmt: skip
    info = np.zeros(N_INFO)
    info[I_STATUS] = status
    nb = body_of_node.shape[0]
    E_s = np.zeros((nb, 4, 4))
    phi_s = np.zeros((nb, 6))
    if status == NOT_SPD or status == DECOUPLED:
        return q_new, v_new, v, E_s, phi_s, z, friction, info
    info[I_SWEEPS] = sweeps
    info[I_PRIMAL], info[I_DUAL], info[I_COMP], info[I_NATURAL] = res[0], res[1], res[2], res[3]
    E, X, Sb, Sbd, V = _state_measures(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q_new, v_new, inertia, gravity,
        body_of_node, E_s, phi_s, armature, stiffness, rest, info,
    )  # fmt: skip
    _keep_kinematics(kin, E, X, Sb, Sbd, V, q_new, v_new)
    _contact_metrics(
        dist, gap, slip, z, mu, slip_threshold, q_new, lim_dof, lim_sign, lim_bound, info
    )
    return q_new, v_new, v, E_s, phi_s, z, friction, info
