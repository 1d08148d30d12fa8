"""The kinematic tree of a scene in reduced coordinates.

:class:`Tree` is the static description built once from a
:class:`~contactlab.scene.Scene`: joints in depth-first order (parents
before children), their joint maps, the constant frames and the inertias,
stacked into arrays for the compiled recursions.  Joints flagged
``closes_loop`` are not tree edges; they are kept in ``loop_joints`` for the
constraint layer.

Coordinates ``q`` are the joints' coordinates concatenated in tree order;
``tree.dofs(name)`` gives a joint's slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints.kinds import build_joint
from contactlab.joints.maps import Joint, PrismaticJoint, RevoluteJoint
from contactlab.joints.topology import tree_order
from contactlab.reduced import _kernels
from contactlab.scene import JointSpec, Scene

Array = np.ndarray


def _simple_code(joint: Joint) -> tuple[int, Array]:
    if type(joint) is RevoluteJoint:
        return _kernels.REVOLUTE, joint.axis
    if type(joint) is PrismaticJoint:
        return _kernels.PRISMATIC, joint.axis
    if joint.ndof == 0 and type(joint).__name__ == "FixedJoint":
        return _kernels.FIXED, np.zeros(3)
    return _kernels.OTHER, np.zeros(3)


@dataclass(frozen=True, eq=False)
class Tree:
    """A tree of joints and bodies, in depth-first order.

    Attributes
    ----------
    scene : the scene it was built from.
    specs, joints : the tree joints' specs and joint maps, in tree order.
    body : (n,) scene index of the child body of each tree joint.
    parent : (n,) tree index of the parent node, ``-1`` for the world.
    frame_parent, frame_child_inv : (n, 4, 4) constant joint frames.
    ad_frame_child : (n, 6, 6) ``Ad(frame_child)``: joint-frame twists to body frame.
    ndof, dof0 : (n,) coordinates per joint and their offsets in ``q``.
    inertia : (n, 6) body-frame spatial inertia diagonals, tree order.
    loop_joints : joints that close loops (not in the tree).
    """

    scene: Scene
    specs: tuple[JointSpec, ...]
    joints: tuple[Joint, ...]
    body: Array
    parent: Array
    frame_parent: Array
    frame_child_inv: Array
    ad_frame_child: Array
    ndof: Array
    dof0: Array
    inertia: Array
    loop_joints: tuple[JointSpec, ...]
    codes: Array
    axes: Array

    # ------------------------------------------------------------------
    @classmethod
    def from_scene(cls, scene: Scene) -> Tree:
        """Build the tree; every body needs exactly one non-loop joint naming it as child."""
        order, loops = tree_order(scene)
        joints = tuple(build_joint(j) for j in order)
        index = {j.child: i for i, j in enumerate(order)}
        ndof = np.array([jt.ndof for jt in joints], dtype=np.int64)
        simple = [_simple_code(jt) for jt in joints]
        Fc = np.array([j.frame_child for j in order]).reshape(-1, 4, 4)
        return cls(
            scene=scene,
            specs=tuple(order),
            joints=joints,
            body=np.array([scene.body_index(j.child) for j in order], dtype=np.int64),
            parent=np.array(
                [-1 if j.parent is None else index[j.parent] for j in order], dtype=np.int64
            ),
            frame_parent=np.array([j.frame_parent for j in order]).reshape(-1, 4, 4),
            frame_child_inv=se3.inverse(Fc),
            ad_frame_child=se3.adjoint(Fc),
            ndof=ndof,
            dof0=np.concatenate([[0], np.cumsum(ndof)[:-1]]).astype(np.int64),
            inertia=scene.spatial_inertia[[scene.body_index(j.child) for j in order]],
            loop_joints=loops,
            codes=np.array([c for c, _ in simple], dtype=np.int64),
            axes=np.array([a for _, a in simple]).reshape(-1, 3),
        )

    # ------------------------------------------------------------------
    @property
    def n(self) -> int:
        """Number of tree joints (= bodies)."""
        return len(self.joints)

    @property
    def nq(self) -> int:
        """Number of coordinates."""
        return int(self.ndof.sum())

    def dofs(self, joint_name: str) -> slice:
        """The slice of ``q`` that belongs to a joint."""
        for i, s in enumerate(self.specs):
            if s.name == joint_name:
                return slice(int(self.dof0[i]), int(self.dof0[i] + self.ndof[i]))
        raise ConfigurationError(
            f"no tree joint {joint_name!r}; tree joints are {[s.name for s in self.specs]}"
        )

    def per_dof(self, attribute: str, default: float = 0.0) -> Array:
        """A per-joint scalar or vector attribute of the specs, expanded to (nq,).

        The arrays are computed once per tree and returned read-only.
        """
        key = (attribute, default)
        if key not in self._per_dof:
            value = self._expand(attribute, default)
            value.setflags(write=False)
            self._per_dof[key] = value
        return self._per_dof[key]

    @cached_property
    def scene_inertia(self) -> Array:
        """(nb, 6) spatial inertia diagonals in scene body order (cached)."""
        out = self.scene.spatial_inertia
        out.setflags(write=False)
        return out

    @cached_property
    def _per_dof(self) -> dict[tuple[str, float], Array]:
        return {}

    def _expand(self, attribute: str, default: float) -> Array:
        out = np.full(self.nq, default)
        for i, s in enumerate(self.specs):
            value = getattr(s, attribute)
            if value is not None:
                out[self.dof0[i] : self.dof0[i] + self.ndof[i]] = value
        return out

    def initial_coordinates(self) -> tuple[Array, Array]:
        """``q0`` and ``qdot0`` from the joint specs (zeros where not given)."""
        return self.per_dof("q0").copy(), self.per_dof("qdot0").copy()

    def check_coordinates(self, q: Array, name: str = "q") -> Array:
        """``q`` as a float array of shape (nq,), or a clear error."""
        q = np.asarray(q, dtype=float)
        if q.shape != (self.nq,):
            raise ConfigurationError(
                f"{name} must have shape ({self.nq},) for this tree, got {q.shape}"
            )
        if not np.all(np.isfinite(q)):
            raise ConfigurationError(f"{name} holds non-finite numbers")
        return q

    # ------------------------------------------------------------------
    def evaluate_joints(
        self, q: Array, qdot: Array, step: bool = False
    ) -> tuple[Array, Array, Array]:
        """Stacked joint maps ``Q`` (n, 4, 4), ``S`` and ``Sdot`` (n, 6, 6), zero-padded.

        Fixed, revolute and prismatic joints are filled by a compiled loop;
        the others call their own :meth:`Joint.evaluate`, or with ``step=True``
        :meth:`Joint.evaluate_step` (``Sdot`` along the motion of :meth:`advance`).
        """
        n = self.n
        Q = np.empty((n, 4, 4))
        S = np.zeros((n, 6, 6))
        Sd = np.zeros((n, 6, 6))
        _kernels.evaluate_simple(self.codes, self.axes, q, self.dof0, Q, S)
        batches, others = self._joint_batches
        for kernel, dof0, nodes, params in batches:
            kernel(q, qdot, dof0, nodes, params, Q, S, Sd)
        if step:
            Sd[self._batched_subgroups] = 0.0  # as Joint.evaluate_step
        for i in others:
            a, k = self.dof0[i], self.ndof[i]
            joint = self.joints[i]
            evaluate = joint.evaluate_step if step else joint.evaluate
            Q[i], S[i, :, :k], Sd[i, :, :k] = evaluate(q[a : a + k], qdot[a : a + k])
        return Q, S, Sd

    @cached_property
    def _joint_batches(self) -> tuple[list[tuple], list[int]]:
        """Joints with a compiled ``batch`` evaluator, grouped by kernel; the other joints.

        A joint's ``batch`` is ``(key, kernel, parameter values)`` with
        ``kernel(q, qdot, dof0, nodes, params, Q, S, Sd)`` filling the rows
        ``nodes`` of the stacks (generated joints, :mod:`contactlab.joints.transform`).
        """
        groups: dict[str, tuple] = {}
        others: list[int] = []
        for i in np.flatnonzero(self.codes == _kernels.OTHER):
            batch = getattr(self.joints[i], "batch", None)
            if batch is None:
                others.append(int(i))
                continue
            key, kernel, params = batch
            groups.setdefault(key, (kernel, [], [], []))
            groups[key][1].append(self.dof0[i])
            groups[key][2].append(i)
            groups[key][3].append(params)
        batches = [
            (
                kernel,
                np.array(dof0, dtype=np.int64),
                np.array(nodes, dtype=np.int64),
                np.array(params, dtype=float).reshape(len(nodes), -1),
            )
            for kernel, dof0, nodes, params in groups.values()
        ]
        return batches, others

    @cached_property
    def _batched_subgroups(self) -> Array:
        """Batched joints that sweep a subgroup (their step holds ``S qdot``: ``Sdot = 0``)."""
        nodes = [i for b in self._joint_batches[0] for i in b[2]]
        return np.array([i for i in nodes if self.joints[i].subalgebra is not None], dtype=np.int64)

    def advance(self, q: Array, qdot: Array, h: float) -> tuple[Array, Array]:
        """Positions and velocities after a step of ``h`` [s] at velocities ``qdot``.

        Every joint moves by :meth:`Joint.advance` (fixed, revolute and prismatic
        joints: ``q + h qdot``, which is exact for them), then spherical charts
        are switched where needed (:meth:`reparameterize`).
        """
        q = self.check_coordinates(q, "q")
        qdot = self.check_coordinates(qdot, "qdot")
        q_new, qdot_new = q + h * qdot, qdot.copy()
        for i in np.flatnonzero(self.codes == _kernels.OTHER):
            a, k = self.dof0[i], self.ndof[i]
            q_new[a : a + k], qdot_new[a : a + k] = self.joints[i].advance(
                q[a : a + k], qdot[a : a + k], h
            )
        q_new, qdot_new, _ = self.reparameterize(q_new, qdot_new)
        return q_new, qdot_new

    def reparameterize(self, q: Array, qdot: Array) -> tuple[Array, Array, bool]:
        """Switch charts of joints that ask for it (spherical joints near |q| = pi)."""
        changed = False
        q, qdot = q.copy(), qdot.copy()
        for i in np.flatnonzero(self.codes == _kernels.OTHER):
            a, k = self.dof0[i], self.ndof[i]
            new = self.joints[i].reparameterize(q[a : a + k], qdot[a : a + k])
            if new is not None:
                q[a : a + k], qdot[a : a + k] = new
                changed = True
        return q, qdot, changed
