"""Scenes of Si & Guenter (Si & Guenter): multibody systems on surface and curve joints.

Every joint here is generated from its transform ``Q(q)``
(:mod:`contactlab.joints.surface`); the scenes are conservative
(no damping, no contact) and run in reduced coordinates only.  Bodies carry
wireframe meshes of their surfaces for ``contactlab render``; collision is
off (``Scene(collision=False)``): the joints keep the surfaces in
contact.

- ``torus-chain``: ``n`` tori hanging from a universal joint, each linked
  to the next by a torus–torus surface joint (4 coordinates) at the inner
  sides of both tubes, the rings at right angles: ``4 n - 2`` coordinates
  (TC10: 38, TC20: 78, as in Si & Guenter, Table 1).
- ``windmill``: a sphere hub on a horizontal revolute axle with six arms of
  three bodies each, 18 surface joints of the paper's five pairs
  (sphere–sphere, sphere–ellipsoid, sphere–torus, torus–torus,
  torus–ellipsoid): 1 + 18 x 4 = 73 coordinates.
- ``torus-chain-curve``: a torus chain whose first torus slides along a
  Bézier curve of 7 control points through its centre, its axis on the
  curve's tangent (curve–point joint: arc parameter and a turn about the
  tangent).
- ``bezier-surface-board``: a board sliding on a Bézier surface of 5 x 5
  control points in its tangent plane (surface–point joint: u, v and a turn
  about the normal), carrying a two-link pendulum.
"""

from __future__ import annotations

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.geometry.surfaces import (
    BezierCurve,
    BezierSurface,
    Ellipsoid,
    Sphere,
    Surface,
    Torus,
)
from contactlab.scenario import scenario
from contactlab.scene import Body, JointSpec, Scene
from contactlab.shapes import Box, Mesh
from contactlab.shapes import Sphere as SphereShape

Array = np.ndarray
#: density of every body [kg/m^3] (aluminium)
DENSITY = 2700.0


# -- bodies ---------------------------------------------------------------------------
def _grid_mesh(points: Array) -> tuple[Array, Array]:
    """Vertices and outward faces of a grid (nu, nv, 3) periodic in both directions."""
    nu, nv = points.shape[:2]
    idx = np.arange(nu * nv).reshape(nu, nv)
    a, b = idx, np.roll(idx, -1, axis=0)
    c, d = np.roll(b, -1, axis=1), np.roll(a, -1, axis=1)
    faces = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).reshape(-1, 3)
    return points.reshape(-1, 3), faces


def torus_mesh(R: float, r: float, nu: int = 24, nv: int = 8) -> Mesh:
    """A closed triangulated torus about z (for drawing)."""
    u = np.linspace(0, 2 * np.pi, nu, endpoint=False)[:, None]
    v = np.linspace(0, 2 * np.pi, nv, endpoint=False)[None, :]
    ring = R + r * np.cos(v)
    P = np.stack(np.broadcast_arrays(ring * np.cos(u), ring * np.sin(u), r * np.sin(v)), -1)
    return Mesh(*_grid_mesh(P))


def ellipsoid_mesh(a: float, b: float, c: float, n: int = 16) -> Mesh:
    """A closed triangulated ellipsoid (UV sphere scaled, with pole vertices)."""
    u = np.linspace(0, 2 * np.pi, n, endpoint=False)
    v = np.linspace(-np.pi / 2, np.pi / 2, n // 2 + 1)[1:-1]
    U, V = np.meshgrid(u, v, indexing="ij")
    ring = np.stack([a * np.cos(V) * np.cos(U), b * np.cos(V) * np.sin(U), c * np.sin(V)], -1)
    verts = np.vstack([ring.reshape(-1, 3), [[0, 0, -c], [0, 0, c]]])
    nv = len(v)
    idx = np.arange(n * nv).reshape(n, nv)
    nxt = np.roll(idx, -1, axis=0)
    faces = [
        np.stack([idx[:, :-1], nxt[:, :-1], nxt[:, 1:]], -1).reshape(-1, 3),
        np.stack([idx[:, :-1], nxt[:, 1:], idx[:, 1:]], -1).reshape(-1, 3),
        np.stack([np.full(n, n * nv), nxt[:, 0], idx[:, 0]], -1),
        np.stack([np.full(n, n * nv + 1), idx[:, -1], nxt[:, -1]], -1),
    ]
    return Mesh(verts, np.concatenate(faces).astype(np.int64))


def torus_body(name: str, R: float, r: float) -> Body:
    """Solid torus about z: ``m = rho 2 pi^2 R r^2``, ``I_z = m (R^2 + 3 r^2 / 4)``."""
    m = DENSITY * 2 * np.pi**2 * R * r * r
    Ixy = m * (R * R / 2 + 5 * r * r / 8)
    inertia = np.array([Ixy, Ixy, m * (R * R + 0.75 * r * r)])
    return Body(name, m, inertia, shapes=(torus_mesh(R, r),))


def sphere_body(name: str, r: float) -> Body:
    m = DENSITY * 4 / 3 * np.pi * r**3
    return Body(name, m, np.full(3, 0.4 * m * r * r), shapes=(SphereShape(radius=r),))


def ellipsoid_body(name: str, a: float, b: float, c: float) -> Body:
    m = DENSITY * 4 / 3 * np.pi * a * b * c
    inertia = m / 5 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    return Body(name, m, inertia, shapes=(ellipsoid_mesh(a, b, c),))


def _contact(
    name: str,
    parent: str,
    child: str,
    A: Surface,
    B: Surface,
    q0: list[float],
    twist: float = 0.0,
    frame_parent: Array | None = None,
) -> JointSpec:
    return JointSpec(
        name,
        "surface_surface",
        parent,
        child,
        frame_parent=frame_parent,
        params={"parent_surface": A, "child_surface": B, "twist": twist},
        q0=q0,
    )


# -- torus chain -------------------------------------------------------------------------
def _torus_links(
    n: int, R: float, r: float, first_parent: str | None, swing: float
) -> tuple[list[Body], list[JointSpec]]:
    """Tori 1..n-1 hanging from torus 0 by inner-side contacts, rings at right angles."""
    torus = Torus(R, r)
    bodies = [torus_body(f"torus{i}", R, r) for i in range(n)]
    specs = []
    for i in range(1, n):
        # bottom inner point of the parent ring on the top inner point of the child ring,
        # displaced by `swing` along both tubes so that the chain starts moving
        q0 = [-np.pi / 2 + swing, np.pi, np.pi / 2 - swing, np.pi]
        specs.append(
            _contact(f"link{i}", f"torus{i - 1}", f"torus{i}", torus, torus, q0, np.pi / 2)
        )
    return bodies, specs


@scenario("torus-chain", formulations=("reduced",))
def torus_chain(
    n: int = 10,
    major_radius: float = 0.05,
    minor_radius: float = 0.01,
    angle_deg: float = 40.0,
    swing_deg: float = 10.0,
) -> Scene:
    """A chain of n tori on torus–torus surface joints (Si & Guenter, Fig. 1; 4 n - 2 coordinates).

    n : number of tori (TC10: 38 coordinates, TC20: 78).
    major_radius : ring radius R [m].
    minor_radius : tube radius r [m] (r < R, R != 2 r).
    angle_deg : initial angle of the top torus's universal joint about x [deg].
    swing_deg : initial offset of each contact along both tubes [deg].
    """
    if n < 1:
        raise ConfigurationError(f"torus-chain needs n >= 1 tori, got {n}")
    R, r = major_radius, minor_radius
    bodies, specs = _torus_links(n, R, r, None, np.radians(swing_deg))
    # the top torus hangs from a universal joint at the top of its ring (joint frame at
    # (0, R, 0) in the torus): rings hang in the x-z plane of the world
    hang = se3.make_transform(se3.exp_so3([np.pi / 2, 0, 0]), None)
    # a universal joint (x then y) written as its transform (text: a cached build needs no
    # sympy), so that it is compiled too
    top = JointSpec(
        "hook",
        "transform",
        None,
        "torus0",
        frame_parent=hang,
        frame_child=se3.make_transform(None, (0.0, R, 0.0)),
        params={"Q": ["rot_x(a)", "rot_y(b)"], "coordinates": ["a", "b"]},
        q0=[np.radians(angle_deg), 0.0],
    )
    return Scene(
        "torus-chain",
        tuple(bodies),
        (top, *specs),
        collision=False,
        dt=2e-3,
        duration=2.0,
    )


# -- windmill ----------------------------------------------------------------------------
_ARMS = (
    # (surfaces of the arm's three bodies, each a (kind, sizes) pair)
    (("sphere", (0.03,)), ("torus", (0.04, 0.012)), ("torus", (0.04, 0.012))),
    (
        ("ellipsoid", (0.05, 0.03, 0.025)),
        ("torus", (0.04, 0.012)),
        ("ellipsoid", (0.04, 0.03, 0.02)),
    ),
    (("torus", (0.045, 0.015)), ("torus", (0.035, 0.01)), ("ellipsoid", (0.035, 0.025, 0.02))),
)


def _surface_and_body(name: str, kind: str, sizes: tuple[float, ...]) -> tuple[Surface, Body]:
    if kind == "sphere":
        return Sphere(*sizes), sphere_body(name, *sizes)
    if kind == "torus":
        return Torus(*sizes), torus_body(name, *sizes)
    return Ellipsoid(*sizes), ellipsoid_body(name, *sizes)


@scenario("windmill", formulations=("reduced",))
def windmill(hub_radius: float = 0.06, spin: float = 1.0, droop_deg: float = 15.0) -> Scene:
    """A hub on a horizontal axle with six three-body arms on surface joints (Si & Guenter, Fig. 2).

    The sphere hub turns about the world y axis (revolute); arm k touches the
    hub's equator at longitude 60 k degrees.  Every contact is between the
    outer (convex) sides of the two surfaces; the arms are of three kinds
    (sphere–sphere/sphere–torus/torus–torus, sphere–ellipsoid/ellipsoid–
    torus/torus–ellipsoid, sphere–torus/torus–torus/torus–ellipsoid), each
    used twice: 1 + 18 x 4 = 73 coordinates.

    hub_radius : radius of the hub sphere [m].
    spin : initial angular velocity of the hub [rad/s].
    droop_deg : initial offset of every contact along the second surface coordinate [deg].
    """
    droop = np.radians(droop_deg)
    hub: Surface = Sphere(hub_radius)
    bodies = [sphere_body("hub", hub_radius)]
    # the hub's z axis is the axle (world y): its equator is the vertical x-z plane
    axle = se3.make_transform(se3.exp_so3([-np.pi / 2, 0, 0]), (0.0, 0.0, 0.0))
    specs = [JointSpec("axle", "revolute", None, "hub", frame_parent=axle, q0=[0.0], qdot0=[spin])]
    for k in range(6):
        arm = _ARMS[k % 3]
        parent, surface, u1 = "hub", hub, np.pi / 3 * k
        for j, (kind, sizes) in enumerate(arm):
            name = f"arm{k}_{j}"
            child_surface, body = _surface_and_body(name, kind, sizes)
            bodies.append(body)
            # parent point at longitude u1 on its equator; child touches with the far
            # side of its own equator (u = pi), so it lies outside the parent
            q0 = [u1, droop * (1 if k % 2 else -1), np.pi, droop]
            specs.append(_contact(f"j{k}_{j}", parent, name, surface, child_surface, q0))
            parent, surface, u1 = name, child_surface, 0.0
    return Scene("windmill", tuple(bodies), tuple(specs), collision=False, dt=2e-3, duration=2.0)


# -- torus chain on a Bézier curve ----------------------------------------------------------
CURVE_CONTROL = np.array(
    [
        [-0.6, 0.0, 0.5],
        [-0.4, 0.2, 0.1],
        [-0.2, -0.1, -0.1],
        [0.0, 0.0, 0.2],
        [0.2, 0.1, -0.1],
        [0.4, -0.2, 0.1],
        [0.6, 0.0, 0.5],
    ]
)


@scenario("torus-chain-curve", formulations=("reduced",))
def torus_chain_curve(n: int = 5, s0: float = 0.15, major_radius: float = 0.05) -> Scene:
    """A torus chain whose first torus slides along a 7-point Bézier curve (Si & Guenter, Fig. 3).

    The curve passes through the first torus's centre and its axis stays on
    the curve's tangent (curve–point joint, coordinates: curve parameter s
    and a turn about the tangent); the other tori hang on torus–torus joints.
    2 + 4 (n - 1) coordinates.

    n : number of tori.
    s0 : initial curve parameter of the first torus (0 .. 1).
    major_radius : ring radius R [m]; the tube radius is R / 5.
    """
    R, r = major_radius, major_radius / 5
    curve = BezierCurve(CURVE_CONTROL)
    bodies, specs = _torus_links(n, R, r, None, np.radians(10.0))
    slide = JointSpec(
        "slide",
        "curve_point",
        None,
        "torus0",
        params={"curve": curve, "spin": True},
        # the torus axis (body z) on the joint's x axis, the curve's tangent
        frame_child=se3.make_transform(se3.exp_so3([0.0, -np.pi / 2, 0.0]), None),
        q0=[s0, 0.3],
    )
    return Scene(
        "torus-chain-curve",
        tuple(bodies),
        (slide, *specs),
        collision=False,
        dt=2e-3,
        duration=2.0,
    )


# -- board on a Bézier surface --------------------------------------------------------------
def bowl_control(size: float = 1.0, depth: float = 0.4) -> Array:
    """5 x 5 control points of a bumpy bowl over [-size, size]^2 [m]."""
    x = np.linspace(-size, size, 5)
    X, Y = np.meshgrid(x, x, indexing="ij")
    Z = depth * ((X / size) ** 2 + (Y / size) ** 2) + 0.1 * depth * np.sin(3 * X / size)
    return np.stack([X, Y, Z], -1)


def _surface_slab(surface: BezierSurface, n: int = 12, thickness: float = 0.01) -> Mesh:
    """A closed slab under the surface (top = surface samples), for drawing."""
    t = np.linspace(0, 1, n)
    top = np.array([[surface.evaluate(u, v)[:3, 3] for v in t] for u in t])
    bottom = top - [0, 0, thickness]
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    quads_top = np.concatenate([np.stack([a, b, c], -1), np.stack([a, c, d], -1)]).reshape(-1, 3)
    faces = [quads_top, quads_top[:, ::-1] + n * n]
    ring = np.concatenate([idx[:, 0], idx[-1, 1:], idx[::-1, -1][1:], idx[0, ::-1][1:-1]])
    nxt = np.roll(ring, -1)
    faces.append(np.stack([ring, nxt + n * n, nxt], -1))
    faces.append(np.stack([ring, ring + n * n, nxt + n * n], -1))
    return Mesh(np.vstack([top.reshape(-1, 3), bottom.reshape(-1, 3)]), np.concatenate(faces))


@scenario("bezier-surface-board", formulations=("reduced",))
def bezier_surface_board(u0: float = 0.2, v0: float = 0.7, pendulum_deg: float = 30.0) -> Scene:
    """A board sliding on a Bézier surface of 5 x 5 control points, carrying a double pendulum.

    The board stays in the surface's tangent plane (surface–point joint:
    coordinates u, v and a turn about the normal); a two-link pendulum hangs
    from a post on the board on revolute joints.  3 + 2 coordinates; the
    surface is drawn as a slab on a fixed body.

    u0, v0 : initial surface coordinates of the board (0 .. 1).
    pendulum_deg : initial angle of the first pendulum link [deg].
    """
    surface = BezierSurface(bowl_control())
    board = Body(
        "board",
        2.0,
        2.0 / 12 * np.array([0.2**2 + 0.02**2, 0.3**2 + 0.02**2, 0.3**2 + 0.2**2]),
        shapes=(Box(half_extents=np.array([0.15, 0.1, 0.01])),),
    )
    ground = Body("ground", 1.0, np.full(3, 0.1), shapes=(_surface_slab(surface),))
    link_inertia = 0.2 / 12 * np.array([0.2**2, 0.2**2, 1e-4])
    links = [
        Body(f"pend{i}", 0.2, link_inertia, shapes=(Box(half_extents=np.array([0.01, 0.01, 0.1])),))
        for i in range(2)
    ]
    up = se3.make_transform(None, (0.0, 0.0, 0.25))
    half = se3.make_transform(None, (0.0, 0.0, 0.1))
    specs = (
        JointSpec("weld", "fixed", None, "ground"),
        JointSpec(
            "slide",
            "surface_point",
            None,
            "board",
            params={"surface": surface, "spin": True, "height": 0.01},
            q0=[u0, v0, 0.0],
        ),
        JointSpec(
            "p0",
            "revolute",
            "board",
            "pend0",
            frame_parent=up,
            frame_child=half,
            axis=(1.0, 0.0, 0.0),
            q0=[np.radians(pendulum_deg)],
        ),
        JointSpec(
            "p1",
            "revolute",
            "pend0",
            "pend1",
            frame_parent=se3.inverse(half),
            frame_child=half,
            axis=(1.0, 0.0, 0.0),
            q0=[0.0],
        ),
    )
    return Scene(
        "bezier-surface-board",
        (ground, board, *links),
        specs,
        collision=False,
        dt=2e-3,
        duration=3.0,
    )
