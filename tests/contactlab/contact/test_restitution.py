"""Newton restitution at contacts (:mod:`contactlab.contact.rows`).

A contact that hits at normal speed ``U`` above ``restitution_threshold`` and
touches (or would touch within the step) leaves at ``e U``; slower contacts,
resting ones, and every contact when ``e = 0`` keep the plastic right-hand side.

Rebound height.  Semi-implicit Euler and the step that closes the gap give
``O(h)`` errors, derived in the module docstring of
:mod:`contactlab.contact.rows` and here for the bounds:

* the bounce step starts at gap ``d >= 0`` with impact speed ``U`` and ends at
  ``d + h e U`` with velocity ``e U``; the discrete flight from there rises to
  ``d + (e U)^2 / (2 g) + e U h / 2`` within ``g h^2 / 2``;
* falling from rest, ``z + v^2 / (2 g) = H - |v| h / 2 <= H``; a bounce from a
  gap needs ``d <= U h``; a landing through the gap-aware row (``d = 0``) loses
  at most the last step's ``(U + g h) h`` of height.

Hence ``e^2 H - e (1.5 e - 0.5) U h - g h^2 <= apex <= e^2 H + (1 - e^2 + e / 2) U h
+ g h^2``: for ``H = 0.25 m``, ``h = 1 ms`` (``U = 2.21 m/s``) the band is
-0.3 mm / +2.2 mm around 62.5 mm at ``e = 0.5`` and -1.4 mm / +1.7 mm around
160 mm at ``e = 0.8``.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import contactlab.contact.rows as rows_module
from contactlab import se3
from contactlab.bodies import body_from_shape
from contactlab.collision import collide
from contactlab.contact.rows import contact_restitution, contact_rhs
from contactlab.errors import ConfigurationError
from contactlab.scenario import get_scenario
from contactlab.scene import ContactParams, Scene
from contactlab.shapes import Sphere
from contactlab.simulator import Simulator

G = 9.81
RADIUS = 0.1
EXACT_QP = ("frictionless", "qpsolvers:daqp")  # active-set QP: solutions to round-off


def drop(
    e: float,
    height: float,
    duration: float,
    model: tuple[str, str] = EXACT_QP,
    formulation: str = "maximal",
    dt: float = 1e-3,
    **params,
):
    """Heights of the ball's lowest point above the ground and its vertical velocities."""
    scene = get_scenario("ball-drop").build(height=height, restitution=e, dt=dt, **params)
    run = Simulator(scene, formulation, *model).run(duration=duration)
    z = run.trajectory["position"][:, 0, 2] - RADIUS
    vz = run.trajectory["twist"][:, 0, 5]  # the ball does not turn: body z = world z
    return z, vz, run


def impacts(vz: np.ndarray) -> np.ndarray:
    """Steps ``k`` whose velocity turns from approaching (``vz[k] < 0``) to leaving."""
    return np.flatnonzero((vz[:-1] < 0) & (vz[1:] > 0))


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_ball_leaves_at_e_times_impact_speed_and_rebounds_to_e_squared_h(e):
    H, h = 0.25, 1e-3
    T = np.sqrt(2 * H / G)  # fall time; the second impact comes at T (1 + 2 e)
    z, vz, run = drop(e, H, duration=T * (1 + 2 * e) + 0.01, dt=h)
    assert run.status == "ok"
    ks = impacts(vz)
    assert len(ks) == 2
    # Newton's law at each impact step, to the QP's round-off
    np.testing.assert_allclose(vz[ks + 1], -e * vz[ks], rtol=1e-9)
    U = -vz[ks[0]]
    # free fall to the bounce step: H - 1.5 U h - g h^2 <= U^2 / (2 g) <= H (O(h))
    assert 2 * G * (H - 1.5 * U * h - G * h**2) <= U**2 <= 2 * G * H
    # first rebound height against Newton's e^2 H, within the band of the module docstring
    apex = z[ks[0] + 1 : ks[1]].max()
    low = e**2 * H - max(0.0, e * (1.5 * e - 0.5)) * U * h - G * h**2
    high = e**2 * H + (1 - e**2 + e / 2) * U * h + G * h**2
    assert low <= apex <= high, (low, apex, high)
    # and, sharper, the discrete flight from the bounce step's own gap and speed
    d = z[ks[0]]
    assert d >= -1e-12 and d <= U * h
    assert apex == pytest.approx(d + (e * U) ** 2 / (2 * G) + e * U * h / 2, abs=G * h**2 / 2)


def test_elastic_ball_returns_to_its_drop_height_at_every_bounce():
    # e = 1: the fall's semi-implicit Euler deficit U h / 2 is given back on the
    # way up (apex = e^2 H + (1 - e^2) d + e (1 - e) U h / 2 = H), so the bounce
    # neither gains nor loses height: every apex is H within g h^2 / 2, and the
    # motion repeats with the same period (measured: 100.000 mm three times).
    H, h = 0.1, 2e-3
    z, vz, _ = drop(1.0, H, duration=0.75, dt=h)
    ks = impacts(vz)
    assert len(ks) == 3
    np.testing.assert_allclose(vz[ks + 1], -vz[ks], rtol=1e-9)
    apexes = [z[a + 1 : b].max() for a, b in zip(ks[:-1], ks[1:], strict=True)]
    np.testing.assert_allclose(apexes, H, atol=G * h**2 / 2)
    assert len(set(np.diff(ks))) == 1  # periodic: the same number of steps per bounce


def test_slow_impacts_do_not_bounce():
    # impact speeds 0.243 m/s -> leaves at 0.121 (above the 0.1 m/s threshold) ->
    # lands at ~0.121, leaves at 0.061 -> lands at ~0.061 < 0.1: stays down.
    h = 5e-4
    z, vz, _ = drop(0.5, 0.003, duration=0.12, dt=h)
    ks = impacts(vz)
    assert len(ks) == 2
    np.testing.assert_allclose(-vz[ks], [np.sqrt(2 * G * 0.003), 0.121], rtol=0.05)
    rest = ks[-1] + int(0.03 / h)  # after the last landing (the last flight lasts 12 ms)
    assert np.all(z[rest:] == 0.0) and np.all(vz[rest:] == 0.0)
    # below the threshold from the start: lands and stays (0.089 m/s impact)
    z, vz, _ = drop(0.8, 0.0004, duration=0.03, dt=h)
    assert len(impacts(vz)) == 0
    assert z.min() == 0.0 and np.all(vz[-20:] == 0.0)


def test_zero_restitution_reproduces_the_plastic_contact_exactly(monkeypatch):
    # the same drop with e = 0 and with the rows built without the pre-step
    # velocities (the contact right-hand side before restitution existed)
    z0, vz0, _ = drop(0.0, 0.05, duration=0.15)
    assert z0.min() == 0.0 and vz0[-1] == 0.0  # plastic: lands and stays

    plain = rows_module.contact_rows

    def without_velocities(*args, phi=None, restitution=None, **kw):
        return plain(*args, **kw)

    monkeypatch.setattr(rows_module, "contact_rows", without_velocities)
    z1, vz1, _ = drop(0.0, 0.05, duration=0.15)
    assert np.array_equal(z0, z1) and np.array_equal(vz0, vz1)


def test_rhs_cases_gap_threshold_and_feedback():
    h, e = 1e-3, 0.5
    p = ContactParams(restitution=e, restitution_threshold=0.1, max_correction=1.0)
    #            resting, slow,  touching, closes gap, gap stays, deep penetration, leaving
    d = np.array([0.0, 0.0, 0.0, 1e-3, 3e-3, -0.01, 0.0])
    u = np.array([0.0, -0.05, -2.0, -2.0, -2.0, -0.4, 1.0])
    c = contact_rhs(d, h, p, u)
    plastic = contact_rhs(d, h, p)
    beta = 0.2 / h
    np.testing.assert_array_equal(plastic, [0, 0, 0, -1.0, -3.0, min(beta * 0.01, 1.0), 0])
    # bounce = max(plastic, -e u) on the contacts that touch within the step and
    # approach faster than the threshold; penetration feedback (1.0 m/s here,
    # capped) wins over a slower bounce (0.2 m/s)
    np.testing.assert_array_equal(c, [0, 0, 1.0, 1.0, -3.0, 1.0, 0])
    # per-contact coefficients; e = 0 entries keep the plastic value bit for bit
    c2 = contact_rhs(d, h, p, u, restitution=np.array([1, 1, 0, 0.25, 1, 1, 1.0]))
    np.testing.assert_array_equal(c2, [0, 0, 0, 0.5, -3.0, 1.0, 0])


def test_resting_box_stack_stays_at_rest_with_high_restitution():
    scene = get_scenario("box-stack").build(n=2)
    runs = {}
    for e in (0.0, 0.9):
        sc = replace(scene, contact=replace(scene.contact, restitution=e))
        # both through the general layers (a scene with restitution is outside the
        # compiled maximal step, which sums W z in another order)
        runs[e] = Simulator(
            sc, "maximal", "box-friction", "pgs", formulation_options={"compiled": False}
        ).run(duration=1.0)
    p = runs[0.9].trajectory["position"]
    assert np.abs(p - p[0]).max() < 1e-6  # over 1 s (200 steps of 5 ms)
    # no contact ever bounces: the run is the plastic one, bit for bit
    assert np.array_equal(p, runs[0.0].trajectory["position"])
    assert np.array_equal(runs[0.9].trajectory["twist"], runs[0.0].trajectory["twist"])


MODELS = [
    ("frictionless", "qpsolvers:daqp", 1e-9),
    ("anitescu-hart", "osqp", 1e-6),
    ("box-friction", "pgs", 1e-9),
    ("stewart-trinkle", "lemke", 1e-9),
]


@pytest.mark.parametrize(("model", "solver", "rtol"), MODELS)
def test_flat_box_landing_on_four_corners_bounces_in_every_model(model, solver, rtol):
    # a cube released 5 cm above the ground lands on four corner contacts at once
    e = 0.6
    base = get_scenario("box-stack").build(n=1)
    E = se3.make_transform(None, [0.0, 0.0, 0.1 + 0.05])[None]
    scene = replace(base, initial_E=E, contact=replace(base.contact, restitution=e), params={})
    # the law is checked to 1e-9: PGS is asked for that accuracy (its default request is 1e-6)
    options = {"solver_tol": 1e-10} if solver == "pgs" else None
    run = Simulator(scene, "maximal", model, solver, dt=1e-3, model_options=options).run(
        duration=0.13
    )
    vz = run.trajectory["twist"][:, 0, 5]
    (k,) = impacts(vz)
    assert run.steps["n_contacts"].iloc[k] == 4
    assert vz[k + 1] == pytest.approx(-e * vz[k], rel=rtol)
    assert -vz[k] == pytest.approx(np.sqrt(2 * G * 0.05), rel=0.02)
    w = run.trajectory["twist"][:, 0, :3]
    assert np.abs(w).max() < 1e-6  # the four corners bounce together: no spin


@pytest.mark.parametrize(("model", "solver"), [EXACT_QP, ("box-friction", "pgs")])
def test_reduced_coordinates_bounce_like_maximal(model, solver):
    zm, vm, _ = drop(0.7, 0.05, duration=0.2, model=(model, solver))
    zr, vr, run = drop(0.7, 0.05, duration=0.2, model=(model, solver), formulation="reduced")
    assert "q" in run.trajectory
    assert len(impacts(vr)) == 1
    np.testing.assert_allclose(vr, vm, atol=1e-9)
    np.testing.assert_allclose(zr, zm, atol=1e-9)


@pytest.mark.parametrize(("m2", "e"), [(3.0, 0.5), (1.0, 1.0)])
def test_head_on_collision_of_two_balls_matches_newtons_law(m2, e):
    # no gravity, no ground: ball 0 (1 kg) hits ball 1 (m2 kg, at rest) at 1 m/s
    # from a 2 mm gap.  Momentum and Newton's law give
    # v0+ = (1 - e m2) / (1 + m2), v1+ = (1 + e) / (1 + m2); with m2 = 1, e = 1 they swap.
    balls = tuple(
        body_from_shape(f"ball{i}", Sphere(radius=RADIUS), mass=m)[0]
        for i, m in enumerate((1.0, m2))
    )
    E = np.stack([se3.make_transform(None, [x, 0.0, 0.0]) for x in (0.0, 2 * RADIUS + 2e-3)])
    phi = np.zeros((2, 6))
    phi[0, 3] = 1.0
    scene = Scene(
        "two-balls",
        balls,
        gravity=np.zeros(3),
        initial_E=E,
        initial_phi=phi,
        contact=ContactParams(restitution=e),
    )
    run = Simulator(scene, "maximal", *EXACT_QP, dt=1e-3).run(duration=0.01)
    v = run.trajectory["twist"][-1, :, 3]
    np.testing.assert_allclose(v, [(1 - e * m2) / (1 + m2), (1 + e) / (1 + m2)], atol=1e-9)
    assert v[0] + m2 * v[1] == pytest.approx(1.0, abs=1e-12)  # momentum


def test_material_pair_restitution_overrides_the_scene_value():
    scene = get_scenario("ball-drop").build(height=0.1, restitution=0.0)
    pair = replace(scene.contact, restitution_pairs={("world", "ball"): 0.8})
    assert pair.restitution_of("ball", "world") == 0.8
    assert pair.restitution_of("ball", "box") == 0.0
    sc = replace(scene, contact=pair)
    E = se3.make_transform(None, [0.0, 0.0, RADIUS - 1e-3])[None]
    e = contact_restitution(sc, collide(sc, E))
    np.testing.assert_array_equal(e, [0.8])
    assert contact_restitution(scene, collide(scene, E)) is None  # scene-wide value
    run = Simulator(sc, "maximal", *EXACT_QP).run(duration=0.2)
    vz = run.trajectory["twist"][:, 0, 5]
    (k,) = impacts(vz)
    assert vz[k + 1] == pytest.approx(-0.8 * vz[k], rel=1e-9)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("restitution", 1.5),
        ("restitution", -0.1),
        ("restitution", float("nan")),
        ("restitution", "0.5"),
        ("restitution_threshold", -0.1),
        ("restitution_threshold", float("inf")),
    ],
)
def test_bad_values_raise_naming_the_field(field, value):
    with pytest.raises(ConfigurationError, match=f"ContactParams.{field}"):
        ContactParams(**{field: value})


def test_bad_pair_and_scenario_values_raise():
    with pytest.raises(ConfigurationError, match=r"restitution_pairs\[\('a', 'b'\)\]"):
        ContactParams(restitution_pairs={("a", "b"): 2.0})
    with pytest.raises(ConfigurationError, match="in \\[0, 1\\]"):
        get_scenario("ball-drop").build(restitution=1.2)
    with pytest.raises(ConfigurationError, match="restitution_threshold"):
        get_scenario("ball-drop").build(threshold=-1.0)
    ContactParams(restitution=1.0, restitution_threshold=0.0)  # the limits are allowed
