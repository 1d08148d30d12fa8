"""The static description of a scene and the state that changes every step.

A :class:`Scene` does not change while it runs (brax-style model/state split):
bodies with their inertia and collision shapes, joints between bodies (or a
body and the world), forces, static geometry, gravity and per-scene
parameters (stabilization, contact).  A :class:`State` holds the arrays that a
step returns anew: stacked transforms ``E`` (nb, 4, 4) and body twists ``phi``
(nb, 6), and for the reduced formulation joint positions ``q`` and velocities
``qdot``.

Joints are described once, by a :class:`JointSpec`, and realised by each
formulation: the maximal formulation turns a spec into constraint rows, the
reduced formulation into a joint map ``Q(q)`` in a tree.  The child body's
frame is ``E_child = E_parent @ frame_parent @ Q(q) @ inv(frame_child)``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.attachment import Attachment, attachments_of
from contactlab.errors import ConfigurationError, StateError
from contactlab.memory import ModelMemory

Array = NDArray[np.float64]

GRAVITY = np.array([0.0, 0.0, -9.81])


def _transform(value: ArrayLike | None, what: str) -> Array:
    E = np.eye(4) if value is None else np.array(value, dtype=float)
    if E.shape != (4, 4):
        raise ConfigurationError(f"{what} must be a 4x4 transform, got shape {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ConfigurationError(f"{what} holds non-finite numbers")
    if not se3.is_rotation(E[:3, :3], tol=1e-6):
        raise ConfigurationError(
            f"{what} has a rotation block that is not orthonormal with det +1; "
            "build it with contactlab.se3 (exp_so3, quaternion_to_rotation)"
        )
    if not np.allclose(E[3], [0, 0, 0, 1]):
        raise ConfigurationError(f"{what} must have bottom row (0, 0, 0, 1)")
    E.setflags(write=False)
    return E


def physical_mass(mass: float, moments: ArrayLike) -> bool:
    """Whether a mass [kg] and principal moments (3,) [kg m^2] can belong to a rigid body.

    The mass and moments are positive and the moments satisfy the triangle
    inequality (to 1e-9 relative), as :class:`Body` requires with ``strict=True``.
    """
    a, b, c = np.sort(np.asarray(moments, dtype=float))
    return bool(mass > 0 and a > 0 and a + b >= c * (1 - 1e-9))


#: Magnitudes a body's mass [kg] and principal moments [kg m^2] may take: beyond them
#: their inverses, squares or products with g and a length leave the floating-point range
#: (``pendulum --set mass=1e-308`` has moments of 1e-312 whose inverse is infinite).
MASS_RANGE = (1e-100, 1e100)


@dataclass(frozen=True)
class Body:
    """A rigid body: frame at its centre of mass on its principal axes.

    Parameters
    ----------
    name : unique name in the scene.
    mass : [kg], positive.
    inertia : (3,) principal moments of inertia [kg m^2], positive and
        satisfying the triangle inequality.
    shapes : collision shapes, each placed in the body frame (see
        :mod:`contactlab.shapes`).
    material : name used to look up friction coefficients for contact.
    strict : ``True`` (the default) requires a positive mass and positive
        principal moments that satisfy the triangle inequality.  ``False``
        takes the mass properties as a model file states them (zero mass,
        zero, negative or triangle-violating moments, all finite), as
        Pinocchio does: the reduced formulation runs such a body when the
        tree's mass matrix is positive definite, the maximal formulation
        refuses it (:attr:`physical`).
    """

    name: str
    mass: float
    inertia: Array
    shapes: tuple[Any, ...] = ()
    material: str = "default"
    strict: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.mass, bool) or not isinstance(self.mass, (int, float, np.number)):
            raise ConfigurationError(
                f"body {self.name!r}: mass must be a positive finite number [kg], got "
                f"{self.mass!r} ({type(self.mass).__name__})"
            )
        try:
            inertia = np.array(self.inertia, dtype=float).reshape(-1)
        except (TypeError, ValueError) as err:
            raise ConfigurationError(
                f"body {self.name!r}: inertia must be three positive principal moments "
                f"[kg m^2], got {self.inertia!r}"
            ) from err
        if self.strict:
            self._check_physical(inertia)
        elif not (np.isfinite(self.mass) and self.mass >= 0):
            raise ConfigurationError(
                f"body {self.name!r}: mass must be a finite number >= 0 [kg], got {self.mass}"
            )
        elif inertia.shape != (3,) or not np.all(np.isfinite(inertia)):
            raise ConfigurationError(
                f"body {self.name!r}: inertia must be three finite principal moments "
                f"[kg m^2], got {inertia}"
            )
        lo, hi = MASS_RANGE
        for what, value in (("mass", self.mass), *(("inertia", float(v)) for v in inertia)):
            if value != 0 and not lo <= abs(value) <= hi:
                raise ConfigurationError(
                    f"body {self.name!r}: {what} {value:g} is outside the range {lo:g} to "
                    f"{hi:g} [kg, kg m^2] in which its inverse and squares are finite numbers; "
                    "change the units or the parameter that gives it"
                )
        inertia.setflags(write=False)
        object.__setattr__(self, "inertia", inertia)
        object.__setattr__(self, "shapes", tuple(self.shapes))

    def _check_physical(self, inertia: Array) -> None:
        if not (np.isfinite(self.mass) and self.mass > 0):
            raise ConfigurationError(
                f"body {self.name!r}: mass must be a positive finite number [kg], got {self.mass}"
            )
        if inertia.shape != (3,) or not np.all(np.isfinite(inertia)) or np.any(inertia <= 0):
            raise ConfigurationError(
                f"body {self.name!r}: inertia must be three positive principal moments "
                f"[kg m^2], got {inertia}"
            )
        a, b, c = np.sort(inertia)
        if a + b < c * (1 - 1e-9):
            raise ConfigurationError(
                f"body {self.name!r}: principal moments {inertia} violate the triangle "
                "inequality; no mass distribution has them"
            )

    @property
    def physical(self) -> bool:
        """Positive mass and moments within the triangle inequality (what ``strict`` asks)."""
        return physical_mass(self.mass, self.inertia)

    @property
    def spatial_inertia(self) -> Array:
        """Diagonal of the 6x6 body-frame inertia ``(I1, I2, I3, m, m, m)`` (Sueda's notes §1.7)."""
        return np.concatenate([self.inertia, np.full(3, self.mass)])


@dataclass(frozen=True)
class JointSpec:
    """A joint between a parent body (or the world) and a child body.

    Parameters
    ----------
    name : unique joint name.
    kind : joint type name ("revolute", "prismatic", "spherical", "fixed",
        "universal", "cylindrical", "planar", "translational", "free", ... —
        whatever the chosen formulation has registered).
    parent : parent body name, or ``None`` for the world.
    child : child body name.
    frame_parent : (4, 4) joint frame in parent body coordinates (world
        coordinates when ``parent`` is ``None``).
    frame_child : (4, 4) joint frame in child body coordinates.
    axis : (3,) unit axis in the joint frame for revolute/prismatic/cylindrical
        joints [-]; ignored by other kinds.
    params : further kind-specific parameters (e.g. a universal joint's second
        axis, a spline joint's control frames).
    q0, qdot0 : initial joint coordinates and velocities (reduced
        formulation; also used to place bodies initially).
    stiffness, damping, rest : joint spring [N m/rad or N/m], damper
        [N m s/rad or N s/m] and rest coordinates (Sueda's notes §2.5).
    armature : reflected rotor inertia per coordinate [kg m^2 or kg], a scalar
        for every coordinate of the joint or one value per coordinate, >= 0:
        ``diag(armature)`` is added to the reduced mass matrix (MuJoCo's
        ``armature``; the maximal formulation refuses a joint with one).
    dry_friction : constant Coulomb friction bound per coordinate [N m or N], a
        scalar for every coordinate of the joint or one value per coordinate, >= 0:
        the joint's friction force opposes its motion and never exceeds this bound,
        and holds the joint still while the other forces on it stay within it
        (MuJoCo's ``frictionloss``, URDF's ``<dynamics friction>``).  Reduced
        formulation, carried by the box-friction model (:mod:`contactlab.reduced.dry_friction`);
        unlike ``friction`` it does not grow with the joint's load.
    friction : per-joint friction description (joint contact geometry and
        coefficient) used by joint-friction models, or ``None``.
    closes_loop : ``True`` for a joint that closes a kinematic loop; the
        reduced formulation enforces it as a constraint instead of a tree edge.
    """

    name: str
    kind: str
    parent: str | None
    child: str
    frame_parent: Any = None  # array-like on input, a float array after validation
    frame_child: Any = None  # array-like on input, a float array after validation
    axis: Any = None  # array-like on input, a float array after validation
    params: Mapping[str, Any] = field(default_factory=dict)
    q0: Any = None  # array-like on input, a float array after validation
    qdot0: Any = None  # array-like on input, a float array after validation
    stiffness: float = 0.0
    damping: float = 0.0
    rest: Any = None  # array-like on input, a float array after validation
    armature: Any = 0.0  # a number or array-like on input, a float array after validation
    friction: Any = None
    dry_friction: Any = 0.0  # a number or array-like on input, a float array after validation
    closes_loop: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "frame_parent", _transform(self.frame_parent, f"joint {self.name!r} frame_parent")
        )
        object.__setattr__(
            self, "frame_child", _transform(self.frame_child, f"joint {self.name!r} frame_child")
        )
        if self.axis is not None:
            axis = np.array(self.axis, dtype=float).reshape(-1)
            n = np.linalg.norm(axis)
            if axis.shape != (3,) or not np.isfinite(n) or n == 0:
                raise ConfigurationError(
                    f"joint {self.name!r}: axis must be a non-zero 3-vector, got {self.axis}"
                )
            object.__setattr__(self, "axis", axis / n)
        for key in ("q0", "qdot0", "rest"):
            value = getattr(self, key)
            if value is not None:
                arr = np.atleast_1d(np.array(value, dtype=float))
                if not np.all(np.isfinite(arr)):
                    raise ConfigurationError(f"joint {self.name!r}: {key} must be finite")
                object.__setattr__(self, key, arr)
        armature = np.atleast_1d(np.array(self.armature, dtype=float))
        if armature.ndim != 1 or not np.all(np.isfinite(armature)) or np.any(armature < 0):
            raise ConfigurationError(
                f"joint {self.name!r}: armature must be finite and >= 0 [kg m^2 or kg], one "
                f"number or one per coordinate, got {self.armature!r}"
            )
        armature.setflags(write=False)
        object.__setattr__(self, "armature", armature)
        dry = np.atleast_1d(np.array(self.dry_friction, dtype=float))
        if dry.ndim != 1 or not np.all(np.isfinite(dry)) or np.any(dry < 0):
            raise ConfigurationError(
                f"joint {self.name!r}: dry_friction must be finite and >= 0 [N m or N], one "
                f"number or one per coordinate, got {self.dry_friction!r}"
            )
        dry.setflags(write=False)
        object.__setattr__(self, "dry_friction", dry)


@dataclass(frozen=True)
class StabilizationParams:
    """Baumgarte parameters (Sueda's notes eq. 1.82).

    ``gamma`` [1/s] for the velocity-level form ``G phi = -gamma g``;
    ``alpha`` [1/s] and ``beta`` [1/s] for the acceleration-level form.
    ``None`` means the formulation's default: ``gamma = 1/h``, ``alpha = beta = 10``.
    """

    gamma: float | None = None
    alpha: float | None = None
    beta: float | None = None
    # The maximal formulation uses 1/h for gamma but 10 [1/s] for alpha and beta:
    # the acceleration-level form diverges with 1/h gains (see contactlab.maximal).
    enabled: bool = True


@dataclass(frozen=True)
class ContactParams:
    """Contact settings of a scene.

    margin : [m] contacts are reported while the signed distance is below it,
        so resting contacts persist.
    stabilization : [1/s] factor ``beta`` of penetration feedback: the normal
        right-hand side is ``-min(d, 0)*beta`` (``None`` = ``0.2/h``).
    max_correction : [m/s] cap on the penetration-recovery velocity.
    mu : default friction coefficient; per material pair values in ``mu_pairs``.
    directions : number of friction directions k of the pyramid (even, >= 4).
    restitution : Newton coefficient of restitution ``e`` in [0, 1]: a contact
        that hits at normal speed ``u`` above ``restitution_threshold``
        separates at ``e u`` (see :mod:`contactlab.contact.rows`); 0 = plastic.
    restitution_pairs : per material pair coefficients (same rule as ``mu_pairs``).
    restitution_threshold : [m/s] impacts slower than this do not bounce, so
        resting contacts stay at rest.  Default 0.1 m/s: a bounce at that speed
        rises at most ``0.1^2 / (2 g) = 0.5 mm``, a tenth of the default
        margin, and the threshold is ten times the speed ``g h`` that one
        default step (1 ms) of gravity gives a contact closing after a rest.
    hull_plane_points : most contacts a mesh (collided as its convex hull) keeps against
        a plane, 1 to 8.  Up to 4 (default 4, MuJoCo's count for a plane against a convex
        shape): the deepest vertex within the margin, then those spanning the largest
        contact polygon, so a hull resting on a quadrilateral face keeps its four
        corners; 5 to 8: the deepest and then farthest-point picks (8: the rule before
        4 became the default).  See :mod:`contactlab.collision.hulls`.
    """

    margin: float = 0.005
    stabilization: float | None = None
    max_correction: float = 1.0
    mu: float = 0.5
    mu_pairs: Mapping[tuple[str, str], float] = field(default_factory=dict)
    directions: int = 4
    restitution: float = 0.0
    restitution_pairs: Mapping[tuple[str, str], float] = field(default_factory=dict)
    restitution_threshold: float = 0.1
    hull_plane_points: int = 4

    def __post_init__(self) -> None:
        k = self.hull_plane_points
        if not (isinstance(k, (int, np.integer)) and not isinstance(k, bool) and 1 <= k <= 8):
            raise ConfigurationError(
                f"ContactParams.hull_plane_points must be a whole number from 1 to 8, got "
                f"{k!r}; set it to 4 (the default) or 8 (the earlier rule)"
            )
        _check_restitution("ContactParams.restitution", self.restitution)
        for pair, e in self.restitution_pairs.items():
            _check_restitution(f"ContactParams.restitution_pairs[{pair!r}]", e)
        v = self.restitution_threshold
        if not (isinstance(v, (int, float, np.floating, np.integer)) and np.isfinite(v) and v >= 0):
            raise ConfigurationError(
                f"ContactParams.restitution_threshold must be a finite speed >= 0 [m/s], got "
                f"{v!r}; set it to e.g. 0.1 (impacts slower than it do not bounce)"
            )

    def friction(self, a: str, b: str) -> float:
        """Friction coefficient between materials ``a`` and ``b``.

        Rule: an explicit pair entry (either order) wins; otherwise ``mu``.
        """
        if (a, b) in self.mu_pairs:
            return float(self.mu_pairs[(a, b)])
        if (b, a) in self.mu_pairs:
            return float(self.mu_pairs[(b, a)])
        return float(self.mu)

    def restitution_of(self, a: str, b: str) -> float:
        """Coefficient of restitution between materials ``a`` and ``b``.

        Rule (as for friction): an explicit ``restitution_pairs`` entry (either
        order) wins; otherwise the scene-wide ``restitution``.
        """
        if (a, b) in self.restitution_pairs:
            return float(self.restitution_pairs[(a, b)])
        if (b, a) in self.restitution_pairs:
            return float(self.restitution_pairs[(b, a)])
        return float(self.restitution)


def _check_restitution(name: str, e: Any) -> None:
    """Raise :class:`ConfigurationError` unless ``e`` is a finite number in [0, 1]."""
    ok = isinstance(e, (int, float, np.floating, np.integer)) and not isinstance(e, bool)
    if not (ok and np.isfinite(e) and 0.0 <= e <= 1.0):
        raise ConfigurationError(
            f"{name} must be a finite coefficient in [0, 1], got {e!r}; "
            "use 0 for a plastic impact, 1 for an elastic one"
        )


#: Scene settings that are typed fields of :class:`Scene` (formerly ``extras`` keys).
_SETTINGS = ("collision", "collide_jointed", "joint_torque", "hyper_basis", "hyper_offset")


@dataclass(frozen=True)
class Scene:
    """A complete, immutable scene description.

    Parameters
    ----------
    name : scenario name.
    bodies : the dynamic bodies.
    joints : joints (see :class:`JointSpec`), in parent-before-child order for trees.
    constraints : extra constraints (user constraint objects, loop closures,
        couplings, prescribed motions) realised by the formulation.
    forces : force elements (see :mod:`contactlab.forces`).
    static_shapes : world-fixed collision geometry (planes, static boxes).
    gravity : (3,) [m/s^2].
    initial_E, initial_phi : initial body transforms (nb, 4, 4) and twists
        (nb, 6); when ``None`` the bodies are placed by the joints' ``q0``.
    stabilization, contact : per-scene parameters.
    dt, duration : default step size [s] and duration [s].
    params : the scenario parameters that built the scene (for results).
    collision : ``False`` keeps the shapes for mass properties and drawing but
        switches collision off.
    exclude_pairs : pairs of body names (``None``: the world's shapes) that never
        collide with each other, as a robot description's list of disabled
        collision pairs (links whose hulls overlap in every pose that matters).
    collide_jointed : let bodies joined directly by a joint collide (by
        default such pairs are skipped).
    joint_torque : applied joint forces ``tau(t, q, qdot)`` (nq,) [N m or N]
        in the joints' coordinates (formulations with joint coordinates).
    hyper_basis, hyper_offset : ``J_rR`` (nq, nR) and ``q_offset`` (nq,) of
        the hyper-reduced formulation when it is chosen by name.
    attachments : bodies moving rigidly with another body, held in the
        world or driven along a trajectory
        (:class:`contactlab.attachment.Attachment`, or ``(body, master)``
        pairs), realised by null-space reduction (maximal coordinates;
        ArtiSynth's notes §0.17–0.21).
    extras : free data a scenario attaches for its readers (closed-form
        predictions such as a stopping distance); no formulation or model
        reads it.
    """

    name: str
    bodies: tuple[Body, ...]
    joints: tuple[JointSpec, ...] = ()
    constraints: tuple[Any, ...] = ()
    forces: tuple[Any, ...] = ()
    static_shapes: tuple[Any, ...] = ()
    gravity: Array = field(default_factory=lambda: GRAVITY.copy())
    initial_E: Array | None = None
    initial_phi: Array | None = None
    stabilization: StabilizationParams = field(default_factory=StabilizationParams)
    contact: ContactParams = field(default_factory=ContactParams)
    dt: float = 1e-3
    duration: float = 1.0
    params: Mapping[str, Any] = field(default_factory=dict)
    collision: bool = True
    collide_jointed: bool = False
    exclude_pairs: tuple[tuple[str | None, str | None], ...] = ()
    joint_torque: Callable[[float, Array, Array], Array] | None = None
    hyper_basis: Array | None = None
    hyper_offset: Array | None = None
    attachments: tuple[Attachment, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        moved = sorted(set(_SETTINGS) & set(self.extras))
        if moved:
            raise ConfigurationError(
                f"scene {self.name!r}: extras {moved} are scene settings now; pass them as the "
                f"fields Scene({', '.join(f'{k}=...' for k in moved)}) instead of extras keys"
            )
        object.__setattr__(self, "bodies", tuple(self.bodies))
        object.__setattr__(self, "joints", tuple(self.joints))
        object.__setattr__(self, "constraints", tuple(self.constraints))
        object.__setattr__(self, "forces", tuple(self.forces))
        object.__setattr__(self, "static_shapes", tuple(self.static_shapes))
        object.__setattr__(self, "attachments", attachments_of(self.attachments))
        names = [b.name for b in self.bodies]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ConfigurationError(f"scene {self.name!r}: duplicate body names {dup}")
        index = {n: i for i, n in enumerate(names)}
        for j in self.joints:
            for role, ref in (("parent", j.parent), ("child", j.child)):
                if ref is not None and ref not in index:
                    raise ConfigurationError(
                        f"joint {j.name!r}: {role} body {ref!r} is not in scene {self.name!r}; "
                        f"bodies are {names}"
                    )
            if j.parent == j.child:
                raise ConfigurationError(f"joint {j.name!r} connects body {j.child!r} to itself")
        pairs = tuple(tuple(p) for p in self.exclude_pairs)
        for pair in pairs:
            if len(pair) != 2 or any(ref is not None and ref not in index for ref in pair):
                raise ConfigurationError(
                    f"scene {self.name!r}: exclude_pairs entry {pair!r} must be two body names "
                    f"(or None for the world); bodies are {names}"
                )
        object.__setattr__(self, "exclude_pairs", pairs)
        check_attachments(self)
        g = np.array(self.gravity, dtype=float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ConfigurationError(f"scene {self.name!r}: gravity must be a finite 3-vector")
        object.__setattr__(self, "gravity", g)
        if not (self.dt > 0 and np.isfinite(self.dt)):
            raise ConfigurationError(f"scene {self.name!r}: dt must be positive, got {self.dt}")
        nb = len(self.bodies)
        if self.initial_E is not None:
            E = np.array(self.initial_E, dtype=float)
            if E.shape != (nb, 4, 4):
                raise ConfigurationError(
                    f"scene {self.name!r}: initial_E must have shape ({nb}, 4, 4), got {E.shape}"
                )
            if not np.all(np.isfinite(E)):
                raise StateError(f"scene {self.name!r}: initial_E holds non-finite numbers")
            if nb and not se3.is_rotation(E[:, :3, :3], tol=1e-6):
                raise ConfigurationError(
                    f"scene {self.name!r}: an initial rotation is not orthonormal with det +1"
                )
            object.__setattr__(self, "initial_E", E)
        if self.initial_phi is not None:
            phi = np.array(self.initial_phi, dtype=float)
            if phi.shape != (nb, 6) or not np.all(np.isfinite(phi)):
                raise ConfigurationError(
                    f"scene {self.name!r}: initial_phi must be finite with shape ({nb}, 6)"
                )
            object.__setattr__(self, "initial_phi", phi)

    # -- lookups ---------------------------------------------------------
    @property
    def n_bodies(self) -> int:
        return len(self.bodies)

    def body_index(self, name: str | None) -> int:
        """Index of a body by name; ``-1`` for the world (``None``)."""
        if name is None:
            return -1
        # a name -> index table built once per scene (a scan per call made building a
        # 3,000-link tree quadratic); not a field, so replace() builds a new one
        table = self.__dict__.get("_body_indices")
        if table is None:
            table = {}
            for i, b in enumerate(self.bodies):
                table.setdefault(b.name, i)
            object.__setattr__(self, "_body_indices", table)
        index = table.get(name)
        if index is not None:
            return int(index)
        raise ConfigurationError(
            f"scene {self.name!r} has no body {name!r}; bodies are {[b.name for b in self.bodies]}"
        )

    @property
    def masses(self) -> Array:
        """(nb,) body masses [kg]."""
        return np.array([b.mass for b in self.bodies])

    @property
    def spatial_inertia(self) -> Array:
        """(nb, 6) diagonals of the body-frame spatial inertias."""
        return np.array([b.spatial_inertia for b in self.bodies]).reshape(-1, 6)

    def with_(self, **changes: Any) -> Scene:
        """A copy with some fields replaced."""
        return replace(self, **changes)


@dataclass(frozen=True)
class State:
    """Everything that changes during a run.

    t : time [s].
    E : (nb, 4, 4) body transforms, body to world.
    phi : (nb, 6) body twists in body coordinates, angular first [rad/s, m/s].
    q, qdot : reduced coordinates and velocities, or ``None`` in maximal runs.
    cache : the model's memory, a :class:`~contactlab.memory.ModelMemory` (warm
        starts such as the previous step's friction impulses; any mapping given is
        copied into one); never needed for correctness.
    sleep : which bodies sleep and how long each has rested
        (:class:`~contactlab.maximal.sleeping.Sleep`), or ``None`` when the run does not
        let islands sleep (the maximal formulation's option ``sleep``).
    """

    t: float
    E: Array
    phi: Array
    q: Array | None = None
    qdot: Array | None = None
    cache: Mapping[str, Any] = field(default_factory=ModelMemory)
    sleep: object | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.cache, ModelMemory):
            object.__setattr__(self, "cache", ModelMemory(self.cache))

    def check_finite(self) -> None:
        """Raise :class:`StateError` naming the first non-finite array."""
        for key in ("E", "phi", "q", "qdot"):
            value = getattr(self, key)
            if value is not None and not np.all(np.isfinite(value)):
                raise StateError(
                    f"state at t={self.t:.6g} s has non-finite {key}; the step diverged — "
                    "reduce dt, enable stabilization, or choose a more robust solver"
                )


def check_attachments(scene: Scene) -> tuple[Attachment, ...]:
    """Validate ``scene.attachments`` against the scene's bodies; return them in root-first order.

    Raises :class:`ConfigurationError` naming the attachment for an unknown
    body, a body attached twice, or a loop of attachments.
    """
    items = tuple(scene.attachments)
    names = [b.name for b in scene.bodies]
    by_body: dict[str, Attachment] = {}
    for a in items:
        if not isinstance(a, Attachment):
            raise ConfigurationError(
                f"scene {scene.name!r}: attachments must be contactlab.attachment.Attachment "
                f"objects, got {type(a).__name__}"
            )
        for role, ref in (("body", a.body), ("master", a.master)):
            if ref is not None and ref not in names:
                raise ConfigurationError(
                    f"attachment of {a.body!r}: {role} {ref!r} is not in scene {scene.name!r}; "
                    f"bodies are {names}"
                )
        if a.body in by_body:
            raise ConfigurationError(
                f"scene {scene.name!r}: body {a.body!r} is attached twice; attach it to one master"
            )
        by_body[a.body] = a
    order: list[Attachment] = []
    state: dict[str, int] = {}  # 1: being visited, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2 or name not in by_body:
            return
        if state.get(name) == 1:
            loop = " -> ".join(path[path.index(name) :] + [name])
            raise ConfigurationError(
                f"scene {scene.name!r}: the attachments form a loop ({loop}); attach one of "
                "them to a body outside the loop or to the world"
            )
        state[name] = 1
        master = by_body[name].master
        if master is not None:
            visit(master, path + [name])
        state[name] = 2
        order.append(by_body[name])

    for a in items:
        visit(a.body, [])
    return tuple(order)


def attachment_root(scene: Scene, name: str | None) -> str | None:
    """The unattached body (or ``None``: the world) whose motion ``name`` follows."""
    masters = {a.body: a.master for a in scene.attachments}
    seen = set()
    while name is not None and name in masters and name not in seen:
        seen.add(name)
        name = masters[name]
    return name


def attached_pairs(scene: Scene) -> list[tuple[int, int]]:
    """Index pairs (world = -1) of bodies that move as one through attachments.

    They never collide with each other: their contact rows would vanish
    after the reduction (a body attached to the world does not collide with
    the world's static shapes either).
    """
    if not scene.attachments:
        return []
    groups: dict[str | None, list[int]] = {}
    for i, b in enumerate(scene.bodies):
        groups.setdefault(attachment_root(scene, b.name), []).append(i)
    pairs = []
    for root, members in groups.items():
        if root is None:
            members = [-1, *members]
        pairs += [(a, b) for k, a in enumerate(members) for b in members[k + 1 :]]
    return pairs
