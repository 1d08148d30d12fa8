"""Siconos as an oracle: its fc3d error and solvers against our residual and backends.

Enabled where the system Python imports Siconos's numerics: on Debian/Ubuntu
``apt install python3-siconos`` (Siconos 4.4, without FCLIB's I/O; it installs
for ``/usr/bin/python3``, not for the virtual environment, so the problems go
through one subprocess for the whole module, :mod:`solvers.peers.siconos`).
Otherwise every test skips with that reason.

Problems (Coulomb law, exact cone, no scalar rows: Siconos's fc3d has none):
four random ``contact_scene`` problems (3 to 30 contacts; two with more contact
rows than body velocities, so a singular ``W``: rank 24 of 36 and 60 of 90),
the stored 10-box pile step (``data/pile_fc.npz``, 41 contacts, redundant
corners, ``W`` of rank 60 of 123) and
FCLIB's own test problem (``data/fclib_local_problem_test.hdf5``, 48 contacts,
rank 72 of 144).

Normalisation (measured on Siconos 4.4, stated in ``solvers/peers/siconos.py``):
``fc3d_compute_error`` is ``||r - P_K(r - û)||_2`` -- our natural map's
numerator -- divided by ``max(||q||_2, ||r||_2, ||u||_2)`` where we divide by
``||q||_2``; so the two agree after rescaling, and ours is never the smaller.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_frictional import stored_pile

from solvers import solve
from solvers.frictional import FrictionalContact, fc_residuals
from solvers.peers import siconos
from solvers.reference import contact_scene

pytest.importorskip("numba")
pytest.importorskip("qdldl")
REASON = siconos.unavailable()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))

FCLIB = Path(__file__).parent / "data" / "fclib_local_problem_test.hdf5"
TOL = 1e-9  # every solver's tolerance on its own error
VEL = 1e-6  # [m/s] agreement of contact velocities between solvers
EPS = float(np.finfo(float).eps)
# (bodies, contacts per body, seed): W is 3 nc square over 6 nb velocities
RANDOM = [(3, 1.0, 1), (6, 2.0, 2), (4, 3.0, 3), (10, 3.0, 4)]


def random_point(problem: FrictionalContact, seed: int) -> np.ndarray:
    """Impulses inside the cone, of the size of ``W^-1 q``-like solutions, far from optimal."""
    rng = np.random.default_rng(seed)
    nc = problem.nc
    R = rng.standard_normal((nc, 3))
    R[:, 0] = np.abs(R[:, 0])
    R[:, 1:] *= (problem.mu * R[:, 0] / np.linalg.norm(R[:, 1:], axis=1))[:, None]
    R *= rng.uniform(0.2, 1.0, (nc, 1))
    return R.ravel() * np.linalg.norm(problem.q) / max(1.0, float(abs(problem.W).max()))


@pytest.fixture(scope="module")
def oracle() -> dict[str, Any]:
    """Our solutions and Siconos's (one subprocess): problems, ours, checked points, peers."""
    from solvers import fclib

    problems: dict[str, FrictionalContact] = {}
    for nb, cpb, seed in RANDOM:
        sc = contact_scene(nb, cpb, rows_per_contact=3, seed=seed)
        W, q = sc.delassus()
        problems[f"random-{nb}x{cpb:g}"] = FrictionalContact(W, q, sc.mu)
    problems["pile"] = stored_pile("coulomb")[0]
    fc = fclib.read(FCLIB).problem
    assert isinstance(fc, FrictionalContact)
    problems["fclib"] = fc
    ours: dict[str, dict[str, Any]] = {}
    for name, p in problems.items():
        if name == "fclib":
            # our nsgs stalls on this stack as Siconos's NSGS does (test docstring);
            # admm takes 488 iterations to 1e-7, 9,024 to 1e-9 (2 s)
            backends = {"ipm": TOL, "admm": 1e-7}
        elif name == "pile":
            # Gauss-Seidel reaches 1e-6 on the pile's redundant corners (test_frictional)
            backends = {"nsgs": 1e-6, "ipm": TOL}
        else:
            backends = {"nsgs": TOL, "ipm": TOL}
        ours[name] = {b: solve(p, b, tol=t, max_iter=100000) for b, t in backends.items()}
    # Siconos: NSGS on the random problems and the pile, PROX (proximal point around its
    # nonsmooth Newton) on the pile and the FCLIB stack, where NSGS stalls
    batch = [(n, "NSGS") for n in problems if n != "fclib"] + [("pile", "PROX"), ("fclib", "PROX")]
    checks: list[list[np.ndarray]] = []
    for n, solver in batch:
        pts: list[np.ndarray] = []
        if solver == "NSGS" or n == "fclib":
            p = problems[n]
            pts = [res.x for res in ours[n].values()]
            pts += [np.zeros(p.n), random_point(p, 0), random_point(p, 1)]
        checks.append(pts)
    out = siconos.fc3d(
        [(problems[n].W, problems[n].q, problems[n].mu) for n, _ in batch],
        tol=TOL,
        max_iter=10000,
        check=checks,
        solver=[s for _, s in batch],
    )
    peers = {(n, s): dict(o, points=c) for (n, s), o, c in zip(batch, out, checks, strict=True)}
    return {"problems": problems, "ours": ours, "peers": peers}


def test_siconos_error_is_our_natural_map_rescaled(oracle: dict[str, Any]) -> None:
    """``fc3d_compute_error(r) = natural_map(r) ||q|| / max(||q||, ||r||, ||u||)``.

    At our solutions and at zero and random points in the cone, on every problem.
    The two evaluate ``u = W r + q`` separately (dense BLAS there, CSR here): each
    ``u_i`` carries at most ``n eps (|W||r| + |q|)_i`` of rounding, and the residual
    moves by at most ``(2 + max mu)`` times that in 2-norm, so the tolerance is
    1e-12 relative plus that bound over the divisor (it matters only at solutions,
    where the residual is 1e-9 of ``||q||``: measured up to 7e-7 relative there).
    """
    worst, rescaled = 0.0, 0
    for (name, _), peer in oracle["peers"].items():
        p = oracle["problems"][name]
        absW = abs(p.W)
        for r, sic in zip(peer["points"], peer["check_errors"], strict=True):
            u = p.velocity(r)
            qn = float(np.linalg.norm(p.q))
            divisor = max(qn, float(np.linalg.norm(r)), float(np.linalg.norm(u)))
            expected = fc_residuals(p, r)["natural_map"] * qn / divisor
            rounding = (2 + p.mu.max()) * p.n * EPS * np.linalg.norm(absW @ abs(r) + abs(p.q))
            assert abs(sic - expected) <= 1e-12 * expected + rounding / divisor, (name, sic)
            rescaled += divisor > 1.5 * qn  # Siconos's divisor is not ||q|| there
            if expected > 1e-6:
                worst = max(worst, abs(sic - expected) / expected)
    assert rescaled >= 3, rescaled
    assert worst < 1e-12  # away from solutions: the same number to rounding


def test_siconos_nsgs_and_ours_agree_on_random_problems(oracle: dict[str, Any]) -> None:
    """Siconos's NSGS and our ``nsgs``, ``ipm`` (all at 1e-9) give the same ``u`` to 1e-6.

    The Coulomb velocity is unique here in practice (a singular ``W`` leaves
    ``r`` free in its null space, not ``u``); Siconos's error of our solutions
    is within its tolerance 1e-9 (its divisor is at least ours, so ours bounds it).
    """
    for name, p in oracle["problems"].items():
        if not name.startswith("random"):
            continue
        peer = oracle["peers"][name, "NSGS"]
        assert peer["info"] == 0 and peer["error"] <= TOL, (name, peer["error"])
        u_sic = p.velocity(peer["r"])
        for (backend, res), sic_err in zip(oracle["ours"][name].items(), peer["check_errors"]):
            assert res.success, (name, backend, res.message)
            assert sic_err <= TOL, (name, backend, sic_err)
            assert np.max(np.abs(res.w - u_sic)) <= VEL, (name, backend)


def test_siconos_and_ours_agree_on_the_stored_pile_step(oracle: dict[str, Any]) -> None:
    """The 10-box pile step: Siconos PROX converges (1e-9); its NSGS, like ours, stalls.

    On the redundant corners block Gauss--Seidel converges slowly: Siconos's NSGS
    stops at its 1e4-sweep cap with its error at 1.2e-7 (reported as not
    converged, ``info = 1``), our ``nsgs`` is asked for its declared 1e-6.  All of
    them and our ``ipm`` (1e-9) give the same velocities to 1e-6 m/s, and Siconos
    judges ``ipm``'s solution converged at 1e-9 and ``nsgs``'s at 1e-6.
    """
    p = oracle["problems"]["pile"]
    prox, nsgs = oracle["peers"]["pile", "PROX"], oracle["peers"]["pile", "NSGS"]
    assert prox["info"] == 0 and prox["error"] <= TOL
    assert nsgs["info"] == 1 and nsgs["error"] <= 1e-6  # capped, honestly reported
    u_prox, u_nsgs = p.velocity(prox["r"]), p.velocity(nsgs["r"])
    assert np.max(np.abs(u_nsgs - u_prox)) <= VEL
    tols = {"nsgs": 1e-6, "ipm": TOL}
    for (backend, res), sic_err in zip(oracle["ours"]["pile"].items(), nsgs["check_errors"]):
        assert res.success, (backend, res.message)
        assert sic_err <= tols[backend], (backend, sic_err)
        assert np.max(np.abs(res.w - u_prox)) <= VEL, backend
        assert np.max(np.abs(res.w - u_nsgs)) <= VEL, backend


def test_fclib_test_problem_siconos_and_ours_agree(oracle: dict[str, Any]) -> None:
    """FCLIB's test stack: Siconos PROX (1e-9) and our ``ipm`` (1e-9), ``admm`` (1e-7) agree.

    Velocities within 1e-6 m/s (``||q||`` = 9.8e-3 m/s), and Siconos's error of
    each of our solutions is within the tolerance it was solved to.  Block
    Gauss--Seidel stalls here, Siconos's NSGS and ours alike (about 2e-4 after
    1e4 sweeps, ``docs/friction-solvers.md``), so neither is compared.
    """
    p = oracle["problems"]["fclib"]
    prox = oracle["peers"]["fclib", "PROX"]
    assert prox["info"] == 0 and prox["error"] <= TOL
    u_prox = p.velocity(prox["r"])
    tols = {"ipm": TOL, "admm": 1e-7}
    for (backend, res), sic_err in zip(oracle["ours"]["fclib"].items(), prox["check_errors"]):
        assert res.success, (backend, res.message)
        assert sic_err <= tols[backend], (backend, sic_err)
        assert np.max(np.abs(res.w - u_prox)) <= VEL, backend
