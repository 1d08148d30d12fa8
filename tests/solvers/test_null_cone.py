"""``ipm`` on a step whose ``W`` annihilates a direction inside the friction cones.

The stored step (``data/tumble_coulomb_step44.npz``): step 44 of ``scenarios/data/tumble.xml``
(a box, a ball and a hinged paddle; reduced coordinates, ``coulomb`` model, h = 5 ms), 5
contacts, ``W`` (15 x 15, rank 4) and ``q`` as the model posed them, and the warm start it
passed (the previous step's impulses).  Four contacts act on the paddle only, whose hinge is
one coordinate: their block of ``W`` is ``w w'``, and ``w`` of each contact is orthogonal to a
direction inside its cone (a force whose line crosses the hinge axis), so the Coulomb law's
impulses there are determined only up to that unbounded ray (the paddle sticks).  The
interior point followed the ray to ``|r| = 2e14``, where ``u = W r + q`` is rounding noise
of 1e-2 and the backend's natural map read 2.7e-8: the layer's own measure (2.9e-2) made it
``optimal_inaccurate``, implausible, and the run failed as ``numerical_error``.

Facts: the ray exists in the stored data; ``ipm`` (warm and cold, and on 20 perturbations
of ``W`` and ``q`` by 1e-13 relative, the rounding a BLAS kernel set changes) returns finite
impulses whose natural map, by the layer's own measure, is within the tolerance; its
velocities agree with ``admm``'s (both within 1e-6 of ``||q||``: 1e-5 m/s) where they are
unique.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from test_perturbation import perturbations

from solvers import solve
from solvers.frictional import FrictionalContact, fc_residuals

pytest.importorskip("numba")
pytest.importorskip("qdldl")

TOL = 1e-6


def tumble_step() -> tuple[FrictionalContact, np.ndarray]:
    """The stored step (module docstring) and its warm start."""
    d = np.load(Path(__file__).parent / "data" / "tumble_coulomb_step44.npz")
    n = d["q"].size
    W = sp.csr_matrix((d["W_data"], d["W_indices"], d["W_indptr"]), shape=(n, n))
    return FrictionalContact(W, d["q"], d["mu"], law="coulomb", row_lo=d["row_lo"]), d["warm"]


def test_paddle_contacts_have_a_null_ray_inside_the_cone() -> None:
    """Contacts 1-4 (the paddle's): ``W``'s block is rank one, and a direction with
    ``|r_t| <= 0.2 r_n`` (inside the cone, ``mu = 1``) in its null space."""
    fc, _ = tumble_step()
    W = fc.W.toarray()
    block = W[3:, 3:]
    s = np.linalg.svd(block, compute_uv=False)
    assert s[1] <= 1e-12 * s[0]
    w = block[0] / np.linalg.norm(block[0])  # every row is a multiple of w
    for i in range(4):
        wn, wt = w[3 * i], w[3 * i + 1]
        d = np.zeros(12)
        d[3 * i], d[3 * i + 1] = 1.0, -wn / wt  # w' d = 0
        assert abs(d[3 * i + 1]) <= 0.2 * fc.mu[1 + i]
        assert np.abs(block @ d).max() <= 1e-13 * np.abs(block).max()


@pytest.mark.parametrize("warm", [True, False])
def test_ipm_meets_the_tolerance_with_finite_impulses(warm: bool) -> None:
    """``optimal``, finite impulses, the layer's natural map within 1e-6; velocities as
    ``admm``'s to 1e-5 m/s (two answers within 1e-6 of ``||q||`` = 0.56 m/s)."""
    fc, r_warm = tumble_step()
    res = solve(fc, "ipm", tol=TOL, warm_start=r_warm if warm else None)
    assert res.status == "optimal", res.message
    assert np.all(np.isfinite(res.x))
    assert fc_residuals(fc, res.x)["natural_map"] <= TOL
    ref = solve(fc, "admm", tol=TOL, max_iter=20000)
    assert ref.status == "optimal", ref.message
    np.testing.assert_allclose(fc.velocity(res.x), fc.velocity(ref.x), rtol=0, atol=1e-5)


def test_ipm_on_perturbed_steps() -> None:
    """20 perturbations of ``W`` and ``q`` by 1e-13 relative (the rounding of another BLAS
    kernel set), warm-started as the model did: ``optimal``, finite, the layer's natural map
    of each answer within the tolerance."""
    fc, r_warm = tumble_step()
    for k, p in enumerate(perturbations(fc, seed=44)):
        if k >= 20:
            break
        res = solve(p, "ipm", tol=TOL, warm_start=r_warm)
        assert res.status == "optimal", (k, res.message)
        assert np.all(np.isfinite(res.x))
        assert fc_residuals(p, res.x)["natural_map"] <= TOL, (k, res.message)
