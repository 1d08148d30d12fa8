"""The velocity-level problem of one time step, shared by every formulation.

A formulation (maximal or reduced) assembles a :class:`StepProblem`; a contact
model (:mod:`contactlab.models`) turns it into one or more solver problems
(:mod:`solvers`) and returns a :class:`StepSolution`.  Models never see bodies
or joints, only these matrices, so every model works with every formulation.

With generalized velocities ``v`` (maximal: stacked body twists ``Phi``,
reduced: ``qdot``) the step is

.. math::

    M v^+ = f + G^T \\lambda_G + N^T \\lambda_N + T^T \\lambda_T + L^T \\lambda_L
        + D^T \\lambda_D

    G v^+ = g, \\quad N v^+ \\ge c, \\quad L v^+ \\ge l_{rhs}

with the normal impulses ``lambda_N >= 0`` complementary to ``N v+ - c``, the
friction impulses on the tangent rows ``T`` bounded by the friction model, and
``L`` other unilateral rows (joint limits) with ``lambda_L >= 0``, and the
dry-friction rows ``D`` of joint coordinates with ``|lambda_D| <= d``.  All
impulses are [N s] (generalized).  Signs: impulses push along +row, so contact
impulses are non-negative (Sueda's notes eqs. 1.79–1.88; the seed's eq. 1.84 is
written with the opposite sign of ``N^T alpha``, a transcription slip).

Beyond these matrices a formulation may fill typed fields that some models
need: the contact geometry behind ``N`` and ``T`` with stable contact ids
(warm starts per persistent contact), and the joint-contact rows with the
maps of a staggered joint-friction model (:class:`JointFrictionMaps`).  A
formulation lists the capabilities it provides in ``provides``, a model those
it needs in ``needs`` (names from :data:`CAPABILITIES`);
:func:`contactlab.formulation.check_pairing` refuses a pairing that lacks one when the simulator is
built, naming both (``docs/step-problem.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.csr import empty_csr
from contactlab.errors import ConfigurationError
from contactlab.memory import ModelMemory

if TYPE_CHECKING:
    from contactlab.collision.contacts import ContactSet
    from contactlab.jointfriction.joint_contact_rows import JointContactRows
    from solvers import SolverResult

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: What a formulation may provide beyond ``M, f, v`` and the rows ``G, N, T, L``.
CAPABILITIES: dict[str, str] = {
    "contact_geometry": "the contact points, normals and bodies behind the rows N and T "
    "(StepProblem.contacts)",
    "joint_contacts": "joint-contact rows with their friction groups and the joint-reaction map "
    "of a staggered joint-friction model (StepProblem.joint_friction)",
    "reactions_by_traversal": "joint reactions recovered from the velocities by one backward "
    "traversal of the tree (Sueda's notes, eq. 2.112-2.113; reduced coordinates)",
    "reactions_by_multipliers": "joint reactions read from the joints' own bilateral "
    "multipliers (maximal coordinates)",
}

#: ``(v, lambda_G, lambda_N, beta_T, joint friction impulse (6 nb,)) -> (nj, 6)`` reactions [N s]
ReactionMap = Callable[[Array, Array, Array, Array, Array], Array]


@dataclass(frozen=True, eq=False)
class JointFrictionMaps:
    """What a staggered joint-friction model needs from the formulation (Sueda's notes, §2.11).

    Attributes
    ----------
    rows : the joint-contact rows at this configuration, maximal coordinates
        (normals ``N_j`` (K, 6 nb), tangents, friction groups ``Tg``, and the
        static layout with the joint of every contact and group).
    J : (6 nb, n) body twists from the problem's velocities, to map the group
        rows ``Tg J``; ``None`` when the velocities are the body twists
        (maximal coordinates).
    inertia_inv : (6 nb,) maximal inverse mass diagonal (the ``M^-1`` norm of
        the convergence test).
    N_contact : (nc, 6 nb) contact normal rows in maximal coordinates.
    reactions : the joint reactions on every friction joint's child, body
        frame (nj, 6) [N s], from the velocities ``v``, the impulses on ``G``
        and ``N``, the contact friction ``beta_T`` (2 nc,) and the joint
        friction as a maximal impulse ``Tg^T beta_joint`` (6 nb,).
    method : "traversal" (velocities compared, one backward traversal: BISP)
        or "multipliers" (the joints' own multipliers).
    """

    rows: JointContactRows
    J: sp.spmatrix | Array | None
    inertia_inv: Array
    N_contact: sp.csr_matrix
    reactions: ReactionMap
    method: str


def _as(x: Any, kind: Any) -> Any:
    """``x`` as a scipy matrix of class ``kind`` (``x`` itself when it is one already)."""
    return x if type(x) is kind else kind(x)


def _empty_rows(n: int) -> sp.csr_matrix:
    return empty_csr(n)


#: The default of a field a formulation may leave out: :meth:`StepProblem.__post_init__`
#: fills it in (empty rows, zero coefficients, ids ``0 .. nc-1``), so it is never ``None``.
_FILLED: Any = None


def _vector(value: Any, name: str, size: int, rows: str, dtype: Any = float) -> Any:
    """``value`` as a 1-d array of ``size`` entries, or one error naming the field."""
    arr = np.asarray(value, dtype=dtype)
    if arr.shape != (size,):
        raise ConfigurationError(
            f"StepProblem: {name} has shape {arr.shape}; expected ({size},), one entry per {rows}"
        )
    return arr


def _rows(value: Any, name: str, n: int) -> sp.csr_matrix:
    """``value`` as CSR rows over the ``n`` velocities, or one error naming the field."""
    rows = _as(value, sp.csr_matrix)
    if rows.ndim != 2 or rows.shape[1] != n:
        raise ConfigurationError(
            f"StepProblem: rows {name} have shape {rows.shape}; expected (m, {n}), one column "
            "per generalized velocity"
        )
    return rows


@dataclass(frozen=True, eq=False)
class StepProblem:
    """Matrices of one step (see the module docstring); frozen, every field checked once.

    A field a formulation leaves out is filled in on construction (empty rows,
    ``mu`` zeros, ids ``0 .. nc-1``), so a model never meets ``None`` in the rows,
    right-hand sides, coefficients or ids, and every shape is checked here, not by
    the models: a wrong one is a :class:`~contactlab.errors.ConfigurationError`
    naming the field, its shape and the expected one.  To change a field, build a
    new problem (``dataclasses.replace``; the checks run again).

    Attributes
    ----------
    h : step size [s].
    M : (n, n) sparse SPD generalized mass (maximal: block diagonal 6x6 per
        body; reduced: ``M_r``, or the implicit ``M + hD - h^2 K``).
    f : (n,) free momentum, ``M v + h f_ext`` [N s].
    v : (n,) velocities at the start of the step.
    G, g : (mg, n) bilateral rows and right-hand side (Baumgarte included).
    N, c : (nc, n) contact normal rows and right-hand side (gap and
        penetration feedback included).
    T : (2 nc, n) tangent rows, two orthonormal directions per contact:
        rows ``2i`` and ``2i+1`` belong to contact ``i``.  Models build the
        k-direction pyramid from these (``d_j = cos(a_j) t1 + sin(a_j) t2``).
        Required when there are contacts.
    mu : (nc,) friction coefficients, finite and non-negative (zeros if left out).
    L, l : (ml, n) other unilateral rows (joint limits) and right-hand side.
    D, d : (md, n) dry-friction rows of joint coordinates (a coordinate's
        ``JointSpec.dry_friction``) and their impulse bounds ``h f_max`` (md,)
        [N m s or N s], finite and non-negative: ``|lambda_D| <= d``, the impulse
        opposing the row's velocity ``D v^+`` when at its bound, the velocity zero
        inside.  Only models that declare ``carries_dry_friction`` are paired with
        a scene that has them.
    contacts : the contact set that produced N and T (points, normals,
        distances, bodies and shapes, one entry per contact), or ``None``.
    contact_ids : (nc,) stable contact identities: a contact persisting from
        the previous step keeps its id (:mod:`contactlab.contact.identity`;
        the simulator gives them); by default ``0 .. nc-1``.
    contact_origin : (nc,) the id of the previous step's contact each contact
        continues from (its own id when it persists, the id of the contact it
        split from, ``-1`` when new); warm starts read the previous impulses
        through it.  By default equal to ``contact_ids``.
    directions : k, the number of pyramid directions requested by the scene
        (an even number >= 4).
    G_owner : (mg,) name of the joint or constraint owning each row of ``G``.
    G_error : (mg,) position-level error of each row of ``G`` [m or rad]
        (zeros where the formulation does not measure it).
    joint_friction : the joint-contact rows and maps of a staggered
        joint-friction model, when the scene has joints with friction and the
        formulation provides them.
    """

    h: float
    M: sp.csc_matrix
    f: Array
    v: Array
    G: sp.csr_matrix = _FILLED
    g: Array = _FILLED
    N: sp.csr_matrix = _FILLED
    c: Array = _FILLED
    T: sp.csr_matrix = _FILLED
    mu: Array = _FILLED
    L: sp.csr_matrix = _FILLED
    l: Array = _FILLED
    D: sp.csr_matrix = _FILLED
    d: Array = _FILLED
    contacts: ContactSet | None = None
    contact_ids: IntArray = _FILLED
    contact_origin: IntArray = _FILLED
    directions: int = 4
    G_owner: NDArray[np.str_] = _FILLED
    G_error: Array = _FILLED
    joint_friction: JointFrictionMaps | None = None

    def __post_init__(self) -> None:
        fill = functools.partial(object.__setattr__, self)
        M = _as(self.M, sp.csc_matrix)
        n = M.shape[0]
        if M.shape != (n, n):
            raise ConfigurationError(f"StepProblem: M has shape {M.shape}; expected square (n, n)")
        fill("M", M)
        fill("f", _vector(self.f, "f", n, "generalized velocity (M is n x n)"))
        fill("v", _vector(self.v, "v", n, "generalized velocity (M is n x n)"))
        for rows, rhs in (("G", "g"), ("N", "c"), ("L", "l"), ("D", "d")):
            given = getattr(self, rows)
            if given is None:
                fill(rows, _empty_rows(n))
                fill(rhs, np.zeros(0))
                continue
            if getattr(self, rhs) is None:
                raise ConfigurationError(
                    f"StepProblem: rows {rows} given without their right-hand side {rhs}; "
                    f"pass {rhs} with one entry per row of {rows}"
                )
            matrix = _rows(given, rows, n)
            fill(rows, matrix)
            fill(rhs, _vector(getattr(self, rhs), rhs, matrix.shape[0], f"row of {rows}"))
        if not (np.all(np.isfinite(self.d)) and np.all(self.d >= 0)):
            raise ConfigurationError(
                "StepProblem.d must hold finite non-negative dry-friction impulse bounds"
            )
        nc, mg = self.N.shape[0], self.G.shape[0]
        ids = (
            np.arange(nc, dtype=np.int64)
            if self.contact_ids is None
            else _vector(self.contact_ids, "contact_ids", nc, "row of N", np.int64)
        )
        fill("contact_ids", ids)
        fill(
            "contact_origin",
            ids.copy()
            if self.contact_origin is None
            else _vector(self.contact_origin, "contact_origin", nc, "row of N", np.int64),
        )
        fill(
            "G_owner",
            np.full(mg, "", dtype=str)
            if self.G_owner is None
            else _vector(self.G_owner, "G_owner", mg, "row of G", str),
        )
        fill(
            "G_error",
            np.zeros(mg)
            if self.G_error is None
            else _vector(self.G_error, "G_error", mg, "row of G"),
        )
        if self.contacts is not None and len(self.contacts) != nc:
            raise ConfigurationError(
                f"StepProblem: contacts holds {len(self.contacts)} contacts but N has {nc} rows; "
                "pass the contact set that produced N"
            )
        if self.T is None and nc:
            raise ConfigurationError(
                f"StepProblem: N has {nc} contact rows but no tangent rows T were given; "
                "assemble two orthonormal tangent rows per contact"
            )
        T = _empty_rows(n) if self.T is None else _rows(self.T, "T", n)
        if T.shape[0] != 2 * nc:
            raise ConfigurationError(
                f"StepProblem.T has {T.shape[0]} rows, expected 2 per contact (2 * {nc}); "
                "assemble two orthonormal tangent rows per contact"
            )
        fill("T", T)
        mu = np.zeros(nc) if self.mu is None else _vector(self.mu, "mu", nc, "contact (row of N)")
        if not (np.all(np.isfinite(mu)) and np.all(mu >= 0)):
            raise ConfigurationError(
                f"StepProblem.mu must be {nc} finite non-negative friction coefficients"
            )
        fill("mu", mu)
        k = self.directions
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 4 or k % 2:
            raise ConfigurationError(
                f"StepProblem.directions must be an even integer >= 4 (the friction pyramid's "
                f"directions), got {k!r}"
            )

    @property
    def n(self) -> int:
        """Number of generalized velocities."""
        return int(self.M.shape[0])

    @property
    def n_contacts(self) -> int:
        return int(self.N.shape[0])


@dataclass
class StepSolution:
    """What a contact model returns for one step.

    v : (n,) velocities at the end of the step.
    lambda_G, lambda_N, lambda_T, lambda_L, lambda_D : impulses on the rows of the
        problem [N s]; ``lambda_T`` is (2 nc,) in the ``T`` basis whatever
        cone representation the model used internally.
    status : shared solver status of the step ("optimal", "max_iterations", ...).
    iterations : solver iterations (summed over inner solves) and
        ``outer_iterations`` for staggered schemes.
    solve_time : [s] wall time spent in the solver layer.
    results : the raw :class:`solvers.SolverResult` objects, in order.
    cache : what the model carries to the next step (warm starts only, a
        :class:`~contactlab.memory.ModelMemory`), merged into ``State.cache``.
    report : the model's own quantities of this step, typed per model and never
        carried to the next step (``bisp`` and ``joint-friction-sp``:
        ``JointFrictionReport``; ``staggered-projections``: ``StaggeredReport``;
        ``stewart-trinkle``: ``StewartTrinkleReport``), ``None`` otherwise; also in
        the simulator's ``StepRecord.solution``.
    """

    v: Array
    lambda_G: Array
    lambda_N: Array
    lambda_T: Array
    lambda_L: Array = field(default_factory=lambda: np.zeros(0))
    lambda_D: Array = field(default_factory=lambda: np.zeros(0))
    status: str = "optimal"
    iterations: int = 0
    outer_iterations: int = 0
    solve_time: float = 0.0
    residual: float = 0.0
    results: list[SolverResult] = field(default_factory=list)
    cache: ModelMemory = field(default_factory=ModelMemory)
    report: Any = None
