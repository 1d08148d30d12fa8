"""The maximal-coordinate formulation: one SE(3) transform and one twist per body.

Each step poses the KKT problem of Sueda's notes, eq. 1.73, in the sign
convention of :mod:`contactlab.problem` (``M phi+ = f + G^T lambda``, so the
seed's ``lambda`` is minus ours), with the joints and registered constraints
as rows ``G`` (:mod:`contactlab.maximal.joints`), Baumgarte right-hand sides
(:mod:`contactlab.maximal.assembly`), and contact rows when a contact set is
given; positions follow by ``E <- E exp(h [phi+])`` (eq. 1.29).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactlab import se3
from contactlab.attachments import AttachmentMap
from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.formulation import Formulation, register_formulation
from contactlab.jointfriction.rows import joint_friction_layout
from contactlab.maximal import assembly as asm
from contactlab.maximal.constraints import (
    Constraint,
    StackedRows,
    row_owners,
    scene_constraints,
    stack_errors,
    stack_rows,
)
from contactlab.maximal.joint_friction import multiplier_maps
from contactlab.maximal.kinematics import place_bodies
from contactlab.metrics import state_metrics
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import Scene, State

Array = NDArray[np.float64]

#: Relative pivot size below which the constraint rows count as dependent.
_RANK_TOL = 1e-10


@register_formulation("maximal")
class MaximalFormulation(Formulation):
    """Maximal coordinates (Sueda's notes §1.6–1.12).

    Parameters
    ----------
    scene : the scene.
    stabilization : "velocity" (``G phi+ = -gamma g``, default),
        "acceleration" (eq. 1.82, second form) or "off" (``G phi+ = 0``).
        Factors come from ``scene.stabilization``; unset ones get the
        defaults ``gamma = 1/h`` and ``alpha = beta = 10`` [1/s] (see
        :mod:`contactlab.maximal.assembly` for why not ``1/h``).
    implicit : linearly implicit Euler (``M + hD - h^2 K``, eq. 1.30) for the
        force elements; ``None`` (default) turns it on when the scene has forces.
    coriolis : "rotated" (default): the body momenta ``M phi`` are turned by
        ``exp(-h [omega])``, first-order equal to Sueda's notes eq. 1.28's
        ``M phi + h ad(phi)^T M phi`` but norm-preserving; "explicit": eq. 1.28
        as printed, whose explicit gyroscopic terms add energy every step
        (``|m nu|`` grows by ``sqrt(1 + h^2 |omega x nu|^2/|nu|^2)``).
    check_rank : check at the initial state that the constraint rows are
        independent and raise :class:`SingularSystemError` naming the
        redundant joints otherwise.
    """

    has_joint_drift = True
    supports_attachments = True
    provides = frozenset({"contact_geometry", "joint_contacts", "reactions_by_multipliers"})

    def __init__(
        self,
        scene: Scene,
        stabilization: str = "velocity",
        implicit: bool | None = None,
        check_rank: bool = True,
        coriolis: str = "rotated",
    ) -> None:
        super().__init__(scene)
        if stabilization not in ("velocity", "acceleration", "off"):
            raise ConfigurationError(
                f"stabilization must be 'velocity', 'acceleration' or 'off', got {stabilization!r}"
            )
        if coriolis not in ("rotated", "explicit"):
            raise ConfigurationError(f"coriolis must be 'rotated' or 'explicit', got {coriolis!r}")
        if scene.joint_torque is not None:
            raise ConfigurationError(
                f"scene {scene.name!r} applies joint torques (Scene.joint_torque) in joint "
                "coordinates, which the maximal formulation does not have; run it with "
                "--formulation reduced"
            )
        self.stabilization = stabilization
        self.coriolis = coriolis
        self.implicit = bool(scene.forces) if implicit is None else bool(implicit)
        self.check_rank = check_rank
        self.constraints: list[Constraint] = scene_constraints(scene)
        self.row_owners = row_owners(self.constraints)
        self.mass_diagonal = asm.mass_diagonal(scene)
        #: joint-contact layout of the joints with friction (``None`` without any)
        self.joint_layout = joint_friction_layout(scene)
        #: the null-space reduction of the scene's attachments (``None`` without any)
        self.attach: AttachmentMap | None = None
        if scene.attachments:
            if self.joint_layout is not None:
                raise ConfigurationError(
                    f"scene {scene.name!r} has both attachments and joints with friction; "
                    "the staggered joint-friction maps are not reduced by attachments: replace "
                    "the attachments by fixed joints"
                )
            self.attach = AttachmentMap(scene, self._initial_pose()[0])

    # -- state -----------------------------------------------------------
    def _initial_pose(self) -> tuple[Array, Array]:
        sc = self.scene
        if sc.initial_E is not None:
            E = np.array(sc.initial_E, dtype=float)
            phi = np.zeros((sc.n_bodies, 6)) if sc.initial_phi is None else sc.initial_phi.copy()
        else:
            E, phi = place_bodies(sc)
            if sc.initial_phi is not None:
                phi = sc.initial_phi.copy()
        return E, phi

    def initial_state(self) -> State:
        E, phi = self._initial_pose()
        if self.attach is not None:  # attached bodies follow their roots from the start
            E = self.attach.place(E)
            phi = self.attach.expand(self.attach.restrict(phi))
        state = State(0.0, E, phi)
        state.check_finite()
        if self.check_rank:
            self.check_independent(self.rows(E, phi))
        return state

    def rows(self, E: Array, phi: Array, with_bias: bool = False) -> StackedRows:
        """Every bilateral row at ``(E, phi)`` (see :func:`stack_rows`)."""
        return stack_rows(self.constraints, E, phi, with_bias)

    # -- step ------------------------------------------------------------
    def assemble(self, state: State, h: float, contacts: ContactSet | None = None) -> StepProblem:
        E, phi = state.E, state.phi
        M, f = asm.free_momentum(
            self.scene, self.mass_diagonal, E, phi, h, self.implicit, self.coriolis
        )
        b = asm.resolve_baumgarte(self.scene, h, self.stabilization)
        rows = self.rows(E, phi, with_bias=b.form == "acceleration")
        rhs = asm.constraint_rhs(rows, phi, h, b)
        extra: dict[str, Any] = {}
        N = sp.csr_matrix((0, M.shape[0]))
        if contacts is not None and len(contacts) > 0:
            from contactlab.contact.rows import contact_restitution, contact_rows

            N, c, T, mu = contact_rows(
                contacts,
                E,
                self.scene.n_bodies,
                h,
                self.scene.contact,
                phi=phi,  # pre-step twists: restitution reads the impact velocity
                restitution=contact_restitution(self.scene, contacts),
            )
            extra = {"N": N, "c": c, "T": T, "mu": mu, "contacts": contacts}
        if self.joint_layout is not None:
            extra["joint_friction"] = multiplier_maps(
                self.joint_layout, E, rows.G, self.row_owners, M, N
            )
        G, v = rows.G, phi.reshape(-1)
        if self.attach is not None:  # null-space reduction (ArtiSynth's notes §0.17)
            a = self.attach
            M, f, v, G = a.reduce_mass(M), a.reduce_force(f), a.restrict(phi), a.reduce_rows(G)
            if "N" in extra:
                extra["N"], extra["T"] = a.reduce_rows(extra["N"]), a.reduce_rows(extra["T"])
        return StepProblem(
            h=h,
            M=M,
            f=f,
            v=v,
            G=G,
            g=rhs,
            directions=self.scene.contact.directions,
            G_owner=self.row_owners,
            G_error=rows.g,
            **extra,
        )

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        if self.attach is not None:
            phi = self.attach.expand(solution.v)
            E = self.attach.place(se3.integrate(state.E, phi, h))
        else:
            phi = np.asarray(solution.v, dtype=float).reshape(-1, 6)
            E = se3.integrate(state.E, phi, h)
        return replace(state, t=state.t + h, E=E, phi=phi)

    def maximal(self, state: State) -> tuple[Array, Array]:
        return state.E, state.phi

    # -- measurements ----------------------------------------------------
    def metrics(self, state: State) -> dict[str, float]:
        E, phi = state.E, state.phi
        md = self.mass_diagonal
        kinetic = 0.5 * float(np.sum(md * phi * phi))
        potential = asm.gravity_energy(md, self.scene.gravity, E) + asm.force_energy(
            self.scene, E, phi
        )
        g = stack_errors(self.constraints, E)
        drift = float(np.max(np.abs(g))) if g.size else 0.0
        return state_metrics(E, phi, md, kinetic, potential, drift)

    def reaction_wrenches(
        self, problem: StepProblem, solution: StepSolution, h: float | None = None
    ) -> dict[str, Array]:
        """Per joint/constraint, the body wrenches (nb, 6) its rows apply [N m, N].

        ``G^T lambda_G / h`` restricted to the owner's rows: the seed's
        ``-G^T lambda / h`` (eq. 1.74) in this package's sign convention.
        Each wrench is in the body frame, angular part first; the parent
        receives the opposite of the child's reaction (transported).  ``h``
        defaults to the problem's step size.
        """
        if self.attach is not None:
            raise ConfigurationError(
                f"scene {self.scene.name!r}: reaction wrenches per body are not available with "
                "attachments (the rows act on the reduced twists); replace the attachments by "
                "fixed joints to read them"
            )
        h = problem.h if h is None else h
        owners = np.asarray(problem.G_owner, dtype=str)
        lam = np.asarray(solution.lambda_G, dtype=float)
        G = sp.csr_matrix(problem.G)
        out: dict[str, Array] = {}
        for name in dict.fromkeys(owners.tolist()):
            sel = np.flatnonzero(owners == name)
            w = G[sel].T @ lam[sel] / h
            out[str(name)] = np.asarray(w).reshape(-1, 6)
        return out

    def check_independent(self, rows: StackedRows) -> None:
        """Raise :class:`SingularSystemError` naming the joints whose rows are dependent.

        The rows are independent exactly when the Schur complement
        ``G M^{-1} G^T`` of the KKT matrix (eq. 1.73) is non-singular; its
        sparse LU (banded for chains) detects a tiny pivot, and a pivoted QR
        of the scaled rows then names the dependent ones.
        """
        G = rows.G
        m = G.shape[0]
        if m == 0:
            return
        if self.attach is None:
            W = sp.diags(np.sqrt(1.0 / self.mass_diagonal.reshape(-1)))
        else:  # rows and masses of the active bodies: W W^T = (P^T M P)^-1, 6x6 blocks
            full = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).ravel())
            G = self.attach.reduce_rows(G)
            kept = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).ravel())
            lost = np.flatnonzero(kept <= _RANK_TOL * full)
            if lost.size:
                names = list(dict.fromkeys(self.row_owners[lost].tolist()))
                raise SingularSystemError(
                    f"the rows of {', '.join(repr(n) for n in names)} in scene "
                    f"{self.scene.name!r} act only between bodies attached to each other (they "
                    "repeat the attachment); remove those joints or the attachment"
                )
            M = sp.diags(self.mass_diagonal.reshape(-1))
            blocks = sp.bsr_matrix(self.attach.reduce_mass(M), blocksize=(6, 6)).data
            L = np.linalg.cholesky(blocks)
            W = sp.block_diag(list(np.linalg.inv(L).transpose(0, 2, 1)), format="csr")
        S = sp.csc_matrix((G @ W) @ (G @ W).T)
        scale = max(float(abs(S).max()), 1e-300)
        try:
            lu = spla.splu(S / scale)
            pivots = np.abs(lu.U.diagonal())
            singular = bool(pivots.min() < _RANK_TOL * pivots.max())
        except RuntimeError:
            singular = True
        if not singular:
            return
        dependent = self._dependent_rows(G @ W)
        names = list(dict.fromkeys(self.row_owners[dependent].tolist()))
        raise SingularSystemError(
            f"the KKT system of scene {self.scene.name!r} is singular: the rows of "
            f"{', '.join(repr(n) for n in names)} repeat what other joints already constrain "
            "(redundant joints); remove the redundant joints or replace them by joints that "
            "constrain fewer directions"
        )

    @staticmethod
    def _dependent_rows(A: sp.spmatrix) -> NDArray[np.int64]:
        """Rows of ``A`` outside a maximal independent set (pivoted QR of ``A^T``)."""
        import scipy.linalg as la

        dense = A.toarray()
        _, r, perm = la.qr(dense.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(r))
        rank = int(np.sum(d > _RANK_TOL * max(d.max(), 1e-300) * 1e2))
        return np.sort(perm[rank:])
