"""Islands (model option ``islands``, :mod:`solvers.islands`): far-apart parts step alone.

Two box piles 10 m apart on one ground: with the option on, each pile's trajectory in
the shared scene equals the trajectory it has in a scene of its own (with the option on
too: the split depends on the island's data only) to 1e-12 over 100 steps of 5 ms, for
``nsgs`` and ``padmm`` (measured: equal bit for bit).  Without the option the whole
problem's tolerance, relative to the two piles' joint ``||q||``, stops the solver at
another iterate, and the piles move apart by millimetres (measured with ``ipm``: 9 mm
and 8 cm after 150 steps).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.simulator import Simulator
from solvers import FrictionalContact
from solvers.islands import island_labels, split

FarPiles = Callable[..., tuple[Scene, Scene, Scene]]  # conftest.far_apart_piles

pytest.importorskip("numba")
STEPS = 100


def trajectory(scene: Scene, solver: str, islands: bool) -> np.ndarray:
    sim = Simulator(scene, "maximal", "coulomb", solver, model_options={"islands": islands})
    state = sim.initial_state()
    out = [state.E.copy()]
    for i in range(STEPS):
        state, _ = sim.step(state, i)
        out.append(state.E.copy())
    return np.array(out)


@pytest.mark.parametrize("solver", ["nsgs", "padmm"])
def test_two_far_apart_piles_step_as_they_do_alone(solver: str, far_piles: FarPiles) -> None:
    a, b, both = far_piles()
    ta, tb, tab = (trajectory(s, solver, True) for s in (a, b, both))
    assert np.max(np.abs(ta[-1, :, :3, 3] - ta[0, :, :3, 3])) > 0.2  # the boxes fell and landed
    assert np.max(np.abs(tab[:, :6] - ta)) <= 1e-12
    assert np.max(np.abs(tab[:, 6:] - tb)) <= 1e-12


def test_labels_are_the_connected_components() -> None:
    """Block-diagonal data: two islands exactly, a contact's rows together; the factor form
    and ``W`` give the same labels, and the sub-problems are the blocks."""
    rng = np.random.default_rng(3)
    # contacts 0, 2 on body 0 (columns 0-5), contact 1 on body 1, a scalar row on body 1
    C = np.zeros((10, 12))
    for rows, cols in ((range(0, 3), range(0, 6)), (range(6, 9), range(0, 6))):
        C[np.ix_(list(rows), list(cols))] = rng.standard_normal((3, 6))
    C[3:6, 6:12] = rng.standard_normal((3, 6))
    C[9, 6:12] = rng.standard_normal(6)
    d = rng.uniform(0.5, 2.0, 12)
    q = rng.standard_normal(10)
    mu = np.full(3, 0.5)
    lo = np.array([-np.inf])
    by_factor = FrictionalContact(None, q, mu, row_lo=lo, factor=(sp.csr_matrix(C), d))
    by_W = FrictionalContact(C @ np.diag(d) @ C.T, q, mu, row_lo=lo)
    for p in (by_factor, by_W):
        labels, count = island_labels(p)
        assert count == 2
        assert list(labels) == [0, 0, 0, 1, 1, 1, 0, 0, 0, 1]
        parts = split(p)
        assert [list(rows) for rows, _ in parts] == [[0, 1, 2, 6, 7, 8], [3, 4, 5, 9]]
        for rows, sub in parts:
            assert np.allclose(sub.W.toarray(), (C @ np.diag(d) @ C.T)[np.ix_(rows, rows)])
        assert list(parts[1][1].row_lo) == [-np.inf]


def test_the_option_must_be_a_bool(far_piles: FarPiles) -> None:
    a, _, _ = far_piles()
    with pytest.raises(ConfigurationError, match="islands"):
        Simulator(a, "maximal", "coulomb", "nsgs", model_options={"islands": "yes"})
