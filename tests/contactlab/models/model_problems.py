"""Hand-built step problems for the contact-model tests.

``box_on_plane``: one box (body frame at the centre of mass, world-aligned)
resting on the plane z = 0 with its four bottom corners as contacts.  With the
twist ``(omega, nu)`` the velocity of a body point ``r`` is ``nu + omega x r``,
so a contact row along a world direction ``d`` is ``(r x d, d)`` (Sueda's notes,
eq. (1.76): ``N = n^T R Gamma(r)`` with ``R = I``).

``random_contact_problem``: several bodies with random SPD 6x6 mass blocks,
contacts with random points and normals (body-ground and body-body), joint
rows and limit rows, all feasible by construction (a random velocity
satisfies every constraint).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from contactlab.problem import StepProblem

G_ACC = 9.81


def box_inertia(m: float, half: tuple[float, float, float]) -> np.ndarray:
    a, b, c = half
    return m / 3.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def box_on_plane(
    *,
    h: float = 0.01,
    m: float = 2.0,
    half: tuple[float, float, float] = (0.5, 0.5, 0.1),
    mu: float = 0.5,
    force: tuple[float, float] = (0.0, 0.0),
    v0: tuple[float, float] = (0.0, 0.0),
    directions: int = 4,
) -> StepProblem:
    """One step of a box on the ground with horizontal force ``force`` [N] at its centre of mass."""
    a, b, c = half
    M = np.diag(np.concatenate([box_inertia(m, half), [m, m, m]]))
    corners = np.array([[sx * a, sy * b, -c] for sx in (-1, 1) for sy in (-1, 1)])
    n, t1, t2 = np.eye(3)[2], np.eye(3)[0], np.eye(3)[1]
    N = np.array([np.concatenate([np.cross(r, n), n]) for r in corners])
    T = np.array([np.concatenate([np.cross(r, t), t]) for r in corners for t in (t1, t2)])
    v = np.array([0, 0, 0, v0[0], v0[1], 0.0])
    f = M @ v + h * np.array([0, 0, 0, force[0], force[1], -m * G_ACC])
    return StepProblem(
        h=h,
        M=sp.csc_matrix(M),
        f=f,
        v=v,
        N=sp.csr_matrix(N),
        c=np.zeros(4),
        T=sp.csr_matrix(T),
        mu=np.full(4, mu),
        directions=directions,
    )


def next_step(problem: StepProblem, v: np.ndarray) -> StepProblem:
    """The same contacts one step later, starting from velocity ``v`` (same external impulse).

    Valid while the box does not rotate (the contact rows stay those of the flat box).
    """
    external = problem.f - problem.M @ problem.v
    return StepProblem(
        h=problem.h,
        M=problem.M,
        f=problem.M @ v + external,
        v=v,
        N=problem.N,
        c=problem.c,
        T=problem.T,
        mu=problem.mu,
        directions=problem.directions,
    )


def _spd_block(rng: np.random.Generator) -> np.ndarray:
    A = rng.normal(size=(6, 6))
    return A @ A.T / 6.0 + np.eye(6)


def _orthonormal_frame(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n = rng.normal(size=3)
    n /= np.linalg.norm(n)
    t1 = np.cross(n, rng.normal(size=3))
    t1 /= np.linalg.norm(t1)
    return n, t1, np.cross(n, t1)


def random_contact_problem(
    seed: int,
    *,
    bodies: int = 3,
    contacts: int = 5,
    joints: int = 0,
    limits: int = 0,
    mu: float = 0.4,
    directions: int = 4,
) -> StepProblem:
    """A random, feasible, contact-shaped step problem (block-diagonal SPD ``M``)."""
    rng = np.random.default_rng(seed)
    n = 6 * bodies
    M = sp.block_diag([_spd_block(rng) for _ in range(bodies)], format="csc")
    v_feas = rng.normal(size=n) * 0.3
    N = np.zeros((contacts, n))
    T = np.zeros((2 * contacts, n))
    for i in range(contacts):
        frame = _orthonormal_frame(rng)
        ia = rng.integers(bodies)
        ib = rng.integers(-1, bodies)  # -1: the ground
        for row, d in zip([N[i], T[2 * i], T[2 * i + 1]], frame):
            r = rng.normal(size=3) * 0.5
            row[6 * ia : 6 * ia + 6] += np.concatenate([np.cross(r, d), d])
            if ib >= 0 and ib != ia:
                r2 = rng.normal(size=3) * 0.5
                row[6 * ib : 6 * ib + 6] -= np.concatenate([np.cross(r2, d), d])
    c = N @ v_feas - rng.uniform(0.0, 0.2, contacts)
    G = sp.random(joints, n, density=0.4, random_state=rng).toarray() if joints else None
    L = rng.normal(size=(limits, n)) if limits else None
    f = rng.normal(size=n) * 2.0 + np.asarray(M @ rng.normal(size=n))
    return StepProblem(
        h=0.01,
        M=M,
        f=f,
        v=np.zeros(n),
        N=sp.csr_matrix(N),
        c=c,
        T=sp.csr_matrix(T),
        mu=np.full(contacts, mu),
        directions=directions,
        G=None if G is None else sp.csr_matrix(G),
        g=None if G is None else G @ v_feas,
        L=None if L is None else sp.csr_matrix(L),
        l=None if L is None else L @ v_feas - rng.uniform(0.0, 0.2, limits),
    )
