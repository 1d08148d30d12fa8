"""Torsional and rolling friction (MuJoCo's ``condim`` 4 and 6) for the cone models.

Each contact gains angular rows on the relative angular velocity of its two bodies:
the *torsional* row ``n . (w_a - w_b)`` (spin about the normal) and, for rolling, the
two rows ``t_k . (w_a - w_b)`` (MuJoCo's documentation, "Contact": ``condim`` 4 adds
torsion, 6 adds rolling as well).  Their impulses are torques [N m s] bounded by the
normal impulse through the coefficients ``mu_t`` (torsion) and ``mu_r`` (rolling),
both lengths [m].  With the components ``z = (z_n, z_t1, z_t2, z_s, z_r1, z_r2)`` and
the coefficients ``D = diag(mu, mu, mu_t, mu_r, mu_r)`` the cone is

- ``spin_cone="elliptic"`` (MuJoCo's): ``||D^-1 z_T|| <= z_n``, one cone over the scaled
  components, so sliding, spinning and rolling share the normal impulse;
- ``spin_cone="separate"``: ``||z_t|| <= mu z_n``, ``|z_s| <= mu_t z_n`` and
  ``||z_r|| <= mu_r z_n``, one cone per group (the rolling-resistance law of the
  textbooks, each group bounded by the full normal impulse).

The dual (velocity) cones are ``u_n >= ||D u_T||`` and ``u_n >= mu ||u_t|| + mu_t |u_s| +
mu_r ||u_r||``.  The models pose (rows ``C = [contacts (n, t, s, r); G; L]``, ``u = C v+ - b``):

- ``anitescu-hart``: the cone complementarity problem ``K ∋ z ⊥ W z + q ∈ K*`` (its
  spurious normal velocity now includes ``mu_t |u_s|`` and ``mu_r ||u_r||``: a spinning
  or rolling body lifts off);
- ``coulomb``: De Saxcé's law, the same problem with the normal velocity shifted by the
  dual-cone norm of ``u_T`` (max dissipation on the wide cone, no lift-off), solved by a
  fixed point on the shift;
- ``soft``: MuJoCo's regularized problem (``W + R``, reference acceleration on every row;
  elliptic: ``R_j = R_t mu^2 / mu_j^2`` as MuJoCo sets it; pyramidal: the ``2 (d - 1)``
  edges ``J_n +- mu_j J_j`` with the common edge regularizer).

Rows.  In the maximal layout (a body's columns are its twist ``(omega, nu)`` in body
coordinates) the block of body ``i`` in a contact row of world direction ``d`` is
``[x_i x m, m]`` with ``m = R_i^T d`` (:mod:`contactlab.contact.rows`), and the angular
row ``d . (R_a w_a - R_b w_b)`` has the block ``[m, 0]``: the rows are read off the
problem's ``N`` and ``T``, with no access to the formulation.  Reduced coordinates do not
expose that layout: a model with ``torsion`` or ``rolling`` on a reduced formulation
gets one error naming the fix.

Solvers.  Two routes.  The SOC QP backends (``cvxpy`` with Clarabel, ECOS or SCS) take
the wide elliptic and separate cones as a QP with a chain of 3-dimensional cones
(``||(x_1..x_k)|| <= x_0`` as ``||(x_1, x_2)|| <= a_1``, ``||(a_1, x_3)|| <= a_2``, ...;
:func:`cone_qp`), Coulomb's law by the fixed point on De Saxcé's shift around them.  The
frictional-contact backends ``nsgs``, ``apgd``, ``admm`` and ``padmm`` take the wide problem
(:class:`solvers.WideFrictionalContact`, kinds ``fc_wide_ccp`` and ``fc_wide_coulomb``:
the contact rows with one coefficient per row, the cone ``spin_cone``; :func:`wide_fc`),
both laws natively.  ``ipm`` takes 3-row contacts only; ``soft`` with the
pyramidal cone needs no wide cone (its edges are scalar unilateral rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.memory import ModelMemory, recall
from contactlab.models.box_rows import continued_from
from contactlab.models.common import MassInverse
from contactlab.problem import StepProblem, StepSolution
from solvers import QP, SOCBlocks, WideFrictionalContact

Array = NDArray[np.float64]

#: the options every model with torsional/rolling friction takes, with their defaults
SPIN_DEFAULTS: dict[str, Any] = {"torsion": 0.0, "rolling": 0.0, "spin_cone": "elliptic"}

#: the shift iteration of De Saxcé's law: cap and relative tolerance
FIXED_POINT_MAX, FIXED_POINT_TOL = 200, 1e-12


def check_spin_options(options: dict[str, Any]) -> None:
    """Raise :class:`ConfigurationError` for a bad ``torsion``, ``rolling`` or ``spin_cone``."""
    for name in ("torsion", "rolling"):
        x = options[name]
        if (
            isinstance(x, bool)
            or not isinstance(x, (int, float))
            or not (np.isfinite(x) and x >= 0)
        ):
            raise ConfigurationError(
                f"option {name} must be a friction length >= 0 [m] (MuJoCo's "
                f"{'second' if name == 'torsion' else 'third'} friction coefficient), got {x!r}"
            )
    if options["spin_cone"] not in ("elliptic", "separate"):
        raise ConfigurationError(
            f"option spin_cone must be 'elliptic' or 'separate', got {options['spin_cone']!r}"
        )


def spin_active(options: dict[str, Any]) -> bool:
    """Whether the options ask for torsional or rolling friction."""
    return float(options.get("torsion", 0.0)) > 0 or float(options.get("rolling", 0.0)) > 0


def angular_rows(problem: StepProblem) -> sp.csr_matrix:
    """``(3 nc, n)`` rows ``(n, t1, t2) . (w_a - w_b)`` per contact, read off ``N`` and ``T``.

    Raises :class:`IncompatibleError` unless the problem has the maximal layout (6 columns per
    body, every contact row on its bodies' columns, ``M`` block diagonal in 6x6 blocks).
    """
    n, nc = problem.n, problem.n_contacts
    contacts = problem.contacts
    fix = (
        "torsional and rolling friction need the maximal layout (body twists as velocities); "
        "use the 'maximal' formulation or set torsion=0 and rolling=0"
    )
    if n % 6 or (nc and contacts is None):
        raise IncompatibleError(f"{fix} (the velocities are not 6 per body)")
    coo = sp.coo_matrix(problem.M)
    if np.any(coo.row // 6 != coo.col // 6):
        raise IncompatibleError(f"{fix} (M is not block diagonal in 6x6 body blocks)")
    assert problem.N is not None and problem.T is not None
    if nc == 0:
        return sp.csr_matrix((0, n))
    assert contacts is not None
    # contact-major stack (n, t1, t2) of the rows
    order = np.column_stack([np.arange(nc), nc + 2 * np.arange(nc), nc + 2 * np.arange(nc) + 1])
    rows = sp.vstack([problem.N, problem.T], format="csr")[order.ravel()].tocoo()
    a = np.asarray(contacts.body_a)[rows.row // 3]
    b = np.asarray(contacts.body_b)[rows.row // 3]
    body = rows.col // 6
    if not np.all((body == a) | (body == b)):
        raise IncompatibleError(f"{fix} (a contact row acts on columns of other bodies)")
    linear = rows.col % 6 >= 3
    return sp.csr_matrix(
        (rows.data[linear], (rows.row[linear], rows.col[linear] - 3)), shape=(3 * nc, n)
    )


@dataclass
class SpinReport:
    """The angular rows and impulses of a step with torsional/rolling friction.

    rows : (3 nc, n) angular rows ``(n, t1, t2) . (w_a - w_b)`` per contact.
    impulse : (nc, 3) torsional and two rolling impulses [N m s] on those rows.
    mu : (nc, 3) their coefficients ``(mu_t, mu_r, mu_r)`` [m] (0: no such friction).
    cone : ``"elliptic"`` or ``"separate"``.
    """

    rows: sp.csr_matrix
    impulse: Array
    mu: Array
    cone: str


@dataclass
class WideStep:
    """The wide rows of a step: contact components first (``d`` per contact), then G, L."""

    C: sp.csr_matrix  # (d nc + mg + ml, n)
    b: Array  # right-hand side (u = C v - b)
    scale: Array  # (nc, d - 1) coefficients of the tangential components
    comps: Array  # (d - 1,) which of (t1, t2, s, r1, r2) each component is
    d: int
    nc: int
    mg: int
    ml: int
    spin: sp.csr_matrix  # (3 nc, n)


def wide_step(problem: StepProblem, torsion: float, rolling: float) -> WideStep:
    """The contact rows ``(n, t1, t2[, s][, r1, r2])`` per contact, then ``G`` and ``L``."""
    nc = problem.n_contacts
    assert problem.N is not None and problem.T is not None and problem.mu is not None
    assert problem.G is not None and problem.L is not None
    S = angular_rows(problem)
    comps = [0, 1] + ([2] if torsion > 0 else []) + ([3, 4] if rolling > 0 else [])
    d = 1 + len(comps)
    basis = [problem.T[0::2], problem.T[1::2], S[0::3], S[1::3], S[2::3]]
    blocks = [problem.N] + [basis[c] for c in comps]
    stacked = sp.vstack(blocks, format="csr")
    perm = (np.arange(d)[None, :] * nc + np.arange(nc)[:, None]).ravel()
    contact = stacked[perm] if nc else sp.csr_matrix((0, problem.n))
    C = sp.vstack([contact, problem.G, problem.L], format="csr")
    b_contact = np.zeros((nc, d))
    assert problem.c is not None and problem.g is not None and problem.l is not None
    b_contact[:, 0] = problem.c
    b = np.concatenate([b_contact.ravel(), problem.g, problem.l])
    coef = np.array([0.0, 0.0, torsion, rolling, rolling])[comps]
    scale = np.tile(coef, (nc, 1))
    scale[:, :2] = np.asarray(problem.mu, float)[:, None]
    return WideStep(
        C, b, scale, np.asarray(comps), d, nc, problem.G.shape[0], problem.L.shape[0], S
    )


#: the family label (:mod:`solvers.frictional_wide`) of each component t1, t2, s, r1, r2
_FAMILY = np.array([1, 1, 2, 3, 3], dtype=np.int64)


def wide_fc(
    W: sp.csr_matrix, q: Array, wide: WideStep, law: str, cone: str
) -> WideFrictionalContact:
    """The wide rows as the solver layer's frictional-contact problem: ``d`` rows per
    contact with their coefficients (``mu``, ``mu_t``, ``mu_r``), then ``G`` (bilateral) and
    ``L`` (unilateral) as scalar rows."""
    nc, d = wide.nc, wide.d
    mr = np.ones((nc, d))
    mr[:, 1:] = wide.scale
    family = np.tile(np.concatenate([[0], _FAMILY[wide.comps]]), nc)
    row_lo = np.concatenate([np.full(wide.mg, -np.inf), np.zeros(wide.ml)])
    offsets = np.arange(nc + 1, dtype=np.int64) * d
    return WideFrictionalContact(W, q, offsets, mr.ravel(), law, cone, row_lo, family)


def _groups(comps: Array, cone: str) -> list[list[int]]:
    """Positions (1-based, in a contact block) of the cone groups: one, or one per family."""
    if cone == "elliptic":
        return [list(range(1, comps.size + 1))]
    out: list[list[int]] = []
    for family in ((0, 1), (2,), (3, 4)):
        pos = [i + 1 for i, c in enumerate(comps) if c in family]
        if pos:
            out.append(pos)
    return out


def cone_qp(W: sp.csr_matrix, q: Array, wide: WideStep, cone: str) -> tuple[QP, sp.csr_matrix]:
    """The CCP ``K ∋ z ⊥ W z + q ∈ K*`` on the wide cone as a QP with 3-d cones.

    Returns the QP in the scaled variables ``y`` (``z = Sc y``, tangential components
    divided by their coefficients, so every cone has unit slope) followed by auxiliary
    variables, and ``Sc`` (the map from the first ``m`` variables to ``z``).
    """
    nc, d, m = wide.nc, wide.d, W.shape[0]
    sdiag = np.ones(m)
    if nc:
        sdiag[: d * nc] = np.column_stack([np.ones(nc), wide.scale]).ravel()
    Sc = sp.diags(sdiag, format="csr")
    P0 = (Sc @ W @ Sc).tocsr()
    normals: list[int] = []
    tangents: list[tuple[int, int]] = []
    eq_rows: list[tuple[int, int]] = []  # x_i - x_j = 0
    lin_rows: list[tuple[int, int, float]] = []  # x_i + s x_j >= 0
    n_var = m

    def new() -> int:
        nonlocal n_var
        n_var += 1
        return n_var - 1

    def copy(x: int) -> int:
        c = new()
        eq_rows.append((c, x))
        return c

    def cone_k(x0: int, xs: list[int]) -> None:
        """``||x_s|| <= x_0`` by a chain of 3-d cones."""
        if len(xs) == 1:
            lin_rows.append((x0, xs[0], -1.0))
            lin_rows.append((x0, xs[0], 1.0))
            return
        head = xs[:2]
        rest = xs[2:]
        top = x0 if not rest else new()
        normals.append(top)
        tangents.append((head[0], head[1]))
        prev = top
        for i, x in enumerate(rest):
            top = x0 if i == len(rest) - 1 else new()
            normals.append(top)
            tangents.append((copy(prev), x))
            prev = top

    groups = _groups(wide.comps, cone)
    for i in range(nc):
        base = i * d
        for k, group in enumerate(groups):
            x0 = base if k == 0 else copy(base)
            cone_k(x0, [base + p for p in group])
    # unilateral scalar rows (limits) y >= 0
    lim = np.arange(m - wide.ml, m)
    P = sp.block_diag([P0, sp.csr_matrix((n_var - m, n_var - m))], format="csc")
    qq = np.concatenate([Sc @ q, np.zeros(n_var - m)])
    ne, nl, nm = len(eq_rows), len(lin_rows), lim.size
    r = np.arange(ne)
    eq = sp.csr_matrix(
        (
            np.concatenate([np.ones(ne), -np.ones(ne)]),
            (np.concatenate([r, r]), np.array([e[0] for e in eq_rows] + [e[1] for e in eq_rows])),
        ),
        shape=(ne, n_var),
    )
    rl = np.arange(nl)
    lin = sp.csr_matrix(
        (
            np.concatenate([np.ones(nl), [s for _, _, s in lin_rows]]),
            (
                np.concatenate([rl, rl]),
                np.array([x[0] for x in lin_rows] + [x[1] for x in lin_rows], dtype=np.int64),
            ),
        ),
        shape=(nl, n_var),
    )
    lims = sp.csr_matrix((np.ones(nm), (np.arange(nm), lim)), shape=(nm, n_var))
    A = sp.vstack([eq, lin, lims], format="csc")
    lo = np.zeros(ne + nl + nm)
    hi = np.concatenate([np.zeros(ne), np.full(nl + nm, np.inf)])
    cones = (
        SOCBlocks(
            np.array(normals, dtype=np.int64),
            np.array(tangents, dtype=np.int64).reshape(-1, 2),
            np.ones(len(normals)),
        )
        if normals
        else None
    )
    qp = QP(
        P,
        qq,
        A if A.shape[0] else None,
        lo if A.shape[0] else None,
        hi if A.shape[0] else None,
        soc=cones,
    )
    return qp, Sc


def dual_norm(u: Array, wide: WideStep, cone: str) -> Array:
    """``(nc,)`` norm of the tangential velocities in the dual cone (De Saxcé's shift)."""
    nc, d = wide.nc, wide.d
    if nc == 0:
        return np.zeros(0)
    ut = u[: d * nc].reshape(nc, d)[:, 1:] * wide.scale
    if cone == "elliptic":
        return np.asarray(np.linalg.norm(ut, axis=1))
    out = np.zeros(nc)
    for group in _groups(wide.comps, cone):
        out += np.linalg.norm(ut[:, [p - 1 for p in group]], axis=1)
    return out


def _as_solution(
    model: Any, problem: StepProblem, wide: WideStep, z: Array, v: Array, active: NDArray[Any]
) -> StepSolution:
    """The :class:`StepSolution` (and :class:`SpinReport`) of the wide impulses ``z``."""
    nc_all = problem.n_contacts
    nc, d = wide.nc, wide.d
    blocks = z[: d * nc].reshape(nc, d)
    full = np.zeros((nc, 6))
    full[:, 0] = blocks[:, 0]
    full[:, 1 + wide.comps] = blocks[:, 1:]
    lam_n, lam_t = np.zeros(nc_all), np.zeros((nc_all, 2))
    spin = np.zeros((nc_all, 3))
    lam_n[active] = full[:, 0]
    lam_t[active] = full[:, 1:3]
    spin[active] = full[:, 3:]
    mu = np.zeros((nc_all, 3))
    mu[:, 0] = float(model.options["torsion"])
    mu[:, 1:] = float(model.options["rolling"])
    lam_g = z[d * nc : d * nc + wide.mg]
    lam_l = z[d * nc + wide.mg :]
    status = model.take_status()
    results = model.take_results()
    return StepSolution(
        v=v,
        lambda_G=lam_g,
        lambda_N=lam_n,
        lambda_T=lam_t.ravel(),
        lambda_L=lam_l,
        status=status,
        iterations=int(sum(r.iterations for r in results)),
        solve_time=float(sum(r.setup_time + r.solve_time for r in results)),
        residual=float(max((r.max_residual for r in results), default=0.0)),
        results=results,
        report=SpinReport(angular_rows(problem), spin, mu, str(model.options["spin_cone"])),
    )


def solve_rigid(
    model: Any, problem: StepProblem, law: str, cache: ModelMemory | None = None
) -> StepSolution:
    """Anitescu--Hart (``law="ccp"``) or Coulomb (``law="coulomb"``) on the wide cone.

    Coulomb: the fixed point ``s <- ||u_T||_D`` on De Saxcé's shift of the normal velocity,
    started from the previous step's shift of each persisting contact (``cache``).
    """
    o = model.options
    cone = str(o["spin_cone"])
    wide = wide_step(problem, float(o["torsion"]), float(o["rolling"]))
    minv = MassInverse(problem.M)
    W = minv.delassus(wide.C)
    W = (0.5 * (W + W.T)).tocsr()
    free = np.asarray(wide.C @ minv.vec(problem.f))
    q = free - wide.b
    nc, d = wide.nc, wide.d
    shift = np.zeros(nc)
    memory = None if cache is None else recall(cache, "spin:shift", tuple)
    if law == "coulomb" and memory is not None and nc:
        ids, old = memory
        where = {int(i): k for k, i in enumerate(ids)}
        origin = np.asarray(problem.contact_origin)
        shift = np.array([old[where[int(o)]] if int(o) in where else 0.0 for o in origin])
    z = np.zeros(W.shape[0])
    outer = 0
    if model.route[0].startswith("fc_wide"):
        # the frictional-contact backends: both laws natively on the wide cone, warm-started
        # per persisting contact from the previous step's impulses (same wide rows)
        warm = None
        impulses = None if cache is None else recall(cache, "spin:impulses", tuple)
        if impulses is not None and impulses[2] == d:
            old_ids, old_z, _ = impulses
            src = continued_from(np.asarray(old_ids), problem)
            warm = np.zeros(W.shape[0])
            blocks = warm[: d * nc].reshape(nc, d)
            hit = src >= 0
            blocks[hit] = old_z[src[hit]]
        res = model.run(wide_fc(W, q, wide, law, cone), warm)
        z = np.asarray(res.x)
        if cache is not None:
            cache["spin:impulses"] = (
                np.asarray(problem.contact_ids).copy(),
                z[: d * nc].reshape(nc, d).copy(),
                d,
            )
        v = minv.vec(problem.f + np.asarray(wide.C.T @ z))
        sol = _as_solution(model, problem, wide, z, v, np.arange(nc))
        sol.outer_iterations = 1
        return sol
    while True:
        qs = q.copy()
        qs[0 : d * nc : d] += shift
        qp, Sc = cone_qp(W, qs, wide, cone)
        res = model.run(qp)
        z = np.asarray(Sc @ res.x[: W.shape[0]])
        outer += 1
        if law != "coulomb" or nc == 0:
            break
        u = np.asarray(W @ z + q)
        new = dual_norm(u, wide, cone)
        scale = max(1.0, float(np.abs(u).max()))
        done = float(np.abs(new - shift).max()) <= FIXED_POINT_TOL * scale
        shift = new
        if done or outer >= FIXED_POINT_MAX:
            break
    if cache is not None and law == "coulomb":
        cache["spin:shift"] = (np.asarray(problem.contact_ids).copy(), shift.copy())
    v = minv.vec(problem.f + np.asarray(wide.C.T @ z))
    sol = _as_solution(model, problem, wide, z, v, np.arange(nc))
    sol.outer_iterations = outer
    if law == "coulomb" and outer >= FIXED_POINT_MAX and sol.status == "optimal":
        sol.status = "max_iterations"
    return sol
