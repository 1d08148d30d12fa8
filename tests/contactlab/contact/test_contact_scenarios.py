"""The contact scenarios build consistent scenes: initial contacts as designed, no overlap.

Resting bodies are placed analytically on their support, so their contacts
are at distance zero up to round-off (``1e-12`` m); dropped bodies do not
touch anything.  The sheath's speed drive is checked against finite
differences (central, ``eps = 1e-6``, tolerance ``1e-6`` relative to the
unit-scale entries).
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.collision import collide
from contactlab.errors import ConfigurationError, ParameterError
from contactlab.scenario import get_scenario
from scenarios.contact import SpeedDrive

ROUND_OFF = 1e-12


def initial_contacts(name, **params):
    scene = get_scenario(name).build(**params)
    return scene, collide(scene, scene.initial_E)


@pytest.mark.parametrize("angle", [0.0, 20.0, 35.0])
def test_box_incline_rests_face_down_on_the_tilted_plane(angle):
    scene, c = initial_contacts("box-incline", angle_deg=angle)
    assert len(c) == 4 and set(c.body_b) == {-1}
    assert np.all(np.abs(c.distance) < ROUND_OFF)
    n = scene.extras["normal"]
    assert np.allclose(c.normal, n)
    th = np.radians(angle)
    assert np.allclose(n, [np.sin(th), 0, np.cos(th)])
    # gravity's component along the downhill direction is g sin(theta)
    assert scene.gravity @ scene.extras["downhill"] == pytest.approx(9.81 * np.sin(th))
    assert scene.extras["slides"] == (np.tan(th) > 0.5)


def test_ball_incline_touches_at_one_point_below_its_centre():
    scene, c = initial_contacts("ball-incline", angle_deg=25.0, radius=0.1)
    assert len(c) == 1 and abs(c.distance[0]) < ROUND_OFF
    centre = scene.initial_E[0, :3, 3]
    assert np.allclose(centre - c.point[0], 0.1 * scene.extras["normal"])
    assert scene.extras["rolls"]
    assert scene.extras["acceleration"] == pytest.approx(5 / 7 * 9.81 * np.sin(np.radians(25)))
    slipping = get_scenario("ball-incline").build(angle_deg=40.0, mu=0.1)
    assert not slipping.extras["rolls"]


@pytest.mark.parametrize("name", ["box-slide", "box-push", "sheath"])
def test_boxes_on_the_ground_start_with_four_zero_distance_contacts(name):
    scene, c = initial_contacts(name)
    assert len(c) == 4 and np.all(np.abs(c.distance) < ROUND_OFF)
    assert np.allclose(c.normal, [0, 0, 1])


def test_box_slide_velocity_and_prediction():
    scene = get_scenario("box-slide").build(v0=3.0, direction_deg=45.0, mu=0.4)
    v = scene.initial_E[0, :3, :3] @ scene.initial_phi[0, 3:]
    assert np.allclose(v, 3.0 * np.array([1, 1, 0]) / np.sqrt(2))
    assert scene.extras["stopping_distance"] == pytest.approx(9.0 / (2 * 0.4 * 9.81))


def test_box_push_force_and_prediction():
    scene = get_scenario("box-push").build(force=10.0, direction_deg=30.0, elevation_deg=-20.0)
    (force,) = scene.forces
    F = np.asarray(force.force)
    assert np.linalg.norm(F) == pytest.approx(10.0)
    assert F[2] == pytest.approx(-10 * np.sin(np.radians(20)))
    load = 9.81 - F[2]
    assert scene.extras["acceleration"] == pytest.approx(max(np.hypot(*F[:2]) - 0.5 * load, 0))
    with pytest.raises(ConfigurationError, match="lifts"):
        get_scenario("box-push").build(force=100.0, elevation_deg=60.0)


@pytest.mark.parametrize("n", [1, 2, 5])
def test_box_stack_has_four_contacts_per_interface(n):
    scene, c = initial_contacts("box-stack", n=n)
    assert len(c) == 4 * n
    assert np.all(np.abs(c.distance) < ROUND_OFF)
    pairs = sorted({(int(a), int(b)) for a, b in zip(c.body_a, c.body_b)})
    expect = sorted({(0, -1)} | {(min(k, k + 1), max(k, k + 1)) for k in range(n - 1)})
    assert pairs == expect
    # normals point from B toward A: the lower box (A) is pushed down by the upper one
    between = c.body_b >= 0
    assert np.allclose(c.normal[between], [0, 0, -1])


def test_mass_ratio_stack_masses():
    scene, c = initial_contacts("mass-ratio-stack", ratio=1000.0, mass=0.2)
    assert scene.masses.tolist() == pytest.approx([0.2, 200.0])
    assert len(c) == 8


def test_box_pile_is_seeded_and_nothing_touches_initially():
    a = get_scenario("box-pile").build(n=150, seed=3)
    b = get_scenario("box-pile").build(n=150, seed=3)
    c = get_scenario("box-pile").build(n=150, seed=4)
    assert np.array_equal(a.initial_E, b.initial_E)
    assert not np.allclose(a.initial_E, c.initial_E)
    assert len(collide(a, a.initial_E)) == 0
    assert np.all(a.initial_E[:, 2, 3] > 0.5 * np.sqrt(3) * 0.1)


def test_parameters_from_the_command_line_are_parsed():
    scene = get_scenario("sheath").build(half_extents="0.3,0.3,0.1", v="2", dt="0.005")
    assert scene.extras["anitescu_hart_gap"] == pytest.approx(0.005 * 0.5 * 2.0)
    assert scene.dt == 0.005
    assert scene.initial_E[0, 2, 3] == pytest.approx(0.1)
    with pytest.raises(ParameterError, match="angle"):
        get_scenario("box-incline").build(angel_deg=3.0)
    with pytest.raises(ConfigurationError, match="angle_deg"):
        get_scenario("box-incline").build(angle_deg=95.0)


def test_sheath_margin_covers_the_anitescu_hart_gap():
    scene = get_scenario("sheath").build(v=4.0, mu=0.8, dt=0.01)
    assert scene.contact.margin == pytest.approx(3 * 0.01 * 0.8 * 4.0)


def test_speed_drive_damping_is_the_derivative_of_its_wrench():
    scene = get_scenario("sheath").build()
    (drive,) = scene.forces
    assert isinstance(drive, SpeedDrive)
    rng = np.random.default_rng(0)
    E = se3.random_transform(rng, 1)
    phi = rng.normal(size=(1, 6))
    D = drive.local_damping(scene, E, phi)
    eps = 1e-6
    fd = np.zeros((6, 6))
    for k in range(6):
        dp = np.zeros((1, 6))
        dp[0, k] = eps
        fd[:, k] = -(
            drive.local_wrench(scene, E, phi + dp) - drive.local_wrench(scene, E, phi - dp)
        )[0] / (2 * eps)
    assert np.allclose(D, fd, atol=1e-6)
    assert np.allclose(D, D.T)


def test_speed_drive_pushes_with_its_bias_at_the_target_speed():
    scene = get_scenario("sheath").build(v=1.5, mu=0.4, mass=2.0)
    (drive,) = scene.forces
    E = scene.initial_E
    phi = np.zeros((1, 6))
    phi[0, 3] = 1.5  # sliding at the target speed: only the bias remains
    w = drive.local_wrench(scene, E, phi)[0]
    F = np.array([0.4 * 2.0 * 9.81, 0, 0])
    r = np.array([0, 0, -0.05])
    assert np.allclose(w, np.concatenate([np.cross(r, F), F]))
