"""Set-up shared by the semismooth Newton tests (``test_fc_newton*.py``): small random
problems with a factor of ``W``, the stored pile steps, the central-difference check of a
min-function's piece and the check of ``ipm``'s Newton finish on a stored step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from test_frictional import random_problem

from solvers import solve
from solvers.frictional import FrictionalContact, fc_residuals

DATA = Path(__file__).parent / "data"


def factored(cone: str, seed: int) -> tuple[FrictionalContact, sp.csr_matrix, np.ndarray]:
    """A random Coulomb-law problem of ``test_frictional`` on ``cone`` with a factor
    ``W = C diag(d) C'`` (from its eigendecomposition)."""
    from solvers.backends.fc_ipm import eig_factor

    fc = random_problem("coulomb", cone, seed)
    Cd, d = eig_factor(fc.W.toarray())
    return fc, sp.csr_matrix(Cd), d


def stored_step(name: str, cone: str) -> FrictionalContact:
    """A stored pile step (``data/<name>.npz``: ``q``, ``mu``, ``row_lo``, the factor's
    ``C`` as CSR arrays and ``d``; on the pyramid its ``directions``)."""
    data = np.load(DATA / f"{name}.npz")
    shape = tuple(int(k) for k in data["C_shape"])
    C = sp.csr_matrix((data["C_data"], data["C_indices"], data["C_indptr"]), shape=shape)
    directions = int(data["directions"]) if cone == "pyramid" else 4
    return FrictionalContact(
        None, data["q"], data["mu"], "coulomb", cone, directions,
        row_lo=data["row_lo"], factor=(C, data["d"]),
    )  # fmt: skip


def check_piece_derivative(
    piece: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, tuple[np.ndarray, ...]]],
    x: np.ndarray,
    rng: np.random.Generator,
) -> None:
    """Central differences of ``Φ`` with step 1e-7 along a random direction (the same piece
    at both ends, checked) equal ``J δ`` to 1e-7 of its largest entry; ``piece(x)`` returns
    ``(Φ, dense J, selection arrays)``."""
    _, J, sel = piece(x)
    direction = rng.normal(size=x.size)
    h = 1e-7
    plus, _, sel_p = piece(x + h * direction)
    minus, _, sel_m = piece(x - h * direction)
    for a, b, c in zip(sel, sel_p, sel_m, strict=True):
        assert np.array_equal(a, b) and np.array_equal(a, c), "a kink within the step"
    jd = J @ direction
    np.testing.assert_allclose((plus - minus) / (2 * h), jd, atol=1e-7 * np.abs(jd).max())


def check_finish(fc: FrictionalContact) -> Any:
    """``ipm`` with its Newton finish (default options) returns ``optimal`` at 1e-6, judged by
    the layer's own natural map of the returned impulses; and its status is the truth about
    its iterate on a budget too short for the fixed point alone (``newton=0``,
    ``max_iter=100``): ``optimal`` exactly when that natural map is within the tolerance,
    else ``max_iterations``.  (Whether the fixed point alone stops at its cap depends on the
    BLAS kernels' rounding: on the 200-box pyramid step it caps at 500 iterations with
    Haswell's and converges in 322 with SkylakeX's; neither is asserted.)  Returns the
    solution with the finish."""
    short = solve(fc, "ipm", tol=1e-6, newton=0, max_iter=100)
    met = fc_residuals(fc, short.x)["natural_map"] <= 1e-6
    assert short.status == ("optimal" if met else "max_iterations"), short.message
    after = solve(fc, "ipm", tol=1e-6)
    assert after.status == "optimal", after.message
    assert fc_residuals(fc, after.x)["natural_map"] <= 1e-6
    return after
