"""Mass properties of the shapes against independent methods.

- Solids of revolution (sphere, cylinder, capsule) against 1D quadrature of
  disc slices: ``m = rho int pi r(z)^2 dz``, ``Izz = rho int pi r^4 / 2 dz``,
  ``Ixx = rho int (pi r^4 / 4 + pi r^2 z^2) dz`` (``quad`` to 1e-12).
- Boxes against trimesh's polyhedral integration of a box mesh (exact).
- Placement by ``pose`` against Monte Carlo sampling (fixed seed).
- Meshes against the closed forms and an exact polygonal-prism volume, and
  the icosphere's second-order convergence to the sphere.
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh
from scipy.integrate import quad

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.shapes import Box, Capsule, Cylinder, Mesh, Plane, Sphere

RHO = 730.0  # [kg/m^3]


def _revolution(radius_of_z, z0: float, z1: float, kinks: tuple[float, ...] = ()):
    """Mass, Ixx, Izz of a solid of revolution about z (centre of mass at 0 by symmetry)."""
    opts = {"epsabs": 0.0, "epsrel": 1e-13, "points": kinks or None, "limit": 200}
    m = quad(lambda z: np.pi * radius_of_z(z) ** 2, z0, z1, **opts)[0]
    Izz = quad(lambda z: 0.5 * np.pi * radius_of_z(z) ** 4, z0, z1, **opts)[0]
    Ixx = quad(
        lambda z: 0.25 * np.pi * radius_of_z(z) ** 4 + np.pi * radius_of_z(z) ** 2 * z * z,
        z0,
        z1,
        **opts,
    )[0]
    return RHO * m, RHO * Ixx, RHO * Izz


def _check_revolution(shape, expected) -> None:
    m, Ixx, Izz = expected
    mp = shape.mass_properties(RHO)
    np.testing.assert_allclose(mp.mass, m, rtol=1e-10)
    np.testing.assert_allclose(mp.com, 0.0, atol=1e-15)
    np.testing.assert_allclose(mp.inertia, np.diag([Ixx, Ixx, Izz]), rtol=1e-10, atol=1e-14)


def test_sphere_against_quadrature() -> None:
    r = 0.37
    _check_revolution(
        Sphere(radius=r), _revolution(lambda z: np.sqrt(max(r * r - z * z, 0)), -r, r)
    )


def test_cylinder_against_quadrature() -> None:
    r, hh = 0.2, 0.65
    _check_revolution(Cylinder(radius=r, half_height=hh), _revolution(lambda z: r, -hh, hh))


def test_capsule_against_quadrature() -> None:
    r, hh = 0.15, 0.4

    def radius(z: float) -> float:
        d = max(abs(z) - hh, 0.0)
        return np.sqrt(max(r * r - d * d, 0.0))

    _check_revolution(
        Capsule(radius=r, half_height=hh), _revolution(radius, -hh - r, hh + r, (-hh, hh))
    )


def test_box_matches_seed_formula_and_trimesh() -> None:
    """Sueda's notes eq. (1.24) and trimesh's polyhedral integration of the same box."""
    ext = np.array([0.3, 1.1, 0.7])
    mp = Box(half_extents=ext / 2).mass_properties(RHO)
    m = RHO * ext.prod()
    dx, dy, dz = ext
    np.testing.assert_allclose(mp.mass, m, rtol=1e-14)
    np.testing.assert_allclose(
        np.diag(mp.inertia), m / 12 * np.array([dy**2 + dz**2, dz**2 + dx**2, dx**2 + dy**2])
    )
    tm = trimesh.creation.box(extents=ext)
    tm.density = RHO
    np.testing.assert_allclose(mp.inertia, tm.moment_inertia, rtol=1e-12, atol=1e-14)


def test_pose_moves_com_and_rotates_inertia() -> None:
    """A posed box against trimesh on the transformed box mesh (exact)."""
    rng = np.random.default_rng(3)
    pose = se3.random_transform(rng)
    box = Box(half_extents=np.array([0.1, 0.25, 0.4]), pose=pose)
    tm = trimesh.creation.box(extents=2 * box.half_extents)
    tm.apply_transform(pose)
    mp_ref = trimesh.triangles.mass_properties(tm.triangles, density=RHO)
    mp = box.mass_properties(RHO)
    np.testing.assert_allclose(mp.com, mp_ref.center_mass, atol=1e-13)
    np.testing.assert_allclose(mp.inertia, mp_ref.inertia, rtol=1e-12, atol=1e-12)


def test_posed_capsule_against_monte_carlo() -> None:
    """Rejection sampling of the capsule, mapped through its pose.

    With N accepted samples the second moments have relative standard error
    about ``1/sqrt(N)``; N ~ 3e5 gives ~0.2 %, so 1.5 % is a > 5 sigma bound,
    while a wrong rotation of the inertia or a wrong cap term is off by > 5 %.
    """
    rng = np.random.default_rng(11)
    r, hh = 0.2, 0.3
    pose = se3.make_transform(se3.exp_so3([0.4, -1.1, 0.7]), [0.3, -0.2, 1.0])
    cap = Capsule(radius=r, half_height=hh, pose=pose)
    x = rng.uniform(-1.0, 1.0, (600_000, 3)) * np.array([r, r, r + hh])
    d = np.maximum(np.abs(x[:, 2]) - hh, 0.0)
    x = x[x[:, 0] ** 2 + x[:, 1] ** 2 + d**2 <= r * r]
    box_volume = 8 * r * r * (r + hh)
    mass = RHO * box_volume * len(x) / 600_000
    y = se3.transform_points(pose, x)
    c = y.mean(axis=0)
    C = (y - c).T @ (y - c) / len(y)
    inertia = mass * (np.trace(C) * np.eye(3) - C)
    mp = cap.mass_properties(RHO)
    np.testing.assert_allclose(mp.mass, mass, rtol=0.01)
    np.testing.assert_allclose(mp.com, c, atol=0.002)
    np.testing.assert_allclose(mp.inertia, inertia, atol=0.015 * np.abs(mp.inertia).max())


def test_mesh_box_equals_box() -> None:
    ext = np.array([0.4, 0.9, 1.3])
    tm = trimesh.creation.box(extents=ext)
    offset = np.array([0.5, -2.0, 0.25])
    mesh = Mesh(vertices=tm.vertices + offset, faces=tm.faces)
    mp, ref = mesh.mass_properties(RHO), Box(half_extents=ext / 2).mass_properties(RHO)
    np.testing.assert_allclose(mp.mass, ref.mass, rtol=1e-13)
    np.testing.assert_allclose(mp.com, offset, atol=1e-13)  # centroid, not the origin
    np.testing.assert_allclose(mp.inertia, ref.inertia, rtol=1e-12, atol=1e-14 * ref.inertia.max())


def test_mesh_prism_volume_is_exact() -> None:
    """A regular n-gon prism of circumradius r: V = n/2 r^2 sin(2 pi/n) L."""
    n, r, L = 24, 0.3, 0.8
    mesh = Mesh.from_trimesh(trimesh.creation.cylinder(radius=r, height=L, sections=n))
    mp = mesh.mass_properties(RHO)
    np.testing.assert_allclose(mp.mass, RHO * n / 2 * r * r * np.sin(2 * np.pi / n) * L, rtol=1e-12)
    assert mp.inertia[0, 0] == pytest.approx(mp.inertia[1, 1], rel=1e-12)  # n-fold symmetry


def test_icosphere_converges_to_sphere_at_second_order() -> None:
    """Inscribed polyhedra: mass and inertia errors shrink ~4x per subdivision (edge /2)."""
    r = 0.5
    ref = Sphere(radius=r).mass_properties(RHO)
    errs = []
    for sub in (2, 3, 4):
        mp = Mesh.from_trimesh(trimesh.creation.icosphere(subdivisions=sub, radius=r))
        mp = mp.mass_properties(RHO)
        np.testing.assert_allclose(mp.com, 0.0, atol=1e-12)
        errs.append((abs(mp.mass / ref.mass - 1), abs(mp.inertia[0, 0] / ref.inertia[0, 0] - 1)))
    errs = np.array(errs)
    ratios = errs[:-1] / errs[1:]
    assert np.all((ratios > 3.5) & (ratios < 4.5)), ratios
    assert errs[-1].max() < 0.005


def test_mesh_pose_carries_centroid() -> None:
    tm = trimesh.creation.box(extents=[0.2, 0.2, 0.2])
    c = np.array([1.0, 0.0, 0.0])
    pose = se3.make_transform(se3.exp_so3([0.0, 0.0, np.pi / 2]), [0.0, 0.0, 3.0])
    mp = Mesh(vertices=tm.vertices + c, faces=tm.faces, pose=pose).mass_properties(RHO)
    np.testing.assert_allclose(mp.com, [0.0, 1.0, 3.0], atol=1e-14)


def test_mesh_triangle_soup_is_accepted() -> None:
    tm = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    soup = tm.vertices[tm.faces].reshape(-1, 3)
    mesh = Mesh(vertices=soup, faces=np.arange(len(soup)).reshape(-1, 3))
    assert mesh.mass_properties(1.0).mass == pytest.approx(1.0, rel=1e-13)


def test_bad_meshes_are_rejected() -> None:
    tm = trimesh.creation.box(extents=[1.0, 1.0, 1.0])
    V, F = np.asarray(tm.vertices), np.asarray(tm.faces)
    with pytest.raises(ConfigurationError, match="not closed"):
        Mesh(vertices=V, faces=F[1:])
    with pytest.raises(ConfigurationError, match="wound inward"):
        Mesh(vertices=V, faces=F[:, ::-1])
    with pytest.raises(ConfigurationError, match="indices"):
        Mesh(vertices=V, faces=F + 1)
    with pytest.raises(ConfigurationError, match="integer"):
        Mesh(vertices=V, faces=F.astype(float))
    with pytest.raises(ConfigurationError, match=r"\(V, 3\)"):
        Mesh(vertices=V[:, :2], faces=F)


def test_bad_primitives_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="sphere radius"):
        Sphere(radius=0.0)
    with pytest.raises(ConfigurationError, match="box half extent y"):
        Box(half_extents=[1.0, -1.0, 1.0])
    with pytest.raises(ConfigurationError, match="density"):
        Sphere(radius=1.0).mass_properties(-1.0)
    with pytest.raises(ConfigurationError, match="static geometry"):
        Plane().mass_properties(1000.0)


def test_bounding_radius_contains_the_solid() -> None:
    rng = np.random.default_rng(5)
    shapes = [
        (Box(half_extents=[0.1, 0.2, 0.3]), lambda x: np.all(np.abs(x) <= [0.1, 0.2, 0.3], 1)),
        (
            Cylinder(radius=0.2, half_height=0.5),
            lambda x: (np.hypot(x[:, 0], x[:, 1]) <= 0.2) & (np.abs(x[:, 2]) <= 0.5),
        ),
        (
            Capsule(radius=0.2, half_height=0.5),
            lambda x: (
                np.hypot(np.hypot(x[:, 0], x[:, 1]), np.maximum(np.abs(x[:, 2]) - 0.5, 0)) <= 0.2
            ),
        ),
    ]
    for shape, inside in shapes:
        x = rng.uniform(-1, 1, (50_000, 3))
        x = x[inside(x)]
        radius = np.linalg.norm(x, axis=1).max()
        assert radius <= shape.bounding_radius() < radius + 0.05
