"""Reference problems: small QPs/LCPs with analytic solutions, and contact-shaped generators.

Every hand-made problem states its solution and how it was derived, so a test
can check a backend against mathematics rather than against another backend.
The generators build the shapes rigid-body contact produces: a block-diagonal
SPD mass matrix (one 6x6 block per body, angular first), sparse constraint rows
touching one or two bodies, and the Delassus operator ``J M^-1 J^T``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.conversions import spd_inverse
from solvers.problems import LCP, QP, FrictionBlocks, SOCBlocks

Vec = NDArray[np.float64]
INF = np.inf


@dataclass
class Reference:
    """A problem with its expected outcome.

    Attributes
    ----------
    name
        Identifier used in test ids.
    problem
        The QP or LCP.
    status
        ``"optimal"``, ``"infeasible"`` or ``"unbounded"``.
    x
        Analytic solution (``z`` for an LCP), or ``None`` if not unique/known.
    y
        Analytic QP multipliers (OSQP sign), or ``None`` if not unique/known.
    note
        How the solution was derived.
    """

    name: str
    problem: QP | LCP
    status: str = "optimal"
    x: Vec | None = None
    y: Vec | None = None
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)


def _cone_projection(a: Vec, mu: float) -> Vec:
    """Euclidean projection of ``(a_n, a_t)`` onto ``{||x_t|| <= mu x_n}``."""
    an, at = a[0], a[1:]
    r = float(np.linalg.norm(at))
    if r <= mu * an:
        return a.copy()
    if mu * r <= -an:
        return np.zeros_like(a)
    c, s = 1.0 / np.hypot(1.0, mu), mu / np.hypot(1.0, mu)
    t = an * c + r * s
    return np.concatenate([[t * c], t * s * at / r])


def reference_qps() -> list[Reference]:
    """Hand-made QPs with analytic solutions, plus degenerate, infeasible and unbounded ones."""
    I2 = sp.identity(2, format="csc")
    refs = [
        Reference(
            "qp_bounds_2d",
            QP(I2, [1.0, -1.0], I2, [0.0, 0.0], [INF, INF]),
            x=np.array([0.0, 1.0]),
            y=np.array([-1.0, 0.0]),
            note="unconstrained minimiser (-1, 1) projected on x >= 0; y = -(x + q)",
        ),
        Reference(
            "qp_equality",
            QP(I2, [1.0, -1.0], np.array([[1.0, 1.0]]), [1.0], [1.0]),
            x=np.array([-0.5, 1.5]),
            y=np.array([-0.5]),
            note="x = -q - a y, 1'x = 1 gives y = -1/2",
            tags=("equality",),
        ),
        Reference(
            "qp_two_sided",
            QP(np.eye(1), [-3.0], np.eye(1), [-1.0], [2.0]),
            x=np.array([2.0]),
            y=np.array([1.0]),
            note="min (x-3)^2/2 on [-1, 2]: upper bound active, y = 3 - 2",
        ),
        Reference(
            "qp_general_rows",
            QP(
                np.diag([1.0, 2.0, 4.0]),
                [-2.0, -4.0, -4.0],
                np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 1.0], [1.0, -1.0, 0.0]]),
                [-INF, 0.0, -10.0],
                [3.0, INF, INF],
            ),
            x=np.array([6 / 7, 10 / 7, 5 / 7]),
            y=np.array([8 / 7, 0.0, 0.0]),
            note="only 1'x <= 3 active: x_i = (-q_i - y)/P_ii, sum = 3 gives y = 8/7",
        ),
        Reference(
            "qp_degenerate_active",
            QP(np.eye(1), [0.0], np.eye(1), [0.0], [INF]),
            x=np.array([0.0]),
            y=np.array([0.0]),
            note="bound active with zero multiplier (strict complementarity fails)",
        ),
        Reference(
            "qp_redundant_rows",
            QP(I2, [1.0, 0.0], np.array([[1.0, 0.0], [1.0, 0.0]]), [0.0, 0.0], [INF, INF]),
            x=np.array([0.0, 0.0]),
            note="duplicated active row: x unique, multipliers only in sum (-1)",
        ),
        Reference(
            "qp_infeasible",
            QP(np.eye(1), [0.0], np.array([[1.0], [1.0]]), [1.0, -INF], [INF, 0.0]),
            status="infeasible",
            note="x >= 1 and x <= 0",
        ),
        Reference(
            "qp_unbounded",
            QP(sp.csc_matrix((1, 1)), [-1.0], np.eye(1), [0.0], [INF]),
            status="unbounded",
            note="min -x over x >= 0 with P = 0",
        ),
    ]
    for mu, a in ((0.5, np.array([1.0, 2.0, 0.0])), (0.8, np.array([0.3, -0.1, 0.2]))):
        soc = SOCBlocks(np.array([0]), np.array([[1, 2]]), np.array([mu]))
        refs.append(
            Reference(
                f"qp_cone_projection_mu{mu}",
                QP(np.eye(3), -a, soc=soc),
                x=_cone_projection(a, mu),
                note="Euclidean projection of a on the Coulomb cone (ray formula)",
                tags=("soc",),
            )
        )
    return refs


def reference_lcps() -> list[Reference]:
    """Hand-made LCPs with analytic solutions (standard, box, mixed, friction) and failures."""
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    I3 = np.eye(3)
    q_f = np.array([-1.0, 2.0, -0.1])
    disc_t = -q_f[1:] * 0.5 / np.linalg.norm(q_f[1:])
    return [
        Reference(
            "lcp_standard",
            LCP(M, [-1.0, 3.0]),
            x=np.array([0.5, 0.0]),
            note="z2 = 0: z1 = 1/2, w2 = 1/2 + 3 > 0",
        ),
        Reference(
            "lcp_box",
            LCP(M, [-5.0, -6.0], [0.0, 0.0], [1.0, 10.0]),
            x=np.array([1.0, 2.5]),
            note="z1 at its upper bound 1 (w1 = -1/2 <= 0), w2 = 0",
        ),
        Reference(
            "lcp_mixed",
            LCP(M, [5.0, -1.0], [-INF, 0.0], [INF, INF]),
            x=np.array([-11 / 3, 7 / 3]),
            note="both rows active: z = -M^-1 q",
        ),
        Reference(
            "lcp_friction_box",
            LCP(
                I3,
                q_f,
                blocks=FrictionBlocks(np.array([0]), np.array([[1, 2]]), np.array([0.5]), "box"),
            ),
            x=np.array([1.0, -0.5, 0.1]),
            tags=("friction",),
            note="M = I: z_n = 1, z_t = clip(-q_t, -mu z_n, mu z_n)",
        ),
        Reference(
            "lcp_friction_disc",
            LCP(
                I3,
                q_f,
                blocks=FrictionBlocks(np.array([0]), np.array([[1, 2]]), np.array([0.5]), "disc"),
            ),
            x=np.concatenate([[1.0], disc_t]),
            tags=("friction",),
            note="M = I: z_n = 1, z_t = projection of -q_t on the disc of radius mu z_n",
        ),
        Reference(
            "lcp_degenerate_psd",
            LCP(np.ones((2, 2)), [-1.0, -1.0]),
            note="singular PSD M: every z >= 0 with z1 + z2 = 1 solves it",
        ),
        Reference(
            "lcp_no_solution",
            LCP(-np.eye(2), [-1.0, -1.0]),
            status="infeasible",
            note="w = -z - 1 < 0 for every z >= 0",
            tags=("nonsymmetric-psd",),
        ),
    ]


# --------------------------------------------------------------------------- contact shapes


@dataclass
class ContactScene:
    """Random contact-shaped data: bodies, contacts and their constraint rows.

    Attributes
    ----------
    M
        ``(6 nb, 6 nb)`` block-diagonal SPD mass matrix (CSR).
    f
        ``(6 nb,)`` free momentum ``M v_prev + h f_ext``.
    J
        ``(rows_per_contact * nc, 6 nb)`` constraint rows, contact-major:
        normal, tangent 1, tangent 2, then (five rows) two rolling rows.
    b
        Right-hand side of the normal rows (``J_n v >= b``), zero elsewhere.
    mu
        ``(nc,)`` friction coefficients.
    rows_per_contact
        3 (normal + 2 tangents) or 5 (+ 2 rolling).
    """

    M: sp.csr_matrix
    f: Vec
    J: sp.csr_matrix
    b: Vec
    mu: Vec
    rows_per_contact: int

    @property
    def nc(self) -> int:
        """Number of contacts."""
        return int(self.mu.shape[0])

    def row_index(self) -> NDArray[np.int64]:
        """``(nc, rows_per_contact)`` row numbers of each contact."""
        return np.arange(self.nc * self.rows_per_contact).reshape(self.nc, self.rows_per_contact)

    def delassus(self) -> tuple[sp.csr_matrix, Vec]:
        """``D = J M^-1 J^T`` and ``c = J M^-1 f - b`` (so ``w = D lam + c`` is ``J v - b``)."""
        Minv = spd_inverse(self.M)
        JMinv = self.J @ Minv
        D = sp.csr_matrix(JMinv @ self.J.T)
        return (D + D.T) * 0.5, np.asarray(JMinv @ self.f) - self.b


def contact_scene(
    n_bodies: int, contacts_per_body: float = 2.0, rows_per_contact: int = 5, seed: int = 0
) -> ContactScene:
    """Random bodies and contacts (to ground or another body), vectorised over contacts."""
    rng = np.random.default_rng(seed)
    nb = n_bodies
    B = rng.standard_normal((nb, 6, 6)) * 0.3
    blocks = B @ B.transpose(0, 2, 1) + np.einsum("i,jk->ijk", rng.uniform(0.5, 2.0, nb), np.eye(6))
    idx = np.arange(6 * nb).reshape(nb, 6)
    M = sp.csr_matrix(
        (blocks.ravel(), (np.repeat(idx, 6, axis=1).ravel(), np.tile(idx, (1, 6)).ravel())),
        shape=(6 * nb, 6 * nb),
    )
    nc = max(1, int(round(contacts_per_body * nb)))
    body_a = np.arange(nc) % nb
    other = (body_a + rng.integers(1, max(nb, 2), nc)) % nb
    body_b = np.where((rng.random(nc) < 0.3) | (nb == 1), -1, other)
    normal = rng.standard_normal((nc, 3))
    normal /= np.linalg.norm(normal, axis=1, keepdims=True)
    helper = np.where(np.abs(normal[:, :1]) < 0.9, [[1.0, 0.0, 0.0]], [[0.0, 1.0, 0.0]])
    t1 = np.cross(normal, helper)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 = np.cross(normal, t1)
    dirs = np.stack([normal, t1, t2], axis=1)  # (nc, 3, 3)
    p_a = rng.uniform(-0.5, 0.5, (nc, 3))
    p_b = rng.uniform(-0.5, 0.5, (nc, 3))
    # Linear rows d.(omega x p + nu) = (p x d).omega + d.nu, angular first.
    lin_a = np.concatenate([np.cross(p_a[:, None, :], dirs), dirs], axis=2)
    lin_b = -np.concatenate([np.cross(p_b[:, None, :], dirs), dirs], axis=2)
    rows_a, rows_b = [lin_a], [lin_b]
    if rows_per_contact == 5:
        roll = np.concatenate([dirs[:, 1:], np.zeros((nc, 2, 3))], axis=2)
        rows_a.append(roll)
        rows_b.append(-roll)
    elif rows_per_contact != 3:
        raise ValueError(f"rows_per_contact must be 3 or 5, got {rows_per_contact}")
    Ja = np.concatenate(rows_a, axis=1)  # (nc, r, 6)
    Jb = np.concatenate(rows_b, axis=1)
    r = rows_per_contact
    row_ids = np.arange(nc * r).reshape(nc, r)
    R = [np.repeat(row_ids[:, :, None], 6, axis=2)]
    C = [np.broadcast_to(idx[body_a][:, None, :], (nc, r, 6))]
    V = [Ja]
    has_b = body_b >= 0
    R.append(np.repeat(row_ids[has_b][:, :, None], 6, axis=2))
    C.append(np.broadcast_to(idx[body_b[has_b]][:, None, :], (int(has_b.sum()), r, 6)))
    V.append(Jb[has_b])
    J = sp.csr_matrix(
        (
            np.concatenate([v.ravel() for v in V]),
            (np.concatenate([x.ravel() for x in R]), np.concatenate([x.ravel() for x in C])),
        ),
        shape=(nc * r, 6 * nb),
    )
    v_prev = rng.standard_normal(6 * nb)
    f = np.asarray(M @ v_prev)
    b = np.zeros(nc * r)
    b[row_ids[:, 0]] = rng.uniform(-0.05, 0.2, nc)
    return ContactScene(M, f, J, b, rng.uniform(0.2, 0.8, nc), r)


def contact_primal_qp(scene: ContactScene) -> QP:
    """Primal contact QP ``min 1/2 v'Mv - f'v  s.t.  J_n v >= b_n`` (Sueda's notes, eq. (1.79))."""
    n_rows = scene.row_index()[:, 0]
    return QP(scene.M, -scene.f, scene.J[n_rows], scene.b[n_rows], np.full(n_rows.size, INF))


def contact_dual_qp(scene: ContactScene, normal_estimate: float = 1.0) -> QP:
    """Bound-constrained dual with box friction bounds ``|lam_t| <= mu lam_bar_n``.

    The normal impulse estimate ``lam_bar_n`` fixes the friction bounds, so the
    problem is a convex QP (every backend takes it) and a box LCP (PGS takes it):
    ``min 1/2 lam' D lam + c' lam`` with ``lam_n >= 0``.
    """
    D, c = scene.delassus()
    ids = scene.row_index()
    bound = np.repeat(scene.mu * normal_estimate, scene.rows_per_contact).reshape(ids.shape)
    hi = bound.copy()
    hi[:, 0] = INF
    lo = -bound
    lo[:, 0] = 0.0
    n = D.shape[0]
    return QP(D, c, sp.identity(n, format="csc"), lo.ravel(), hi.ravel())


def contact_friction_lcp(scene: ContactScene, cone: str = "box") -> LCP:
    """Delassus LCP with friction blocks: tangent bounds follow the normal impulse."""
    D, c = scene.delassus()
    ids = scene.row_index()
    blocks = FrictionBlocks(ids[:, 0], ids[:, 1:3], scene.mu, cone)  # type: ignore[arg-type]
    lo = np.full(D.shape[0], -INF)
    hi = np.full(D.shape[0], INF)
    lo[ids[:, 0]] = 0.0
    if scene.rows_per_contact == 5:
        lo[ids[:, 3:]] = -0.1
        hi[ids[:, 3:]] = 0.1
    return LCP(D, c, lo, hi, blocks)
