"""MJCF equality constraints (part of :mod:`contactlab.reduced.mjcf`).

``joint`` (linear polynomial) becomes a
:class:`~contactlab.reduced.constraints.Coupling`; ``tendon`` of fixed tendons a
:class:`LinearEquality` on the coordinates; ``connect`` a loop-closing spherical
joint and ``weld`` a loop-closing fixed joint at the compiled relative pose.
MuJoCo's constraints are soft (``solref``, ``solimp``); contactlab's are hard.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.reduced.constraints import ConstraintTerms, Coupling, EqualityConstraint
from contactlab.reduced.kinematics import Kinematics
from contactlab.reduced.mjcf_parts import Report, name_of, tendon_coefficients
from contactlab.reduced.tree import Tree
from contactlab.scene import JointSpec

Array = np.ndarray


@dataclass
class Equalities:
    joints: list[JointSpec] = field(default_factory=list)
    constraints: list[Any] = field(default_factory=list)


class LinearEquality(EqualityConstraint):
    """``c . q = offset`` on the coordinates (an MJCF ``tendon`` equality of fixed tendons).

    Parameters
    ----------
    name : the constraint's name.
    coefficients : (nq,) ``c`` [-] in the scene's coordinate order (tree order).
    offset : [rad or m].
    """

    def __init__(self, name: str, coefficients: Array, offset: float) -> None:
        self.name = name
        self.coefficients = np.asarray(coefficients, dtype=float).reshape(1, -1)
        self.offset = float(offset)

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        if self.coefficients.shape[1] != tree.nq:
            raise ConfigurationError(
                f"constraint {self.name!r} has {self.coefficients.shape[1]} coefficients for "
                f"a tree of {tree.nq} coordinates"
            )
        g = self.coefficients @ kin.q - self.offset
        z = np.zeros(1)
        return ConstraintTerms(self.coefficients, z, g, z, z, z)


def _tendon_row(model: Any, t: int, dof_index: Array, nq: int) -> Array | None:
    """``c`` with ``L(q) - L(qpos0) = c . q`` for a fixed tendon of hinges and slides."""
    pairs = tendon_coefficients(model, t)
    if pairs is None or any(int(model.jnt_type[j]) not in (2, 3) for j, _ in pairs):
        return None
    row = np.zeros(nq)
    for j, coef in pairs:
        row[dof_index[model.jnt_dofadr[j]]] += coef
    return row


def equalities(
    model: Any,
    specs: list[JointSpec],
    spec_joints: list[list[int]],
    nodes: dict[int, Any],
    owners: dict[int, tuple[int, Array]],
    dof_index: Array,
    report: Report,
) -> Equalities:
    """``joint`` equalities as couplings; ``tendon`` equalities of fixed tendons as linear
    constraints; ``connect`` and ``weld`` as loop-closing joints."""
    out = Equalities()
    if not model.neq:
        return out
    import mujoco

    single = {js[0]: s.name for s, js in zip(specs, spec_joints) if len(js) == 1}
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)  # the compiled pose, qpos0
    for e in range(model.neq):
        name = repr(name_of(model.eq(e), f"equality{e}"))
        t, o1, o2 = int(model.eq_type[e]), int(model.eq_obj1id[e]), int(model.eq_obj2id[e])
        eq = np.asarray(model.eq_data[e], dtype=float)
        if not model.eq_active0[e]:
            report.add("inactive equality constraints", name, "only active ones are imported")
            continue
        if t == 2:
            ok = o1 in single and o2 in single and int(model.jnt_type[o1]) in (2, 3)
            if not ok or np.any(eq[2:5] != 0):
                report.add(
                    "joint equalities",
                    name,
                    "imported: linear, between two bodies' single hinges or slides",
                )
                continue
            out.constraints.append(Coupling(single[o2], single[o1], eq[1], eq[0]))
            continue
        if t == 3:  # L1 - L1_0 = a0 + a1 (L2 - L2_0)
            nq = len(dof_index)
            rows = [
                _tendon_row(model, o, dof_index, nq) if o >= 0 else np.zeros(nq) for o in (o1, o2)
            ]
            if rows[0] is None or rows[1] is None or np.any(eq[2:5] != 0):
                report.add(
                    "tendon equalities",
                    name,
                    "imported: linear, of fixed tendons of hinges and slides",
                )
                continue
            label = f"tendon:{name_of(model.eq(e), str(e))}"
            out.constraints.append(LinearEquality(label, rows[0] - eq[1] * rows[1], eq[0]))
            continue
        if t not in (0, 1) or int(model.eq_objtype[e]) != 1:
            report.add(
                "equality constraints", name, "imported: joint, and connect and weld of bodies"
            )
            continue
        ends = [owners[b][0] for b in (o1, o2)]
        if ends[0] == ends[1]:
            report.add("equality constraints", name, "its two bodies are welded together")
            continue
        frames = [_inertial_world(data, o) for o in ends]
        if t == 0:  # connect: the anchor of body 1 (eq[0:3]) and that of body 2 (eq[3:6])
            points = [
                se3.make_transform(
                    None, data.xpos[b] + data.xmat[b].reshape(3, 3) @ eq[3 * k : 3 * k + 3]
                )
                for k, b in enumerate((o1, o2))
            ]
            kind = "spherical"
        else:  # weld: the relative pose of the two bodies at the compiled pose is kept
            if not _weld_is_compiled_pose(data, o1, o2, eq):
                report.add(
                    "weld relpose", name, "imported: welds that keep the compiled relative pose"
                )
                continue
            points = [frames[1], frames[1]]
            kind = "fixed"
        order = (0, 1) if ends[1] >= 0 else (1, 0)  # the child must be a body
        pa, ch = order
        out.joints.append(
            JointSpec(
                f"equality:{name_of(model.eq(e), str(e))}",
                kind,
                None if ends[pa] < 0 else nodes[ends[pa]].name,
                nodes[ends[ch]].name,
                frame_parent=se3.inverse(frames[pa]) @ points[pa],
                frame_child=se3.inverse(frames[ch]) @ points[ch],
                closes_loop=True,
            )
        )
    return out


def _weld_is_compiled_pose(data: Any, b1: int, b2: int, eq: Array) -> bool:
    """Whether a weld's ``relpose`` (eq[3:10]) is body 2's pose in body 1 at ``qpos0``."""
    R1 = data.xmat[b1].reshape(3, 3)
    R2 = data.xmat[b2].reshape(3, 3)
    pos = R1.T @ (data.xpos[b2] - data.xpos[b1])
    rel = R1.T @ R2
    return bool(
        np.allclose(eq[3:6], pos, atol=1e-9)
        and np.allclose(se3.quaternion_to_rotation(eq[6:10]), rel, atol=1e-9)
    )


def _inertial_world(data: Any, owner: int) -> Array:
    """World pose of a contactlab body frame (the inertial frame of its MuJoCo body)."""
    if owner < 0:
        return np.eye(4)
    return se3.make_transform(data.ximat[owner].reshape(3, 3), data.xipos[owner])
