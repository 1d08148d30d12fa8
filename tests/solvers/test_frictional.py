"""Frictional-contact problems: nsgs, apgd and admm against an interior-point SOC solution.

The reference is Clarabel (``cvxpy:clarabel``) on the CCP posed as a QP over
the cones (:func:`solvers.fc_dispatch.to_qp`).  The Coulomb law is not a
convex program; its reference is the fixed point of Clarabel solves of the
CCP with the De Saxcé shift ``s_i = h(u_t,i)`` moved into ``q`` (for a fixed
``s`` the Coulomb conditions are exactly that CCP's, so a fixed point solves
the Coulomb problem).  Velocities ``u = W r + q`` are compared: they are
unique for the CCP even when ``W`` is singular (the gradient of a convex QP
at its minimisers), and the problems here have unique Coulomb solutions
(checked by the agreement of three independent algorithms).

Tolerance: the backends run to a natural-map residual of 1e-10 (relative to
``||q||``, about 3 here); Clarabel to 1e-10 gaps.  Velocities must agree to
1e-6 [m/s], the issue's requirement.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import FrictionalContact, GlobalFrictionalContact, ProblemError, solve
from solvers.fc_dispatch import to_qp
from solvers.frictional import fc_residuals
from solvers.reference import contact_scene

pytest.importorskip("numba")
CASES = [(law, cone) for law in ("ccp", "coulomb") for cone in ("soc", "pyramid", "box")]
BACKENDS = {"ccp": ("nsgs", "apgd", "admm"), "coulomb": ("nsgs", "apgd", "admm")}


def random_problem(law: str, cone: str, seed: int) -> FrictionalContact:
    scene = contact_scene(6, 2.0, rows_per_contact=3, seed=seed)
    W, q = scene.delassus()
    return FrictionalContact(W, q, scene.mu, law=law, cone=cone, directions=6)


def clarabel_reference(problem: FrictionalContact) -> np.ndarray:
    """Clarabel's impulses: the CCP directly, the Coulomb law as a fixed point of CCPs."""
    pytest.importorskip("clarabel")
    ccp = problem.with_law("ccp")
    if problem.law == "ccp":
        return solve(to_qp(ccp), "cvxpy:clarabel", tol=1e-10).x
    nc = problem.nc
    shift = np.zeros(problem.n)
    r = np.zeros(problem.n)
    for _ in range(200):
        shifted = FrictionalContact(ccp.W, ccp.q + shift, ccp.mu, "ccp", ccp.cone, ccp.directions)
        r = solve(to_qp(shifted), "cvxpy:clarabel", tol=1e-10).x
        u = problem.velocity(r)[: 3 * nc].reshape(nc, 3)
        if problem.cone == "soc":
            h = problem.mu * np.linalg.norm(u[:, 1:], axis=1)
        else:
            h = problem.mu * np.max(-(u[:, 1:] @ problem.dirs.T), axis=1)
        new = np.zeros(problem.n)
        new[0 : 3 * nc : 3] = h
        if np.max(np.abs(new - shift)) < 1e-11:
            break
        shift = new
    assert fc_residuals(problem, r)["natural_map"] < 1e-7
    return r


@pytest.mark.parametrize(("law", "cone"), CASES)
def test_backends_agree_with_interior_point(law: str, cone: str) -> None:
    problem = random_problem(law, cone, seed=3)
    u_ref = problem.velocity(clarabel_reference(problem))
    velocities = []
    for name in BACKENDS[law]:
        res = solve(problem, name, tol=1e-10, max_iter=50000)
        assert res.status == "optimal", res.message
        assert res.residuals["natural_map"] <= 1e-10
        np.testing.assert_allclose(res.w, u_ref, atol=1e-6, err_msg=name)
        velocities.append(res.w)
    for other in velocities[1:]:
        np.testing.assert_allclose(other, velocities[0], atol=1e-6)
    # the problem is not trivial: some contacts slide, others stick or take off
    r = solve(problem, "nsgs", tol=1e-10).x.reshape(-1, 3)
    slip = np.linalg.norm(u_ref.reshape(-1, 3)[:, 1:], axis=1)
    sliding = (r[:, 0] > 1e-6) & (slip > 1e-3)
    assert 0 < np.sum(sliding) < problem.nc


def test_ccp_gap_and_coulomb_contact() -> None:
    """The CCP separates sliding contacts by u_n = mu |u_t|; the Coulomb law keeps u_n = 0."""
    problem = random_problem("ccp", "soc", seed=3)
    ccp = solve(problem, "nsgs", tol=1e-12)
    cou = solve(problem.with_law("coulomb"), "nsgs", tol=1e-12)
    for res, law in ((ccp, "ccp"), (cou, "coulomb")):
        U, R = res.w.reshape(-1, 3), res.x.reshape(-1, 3)
        loaded = R[:, 0] > 1e-6
        slip = np.linalg.norm(U[:, 1:], axis=1)
        expected = problem.mu * slip if law == "ccp" else np.zeros_like(slip)
        np.testing.assert_allclose(U[loaded, 0], expected[loaded], atol=1e-9)
    assert np.max(ccp.measures["signorini"]) > 1e-3 > cou.measures["signorini"]


def test_bilateral_rows_in_the_sweep() -> None:
    """Scalar rows: a bilateral row's velocity is zero, a unilateral one complementary."""
    scene = contact_scene(5, 2.0, rows_per_contact=3, seed=7)
    W, q = scene.delassus()
    W = W.toarray()
    n = W.shape[0]
    rng = np.random.default_rng(1)
    B = rng.standard_normal((2, n)) * 0.3
    extra = np.block([[W, W @ B.T], [B @ W, B @ W @ B.T + 0.1 * np.eye(2)]])
    problem = FrictionalContact(
        extra, np.concatenate([q, [0.3, -0.4]]), scene.mu, "coulomb", row_lo=[-np.inf, 0.0]
    )
    ref = None
    for name in ("nsgs", "admm"):
        res = solve(problem, name, tol=1e-10)
        assert res.success, res.message
        assert abs(res.w[-2]) < 1e-9
        assert min(res.x[-1], res.w[-1]) > -1e-9 and abs(res.x[-1] * res.w[-1]) < 1e-9
        ref = res.w if ref is None else ref
        np.testing.assert_allclose(res.w, ref, atol=1e-6)


def test_global_form_reduces_to_local() -> None:
    scene = contact_scene(4, 2.0, rows_per_contact=3, seed=5)
    glob = GlobalFrictionalContact(scene.M, scene.J.T, scene.f, -scene.b, scene.mu, law="ccp")
    res = solve(glob, "nsgs", tol=1e-10)
    assert res.success and res.conversions[0].startswith("global")
    W, q = scene.delassus()
    local = FrictionalContact(W, q, scene.mu, law="ccp")
    np.testing.assert_allclose(res.w, local.velocity(res.x), atol=1e-9)
    v = glob.velocity(res.x)
    np.testing.assert_allclose(scene.J @ v - scene.b, res.w, atol=1e-9)


def test_capped_run_is_max_iterations() -> None:
    problem = random_problem("coulomb", "soc", seed=3)
    for name in ("nsgs", "admm"):
        res = solve(problem, name, tol=1e-14, max_iter=2)
        assert res.status == "max_iterations" and res.iterations == 2


def test_conversions_to_qp_and_lcp() -> None:
    """The CCP reaches QP backends, the Coulomb box law PGS (friction blocks), and say so."""
    ccp = random_problem("ccp", "pyramid", seed=4)
    ref = solve(ccp, "nsgs", tol=1e-10)
    via_qp = solve(ccp, "cvxpy:clarabel", tol=1e-10)
    assert "qp with edge rows" in via_qp.conversions[0]
    np.testing.assert_allclose(via_qp.w, ref.w, atol=1e-6)
    cou = random_problem("coulomb", "box", seed=4)
    via_lcp = solve(cou, "pgs", tol=1e-9, max_iter=200000)
    assert "lcp with friction blocks" in via_lcp.conversions[0]
    np.testing.assert_allclose(via_lcp.w, solve(cou, "nsgs", tol=1e-10).w, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"mu": [0.5, -0.1]}, "mu.*negative"),
        ({"q": [0.0] * 5 + [np.nan]}, "q: contains NaN"),
        ({"q": [0.0] * 5}, "3 per contact"),
        ({"law": "signorini"}, "law: must be one of"),
        ({"cone": "disc"}, "cone: must be one of"),
        ({"W": np.eye(6) + np.triu(np.ones((6, 6)), 1)}, "W: must be symmetric"),
    ],
)
def test_bad_input_one_clear_error(kwargs: dict, match: str) -> None:
    args = {"W": np.eye(6), "q": np.zeros(6), "mu": [0.5, 0.5]}
    args.update(kwargs)
    with pytest.raises(ProblemError, match=match):
        FrictionalContact(**args)


def stored_pile(law: str) -> tuple[FrictionalContact, np.ndarray]:
    """A step problem of a landed 10-box pile (41 contacts) and its warm start.

    Captured from ``box-pile`` (n = 10, h = 5 ms) after 2 s of landing, on the
    third step of the ``coulomb`` model by ``nsgs``; the warm start is the
    previous step's impulses carried over per persistent contact.
    """
    d = np.load(Path(__file__).parent / "data" / "pile_fc.npz")
    n = d["q"].size
    W = sp.csr_matrix((d["W_data"], d["W_indices"], d["W_indptr"]), shape=(n, n))
    return FrictionalContact(W, d["q"], d["mu"], law=law, row_lo=d["row_lo"]), d["warm"]


def test_pile_step_backends_agree_with_interior_point() -> None:
    """On the resting pile all three agree with Clarabel's CCP and, nothing sliding, with
    each other on the Coulomb law (velocities within 1e-6 m/s).

    Gauss--Seidel converges slowly on the pile's redundant contacts (1.2e-7 after
    1e5 sweeps, measured), so nsgs is asked for 1e-6 (its declared accuracy;
    ``||q||_2`` = 0.29 m/s, so 2.9e-7 m/s absolute), the others for 1e-9.
    """
    ccp, _ = stored_pile("ccp")
    u_ref = ccp.velocity(clarabel_reference(ccp))
    tols = {"nsgs": 1e-6, "apgd": 1e-9, "admm": 1e-9}
    for name in BACKENDS["ccp"]:
        res = solve(ccp, name, tol=tols[name], max_iter=100000)
        assert res.success, res.message
        np.testing.assert_allclose(res.w, u_ref, atol=1e-6, err_msg=name)
    cou, _ = stored_pile("coulomb")
    ref = solve(cou, "nsgs", tol=1e-6, max_iter=100000)
    assert ref.success, ref.message
    np.testing.assert_allclose(ref.w, u_ref, atol=1e-6)
    for name in ("admm", "apgd"):
        other = solve(cou, name, tol=1e-9, max_iter=100000)
        assert other.success, other.message
        np.testing.assert_allclose(other.w, ref.w, atol=1e-6, err_msg=name)


def test_warm_start_on_a_pile_at_rest_takes_a_handful_of_sweeps() -> None:
    """Re-solved from the previous step's impulses: 3 sweeps (cold: 91, measured)."""
    cou, warm = stored_pile("coulomb")
    hot = solve(cou, "nsgs", tol=1e-6, warm_start=warm)
    cold = solve(cou, "nsgs", tol=1e-6)
    assert hot.success and cold.success
    assert hot.iterations <= 5 < 20 <= cold.iterations
    np.testing.assert_allclose(hot.w, cold.w, atol=1e-5)


def test_problem_given_by_its_factor_only() -> None:
    """``W = None`` with ``factor = (C, d)``: ``W r + q``, ``diag W`` and the lazily formed
    ``W`` equal ``C diag(d) C'`` computed densely (rounding only: 1e-13 relative); an
    ``ipm`` solve of it matches the solve of the same problem with ``W`` given."""
    rng = np.random.default_rng(3)
    nc, nv = 4, 18
    C = sp.random(3 * nc + 1, nv, density=0.4, random_state=rng, format="csr")
    C = (C + sp.eye(3 * nc + 1, nv, format="csr")).tocsr()  # every row touches a body
    d = rng.uniform(0.5, 2.0, nv)
    Wd = C.toarray() @ np.diag(d) @ C.toarray().T
    q = rng.normal(size=3 * nc + 1)
    q[0 : 3 * nc : 3] = -np.abs(q[0 : 3 * nc : 3])
    mu = np.full(nc, 0.5)
    lazy = FrictionalContact(None, q, mu, "ccp", "soc", row_lo=[0.0], factor=(C, d))
    full = FrictionalContact(Wd, q, mu, "ccp", "soc", row_lo=[0.0], factor=(C, d))
    r = rng.normal(size=3 * nc + 1)
    scale = np.abs(Wd).max()
    assert np.abs(lazy.velocity(r) - (Wd @ r + q)).max() <= 1e-13 * scale * np.abs(r).sum()
    assert np.abs(lazy.diagonal() - np.diag(Wd)).max() <= 1e-13 * scale
    x_lazy = solve(lazy, "ipm", tol=1e-10).x
    x_full = solve(full, "ipm", tol=1e-10).x
    assert np.abs(lazy.velocity(x_lazy) - full.velocity(x_full)).max() <= 1e-8
    assert np.abs(lazy.W.toarray() - Wd).max() <= 1e-13 * scale
    with pytest.raises(ProblemError, match="factor"):
        FrictionalContact(None, q, mu, "ccp", "soc", row_lo=[0.0])
