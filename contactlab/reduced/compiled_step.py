"""The compiled contact step of the reduced formulation for robots on the ground.

A reduced-coordinate step with box friction solved by ``pgs`` poses and
solves, through the general layers, one LCP per step: the formulation
assembles ``M_r``, the free momentum and the contact rows as ``scipy.sparse``
matrices, the model builds the Delassus matrix ``C M^-1 C^T``, the solver
layer runs the sweeps.  Each of those stages is compiled, but the Python
between them (thousands of calls per step) costs a thousand times MuJoCo's
whole step on a quadruped.

:class:`CompiledContactStep` runs the same step as two compiled calls over
flat arrays (:mod:`contactlab.reduced._step_kernels`): the contacts of the
robot's shapes with the ground planes and with each other, with their identities,
then the kinematics, ``M_r`` and the
free momentum, the contact rows, the tree factor ``M = L^T L`` reused for
``C M^-1 C^T`` and the free velocity, the projected Gauss--Seidel sweeps, the
velocity and the position update.  Joint springs and dampers (PD drives) are
implicit as in the formulation; applied joint torques (``Scene.joint_torque``,
a moving drive reference) are evaluated once per step and enter the free
momentum; joint limits (:class:`~contactlab.reduced.constraints.JointLimit`)
are unilateral rows after the contact rows, as :func:`box_rows` orders them.
It poses the same problem as the general path and solves it by the same method
with the same stopping rule, from the same warm start (the impulses recorded
under the model's cache key, carried over by contact identity; the limit
impulses when the rows are as many): the solutions agree to the solver's
tolerance.  When two of the robot's shapes come within reach of each other,
or the scene has static shapes other than planes, the contacts of the step
come from the general collider (the rest of the step stays compiled).  A step
it cannot take (a decoupled LCP row, a singular ``M``, joint torques of the
wrong shape) returns ``None`` and the simulator takes the general path for
that step; the two share their warm starts.

It applies when, at set-up, the scene, formulation, model and solver are all
in its scope (:func:`compiled_step_for`); otherwise nothing changes.  The
records keep their columns; a record's ``problem`` and ``solution`` are
built on first access (the problem by the formulation's own
:meth:`~ReducedFormulation.assemble`).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.models import compiled_box_step as B
from contactlab.models.box_rows import ImpulseMemory
from contactlab.reduced import _kernels
from contactlab.reduced import _step_kernels as K
from contactlab.runs import StepRecord
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.models.base import ContactModel
    from contactlab.reduced.formulation import ReducedFormulation
    from contactlab.simulator import Simulator

Array = np.ndarray


#: joint kinds of the scenes the compiled step takes
SCOPE_JOINTS = frozenset({"fixed", "revolute", "prismatic", "free"})


def scene_in_scope(scene: Any) -> bool:
    """Whether a scene is a robot on the ground that the default route sends to the
    compiled step (the model and solver aside): a tree of fixed, revolute, prismatic and
    free joints without friction, no loop closures, joint limits as the only constraints
    (joint torques and PD drives allowed), no force elements, no restitution, planes as the
    only static shapes.

    The compiled step also takes scenes with other static shapes (their contacts come from
    the general collider) when box friction by ``pgs`` is chosen; they are not sent to it
    by default: on ``arm-push`` (a table, a box pushed by an arm) projected Gauss--Seidel
    leaves one step of 800 at its sweep cap (docs/robots.md)."""
    from contactlab.reduced.constraints import JointLimit
    from contactlab.shapes import Plane

    return bool(
        all(
            j.kind in SCOPE_JOINTS and j.friction is None and not j.closes_loop
            for j in scene.joints
        )
        and all(type(c) is JointLimit for c in scene.constraints)
        and not scene.forces
        and scene.contact.restitution == 0.0
        and not scene.contact.restitution_pairs
        and all(isinstance(s, Plane) for s in scene.static_shapes)
    )


def _scope(formulation: Any, model: Any, collide: Any) -> str:
    """Why the compiled step does not apply (empty when it does)."""
    why = B.model_scope(model, collide)
    if not why and formulation.scene.contact.directions != 4:
        why = "solver settings"
    return formulation_scope(formulation, why)


def formulation_scope(formulation: Any, model_reason: str = "") -> str:
    """Why the formulation and the scene are outside the compiled steps' scope (empty
    when they are in it), ``model_reason`` (why the model is not taken)
    reported after the formulation's and the scene's reasons."""
    from contactlab.joints.maps import CompositeJoint, TranslationalJoint
    from contactlab.joints.spherical import SphericalExpJoint
    from contactlab.reduced.constraints import JointLimit

    f = formulation
    if not (f.implicit and f.coriolis == "rotated_linear" and f.group_integration):
        return "formulation options"
    if any(type(c) is not JointLimit for c in f.constraints) or f.joint_layout is not None:
        return "constraints other than joint limits, or joint friction"
    scene = f.scene
    if scene.forces or scene.contact.restitution > 0.0 or scene.contact.restitution_pairs:
        return "force elements or restitution"
    if model_reason:
        return model_reason
    tree = f.tree
    for joint, code in zip(tree.joints, tree.codes, strict=True):
        if code != _kernels.OTHER:
            continue
        free = (
            type(joint) is CompositeJoint
            and {type(joint.first), type(joint.second)} == {SphericalExpJoint, TranslationalJoint}
            and getattr(
                joint.first if type(joint.first) is SphericalExpJoint else joint.second,
                "switch_angle",
                0.0,
            )
            == np.pi
        )
        if not free:
            return f"joint {type(joint).__name__}"
    return ""


def compiled_step_for(
    formulation: ReducedFormulation, model: ContactModel, collide: Any
) -> CompiledContactStep | None:
    """The compiled step of this set-up, or ``None`` when it is outside its scope."""
    if collide is None or _scope(formulation, model, collide):
        return None
    return CompiledContactStep(formulation, model)


class CompiledContactStep:
    """The step of a reduced formulation with box friction by ``pgs`` (module docstring)."""

    def __init__(self, formulation: ReducedFormulation, model: ContactModel) -> None:
        from contactlab.collision.shape_table import ShapeTable
        from contactlab.contact_pairs import excluded_pairs
        from contactlab.joints.spherical import SphericalExpJoint

        self.formulation = formulation
        self.model = model
        scene = formulation.scene
        tree = formulation.tree
        self.scene = scene
        n = tree.n
        kind = tree.codes.copy()
        for i in np.flatnonzero(tree.codes == _kernels.OTHER):
            first = tree.joints[i].first  # type: ignore[attr-defined]
            kind[i] = K.FREE_RF if type(first) is SphericalExpJoint else K.FREE_TF
        # the nodes' coordinates and the coordinates that move each node (its ancestors')
        support = np.zeros((n, tree.nq), dtype=np.int64)
        count = np.zeros(n, dtype=np.int64)
        for node in range(n):
            chain: list[int] = []
            k = node
            while k >= 0:
                chain += range(int(tree.dof0[k]), int(tree.dof0[k] + tree.ndof[k]))
                k = int(tree.parent[k])
            chain.sort()
            count[node] = len(chain)
            support[node, : len(chain)] = chain
        node_of_body = np.empty(scene.n_bodies, dtype=np.int64)
        node_of_body[tree.body] = np.arange(n)
        self._node_of_body = node_of_body
        self._body_of_node = np.asarray(tree.body, dtype=np.int64)
        self._identity_order = bool(np.all(tree.body == np.arange(n)))
        f64 = np.ascontiguousarray
        self._tree = (
            kind.astype(np.int64),
            f64(tree.axes, dtype=float),
            f64(tree.parent, dtype=np.int64),
            f64(tree.frame_parent, dtype=float),
            f64(tree.frame_child_inv, dtype=float),
            f64(tree.ad_frame_child, dtype=float),
            f64(tree.ndof, dtype=np.int64),
            f64(tree.dof0, dtype=np.int64),
        )
        self._inertia = f64(tree.inertia, dtype=float)
        #: the kinematics of the last step's new state, reused by the next step at it
        self._kin = (
            np.zeros((n, 4, 4)), np.zeros((n, 6, 6)), np.zeros((n, 6, 6)),
            np.zeros((n, 6, 6)), np.zeros((n, 6)), np.zeros(tree.nq), np.zeros(tree.nq),
            np.zeros(1, dtype=np.int64),
        )  # fmt: skip
        # joint limits: per JointLimit its lower rows, then its upper rows (JointLimit.rows)
        dofs: list[int] = []
        signs: list[float] = []
        bounds: list[float] = []
        for c in formulation.constraints:
            idx = np.arange(c.dofs.start, c.dofs.stop)  # type: ignore[attr-defined]
            k = idx.size
            for sign, bound in ((1.0, c.lower), (-1.0, c.upper)):  # type: ignore[attr-defined]
                dofs += idx.tolist()
                signs += [sign] * k
                bounds += np.broadcast_to(np.asarray(bound, dtype=float), (k,)).tolist()
        self._limits = (
            np.asarray(dofs, dtype=np.int64),
            np.asarray(signs, dtype=float),
            np.asarray(bounds, dtype=float),
        )
        self._nq = int(tree.nq)
        self._has_limits = self._limits[0].size > 0
        self._no_tau = np.zeros(tree.nq)
        self._torque = formulation.joint_torque
        self._support = support
        self._count = count
        self._dofs = tuple(
            f64(tree.per_dof(a), dtype=float) for a in ("stiffness", "damping", "rest", "armature")
        )
        self._gravity = f64(scene.gravity, dtype=float)
        # -- collision: the dynamic shapes against the ground planes -----------------
        tab = ShapeTable.from_scene(scene)
        self._table = tab
        # the planes' static indices and materials (one dummy entry without planes)
        some = tab.plane_local.size > 0
        self._plane_local = tab.plane_local if some else np.zeros(1, dtype=np.int64)
        self._plane_material = tab.plane_material if some else np.zeros(1, dtype=np.int64)
        self.margin = float(scene.contact.margin)
        # bounding radii of the shapes about their frames' origins, and bounding boxes in
        # the shapes' frames (centre, half extents): a pair of shapes whose boxes are apart
        # by more than the margin has no contact
        radius = np.zeros(tab.n_shapes)
        box_c = np.zeros((tab.n_shapes, 3))
        box_h = np.zeros((tab.n_shapes, 3))
        for s in range(tab.n_shapes):
            r, hh = tab.size[s, 0], tab.size[s, 1]
            kd = int(tab.kind[s])
            if kd == K.MESH:
                h = tab.hull[s]
                v = tab.hulls.vertices[tab.hulls.vertex_start[h] : tab.hulls.vertex_start[h + 1]]
                radius[s] = float(np.sqrt((v**2).sum(axis=1).max()))
                box_c[s] = 0.5 * (v.max(axis=0) + v.min(axis=0))
                box_h[s] = 0.5 * (v.max(axis=0) - v.min(axis=0))
            elif kd == K.SPHERE:
                radius[s] = r
                box_h[s] = r
            elif kd == K.CAPSULE:
                radius[s] = r + hh
                box_h[s] = (r, r, hh + r)
            elif kd == K.CYLINDER:
                radius[s] = np.hypot(r, hh)
                box_h[s] = (r, r, hh)
            else:
                radius[s] = float(np.linalg.norm(tab.size[s]))
                box_h[s] = tab.size[s]
        # shape pairs on different bodies that may collide: when two come within reach,
        # the step asks the general collider (body-body narrow phases)
        nb = scene.n_bodies
        excluded = excluded_pairs(scene)
        self._excluded = excluded
        first, second = np.triu_indices(tab.n_shapes, 1)
        bi = np.where(tab.body[first] < 0, nb, tab.body[first])
        bj = np.where(tab.body[second] < 0, nb, tab.body[second])
        keep = (bi != bj) & ~np.isin(bi * (nb + 1) + bj, excluded)
        self._near = (
            f64(first[keep], dtype=np.int64),
            f64(second[keep], dtype=np.int64),
            box_c,
            box_h,
        )
        #: per candidate pair, a direction along which it was last found apart (zero: none)
        #: and the shapes' extents along it: a pair proven farther apart than the margin
        #: along it skips the distance computation (the same contacts)
        npair = self._near[0].size
        #: per shape and plane, the hull's vertices near the plane at a reference pose
        #: (:func:`K._hull_plane_points`: the same contacts from fewer vertices)
        n_planes = np.asarray(tab.plane_normal).reshape(-1, 3).shape[0]
        most = int(np.diff(tab.hulls.vertex_start).max(initial=0))
        self._separation = (
            np.zeros((npair, 3)),
            np.zeros((npair, 2, 3)),
            np.zeros((npair, 2)),
            np.zeros((tab.n_shapes, n_planes, K.KEEP_HEAD + most)),
        )
        # shapes that meet the planes: dynamic, on bodies not excluded from the world
        body = np.where(tab.body < 0, nb, tab.body)
        planes = (tab.body >= 0) & ~np.isin(body * (nb + 1) + nb, excluded)
        hs = tab.hulls
        self._shape_args = (
            f64(tab.body, dtype=np.int64),
            f64(tab.kind, dtype=np.int64),
            f64(tab.pose, dtype=float),
            f64(tab.size, dtype=float),
            f64(tab.hull, dtype=np.int64),
            radius,
            planes,
            f64(hs.vertices, dtype=float),
            f64(hs.vertex_start, dtype=np.int64),
            f64(hs.normals, dtype=float),
            f64(hs.face_start, dtype=np.int64),
            f64(hs.face_vertices, dtype=np.int64),
            f64(hs.face_vertex_start, dtype=np.int64),
            f64(hs.neighbour_start, dtype=np.int64),
            f64(hs.neighbours, dtype=np.int64),
            int(hs.max_face_vertices),
            f64(tab.plane_normal, dtype=float).reshape(-1, 3),
            f64(tab.plane_offset, dtype=float).reshape(-1),
        )
        self._feedback = B.Feedback(scene.contact)
        #: the step size and the feedback's beta at it
        self._beta = (np.nan, np.nan)
        self._no_ids = np.zeros(0, dtype=np.int64)
        self._no_normal = np.zeros(0)
        self._no_friction = np.zeros((0, 3))
        self._no_old = (self._no_ids, self._no_normal, self._no_friction)
        #: the row blocks of the impulses (box_rows: no G rows, the limit rows last)
        self._slices = B.RowBlocks(self._limits[0].size)
        self._table_args = (
            f64(tab.body, dtype=np.int64),
            f64(tab.local, dtype=np.int64),
            f64(tab.material, dtype=np.int64),
            f64(self._plane_local, dtype=np.int64),
            f64(self._plane_material, dtype=np.int64),
            f64(tab.mu_table, dtype=float),
        )
        self._no_track = identity.identify(None, None)
        self._radius2 = float(identity.MATCH_RADIUS**2)
        # the kernels' arguments that stay from step to step, gathered once: a step passes
        # them on without unpacking the groups again
        self._contact_args = (
            *self._shape_args, self.margin, int(scene.contact.hull_plane_points), *self._near,
            *self._table_args,
        )  # fmt: skip
        self._step_head = (
            *self._tree, self._inertia, self._support, self._count, *self._dofs, self._gravity,
        )  # fmt: skip
        self._bodies = (self._node_of_body, self._body_of_node)
        #: the solver status of the kernel's codes (else a numerical error)
        self._statuses = {K.OPTIMAL: "optimal", K.MAX_ITERATIONS: "max_iterations"}
        #: where the row's measurements sit in the kernel's info
        self._at = B.RowIndex(K)

    # ------------------------------------------------------------------
    def contacts(self, E: Array) -> tuple[ContactSet, bool]:
        """The contacts of the step at body transforms ``E`` (scene order) and whether they
        are the compiled collision's (``False``: from the general collider, when two shapes
        of kinds it does not pair come within reach)."""
        contacts, track = self._tracked(E, None)
        return contacts, track is not None

    def _tracked(self, E: Array, previous: Any) -> tuple[ContactSet, identity.ContactTrack | None]:
        """The contacts at ``E`` and their identities given the ``previous`` track (``None``
        with the general collider's contacts: the caller identifies them)."""
        columns, track = self._columns(E, previous)
        return B.contact_set(*columns), track

    def _columns(
        self, E: Array, previous: Any
    ) -> tuple[tuple[Array, ...], identity.ContactTrack | None]:
        """:meth:`_tracked` with the contacts as their columns, in the order of the fields
        of :class:`ContactSet` (the set is made only when read)."""
        old = self._no_track if previous is None else previous
        PN, DM, columns, pair, fallback, next_id, wide = K.tracked_contacts(
            E if E.flags.c_contiguous else np.ascontiguousarray(E), *self._contact_args,
            old.pair, old.point, old.ids, old.next_id, self._radius2, *self._separation,
        )  # fmt: skip
        if fallback:
            from contactlab.collision import collide
            from contactlab.contact_pairs import drop_jointed

            general = B.kernel_contacts(
                drop_jointed(collide(self.scene, E), self.scene, self._excluded)
            )
            return B.contact_columns(general), None
        # the columns are contiguous views of the kernel's few arrays (indexed: unpacking
        # an array iterates it to an IndexError)
        point = PN[0]
        found = (point, PN[1], DM[0], columns[0], columns[1], columns[2], columns[3], DM[1])
        if wide:  # pair keys too wide for one integer: the rows grouped by np.unique
            return found, identity.identify(B.contact_set(*found), previous)
        return found, B.contact_track(columns[4], columns[5], pair, point, next_id)

    # ------------------------------------------------------------------
    def step(self, sim: Simulator, state: State, index: int) -> tuple[State, StepRecord] | None:
        """One step of ``sim`` from ``state``; ``None`` when the general path must take it."""
        clock = time.perf_counter
        start = clock()
        h = sim.dt
        cache = state.cache
        previous = cache.get(identity.CACHE_KEY)
        found, track = self._columns(state.E, previous)
        point, normal, distance, body_a, body_b, _, _, mu = found
        if track is None:
            track = identity.identify(B.contact_set(*found), previous)
        collided = clock()
        memory = cache.get(B.MEMORY_KEY)
        nc = len(distance)
        if nc and getattr(memory, "ids", None) is not None:
            carry = True
            old = (memory.ids, memory.normal_impulse, memory.friction)  # type: ignore[union-attr]
        else:
            carry, old = False, self._no_old
        if self._torque is None:
            tau = self._no_tau
        else:
            q, qdot = np.asarray(state.q, dtype=float), np.asarray(state.qdot, dtype=float)
            tau = np.asarray(self._torque(state.t, q, qdot), dtype=float)
            if tau.shape != (self._nq,):
                return None  # the general path's broadcasting and messages
            tau = np.ascontiguousarray(tau)
        old_limit = self._no_normal
        if self._has_limits and isinstance(memory, ImpulseMemory):
            part = memory.slices.get("L")
            if part is not None:
                old_limit = np.ascontiguousarray(memory.z[part], dtype=float)
        if h != self._beta[0]:
            self._beta = (h, self._feedback.beta(h))
        beta = self._beta[1]
        model: Any = self.model
        cap = model.options["max_iter"]
        assembled = clock()
        q_new, v_new, v, E, phi, z, friction, info = K.full_step(
            *self._step_head, state.q, state.qdot, h, tau, *self._bodies,
            body_a, body_b, point, normal, distance, mu, beta, self._feedback.max_correction,
            carry, *old,
            track.ids, track.origin, *self._limits, old_limit,
            model.tol, 10000 if cap is None else cap, 1.0, 8, sim.slip_threshold, self._kin,
        )  # fmt: skip
        solved = clock()
        f = info.tolist()
        code = int(f[K.I_STATUS])
        status = self._statuses.get(code)
        if status is None:
            if code in (K.NOT_SPD, K.DECOUPLED):
                return None  # the general path's closed forms and messages
            status = B.usable_status(sim, index, state.t, code, K)  # raises the failure
        t = state.t + h
        if not f[K.I_FINITE]:
            if not np.all(np.isfinite(v)):
                raise sim._failure(index, state.t, f"non-finite velocities (status {status!r})")
            State(t, E, phi, q_new, v_new).check_finite()
        new_state = B.new_state(
            t, E, phi, q_new, v_new, B.carried_cache(state, track, z, friction, self._slices(nc))
        )
        m = K.I_MOMENTUM
        values = B.row_values(
            f, self._at, index, float(t), h, f[K.I_KINETIC], f[K.I_GRAVITY] + f[K.I_SPRING],
            f[m : m + 6], f[K.I_LIMIT], status, nc, (start, collided, assembled, solved),
        )  # fmt: skip
        record = B.record_row(sim, self.formulation, state, found, track, index, values, v, z)
        return new_state, record


__all__ = ["CompiledContactStep", "compiled_step_for"]
