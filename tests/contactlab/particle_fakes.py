"""A self-contained formulation, model and scenario whose trajectories are known exactly.

Used by the simulator, results and command-line tests so that they state
facts without depending on the maximal/reduced formulations or the built-in
models.  Each body is a free sphere under gravity, spinning about a fixed
axis; the formulation's generalized velocity per body is ``(omega_body,
v_world)`` with the mass matrix ``diag(I, I, I, m, m, m)``, so one step of
the semi-implicit Euler scheme is, exactly,

.. math::

    v_{k+1} = v_k + h g, \\qquad p_{k+1} = p_k + h v_{k+1},
    \\qquad R_{k+1} = R_k \\exp(h [\\omega]),

giving :math:`p_k = p_0 + k h v_0 + h^2 g k (k+1) / 2` and the energy error
:math:`E_k - E_0 = -m |g|^2 h^2 k / 2` (see :func:`discrete_position`).

With ``ground=True`` the formulation reports a contact row for every body
closer than the margin to the plane ``z = 0`` (the model ignores it, so the
ball falls through and the penetration is known); with ``pin_twice=True`` it
adds the same bilateral row twice, which makes the KKT system singular.

The formulation and model are registered only inside :func:`registered` so
that other tests enumerating the registries never see them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab import formulation as formulation_registry
from contactlab import se3
from contactlab.collision.contacts import ContactSet
from contactlab.errors import SingularSystemError
from contactlab.formulation import Formulation
from contactlab.models import base as model_registry
from contactlab.models.base import ContactModel
from contactlab.problem import StepProblem, StepSolution
from contactlab.scenario import scenario
from contactlab.scene import Body, Scene, State

RADIUS = 0.1
MASS = 2.0


def ground_contacts(distance: np.ndarray, body: np.ndarray, E: np.ndarray, mu: float) -> ContactSet:
    """The contacts of spheres with the plane z = 0: signed distances, points below the centres."""
    n = body.size
    point = E[body, :3, 3].copy()
    point[:, 2] = 0.5 * distance  # midway between the sphere's lowest point and the plane
    normal = np.tile([0.0, 0.0, 1.0], (n, 1))
    zero = np.zeros(n, dtype=np.int64)
    return ContactSet(
        point, normal, distance, body.astype(np.int64), zero - 1, zero, zero, np.full(n, mu)
    )


class ParticleFormulation(Formulation):
    """Free spinning spheres (see the module docstring)."""

    name = "test-particle"
    has_joint_drift = False

    def initial_state(self) -> State:
        s = self.scene
        assert s.initial_E is not None and s.initial_phi is not None
        return State(0.0, s.initial_E.copy(), s.initial_phi.copy())

    def _velocity(self, state: State) -> np.ndarray:
        R = state.E[:, :3, :3]
        v_world = np.einsum("nij,nj->ni", R, state.phi[:, 3:])
        return np.concatenate([state.phi[:, :3], v_world], axis=1).reshape(-1)

    def assemble(self, state: State, h: float, contacts: Any = None) -> StepProblem:
        s = self.scene
        nb = s.n_bodies
        mdiag = s.spatial_inertia.reshape(-1)
        v = self._velocity(state)
        force = np.zeros((nb, 6))
        force[:, 3:] = s.masses[:, None] * s.gravity
        f = mdiag * v + h * force.reshape(-1)
        G = g = N = c = T = mu = None
        if s.extras.get("pin_twice"):
            row = np.zeros(6 * nb)
            row[3] = 1.0
            G, g = sp.csr_matrix(np.vstack([row, row])), np.zeros(2)
        found = None
        if s.extras.get("ground"):
            d = state.E[:, 2, 3] - RADIUS
            near = np.flatnonzero(d < s.contact.margin)
            found = ground_contacts(d[near], near, state.E, s.contact.mu)
            N = sp.csr_matrix(
                (np.ones(near.size), (np.arange(near.size), 6 * near + 5)),
                shape=(near.size, 6 * nb),
            )
            rows = np.arange(2 * near.size)
            cols = (6 * near[:, None] + np.array([3, 4])).reshape(-1)
            T = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(rows.size, 6 * nb))
            c, mu = np.zeros(near.size), np.full(near.size, s.contact.mu)
        return StepProblem(h, sp.diags(mdiag), f, v, G=G, g=g, N=N, c=c, T=T, mu=mu, contacts=found)

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        v = solution.v.reshape(-1, 6)
        omega, v_world = v[:, :3], v[:, 3:]
        E = state.E.copy()
        E[:, :3, :3] = state.E[:, :3, :3] @ se3.exp_so3(h * omega)
        E[:, :3, 3] = state.E[:, :3, 3] + h * v_world
        nu = np.einsum("nji,nj->ni", E[:, :3, :3], v_world)
        return State(state.t + h, E, np.concatenate([omega, nu], axis=1))

    def maximal(self, state: State) -> tuple[np.ndarray, np.ndarray]:
        return state.E, state.phi

    def metrics(self, state: State) -> dict[str, float]:
        s = self.scene
        m = s.masses
        inertia = s.spatial_inertia[:, :3]
        omega, nu = state.phi[:, :3], state.phi[:, 3:]
        p = state.E[:, :3, 3]
        v_world = np.einsum("nij,nj->ni", state.E[:, :3, :3], nu)
        kinetic = 0.5 * float(np.sum(inertia * omega**2) + np.sum(m[:, None] * nu**2))
        potential = -float(np.sum(m * (p @ s.gravity)))
        lin = (m[:, None] * v_world).sum(axis=0)
        out = {
            "kinetic_energy": kinetic,
            "potential_energy": potential,
            "total_energy": kinetic + potential,
            "constraint_error": 0.0,
        }
        out.update({f"linear_momentum_{a}": float(x) for a, x in zip("xyz", lin)})
        return out


class FreeModel(ContactModel):
    """Solves the bilateral KKT system and ignores contact rows.

    Options: ``fail_at`` (int) — the call index at which the model reports
    ``numerical_error`` with non-finite velocities.
    """

    name = "test-free"
    forms = ("qp",)

    def __init__(self, solver: str, fail_at: int = -1, **options: Any) -> None:
        super().__init__(solver, fail_at=fail_at, **options)
        self.fail_at = int(fail_at)
        self.calls = 0

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        self.calls += 1
        n, m = problem.n, problem.G.shape[0]
        K = np.block(
            [[problem.M.toarray(), problem.G.T.toarray()], [problem.G.toarray(), np.zeros((m, m))]]
        )
        if np.linalg.matrix_rank(K) < n + m:
            raise SingularSystemError(
                f"KKT system of size {n + m} is singular: the {m} bilateral rows are linearly "
                "dependent (redundant joints); remove the duplicate constraint"
            )
        x = np.linalg.solve(K, np.concatenate([problem.f, problem.g]))
        v, lam = x[:n], x[n:]
        status = "optimal"
        if self.calls - 1 == self.fail_at:
            v, status = np.full(n, np.nan), "numerical_error"
        nc = problem.n_contacts
        cache["calls"] = self.calls
        return StepSolution(
            v, lam, np.zeros(nc), np.zeros(2 * nc), status=status, iterations=1, solve_time=1e-6
        )


@scenario("test-fall", formulations=("test-particle",))
def falling_spheres(
    n: int = 1,
    z0: float = 1.0,
    vx0: float = 0.5,
    vz0: float = 2.0,
    spin: float = 3.0,
    ground: bool = False,
    pin_twice: bool = False,
) -> Scene:
    """Spheres thrown under gravity while spinning.

    n : number of spheres, 1 m apart along y.
    z0 : initial height [m].
    vx0 : initial horizontal speed [m/s].
    vz0 : initial vertical speed [m/s].
    spin : spin rate about the body axis (1, 2, 2)/3 [rad/s].
    ground : report contacts with the plane z = 0 (the model ignores them).
    pin_twice : add one bilateral row twice (a singular KKT system).
    """
    bodies = [Body(f"ball{i}", MASS, np.full(3, 0.4 * MASS * RADIUS**2)) for i in range(n)]
    E = np.tile(np.eye(4), (n, 1, 1))
    E[:, 1, 3] = np.arange(n)
    E[:, 2, 3] = z0
    phi = np.zeros((n, 6))
    phi[:, :3] = spin * np.array([1.0, 2.0, 2.0]) / 3.0
    phi[:, 3:] = [vx0, 0.0, vz0]
    return Scene(
        "test-fall",
        tuple(bodies),
        initial_E=E,
        initial_phi=phi,
        dt=1e-3,
        duration=0.5,
        extras={"ground": ground, "pin_twice": pin_twice},
    )


def discrete_position(p0: np.ndarray, v0: np.ndarray, g: np.ndarray, h: float, k: np.ndarray):
    """(len(k), 3) positions after ``k`` steps of the scheme in the module docstring."""
    k = np.asarray(k, dtype=float)[:, None]
    return p0 + k * h * v0 + h**2 * g * k * (k + 1) / 2


SCENARIOS = {"test-fall": falling_spheres}


@contextmanager
def registered() -> Iterator[None]:
    """Register the fake formulation and model for the duration of the block."""
    formulation_registry.register_formulation("test-particle")(ParticleFormulation)
    model_registry.register_model("test-free")(FreeModel)
    try:
        yield
    finally:
        formulation_registry.FORMULATIONS.unregister("test-particle")
        model_registry.MODELS.unregister("test-free")
