"""URDF import: a robot description becomes a :class:`~contactlab.scene.Scene`.

Parsing is done by ``yourdfpy``; this module maps its links and joints to
contactlab's bodies and :class:`~contactlab.scene.JointSpec` entries.

* **Body frames.**  A URDF link has its own frame; its inertial frame sits
  at ``origin`` in it with a full 3x3 inertia tensor.  contactlab's body
  frame is at the centre of mass on the principal axes, so the tensor is
  eigen-decomposed, ``I = V diag(d) V^T`` with ``det V = +1``, and the body
  frame in the link frame is ``T_lb = origin [[V, 0], [0, 1]]``.  Joint frames
  and collision shapes are re-expressed in that body frame.
* **Joints.**  The URDF joint frame ``origin`` lives in the parent link
  frame and coincides with the child link frame at ``q = 0``; so
  ``frame_parent = T_lb(parent)^-1 origin`` and
  ``frame_child = T_lb(child)^-1``, with the URDF axis (given in the joint
  frame) kept.  Kinds: revolute and continuous -> ``revolute``, prismatic,
  fixed, floating -> ``free``, planar -> ``composite`` of a planar joint
  and a revolute about the plane normal (3 coordinates).  Joint damping is
  kept; position limits become :class:`~contactlab.reduced.constraints.JointLimit`
  constraints on request.
* **Massless links** (no ``<inertial>`` or zero mass) are merged into their
  parent when attached by a fixed joint; a massless root is the world.
* **Collision shapes** box, sphere, cylinder and mesh are kept as
  :mod:`contactlab.shapes` in the body frame.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.constraints import JointLimit
from contactlab.scene import GRAVITY, Body, JointSpec, Scene
from contactlab.shapes import Box, Cylinder, Mesh, Shape, Sphere

Array = np.ndarray


def principal_frame(origin: Array, inertia: Array) -> tuple[Array, Array]:
    """``(T_lb, moments)``: the principal body frame in the link frame and its moments.

    ``origin`` (4, 4) is the URDF inertial frame in the link frame, ``inertia``
    (3, 3) the tensor about the centre of mass in that frame [kg m^2].
    """
    I = 0.5 * (np.asarray(inertia, dtype=float) + np.asarray(inertia, dtype=float).T)
    d, V = np.linalg.eigh(I)
    if np.linalg.det(V) < 0:
        V[:, 2] = -V[:, 2]
    return np.asarray(origin, dtype=float) @ se3.make_transform(V), d


@dataclass
class _Node:
    """A body under construction: the link frame's pose in the body frame, shapes."""

    name: str
    mass: float
    moments: Array | None
    link_in_body: Array
    shapes: list[Shape] = field(default_factory=list)


def _tensor(inertial: Any) -> Array:
    return np.asarray(inertial.inertia, dtype=float).reshape(3, 3)


def _shape(collision: Any, link_in_body: Array, base: Path | None) -> Shape | None:
    pose = link_in_body @ (np.eye(4) if collision.origin is None else collision.origin)
    pose = _orthonormal(pose)
    geo = collision.geometry
    if geo.box is not None:
        return Box(half_extents=0.5 * np.asarray(geo.box.size, dtype=float), pose=pose)
    if geo.sphere is not None:
        return Sphere(radius=float(geo.sphere.radius), pose=pose)
    if geo.cylinder is not None:
        return Cylinder(
            radius=float(geo.cylinder.radius),
            half_height=0.5 * float(geo.cylinder.length),
            pose=pose,
        )
    if geo.mesh is not None:
        path = Path(geo.mesh.filename.replace("file://", ""))
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigurationError(
                f"URDF collision mesh {geo.mesh.filename!r} not found (looked at {str(path)!r}); "
                "pass mesh_dir= to load_urdf"
            )
        import trimesh  # imported here: it takes ~0.6 s and only mesh geometry needs it

        mesh = trimesh.load(path, force="mesh")
        if not isinstance(mesh, trimesh.Trimesh):
            raise ConfigurationError(f"URDF collision mesh {str(path)!r} holds no triangle mesh")
        if geo.mesh.scale is not None:
            mesh.apply_scale(np.broadcast_to(np.asarray(geo.mesh.scale, dtype=float), (3,)))
        return Mesh.from_trimesh(mesh, pose)
    return None


def _orthonormal(E: Array) -> Array:
    U, _, Vt = np.linalg.svd(E[:3, :3])
    out = np.array(E, dtype=float)
    out[:3, :3] = U @ Vt
    return out


def _kind(joint: Any) -> tuple[str, dict[str, Any], int]:
    axis = None if joint.axis is None else np.asarray(joint.axis, dtype=float)
    t = joint.type
    if t in ("revolute", "continuous"):
        return "revolute", {}, 1
    if t == "prismatic":
        return "prismatic", {}, 1
    if t == "fixed":
        return "fixed", {}, 0
    if t == "floating":
        return "free", {}, 6
    if t == "planar":
        n = np.array([0.0, 0.0, 1.0]) if axis is None else axis
        joints = [{"kind": "planar", "axis": n}, {"kind": "revolute", "axis": n}]
        return "composite", {"joints": joints}, 3
    raise ConfigurationError(
        f"URDF joint {joint.name!r} has type {t!r}; supported: revolute, continuous, "
        "prismatic, fixed, floating, planar"
    )


def _check_xml(text: str, from_text: bool, what: str) -> None:
    """Raise :class:`ConfigurationError` if the URDF is not well-formed XML (line and column)."""
    try:
        if from_text:
            ElementTree.fromstring(text)
        else:
            ElementTree.parse(text)
    except OSError as err:
        raise ConfigurationError(f"cannot read {what}: {err.strerror or err}") from err
    except ElementTree.ParseError as err:
        raise ConfigurationError(f"{what} is not well-formed XML: {err}; fix the XML") from err


def _check_tree(robot: Any, what: str) -> None:
    """Joints name existing links and the links form one tree (no cycle, one parent each)."""
    names = {link.name for link in robot.links}
    parents: dict[str, str] = {}
    for j in robot.joints:
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in names:
                raise ConfigurationError(
                    f"{what}: joint {j.name!r} names {role} link {link!r}, which is not a "
                    "<link>; add the link or fix the joint"
                )
        if j.child in parents:
            raise ConfigurationError(
                f"{what}: link {j.child!r} is the child of joints {parents[j.child]!r} and "
                f"{j.name!r}; a URDF is a tree (close loops in the scene instead)"
            )
        parents[j.child] = j.name
    link_parent = {j.child: j.parent for j in robot.joints}
    # each link is walked once: a walk stops at a link already known to reach a root
    # (linear in the number of links; a walk per link to the root was cubic for a chain)
    reaches_root: set[str] = set()
    for start in link_parent:
        path: dict[str, int] = {}
        link = start
        while link in link_parent and link not in reaches_root:
            if link in path:
                seen = list(path)
                loop = " -> ".join([*seen[path[link] :], link])
                raise ConfigurationError(
                    f"{what}: the joints form a cycle ({loop}); a URDF is a tree "
                    "(close loops in the scene instead)"
                )
            path[link] = len(path)
            link = link_parent[link]
        reaches_root.update(path)


def load_urdf(
    source: str | Path,
    *,
    fixed_base: bool = True,
    joint_limits: bool = False,
    mesh_dir: str | Path | None = None,
    gravity: Sequence[float] = tuple(GRAVITY),
    name: str | None = None,
) -> Scene:
    """Build a scene from a URDF file path or XML text.

    Parameters
    ----------
    source : path of a ``.urdf`` file, or the XML itself (text starting with ``<``).
    fixed_base : weld the root link to the world (``False``: a free joint).
    joint_limits : add :class:`JointLimit` constraints for limited revolute and
        prismatic joints (the scene then runs in the reduced formulation only).
    mesh_dir : folder that relative mesh paths are relative to (default:
        the URDF file's folder).
    gravity : (3,) [m/s^2].
    name : scene name (default: the robot's name).

    Returns
    -------
    Scene with one body per massive link and one joint per kept URDF joint,
    initial coordinates zero.
    """
    import yourdfpy

    text = str(source)
    from_text = text.lstrip().startswith("<")
    what = "URDF text" if from_text else f"URDF file {text!r}"
    _check_xml(text, from_text, what)
    kwargs = dict(build_scene_graph=False, load_meshes=False, load_collision_meshes=False)
    # yourdfpy and lxml print their own complaints; the error below says it in one line
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            if from_text:
                robot = yourdfpy.URDF.load(io.StringIO(text), **kwargs).robot
            else:
                robot = yourdfpy.URDF.load(text, **kwargs).robot
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise ConfigurationError(f"cannot read {what}: {reason}") from err
    base = Path(mesh_dir) if mesh_dir is not None else (None if from_text else Path(text).parent)
    _check_tree(robot, what)

    nodes: dict[str, _Node] = {}
    for link in robot.links:
        inertial = link.inertial
        mass = 0.0 if inertial is None or inertial.mass is None else float(inertial.mass)
        if not (np.isfinite(mass) and mass >= 0):
            raise ConfigurationError(
                f"URDF link {link.name!r}: mass {mass} is not a finite number >= 0 [kg]; "
                "fix its <inertial><mass value=...>"
            )
        if mass > 0:
            origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin)
            T_lb, moments = principal_frame(origin, _tensor(inertial))
            if np.any(moments <= 0):
                raise ConfigurationError(
                    f"URDF link {link.name!r}: inertia has non-positive principal moments "
                    f"{moments}; give a positive definite <inertia>"
                )
            nodes[link.name] = _Node(link.name, mass, moments, se3.inverse(T_lb))
        else:
            nodes[link.name] = _Node(link.name, 0.0, None, np.eye(4))

    children = {j.child for j in robot.joints}
    roots = [lk.name for lk in robot.links if lk.name not in children]
    if len(roots) != 1:
        raise ConfigurationError(
            f"{what}: a URDF has exactly one root link (the child of no joint), found "
            f"{len(roots)}: {', '.join(map(repr, roots))}; join them with joints"
        )
    root = roots[0]

    # merge massless links attached by fixed joints into their parent ("owner")
    owner: dict[str | None, tuple[str | None, Array]] = {}
    if nodes[root].mass == 0:
        owner[root] = (None, np.eye(4))  # the world
    else:
        owner[root] = (root, np.eye(4))
    specs: list[JointSpec] = []
    limits: list[JointLimit] = []
    by_parent: dict[str, list[Any]] = {}
    for j in robot.joints:
        by_parent.setdefault(j.parent, []).append(j)
    stack = [root]
    while stack:
        link = stack.pop()
        body, link_in_owner = owner[link]
        for j in by_parent.get(link, []):
            origin = np.eye(4) if j.origin is None else np.asarray(j.origin, dtype=float)
            joint_in_owner = link_in_owner @ origin  # relative to the owner's link frame
            child = nodes[j.child]
            if child.mass == 0:
                if j.type != "fixed":
                    raise ConfigurationError(
                        f"URDF link {j.child!r} has no mass but moves on {j.type} joint "
                        f"{j.name!r}; give it an <inertial> or attach it by a fixed joint"
                    )
                owner[j.child] = (body, joint_in_owner)
                stack.append(j.child)
                continue
            owner[j.child] = (j.child, np.eye(4))
            stack.append(j.child)
            kind, params, _ = _kind(j)
            if body is None:
                frame_parent = joint_in_owner
            else:
                frame_parent = nodes[body].link_in_body @ joint_in_owner
            axis = None if j.axis is None or kind in ("fixed", "free") else j.axis
            if kind == "composite":
                axis = None
            damping = (
                0.0 if j.dynamics is None or j.dynamics.damping is None else j.dynamics.damping
            )
            specs.append(
                JointSpec(
                    j.name,
                    kind,
                    body,
                    j.child,
                    frame_parent=_orthonormal(frame_parent),
                    frame_child=_orthonormal(child.link_in_body),
                    axis=axis,
                    params=params,
                    damping=float(damping),
                )
            )
            lim = j.limit
            if (
                joint_limits
                and j.type in ("revolute", "prismatic")
                and lim is not None
                and lim.lower is not None
                and lim.upper is not None
            ):
                limits.append(JointLimit(j.name, lim.lower, lim.upper))

    for link in robot.links:
        body, link_in_owner = owner.get(link.name, (None, np.eye(4)))
        if body is None:
            continue
        node = nodes[body]
        for col in link.collisions:
            shape = _shape(col, node.link_in_body @ link_in_owner, base)
            if shape is not None:
                node.shapes.append(shape)

    bodies = []
    for n in nodes.values():
        if n.mass > 0:
            assert n.moments is not None
            bodies.append(Body(n.name, n.mass, n.moments, tuple(n.shapes)))
    if nodes[root].mass > 0:
        root_node = nodes[root]
        kind = "fixed" if fixed_base else "free"
        specs.insert(
            0,
            JointSpec(
                f"{root}_base", kind, None, root, frame_child=_orthonormal(root_node.link_in_body)
            ),
        )
    elif not fixed_base:
        raise ConfigurationError(
            f"URDF root link {root!r} has no mass, so it is the world; fixed_base=False needs "
            "a massive root link"
        )
    return Scene(
        name or robot.name or "urdf",
        tuple(bodies),
        tuple(specs),
        constraints=tuple(limits),
        gravity=np.asarray(gravity, dtype=float),
    )
