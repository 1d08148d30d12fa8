"""Which backend fits which problem: one table of problem kinds, decided by capability flags.

A *problem kind* names a family of problems by the properties a backend must
handle (a QP with general inequality rows and a positive definite cost, a box
LCP with friction blocks, ...).  It lists its *routes*: the capability flags a
backend must declare (:class:`~solvers.backends.base.Backend` class attributes)
and the conversions of :mod:`solvers.conversions` the layer then applies.
:func:`fit` answers "can backend B solve problem P (or a problem of kind K),
through which conversions, or why not" from those flags alone, so a new
backend capability, or a new problem type with its own flags, is added here
(or by :func:`register_kind` from outside) and nowhere else.

Built-in kinds
--------------
``eq_qp``
    Equality-constrained QP: every QP backend; LCP backends through the dual
    LCP in the row multipliers.
``qp``
    QP with SPD cost and general inequality rows: inequality QP backends; LCP
    backends through the dual LCP.
``bound_qp`` / ``box_qp``
    PSD cost and one-sided / two-sided bounds on the variables: inequality QP
    backends that accept a singular cost; LCP backends through "bound QP ->
    box LCP" (two-sided bounds need a box-LCP backend, or a pivoting one: the
    standard form of a box has a zero diagonal block, which Lemke's method takes).
``rows_qp``
    PSD cost and general inequality rows: QP backends only (the dual LCP needs
    an SPD cost).
``soc_qp``
    QP with second-order (Coulomb) cones: cone-capable QP backends.
``sym_lcp``
    Box LCP with a symmetric PSD matrix: LCP backends; QP backends through
    "lcp -> qp".
``lcp``
    Box LCP with a non-symmetric matrix and a positive diagonal: LCP backends.
``block_lcp``
    LCP with friction blocks (tangent bounds follow the normal impulse).
``pivot_lcp``
    Non-symmetric LCP with zero diagonal entries: pivoting LCP backends.

Backends that declare ``requires_definite`` (they factorise the QP cost)
fail on singular Delassus matrices, so they fit only kinds whose cost is SPD.
LCP backends without box support (``supports_box_lcp = False``) also go
through "mixed lcp -> lcp" and "box lcp -> standard lcp" where a problem has
free rows or shifted bounds; :attr:`Fit.conversions` names the form
conversions, the result's ``conversions`` every one applied.

:func:`solvers.solve` decides nothing of its own: it asks :func:`plan` for the
route of the problem it was given and carries out that route's conversions (a
problem refused here is refused there, with this module's reason).

A new problem type (say the frictional-contact problem in FCLIB's local
form) registers its kind with the flags its backends declare::

    register_kind(ProblemKind("fc_local", "frictional-contact problem (local form)",
                              (Route({"accepts_fc_local": True}),)))

and backends setting ``accepts_fc_local = True`` then fit it; flags a
backend does not declare read as ``False``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from solvers import conversions as cv
from solvers.backend_registry import ALIASES, available_backends, backend_class
from solvers.backends.base import Backend
from solvers.errors import ProblemError
from solvers.problems import LCP, QP


@dataclass(frozen=True)
class Route:
    """One way onto a backend: the capability flags it needs and the conversions applied.

    Attributes
    ----------
    needs
        ``{flag: value}``: every listed :class:`Backend` class attribute must
        equal the value (an undeclared flag reads as ``False``).
    conversions
        Names from :mod:`solvers.conversions` applied on this route, in order.
    """

    needs: Mapping[str, Any]
    conversions: tuple[str, ...] = ()

    def admits(self, backend: type[Backend]) -> bool:
        """Whether ``backend`` declares every flag this route needs."""
        return all(getattr(backend, flag, False) == value for flag, value in self.needs.items())

    def describe(self) -> str:
        flags = ", ".join(
            flag if value is True else f"not {flag}" if value is False else f"{flag}={value!r}"
            for flag, value in self.needs.items()
        )
        via = (
            f" through {' then '.join(repr(c) for c in self.conversions)}"
            if self.conversions
            else ""
        )
        return f"[{flags}]{via}"


@dataclass(frozen=True)
class ProblemKind:
    """A family of problems and the routes by which backends take it (first route preferred)."""

    name: str
    description: str
    routes: tuple[Route, ...]


@dataclass(frozen=True)
class Fit:
    """Answer of :func:`fit`: ``ok``, the conversions applied, or the reason it does not fit."""

    ok: bool
    conversions: tuple[str, ...] = ()
    reason: str = ""
    kinds: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.ok


#: What a backend lacks, in words, when a route needs ``flag == value`` and it declares otherwise.
_LACKS: dict[tuple[str, Any], str] = {
    ("accepts_qp", True): "takes no QPs",
    ("accepts_lcp", True): "takes no LCPs",
    ("accepts_fc", True): "takes no frictional-contact problems",
    ("equality_only", False): "solves only equality-constrained QPs (l == u)",
    ("requires_definite", False): "needs a positive definite cost",
    ("supports_soc", True): "does not handle second-order cones",
    ("supports_box_lcp", True): "takes no box bounds",
    ("supports_friction_blocks", True): "does not handle friction blocks",
    ("supports_zero_diagonal", True): "divides by the diagonal (zero entries need pivoting)",
    ("solves_coulomb", True): "solves the CCP, not the Coulomb law",
}


def _lacks(backend: type[Backend], routes: Iterable[Route]) -> str:
    """``"it A; it B"``: the first thing ``backend`` lacks on each route, in words, once each."""
    said: list[str] = []
    for route in routes:
        flag, value = next(
            (f, v) for f, v in route.needs.items() if getattr(backend, f, False) != v
        )
        words = _LACKS.get((flag, value), f"does not declare {flag} = {value!r}")
        if words not in said:
            said.append(words)
    return "; ".join(f"it {w}" for w in said)


_QP_INEQ = {"accepts_qp": True, "equality_only": False}
_QP_PSD = {**_QP_INEQ, "requires_definite": False}

_KINDS: dict[str, ProblemKind] = {}


def register_kind(kind: ProblemKind) -> ProblemKind:
    """Add a problem kind (a new problem type declares its routes here); returns it."""
    if kind.name in _KINDS and _KINDS[kind.name] != kind:
        raise ValueError(f"problem kind {kind.name!r} is already registered differently")
    _KINDS[kind.name] = kind
    return kind


for _kind in (
    ProblemKind(
        "eq_qp",
        "equality-constrained QP",
        (Route({"accepts_qp": True}), Route({"accepts_lcp": True}, (cv.QP_TO_DUAL_LCP,))),
    ),
    ProblemKind(
        "qp",
        "QP with SPD cost and general inequality rows",
        (Route(_QP_INEQ), Route({"accepts_lcp": True}, (cv.QP_TO_DUAL_LCP,))),
    ),
    ProblemKind(
        "bound_qp",
        "QP with PSD cost and one-sided bounds",
        (Route(_QP_PSD), Route({"accepts_lcp": True}, (cv.BOUND_QP_TO_LCP,))),
    ),
    ProblemKind(
        "box_qp",
        "QP with PSD cost and box bounds",
        (
            Route(_QP_PSD),
            Route({"accepts_lcp": True, "supports_box_lcp": True}, (cv.BOUND_QP_TO_LCP,)),
            # box -> standard adds a zero diagonal block (the upper bounds' multipliers)
            Route({"accepts_lcp": True, "supports_zero_diagonal": True}, (cv.BOUND_QP_TO_LCP,)),
        ),
    ),
    ProblemKind("rows_qp", "QP with PSD cost and general inequality rows", (Route(_QP_PSD),)),
    ProblemKind(
        "soc_qp", "QP with second-order cones", (Route({**_QP_PSD, "supports_soc": True}),)
    ),
    ProblemKind(
        "sym_lcp",
        "LCP with a symmetric PSD matrix",
        (Route({"accepts_lcp": True}), Route(_QP_PSD, (cv.LCP_TO_QP,))),
    ),
    ProblemKind(
        "lcp",
        "non-symmetric LCP with a positive diagonal",
        (Route({"accepts_lcp": True}),),
    ),
    ProblemKind(
        "block_lcp",
        "LCP with friction blocks",
        (Route({"accepts_lcp": True, "supports_friction_blocks": True}),),
    ),
    ProblemKind(
        "pivot_lcp",
        "non-symmetric LCP with zero diagonal entries",
        (Route({"accepts_lcp": True, "supports_zero_diagonal": True}),),
    ),
):
    register_kind(_kind)


def kinds() -> dict[str, ProblemKind]:
    """Every registered problem kind by name."""
    return dict(_KINDS)


def get_kind(kind: str | ProblemKind) -> ProblemKind:
    """The registered kind ``kind`` (a name or the kind itself)."""
    if isinstance(kind, ProblemKind):
        return kind
    try:
        return _KINDS[kind]
    except KeyError:
        raise ProblemError(
            "kind", f"unknown problem kind {kind!r}; known: {', '.join(_KINDS)}"
        ) from None


def _positive_definite(P: Any) -> bool:
    try:
        cv.spd_inverse(P)
    except ProblemError:
        return False
    return True


#: Kinds that one cheap test of a problem's form leaves open, told apart by a costlier one
#: (a factorisation of ``P``, the symmetry of ``M``): :func:`plan` runs that test only
#: when a backend's answer differs between them.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "soc_qp": ("soc_qp",),
    "eq_qp": ("eq_qp",),
    "rows": ("bound_qp", "box_qp", "qp", "rows_qp"),
    "block_lcp": ("block_lcp",),
    "lcp": ("sym_lcp", "lcp", "pivot_lcp"),
}


def _family(problem: QP | LCP) -> tuple[str, ...]:
    """The kinds a :class:`QP` or :class:`LCP` may be, from tests that read no matrix."""
    if isinstance(problem, QP):
        if problem.soc is not None:
            return _FAMILIES["soc_qp"]
        return _FAMILIES["eq_qp"] if problem.is_equality_only else _FAMILIES["rows"]
    return _FAMILIES["lcp"] if problem.blocks is None else _FAMILIES["block_lcp"]


def kind_of(problem: Any) -> str:
    """The kind of a concrete problem (the most general kind whose routes apply to it).

    A :class:`QP` or :class:`LCP` is classified by its data; any other problem
    type names its kind in a ``kind`` attribute.
    """
    if isinstance(problem, (QP, LCP)):
        family = _family(problem)
        if len(family) == 1:
            return family[0]
    if isinstance(problem, QP):
        if problem.bound_rows() is not None:
            two_sided = np.isfinite(problem.l) & np.isfinite(problem.u) & (problem.l != problem.u)
            return "box_qp" if bool(np.any(two_sided)) else "bound_qp"
        return "qp" if _positive_definite(problem.P) else "rows_qp"
    if isinstance(problem, LCP):
        if problem.is_symmetric:
            return "sym_lcp"
        return "lcp" if bool(np.all(problem.M.diagonal() > 0)) else "pivot_lcp"
    get = getattr(problem, "kind", None)  # a problem type of its own names its kind
    if isinstance(get, str):
        return get
    raise ProblemError("problem", f"has no problem kind: {type(problem).__name__}")


def _backend_class(backend: str | Backend | type[Backend]) -> type[Backend]:
    if isinstance(backend, str):
        return backend_class(backend)
    return backend if isinstance(backend, type) else type(backend)


ProblemLike = str | ProblemKind | QP | LCP | Any


def _as_kinds(problem: ProblemLike | Sequence[ProblemLike]) -> list[ProblemKind]:
    if isinstance(problem, (tuple, list)):
        return [k for p in problem for k in _as_kinds(p)]
    if isinstance(problem, (str, ProblemKind)):
        return [get_kind(problem)]
    return [get_kind(kind_of(problem))]


def fit(
    backend: str | Backend | type[Backend], problem: ProblemLike | Sequence[ProblemLike]
) -> Fit:
    """Whether ``backend`` can solve ``problem``, through which conversions, or why not.

    Parameters
    ----------
    backend
        A backend name (aliases such as ``"cvxpy"`` allowed), instance or class.
    problem
        A problem kind (name or :class:`ProblemKind`), a concrete problem
        (classified by :func:`kind_of`), or a sequence of them that must all
        fit (the problems one model poses in a step).

    Returns
    -------
    Fit
        ``ok``; the form conversions, in order, over every kind; otherwise the
        reason naming the first kind that does not fit and what it needs.

    Raises
    ------
    SolverNotFound
        If the backend name is unknown.
    """
    cls = _backend_class(backend)
    wanted = _as_kinds(problem)
    names = tuple(k.name for k in wanted)
    ok, why = cls.availability()
    if not ok:
        return Fit(False, (), f"backend {cls.name!r} is unavailable: {why}", names)
    convs: list[str] = []
    for kind in wanted:
        route = next((r for r in kind.routes if r.admits(cls)), None)
        if route is None:
            needs = " or ".join(r.describe() for r in kind.routes)
            return Fit(
                False,
                (),
                f"backend {cls.name!r} cannot take a {kind.description} "
                f"({_lacks(cls, kind.routes)}); that needs {needs}",
                names,
            )
        convs.extend(route.conversions)
    return Fit(True, tuple(convs), "", names)


def plan(backend: str | Backend | type[Backend], problem: QP | LCP) -> Fit:
    """The route by which ``backend`` takes the concrete ``problem``: :func:`fit` of its kind.

    The problem is classified only as far as the answer depends on it: when the
    backend takes every kind of the problem's family through the same
    conversions (OSQP and a QP with inequality rows, PGS and an LCP with a
    positive diagonal), no factorisation or symmetry test runs, and
    :attr:`Fit.kinds` names that family.  :func:`solvers.solve` follows this
    answer and nothing else.
    """
    cls = _backend_class(backend)
    family = _family(problem)
    if len(family) > 1:
        answers = [fit(cls, kind) for kind in family]
        first = answers[0]
        if first.ok and all(a.ok and a.conversions == first.conversions for a in answers):
            return Fit(True, first.conversions, "", family)
    return fit(cls, kind_of(problem))


def fitting_backends(
    *alternatives: ProblemLike | Sequence[ProblemLike], aliases: bool = False
) -> list[str]:
    """Installed backends that fit every kind of at least one alternative, in registry order.

    With ``aliases=True`` the alias names (``"cvxpy"``) of fitting backends follow.
    """
    names = [n for n in available_backends() if any(fit(n, alt).ok for alt in alternatives)]
    if aliases:
        names += [a for a, target in ALIASES.items() if target in names]
    return names


def describe(alternatives: Iterable[ProblemLike | Sequence[ProblemLike]]) -> str:
    """Words for alternatives of problem kinds: ``"A and B or C"``."""
    return " or ".join(" and ".join(k.description for k in _as_kinds(alt)) for alt in alternatives)
