"""Bodies from shapes and composites (Sueda's notes §1.7.1) against independent methods.

The composite code moves spatial inertias with the adjoint (eq. 1.26); the
tests use the 3x3 parallel-axis theorem, trimesh on the union mesh, and the
kinetic energy of a moving point cloud as independent references.
"""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from contactlab import se3
from contactlab.bodies import body_from_shape, composite, principal_axes, spatial_inertia
from contactlab.errors import ConfigurationError
from contactlab.shapes import Box, Cylinder, Mesh, Plane, Sphere

RHO = 500.0


def _parallel_axis(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Total mass, com, and inertia about the com from the 3x3 parallel-axis theorem."""
    m = sum(p.mass for p in parts)
    c = sum(p.mass * p.com for p in parts) / m
    I = np.zeros((3, 3))
    for p in parts:
        d = p.com - c
        I += p.inertia + p.mass * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I


def _assert_principal(result, mass: float, com: np.ndarray, inertia: np.ndarray) -> None:
    body, frame = result.body, result.frame
    R = frame[:3, :3]
    assert se3.is_rotation(R, tol=1e-12)  # right-handed: det = +1
    np.testing.assert_allclose(body.mass, mass, rtol=1e-13)
    np.testing.assert_allclose(frame[:3, 3], com, atol=1e-13)
    scale = np.abs(inertia).max()
    np.testing.assert_allclose(R @ np.diag(body.inertia) @ R.T, inertia, atol=1e-12 * scale)


def test_two_boxes_make_one_box() -> None:
    ext = np.array([0.6, 0.2, 0.3])
    left = Box(half_extents=[0.15, 0.1, 0.15], pose=se3.make_transform(p=[0.85, 2.0, -1.0]))
    right = Box(half_extents=[0.15, 0.1, 0.15], pose=se3.make_transform(p=[1.15, 2.0, -1.0]))
    result = composite("slab", [left, right], densities=RHO)
    whole, _ = body_from_shape("whole", Box(half_extents=ext / 2), density=RHO)
    np.testing.assert_allclose(result.body.mass, whole.mass, rtol=1e-14)
    np.testing.assert_allclose(result.body.inertia, whole.inertia, rtol=1e-12)
    np.testing.assert_allclose(result.frame, se3.make_transform(p=[1.0, 2.0, -1.0]), atol=1e-14)
    np.testing.assert_allclose(result.shapes[0].pose[:3, 3], [-0.15, 0, 0], atol=1e-14)


def test_parallel_axis_theorem_for_posed_parts() -> None:
    rng = np.random.default_rng(8)
    shapes = [
        Box(half_extents=[0.3, 0.1, 0.2], pose=se3.random_transform(rng)),
        Sphere(radius=0.2, pose=se3.random_transform(rng)),
        Cylinder(radius=0.1, half_height=0.4, pose=se3.random_transform(rng)),
    ]
    masses = [2.0, 0.5, 1.5]
    result = composite("c", shapes, masses=masses)
    parts = []
    for s, m in zip(shapes, masses):
        mp = s.mass_properties(1.0)
        parts.append(type(mp)(m, mp.com, mp.inertia * m / mp.mass))
    _assert_principal(result, *_parallel_axis(parts))


def test_reexpressed_shapes_are_centred_and_principal() -> None:
    """Summing the re-posed shapes about the body origin gives com 0 and diag(inertia)."""
    rng = np.random.default_rng(21)
    shapes = [
        Box(half_extents=rng.uniform(0.05, 0.4, 3), pose=se3.random_transform(rng))
        for _ in range(4)
    ]
    result = composite("rand", shapes, densities=[100.0, 200.0, 300.0, 400.0])
    parts = [s.mass_properties(d) for s, d in zip(result.shapes, [100.0, 200.0, 300.0, 400.0])]
    m, c, I = _parallel_axis(parts)
    np.testing.assert_allclose(c, 0.0, atol=1e-13)
    np.testing.assert_allclose(I, np.diag(result.body.inertia), atol=1e-12 * np.abs(I).max())
    assert result.body.shapes == result.shapes


def test_cuboid_and_cylinder_against_trimesh_union() -> None:
    """A cylinder standing on a box; reference: trimesh on the boolean union mesh.

    The cylinder mesh is a 720-gon prism whose volume falls short by
    (2 pi/n)^2 / 6 = 1.3e-5 (relative); the box is exact, so 1e-4 bounds it.
    """
    box = Box(half_extents=[0.4, 0.3, 0.1])
    pose = se3.make_transform(se3.exp_so3([0.0, 0.0, 0.3]), [0.1, 0.05, 0.35])
    cyl = Cylinder(radius=0.15, half_height=0.25, pose=pose)
    result = composite("lamp", [box, cyl], densities=RHO)
    tb = trimesh.creation.box(extents=2 * box.half_extents)
    tc = trimesh.creation.cylinder(radius=0.15, height=0.5, sections=720)
    tc.apply_transform(pose)
    union = trimesh.boolean.union([tb, tc])
    assert union.is_watertight
    mp = trimesh.triangles.mass_properties(union.triangles, density=RHO)
    body, frame = result.body, result.frame
    np.testing.assert_allclose(body.mass, mp.mass, rtol=1e-4)
    np.testing.assert_allclose(frame[:3, 3], mp.center_mass, atol=1e-5)
    R = frame[:3, :3]
    np.testing.assert_allclose(
        R @ np.diag(body.inertia) @ R.T, mp.inertia, atol=1e-4 * np.abs(mp.inertia).max()
    )


def test_spatial_inertia_gives_kinetic_energy() -> None:
    """phi^T M phi / 2 equals the kinetic energy of a rigid point cloud moving with phi."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((50, 3)) + [0.3, -0.2, 0.5]
    w = rng.uniform(0.1, 1.0, 50)
    m = w.sum()
    c = (w[:, None] * x).sum(0) / m
    d = x - c
    I = (
        w[:, None, None]
        * ((d * d).sum(1)[:, None, None] * np.eye(3) - d[:, :, None] * d[:, None, :])
    ).sum(0)
    M = spatial_inertia(m, c, I)
    for phi in rng.standard_normal((5, 6)):
        v = np.cross(phi[:3], x) + phi[3:]
        np.testing.assert_allclose(phi @ M @ phi / 2, 0.5 * (w * (v * v).sum(1)).sum(), rtol=1e-12)


def test_principal_axes_properties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        R0 = se3.random_rotation(rng)
        D = np.diag(rng.uniform(0.5, 2.0, 3))
        moments, R = principal_axes(R0 @ D @ R0.T)
        assert se3.is_rotation(R, tol=1e-12)
        np.testing.assert_allclose(R.T @ (R0 @ D @ R0.T) @ R, np.diag(moments), atol=1e-12)
    moments, R = principal_axes(np.diag([3.0, 1.0, 2.0]))  # already diagonal: axes kept
    np.testing.assert_array_equal(R, np.eye(3))
    np.testing.assert_array_equal(moments, [3.0, 1.0, 2.0])


def test_body_from_shape_mass_and_density() -> None:
    box = Box(half_extents=[0.1, 0.2, 0.3])
    b1, E1 = body_from_shape("a", box, mass=3.0)
    b2, _ = body_from_shape("b", box, density=3.0 / 0.048)
    np.testing.assert_allclose(b1.inertia, b2.inertia, rtol=1e-13)
    np.testing.assert_allclose(
        b1.inertia, 3.0 / 12 * np.array([0.4**2 + 0.6**2, 0.2**2 + 0.6**2, 0.2**2 + 0.4**2])
    )
    np.testing.assert_array_equal(E1, np.eye(4))  # primitive with identity pose


def test_body_from_offset_mesh_moves_frame_to_centroid() -> None:
    tm = trimesh.creation.box(extents=[0.2, 0.4, 0.6])
    mesh = Mesh(vertices=tm.vertices + [1.0, 2.0, 3.0], faces=tm.faces)
    body, E = body_from_shape("m", mesh, density=RHO)
    # round-off of the offset integration (|c|^2 m ~ 1e-14 relative) tilts the axes ~1e-12
    np.testing.assert_allclose(E, se3.make_transform(p=[-1.0, -2.0, -3.0]), atol=1e-10)
    ref, _ = body_from_shape("r", Box(half_extents=[0.1, 0.2, 0.3]), density=RHO)
    np.testing.assert_allclose(body.inertia, ref.inertia, rtol=1e-12)


def test_bad_input() -> None:
    box = Box()
    with pytest.raises(ConfigurationError, match="not both"):
        body_from_shape("a", box, density=1.0, mass=1.0)
    with pytest.raises(ConfigurationError, match="at least one shape"):
        composite("a", [])
    with pytest.raises(ConfigurationError, match="2 entries for 1 shapes"):
        composite("a", [box], masses=[1.0, 2.0])
    with pytest.raises(ConfigurationError, match="static geometry"):
        body_from_shape("a", Plane())
    with pytest.raises(ConfigurationError, match="mass must be positive"):
        body_from_shape("a", box, mass=-1.0)
    with pytest.raises(ConfigurationError, match="Shape"):
        composite("a", ["box"])  # type: ignore[list-item]
