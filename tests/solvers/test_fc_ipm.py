"""The ``ipm`` frictional-contact backend (interior point on the velocity form).

Facts: on random problems of each law and cone and on pile step problems it
agrees with Clarabel's interior-point SOC solution in contact velocities to
1e-6 m/s (the issue's requirement; the velocities of the CCP are unique even
when ``W`` is singular); the factor it works on reproduces ``W``; its
iteration count on a pile step stays in the tens (Mehrotra's
predictor-corrector: independent of the conditioning that makes first-order
methods take thousands); box friction at 1e-6 through it has no capped step
in a pile's landing transient.  The Coulomb law's fixed point on De Saxcé's
shift: Newton's, Anderson's and the plain iteration reach the same solution
(Clarabel's, to 1e-6 m/s), Newton's in at most half the plain iteration's
rounds on a pile step, and a stored 100-box box-law step on which the plain
iteration cycles converges.  Its warm start from the previous step's impulses: on a
pile at rest none (1e-6) or 2 rounds (1e-8, cold 9), and the same velocities as the
cold start (1e-6 m/s) where the law's solution is unique.  Clarabel references and the
random problems are those of ``test_frictional.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from test_frictional import CASES, clarabel_reference, random_problem, stored_pile

from benchmarks.bench_friction import posed_problems
from contactlab.collision import collide
from contactlab.models.fc_route import local_step
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator
from solvers import IncompatibleProblem, ProblemError, solve
from solvers.frictional import FrictionalContact, fc_residuals

pytest.importorskip("numba")
pytest.importorskip("qdldl")


@pytest.mark.parametrize(("law", "cone"), CASES)
def test_ipm_agrees_with_clarabel_on_random_problems(law: str, cone: str) -> None:
    """Natural map 1e-8 (relative to ||q||, about 3): velocities within 1e-6 m/s."""
    problem = random_problem(law, cone, seed=3)
    u_ref = problem.velocity(clarabel_reference(problem))
    res = solve(problem, "ipm", tol=1e-8)
    assert res.status == "optimal", res.message
    assert res.residuals["natural_map"] <= 1e-8
    np.testing.assert_allclose(res.w, u_ref, atol=1e-6)
    if law == "ccp":
        # Mehrotra's method: tens of iterations, not thousands (measured 10-17, plus 32
        # Gauss-Seidel sweeps finishing the exact cone's run, which stalls at 2.9e-7)
        assert res.iterations <= 60


def test_ipm_on_the_stored_pile_step() -> None:
    """The 10-box pile step of ``test_frictional`` (no factor: the eigendecomposition path)."""
    ccp, _ = stored_pile("ccp")
    u_ref = ccp.velocity(clarabel_reference(ccp))
    res = solve(ccp, "ipm", tol=1e-8)
    assert res.status == "optimal", res.message
    np.testing.assert_allclose(res.w, u_ref, atol=1e-6)
    cou, _ = stored_pile("coulomb")
    ref = solve(cou, "nsgs", tol=1e-6, max_iter=100000)
    other = solve(cou, "ipm", tol=1e-8)
    assert ref.success and other.status == "optimal", other.message
    np.testing.assert_allclose(other.w, ref.w, atol=1e-6)


@pytest.fixture(scope="module")
def landing_pile() -> tuple:
    """A 12-box pile 0.3 s after its drop (box friction by PGS): boxes still settling."""
    scene = get_scenario("box-pile").build(n=12)
    sim = Simulator(scene, "maximal", "box-friction", "pgs", dt=0.005)
    state = sim.initial_state()
    for i in range(60):
        state, _ = sim.step(state, i)
    return scene, sim, state


def test_ipm_on_a_pile_step_with_the_factor(landing_pile: tuple) -> None:
    """The step's own factor ``W = C M^-1 C'`` (to round-off), and Clarabel's velocities."""
    scene, sim, state = landing_pile
    problem = sim.formulation.assemble(state, 0.005, collide(scene, state.E))
    assert problem.n_contacts > 12
    for cone in ("soc", "pyramid"):
        fc = local_step(problem, "ccp", cone, 4, factor=True).fc
        C, d = fc.factor
        W = fc.W.toarray()
        assert np.max(np.abs((C.toarray() * d) @ C.toarray().T - W)) <= 1e-12 * np.abs(W).max()
        u_ref = fc.velocity(clarabel_reference(fc))
        res = solve(fc, "ipm", tol=1e-8)
        assert res.status == "optimal", res.message
        assert res.iterations <= 60
        np.testing.assert_allclose(res.w, u_ref, atol=1e-6, err_msg=cone)


def test_box_friction_at_1e6_has_no_capped_step_in_the_landing_transient(
    landing_pile: tuple,
) -> None:
    """Ten steps of the settling pile, box friction at natural map 1e-6 through ``ipm``."""
    scene, _, state = landing_pile
    sim = Simulator(
        scene, "maximal", "box-friction", "ipm", dt=0.005, model_options={"solver_tol": 1e-6}
    )
    for i in range(10):
        state, record = sim.step(state, i)
        assert record.solution.status == "optimal", (i, record.solution.status)


def test_ipm_bilateral_and_unilateral_scalar_rows() -> None:
    """Scalar rows share the problem (a joint's bilateral rows in a quasi-definite border of
    the normal matrix): the same velocities as nsgs run to 1e-10, within 1e-6 m/s."""
    rng = np.random.default_rng(2)
    nc, ms, nv = 5, 3, 30
    C = rng.normal(size=(3 * nc + ms, nv))
    q = rng.normal(size=3 * nc + ms)
    lo = [-np.inf, 0.0, -np.inf]
    for law in ("ccp", "coulomb"):
        p = FrictionalContact(C @ C.T, q, np.full(nc, 0.5), law, "soc", row_lo=lo)
        res = solve(p, "ipm", tol=1e-9)
        ref = solve(p, "nsgs", tol=1e-10, max_iter=200000)
        assert res.status == "optimal" and ref.status == "optimal", res.message
        np.testing.assert_allclose(res.w, ref.w, atol=1e-6)
        assert np.max(np.abs(res.w[3 * nc :][[0, 2]])) <= 1e-8  # bilateral rows: u = 0


def test_ipm_on_a_step_without_contacts_returns_no_impulse() -> None:
    """A step before anything touches poses a problem with no rows (the first steps of a
    dropped pile): both laws return the empty impulse as solved, with the factor or without
    it, and without a numerical warning (a mean of the empty diagonal once warned)."""
    import warnings

    C, d = sp.csr_matrix((0, 12)), np.ones(12)
    for law in ("ccp", "coulomb"):
        for p in (
            FrictionalContact(np.zeros((0, 0)), np.zeros(0), np.zeros(0), law, "soc"),
            FrictionalContact(None, np.zeros(0), np.zeros(0), law, "soc", factor=(C, d)),
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                res = solve(p, "ipm")
            assert res.status == "optimal" and res.x.shape == (0,), res.message


def test_ipm_refuses_a_large_w_without_its_factor() -> None:
    """One clear error naming the way out."""
    big = FrictionalContact(np.eye(603), np.ones(603), np.full(201, 0.5), "ccp", "soc")
    with pytest.raises(IncompatibleProblem, match="factor"):
        solve(big, "ipm")


def test_normal_pattern_matches_sorted_keys() -> None:
    """The compiled CSC pattern of ``K`` (per-column marking) equals the sorted unique keys
    ``col * size + row`` of every block's column pairs and of the bilateral border, and each
    slot points at its own key (an independent construction by ``np.unique``)."""
    import scipy.sparse as sp

    from solvers.backends.ipm_patterns import block_columns, normal_pattern, pattern_keys

    rng = np.random.default_rng(5)
    nv, nblk, mb = 40, 15, 3
    Ch = sp.random(3 * nblk, nv, density=0.12, random_state=rng, format="csr")
    Ch.sort_indices()
    Gb = sp.random(mb, nv, density=0.2, random_state=rng, format="csr")
    Gb.sort_indices()
    gptr = np.arange(0, 3 * nblk + 1, 3, dtype=np.int64)
    cptr, cols, _, _ = block_columns(
        gptr, Ch.indptr.astype(np.int64), Ch.indices.astype(np.int64), Ch.data, nv
    )
    size = nv + mb
    keys = pattern_keys(cptr, cols, nv, size)
    Gc = Gb.tocoo()
    extra = np.concatenate(
        [(nv + Gc.row) * size + Gc.col, (nv + np.arange(mb)) * size + nv + np.arange(mb)]
    )
    ukeys, inverse = np.unique(np.concatenate([keys, extra]), return_inverse=True)
    colptr, rows, slot, extra_slot = normal_pattern(
        cptr, cols, nv, Gb.indptr.astype(np.int64), Gb.indices.astype(np.int64)
    )
    col = np.repeat(np.arange(size), np.diff(colptr))
    np.testing.assert_array_equal(col * size + rows, ukeys)
    np.testing.assert_array_equal(slot, inverse[: keys.size])
    np.testing.assert_array_equal(extra_slot, inverse[keys.size :])


def test_exact_cone_lift_selects_rows_like_the_sparse_products() -> None:
    """For the exact cone ``Ĉ = T'C``, the bilateral rows ``E C``, ``T``, ``E`` and the lifted
    free velocity by row selection equal the general sparse-product construction exactly
    (each entry is one product: no rounding difference)."""
    import scipy.sparse as sp

    from solvers.backends.fc_ipm import VelocityForm, _lift, _select_soc

    rng = np.random.default_rng(11)
    nc, nv = 5, 24
    row_lo = np.array([0.0, -np.inf, 0.0])
    n = 3 * nc + row_lo.size
    C = sp.random(n, nv, density=0.3, random_state=rng, format="csr")
    C = (C + sp.eye(n, nv, format="csr")).tocsr()
    C.sort_indices()
    d = rng.uniform(0.5, 2.0, nv)
    q = rng.normal(size=n)
    mu = rng.uniform(0.1, 1.0, nc)
    fc = FrictionalContact(None, q, mu, "ccp", "soc", row_lo=row_lo, factor=(C, d))
    Ch0, wh0, bptr0, Tt0, (gptr0, gsoc0), _, E = _lift(fc, C, q)
    Ch, Gb, Tt, Et, bptr, (gptr, gsoc), _ = _select_soc(fc, C)
    assert abs(Ch - Ch0).max() == 0.0 and Ch.shape == Ch0.shape
    assert abs(Gb - E @ C).max() == 0.0 and abs(Tt - Tt0).max() == 0.0
    assert abs(Et - E.T).max() == 0.0
    np.testing.assert_array_equal(bptr, bptr0)
    np.testing.assert_array_equal(gptr, gptr0)
    np.testing.assert_array_equal(gsoc, gsoc0)
    wh, wb = VelocityForm(fc, C, d).lift(q)
    np.testing.assert_array_equal(wh, wh0)
    np.testing.assert_array_equal(wb, E @ q)


@pytest.fixture(scope="module")
def resting_pile_steps() -> dict[str, list]:
    """Per cone, ``(problem, warm start)`` of three steps of a 30-box pile stacked at rest.

    ``anitescu-hart`` by ``ipm`` (288 contacts, four on every face); the warm start is
    what the model passes: the previous step's impulses per persistent contact.
    """
    scene = get_scenario("box-pile").build(n=30, layout="stacked")
    out: dict[str, list] = {}
    for cone, options in (("soc", {"cone": "soc"}), ("pyramid", {"directions": 4})):
        sim = Simulator(scene, "maximal", "anitescu-hart", "ipm", dt=0.005,
                        model_options={**options, "solver_tol": 1e-6})  # fmt: skip
        out[cone] = posed_problems(sim, sim.initial_state(), 3)
    return out


def test_ipm_warm_start_on_a_pile_at_rest(resting_pile_steps: dict) -> None:
    """Re-solved from the previous step's impulses, a step of the pile at rest takes a
    handful of interior-point iterations: exact cone at 1e-6 none (the impulses already
    meet it; cold: 6, measured), at 1e-7 2 (cold 6); pyramid at 1e-6 2 (cold 6).

    The velocities of the CCP are unique (redundant contacts leave the impulses free):
    warm and cold solutions, each within natural map 1e-7 of ``||q||`` = 0.39 m/s, agree
    to 4e-8 m/s (measured 1.6e-9).
    """
    for cone, tol in (("soc", 1e-6), ("soc", 1e-7), ("pyramid", 1e-6)):
        problem, warm = resting_pile_steps[cone][-1]
        assert warm is not None and problem.nc == 288
        hot = solve(problem, "ipm", tol=tol, warm_start=warm)
        cold = solve(problem, "ipm", tol=tol)
        assert hot.status == "optimal" and cold.status == "optimal", hot.message
        assert hot.iterations <= 3 < 5 <= cold.iterations, (cone, tol, hot.message)
        if tol == 1e-7:
            np.testing.assert_allclose(hot.w, cold.w, atol=4e-8)


def test_ipm_interior_point_of_impulses_is_feasible(resting_pile_steps: dict) -> None:
    """:meth:`VelocityForm.impulse_point` with no push: ``v = D C'r``, ``s = Ĉv + ŵ`` (primal
    feasible; a block outside its cone moved onto it along ``e``), and the multipliers
    reproduce the impulses,
    ``T z + E'y = r``, and the dual equation ``D^-1 v = Ĉ'z + Gb'y`` (exact cone:
    ``z = diag(1, mu, mu)^-1 r``; pyramid: the least-norm generator multipliers, all
    positive for impulses well inside the cone).  Rounding only: 1e-12 relative."""
    import scipy.sparse as sp

    from solvers.backends.fc_ipm import VelocityForm

    for cone in ("soc", "pyramid"):
        problem, _ = resting_pile_steps[cone][-1]
        C, d = problem.factor
        C = sp.csr_matrix(C)
        form = VelocityForm(problem, C, d)
        r = np.zeros(problem.n)
        rng = np.random.default_rng(4)
        r[0 : 3 * problem.nc : 3] = rng.uniform(0.5, 1.0, problem.nc)
        for k in (1, 2):  # tangential within a tenth of the friction bound
            r[k : 3 * problem.nc : 3] = 0.1 * problem.mu * r[0::3] * rng.uniform(-1, 1, problem.nc)
        v, s, z, y = form.impulse_point(r, problem.q, 0.0)
        scale = np.abs(r).max()
        back = form.Tt @ z + (form.Et @ y if y.size else 0.0)
        assert np.abs(back - r).max() <= 1e-12 * scale, cone
        np.testing.assert_allclose(v, d * (C.T @ r), rtol=0, atol=1e-12 * np.abs(v).max())
        # s: Ĉv + ŵ, each block moved along e onto its cone's boundary if outside it
        wh, _ = form.lift(problem.q)
        x = form.Ch @ v + wh
        start, size = form.bptr[:-1], np.diff(form.bptr)
        tail = np.zeros(start.size)
        for k in (1, 2):
            on = size > k
            tail[on] += x[start[on] + k] ** 2
        expected = x.copy()
        expected[start] += np.maximum(0.0, np.sqrt(tail) - x[start])
        assert np.abs(s - expected).max() <= 1e-12 * np.abs(x).max(), cone
        dual = v / d - form.Ch.T @ z - (form.Gb.T @ y if y.size else 0.0)
        assert np.abs(dual).max() <= 1e-12 * np.abs(v / d).max(), cone


def test_ipm_reuses_the_symbolic_analysis_of_an_unchanged_contact_graph(
    resting_pile_steps: dict,
) -> None:
    """Two steps of the resting pile have one contact graph: the second solve reuses the
    first's pattern and LDL' ordering, and its solution equals a solve from scratch
    (the same arithmetic: exactly)."""
    from solvers.backends import fc_ipm

    (p1, _), (p2, _) = resting_pile_steps["soc"][1:3]
    fc_ipm._SYMBOLIC.clear()
    fresh = solve(p2, "ipm", tol=1e-7)
    solve(p1, "ipm", tol=1e-7)
    solver = fc_ipm._SYMBOLIC["last"][1]
    reused = solve(p2, "ipm", tol=1e-7)
    assert fc_ipm._SYMBOLIC["last"][1] is solver  # the same graph: no new analysis
    assert reused.iterations == fresh.iterations
    np.testing.assert_array_equal(reused.x, fresh.x)


def test_block_cholesky_solves_a_pile_normal_matrix(resting_pile_steps: dict) -> None:
    """The 6x6-block Cholesky of a pile step's normal matrix ``K = M + Ĉ'ΘĈ`` (30 bodies,
    180 unknowns; per contact a Nesterov--Todd-like ``Θ = 2 Jw (Jw)' - J``, ``w`` random
    on the unit hyperboloid) solves ``K x = b`` as scipy's sparse LU does, to 1e-12
    relative (two direct methods' rounding; condition numbers 8e3 and 1.4e4, measured);
    refactored with ``Θ`` a thousand times larger in the same pattern, likewise."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import spsolve

    from solvers.backends.block_cholesky import BlockCholesky
    from solvers.backends.fc_ipm import VelocityForm

    problem, _ = resting_pile_steps["soc"][-1]
    C, d = problem.factor
    normal = VelocityForm(problem, sp.csr_matrix(C), d).normal
    assert normal.by_blocks and normal.size == 180
    rng = np.random.default_rng(8)
    chol = None
    for scale in (1.0, 1e3):
        theta = np.zeros(normal.bptr.size * 9 - 9)
        # a Lorentz-scaling Θ per block: 2 w w' - J over η², w inside the cone
        w = rng.normal(size=(normal.bptr.size - 1, 3)) * 0.3
        w[:, 0] = np.sqrt(1.0 + (w[:, 1:] ** 2).sum(axis=1))
        J = np.diag([1.0, -1.0, -1.0])
        Jw = w @ J
        blocks = (2.0 * Jw[:, :, None] * Jw[:, None, :] - J) * scale
        theta[:] = blocks.reshape(-1)
        normal.factor(theta)
        K = sp.csc_matrix(normal.K)
        full = (K + sp.triu(K, 1).T).tocsc()
        b = rng.normal(size=normal.size)
        if chol is None:
            chol = BlockCholesky(K.indptr, K.indices, 6)
        chol.factor(K.data)
        x = chol.solve(b)
        ref = spsolve(full, b)
        assert np.abs(x - ref).max() <= 1e-12 * np.abs(ref).max()
        np.testing.assert_allclose(normal.solve(b), ref, rtol=0, atol=1e-12 * np.abs(ref).max())


def test_ipm_block_cholesky_and_qdldl_agree(resting_pile_steps: dict) -> None:
    """The same solve with the normal matrix factored by blocks or by qdldl's scalar LDL':
    both meet 1e-7 by the layer's own natural map, with velocities within 1e-5 m/s (the
    CCP's velocities are unique; an interior iterate at natural map 1e-6 was 2.8e-5 m/s
    off on a three-cube step; measured here: the same iterations, 1e-12 m/s apart, but two
    direct solvers' rounding may move the stop by an iteration)."""
    from solvers.backends import fc_ipm

    for cone in ("soc", "pyramid"):
        problem, _ = resting_pile_steps[cone][-1]
        blocked = solve(problem, "ipm", tol=1e-7)
        fc_ipm.Normal.blocked = False
        try:
            scalar = solve(problem, "ipm", tol=1e-7)
        finally:
            fc_ipm.Normal.blocked = True
        for res in (blocked, scalar):
            assert res.status == "optimal", (cone, res.message)
            assert fc_residuals(problem, res.x)["natural_map"] <= 1e-7, cone
        np.testing.assert_allclose(blocked.w, scalar.w, rtol=0, atol=1e-5)


def _rounds(res) -> int:  # type: ignore[no-untyped-def]
    """The fixed-point rounds ``ipm`` reports for the Coulomb law."""
    found = re.search(r"in (\d+) fixed-point rounds", res.message)
    assert found is not None, res.message
    return int(found.group(1))


@pytest.mark.parametrize("cone", ["soc", "pyramid", "box"])
def test_fixed_point_methods_agree_with_clarabel(cone: str) -> None:
    """Newton's steps, Anderson's mixing and the relaxed plain iteration on De Saxcé's shift
    solve the same Coulomb problem: at natural map 1e-8 each one's velocities lie within
    1e-6 m/s of Clarabel's fixed point of CCPs (measured: 2e-7 and below)."""
    problem = random_problem("coulomb", cone, seed=3)
    u_ref = problem.velocity(clarabel_reference(problem))
    for method in ("newton", "anderson", "none"):
        res = solve(problem, "ipm", tol=1e-8, acceleration=method)
        assert res.status == "optimal", (method, res.message)
        np.testing.assert_allclose(res.w, u_ref, atol=1e-6, err_msg=method)


def test_newton_fixed_point_takes_fewer_rounds_on_a_pile_step(landing_pile: tuple) -> None:
    """The 12-box landing step (30 contacts), exact cone, natural map 1e-8: Newton's steps on
    the shift take 8 rounds where the relaxed plain iteration takes 24 (measured); at most
    half, and the two solutions' velocities agree to 1e-6 m/s (measured 2e-8)."""
    scene, sim, state = landing_pile
    problem = sim.formulation.assemble(state, 0.005, collide(scene, state.E))
    fc = local_step(problem, "coulomb", "soc", 4, factor=True).fc
    plain = solve(fc, "ipm", tol=1e-8, acceleration="none")
    newton = solve(fc, "ipm", tol=1e-8)
    assert plain.status == "optimal", plain.message
    assert newton.status == "optimal", newton.message
    assert 2 * _rounds(newton) <= _rounds(plain), (newton.message, plain.message)
    np.testing.assert_allclose(newton.w, plain.w, atol=1e-6)


def stored_box_step() -> FrictionalContact:
    """A box-law step of the landed 100-box pile (493 contacts) with its factor ``(C, M^-1)``.

    Captured from ``box-pile`` (n = 100, h = 5 ms, landed for 2 s with PGS), the tenth
    step of ``box-friction`` by ``ipm`` (Anderson's fixed point) at natural map 1e-6.
    """
    d = np.load(Path(__file__).parent / "data" / "pile100_box_step.npz")
    shape = tuple(int(k) for k in d["C_shape"])
    C = sp.csr_matrix((d["C_data"], d["C_indices"], d["C_indptr"]), shape=shape)
    return FrictionalContact(
        None, d["q"], d["mu"], law="coulomb", cone="box", row_lo=d["row_lo"], factor=(C, d["d"])
    )


def test_box_law_step_on_which_the_plain_fixed_point_cycles_converges() -> None:
    """The relaxed plain iteration (without the semismooth Newton finish, ``newton=0``,
    which would finish it: ``test_fc_newton``) reports the truth about its iterate on its
    500-iteration budget: ``optimal`` exactly when the layer's own natural map is within
    1e-6 (measured: capped at 1.5e-5 after 166 rounds, its update halved while the residual
    alternates); Anderson's mixing, the box law's default, converges (28 rounds, measured),
    judged by the layer's own natural map of the returned impulses (``fc_residuals``), not
    the backend's."""
    fc = stored_box_step()
    plain = solve(fc, "ipm", tol=1e-6, acceleration="none", newton=0, max_iter=500)
    met = fc_residuals(fc, plain.x)["natural_map"] <= 1e-6
    assert plain.status == ("optimal" if met else "max_iterations"), plain.message
    res = solve(fc, "ipm", tol=1e-6)
    assert res.status == "optimal", res.message
    assert fc_residuals(fc, res.x)["natural_map"] <= 1e-6


def test_ipm_names_an_unknown_fixed_point_method() -> None:
    problem = random_problem("coulomb", "soc", seed=3)
    with pytest.raises(ProblemError, match="acceleration"):
        solve(problem, "ipm", acceleration="secant")
    with pytest.raises(ProblemError, match="memory"):
        solve(problem, "ipm", memory=0)


@pytest.mark.parametrize(("cone", "seed"), [("box", 3), ("soc", 5)])
def test_newton_linearisation_matches_finite_differences(cone: str, seed: int) -> None:
    """``J w`` of Newton's steps (``d h(u_t(x)) / dx`` through the interior point's Newton
    system at its last iterate) against ``(h(u_t(x + eps w)) - h(u_t(x))) / eps`` with both
    CCPs solved from scratch to natural map 1e-11, at the Coulomb solution's shift,
    ``eps = 1e-5``: within 10 % of the largest entry (measured 3.5 % on the box, 5.3 % on
    the exact cone, where the CCP stalls near 1e-8 and the difference quotient carries
    that error over ``eps``)."""
    from solvers.backends.fc_ipm import VelocityForm, eig_factor, ipm_ccp
    from solvers.backends.friction import IPMBackend
    from solvers.numerics.fc_kernels import matvec, natural_map, support_shift

    problem = random_problem("coulomb", cone, seed=seed)
    nc, n, kind = problem.nc, problem.n, 0 if cone == "soc" else 1
    nrm = np.arange(0, 3 * nc, 3)
    W = problem.W
    ptr, idx = W.indptr.astype(np.int64), W.indices.astype(np.int64)
    Cd, d = eig_factor(W.toarray())
    C = sp.csr_matrix(Cd)

    def shift(u: np.ndarray) -> np.ndarray:
        out = problem.q.copy()
        support_shift(kind, problem.mu, problem.dirs, nc, problem.q, u, out)
        return out[nrm] - problem.q[nrm]

    def ccp(x: np.ndarray) -> tuple:
        form = VelocityForm(problem, C, d)
        qs = problem.q.copy()
        qs[nrm] += x
        u = np.empty(n)

        def inner(r: np.ndarray) -> tuple[float, np.ndarray]:
            matvec(ptr, idx, W.data, r, qs, u)
            args = (problem.mu, problem.dirs, problem.row_lo, nc, r, u, np.linalg.norm(qs))
            return float(natural_map(0, kind, *args)), u

        r = ipm_ccp(form, qs, 1e-11, 200, inner)[0]
        matvec(ptr, idx, W.data, r, problem.q, u)
        return form, u.copy()

    x = shift(solve(problem, "ipm", tol=1e-9).w)
    form, u0 = ccp(x)
    jvp = IPMBackend()._linearise(form, problem, C, kind, u0)  # w -> (I - J) w
    w = np.random.default_rng(0).standard_normal(nc)
    eps = 1e-5
    fd = (shift(ccp(x + eps * w)[1]) - shift(u0)) / eps
    assert np.abs((w - jvp(w)) - fd).max() <= 0.1 * np.abs(fd).max()


def test_ipm_warm_start_with_scalar_rows_and_far_from_the_solution() -> None:
    """A random 5-contact problem with bilateral and unilateral rows: from the solution
    perturbed by 1e-3 (natural map 1e-2 to 3e-2) the warm start converges to the same
    velocities (1e-7 m/s: both within natural map 1e-9 of ||q|| = 3.7; measured 4e-8;
    iterations exact cone 17 against 16 cold, pyramid 5 against 8: the systematic gain
    is on piles, above); perturbed by 0.1 (natural map 1.7 and 3.1, above ``warm_limit``
    = 0.1) it is not used: the cold run, exactly."""
    rng = np.random.default_rng(2)
    nc, ms, nv = 5, 3, 30
    C = rng.normal(size=(3 * nc + ms, nv))
    q = rng.normal(size=3 * nc + ms)
    for cone in ("soc", "pyramid"):
        lo = [-np.inf, 0.0, -np.inf]
        p = FrictionalContact(C @ C.T, q, np.full(nc, 0.5), "ccp", cone, row_lo=lo)
        cold = solve(p, "ipm", tol=1e-9)
        near = solve(p, "ipm", tol=1e-9, warm_start=cold.x + 1e-3 * rng.normal(size=cold.x.size))
        far = solve(p, "ipm", tol=1e-9, warm_start=cold.x + 0.1 * rng.normal(size=cold.x.size))
        assert cold.status == near.status == far.status == "optimal", cone
        np.testing.assert_allclose(near.w, cold.w, rtol=0, atol=1e-7)
        assert far.iterations == cold.iterations
        np.testing.assert_array_equal(far.x, cold.x)


def coulomb_steps(scene, state, steps: int) -> list:  # type: ignore[no-untyped-def]
    """``(problem, warm start)`` of ``steps`` steps of ``coulomb`` by ``ipm`` from ``state``
    (the warm start is what the model passes: the previous step's impulses)."""
    sim = Simulator(scene, "maximal", "coulomb", "ipm", dt=0.005,
                    model_options={"solver_tol": 1e-6})  # fmt: skip
    return posed_problems(sim, state, steps)


def test_coulomb_warm_start_on_a_pile_at_rest() -> None:
    """The 30-box pile stacked at rest (288 contacts), ``coulomb`` (exact cone): re-solved
    from the previous step's impulses, at natural map 1e-6 the impulses already meet the
    tolerance (returned, no iteration; cold: 41-45 iterations in 7 rounds, measured); at
    1e-8 the fixed point starts from them (De Saxcé's shift of their velocities, the
    first CCP from their interior point): 2 rounds, 40-41 iterations against 9 rounds,
    79-85 cold.  Asserted: none at 1e-6, at most 3 rounds and two thirds of the cold
    iterations at 1e-8.  Both solutions' velocities agree to 1e-6 m/s (measured 5e-8 at
    1e-6, 1.7e-9 at 1e-8)."""
    scene = get_scenario("box-pile").build(n=30, layout="stacked")
    state = Simulator(scene, "maximal", "frictionless", "pgs").initial_state()
    problem, warm = coulomb_steps(scene, state, 3)[-1]
    assert warm is not None and problem.nc == 288
    for tol in (1e-6, 1e-8):
        hot = solve(problem, "ipm", tol=tol, warm_start=warm)
        cold = solve(problem, "ipm", tol=tol)
        assert hot.status == "optimal" and cold.status == "optimal", hot.message
        np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)
        if tol == 1e-6:
            assert hot.iterations == 0 and "converged at the warm start" in hot.message
            assert cold.iterations > 0
        else:
            assert _rounds(hot) <= 3 < _rounds(cold), (hot.message, cold.message)
            assert 3 * hot.iterations <= 2 * cold.iterations, (hot.message, cold.message)


def test_coulomb_warm_start_on_a_settling_pile_step(landing_pile: tuple) -> None:
    """The 12-box landing pile, ``coulomb`` (exact cone), its second step (31 contacts):
    warm-started and cold solves at natural map 1e-8 reach the same velocities within
    1e-6 m/s (measured 1.3e-9; 9 rounds each: the warm start's gain is on larger piles,
    ten landed 200-box steps 35 iterations median against 52).

    The next step shows why agreement is asserted only where the law's solution is
    unique: there the two runs return two Coulomb solutions (natural maps 3.9e-9 and
    4.4e-10 by the solver layer's own measure, each accepted by ``nsgs`` at 1e-8 as it is)
    whose velocities differ by 4.2e-3 m/s: a sliding box's load shared differently
    among its redundant corner contacts (normal impulse 1.3e-2 against 7e-6 N s on
    one).  Asserted there: both meet the tolerance."""
    scene, _, state = landing_pile
    posed = coulomb_steps(scene, state, 3)
    (first, warm1), (second, warm2) = posed[1], posed[2]
    assert warm1 is not None and warm2 is not None and first.nc == 31
    hot = solve(first, "ipm", tol=1e-8, warm_start=warm1)
    cold = solve(first, "ipm", tol=1e-8)
    assert hot.status == "optimal" and cold.status == "optimal", hot.message
    np.testing.assert_allclose(hot.w, cold.w, rtol=0, atol=1e-6)
    for x0 in (None, warm2):
        res = solve(second, "ipm", tol=1e-8, warm_start=x0)
        assert res.status == "optimal", res.message
        assert fc_residuals(second, res.x)["natural_map"] <= 1e-8


def test_natural_map_exact_cone_is_the_local_residual_sum() -> None:
    """The exact cone's scalar path of ``natural_map`` is ``local_residual``'s arithmetic:
    on random contacts (some with ``mu = 0``, impulses inside, on and outside the cone,
    velocities of either sign) both laws give the same number bit for bit."""
    from solvers.numerics.fc_kernels import natural_map
    from solvers.numerics.fc_local import local_residual

    rng = np.random.default_rng(7)
    nc = 400
    mu = rng.uniform(0.0, 1.0, nc)
    mu[::10] = 0.0
    r, u = rng.normal(size=3 * nc), rng.normal(size=3 * nc)
    r[0::3] = np.abs(r[0::3])
    r[3:30:3] = 0.0
    dirs, lo = np.zeros((0, 2)), np.zeros(0)
    for law in (0, 1):
        acc = 0.0
        for i in range(nc):
            acc += local_residual(law, 0, mu[i], dirs, r[3 * i : 3 * i + 3], u[3 * i : 3 * i + 3])
        assert natural_map(law, 0, mu, dirs, lo, nc, r, u, 1.0) == np.sqrt(acc)


def test_plain_fallback_finishes_a_landing_step_the_accelerated_fixed_point_leaves_short() -> None:
    """A Coulomb step of the 200-box pile landing from a drop (159 contacts, saved by the
    benchmark's long transient), without the semismooth Newton finish (``newton=0``; with
    it see ``test_fc_newton_soc``): on the default budget ``optimal`` (measured: Newton's
    steps on the shift and the sweeps stop at 1.3e-5 within 500 interior-point iterations
    and the relaxed plain iteration that follows converges, 1,343 iterations), judged by
    the layer's own natural map; given 500 iterations, the status is the truth about the
    iterate (``optimal`` exactly when its natural map is within 1e-6, else the cap)."""
    z = np.load(Path(__file__).parent / "data" / "drop200_coulomb_short.npz")
    C = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
    p = FrictionalContact(None, z["q"], z["mu"], "coulomb", "soc", factor=(C, z["d"]))
    done = solve(p, "ipm", tol=1e-6, warm_start=z["warm"], newton=0)
    assert done.status == "optimal", done.message
    assert fc_residuals(p, done.x)["natural_map"] <= 1e-6
    short = solve(p, "ipm", tol=1e-6, warm_start=z["warm"], max_iter=500, newton=0)
    met = fc_residuals(p, short.x)["natural_map"] <= 1e-6
    assert short.status == ("optimal" if met else "max_iterations"), short.message


@pytest.mark.parametrize("cone", ["soc", "pyramid"])
def test_ipm_fused_loop_gives_the_python_loops_iterates(
    resting_pile_steps: dict, cone: str
) -> None:
    """The interior-point loop in one compiled call (``ccp_blocks``, taken when the residual
    is a :class:`FactorResidual` and ``K`` goes to the block Cholesky) runs the Python loop's
    kernels in the same order: on a 30-box pile step (180 unknowns), cold to 1e-10, every
    iterate checked or every other one while far (``far=30``), the same impulses, last
    interior point, natural map, iteration count and reason, bit for bit (measured: soc
    converges in 27 iterations; the pyramid the same way on both paths)."""
    from solvers.backends.fc_ipm import FactorResidual, VelocityForm, ipm_ccp

    problem, _ = resting_pile_steps[cone][-1]
    C, d = problem.factor
    kind = 0 if cone == "soc" else 1
    qnorm = float(np.linalg.norm(problem.q))
    for far in (None, 30.0):
        fused = FactorResidual(problem.factor_arrays, problem.q, kind, problem, qnorm,
                               np.empty(problem.n))  # fmt: skip
        plain_res = FactorResidual(problem.factor_arrays, problem.q, kind, problem, qnorm,
                                   np.empty(problem.n))  # fmt: skip

        def plain(r: np.ndarray, of: FactorResidual = plain_res) -> tuple[float, np.ndarray]:
            return of(r)  # a plain callable: the Python loop

        forms = [VelocityForm(problem, sp.csr_matrix(C), d) for _ in range(2)]
        assert forms[0].normal.by_blocks and not forms[0].normal.dense
        a = ipm_ccp(forms[0], problem.q, 1e-10, 100, fused, far=far)
        b = ipm_ccp(forms[1], problem.q, 1e-10, 100, plain, far=far)
        assert a[1] == b[1] and a[1] >= 5 and a[2] == b[2] and a[3] == b[3]
        np.testing.assert_array_equal(a[0], b[0])
        for x, y in zip(forms[0].last, forms[1].last, strict=True):  # type: ignore[arg-type]
            np.testing.assert_array_equal(x, y)


def test_max_step_is_the_largest_step_inside_the_cones() -> None:
    """Against bisection on the cone margin (``x_0 - ||x_1||`` and the line's ``x``), to
    1e-12 relative, on random interior points and directions, and on the apex path
    ``x = (x_0, 0, 0)``, ``d = (d_0, 0, 0)``, ``d_0 < 0``, whose quadratic has a double root
    (the box stack's first step stalled there: ``x + d`` went through the apex)."""
    from solvers.backends.ipm_cones import cone_margin, max_step

    rng = np.random.default_rng(5)
    bptr = np.array([0, 3, 4], dtype=np.int64)
    cases = [(np.array([0.03043834, 0.0, 0.0, 1.0]), np.array([-0.04072442, 0.0, 0.0, 0.1]))]
    for _ in range(300):
        x = rng.normal(size=4)
        x[0] = np.linalg.norm(x[1:3]) + rng.uniform(1e-3, 1.0)
        x[3] = rng.uniform(1e-3, 1.0)
        cases.append((x, rng.normal(size=4)))
    for x, d in cases:
        alpha = max_step(bptr, x, d)
        lo, hi = 0.0, 1e6
        if cone_margin(bptr, x + hi * d) >= 0.0:
            assert alpha == np.inf
            continue
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if cone_margin(bptr, x + mid * d) >= 0.0 else (lo, mid)
        assert abs(alpha - lo) <= 1e-12 * max(lo, 1e-12), (x, d, alpha, lo)
    assert max_step(bptr, *cases[0]) == pytest.approx(0.03043834 / 0.04072442, rel=1e-15)


def test_ipm_on_the_box_stacks_first_step() -> None:
    """``box-stack`` at rest, Anitescu-Hart on the exact cone: the first step converges at
    1e-8 and gives Clarabel's velocities to 1e-6 m/s (it stalled on the cone boundary
    after 3 iterations when the step length missed the apex)."""
    scene = get_scenario("box-stack").build()
    records = {}
    for solver in ("ipm", "cvxpy:clarabel"):
        options = {"cone": "soc", **({"solver_tol": 1e-8} if solver == "ipm" else {})}
        sim = Simulator(scene, "maximal", "anitescu-hart", solver, model_options=options)
        _, records[solver] = sim.step(sim.initial_state(), 0)
    ipm = records["ipm"].solution
    assert ipm.status == "optimal", ipm.results[-1].message
    np.testing.assert_allclose(ipm.v, records["cvxpy:clarabel"].solution.v, atol=1e-6)


@pytest.mark.parametrize("scenario", ["pendulum", "chain"])
def test_coulomb_by_ipm_with_joints_and_no_contact(scenario: str) -> None:
    """Bilateral rows only (no contact, so no De Saxcé shift): ``coulomb`` by ``ipm`` steps
    the joints as the frictionless KKT solve does, to 1e-6 m/s over 20 steps (its first
    step raised on an empty shift vector)."""
    scene = get_scenario(scenario).build()
    states = {}
    for model, solver in (("coulomb", "ipm"), ("frictionless", "kkt")):
        options = {"solver_tol": 1e-8} if solver == "ipm" else {}
        sim = Simulator(scene, "maximal", model, solver, model_options=options)
        state = sim.initial_state()
        for i in range(20):
            state, record = sim.step(state, i)
            assert record.solution.status == "optimal", (model, i, record.solution.status)
        states[model] = state
    np.testing.assert_allclose(states["coulomb"].phi, states["frictionless"].phi, atol=1e-6)
