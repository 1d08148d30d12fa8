"""MJCF robots against MuJoCo: mass matrix and bias of the imported scene.

For each model in ``benchmarks/models`` (a UR5e-like arm with rotor armature, a
12-joint quadruped and a 21-joint humanoid on floating bases, with hips and
shoulders of several hinges in one body), at random states::

    M     max |M - T^T M_mj T| / max |M_mj|
    bias  max |h - T^T (M_mj a_mj + qfrc_bias)| / max |qfrc_bias|
    qacc  max |T qddot + a_mj - qacc_mj| / max |qacc_mj|   (springs, dampers, actuators)

``T`` maps contactlab's velocities to MuJoCo's (:func:`mujoco_velocity_map`: the
identity on hinges and slides; a free joint's rotation-first exponential
coordinates to MuJoCo's world linear and body angular velocity) and ``a_mj`` is
MuJoCo's acceleration of the same motion at ``qddot = 0`` (``Tdot qdot``), so the
comparison is exact, not finite-differenced.  Contacts, joint limits and
frictionloss are off in MuJoCo (the smooth dynamics are compared).

Run ``python -m benchmarks.bench_robots_mjcf``; it writes
``results/benchmarks/robots_mjcf.md``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contactlab.joints.kinds import joint_from_spec
from contactlab.reduced.dynamics import joint_forces
from contactlab.reduced.mjcf import load_mjcf
from contactlab.reduced.mjcf_parts import MJCFWarning
from contactlab.reduced.model import Model
from contactlab.reduced.tree import Tree
from contactlab.scene import Scene

MODELS = Path(__file__).parent / "models"
OUT = Path(__file__).parents[1] / "results" / "benchmarks" / "robots_mjcf.md"
ROBOTS = ("arm", "quadruped", "humanoid")


def mujoco_model(path: Path) -> tuple[Any, Any]:
    """MuJoCo's model and data with contacts, limits and frictionloss off."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(path))
    bits = mujoco.mjtDisableBit
    model.opt.disableflags |= int(
        bits.mjDSBL_FRICTIONLOSS | bits.mjDSBL_CONTACT | bits.mjDSBL_LIMIT
    )
    return model, mujoco.MjData(model)


def mujoco_velocity_map(
    scene: Scene, model: Any, q: np.ndarray, qdot: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MuJoCo's ``qpos``, the map ``T`` (nv, nq) with ``qvel = T qdot`` and ``a0 = Tdot qdot``.

    Hinges and slides: ``qpos = q + qpos0``, identity rows.  A free joint (rotation
    first, ``Q = [[R, R t], [0, 1]]`` after its placement ``C``): ``qpos`` is the body
    frame's world position and quaternion, ``qvel = (R_w v, omega)`` with the joint twist
    ``(omega, v) = S qdot`` in the body frame and ``R_w`` its world rotation, so
    ``Tdot qdot = (R_w (omega x v + vdot), omegadot)`` with ``(omegadot, vdot) = Sdot qdot``.
    """
    from contactlab import se3

    dof_index = np.asarray(scene.extras["mjcf_dofs"])
    tree = Tree.from_scene(scene)
    qpos = np.array(model.qpos0, dtype=float)
    T = np.zeros((model.nv, tree.nq))
    a0 = np.zeros(model.nv)
    for j in range(model.njnt):
        adr, dof, kind = int(model.jnt_qposadr[j]), int(model.jnt_dofadr[j]), int(model.jnt_type[j])
        if kind in (2, 3):
            qpos[adr] += q[dof_index[dof]]
            T[dof, dof_index[dof]] = 1.0
            continue
        if kind != 0:
            raise ValueError("ball joints are not in the benchmark models")
        spec = next(s for s in tree.specs if s.name == str(model.joint(j).name))
        cols = slice(int(dof_index[dof + 3]), int(dof_index[dof + 3]) + 6)
        joint = joint_from_spec(spec)
        Q, S, Sdot = joint.evaluate(q[cols], qdot[cols])
        E = spec.frame_parent @ Q
        Rw = E[:3, :3]
        qpos[adr : adr + 3] = E[:3, 3]
        qpos[adr + 3 : adr + 7] = se3.rotation_to_quaternion(Rw)
        T[dof : dof + 3, cols] = Rw @ S[3:]
        T[dof + 3 : dof + 6, cols] = S[:3]
        twist, twist_dot = S @ qdot[cols], Sdot @ qdot[cols]
        a0[dof : dof + 3] = Rw @ (np.cross(twist[:3], twist[3:]) + twist_dot[3:])
        a0[dof + 3 : dof + 6] = twist_dot[:3]
    return qpos, T, a0


@dataclass(frozen=True)
class Agreement:
    """Largest relative differences over the states compared."""

    robot: str
    nq: int
    bodies: int
    mass_matrix: float
    bias: float
    passive: float
    qacc: float
    load_ms: float
    warnings: tuple[str, ...]


def compare(path: Path, states: int = 10, seed: int = 0) -> Agreement:
    """M, bias, passive forces and accelerations of the imported scene against MuJoCo."""
    import mujoco

    started = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MJCFWarning)
        scene = load_mjcf(path)
    load_ms = 1e3 * (time.perf_counter() - started)
    model, data = mujoco_model(path)
    ours = Model.from_scene(scene)
    tree = ours.tree
    rng = np.random.default_rng(seed)
    worst = np.zeros(4)
    for _ in range(states):
        q, qdot = ours.random_state(rng)[:2]
        qpos, T, a0 = mujoco_velocity_map(scene, model, q, qdot)
        data.qpos[:], data.qvel[:] = qpos, T @ qdot
        mujoco.mj_forward(model, data)
        M_mj = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, M_mj)
        springs = joint_forces(tree, q, qdot)
        tau = np.zeros(tree.nq) if scene.joint_torque is None else scene.joint_torque(0.0, q, qdot)
        bias = ours.bias_forces(q, qdot) + springs
        folded = data.qfrc_actuator - _unfolded_actuator(model, T, tau)
        errors = [
            _rel(ours.mass_matrix(q), T.T @ M_mj @ T),
            _rel(bias, T.T @ (M_mj @ a0 + data.qfrc_bias)),
            _rel(springs, T.T @ (data.qfrc_passive + folded)),
            _rel(T @ ours.forward_dynamics(q, qdot, tau) + a0, data.qacc),
        ]
        worst = np.maximum(worst, errors)
    lines = tuple(str(w.message) for w in caught)
    m, b, p, a = (float(x) for x in worst)
    return Agreement(path.stem, tree.nq, scene.n_bodies, m, b, p, a, load_ms, lines)


def _unfolded_actuator(model: Any, T: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """The joint torques contactlab applies as ``Scene.joint_torque``, on MuJoCo's dofs
    (actuators act on hinges and slides, whose rows of ``T`` pick one coordinate)."""
    hinge = np.isin(np.asarray(model.jnt_type)[np.asarray(model.dof_jntid)], (2, 3))
    return np.where(hinge, T @ tau, 0.0)


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    scale = float(np.abs(b).max())
    return float(np.abs(a - b).max() / scale) if scale > 0 else float(np.abs(a).max())


def report(rows: list[Agreement]) -> str:
    out = [
        "# MJCF robots against MuJoCo",
        "",
        "Written by `python -m benchmarks.bench_robots_mjcf` (models in `benchmarks/models`).",
        "Largest relative difference over 10 random states of contactlab's imported scene",
        "against MuJoCo's `mj_fullM`, `qfrc_bias`, `qfrc_passive` (with the servos folded into",
        "joint springs) and `mj_forward`'s `qacc` (contacts, limits and frictionloss off).",
        "",
        "| robot | coordinates | bodies | M | bias | springs, dampers | qacc | load [ms] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        out.append(
            f"| {r.robot} | {r.nq} | {r.bodies} | {r.mass_matrix:.1e} | {r.bias:.1e} | "
            f"{r.passive:.1e} | {r.qacc:.1e} | {r.load_ms:.0f} |"
        )
    out += ["", "Warnings of the import (features not carried):", ""]
    for r in rows:
        shown = "; ".join(r.warnings) if r.warnings else "none"
        out.append(f"- {r.robot}: {shown}")
    return "\n".join(out) + "\n"


def main() -> None:
    rows = [compare(MODELS / f"{name}.xml") for name in ROBOTS]
    text = report(rows)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
