"""URDF import: a robot description becomes a :class:`~contactlab.scene.Scene`.

Parsing is done by ``yourdfpy``; this module maps its links and joints to
contactlab's bodies and :class:`~contactlab.scene.JointSpec` entries, with
the rules of Pinocchio's URDF parser (``buildModelFromUrdf``), so that the
dynamics of both are the same.

* **Fixed joints merge.**  A link on a fixed joint joins its parent's body
  (recursively) before anything about mass is checked: masses add, the
  centre of mass is the mass-weighted mean and the inertia tensors move to
  it by the parallel-axis theorem, ``I = sum_k R_k I_k R_k^T + m_k (|d_k|^2 1
  - d_k d_k^T)``, ``d_k = c_k - c``.  A zero-mass link keeps its rotational
  inertia.  Every link's frame stays available as a named frame in
  ``scene.extras["link_frames"]`` (``link -> (body or None, (4, 4) pose in
  that body's frame or in the world)``).
* **Body frames.**  contactlab's body frame is at the centre of mass on the
  principal axes (:func:`contactlab.bodies.principal_axes`); joint frames and
  collision shapes are re-expressed in it.  A URDF joint's ``origin`` lives
  in its parent link's frame and coincides with the child link's frame at
  ``q = 0``.
* **Joints.**  revolute and continuous -> ``revolute``, prismatic, floating
  -> ``free`` (position first, then the rotation vector), planar ->
  ``composite`` of a planar joint and a revolute about the plane normal.
  Damping is kept; position limits become
  :class:`~contactlab.reduced.constraints.JointLimit` constraints on request;
  ``<mimic>`` becomes a :class:`~contactlab.reduced.constraints.Coupling`
  ``q_mimic = multiplier q_joint + offset``.
* **The root.**  With a fixed base a root body with mass is welded to the
  world and a massless one is the world; with a floating base the root body
  moves on a ``free`` joint whatever its mass, as in Pinocchio.
* **Mass properties as written.**  A body whose merged mass is zero, or
  whose moments are zero, negative or break the triangle inequality, is kept
  as written (``Body(strict=False)``, reduced formulation only) with one
  warning line; so is a coordinate that moves no inertia at all.
* **Collision geometry** by ``collision=`` (:mod:`contactlab.reduced.urdf_geometry`).
* **Reported, not represented.**  Every element the scene does not hold
  (effort and velocity limits, joint friction, transmissions, ``<gazebo>``,
  unknown elements) is reported in one
  :class:`~contactlab.errors.ModelFileWarning` line per feature naming the
  elements.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import numpy as np

from contactlab import se3
from contactlab.bodies import principal_axes
from contactlab.errors import ConfigurationError, ModelFileWarning
from contactlab.reduced.constraints import Coupling, JointLimit
from contactlab.reduced.urdf_geometry import (
    COLLISION_MODES,
    MeshFiles,
    collision_shape,
    search_folders,
)
from contactlab.scene import GRAVITY, Body, JointSpec, Scene, physical_mass
from contactlab.shapes import Shape

Array = np.ndarray

#: the elements this loader reads; everything else is reported
_READ = {
    "robot": {"link", "joint", "material"},
    "link": {"inertial", "collision", "visual"},
    "joint": {"origin", "parent", "child", "axis", "dynamics", "limit", "mimic"},
}


def principal_frame(origin: Array, inertia: Array) -> tuple[Array, Array]:
    """``(T_lb, moments)``: the principal body frame in the link frame and its moments.

    ``origin`` (4, 4) is the URDF inertial frame in the link frame, ``inertia``
    (3, 3) the tensor about the centre of mass in that frame [kg m^2].
    """
    R = np.asarray(origin, dtype=float)[:3, :3]
    moments, V = principal_axes(R @ np.asarray(inertia, dtype=float) @ R.T)
    return se3.make_transform(V, np.asarray(origin, dtype=float)[:3, 3]), moments


@dataclass
class _Segment:
    """A body under construction: the links merged into it and their mass properties."""

    link: str  # the link whose frame is the segment's reference frame
    mass: float = 0.0
    com: Array = field(default_factory=lambda: np.zeros(3))
    inertia: Array = field(default_factory=lambda: np.zeros((3, 3)))
    link_in_body: Array = field(default_factory=lambda: np.eye(4))
    moments: Array = field(default_factory=lambda: np.zeros(3))
    shapes: list[Shape] = field(default_factory=list)
    parts: list[tuple[float, Array, Array]] = field(default_factory=list)

    def settle(self) -> None:
        """Combine the parts (parallel-axis theorem) and find the principal frame."""
        m = sum(p[0] for p in self.parts)
        c = sum(p[0] * p[1] for p in self.parts) / m if m > 0 else np.zeros(3)
        inertia = np.zeros((3, 3))
        for mk, ck, Ik in self.parts:
            d = ck - c
            inertia += Ik + mk * (float(d @ d) * np.eye(3) - np.outer(d, d))
        self.mass, self.com, self.inertia = float(m), np.asarray(c, dtype=float), inertia
        self.moments, V = principal_axes(inertia)
        self.link_in_body = se3.inverse(se3.make_transform(V, self.com))

    @property
    def physical(self) -> bool:
        """What :class:`~contactlab.scene.Body` accepts with ``strict=True``."""
        return physical_mass(self.mass, self.moments)


def _orthonormal(E: Array) -> Array:
    U, _, Vt = np.linalg.svd(E[:3, :3])
    out = np.array(E, dtype=float)
    out[:3, :3] = U @ Vt
    return out


def _kind(joint: Any) -> tuple[str, dict[str, Any]]:
    t = joint.type
    if t in ("revolute", "continuous"):
        return "revolute", {}
    if t == "prismatic":
        return "prismatic", {}
    if t == "floating":
        return "free", {"order": "translation_first"}
    if t == "planar":
        n = np.array([0.0, 0.0, 1.0]) if joint.axis is None else np.asarray(joint.axis, float)
        return "composite", {
            "joints": [{"kind": "planar", "axis": n}, {"kind": "revolute", "axis": n}]
        }
    raise ConfigurationError(
        f"URDF joint {joint.name!r} has type {t!r}; supported: revolute, continuous, "
        "prismatic, fixed, floating, planar"
    )


def _parse_xml(text: str, from_text: bool, what: str) -> ElementTree.Element:
    """The XML tree, or :class:`ConfigurationError` with line and column."""
    try:
        if from_text:
            return ElementTree.fromstring(text)
        return ElementTree.parse(text).getroot()
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


def _listed(names: Sequence[str], most: int = 6) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def _root(robot: Any, what: str) -> str:
    children = {j.child for j in robot.joints}
    roots = [lk.name for lk in robot.links if lk.name not in children]
    if len(roots) != 1:
        raise ConfigurationError(
            f"{what}: a URDF has exactly one root link (the child of no joint), found "
            f"{len(roots)}: {', '.join(map(repr, roots))}; join them with joints"
        )
    return roots[0]


def _merge_fixed(
    robot: Any, root: str
) -> tuple[dict[str, tuple[str, Array]], dict[str, _Segment], list[Any]]:
    """Links grouped into segments along fixed joints, depth first, siblings in file order.

    Returns ``owner`` (link -> (segment, link frame in the segment's reference
    link frame)), the segments by reference link, and the moving joints
    (parents before children).
    """
    by_parent: dict[str, list[Any]] = {}
    for j in robot.joints:
        by_parent.setdefault(j.parent, []).append(j)
    owner: dict[str, tuple[str, Array]] = {}
    segments: dict[str, _Segment] = {root: _Segment(root)}
    moving: list[Any] = []
    stack: list[tuple[str, Any]] = [(root, None)]
    while stack:
        link, joint = stack.pop()
        if joint is None:
            owner[link] = (link, np.eye(4))
        elif joint.type == "fixed":
            seg, link_in_seg = owner[joint.parent]
            origin = np.eye(4) if joint.origin is None else np.asarray(joint.origin, float)
            owner[link] = (seg, link_in_seg @ origin)
        else:
            owner[link] = (link, np.eye(4))
            segments[link] = _Segment(link)
            moving.append(joint)
        stack.extend((j.child, j) for j in reversed(by_parent.get(link, [])))
    return owner, segments, moving


def _mass_part(link: Any, link_in_segment: Array) -> tuple[float, Array, Array] | None:
    """A link's mass, centre of mass and inertia about it in its segment's frame, or ``None``."""
    inertial = link.inertial
    if inertial is None:
        return None
    mass = 0.0 if inertial.mass is None else float(inertial.mass)
    if not (np.isfinite(mass) and mass >= 0):
        raise ConfigurationError(
            f"URDF link {link.name!r}: mass {mass} is not a finite number >= 0 [kg]; "
            "fix its <inertial><mass value=...>"
        )
    origin = np.eye(4) if inertial.origin is None else np.asarray(inertial.origin, float)
    tensor = np.asarray(inertial.inertia, dtype=float).reshape(3, 3)
    if not np.all(np.isfinite(tensor)):
        raise ConfigurationError(
            f"URDF link {link.name!r}: <inertia> holds non-finite numbers; fix it"
        )
    pose = link_in_segment @ origin
    R = pose[:3, :3]
    return mass, pose[:3, 3], R @ (0.5 * (tensor + tensor.T)) @ R.T


def _unread(xml: ElementTree.Element) -> dict[str, list[str]]:
    """Elements and attributes of the file that the scene does not represent, by feature."""
    out: dict[str, list[str]] = {}

    def add(feature: str, name: str) -> None:
        out.setdefault(feature, []).append(repr(name))

    for child in xml:
        tag = str(child.tag)
        name = child.get("name") or child.get("reference") or tag
        if tag not in _READ["robot"]:
            add(f"<{tag}>", name)
            continue
        if tag not in ("link", "joint"):
            continue
        for sub in child:
            stag = str(sub.tag)
            if stag not in _READ[tag]:
                add(f"<{tag}><{stag}>", name)
            elif stag == "limit" and (sub.get("effort") or sub.get("velocity")):
                if float(sub.get("effort", 0) or 0) or float(sub.get("velocity", 0) or 0):
                    add("<limit effort/velocity> (actuator limits)", name)
            elif stag == "dynamics" and float(sub.get("friction", 0) or 0) != 0.0:
                add("<dynamics friction> (Coulomb joint friction)", name)
    return out


def _read(source: str | Path) -> tuple[Any, ElementTree.Element, str, Path | None]:
    import yourdfpy

    text = str(source)
    from_text = text.lstrip().startswith("<")
    what = "URDF text" if from_text else f"URDF file {text!r}"
    xml = _parse_xml(text, from_text, what)
    if xml.tag != "robot" or not xml.get("name"):
        found = f"<{xml.tag}>" if xml.tag != "robot" else "a <robot> without a name"
        raise ConfigurationError(
            f"{what}: a URDF is a <robot name=...> element, found {found}; give the robot "
            "its name (an empty or unfinished xacro output?)"
        )
    if xml.find("link") is None:
        raise ConfigurationError(f"{what}: the robot has no <link>; a URDF needs one at least")
    kwargs = dict(build_scene_graph=False, load_meshes=False, load_collision_meshes=False)
    # yourdfpy and lxml print their own complaints; the error below says it in one line
    quiet = io.StringIO()
    try:
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            if from_text:  # bytes: lxml refuses text that declares its encoding
                robot = yourdfpy.URDF.load(io.BytesIO(text.encode("utf-8")), **kwargs).robot
            else:
                robot = yourdfpy.URDF.load(text, **kwargs).robot
    except (OSError, ValueError, KeyError, AttributeError, TypeError) as err:
        reason = " ".join(str(err).split()) or type(err).__name__
        raise ConfigurationError(f"cannot read {what}: {reason}") from err
    return robot, xml, what, None if from_text else Path(text)


def load_urdf(
    source: str | Path,
    *,
    fixed_base: bool = True,
    joint_limits: bool = False,
    dry_friction: bool = False,
    collision: str = "model",
    package_dirs: str | Path | Sequence[str | Path] | None = None,
    mesh_dir: str | Path | None = None,
    gravity: Sequence[float] = tuple(GRAVITY),
    name: str | None = None,
) -> Scene:
    """Build a scene from a URDF file path or XML text.

    Parameters
    ----------
    source : path of a ``.urdf`` file, or the XML itself (text starting with
        ``<``, with or without an ``<?xml ... encoding=...?>`` declaration).
    fixed_base : weld the root link to the world (``False``: a ``free`` joint,
        coordinates the root link's position then its rotation vector).
    joint_limits : add :class:`JointLimit` constraints for limited revolute and
        prismatic joints (the scene then runs in the reduced formulation only).
    dry_friction : carry ``<dynamics friction>`` as the joints' constant Coulomb
        friction (``JointSpec.dry_friction``; reduced formulation, box-friction
        model).  Default ``False``: the friction is reported and left out, as
        Pinocchio's dynamics leave it out.
    collision : ``"model"`` (the geometry as written; a mesh that is not a
        closed solid becomes its convex hull, with a warning), ``"convex"``
        (every mesh by its convex hull) or ``"none"`` (no collision
        geometry, no mesh files read).
    package_dirs : folder(s) that ``package://`` paths are looked up in, before
        those of ``ROS_PACKAGE_PATH`` and the folders above the URDF file (a
        sequence, or text with folders separated by ``:`` as in ``ROS_PACKAGE_PATH``).
    mesh_dir : folder that relative mesh paths start from (default: the URDF
        file's folder).
    gravity : (3,) [m/s^2].
    name : scene name (default: the robot's name).

    Returns
    -------
    Scene with one body per group of links joined by fixed joints and one
    joint per moving URDF joint, initial coordinates zero (a mimic joint at
    its offset).  Unrepresented elements are reported as
    :class:`~contactlab.errors.ModelFileWarning` lines.
    """
    if collision not in COLLISION_MODES:
        raise ConfigurationError(
            f"collision must be one of {', '.join(map(repr, COLLISION_MODES))}, got {collision!r}"
        )
    robot, xml, what, urdf_file = _read(source)
    _check_tree(robot, what)
    robot_name = name or robot.name or "urdf"
    notes = {f"{k} not represented": v for k, v in _unread(xml).items()}
    friction_note = "<dynamics friction> (Coulomb joint friction) not represented"
    if dry_friction and friction_note in notes:
        del notes[friction_note]
    elif friction_note in notes:
        notes[friction_note + " (load with dry_friction=True to carry it)"] = notes.pop(
            friction_note
        )

    links = {link.name: link for link in robot.links}
    root = _root(robot, what)
    owner, segments, moving = _merge_fixed(robot, root)
    for link_name, (seg, T) in owner.items():
        part = _mass_part(links[link_name], T)
        if part is not None:
            segments[seg].parts.append(part)
    for segment in segments.values():
        segment.settle()

    world = fixed_base and segments[root].mass == 0
    _report_mass(segments, {j.child: owner[j.parent][0] for j in moving}, root, world, notes)

    # 2. joints
    def frame_in_body(link: str) -> tuple[str | None, Array]:
        seg, T = owner[link]
        if world and seg == root:
            return None, T
        return seg, segments[seg].link_in_body @ T

    specs: list[JointSpec] = []
    constraints: list[Any] = []
    root_seg = segments[root]
    if not world:
        kind, params = ("fixed", {}) if fixed_base else ("free", {"order": "translation_first"})
        specs.append(
            JointSpec(
                f"{root}_base",
                kind,
                None,
                root,
                frame_child=_orthonormal(root_seg.link_in_body),
                params=params,
            )
        )
    joints, constraints = _moving_joints(
        robot, moving, frame_in_body, segments, joint_limits, notes, dry_friction
    )
    specs += joints

    # 3. collision geometry and named frames
    files = MeshFiles(search_folders(package_dirs, urdf_file), _mesh_base(mesh_dir, urdf_file))
    frames: dict[str, tuple[str | None, Array]] = {}
    for link_name in owner:
        body, link_frame = frame_in_body(link_name)
        frames[link_name] = (body, link_frame)
        if collision == "none":
            continue
        for col in links[link_name].collisions:
            if body is None:
                notes.setdefault(
                    "<collision> of links welded to the world (a massless fixed root) not "
                    "represented",
                    [],
                ).append(repr(link_name))
                continue
            pose = link_frame @ (np.eye(4) if col.origin is None else np.asarray(col.origin))
            segments[body].shapes.append(
                collision_shape(col, _orthonormal(pose), files, link_name, collision)
            )
    if files.hulls:
        notes["collision meshes that are not closed solids replaced by their convex hulls"] = (
            files.hulls
        )

    bodies = []
    for seg_name, segment in segments.items():
        if world and seg_name == root:
            continue
        shapes = tuple(segment.shapes)
        bodies.append(
            Body(seg_name, segment.mass, segment.moments, shapes, strict=segment.physical)
        )
    for feature, names in notes.items():
        warnings.warn(
            f"URDF robot {robot_name!r}: {feature}: {_listed(names)}",
            ModelFileWarning,
            stacklevel=2,
        )
    return Scene(
        robot_name,
        tuple(bodies),
        tuple(specs),
        constraints=tuple(constraints),
        gravity=np.asarray(gravity, dtype=float),
        extras={"link_frames": frames},
    )


def _moving_joints(
    robot: Any,
    moving: Sequence[Any],
    frame_in_body: Callable[[str], tuple[str | None, Array]],
    segments: dict[str, _Segment],
    joint_limits: bool,
    notes: dict[str, list[str]],
    dry_friction: bool = False,
) -> tuple[list[JointSpec], list[Any]]:
    """The specs of the moving joints, their limits (on request) and mimic couplings."""
    specs: list[JointSpec] = []
    constraints: list[Any] = []
    one_dof = {j.name for j in moving if j.type in ("revolute", "continuous", "prismatic")}
    all_joints = {j.name for j in robot.joints}
    mimic_q0 = {  # a coupled mimic joint starts on its coupling
        j.name: 0.0 if j.mimic.offset is None else float(j.mimic.offset)
        for j in moving
        if j.mimic is not None and j.name in one_dof and j.mimic.joint in one_dof
    }
    for j in moving:
        kind, params = _kind(j)
        body, link_frame = frame_in_body(j.parent)
        origin = np.eye(4) if j.origin is None else np.asarray(j.origin, dtype=float)
        damping = 0.0 if j.dynamics is None or j.dynamics.damping is None else j.dynamics.damping
        friction = 0.0
        if dry_friction and j.dynamics is not None and j.dynamics.friction is not None:
            friction = float(j.dynamics.friction)
        axis = j.axis if kind in ("revolute", "prismatic") else None
        specs.append(
            JointSpec(
                j.name,
                kind,
                body,
                j.child,
                frame_parent=_orthonormal(link_frame @ origin),
                frame_child=_orthonormal(segments[j.child].link_in_body),
                axis=axis,
                params=params,
                damping=float(damping),
                dry_friction=friction,
                q0=mimic_q0.get(j.name),
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
            constraints.append(JointLimit(j.name, lim.lower, lim.upper))
        if j.mimic is not None:
            leader = j.mimic.joint
            if j.name in mimic_q0:
                ratio = 1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier)
                constraints.append(Coupling(leader, j.name, ratio, mimic_q0[j.name]))
            else:
                why = (
                    "is not a joint"
                    if leader not in all_joints
                    else "is not a moving joint with one coordinate"
                )
                notes.setdefault(
                    "<mimic> not represented (the joint it follows is not a moving "
                    "one-coordinate joint of the robot; the mimic joint moves independently)",
                    [],
                ).append(f"{j.name!r} (follows {leader!r}, which {why})")

    return specs, constraints


def _mesh_base(mesh_dir: str | Path | None, urdf_file: Path | None) -> Path | None:
    if mesh_dir is not None:
        return Path(mesh_dir)
    return None if urdf_file is None else urdf_file.parent


def _report_mass(
    segments: dict[str, _Segment],
    parent_of: dict[str, str],
    root: str,
    world: bool,
    notes: dict[str, list[str]],
) -> None:
    """Note bodies with non-physical mass properties and coordinates that move no inertia.

    ``parent_of`` maps each moving segment to its parent segment, parents first.
    """
    odd = []
    for seg_name, s in segments.items():
        if not (world and seg_name == root) and not s.physical:
            why = "no mass" if s.mass <= 0 else f"moments {np.array2string(s.moments, precision=3)}"
            odd.append(f"{seg_name!r} ({why})")
    if odd:
        notes[
            "bodies kept with the mass properties as written (zero mass or non-physical "
            "moments; reduced formulation only)"
        ] = odd
    # a coordinate whose whole subtree has no mass and no inertia: M is singular there
    inert = {n: s.mass == 0 and not np.any(s.inertia) for n, s in segments.items()}
    for child, parent in reversed(parent_of.items()):
        inert[parent] = inert[parent] and inert[child]
    dead = [repr(child) for child in parent_of if inert[child]]
    if dead:
        notes[
            "links that move with their joint but carry no mass and no inertia, nor does "
            "anything they carry (the mass matrix is singular in that joint's coordinates)"
        ] = dead
