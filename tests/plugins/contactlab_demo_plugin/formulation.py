"""A formulation: free particles, three translational velocities per body in world axes.

Bodies keep their orientation; the generalized velocity is the stacked world
velocities ``v`` with the mass matrix ``diag(m, m, m)`` per body, and one step
of semi-implicit Euler is ``v+ = v + h g``, ``p+ = p + h v+`` (plus whatever
impulses the contact model adds).  With no rows the position after ``k``
steps is exactly ``p_0 + k h v_0 + h^2 g k (k+1) / 2``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.formulation import Formulation
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import State


class ParticleFormulation(Formulation):
    """Free particles: translation only, in world axes (an outside formulation)."""

    name = "plugin-particle"
    has_joint_drift = False

    def initial_state(self) -> State:
        s = self.scene
        E = np.tile(np.eye(4), (s.n_bodies, 1, 1)) if s.initial_E is None else s.initial_E.copy()
        phi = np.zeros((s.n_bodies, 6)) if s.initial_phi is None else s.initial_phi.copy()
        phi[:, :3] = 0.0  # particles do not turn
        return State(0.0, E, phi)

    def _world_velocity(self, state: State) -> np.ndarray:
        return np.einsum("nij,nj->ni", state.E[:, :3, :3], state.phi[:, 3:]).reshape(-1)

    def assemble(self, state: State, h: float, contacts: Any = None) -> StepProblem:
        s = self.scene
        mdiag = np.repeat(s.masses, 3)
        v = self._world_velocity(state)
        f = mdiag * v + h * np.tile(s.gravity, s.n_bodies) * mdiag
        return StepProblem(h, sp.diags(mdiag), f, v)

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        v = solution.v.reshape(-1, 3)
        E = state.E.copy()
        E[:, :3, 3] += h * v
        nu = np.einsum("nji,nj->ni", E[:, :3, :3], v)
        return State(state.t + h, E, np.concatenate([np.zeros_like(nu), nu], axis=1))

    def maximal(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        return state.E, state.phi

    def metrics(self, state: State) -> dict[str, float]:
        s = self.scene
        v = self._world_velocity(state).reshape(-1, 3)
        kinetic = 0.5 * float(np.sum(s.masses[:, None] * v**2))
        potential = -float(np.sum(s.masses * (state.E[:, :3, 3] @ s.gravity)))
        out = {
            "kinetic_energy": kinetic,
            "potential_energy": potential,
            "total_energy": kinetic + potential,
            "constraint_error": 0.0,
        }
        momentum = (s.masses[:, None] * v).sum(axis=0)
        out.update({f"linear_momentum_{a}": float(x) for a, x in zip("xyz", momentum)})
        return out
