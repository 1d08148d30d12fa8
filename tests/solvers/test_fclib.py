"""FCLIB HDF5 files: FCLIB's own test problem reads and is solved; round trips are exact.

``data/fclib_local_problem_test.hdf5`` is FCLIB's test file (a stack of boxes,
48 contacts, mu = 0.7, a rank-deficient 144 x 144 Delassus matrix in CSR form;
its stored "solution" is a placeholder).  Nothing slides in it, so the CCP's
minimiser (no sliding: ``û = u``) also solves the Coulomb law, which gives an
independent check of the Coulomb solver.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from solvers import FrictionalContact, GlobalFrictionalContact, solve
from solvers.frictional import fc_residuals
from solvers.reference import contact_scene

h5py = pytest.importorskip("h5py")
pytest.importorskip("numba")
from solvers import fclib  # noqa: E402

FIXTURE = Path(__file__).parent / "data" / "fclib_local_problem_test.hdf5"


def test_fclib_test_problem_reads_and_is_solved() -> None:
    f = fclib.read(FIXTURE)
    p = f.problem
    assert isinstance(p, FrictionalContact)
    assert (p.nc, p.W.shape, p.law, p.cone) == (48, (144, 144), "coulomb", "soc")
    np.testing.assert_array_equal(p.mu, 0.7)
    assert f.title.strip() == "Boxes Stack"
    ccp = solve(p.with_law("ccp"), "apgd", tol=1e-10)
    assert ccp.success, ccp.message
    # the CCP's solution has no sliding contact, so it solves the Coulomb law as well
    assert np.max(np.linalg.norm(ccp.w.reshape(-1, 3)[:, 1:], axis=1)) < 1e-9
    assert fc_residuals(p, ccp.x)["natural_map"] < 1e-9
    cou = solve(p, "admm", tol=1e-6)
    assert cou.success, cou.message
    # natural-map 1e-6 relative to ||q|| = 9.8e-3 m/s: velocities within ~1e-8 m/s
    np.testing.assert_allclose(cou.w, ccp.w, atol=1e-7)


def test_local_round_trip_is_exact(tmp_path: Path) -> None:
    scene = contact_scene(5, 2.0, rows_per_contact=3, seed=2)
    W, q = scene.delassus()
    p = FrictionalContact(W, q, scene.mu, law="ccp", cone="pyramid", directions=8)
    sol = solve(p, "nsgs", tol=1e-10)
    path = tmp_path / "local.hdf5"
    fclib.write(path, p, title="t", description="d", math_info="m", solution={"r": sol.x})
    back = fclib.read(path)
    b = back.problem
    assert isinstance(b, FrictionalContact)
    assert (b.law, b.cone, b.directions) == ("ccp", "pyramid", 8)
    assert (b.W != p.W).nnz == 0 and np.array_equal(b.q, p.q) and np.array_equal(b.mu, p.mu)
    assert (back.title, back.description, back.math_info) == ("t", "d", "m")
    assert back.solution is not None and np.array_equal(back.solution["r"], sol.x)


def test_global_round_trip_is_exact(tmp_path: Path) -> None:
    scene = contact_scene(4, 2.0, rows_per_contact=3, seed=9)
    G = sp.csr_matrix(np.random.default_rng(0).standard_normal((2, scene.M.shape[0])))
    p = GlobalFrictionalContact(
        scene.M, scene.J.T, scene.f, -scene.b, scene.mu, G, np.array([0.1, -0.2])
    )
    path = tmp_path / "global.hdf5"
    fclib.write(path, p)
    b = fclib.read(path).problem
    assert isinstance(b, GlobalFrictionalContact)
    for name in ("M", "H", "G"):
        assert (getattr(b, name) != getattr(p, name)).nnz == 0, name
    for name in ("f", "w", "b", "mu"):
        assert np.array_equal(getattr(b, name), getattr(p, name)), name
    # and FCLIB's convention: G stored as (n, mb)
    with h5py.File(path) as f:
        assert int(f["fclib_global/G/m"][0]) == scene.M.shape[0]


def _corrupt(tmp_path: Path, edit: str) -> Path:
    path = tmp_path / f"{edit}.hdf5"
    if edit == "text":
        path.write_text("not hdf5\n")
        return path
    if edit == "empty":
        with h5py.File(path, "w") as f:
            f.create_group("something_else")
        return path
    W = sp.identity(6, format="csr")
    fclib.write(path, FrictionalContact(W, np.ones(6), [0.5, 0.5]))
    with h5py.File(path, "r+") as f:
        vec = f["fclib_local/vectors"]
        if edit == "negative_mu":
            vec["mu"][0] = -0.5
        elif edit == "nan":
            vec["q"][2] = np.nan
        elif edit == "sizes":
            del vec["q"]
            vec["q"] = np.ones(5)
    return path


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ("text", "not a readable HDF5 file"),
        ("empty", "not an FCLIB file"),
        ("negative_mu", "mu: friction coefficients must be >= 0"),
        ("nan", "q: contains NaN"),
        ("sizes", "vectors/q: has 5 entries, expected 6"),
    ],
)
def test_bad_files_give_one_clear_error(tmp_path: Path, edit: str, match: str) -> None:
    with pytest.raises(fclib.FCLIBError, match=match):
        fclib.read(_corrupt(tmp_path, edit))
