"""Matched scenes in MuJoCo and as contactlab step problems (the soft model's peer tests).

A free body (a sphere or a box) over the plane ``z = 0``, described once by its
mass, principal inertia, friction, time step and ``solref``/``solimp``: the MJCF
string for MuJoCo (Euler integrator, Newton solver with a tolerance of 1e-14 and
ample iterations, so its own solve error is below the compared digits), and the
contactlab :class:`StepProblem` of the same state built from MuJoCo's own contacts
(points, normals, tangent frames, distances), so both sides pose the step on the
same contact points.  The body frame is world-aligned, so MuJoCo's free-joint
velocity (world linear, body angular) and contactlab's twist ``(omega, nu)``
coincide component by component.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from contactlab.collision.contacts import ContactSet
from contactlab.problem import StepProblem

mujoco = __import__("pytest").importorskip("mujoco")

G_ACC = 9.81


@dataclass
class Matched:
    """One matched step: the MuJoCo model/data after ``mj_forward`` and the step problem."""

    model: object
    data: object
    problem: StepProblem
    frames: np.ndarray  # (nc, 3, 3) MuJoCo contact frames (rows: normal, t1, t2)


def mjcf(
    shape: str,
    size: tuple[float, ...],
    mass: float,
    inertia: tuple[float, float, float],
    *,
    h: float,
    mu: float,
    solref: tuple[float, float],
    solimp: tuple[float, ...],
    cone: str,
    impratio: float = 1.0,
    condim: int = 3,
    torsion: float = 0.0,
    rolling: float = 0.0,
) -> str:
    """The MJCF of one free body over a plane (both geoms with the same contact parameters)."""
    ref = " ".join(repr(float(x)) for x in solref)
    imp = " ".join(repr(float(x)) for x in solimp)
    geom = f'condim="{condim}" friction="{mu} {torsion} {rolling}" solref="{ref}" solimp="{imp}"'
    sz = " ".join(repr(float(s)) for s in size)
    return f"""
<mujoco>
  <option timestep="{h}" integrator="Euler" cone="{cone}" impratio="{impratio}"
          solver="Newton" tolerance="1e-14" iterations="1000" ls_tolerance="1e-12"
          gravity="0 0 -{G_ACC}"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" {geom}/>
    <body name="b" pos="0 0 1">
      <freejoint/>
      <inertial pos="0 0 0" mass="{mass}" diaginertia="{inertia[0]} {inertia[1]} {inertia[2]}"/>
      <geom type="{shape}" size="{sz}" {geom} contype="1" conaffinity="1"/>
    </body>
  </worldbody>
</mujoco>
"""


def matched(
    shape: str,
    size: tuple[float, ...],
    mass: float,
    inertia: tuple[float, float, float],
    height: float,
    qvel: tuple[float, ...],
    *,
    h: float = 0.002,
    mu: float = 0.5,
    solref: tuple[float, float] = (0.02, 1.0),
    solimp: tuple[float, ...] = (0.9, 0.95, 0.001, 0.5, 2.0),
    cone: str = "elliptic",
    impratio: float = 1.0,
    condim: int = 3,
    torsion: float = 0.0,
    rolling: float = 0.0,
) -> Matched:
    """The body at centre height ``height`` with velocity ``qvel`` (world linear, angular)."""
    model = mujoco.MjModel.from_xml_string(
        mjcf(shape, size, mass, inertia, h=h, mu=mu, solref=solref, solimp=solimp, cone=cone,
             impratio=impratio, condim=condim, torsion=torsion, rolling=rolling)
    )  # fmt: skip
    data = mujoco.MjData(model)
    data.qpos[:] = [0.0, 0.0, height, 1.0, 0.0, 0.0, 0.0]
    data.qvel[:] = qvel
    mujoco.mj_forward(model, data)
    nc = data.ncon
    points = np.array([data.contact[i].pos for i in range(nc)]).reshape(nc, 3)
    frames = np.array([data.contact[i].frame.reshape(3, 3) for i in range(nc)]).reshape(nc, 3, 3)
    dist = np.array([data.contact[i].dist for i in range(nc)])
    # contactlab's normal points from the world toward the body (+z here)
    sign = np.sign(frames[:, 0, 2])[:, None, None]
    frames = frames * sign
    com = np.array([0.0, 0.0, height])
    r = points - com
    N = np.array([np.concatenate([np.cross(r[i], frames[i, 0]), frames[i, 0]]) for i in range(nc)])
    T = np.array(
        [np.concatenate([np.cross(r[i], frames[i, k]), frames[i, k]]) for i in range(nc)
         for k in (1, 2)]
    ).reshape(2 * nc, 6)  # fmt: skip
    M = np.diag(np.concatenate([inertia, [mass] * 3]))
    v = np.concatenate([qvel[3:], qvel[:3]])
    f = M @ v + h * np.array([0, 0, 0, 0, 0, -mass * G_ACC])
    zi = np.zeros(nc, dtype=np.int64)
    contacts = ContactSet(
        points, frames[:, 0].copy(), dist, zi, zi - 1, zi.copy(), zi.copy(), np.full(nc, mu)
    )
    problem = StepProblem(
        h=h, M=sp.csc_matrix(M), f=f, v=v, N=sp.csr_matrix(N.reshape(nc, 6)),
        c=np.zeros(nc), T=sp.csr_matrix(T), mu=np.full(nc, mu), contacts=contacts,
    )  # fmt: skip
    return Matched(model, data, problem, frames)


def mujoco_forces(m: Matched) -> np.ndarray:
    """(nc, 3) contact forces in the (sign-corrected) contact frames [N]: normal, t1, t2."""
    out = np.zeros((m.data.ncon, 3))
    buf = np.zeros(6)
    for i in range(m.data.ncon):
        mujoco.mj_contactForce(m.model, m.data, i, buf)
        out[i] = buf[:3]
    # a flipped frame flips its tangents too: the world force is unchanged
    return out


def mujoco_forces_wide(m: Matched, dim: int) -> np.ndarray:
    """(nc, dim) contact forces and torques in the contact frames: normal, t1, t2, then the
    torsional and two rolling torques (``condim`` 4 and 6) [N, N m]."""
    out = np.zeros((m.data.ncon, dim))
    buf = np.zeros(6)
    for i in range(m.data.ncon):
        mujoco.mj_contactForce(m.model, m.data, i, buf)
        out[i] = buf[:dim]
    return out


def mujoco_next_velocity(m: Matched) -> np.ndarray:
    """``(omega, nu)`` after one Euler step from the matched state."""
    qv = m.data.qvel + m.model.opt.timestep * m.data.qacc
    return np.concatenate([qv[3:], qv[:3]])
