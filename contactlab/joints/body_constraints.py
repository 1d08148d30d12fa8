"""Bilateral constraints in maximal coordinates: the extension point.

A :class:`Constraint` is a group of ``m`` scalar rows that keep a
position-level function of the body transforms at zero, ``g(E) = 0``
(Sueda's notes §1.12, eq. 1.81).  For the current transforms ``E`` (nb, 4, 4) and
body twists ``phi`` (nb, 6) it supplies

* ``g(E)`` (m,): the position-level error (drift, Baumgarte feedback);
* the velocity rows ``G`` with ``G Phi = d/dt g(E(t))`` along
  ``Edot = E [phi]``, as dense ``(m, K, 6)`` blocks on ``K`` bodies per row
  (``bodies`` (m, K), ``-1`` for the world, whose columns are dropped);
* ``Gdot Phi`` (m,): ``d^2/dt^2 g(E(t))`` along ``E(t) = E exp(t [phi])`` with
  constant body twists, needed only by the acceleration-level form of
  Baumgarte stabilization (eq. 1.82).  The base class differentiates the
  blocks numerically along that flow; subclasses override it with a closed
  form when they have one.

Subclasses are registered by name with :func:`register_constraint`; a
registered class may build itself from the scene's
:class:`~contactlab.scene.JointSpec` entries of its kind
(:meth:`Constraint.from_joints`), and instances placed in
``Scene.constraints`` are bound to the scene (:meth:`Constraint.bind`) and
enforced as they are.  :func:`stack_rows` turns the rows of every
constraint into one sparse ``G``.

Example: keep a body point ``x`` on the world line through ``o`` with unit
normals ``P`` (2, 3) to its direction; the rows are ``P R Gamma(x)`` (seed
000, eq. 1.12)::

    @register_constraint("point-on-line")
    class PointOnLine(Constraint):
        def __init__(self, body, x, o, P):
            self.body, self.x, self.o, self.P = body, x, o, P

        def bind(self, scene):
            self.i = scene.body_index(self.body)
            return self

        n_rows = 2

        def error(self, E):
            return self.P @ (se3.transform_points(E[self.i], self.x) - self.o)

        def jacobian(self, E):
            block = self.P @ E[self.i, :3, :3] @ se3.gamma(self.x)
            return block[:, None, :], np.full((2, 1), self.i)

    scene = Scene(..., constraints=(PointOnLine("bead", x, o, P),))
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab import se3
from contactlab.csr import csr, empty_csr
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.scene import JointSpec, Scene
from solvers.plugins import Registry

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Step [-] of the numerical directional derivative in :meth:`Constraint.bias`.
_BIAS_STEP = 1e-6


@dataclass
class ConstraintRows:
    """The rows of one constraint group at one configuration.

    g : (m,) position-level error [m or rad].
    blocks : (m, K, 6) row blocks: ``G[i, 6 b : 6 b + 6] += blocks[i, k]`` with
        ``b = bodies[i, k]``.
    bodies : (m, K) body indices, ``-1`` for the world (no columns).
    bias : (m,) ``Gdot Phi`` or ``None`` when not requested.
    """

    g: Array
    blocks: Array
    bodies: IntArray
    bias: Array | None = None


class Constraint(ABC):
    """A group of bilateral constraint rows (see the module docstring).

    Subclasses implement :attr:`n_rows`, :meth:`error` and :meth:`jacobian`;
    optionally :meth:`bias` (closed-form ``Gdot Phi``), :meth:`bind` (resolve
    body names against the scene), :meth:`from_joints` (build from joint
    specs of the registered kind) and :meth:`evaluate` (share work between
    the three).
    """

    #: registry name, set by :func:`register_constraint`
    name: ClassVar[str] = ""

    @property
    @abstractmethod
    def n_rows(self) -> int:
        """Number of scalar rows ``m``."""

    @abstractmethod
    def error(self, E: Array) -> Array:
        """Position-level error ``g(E)`` (m,) for transforms ``E`` (nb, 4, 4)."""

    @abstractmethod
    def jacobian(self, E: Array) -> tuple[Array, IntArray]:
        """Row blocks (m, K, 6) and their body indices (m, K) at ``E``."""

    def row_owners(self) -> list[str]:
        """Name of the joint or constraint owning each row (error messages, reactions)."""
        return [self.name or type(self).__name__] * self.n_rows

    def bind(self, scene: Scene) -> Constraint:
        """The constraint with body names resolved against ``scene`` (default: itself)."""
        return self

    @classmethod
    def from_joints(cls, scene: Scene, specs: Sequence[JointSpec]) -> list[Constraint]:
        """Constraints enforcing the joints ``specs`` (all of this class's kind)."""
        raise ConfigurationError(
            f"constraint kind {cls.name!r} cannot be built from a JointSpec; put an instance "
            "of it in Scene.constraints instead"
        )

    def bias(self, E: Array, phi: Array) -> Array:
        """``Gdot Phi`` (m,): central difference of the rows along ``E exp(t [phi])``.

        Exact to O(step^2); subclasses with a closed form override it.
        """
        eps = _BIAS_STEP
        step = se3.exp_se3(eps * phi)
        back = se3.exp_se3(-eps * phi)
        plus, bodies = self.jacobian(E @ step)
        minus, _ = self.jacobian(E @ back)
        phi_ext = np.vstack([phi, np.zeros((1, 6))])
        return np.einsum("mkj,mkj->m", (plus - minus) / (2.0 * eps), phi_ext[bodies])

    def evaluate(self, E: Array, phi: Array, with_bias: bool = False) -> ConstraintRows:
        """Error, row blocks and (optionally) ``Gdot Phi`` at ``(E, phi)``."""
        blocks, bodies = self.jacobian(E)
        return ConstraintRows(
            self.error(E), blocks, bodies, self.bias(E, phi) if with_bias else None
        )


class TimedConstraint(Constraint):
    """A constraint whose target moves in time (prescribed motion, Sueda's notes §2.9).

    Its rows ``G`` depend on ``E`` as any constraint's; the step asks
    ``G phi+ = r - gamma g``, with :meth:`terms_at` giving the error ``g`` at time
    ``t`` (``None``: a constraint on velocities only) and ``r`` the mean target
    rate over the step.  :meth:`error` is the error at ``t = 0``; the formulation
    reads :meth:`error_at` with the state's time.
    """

    #: the motion does work no potential records (see :mod:`contactlab.divergence`)
    supplies_energy = True

    @abstractmethod
    def terms_at(self, E: Array, t: float, h: float) -> tuple[Array | None, Array]:
        """``(g (m,) or None, r (m,))`` for the step from ``t`` to ``t + h``."""

    def error_at(self, E: Array, t: float) -> Array:
        """Position error at time ``t`` (zeros for a constraint on velocities)."""
        g, _ = self.terms_at(E, t, 0.0)
        return np.zeros(self.n_rows) if g is None else g

    def error(self, E: Array) -> Array:
        return self.error_at(E, 0.0)


def timed_rhs(
    constraints: Sequence[Constraint],
    E: Array,
    t: float,
    h: float,
    gamma: float,
    rhs: Array,
    g: Array,
) -> None:
    """Overwrite the rows of every :class:`TimedConstraint` in ``rhs`` and ``g`` (in place).

    ``rhs = r - gamma g(t)`` (velocity-level stabilization) and ``g = g(t)``.
    """
    start = 0
    for con in constraints:
        m = con.n_rows
        if isinstance(con, TimedConstraint):
            gt, r = con.terms_at(E, t, h)
            sl = slice(start, start + m)
            rhs[sl] = r if gt is None else r - gamma * gt
            g[sl] = 0.0 if gt is None else gt
        start += m


def stack_errors_at(constraints: Sequence[Constraint], E: Array, t: float) -> Array:
    """(m,) position errors at time ``t`` (prescribed motion measured against its target)."""
    if not constraints:
        return np.zeros(0)
    return np.concatenate(
        [c.error_at(E, t) if isinstance(c, TimedConstraint) else c.error(E) for c in constraints]
    )


def _is_constraint(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, Constraint)


#: Constraint kinds of the maximal formulation: the built-in ones (``"joint"``: every
#: joint kind whose joint map declares rows, ``"hinge-loop"``), and entry points in the
#: ``contactlab.constraints`` group (value: a Constraint subclass registered under the
#: entry point's name, or a module whose import registers its kinds with
#: :func:`register_constraint`).
CONSTRAINTS: Registry[type[Constraint]] = Registry(
    "constraint kind",
    "contactlab.constraints",
    builtin=("contactlab.joints.joint_constraints",),
    accept=_is_constraint,
    unknown=lambda name, known: UnknownNameError("constraint kind", name, known),
)


def body_index_map(scene: Scene) -> dict[str | None, int]:
    """Body name -> index, ``None`` (the world) -> -1: one dictionary per scene.

    ``Scene.body_index`` scans the bodies; looking up every joint with it
    would make building a chain of n bodies cost O(n^2).
    """
    out: dict[str | None, int] = {b.name: i for i, b in enumerate(scene.bodies)}
    out[None] = -1
    return out


def register_constraint(name: str) -> Callable[[type[Constraint]], type[Constraint]]:
    """Class decorator registering a constraint kind under ``name``.

    A class registered under a joint kind's name is used for every
    :class:`~contactlab.scene.JointSpec` of that kind through
    :meth:`Constraint.from_joints`, instead of the rows the kind's joint map
    declares (:func:`joint_constraints`).
    """

    def wrap(cls: type[Constraint]) -> type[Constraint]:
        if not (isinstance(cls, type) and issubclass(cls, Constraint)):
            raise ConfigurationError(
                f"register_constraint({name!r}) decorates a Constraint subclass, got {cls!r}"
            )
        cls.name = name
        return CONSTRAINTS.register(name, cls)

    return wrap


def constraint_kinds() -> list[str]:
    """Names of the registered constraint kinds."""
    return sorted(CONSTRAINTS.names())


def constraint_class(name: str) -> type[Constraint]:
    """The constraint class registered under ``name``."""
    return CONSTRAINTS.get(name)


def joint_constraints(scene: Scene, specs: Sequence[JointSpec]) -> list[Constraint]:
    """The constraints holding ``specs`` (joints of one kind) in maximal coordinates.

    A constraint class registered under the kind's name (a plug-in's own rows)
    takes them; otherwise the rows the kind's joint map declares (``"joint"``,
    :class:`contactlab.joints.joint_constraints.JointMapRows`).
    """
    kinds = {spec.kind for spec in specs}
    if len(kinds) > 1:
        raise ConfigurationError(f"joint_constraints takes joints of one kind, got {sorted(kinds)}")
    kind = next(iter(kinds), "joint")
    cls = CONSTRAINTS.get(kind) if kind in CONSTRAINTS else CONSTRAINTS.get("joint")
    return cls.from_joints(scene, specs)


def scene_constraints(scene: Scene) -> list[Constraint]:
    """Every constraint of ``scene``: its joints grouped by kind, then ``Scene.constraints``.

    Joints of one kind become one vectorized group (in scene order within the
    kind, :func:`joint_constraints`); a loop-closing hinge with
    ``params["loop_rows"] = "hinge"`` gets the 2-row closure of Sueda's notes,
    eq. 2.90–2.91, as in reduced coordinates; each entry of ``Scene.constraints``
    must be a :class:`Constraint`.
    """
    by_kind: dict[str, list[JointSpec]] = {}
    hinge_loops: list[JointSpec] = []
    for spec in scene.joints:
        if spec.closes_loop and spec.params.get("loop_rows", "full") == "hinge":
            if spec.kind not in ("revolute", "continuous"):
                raise ConfigurationError(
                    f"loop joint {spec.name!r}: loop_rows='hinge' needs a revolute joint, "
                    f"got kind {spec.kind!r}"
                )
            hinge_loops.append(spec)
            continue
        by_kind.setdefault(spec.kind, []).append(spec)
    out: list[Constraint] = (
        CONSTRAINTS.get("hinge-loop").from_joints(scene, hinge_loops) if hinge_loops else []
    )
    for specs in by_kind.values():
        out.extend(joint_constraints(scene, specs))
    for item in scene.constraints:
        if hasattr(item, "maximal_limits"):  # unilateral: the formulation's L rows
            continue
        if not isinstance(item, Constraint) and hasattr(item, "maximal_constraint"):
            item = item.maximal_constraint()  # a joint-coordinate constraint's maximal rows
        if not isinstance(item, Constraint):
            label = getattr(item, "name", None) or repr(item)
            why = getattr(item, "no_maximal_rows", None) or (
                "it is neither a contactlab.maximal.Constraint nor has a maximal_constraint()"
            )
            raise ConfigurationError(
                f"scene {scene.name!r}: constraint {label!r} ({type(item).__name__}) has no "
                f"maximal rows: {why}; run the scene with --formulation reduced"
            )
        out.append(item.bind(scene))
    return out


@dataclass
class StackedRows:
    """All constraint rows of a scene at one configuration.

    G : (m, 6 nb) sparse CSR rows.
    g : (m,) position-level errors.
    bias : (m,) ``Gdot Phi`` or ``None``.
    """

    G: sp.csr_matrix
    g: Array
    bias: Array | None


def row_owners(constraints: Sequence[Constraint]) -> NDArray[np.str_]:
    """(m,) name of the joint or constraint owning each stacked row."""
    names = [name for con in constraints for name in con.row_owners()]
    return np.array(names, dtype=str)


def stack_errors(constraints: Sequence[Constraint], E: Array) -> Array:
    """(m,) position-level errors of every constraint, without the rows."""
    if not constraints:
        return np.zeros(0)
    return np.concatenate([con.error(E) for con in constraints])


def stack_rows(
    constraints: Sequence[Constraint], E: Array, phi: Array, with_bias: bool = False
) -> StackedRows:
    """Evaluate every constraint and assemble one sparse ``G``.

    The CSR arrays are written directly from the row blocks (6 entries per
    row and involved body, world columns dropped), one vectorized pass per
    constraint group.
    """
    nb = E.shape[0]
    gs, biases, counts, indices, data = [], [], [], [], []
    for con in constraints:
        r = con.evaluate(E, phi, with_bias)
        m = r.g.shape[0]
        if (
            r.blocks.ndim != 3
            or r.blocks.shape[::2] != (m, 6)
            or r.bodies.shape != r.blocks.shape[:2]
        ):
            raise ConfigurationError(
                f"constraint {con.name!r} returned blocks {r.blocks.shape} and bodies "
                f"{r.bodies.shape} for {m} rows; expected (m, K, 6) and (m, K)"
            )
        gs.append(r.g)
        if with_bias:
            biases.append(r.bias if r.bias is not None else con.bias(E, phi))
        keep = r.bodies >= 0
        counts.append(6 * keep.sum(axis=1))
        indices.append((6 * r.bodies[keep][:, None] + np.arange(6)).ravel())
        data.append(r.blocks[keep].ravel())
    if not constraints:
        return StackedRows(empty_csr(6 * nb), np.zeros(0), np.zeros(0) if with_bias else None)
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
    G = csr(np.concatenate(data), np.concatenate(indices), indptr, (indptr.size - 1, 6 * nb))
    return StackedRows(G, np.concatenate(gs), np.concatenate(biases) if with_bias else None)
