"""Coulomb friction facts on a box on a plane, for every friction model.

The box (m = 2 kg, half extents 0.5 x 0.5 x 0.1 m, mu = 0.5) rests on four
corner contacts; a horizontal force F at its centre of mass either stays
below mu m g = 9.81 N (the box must not move) or exceeds it (the box must
accelerate at (F - mu m g) / m).  The flat box keeps all four contacts (the
friction moment mu m g * 0.1 m is far below the restoring m g * 0.5 m).
"""

from __future__ import annotations

import numpy as np
import pytest
from model_problems import G_ACC, box_on_plane, next_step

from contactlab.models import make_model

M_BOX, MU, H = 2.0, 0.5, 0.01
CLARABEL = "cvxpy:clarabel"

# (model, solver, options): the models that respect Coulomb's law
COULOMB = [
    ("box-friction", "pgs", {}),
    ("box-friction", "pgs", {"cone": "disc"}),
    ("box-friction", "osqp", {}),
    ("stewart-trinkle", "lemke", {}),
    ("staggered-projections", "osqp", {}),
    ("staggered-projections", "pgs", {"cone": "box"}),
    ("staggered-projections", CLARABEL, {"cone": "soc"}),
]


def ids(case: tuple) -> str:
    return f"{case[0]}-{case[1]}-{case[2].get('cone', '')}"


@pytest.mark.parametrize("case", COULOMB + [("anitescu-hart", CLARABEL, {})], ids=ids)
def test_box_pushed_below_the_friction_limit_stays(case: tuple) -> None:
    name, solver, opts = case
    model = make_model(name, solver, **opts)
    p = box_on_plane(m=M_BOX, mu=MU, h=H, force=(0.8 * MU * M_BOX * G_ACC, 0.0))
    cache: dict = {}
    for _ in range(3):
        s = model.solve(p, cache)
        assert s.status == "optimal"
        assert np.max(np.abs(s.v)) < 1e-6, s.v
        p = next_step(p, s.v)


@pytest.mark.parametrize("case", COULOMB, ids=ids)
def test_box_pushed_above_the_limit_accelerates_at_the_coulomb_rate(case: tuple) -> None:
    name, solver, opts = case
    model = make_model(name, solver, **opts)
    F = 1.5 * MU * M_BOX * G_ACC
    p = box_on_plane(m=M_BOX, mu=MU, h=H, force=(F, 0.0))
    cache: dict = {}
    steps = 5
    for _ in range(steps):
        s = model.solve(p, cache)
        assert s.status == "optimal"
        p = next_step(p, s.v)
    accel = s.v[3] / (steps * H)
    assert accel == pytest.approx((F - MU * M_BOX * G_ACC) / M_BOX, rel=0.01)
    assert abs(s.v[5]) < 1e-6 and np.max(np.abs(s.v[:3])) < 1e-6  # no lift, no tipping


@pytest.mark.parametrize(
    "case",
    [
        ("stewart-trinkle", "lemke", {}),
        ("staggered-projections", "osqp", {}),
        ("staggered-projections", CLARABEL, {"cone": "soc"}),
        ("box-friction", "pgs", {"cone": "disc"}),
    ],
    ids=ids,
)
def test_sliding_box_stays_on_the_ground(case: tuple) -> None:
    """Exact-complementarity models: zero normal velocity, v_x = v0 - mu g h, full-cone friction."""
    name, solver, opts = case
    v0 = 1.0
    p = box_on_plane(m=M_BOX, mu=MU, h=H, v0=(v0, 0.0))
    s = make_model(name, solver, **opts).solve(p, {})
    np.testing.assert_allclose(p.N @ s.v, 0.0, atol=1e-7)
    assert s.v[3] == pytest.approx(v0 - MU * G_ACC * H, rel=1e-6)
    # every contact slides: its friction is on the cone boundary, opposite the slip
    lt = s.lambda_T.reshape(-1, 2)
    np.testing.assert_allclose(lt[:, 0], -MU * s.lambda_N, atol=1e-7)
    np.testing.assert_allclose(lt[:, 1], 0.0, atol=1e-7)


def friction_angle_error(case: tuple, direction_deg: float, k: int | None = None) -> float:
    """Angle [deg] between the total friction impulse and minus the slip velocity after one step."""
    name, solver, opts = case
    a = np.radians(direction_deg)
    p = box_on_plane(m=M_BOX, mu=MU, h=H, v0=(np.cos(a), np.sin(a)), directions=k or 4)
    s = make_model(name, solver, **opts).solve(p, {})
    friction = s.lambda_T.reshape(-1, 2).sum(axis=0)
    slip = s.v[3:5]
    cos = -friction @ slip / (np.linalg.norm(friction) * np.linalg.norm(slip))
    return float(np.degrees(np.arccos(np.clip(cos, -1, 1))))


def expected_error(friction_deg: float, slip_deg: float, scale: float = 1.0) -> float:
    """Angle between a friction impulse along ``friction_deg`` and minus the slip after the step.

    The impulse has magnitude ``scale * mu m g h`` (total over the contacts), so
    ``v+ = v0 + scale * mu g h * u`` with ``u`` the friction direction.
    """
    u = np.array([np.cos(np.radians(friction_deg)), np.sin(np.radians(friction_deg))])
    v0 = np.array([np.cos(np.radians(slip_deg)), np.sin(np.radians(slip_deg))])
    v_plus = v0 + scale * MU * G_ACC * H * u
    return float(np.degrees(np.arccos(-u @ v_plus / np.linalg.norm(v_plus))))


def test_four_direction_pyramid_distorts_oblique_sliding() -> None:
    """Known distortion: at 30 deg the 4-sided pyramid's maximal dissipation picks the -t1 vertex.

    The friction impulse lies in the diamond |x| + |y| <= mu lambda_N; the
    point minimising its dot product with a slip at 30 deg is the vertex
    (-mu lambda_N, 0): about 30 deg from the slip's opposite (31.5 deg after the
    step has turned the slip).  With 16 directions the nearest vertex (202.5
    deg) is 7.5 deg off (at most 11.25 deg for any slip); box friction bounds
    each tangent row separately and pushes along the corner (-1, -1) with
    magnitude sqrt(2) mu lambda_N; the exact cone has no error.
    """
    for case in (("stewart-trinkle", "lemke", {}), ("staggered-projections", "osqp", {})):
        err4 = friction_angle_error(case, 30.0, k=4)
        assert err4 == pytest.approx(expected_error(180.0, 30.0), abs=1e-4)
        assert 30.0 < err4 < 32.0
        err16 = friction_angle_error(case, 30.0, k=16)
        assert err16 == pytest.approx(expected_error(202.5, 30.0), abs=1e-4)
        assert err16 < 180.0 / 16
    box = friction_angle_error(("box-friction", "pgs", {}), 30.0)
    assert box == pytest.approx(expected_error(225.0, 30.0, np.sqrt(2.0)), abs=1e-4)
    soc = ("staggered-projections", CLARABEL, {"cone": "soc"})
    assert friction_angle_error(soc, 30.0) < 0.05
    assert friction_angle_error(("box-friction", "pgs", {"cone": "disc"}), 30.0) < 1e-4
