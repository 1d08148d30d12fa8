"""A prepared, immutable model of a kinematic tree for fast dynamics calls.

:class:`Model` is built once from a :class:`~contactlab.reduced.tree.Tree`
(or a scene): it expands every joint into elementary nodes and stores
the tree as flat arrays (layout in :mod:`contactlab.reduced._fast`).  Its
methods call one compiled kernel each, with the joint maps, kinematics,
gravity and joint springs/dampers computed inside the compiled code:

========================  =============================================  ==========
method                    returns                                        cost
========================  =============================================  ==========
``forward_dynamics``      ``qddot`` (articulated-body recursion)         O(n)
``inverse_dynamics``      applied ``tau`` (Newton-Euler, Guenter & Rose form)  O(n)
``mass_matrix``           ``M`` (composite-rigid-body algorithm)         O(n depth)
``bias_forces``           ``h`` with ``M qddot + h = tau``               O(n)
``inverse_mass_times``    ``M^{-1} x``                                   O(n)
========================  =============================================  ==========

The kernels exist twice with the same recursions: in C
(``_cfast.c``, compiled when the package is installed, so a fresh process
calls them at once, with a workspace per model and a few type checks per
call) and in numba (:mod:`contactlab.reduced._fast`, compiled on first use
and cached on disk), which serves when no C compiler was available at
install.  Every call takes ``out=`` to write into a given array.  Arrays
that are already contiguous float64 of the right length pass straight to
the compiled code; anything else is converted and checked first.

Joint expansion.  A revolute, prismatic or fixed joint is one node.  The
joints that are products of exponentials of fixed screws with ``theta = q``
(planar, translational, universal, Euler-angle spherical) become chains of
revolute/prismatic nodes with massless intermediate links: ``Q = exp(xi_1
q_1) exp(xi_2 q_2) ...`` is exactly such a chain, so ``M``, ``tau`` and
every derivative are unchanged.  Composite joints (free, cylindrical)
expand part by part; the exponential-coordinate spherical joint is its own
node kind.  A joint generated from its transform whose factors have constant
Jacobians (``Q = C_0 exp([xi_1] q_1) C_1 ...``, see
:meth:`contactlab.joints.transform.TransformJoint.screw_chain`) becomes the
same revolute/prismatic nodes, its constant transforms folded into the node
frames, whatever expression it was written with.  Any other joint (splines,
custom joints) is an ``OTHER`` node: its ``Q``, ``S`` and ``Sdot`` are
evaluated before each call (one compiled call per expression for generated
joints, a Python call per joint otherwise) and passed to the kernel.

Scene force elements (springs, muscles between bodies) are not part of the
model; give their wrenches through ``wrenches`` or use
:func:`contactlab.reduced.forward_dynamics_recursive`.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.joints.maps import (
    CompositeJoint,
    FixedJoint,
    Joint,
    PlanarJoint,
    PrismaticJoint,
    RevoluteJoint,
    RotationSequenceJoint,
    TranslationalJoint,
)
from contactlab.joints.spherical import SphericalExpJoint
from contactlab.reduced import _fast, _general_kernels
from contactlab.reduced.tree import Array, Tree
from contactlab.scene import Scene
from contactlab.se3 import adjoint, inverse

try:  # built with the package when a C compiler was found (setup.py)
    from contactlab.reduced import _cfast
except ImportError:  # no compiled extension: the numba kernels of _fast serve every call
    _cfast = None  # type: ignore[assignment]


def _stale_extension() -> bool:
    """Whether ``_cfast.c`` beside the module differs from the source the extension was
    built from (an editable install edited since ``pip install -e .``)."""
    source = Path(__file__).with_name("_cfast.c")
    if _cfast is None or not source.is_file():
        return False
    return hashlib.sha256(source.read_bytes()).hexdigest() != _cfast.SOURCE_SHA256


if _stale_extension():
    warnings.warn(
        "contactlab.reduced._cfast was built from an older _cfast.c; the model uses its numba "
        "kernels until `pip install -e .` rebuilds it",
        stacklevel=1,
    )
    _cfast = None  # type: ignore[assignment]

#: Whether the kernels compiled at install (``_cfast.c``) are available; without
#: them every call runs the numba kernels of :mod:`contactlab.reduced._fast`
#: (same results, compiled on first use and cached on disk).
COMPILED_AHEAD = _cfast is not None

_SCREW_JOINTS = (
    RevoluteJoint,
    PrismaticJoint,
    PlanarJoint,
    TranslationalJoint,
    RotationSequenceJoint,
)


@dataclass(frozen=True)
class _Element:
    kind: int
    ndof: int
    axis: Array
    joint: Joint | None = None  # OTHER nodes only
    left: Array | None = None  # constant transform before the node's motion
    right: Array | None = None  # constant transform after it (last node of a joint only)
    screw: Array | None = None  # the node's screw in the frame after ``left`` (6,)


#: tolerance on |omega| = 1 and omega . v = 0 for a screw to be a revolute node
_SCREW_TOL = 1e-10


def _screw_elements(joint: Joint) -> list[_Element] | None:
    """Revolute/prismatic nodes of a joint ``Q = C_0 exp([xi_1] q_1) C_1 ...`` (see
    :meth:`contactlab.joints.transform.TransformJoint.screw_chain`), or ``None``.

    A screw ``(omega, v)`` with ``omega = 0`` is a prismatic node along ``v``; with
    ``|omega| = 1`` and ``omega . v = 0`` a revolute node about the line through
    ``r = omega x v`` (``exp([xi] q) = T(r) R(omega, q) T(-r)``); a screw with a
    pitch is none of them (the joint then stays an ``OTHER`` node).
    """
    chain = joint.screw_chain()  # type: ignore[attr-defined]
    if chain is None:
        return None
    offsets, screws = chain
    out: list[_Element] = []
    carry = np.eye(4)
    for k, xi in enumerate(screws):
        w, v = xi[:3], xi[3:]
        left = carry @ offsets[k]
        if np.abs(w).max() <= _SCREW_TOL:
            out.append(_Element(_fast.PRISMATIC, 1, v.copy(), left=left, screw=xi.copy()))
            carry = np.eye(4)
        elif abs(np.linalg.norm(w) - 1.0) <= _SCREW_TOL and abs(w @ v) <= _SCREW_TOL:
            r = np.cross(w, v)
            shift, back = np.eye(4), np.eye(4)
            shift[:3, 3], back[:3, 3] = r, -r
            node_screw = np.concatenate([w, np.zeros(3)])
            out.append(_Element(_fast.REVOLUTE, 1, w.copy(), left=left @ shift, screw=node_screw))
            carry = back
        else:
            return None
    tail = carry @ offsets[-1]
    if not out:
        return [_Element(_fast.FIXED, 0, np.zeros(3), left=tail)]
    last = out[-1]
    out[-1] = _Element(last.kind, 1, last.axis, left=last.left, right=tail, screw=last.screw)
    return out


def _elements(joint: Joint) -> list[_Element]:
    """Elementary nodes of a joint, in the order of its factors and coordinates."""
    kind = type(joint)
    if kind is FixedJoint:
        return [_Element(_fast.FIXED, 0, np.zeros(3))]
    if kind is SphericalExpJoint:
        return [_Element(_fast.SPHERICAL, 3, np.zeros(3))]
    if kind is CompositeJoint:
        return _elements(joint.first) + _elements(joint.second)  # type: ignore[attr-defined]
    if callable(getattr(joint, "screw_chain", None)):
        elements = _screw_elements(joint)
        if elements is not None:
            return elements
    if kind in _SCREW_JOINTS:
        out = []
        for xi in joint.screws:  # type: ignore[attr-defined]
            w, v = xi[:3], xi[3:]
            if np.allclose(v, 0.0) and np.isclose(np.linalg.norm(w), 1.0):
                out.append(_Element(_fast.REVOLUTE, 1, w.copy()))
            elif np.allclose(w, 0.0) and np.isclose(np.linalg.norm(v), 1.0):
                out.append(_Element(_fast.PRISMATIC, 1, v.copy()))
            else:
                return [_Element(_fast.OTHER, joint.ndof, np.zeros(3), joint)]
        return out
    return [_Element(_fast.OTHER, joint.ndof, np.zeros(3), joint)]


def _as_vector(x: Array, nq: int, name: str) -> Array:
    x = np.ascontiguousarray(x, dtype=np.float64)
    if x.shape != (nq,):
        raise ConfigurationError(f"{name} must have shape ({nq},) for this model, got {x.shape}")
    return x


def _as_out(out: Array | None, shape: tuple[int, ...]) -> Array | None:
    """``out`` checked: a writeable C-contiguous float64 array of ``shape`` (or None)."""
    if out is None:
        return None
    if (
        not isinstance(out, np.ndarray)
        or out.dtype != np.float64
        or out.shape != shape
        or not out.flags.c_contiguous
        or not out.flags.writeable
    ):
        raise ConfigurationError(
            f"out must be a writeable C-contiguous float64 array of shape {shape}, got "
            f"{type(out).__name__} {getattr(out, 'dtype', '')} {np.shape(out)}; pass out=None "
            "for a new array"
        )
    return out


def _into(result: Array, out: Array | None) -> Array:
    if out is None:
        return result
    checked = _as_out(out, result.shape)
    assert checked is not None
    checked[...] = result
    return checked


class Model:
    """Flat arrays of a tree for the compiled kernels; build once, call many times.

    Attributes
    ----------
    tree : the tree it was built from.
    nq : number of coordinates (those of the tree, same order).
    topo, geom, dofp : kernel arrays (see :mod:`contactlab.reduced._fast`).
    body_node : (n_tree,) node holding each tree joint's body.
    screw_only : every node is revolute, prismatic or fixed (no spherical or ``OTHER`` node).
    kernels : ``"c"`` (the extension compiled at install, ``_cfast.c``) or ``"numba"``
        (the kernels of :mod:`contactlab.reduced._fast`); ``Model(tree, kernels="numba")``
        forces the latter.  Both compute the same recursions.
    """

    def __init__(self, tree: Tree, kernels: str = "auto") -> None:
        if kernels not in ("auto", "c", "numba"):
            raise ConfigurationError(f"kernels must be 'auto', 'c' or 'numba', got {kernels!r}")
        if kernels == "c" and _cfast is None:
            raise ConfigurationError(
                "kernels='c' needs the extension contactlab.reduced._cfast, which was not built "
                "(no C compiler at install); reinstall with a compiler or use kernels='numba'"
            )
        self.tree = tree
        self.nq = tree.nq
        parent: list[int] = []
        kind: list[int] = []
        dof0: list[int] = []
        ndof: list[int] = []
        ext_row: list[int] = []
        body_node: list[int] = []
        geom: list[Array] = []
        self._other: list[tuple[int, Joint, int, int]] = []  # (ext row, joint, dof0, ndof)
        last_node = np.full(tree.n, -1)
        for t in range(tree.n):
            elements = _elements(tree.joints[t])
            Fp = tree.frame_parent[t]
            Fc_inv = tree.frame_child_inv[t]
            AdFc = tree.ad_frame_child[t]
            offset = int(tree.dof0[t])
            for e, el in enumerate(elements):
                first, last = e == 0, e == len(elements) - 1
                node = len(parent)
                tp = int(tree.parent[t])
                parent.append((last_node[tp] if tp >= 0 else -1) if first else node - 1)
                kind.append(el.kind)
                dof0.append(offset)
                ndof.append(el.ndof)
                if el.kind == _fast.OTHER:
                    ext_row.append(len(self._other))
                    self._other.append((len(self._other), el.joint, offset, el.ndof))  # type: ignore[arg-type]
                else:
                    ext_row.append(-1)
                offset += el.ndof
                fp = Fp if first else np.eye(4)
                fci = Fc_inv if last else np.eye(4)
                adfc = AdFc if last else np.eye(6)
                if el.left is not None:
                    fp = fp @ el.left
                if el.right is not None:  # body frame = node frame . right . Fc^{-1}
                    fci = el.right @ fci
                    adfc = adjoint(inverse(fci))
                inertia = tree.inertia[t] if last else np.zeros(6)
                screw = np.zeros(6)
                if el.screw is not None:
                    screw = el.screw
                elif el.kind == _fast.REVOLUTE:
                    screw[:3] = el.axis
                elif el.kind == _fast.PRISMATIC:
                    screw[3:] = el.axis
                row = np.zeros(_fast.NGEOM)
                row[_fast.RP : _fast.RP + 9] = fp[:3, :3].ravel()
                row[_fast.PP : _fast.PP + 3] = fp[:3, 3]
                row[_fast.RC : _fast.RC + 9] = fci[:3, :3].ravel()
                row[_fast.PC : _fast.PC + 3] = fci[:3, 3]
                row[_fast.AXIS : _fast.AXIS + 3] = el.axis
                row[_fast.INERTIA : _fast.INERTIA + 6] = inertia
                row[_fast.ADFC : _fast.ADFC + 36] = adfc.ravel()
                row[_fast.SCONST : _fast.SCONST + 6] = adfc @ screw
                geom.append(row)
            last_node[t] = len(parent) - 1
            body_node.append(len(parent) - 1)
        n = len(parent)
        end = np.arange(1, n + 1)
        for i in range(n - 1, -1, -1):
            if parent[i] >= 0:
                end[parent[i]] = max(end[parent[i]], end[i])
        self.topo = np.ascontiguousarray(
            np.array([parent, kind, dof0, ndof, ext_row, end], dtype=np.int64).T
        )
        header = np.zeros(_fast.NGEOM)
        header[:3] = tree.scene.gravity
        self.geom = np.ascontiguousarray(np.array(geom + [header]).reshape(n + 1, _fast.NGEOM))
        self.dofp = np.ascontiguousarray(
            np.array(
                [
                    tree.per_dof("stiffness"),
                    tree.per_dof("damping"),
                    tree.per_dof("rest"),
                    tree.per_dof("armature"),
                ]
            ).reshape(4, self.nq)
        )
        self.body_node = np.array(body_node, dtype=np.int64)
        self.screw_only = all(k in (_fast.FIXED, _fast.REVOLUTE, _fast.PRISMATIC) for k in kind)
        self.n_nodes = n
        self._ext = np.zeros((len(self._other), 88))
        self._other_ndof = np.array([k for _, _, _, k in self._other], dtype=np.int64)
        self._batches, self._python_other = self._group_generated()
        self._no_wrenches = np.zeros((0, 6))
        self._zeros = np.zeros(self.nq)
        for a in (self.topo, self.geom, self.dofp, self.body_node):
            a.setflags(write=False)
        # Compiled-ahead kernels (one workspace per model) unless numba is asked for.
        self._c = (
            None
            if _cfast is None or kernels == "numba"
            else _cfast.Kernels(self.topo, self.geom, self.dofp, len(self._other))
        )
        self._ext_none = not self._other
        self.kernels = "numba" if self._c is None else "c"

    def __getstate__(self) -> dict[str, object]:
        """Pickled without the compiled kernels' workspace, which is rebuilt on loading."""
        state = self.__dict__.copy()
        state["_c"] = None
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        if self.kernels == "c":
            if _cfast is None:
                self.kernels = "numba"  # unpickled where the extension was not built
            else:
                self._c = _cfast.Kernels(self.topo, self.geom, self.dofp, len(self._other))

    @classmethod
    def from_scene(cls, scene: Scene, kernels: str = "auto") -> Model:
        """Build the tree of ``scene`` and its model."""
        return cls(Tree.from_scene(scene), kernels=kernels)

    @property
    def has_other_joints(self) -> bool:
        """Whether some joints are evaluated in Python each call (see the module notes)."""
        return bool(self._other)

    @property
    def other_coordinates(self) -> Array:
        """Indices of the coordinates of ``OTHER`` nodes."""
        idx = [np.arange(a, a + k) for _, _, a, k in self._other]
        return np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, dtype=np.int64)

    def _group_generated(self) -> tuple[list[tuple], list[tuple[int, Joint, int, int]]]:
        """``OTHER`` joints with a compiled ``batch`` evaluator (joints generated from their
        transform, :mod:`contactlab.joints.transform`) grouped by kernel; the rest."""
        groups: dict[str, tuple] = {}
        rest = []
        for row, joint, a, k in self._other:
            batch = getattr(joint, "batch", None)
            if batch is None:
                rest.append((row, joint, a, k))
                continue
            key, kernel, params = batch
            groups.setdefault(key, (kernel, [], [], []))
            groups[key][1].append(a)
            groups[key][2].append(row)
            groups[key][3].append(params)
        batches = [
            (
                kernel,
                np.array(dof0, dtype=np.int64),
                np.array(rows, dtype=np.int64),
                np.array(params, dtype=float).reshape(len(rows), -1),
            )
            for kernel, dof0, rows, params in groups.values()
        ]
        return batches, rest

    # ------------------------------------------------------------------
    def joint_maps(self, q: Array, qdot: Array) -> Array:
        """The ``ext`` array: joint maps of ``OTHER`` nodes at ``(q, qdot)`` (m, 88).

        Generated joints are evaluated by one compiled call per expression into
        stacks that one more compiled call packs into ``ext``; every array is
        allocated per call (``np.empty``), so a model can be shared by threads.
        """
        m = len(self._other)
        if not m:
            return self._ext
        ext = np.empty((m, 88))
        if self._batches:
            Q, S, Sd = np.empty((m, 4, 4)), np.empty((m, 6, 6)), np.empty((m, 6, 6))
            for kernel, dof0, rows, params in self._batches:
                kernel(q, qdot, dof0, rows, params, Q, S, Sd)
            _general_kernels.pack_joint_maps(Q, S, Sd, self._other_ndof, ext)
        for row, joint, a, k in self._python_other:
            Q1, S1, Sd1 = joint.evaluate(q[a : a + k], qdot[a : a + k])
            ext[row] = 0.0
            ext[row, :16] = Q1.ravel()
            ext[row, 16:52].reshape(6, 6)[:, :k] = S1
            ext[row, 52:88].reshape(6, 6)[:, :k] = Sd1
        return ext

    def node_wrenches(self, wrenches: Array | None) -> Array:
        """Body wrenches (nb, 6) in scene body order as per-node rows (n_nodes, 6)."""
        if wrenches is None:
            return self._no_wrenches
        nb = self.tree.scene.n_bodies
        w = np.asarray(wrenches, dtype=float).reshape(-1, 6)
        if w.shape[0] != nb:
            raise ConfigurationError(
                f"wrenches must have one 6-vector per body ({nb}, 6), got {np.shape(wrenches)}"
            )
        out = np.zeros((self.n_nodes, 6))
        out[self.body_node] = w[self.tree.body]
        return out

    # ------------------------------------------------------------------
    def forward_dynamics(
        self,
        q: Array,
        qdot: Array,
        tau: Array | None = None,
        wrenches: Array | None = None,
        out: Array | None = None,
    ) -> Array:
        """``qddot`` (nq,) from applied joint forces ``tau`` (nq,) [N m or N], gravity included.

        ``wrenches`` (nb, 6): extra body-frame wrenches on the bodies (scene order).
        ``out`` (nq,) float64: written and returned instead of a new array.
        """
        c = self._c
        if c is not None and wrenches is None and self._ext_none:
            try:  # contiguous float64 arrays of the right length: no conversion, no copy
                return c.forward_dynamics(
                    q, qdot, self._zeros if tau is None else tau, None, None, False, out
                )
            except TypeError:
                pass  # converted and checked below
        q = _as_vector(q, self.nq, "q")
        qdot = _as_vector(qdot, self.nq, "qdot")
        tau = self._zeros if tau is None else _as_vector(tau, self.nq, "tau")
        ext, fext = self.joint_maps(q, qdot), self.node_wrenches(wrenches)
        if c is not None:
            return c.forward_dynamics(q, qdot, tau, ext, fext, False, _as_out(out, (self.nq,)))
        qdd = _fast.forward_dynamics(
            self.topo, self.geom, self.dofp, ext, q, qdot, tau, fext, False
        )
        return _into(qdd, out)

    def inverse_mass_times(self, q: Array, x: Array, out: Array | None = None) -> Array:
        """``M(q)^{-1} x`` (nq,) in O(n), without forming ``M``."""
        q = _as_vector(q, self.nq, "q")
        x = _as_vector(x, self.nq, "x")
        z = self._zeros
        ext = self.joint_maps(q, z)
        if self._c is not None:
            return self._c.forward_dynamics(q, z, x, ext, None, True, _as_out(out, (self.nq,)))
        y = _fast.forward_dynamics(
            self.topo, self.geom, self.dofp, ext, q, z, x, self._no_wrenches, True
        )
        return _into(y, out)

    def inverse_dynamics(
        self,
        q: Array,
        qdot: Array,
        qddot: Array,
        wrenches: Array | None = None,
        out: Array | None = None,
    ) -> Array:
        """Applied joint forces ``tau`` (nq,) that produce ``qddot``."""
        c = self._c
        if c is not None and wrenches is None and self._ext_none:
            try:
                return c.inverse_dynamics(q, qdot, qddot, None, None, out)
            except TypeError:
                pass  # converted and checked below
        q = _as_vector(q, self.nq, "q")
        qdot = _as_vector(qdot, self.nq, "qdot")
        qddot = _as_vector(qddot, self.nq, "qddot")
        ext, fext = self.joint_maps(q, qdot), self.node_wrenches(wrenches)
        if c is not None:
            return c.inverse_dynamics(q, qdot, qddot, ext, fext, _as_out(out, (self.nq,)))
        tau = _fast.inverse_dynamics(self.topo, self.geom, self.dofp, ext, q, qdot, qddot, fext)
        return _into(tau, out)

    def bias_forces(self, q: Array, qdot: Array, out: Array | None = None) -> Array:
        """``h(q, qdot)`` of ``M qddot + h = tau``: Coriolis, gravity, joint springs/dampers."""
        return self.inverse_dynamics(q, qdot, self._zeros, out=out)

    def mass_matrix(self, q: Array, out: Array | None = None) -> Array:
        """``M(q)`` (nq, nq), dense, by the composite-rigid-body algorithm.

        ``out`` (nq, nq) float64 C-ordered: written and returned instead of a new array.
        """
        c = self._c
        if c is not None and self._ext_none:
            try:
                return c.mass_matrix(q, None, out)
            except TypeError:
                pass  # converted and checked below
        q = _as_vector(q, self.nq, "q")
        ext = self.joint_maps(q, self._zeros)
        if c is not None:
            return c.mass_matrix(q, ext, _as_out(out, (self.nq, self.nq)))
        return _into(_fast.mass_matrix(self.topo, self.geom, self.dofp, ext, q), out)

    def random_state(self, rng: np.random.Generator) -> tuple[Array, Array, Array]:
        """A random ``(q, qdot, qddot)`` with each joint's own sampler (tests, benchmarks)."""
        q = np.concatenate([j.sample(rng) for j in self.tree.joints] or [np.zeros(0)])
        return q, rng.uniform(-1, 1, self.nq), rng.uniform(-1, 1, self.nq)
