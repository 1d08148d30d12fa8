"""Box friction's per-contact warm start and its bottom-up row order.

Facts: a step re-solved from its own recorded impulses starts at the
solution (PGS needs no sweep); impulses follow their contacts when the
collision lists them in another order, and a contact that moved farther than
the match radius starts from zero; the row order does not change the step's
velocities (only how fast Gauss--Seidel gets there).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from contactlab.contact.identity import MATCH_RADIUS, match_contacts, pair_ids
from contactlab.models.base import make_model
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator


def stack_problem():  # type: ignore[no-untyped-def]
    """The second step of a resting 3-cube stack (h = 10 ms), and the cache it starts from."""
    scene = get_scenario("box-stack").build(n=3)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=0.01, model_options={"solver_tol": 1e-9}
    )
    state, _ = sim.step(sim.initial_state(), 0)
    _, record = sim.step(state, 1)
    return record.problem


def test_resolving_from_own_impulses_takes_no_sweep() -> None:
    problem = stack_problem()
    assert problem.n_contacts >= 8  # four corners per face contact
    model = make_model("box-friction", "pgs", solver_tol=1e-8)
    cache: dict = {}
    first = model.solve(problem, cache)
    assert first.status == "optimal" and first.iterations > 0
    again = model.solve(problem, cache)
    # every contact matched to itself: the warm start is the solution (friction through a
    # world vector and back onto the same orthonormal tangents: rounding only)
    assert again.status == "optimal"
    assert again.iterations == 0
    assert np.max(np.abs(again.v - first.v)) == 0.0


def test_impulses_follow_contacts_and_moved_contacts_start_cold() -> None:
    rng = np.random.default_rng(3)
    nc = 12
    point = rng.uniform(-0.05, 0.05, (nc, 3))
    pair = np.column_stack([rng.integers(0, 3, nc), -np.ones(nc), np.zeros(nc), np.zeros(nc)])
    old = pair.astype(np.int64)
    perm = rng.permutation(nc)
    new_point = point[perm] + 1e-3  # a small slide keeps the identity
    new_point[0] += 2.0 * MATCH_RADIUS  # this one moved too far
    src, _ = match_contacts(old, point, pair[perm].astype(np.int64), new_point)
    assert src[0] == -1
    np.testing.assert_array_equal(src[1:], perm[1:])
    # another pair of bodies never matches, however close
    other = pair[perm].astype(np.int64)
    other[:, 0] += 10
    assert np.all(match_contacts(old, point, other, point[perm])[0] == -1)


def test_row_order_does_not_change_the_velocities() -> None:
    problem = stack_problem()
    # a sideways push on the top cube that static friction holds: tangent rows inside their box
    f = problem.f.copy()
    f[-3] += 0.02
    problem = replace(problem, f=f)
    tol = 1e-9
    sols = [
        make_model("box-friction", "pgs", row_order=order, solver_tol=tol).solve(problem, {})
        for order in ("rows", "height")
    ]
    assert all(s.status == "optimal" for s in sols)
    # the step velocities are unique (the impulses of four coplanar corners are not); two
    # PGS runs to a 1e-9 residual differ by 1.3e-8 m/s here (760 and 784 sweeps)
    assert np.max(np.abs(sols[0].v - sols[1].v)) < 1e-7


def test_pair_ids_group_like_rows() -> None:
    """The packed-key grouping gives exactly the ids of grouping the rows themselves
    (``np.unique(axis=0)``, lexicographic), ``-1`` entries (ground, no shape) included."""
    rng = np.random.default_rng(3)
    pairs = rng.integers(-1, 40, (2000, 4))
    pairs[::7] = pairs[3]  # repeated identities
    expected = np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1)
    np.testing.assert_array_equal(pair_ids(pairs), expected)
    wide = pairs.copy()
    wide[0, 0] = 2**40  # ranges too wide to pack: grouped as rows
    expected = np.unique(wide, axis=0, return_inverse=True)[1].reshape(-1)
    np.testing.assert_array_equal(pair_ids(wide), expected)


def test_identify_in_one_pass_equals_grouping_by_rows() -> None:
    """:func:`identify` (pairs packed into one key each, matched and given unique ids in one
    compiled pass) gives exactly the ids and origins of the path that groups the pairs as
    rows (``np.unique(axis=0)``, taken when the keys are too wide to pack): contacts
    that persist, split (two new contacts near one old one: the nearer keeps the id, the
    first on a tie) and are new, points on a 1 mm grid so that ties occur."""
    from contactlab.contact.identity import ContactTrack, _identify_rows, identify

    rng = np.random.default_rng(11)

    class Contacts:
        def __init__(self, n: int) -> None:
            self.body_a, self.body_b = rng.integers(0, 3, n), rng.integers(-1, 2, n)
            self.shape_a, self.shape_b = rng.integers(0, 2, n), np.full(n, -1)
            self.point = np.round(rng.random((n, 3)) * 0.015, 3)

        def __len__(self) -> int:
            return int(self.body_a.size)

    kept = split = 0
    for _ in range(300):
        old = identify(Contacts(int(rng.integers(1, 40))), None)
        old = ContactTrack(old.ids + 5, old.origin, old.pair, old.point, old.next_id + 5)
        new = Contacts(int(rng.integers(1, 40)))
        track = identify(new, old)
        pair = np.column_stack([new.body_a, new.body_b, new.shape_a, new.shape_b])
        rows = _identify_rows(pair.astype(np.int64), new.point, old, old.next_id)
        np.testing.assert_array_equal(track.ids, rows.ids)
        np.testing.assert_array_equal(track.origin, rows.origin)
        assert track.next_id == rows.next_id
        kept += int(np.sum(track.ids < old.next_id))
        split += int(np.sum((track.origin >= 0) & (track.ids >= old.next_id)))
    assert kept > 100 and split > 10  # both cases are exercised
