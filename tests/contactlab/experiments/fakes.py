"""A free particle under gravity with its own formulation and model, for experiment tests.

The scenario ``exp-fall`` is one body (no shapes, so no collision), the
formulation ``exp-point`` integrates it with symplectic Euler, and the model
``exp-qp`` obtains the new velocity from the unconstrained QP
``min 1/2 v'Mv - f'v`` through the solver layer.  With step ``h``, gravity
``g`` and initial velocity ``v0`` the position after ``n`` steps is exactly

    p_n = p_0 + n h v0 + h^2 g n (n + 1) / 2,

which the tests compare with what a sweep or comparison wrote to disk.  The
model can be told to raise, or to kill its process, when a flag file exists,
to simulate a crashed run or a dead worker.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

import solvers
from contactlab.formulation import Formulation, register_formulation
from contactlab.models.base import ContactModel, register_model
from contactlab.problem import StepProblem, StepSolution
from contactlab.scenario import scenario
from contactlab.scene import Body, Scene, State
from contactlab.shapes import Box

G = 9.81


@register_formulation("exp-point")
class PointFormulation(Formulation):
    has_joint_drift = False

    def initial_state(self) -> State:
        return State(0.0, np.array(self.scene.initial_E), np.array(self.scene.initial_phi))

    def assemble(self, state: State, h: float, contacts: Any = None) -> StepProblem:
        M = sp.diags(self.scene.spatial_inertia.reshape(-1))
        v = state.phi.reshape(-1)
        force = np.zeros_like(v)
        force[5::6] = -G * self.scene.masses
        return StepProblem(h, M, M @ v + h * force, v)

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        phi = solution.v.reshape(-1, 6)
        E = state.E.copy()
        E[:, :3, 3] += h * phi[:, 3:]
        return State(state.t + h, E, phi)

    def maximal(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        return state.E, state.phi

    def metrics(self, state: State) -> dict[str, float]:
        m = self.scene.masses
        ke = float(0.5 * np.sum(m * np.sum(state.phi[:, 3:] ** 2, axis=1)))
        pe = float(np.sum(m * G * state.E[:, 2, 3]))
        mom = (m[:, None] * state.phi[:, 3:]).sum(axis=0)
        return {
            "kinetic_energy": ke,
            "potential_energy": pe,
            "total_energy": ke + pe,
            "linear_momentum_x": float(mom[0]),
            "linear_momentum_y": float(mom[1]),
            "linear_momentum_z": float(mom[2]),
            "angular_momentum_x": 0.0,
            "angular_momentum_y": 0.0,
            "angular_momentum_z": 0.0,
            "constraint_error": 0.0,
        }


@register_model("exp-qp")
class FreeQP(ContactModel):
    """``v = M^{-1} f`` as an unconstrained QP; ``crash_file``/``kill_file`` flags for tests."""

    forms = ("qp",)

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        crash, kill = self.options.get("crash_file"), self.options.get("kill_file")
        if crash and Path(crash).exists():
            raise RuntimeError("flagged crash")
        if kill and Path(kill).exists():
            os._exit(3)
        qp = solvers.QP(problem.M, -problem.f, None)
        res = solvers.solve(qp, self.solver, tol=1e-12)
        z = np.zeros(0)
        return StepSolution(
            res.x, z, z, z, status=res.status, iterations=res.iterations, solve_time=res.solve_time
        )

    @classmethod
    def compatible_solvers(cls, **options: Any) -> list[str]:
        return ["kkt", "osqp"]


@scenario("exp-fall", formulations=("exp-point",))
def exp_fall(height: float = 2.0, v0x: float = 0.5, mass: float = 1.5, box: bool = False) -> Scene:
    """One free body falling from ``height`` [m] with horizontal speed ``v0x`` [m/s].

    box : give the body a 0.2 x 0.4 x 0.6 m box shape (drawn by the renderers).
    """
    E = np.eye(4)
    E[2, 3] = height
    phi = np.zeros(6)
    phi[3] = v0x
    shapes = (Box(half_extents=(0.1, 0.2, 0.3)),) if box else ()
    body = Body("particle", mass, np.full(3, 0.1), shapes=shapes)
    return Scene(
        "exp-fall", (body,), initial_E=E[None], initial_phi=phi[None], dt=0.01, duration=0.2
    )


def expected_position(height: float, v0x: float, h: float, n: np.ndarray) -> np.ndarray:
    """(len(n), 3) exact symplectic-Euler positions after ``n`` steps."""
    n = np.asarray(n, dtype=float)
    return np.stack([n * h * v0x, 0 * n, height - h * h * G * n * (n + 1) / 2], axis=1)
