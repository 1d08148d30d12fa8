"""Wide friction cones (torsional and rolling rows) in the frictional-contact backends.

Facts: the Euclidean projection onto the elliptic and separate cones is idempotent,
non-expansive and meets the projection's optimality conditions (``x - P(x)`` in the polar
cone, orthogonal to ``P(x)``); the metric projection ``S P_SOC(S^-1 x)`` of the scaled cone
is not (so the kernels do not use it); the exact local solver of the elliptic cone agrees
with the iterative one; on random wide-cone problems every backend that takes them
(``nsgs``, ``apgd``, ``admm``, ``padmm``) meets the cone, dual-cone and complementarity
conditions to 1e-9 (Coulomb's in De Saxcé's form), its objective is no higher than that of
an independent conic solver (Clarabel through cvxpy) and it lies within the distance strong
convexity allows from that solver's solution; ``nsgs``, ``apgd`` and ``admm`` agree with each
other to 1e-8.  (The 1e-6 agreement with the spin models' SOC QP route is
``tests/contactlab/models/test_spin_wide_agreement.py``.)
"""

from __future__ import annotations

import numpy as np
import pytest

import solvers
from solvers.errors import ProblemError
from solvers.frictional_wide import WideFrictionalContact, wide_problem
from solvers.numerics.fc_wide import (
    ccp_elliptic,
    ccp_iterative,
    project_elliptic,
    project_separate,
)

FAM = {4: [0, 1, 1, 2], 5: [0, 1, 1, 3, 3], 6: [0, 1, 1, 2, 3, 3]}
WIDE = ("nsgs", "apgd", "admm", "padmm")


def _coefficients(rng: np.random.Generator, d: int) -> np.ndarray:
    """Per-row coefficients of a ``d``-row contact, equal within a family."""
    mu, mt, mr = rng.uniform(0.1, 1.5), rng.uniform(0.01, 0.5), rng.uniform(0.01, 0.5)
    return np.array({4: [1, mu, mu, mt], 5: [1, mu, mu, mr, mr], 6: [1, mu, mu, mt, mr, mr]}[d])


def _proj(sep: int, m: np.ndarray, d: int, x: np.ndarray) -> np.ndarray:
    out = np.empty(d)
    if sep == 0:
        project_elliptic(m, 0, d, x, 0, out, 0)
    else:
        project_separate(m, np.array(FAM[d]), 0, d, x, 0, out, 0)
    return out


def _in_cone(sep: int, m: np.ndarray, d: int, y: np.ndarray, slack: float) -> bool:
    if sep == 0:
        return bool(np.linalg.norm(y[1:] / m[1:]) <= y[0] + slack)
    fam = np.array(FAM[d])
    return all(
        np.linalg.norm(y[fam == g]) <= m[fam == g][0] * y[0] + slack for g in set(FAM[d]) - {0}
    )


def _dual_norm(sep: int, m: np.ndarray, d: int, w: np.ndarray) -> float:
    if sep == 0:
        return float(np.linalg.norm(m[1:] * w[1:]))
    fam = np.array(FAM[d])
    return float(sum(m[fam == g][0] * np.linalg.norm(w[fam == g]) for g in set(FAM[d]) - {0}))


@pytest.mark.parametrize("sep", [0, 1])
@pytest.mark.parametrize("d", [4, 5, 6])
def test_projection_is_the_euclidean_projection(sep, d):
    rng = np.random.default_rng(10 * d + sep)
    for _ in range(300):
        m = _coefficients(rng, d)
        x = rng.normal(size=d) * 10.0 ** rng.uniform(-3, 3)
        x2 = rng.normal(size=d) * 10.0 ** rng.uniform(-3, 3)
        p, p2 = _proj(sep, m, d, x), _proj(sep, m, d, x2)
        scale = 1.0 + np.abs(x).max()
        # idempotent, in the cone, non-expansive
        assert np.abs(_proj(sep, m, d, p) - p).max() <= 1e-12 * scale
        assert _in_cone(sep, m, d, p, 1e-12 * scale)
        assert np.linalg.norm(p - p2) <= np.linalg.norm(x - x2) * (1 + 1e-12) + 1e-12 * scale
        # optimality: x - p in the polar cone (p - x in the dual cone), orthogonal to p
        w = p - x
        assert w[0] >= _dual_norm(sep, m, d, w) - 1e-12 * scale
        assert abs(w @ p) <= 1e-12 * scale * scale


def test_scaled_soc_projection_is_not_euclidean():
    # S P_SOC(S^-1 x) is the projection in the metric S^-2: with unequal coefficients it is
    # farther from x than the Euclidean projection (and not non-expansive)
    m = np.array([1.0, 1.0, 1.0, 0.05])
    x = np.array([0.2, 1.0, 0.0, 0.5])
    y = x / m
    nt = np.linalg.norm(y[1:])
    a = (y[0] + nt) / 2
    scaled = m * np.concatenate([[a], a * y[1:] / nt])
    p = _proj(0, m, 4, x)
    assert np.linalg.norm(x - p) < np.linalg.norm(x - scaled) - 0.1


@pytest.mark.parametrize("d", [4, 5, 6])
def test_exact_local_solver_matches_iterative(d):
    rng = np.random.default_rng(d)
    solved = 0
    for _ in range(200):
        m = _coefficients(rng, d)
        B = rng.normal(size=(d, d))
        A = B @ B.T + 0.2 * np.eye(d)
        b = rng.normal(size=d) * 3
        r = np.zeros(d)
        assert ccp_elliptic(m, 0, d, A, b, r)
        it = np.zeros(d)
        ccp_iterative(0, m, np.array(FAM[d]), 0, d, A, b, it, 200000)
        fr, fi = 0.5 * r @ A @ r + b @ r, 0.5 * it @ A @ it + b @ it
        assert _in_cone(0, m, d, r, 1e-12)
        assert fr <= fi + 1e-12 * (1 + abs(fi))
        assert np.abs(r - it).max() <= 1e-6 * (1 + np.abs(r).max())
        solved += bool(np.any(r))
    assert solved > 100  # most draws have a non-zero solution on the cone's boundary


def _random_problem(rng, law, cone, nc=5, ms=2):
    dims = rng.choice([3, 4, 5, 6], size=nc)
    coef = []
    for d in dims:
        c = _coefficients(rng, int(d)) if d > 3 else np.array([1, 0.6, 0.6])
        coef.extend(c[1:])
    m = int(dims.sum())
    n = m + ms
    B = rng.normal(size=(n, n))
    W = B @ B.T / n + 0.5 * np.eye(n)
    q = rng.normal(size=n)
    q[np.concatenate([[0], np.cumsum(dims)[:-1]])] -= 1.0  # pushing into the ground
    row_lo = np.array([-np.inf, 0.0])[:ms]
    return wide_problem(W, q, dims, coef, law, cone, row_lo)


def _cvxpy_ccp(p: WideFrictionalContact, qs: np.ndarray) -> np.ndarray:
    cp = pytest.importorskip("cvxpy")
    r = cp.Variable(p.n)
    cons = []
    off, mr, fam = p.offsets, p.mu_rows, p.family
    for i in range(p.nc):
        s, e = off[i], off[i + 1]
        if p.cone == "elliptic":
            cons.append(cp.SOC(r[s], cp.multiply(1.0 / mr[s + 1 : e], r[s + 1 : e])))
        else:
            for g in sorted(set(fam[s + 1 : e])):
                rows = s + np.flatnonzero(fam[s:e] == g)
                cons.append(cp.SOC(mr[rows[0]] * r[s], r[rows]))
    for k, lo in enumerate(p.row_lo):
        if lo == 0.0:
            cons.append(r[off[-1] + k] >= 0)
    W = p.W.toarray()
    prob = cp.Problem(cp.Minimize(0.5 * cp.quad_form(r, cp.psd_wrap(W)) + qs @ r), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return np.asarray(r.value)


def _agree(p: WideFrictionalContact, x: np.ndarray, qs: np.ndarray) -> None:
    """``x`` solves the CCP with free velocity ``qs`` as the conic solver does: its objective
    is no higher than the conic solver's (to 1e-12), and both lie within the distance
    strong convexity allows, ``||x - ref||^2 <= 2 (f(ref) - f(x)) / lambda_min(W)``, which
    with the conic solver's objective gap (1e-8 to 1e-7 here) is below 1e-3; on these
    problems the two agree to 1e-4 (the conic solvers' own accuracy; measured 1e-5)."""
    ref = _cvxpy_ccp(p, qs)
    W = p.W.toarray()
    f = lambda r: 0.5 * r @ W @ r + qs @ r  # noqa: E731
    assert f(x) <= f(ref) + 1e-12 * (1 + abs(f(ref)))
    gap = max(f(ref) - f(x), 0.0) + 1e-12
    bound = np.sqrt(2 * gap / np.linalg.eigvalsh(W)[0])
    assert np.linalg.norm(x - ref) <= bound
    assert np.abs(x - ref).max() <= 1e-4 * (1 + np.abs(ref).max())


def _kkt(p: WideFrictionalContact, x: np.ndarray, uh: np.ndarray, tol: float) -> None:
    """``x`` in its cones, ``uh`` in the dual cones, ``x . uh = 0`` per contact; scalar rows
    bilateral (``u = 0``) or complementary."""
    scale = 1 + np.abs(x).max()
    for i in range(p.nc):
        s, e = p.offsets[i], p.offsets[i + 1]
        d, m = e - s, p.mu_rows[s:e]
        if d == 3:
            m = np.array([1.0, m[1], m[1], 0.0])[:3]
        fam = p.family[s:e]
        assert _in_cone_general(p.sep, m, fam, x[s:e], tol * scale)
        assert uh[s] >= _dual_general(p.sep, m, fam, uh[s:e]) - tol
        assert abs(x[s:e] @ uh[s:e]) <= tol * scale
    for k, lo in enumerate(p.row_lo):
        j = p.offsets[-1] + k
        if lo == 0.0:
            assert x[j] >= -tol * scale and uh[j] >= -tol and abs(x[j] * uh[j]) <= tol * scale
        else:
            assert abs(uh[j]) <= tol


def _in_cone_general(sep, m, fam, y, slack):
    if sep == 0:
        return bool(np.linalg.norm(y[1:] / m[1:]) <= y[0] + slack)
    return all(np.linalg.norm(y[fam == g]) <= m[fam == g][0] * y[0] + slack for g in set(fam) - {0})


def _dual_general(sep, m, fam, w):
    if sep == 0:
        return float(np.linalg.norm(m[1:] * w[1:]))
    return float(sum(m[fam == g][0] * np.linalg.norm(w[fam == g]) for g in set(fam) - {0}))


@pytest.mark.parametrize("cone", ["elliptic", "separate"])
@pytest.mark.parametrize("backend", WIDE)
def test_ccp_agrees_with_conic_solver(backend, cone):
    rng = np.random.default_rng(7 if cone == "elliptic" else 8)
    for _ in range(3):
        p = _random_problem(rng, "ccp", cone)
        res = solvers.solve(p, backend, tol=1e-11, max_iter=200000)
        assert res.status == "optimal", res.message
        assert res.measures["natural_map"] <= 1e-11 and res.measures["cone"] <= 1e-12
        _kkt(p, res.x, p.velocity(res.x), 1e-9)
        _agree(p, res.x, p.q)


@pytest.mark.parametrize("cone", ["elliptic", "separate"])
@pytest.mark.parametrize("backend", WIDE)
def test_coulomb_meets_de_saxce_and_agrees_with_conic_solver(backend, cone):
    rng = np.random.default_rng(21 if cone == "elliptic" else 22)
    for _ in range(2):
        p = _random_problem(rng, "coulomb", cone)
        res = solvers.solve(p, backend, tol=1e-11, max_iter=200000)
        assert res.status == "optimal", res.message
        x = res.x
        u = p.velocity(x)
        shift = p.support(u)
        uh = u.copy()
        uh[p.normal_rows] += shift
        # De Saxcé's conditions: x in K, û in K*, x . û = 0
        _kkt(p, x, uh, 1e-9)
        # x is the CCP's solution with its own shift frozen in q: the conic solver's too
        qs = p.q.copy()
        qs[p.normal_rows] += shift
        _agree(p, x, qs)
        # no spurious lift-off: a contact that pushes has u_n = 0 exactly (the CCP's gap gone)
        pushing = x[p.normal_rows] > 1e-8
        assert np.all(np.abs(u[p.normal_rows][pushing]) <= 1e-9)


def test_backends_agree_with_each_other():
    # the CCP's solution is unique (W positive definite): the three backends meet to 1e-8
    rng = np.random.default_rng(3)
    for cone in ("elliptic", "separate"):
        p = _random_problem(rng, "ccp", cone, nc=8)
        xs = [solvers.solve(p, b, tol=1e-12, max_iter=400000).x for b in WIDE]
        assert np.abs(xs[0] - xs[1]).max() <= 1e-8 and np.abs(xs[0] - xs[2]).max() <= 1e-8


def test_bad_wide_input_is_named():
    W = np.eye(4)
    with pytest.raises(ProblemError, match="offsets"):
        WideFrictionalContact(W, np.zeros(4), [0, 2, 4], np.ones(4))
    with pytest.raises(ProblemError, match="mu_rows"):
        WideFrictionalContact(W, np.zeros(4), [0, 4], [1.0, 0.5, 0.5, -0.1])
    with pytest.raises(ProblemError, match="cone"):
        WideFrictionalContact(W, np.zeros(4), [0, 4], [1.0, 0.5, 0.5, 0.1], cone="soc")
    with pytest.raises(ProblemError, match="mu_rows"):
        # the separate cone: one coefficient per family
        WideFrictionalContact(W, np.zeros(4), [0, 4], [1.0, 0.5, 0.4, 0.1], cone="separate")


def test_wide_problem_fits_only_the_wide_backends():
    p = wide_problem(
        np.eye(4), np.array([-1.0, 0.1, 0.0, 0.2]), [4], [0.5, 0.5, 0.1], "ccp", "elliptic"
    )
    assert set(WIDE) <= set(solvers.fitting_backends(p))
    assert "ipm" not in solvers.fitting_backends(p)
    with pytest.raises(solvers.IncompatibleProblem):
        solvers.solve(p, "ipm")


def test_fclib_refuses_a_wide_problem(tmp_path):
    pytest.importorskip("h5py")
    from solvers.fclib import FCLIBError, write

    p = wide_problem(np.eye(4), [-1.0, 0.1, 0.0, 0.2], [4], [0.5, 0.5, 0.1], "ccp", "elliptic")
    with pytest.raises(FCLIBError, match="three rows per contact"):
        write(tmp_path / "wide.hdf5", p)
    assert not list(tmp_path.iterdir())  # nothing written
