"""The divergence guard's compiled verdict equals its numpy reference.

On random states (body transforms, twists, contacts, metrics), with NaN entries
and with each bound broken in turn, the kernel's verdict is ``OK`` exactly when
:meth:`DivergenceGuard.check_reference` raises nothing, and otherwise names the
bound whose :class:`DivergenceError` the reference raises.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from contactlab import _guard_kernels as GK
from contactlab import divergence as D
from contactlab import se3
from contactlab.errors import DivergenceError

#: the quantity (as the error names it) of each verdict
QUANTITY = {
    GK.ENERGY: "energy gain",
    GK.DRIFT: "joint/loop drift",
    GK.JOINT: "separation of joint",
    GK.PENETRATION: "penetration depth",
    GK.LINEAR_SPEED: "speed of body",
    GK.ANGULAR_SPEED: "angular speed of body",
}


def _guard(rng: np.random.Generator, bounded: bool) -> D.DivergenceGuard:
    nb = 5
    radii = rng.uniform(0.05, 0.5, nb)
    masses = rng.uniform(0.5, 3.0, nb)
    masses[1] = 0.0  # a massless link: no speed bound
    inertia = rng.uniform(0.01, 0.1, nb)
    inertia[2] = 0.0
    parent = np.array([-1, 0, 1, 3], dtype=np.int64)
    child = np.array([0, 1, 2, 4], dtype=np.int64)
    joints = D.JointFrames(
        ("hip", "knee", "ankle", "wrist"),
        parent,
        child,
        rng.normal(0, 0.1, (4, 3)),
        rng.normal(0, 0.1, (4, 3)),
        rng.uniform(0.0, 0.05, 4),
        rng.uniform(0.1, 0.5, 4),
    )
    bounds = D.DivergenceBounds(
        names=tuple(f"b{i}" for i in range(nb)),
        length_scale=2.0,
        energy_scale=5.0,
        energy_bound=50.0 if bounded else None,
        drift_bound=2.0,
        radii=radii,
        masses=masses,
        min_inertia=inertia,
        gravity=9.81,
        initial_speed=0.3,
        active=not bounded,
        joints=joints,
    )
    return D.DivergenceGuard(bounds, initial_energy=1.5)


def _state(rng: np.random.Generator, nb: int, scale: float) -> tuple:
    E = np.stack(
        [se3.make_transform(se3.exp_so3(rng.normal(0, 2, 3)), rng.normal(0, scale, 3))
         for _ in range(nb)]
    )  # fmt: skip
    phi = rng.normal(0, 1, (nb, 6)) * rng.choice([1.0, 30.0, 300.0], (nb, 1))
    nc = int(rng.integers(0, 6))
    contacts = SimpleNamespace(
        distance=-np.abs(rng.normal(0, scale * 0.3, nc)),
        body_a=rng.integers(0, nb, nc),
        body_b=rng.integers(-1, nb, nc),
    )
    row = {
        "total_energy": 1.5 + rng.normal(0, 40),
        "constraint_error": abs(rng.normal(0, 1.5)),
    }
    if rng.random() < 0.3:  # a NaN somewhere
        where = int(rng.integers(0, 5))
        if where == 0:
            row["total_energy"] = np.nan
        elif where == 1:
            row["constraint_error"] = np.nan
        elif where == 2:
            phi[rng.integers(0, nb), rng.integers(0, 6)] = np.nan
        elif where == 3 and nc:
            contacts.distance[rng.integers(0, nc)] = np.nan
        else:
            E[rng.integers(0, nb), rng.integers(0, 3), 3] = np.nan
    return E, phi, contacts, row


def _draws(rng: np.random.Generator, count: int, with_E: float):
    """``count`` random states after a step: ``(i, t, row, phi, contacts, E)``, the body
    transforms given with probability ``with_E`` (else ``None``)."""
    for i in range(count):
        E, phi, contacts, row = _state(rng, 5, float(rng.choice([0.01, 0.1, 1.0])))
        t = float(rng.uniform(0, 5))
        yield i, t, row, phi, contacts, (E if rng.random() < with_E else None)


@pytest.mark.parametrize("bounded", [True, False])
def test_compiled_verdict_is_the_reference_on_random_states(bounded):
    rng = np.random.default_rng(7 if bounded else 8)
    guard = _guard(rng, bounded)
    seen = set()
    for i, t, row, phi, contacts, given in _draws(rng, 3000, 0.8):
        code = guard.verdict(i, t, row, phi, contacts, given)
        seen.add(code)
        try:
            guard.check_reference(i, t, row, phi, contacts, given)
        except DivergenceError as err:
            assert code != GK.OK, str(err)
            assert err.quantity.startswith(QUANTITY[code]), (code, err.quantity)
            with pytest.raises(DivergenceError) as again:  # the same error through check
                guard.check(i, t, row, phi, contacts, given)
            assert str(again.value) == str(err)
        else:
            assert code == GK.OK, (code, row)
            guard.check(i, t, row, phi, contacts, given)
    expected = {GK.OK, GK.DRIFT, GK.JOINT, GK.PENETRATION}
    if bounded:
        expected |= {GK.ENERGY, GK.LINEAR_SPEED, GK.ANGULAR_SPEED}
    assert seen == expected


def test_verdict_does_not_depend_on_the_contacts_layout():
    """Contacts given as lists, strided views or 32-bit body indices get the verdict of the
    same contacts as contiguous float64 / int64 arrays (passed to the kernel as they are)."""
    rng = np.random.default_rng(11)
    guard = _guard(rng, True)
    seen = set()
    for i, t, row, phi, contacts, E in _draws(rng, 3000, 0.5):
        code = guard.verdict(i, t, row, phi, contacts, E)
        seen.add(code)
        wide = np.repeat(contacts.distance, 2)  # every other entry: a strided view
        layouts = (
            SimpleNamespace(
                distance=contacts.distance.tolist(),
                body_a=contacts.body_a.tolist(),
                body_b=contacts.body_b.tolist(),
            ),
            SimpleNamespace(
                distance=wide[::2],
                body_a=contacts.body_a.astype(np.int32),
                body_b=contacts.body_b.astype(np.int32),
            ),
            SimpleNamespace(
                distance=contacts.distance[:, None],
                body_a=contacts.body_a[:, None],
                body_b=contacts.body_b[:, None],
            ),
        )
        for other in layouts:
            assert guard.verdict(i, t, row, phi, other, E) == code
        world = SimpleNamespace(distance=contacts.distance)  # no body indices: the world's
        both = SimpleNamespace(
            distance=contacts.distance,
            body_a=np.full(contacts.distance.size, -1, dtype=np.int64),
            body_b=np.full(contacts.distance.size, -1, dtype=np.int64),
        )
        assert guard.verdict(i, t, row, phi, world, E) == guard.verdict(i, t, row, phi, both, E)
    assert {GK.OK, GK.PENETRATION} <= seen


@pytest.mark.parametrize("bounded", [True, False])
def test_verdict_of_arrays_is_the_verdict_without_transforms(bounded):
    """The verdict a run takes on a compiled step (its row's total energy and drift, the
    contact arrays as they are) is :meth:`verdict`'s on the same state without body
    transforms, so the reference's."""
    rng = np.random.default_rng(13 if bounded else 14)
    guard = _guard(rng, bounded)
    seen = set()
    for i, t, row, phi, contacts, _ in _draws(rng, 2000, 0.0):
        code = guard.verdict_of_arrays(
            t, row["total_energy"], row["constraint_error"], phi,
            contacts.distance, contacts.body_a, contacts.body_b,
        )  # fmt: skip
        assert code == guard.verdict(i, t, row, phi, contacts, None)
        seen.add(code)
    assert {GK.OK, GK.DRIFT, GK.PENETRATION} <= seen
