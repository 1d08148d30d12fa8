"""MuJoCo's soft convex contact constraints (MuJoCo documentation, "Computation").

Every active contact (signed distance ``r < margin``, MuJoCo's margin being
0) carries an impedance ``d(r)`` in ``(0, 1)`` and a reference acceleration,
both set by ``solref`` and ``solimp`` exactly as MuJoCo defines them:

- ``solimp = (dmin, dmax, width, midpoint, power)``: with ``x = |r| / width``
  clipped to ``[0, 1]``, ``y(x) = x^p / m^(p-1)`` for ``x <= m`` and
  ``1 - (1-x)^p / (1-m)^(p-1)`` above, ``d = dmin + y (dmax - dmin)``
  (constant ``(dmin + dmax)/2`` when ``dmin == dmax`` or ``width == 0``);
- ``solref = (timeconst, dampratio)`` (both > 0): ``k = 1/(dmax^2 tc^2 zeta^2)``,
  ``b = 2/(dmax tc)`` with ``tc = max(timeconst, 2 h)`` (MuJoCo's ``refsafe``);
  or ``(-stiffness, -damping)``: ``k = stiffness/dmax^2``, ``b = damping/dmax``;
- reference acceleration ``a_ref = -b (J v) - k d r`` on the normal row,
  ``-b (J v)`` on the friction rows of the exact cone;
- regularizer ``R = max(1e-15, (1-d)/d * A_ii)`` with MuJoCo's diagonal
  approximation ``A_ii`` of the inverse inertia seen by the row (``efc_diagApprox``,
  below); friction rows ``R_t = R_n / impratio``.

With impulses ``z = h f`` the acceleration-level problem of MuJoCo,
``min 1/2 f'(A + R) f + f'(J a_0 - a_ref)`` over the cone, becomes the cone
complementarity problem of the frictional-contact layer

.. math::

    K \\ni z \\perp (W + R) z + q - (J v + h\\, a_{ref}) \\in K^*,

``W = C M^{-1} C'`` and ``q = C M^{-1} f`` on the step's rows (joints and limits
stay hard rows).  ``R > 0`` makes it strictly convex: a unique impulse, solved
by every backend that fits ``fc_ccp_soc`` (``nsgs``, ``apgd``, ``admm``, ``ipm``, and
the SOC QP backends through the layer's conversion).  The step then advances
``v+ = M^{-1}(f + C' z)``, MuJoCo's Euler integrator.

Cones (MuJoCo's ``cone``): ``"elliptic"`` -- the exact cone
``||z_t|| <= mu z_n`` on the rows ``(n, t1, t2)``; ``"pyramidal"`` -- MuJoCo's
four edges ``J_n +- mu J_tk`` with non-negative edge impulses (the contact's
impulse ``z_n = sum f_e``, ``z_tk = mu (f_k+ - f_k-)``), every edge with the
common regularizer ``R_py = 2 mu_r^2 R_0``, ``mu_r = mu / sqrt(impratio)``,
``R_0 = (1-d)/d * (1 + mu^2) A_tran``, posed as unilateral scalar rows.

Diagonal approximation (``diag``): ``"mujoco"`` uses MuJoCo's body inverse
weights, ``A_tran = w_t(A) + w_t(B)`` for normal and friction rows, with
``w_t = tr(M_b^-1)_{lin} / 3`` and (rotational rows, unused at ``condim 3``)
``w_r = tr(M_b^-1)_{ang} / 3`` from each body's 6x6 mass block (``1/m`` and the
mean inverse principal inertia of a free body, as ``body_invweight0``);
it needs the maximal layout (each contact's rows on its bodies' twist columns).
``"exact"`` takes ``A_ii = W_ii``; ``"auto"`` (default) is ``"mujoco"`` when the
layout allows and ``"exact"`` otherwise (reduced coordinates).

Options
-------
solref : ``(timeconst, dampratio)`` or ``(-stiffness, -damping)``; default ``(0.02, 1)``.
solimp : ``(dmin, dmax, width, midpoint, power)``; default ``(0.9, 0.95, 0.001, 0.5, 2)``.
cone : ``"elliptic"`` (default) or ``"pyramidal"``.
impratio : ratio of the friction to the normal impedance (>= 1e-15, default 1).
margin : contacts with ``r >= margin`` [m] carry no force (default 0, MuJoCo's).
diag : ``"auto"``, ``"mujoco"`` or ``"exact"``.
torsion, rolling, spin_cone : MuJoCo's torsional and rolling friction (``condim`` 4 and 6,
    coefficients in metres; :mod:`contactlab.models.spin`).  Elliptic: the wide cone goes to
    the SOC QP backends or to ``nsgs``, ``apgd``, ``admm`` and ``padmm`` (the regularized CCP on the
    wide cone); pyramidal: ``2 (d - 1)`` edges per contact, every backend that fits.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.contact.rows import tangent_basis
from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.memory import ModelMemory, recall
from contactlab.models.base import SolvingModel, register_model
from contactlab.models.box_rows import ImpulseMemory, warm_local
from contactlab.models.common import MassInverse
from contactlab.models.fc_route import local_step
from contactlab.models.spin import (
    SPIN_DEFAULTS,
    _as_solution,
    check_spin_options,
    cone_qp,
    spin_active,
    wide_fc,
    wide_step,
)
from contactlab.problem import StepProblem, StepSolution
from solvers import FrictionalContact
from solvers.frictional import problem_kind

Array = NDArray[np.float64]

#: MuJoCo's clamps: ``mjMINIMP``, ``mjMAXIMP``, ``mjMINVAL``
MIN_IMP, MAX_IMP, MIN_VAL = 1e-4, 0.9999, 1e-15


def impedance(r: Array, solimp: tuple[float, ...]) -> Array:
    """MuJoCo's impedance ``d(r)`` of signed distances ``r`` (margin 0), clamped solimp."""
    dmin, dmax, width, mid, power = clamp_solimp(solimp)
    r = np.asarray(r, dtype=float)
    if dmin == dmax or width <= MIN_VAL:
        return np.full(r.shape, 0.5 * (dmin + dmax))
    x = np.abs(r) / width
    y = np.empty_like(x)
    if power == 1:
        y[:] = x
    else:
        lo = x <= mid
        y[lo] = x[lo] ** power / mid ** (power - 1)
        y[~lo] = 1.0 - (1.0 - x[~lo]) ** power / (1.0 - mid) ** (power - 1)
    y = np.where(x >= 1.0, 1.0, np.where(x <= 0.0, 0.0, y))
    return dmin + y * (dmax - dmin)  # type: ignore[no-any-return]


def clamp_solimp(solimp: tuple[float, ...]) -> tuple[float, float, float, float, float]:
    """``solimp`` with MuJoCo's clamps (``getsolparam``)."""
    dmin, dmax, width, mid, power = (float(s) for s in solimp)
    return (
        min(MAX_IMP, max(MIN_IMP, dmin)),
        min(MAX_IMP, max(MIN_IMP, dmax)),
        max(0.0, width),
        min(MAX_IMP, max(MIN_IMP, mid)),
        max(1.0, power),
    )


def stiffness_damping(solref: tuple[float, float], dmax: float, h: float) -> tuple[float, float]:
    """MuJoCo's ``(k, b)`` of the reference acceleration for step ``h`` (refsafe on)."""
    a, c = float(solref[0]), float(solref[1])
    if a > 0:
        tc = max(a, 2.0 * h)
        return 1.0 / max(MIN_VAL, dmax * dmax * tc * tc * c * c), 2.0 / max(MIN_VAL, dmax * tc)
    return -a / max(MIN_VAL, dmax * dmax), -c / max(MIN_VAL, dmax)


def _tuple(name: str, value: Any, size: int) -> tuple[float, ...]:
    try:
        out = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        out = ()
    if len(out) != size or not all(np.isfinite(out)):
        raise ConfigurationError(f"option {name} must be {size} finite numbers, got {value!r}")
    return out


def body_weights(problem: StepProblem) -> tuple[Array, Array] | None:
    """Per-contact ``(A_tran, A_rot)`` from the bodies' 6x6 mass blocks, or ``None``.

    ``None`` unless ``M`` is block diagonal in 6x6 blocks, one per body index, each the
    inertia of a body at its centre of mass (``diag(I, m 1)`` up to a rotation of ``I``),
    and every contact's rows act on its bodies' columns only (the maximal layout).
    """
    contacts, M = problem.contacts, sp.csr_matrix(problem.M)
    n = problem.n
    if contacts is None or n % 6:
        return None
    coo = M.tocoo()
    if np.any(coo.row // 6 != coo.col // 6):
        return None
    a, b = np.asarray(contacts.body_a), np.asarray(contacts.body_b)
    if a.size and (a.max() >= n // 6 or b.max() >= n // 6):
        return None
    rows = sp.vstack([problem.N, problem.T], format="csr")
    owner = np.concatenate([np.arange(len(a)), np.repeat(np.arange(len(a)), 2)])
    lens = np.diff(rows.indptr)
    col_body = rows.indices // 6
    row_owner = np.repeat(owner, lens)
    if not np.all((col_body == a[row_owner]) | (col_body == b[row_owner])):
        return None
    blocks = M.toarray().reshape(n // 6, 6, n // 6, 6)
    nb = n // 6
    tran, rot = np.zeros(nb + 1), np.zeros(nb + 1)  # last entry: the world (index -1)
    for k in range(nb):
        block = blocks[k, :, k, :]
        m = block[3, 3]
        # a body's inertia at its centre of mass: no rotation-translation coupling and an
        # isotropic mass (reduced coordinates of a free joint have the coupling)
        if np.any(block[:3, 3:] != 0.0) or np.any(block[3:, 3:] != m * np.eye(3)):
            return None
        rot[k], tran[k] = np.trace(np.linalg.inv(block[:3, :3])) / 3.0, 1.0 / m
    return tran[a] + tran[b], rot[a] + rot[b]


@register_model("soft")
class Soft(SolvingModel):
    """MuJoCo's soft contacts (solref, solimp): a regularized cone complementarity problem."""

    forms = ("fc",)
    needs = ("contact_geometry",)
    defaults = {
        "solref": (0.02, 1.0),
        "solimp": (0.9, 0.95, 0.001, 0.5, 2.0),
        "cone": "elliptic",
        "impratio": 1.0,
        "margin": 0.0,
        "diag": "auto",
        **SPIN_DEFAULTS,
    }

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        ref = _tuple("solref", options["solref"], 2)
        if (ref[0] > 0) != (ref[1] > 0) or ref[0] == 0 or ref[1] == 0:
            raise ConfigurationError(
                f"option solref must be (timeconst, dampratio) both > 0 or (-stiffness, "
                f"-damping) both < 0, got {options['solref']!r}"
            )
        imp = _tuple("solimp", options["solimp"], 5)
        if not (0 < imp[0] < 1 and 0 < imp[1] < 1 and imp[2] >= 0 and 0 < imp[3] < 1):
            raise ConfigurationError(
                "option solimp must be (dmin, dmax, width, midpoint, power) with dmin, dmax, "
                f"midpoint in (0, 1), width >= 0 and power >= 1, got {options['solimp']!r}"
            )
        if imp[4] < 1:
            raise ConfigurationError(f"option solimp: power must be >= 1, got {imp[4]}")
        if options["cone"] not in ("elliptic", "pyramidal"):
            raise ConfigurationError(
                f"option cone must be 'elliptic' or 'pyramidal', got {options['cone']!r}"
            )
        ratio = options["impratio"]
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not ratio > 0:
            raise ConfigurationError(f"option impratio must be a number > 0, got {ratio!r}")
        if not np.isfinite(float(options["margin"])):
            raise ConfigurationError(f"option margin must be finite, got {options['margin']!r}")
        if options["diag"] not in ("auto", "mujoco", "exact"):
            raise ConfigurationError(
                f"option diag must be 'auto', 'mujoco' or 'exact', got {options['diag']!r}"
            )

        check_spin_options(options)
        if spin_active(options) and options["spin_cone"] != "elliptic":
            raise ConfigurationError(
                "model 'soft': MuJoCo's torsional and rolling friction share one cone; "
                f"spin_cone must be 'elliptic', got {options['spin_cone']!r}"
            )

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        if spin_active(options) and options["cone"] == "elliptic":
            return [("soc_qp",), ("fc_wide_ccp",)]
        return [(problem_kind("ccp", "soc"),)]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if spin_active(self.options):
            return solve_soft(self, problem)
        nc = problem.n_contacts
        contacts = problem.contacts
        if nc and contacts is None:
            raise IncompatibleError(
                "model 'soft' needs the contact distances of the step (contact_geometry); "
                "pass the contact set that produced N in StepProblem.contacts"
            )
        dist = np.asarray(contacts.distance, dtype=float) if contacts is not None else np.zeros(0)
        active = np.flatnonzero(dist < float(self.options["margin"]))
        sub = _restrict(problem, active)
        soft = self.soft_problem(sub)
        step = soft.step
        tangents = (
            tangent_basis(sub.contacts.normal)
            if sub.contacts is not None and len(sub.contacts)
            else (np.zeros((0, 3)), np.zeros((0, 3)))
        )
        key = f"soft:{self.options['cone']}"
        warm = warm_local(recall(cache, key, ImpulseMemory), step.rows, sub, step.order, tangents)
        res = self.run(soft.fc, None if warm is None else soft.drop(warm))
        z_local = soft.lift(res.x)
        v = step.velocities(problem.f, z_local)
        z = np.empty(step.rows.m)
        z[step.order] = z_local
        cache[key] = ImpulseMemory.record(z, step.rows, sub, tangents)
        lam_n, lam_t = np.zeros(nc), np.zeros(2 * nc)
        lam_n[active] = step.rows.part(z, "N")
        lam_t[(2 * active[:, None] + np.arange(2)).ravel()] = step.rows.part(z, "T")
        status = self.take_status()
        results = self.take_results()
        return StepSolution(
            v=v,
            lambda_G=step.rows.part(z, "G"),
            lambda_N=lam_n,
            lambda_T=lam_t,
            lambda_L=step.rows.part(z, "L"),
            status=status,
            iterations=int(sum(r.iterations for r in results)),
            solve_time=float(sum(r.setup_time + r.solve_time for r in results)),
            residual=float(max((r.max_residual for r in results), default=0.0)),
            results=results,
        )

    def soft_problem(self, problem: StepProblem) -> SoftStep:
        """The regularized local problem of ``problem`` (all its contacts active)."""
        o = self.options
        h = problem.h
        step = local_step(problem, "ccp", "soc", 4, False)
        fc, rows, order = step.fc, step.rows, step.order
        nc = problem.n_contacts
        mg = rows.slices["G"].stop
        W = sp.csr_matrix(fc.W)
        vel = np.asarray(rows.C @ problem.v)  # J v, rows [G; N; T; L]
        q_free = fc.q + rows.b[order]  # C M^-1 f on the local rows
        which = order[: 3 * nc : 3] - mg  # contact of each local block
        contacts = problem.contacts
        dist = np.asarray(contacts.distance, dtype=float)[which] if contacts else np.zeros(0)
        solimp = clamp_solimp(tuple(o["solimp"]))
        dmax = solimp[1]
        imp = impedance(dist - float(o["margin"]), solimp)
        k, b = stiffness_damping(tuple(o["solref"]), dmax, h)  # type: ignore[arg-type]
        mu = fc.mu
        ratio = float(o["impratio"])
        weights = None if o["diag"] == "exact" else body_weights(problem)
        if weights is None and o["diag"] == "mujoco":
            raise ConfigurationError(
                "model 'soft': diag='mujoco' needs the maximal layout (6x6 mass blocks per "
                "body, contact rows on their bodies' columns); use diag='exact' or 'auto'"
            )
        diagW = W.diagonal()
        local = order[: 3 * nc].reshape(nc, 3)
        vn = vel[local[:, 0]]
        vt = vel[local[:, 1:]]
        free_n = q_free[0 : 3 * nc : 3]
        free_t = np.column_stack([q_free[1 : 3 * nc : 3], q_free[2 : 3 * nc : 3]])
        ms = fc.row_lo.size
        tail = slice(3 * nc, 3 * nc + ms)
        if o["cone"] == "elliptic":
            a_n = weights[0][which] if weights is not None else diagW[0 : 3 * nc : 3]
            R_n = np.maximum(MIN_VAL, (1.0 - imp) / imp * a_n)
            R_t = R_n / ratio
            # the target J v + h a_ref per row
            tn = vn + h * (-b * vn - k * imp * dist)
            tt = vt * (1.0 - h * b)
            q = fc.q.copy()
            q[0 : 3 * nc : 3] = free_n - tn
            q[1 : 3 * nc : 3] = free_t[:, 0] - tt[:, 0]
            q[2 : 3 * nc : 3] = free_t[:, 1] - tt[:, 1]
            Rvec = np.zeros(q.size)
            Rvec[0 : 3 * nc : 3] = R_n
            Rvec[1 : 3 * nc : 3] = R_t
            Rvec[2 : 3 * nc : 3] = R_t
            Wr = W.copy()
            Wr.setdiag(diagW + Rvec)  # W has its diagonal stored (a Delassus matrix)
            out = FrictionalContact(Wr, q, mu, "ccp", "soc", 4, fc.row_lo)
            return SoftStep(out, step, None, mu)
        # pyramidal: four edges J_n +- mu J_tk per contact, scalar unilateral rows
        E3 = np.zeros((nc, 4, 3))
        E3[:, :, 0] = 1.0
        E3[:, 0, 1], E3[:, 1, 1] = mu, -mu
        E3[:, 2, 2], E3[:, 3, 2] = mu, -mu
        E = sp.block_diag(
            [sp.block_diag(list(E3), format="csr") if nc else sp.csr_matrix((0, 0)),
             sp.identity(ms, format="csr")],
            format="csr",
        )  # fmt: skip
        E = sp.csr_matrix(E, shape=(4 * nc + ms, 3 * nc + ms))
        We = (E @ W @ E.T).tocsr()
        if weights is not None:
            a_e = weights[0][which] * (1.0 + mu * mu)
        else:
            a_e = We.diagonal()[0 : 4 * nc : 4]
        R0 = np.maximum(MIN_VAL, (1.0 - imp) / imp * a_e)
        mu_r = mu * np.sqrt(1.0 / ratio)
        Rpy = np.maximum(MIN_VAL, 2.0 * mu_r * mu_r * R0)
        vel3 = np.column_stack([vn, vt])
        target3 = vel3 * (1.0 - h * b)  # (nc, 3): J v - h b J v
        te = np.einsum("iej,ij->ie", E3, target3) - (h * k * imp * dist)[:, None]
        free3 = np.column_stack([free_n, free_t])
        qe = np.einsum("iej,ij->ie", E3, free3) - te
        q = np.concatenate([qe.ravel(), fc.q[tail]])
        Rvec = np.concatenate([np.repeat(Rpy, 4), np.zeros(ms)])
        Wr = (We + sp.diags(Rvec)).tocsr()
        Wr = 0.5 * (Wr + Wr.T)
        row_lo = np.concatenate([np.zeros(4 * nc), fc.row_lo])
        out = FrictionalContact(Wr.tocsr(), q, np.zeros(0), "ccp", "soc", 4, row_lo)
        return SoftStep(out, step, E, mu)


class SoftStep:
    """The regularized problem ``fc``, the step it came from and the edge map (pyramidal)."""

    def __init__(
        self, fc: FrictionalContact, step: Any, edges: sp.csr_matrix | None, mu: Array
    ) -> None:
        self.fc, self.step, self.edges, self.mu = fc, step, edges, mu

    def lift(self, x: Array) -> Array:
        """Impulses on the step's local rows ``(n, t1, t2)`` per contact, then scalar rows."""
        return x if self.edges is None else np.asarray(self.edges.T @ x)

    def drop(self, z: Array) -> Array:
        """Impulses on the step's local rows as a start of this problem (edges: split the
        contact impulse ``(z_n, z_t)`` on its four edges, clipped at 0)."""
        if self.edges is None:
            return z
        nc = self.mu.size
        blocks = z[: 3 * nc].reshape(nc, 3)
        safe = np.maximum(self.mu, 1e-12)
        half_t = blocks[:, 1:] / (2.0 * safe[:, None])
        quarter = blocks[:, :1] / 4.0
        edges = np.column_stack(
            [quarter + half_t[:, :1], quarter - half_t[:, :1],
             quarter + half_t[:, 1:], quarter - half_t[:, 1:]]
        )  # fmt: skip
        return np.concatenate([np.maximum(edges, 0.0).ravel(), z[3 * nc :]])


def _restrict(problem: StepProblem, keep: NDArray[np.int64]) -> StepProblem:
    """``problem`` with only the contacts ``keep`` (their N, T rows, mu, geometry, ids)."""
    nc = problem.n_contacts
    if keep.size == nc:
        return problem
    trows = (2 * keep[:, None] + np.arange(2)).ravel()
    return StepProblem(
        h=problem.h,
        M=problem.M,
        f=problem.f,
        v=problem.v,
        G=problem.G,
        g=problem.g,
        N=problem.N[keep],
        c=problem.c[keep],
        T=problem.T[trows],
        mu=problem.mu[keep],
        L=problem.L,
        l=problem.l,
        contacts=problem.contacts.select(keep) if problem.contacts is not None else None,
        contact_ids=problem.contact_ids[keep],
        contact_origin=problem.contact_origin[keep],
        directions=problem.directions,
        G_owner=problem.G_owner,
        G_error=problem.G_error,
        joint_friction=problem.joint_friction,
    )


def solve_soft(model: Any, problem: StepProblem) -> StepSolution:
    """MuJoCo's soft contacts with ``condim`` 4/6 rows (elliptic or pyramidal cone)."""
    o = model.options
    contacts = problem.contacts
    if problem.n_contacts and contacts is None:
        raise IncompatibleError(
            "model 'soft' needs the contact distances of the step (contact_geometry)"
        )
    dist_all = np.asarray(contacts.distance, float) if contacts is not None else np.zeros(0)
    active = np.flatnonzero(dist_all < float(o["margin"]))
    sub = _restrict(problem, active)
    h = sub.h
    wide = wide_step(sub, float(o["torsion"]), float(o["rolling"]))
    nc, d = wide.nc, wide.d
    minv = MassInverse(sub.M)
    W = minv.delassus(wide.C)
    W = (0.5 * (W + W.T)).tocsr()
    free = np.asarray(wide.C @ minv.vec(sub.f))
    vel = np.asarray(wide.C @ sub.v)
    dist = dist_all[active]
    solimp = clamp_solimp(tuple(o["solimp"]))
    imp = impedance(dist - float(o["margin"]), solimp)
    k, bdamp = stiffness_damping(tuple(o["solref"]), solimp[1], h)
    weights = None if o["diag"] == "exact" else body_weights(sub)
    if weights is None and o["diag"] == "mujoco":
        raise ConfigurationError(
            "model 'soft': diag='mujoco' needs the maximal layout; use diag='exact' or 'auto'"
        )
    mu = np.asarray(sub.mu, float)
    ratio = float(o["impratio"])
    # targets J v + h a_ref on the contact rows; joints and limits keep their rows (hard)
    target = np.concatenate([np.zeros(d * nc), sub.g, sub.l])  # type: ignore[arg-type]
    if nc:
        vb = vel[: d * nc].reshape(nc, d)
        tgt = vb * (1.0 - h * bdamp)
        tgt[:, 0] -= h * k * imp * dist
        target[: d * nc] = tgt.ravel()
    q = free - target
    diagW = W.diagonal()
    mg, ml = wide.mg, wide.ml
    if o["cone"] == "elliptic":
        a_n = weights[0] if weights is not None else diagW[0 : d * nc : d]
        R_n = np.maximum(MIN_VAL, (1.0 - imp) / imp * a_n)
        R_t = R_n / ratio
        Rb = np.zeros((nc, d))
        Rb[:, 0] = R_n
        # MuJoCo: R_j = R_t mu^2 / mu_j^2 (R_t on the sliding rows)
        coef = wide.scale
        Rb[:, 1:] = R_t[:, None] * (mu[:, None] ** 2) / np.maximum(MIN_VAL, coef**2)
        Rvec = np.concatenate([Rb.ravel(), np.zeros(mg + ml)])
        Wr = (W + sp.diags(Rvec)).tocsr()
        if model.route[0] == "fc_wide_ccp":
            res = model.run(wide_fc(Wr, q, wide, "ccp", "elliptic"))
            z = np.asarray(res.x)
        else:
            qp, Sc = cone_qp(Wr, q, wide, "elliptic")
            res = model.run(qp)
            z = np.asarray(Sc @ res.x[: W.shape[0]])
    else:
        # pyramidal: 2 (d - 1) edges J_n +- mu_j J_j per contact, one common regularizer
        ne = 2 * (d - 1)
        E3 = np.zeros((nc, ne, d))
        E3[:, :, 0] = 1.0
        for j in range(d - 1):
            E3[:, 2 * j, j + 1] = wide.scale[:, j]
            E3[:, 2 * j + 1, j + 1] = -wide.scale[:, j]
        ms = mg + ml
        E = sp.block_diag(
            [
                sp.block_diag(list(E3), format="csr") if nc else sp.csr_matrix((0, 0)),
                sp.identity(ms, format="csr"),
            ],
            format="csr",
        )
        E = sp.csr_matrix(E, shape=(ne * nc + ms, d * nc + ms))
        We = (E @ W @ E.T).tocsr()
        if weights is not None:
            a_e = weights[0] * (1.0 + mu * mu)
        else:
            a_e = We.diagonal()[0 : ne * nc : ne]
        R0 = np.maximum(MIN_VAL, (1.0 - imp) / imp * a_e)
        mu_r = mu * np.sqrt(1.0 / ratio)
        Rpy = np.maximum(MIN_VAL, 2.0 * mu_r * mu_r * R0)
        Rvec = np.concatenate([np.repeat(Rpy, ne), np.zeros(ms)])
        Wr = (We + sp.diags(Rvec)).tocsr()
        Wr = 0.5 * (Wr + Wr.T)
        qe = np.asarray(E @ q)
        row_lo = np.concatenate([np.zeros(ne * nc), np.full(mg, -np.inf), np.zeros(ml)])
        fc = FrictionalContact(Wr.tocsr(), qe, np.zeros(0), "ccp", "soc", 4, row_lo)
        res = model.run(fc)
        z = np.asarray(E.T @ res.x)
    v = minv.vec(sub.f + np.asarray(wide.C.T @ z))
    return _as_solution(model, problem, wide, z, v, active)
