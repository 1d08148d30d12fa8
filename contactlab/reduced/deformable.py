"""Mass-spring strands attached to rigid bodies (Sueda's notes §2.7, eq. 2.80–2.88).

A strand is a sequence of nodes of mass ``m`` joined in series by springs
of energy ``V = K/2 eps^2`` with the strain ``eps = (l - L)/L`` (eq. 2.81).
Some nodes are *attached* to a rigid body (they move with it, ``xdot_a =
R Gamma(x_a) phi_i``, eq. 2.83); the others are *free*, and their world
positions are extra reduced coordinates passed through by an identity block
of ``J_MR`` (eq. 2.85).

This module realises eq. 2.85–2.88 with the tree itself, so every
formulation, integrator and contact model works unchanged:

* a free node is a point body on a ``translational`` joint to the world
  whose joint frame sits at the node's initial position: its coordinates
  are the node's displacement and its Jacobian block is the identity on the
  body's linear velocity (the ``[0 I]`` row of eq. 2.85);
* an attached node is a point body welded (``fixed`` joint) to its rigid
  body, so its velocity is ``J_am J_mr qdot`` and its mass enters
  ``M_R = J_MR^T M_M J_MR`` as ``m (J_am J_mr)^T (J_am J_mr)`` (eq. 2.87–2.88);
  the attachment is exact (no constraint to drift); a node attached to the
  world (:data:`WORLD`) is a fixed world point of its springs;
* the springs are :class:`~contactlab.forces.SpringDamper` elements between
  consecutive nodes; with rest length ``L`` their spring constant is
  ``K/L`` (``V = (K/L)/(2L) (l - L)^2 = K/2 eps^2``), and the linearly
  implicit integrators take their stiffness through ``J``.

The REDMAX reference implementation (REDMAX supplement §1) builds its strands
between two attachment points with the strand's mass shared equally by its
nodes; :func:`strand_between` does the same.  The reference keeps every node
free and holds the end nodes with attachment constraints; here they are
welded as in eq. 2.85, the same motion without constraint drift.  A node
attached to the world does not move, so its mass only adds a constant to
the gravitational energy and is left out.

A node body carries the inertia of a sphere of radius ``NODE_RADIUS`` so that
:class:`~contactlab.scene.Body` is valid; it enters only the welded nodes'
rotation and is 1e-15 of a point mass's effect at 1 cm.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.forces import SpringDamper
from contactlab.joints.placement import place_bodies
from contactlab.scene import Body, JointSpec, Scene

Array = np.ndarray

#: radius [m] of the sphere whose inertia a node body carries
NODE_RADIUS = 1e-6
#: attachment target meaning the world frame (a node that never moves)
WORLD = "world"


@dataclass(frozen=True)
class Strand:
    """A mass-spring strand.

    Parameters
    ----------
    name : prefix of its node bodies (``{name}_node{i}``).
    nodes : (n, 3) initial world positions [m], n >= 2 (springs at rest there).
    node_mass : [kg] per node.
    stiffness : ``K`` [J] of eq. 2.81 (energy per squared strain).
    damping : [N s] per unit strain rate of each spring.
    attachments : node index -> body name (or :data:`WORLD`); an attached node
        is welded to that body where it sits initially.
    """

    name: str
    nodes: Array
    node_mass: float
    stiffness: float
    damping: float = 0.0
    attachments: Mapping[int, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        x = np.asarray(self.nodes, dtype=float)
        if x.ndim != 2 or x.shape[1] != 3 or len(x) < 2 or not np.all(np.isfinite(x)):
            raise ConfigurationError(
                f"strand {self.name!r}: nodes must be (n, 3) finite positions with n >= 2, "
                f"got shape {x.shape}"
            )
        if not self.node_mass > 0 or not self.stiffness > 0 or self.damping < 0:
            raise ConfigurationError(
                f"strand {self.name!r}: node_mass and stiffness must be positive, damping >= 0"
            )
        lengths = np.linalg.norm(np.diff(x, axis=0), axis=1)
        if np.any(lengths <= 0):
            raise ConfigurationError(f"strand {self.name!r}: consecutive nodes coincide")
        bad = [i for i in self.attachments if not 0 <= i < len(x)]
        if bad:
            raise ConfigurationError(f"strand {self.name!r}: attachment indices {bad} out of range")
        object.__setattr__(self, "nodes", x)


def _node_body(name: str, mass: float) -> Body:
    return Body(name, mass, np.full(3, 0.4 * mass * NODE_RADIUS**2))


def node_name(strand: Strand, i: int) -> str:
    """Name of the body of node ``i`` of ``strand``."""
    return f"{strand.name}_node{i}"


def attach_strands(scene: Scene, strands: Sequence[Strand]) -> Scene:
    """``scene`` with the strands' node bodies, joints and springs added.

    Attachment points are read from the scene's initial placement (the
    joints' ``q0``); the new joints follow the scene's own.
    """
    E, _ = place_bodies(scene)
    bodies, joints, forces = list(scene.bodies), list(scene.joints), list(scene.forces)
    for s in strands:
        # spring ends: (body or None for the world, point in that body's frame)
        ends: list[tuple[str | None, Array]] = []
        for i, x in enumerate(s.nodes):
            node, parent = node_name(s, i), s.attachments.get(i)
            if parent == WORLD:
                ends.append((None, x))
                continue
            bodies.append(_node_body(node, s.node_mass))
            ends.append((node, np.zeros(3)))
            if parent is None:
                joints.append(
                    JointSpec(
                        node,
                        "translational",
                        None,
                        node,
                        frame_parent=se3.make_transform(None, x),
                        q0=np.zeros(3),
                    )
                )
            else:
                point = se3.inverse(E[scene.body_index(parent)]) @ np.r_[x, 1.0]
                joints.append(
                    JointSpec(
                        node,
                        "fixed",
                        parent,
                        node,
                        frame_parent=se3.make_transform(None, point[:3]),
                    )
                )
        for i in range(len(ends) - 1):
            L = float(np.linalg.norm(s.nodes[i + 1] - s.nodes[i]))
            (b0, p0), (b1, p1) = ends[i], ends[i + 1]
            forces.append(SpringDamper(b0, p0, b1, p1, s.stiffness / L, s.damping, L))
    return scene.with_(bodies=tuple(bodies), joints=tuple(joints), forces=tuple(forces))


def node_positions(scene: Scene, E: Array, strand: Strand) -> Array:
    """(n, 3) world positions [m] of the strand's nodes for body transforms ``E`` (nb, 4, 4)."""
    x = strand.nodes.copy()
    for i in range(len(x)):
        if strand.attachments.get(i) != WORLD:
            x[i] = E[scene.body_index(node_name(strand, i)), :3, 3]
    return x


def strand_between(
    scene: Scene,
    name: str,
    n_nodes: int,
    strand_mass: float,
    stiffness: float,
    end0: tuple[str, ArrayLike],
    end1: tuple[str, ArrayLike],
    damping: float = 0.0,
) -> Strand:
    """A strand of ``n_nodes`` equally spaced nodes between two attachment points.

    Parameters
    ----------
    end0, end1 : ``(body name or WORLD, point in that body's frame [m])``, read at
        the scene's initial placement; the end nodes are attached there.
    strand_mass : [kg], shared equally by the nodes (as in the reference).
    stiffness, damping : as in :class:`Strand`.
    """
    E, _ = place_bodies(scene)
    x = []
    for body, point in (end0, end1):
        p = np.r_[np.asarray(point, dtype=float).reshape(3), 1.0]
        x.append(p[:3] if body == WORLD else (E[scene.body_index(body)] @ p)[:3])
    return Strand(
        name,
        line_of_nodes(x[0], x[1], n_nodes),
        strand_mass / n_nodes,
        stiffness,
        damping,
        attachments={0: end0[0], n_nodes - 1: end1[0]},
    )


def line_of_nodes(start: ArrayLike, end: ArrayLike, n: int) -> Array:
    """(n, 3) equally spaced node positions from ``start`` to ``end`` [m]."""
    if n < 2:
        raise ConfigurationError(f"a strand needs at least 2 nodes, got {n}")
    a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    return a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
