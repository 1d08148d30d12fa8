"""Surface and curve joints (Si & Guenter): S and Sdot against finite differences, contact frame.

Central differences with step 1e-6 have truncation ~1e-12 |Q'''| and
round-off ~1e-16 / 1e-6 = 1e-10 on entries of order one: 1e-7 leaves a
margin for the larger derivatives of the Bézier frames.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.geometry.surfaces import (
    BezierCurve,
    BezierSurface,
    BSplineCurve,
    Ellipsoid,
    Plane,
    Sphere,
    Torus,
    surface_from,
)
from contactlab.joints.kinds import make_joint
from contactlab.joints.surface import (
    curve_curve_joint,
    curve_point_joint,
    surface_point_joint,
    surface_surface_joint,
)
from contactlab.joints.transform import TransformJoint

EPS = 1e-6
TOL = 1e-7

CURVE = np.array(
    [
        [-0.6, 0, 0.5],
        [-0.4, 0.2, 0.1],
        [-0.2, -0.1, -0.1],
        [0, 0, 0.2],
        [0.2, 0.1, -0.1],
        [0.4, -0.2, 0.1],
        [0.6, 0, 0.5],
    ]
)
_x = np.linspace(-1, 1, 5)
_X, _Y = np.meshgrid(_x, _x, indexing="ij")
BOWL = np.stack([_X, _Y, 0.4 * (_X**2 + _Y**2) + 0.05 * np.sin(3 * _X)], -1)


def _joints() -> dict[str, Callable[[], tuple[TransformJoint, float, float]]]:
    """name -> builder of (joint, low, high) of the coordinate samples (built on first use)."""
    return {
        "torus_torus_spin": lambda: (
            surface_surface_joint(Torus(0.05, 0.01), Torus(0.04, 0.015), spin=True, twist=0.7),
            -1.0,
            1.0,
        ),
        "sphere_ellipsoid": lambda: (
            make_joint(
                "surface_surface",
                params={
                    "parent_surface": {"kind": "sphere", "radius": 0.06},
                    "child_surface": {"kind": "ellipsoid", "a": 0.05, "b": 0.03, "c": 0.02},
                },
            ),
            -1.0,
            1.0,
        ),
        "bezier_surface_point": lambda: (
            surface_point_joint(BezierSurface(BOWL), height=0.01),
            0.1,
            0.9,
        ),
        "plane_point": lambda: (surface_point_joint(Plane(), spin=True), -1.0, 1.0),
        "bezier_curve_point": lambda: (curve_point_joint(BezierCurve(CURVE)), 0.1, 0.9),
        "bspline_curve_point": lambda: (
            curve_point_joint(BSplineCurve(CURVE), spin=False),
            0.2,
            3.8,
        ),
        "curve_curve": lambda: (
            curve_curve_joint(BezierCurve(CURVE), BezierCurve(CURVE[:4] * 0.5)),
            0.1,
            0.9,
        ),
    }


_BUILDERS = _joints()


@functools.cache
def joint_case(name: str) -> tuple[TransformJoint, float, float]:
    """The (joint, low, high) case ``name``, derived once."""
    return _BUILDERS[name]()


@pytest.mark.parametrize("name", sorted(_BUILDERS))
def test_S_and_Sdot_against_finite_differences(name: str) -> None:
    joint, lo, hi = joint_case(name)
    rng = np.random.default_rng(7)
    for _ in range(3):
        q = rng.uniform(lo, hi, joint.ndof)
        qdot = rng.standard_normal(joint.ndof)
        Q, S, Sdot = joint.evaluate(q, qdot)
        Qinv = se3.inverse(Q)
        for k in range(joint.ndof):
            dq = np.zeros(joint.ndof)
            dq[k] = EPS
            M = Qinv @ (joint.Q(q + dq) - joint.Q(q - dq)) / (2 * EPS)
            # the whole matrix, not only its twist part: Q^-1 dQ must be a twist
            np.testing.assert_allclose(M, se3.bracket6(S[:, k]), atol=TOL)
        fd = (joint.S(q + EPS * qdot) - joint.S(q - EPS * qdot)) / (2 * EPS)
        np.testing.assert_allclose(Sdot, fd, atol=TOL)


@pytest.mark.parametrize(
    "A, B",
    [(Torus(0.05, 0.01), Torus(0.04, 0.015)), (Sphere(0.06), Ellipsoid(0.05, 0.03, 0.02))],
)
def test_surface_surface_contact_frame(A, B) -> None:  # noqa: ANN001
    """Q F_B(u2, v2) is F_A(u1, v1) turned by pi about t1: same point and plane, opposite normal."""
    joint = surface_surface_joint(A, B)
    rng = np.random.default_rng(2)
    for _ in range(4):
        q = rng.uniform(-1, 1, 4)
        FA, FB = A.evaluate(q[0], q[1]), B.evaluate(q[2], q[3])
        child = joint.Q(q) @ FB
        np.testing.assert_allclose(child[:3, 3], FA[:3, 3], atol=1e-14)
        np.testing.assert_allclose(child[:3, 2], -FA[:3, 2], atol=1e-14)
        np.testing.assert_allclose(child[:3, 0], FA[:3, 0], atol=1e-14)


def test_surface_frames_are_on_the_surface_and_normal() -> None:
    """Frame origin = x(u, v), normal orthogonal to both partial derivatives
    (finite differences)."""
    for surface in (Torus(0.05, 0.01), Ellipsoid(0.05, 0.03, 0.02), BezierSurface(BOWL)):
        u, v = 0.3, 0.6
        F = surface.evaluate(u, v)
        du = (surface.evaluate(u + EPS, v) - surface.evaluate(u - EPS, v))[:3, 3] / (2 * EPS)
        dv = (surface.evaluate(u, v + EPS) - surface.evaluate(u, v - EPS))[:3, 3] / (2 * EPS)
        assert abs(F[:3, 2] @ du) < 1e-8 and abs(F[:3, 2] @ dv) < 1e-8
        assert abs(F[:3, 0] @ du - np.linalg.norm(du)) < 1e-8  # t1 along dx/du
        assert se3.is_rotation(F[:3, :3], tol=1e-12)


def test_bad_surfaces_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="minor radius 0.1 must be smaller"):
        Torus(0.05, 0.1)
    with pytest.raises(ConfigurationError, match="unknown surface kind 'cone'"):
        surface_from({"kind": "cone"})
    with pytest.raises(ConfigurationError, match="surface_surface joint needs params"):
        make_joint("surface_surface", params={"parent_surface": Sphere(1.0)})
    # a Bézier patch whose edge u = 0 collapses to a point has no normal there
    collapsed = BOWL.copy()
    collapsed[0] = collapsed[0, 2]
    slide = surface_point_joint(BezierSurface(collapsed), spin=False)
    slide.check_regular(np.array([0.5, 0.5]))
    with pytest.raises(ConfigurationError, match="singular at the initial state"):
        slide.check_regular(np.array([0.0, 0.5]))
