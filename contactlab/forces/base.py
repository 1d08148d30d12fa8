"""The force-element interface and the sums the formulations call.

A force element is a frozen dataclass that names the bodies it acts on
(``None`` = the world) and evaluates, at stacked transforms ``E`` (nb, 4, 4)
and body twists ``phi`` (nb, 6):

- ``energy``: its potential energy [J];
- ``wrench``: (nb, 6) body-frame wrenches ``(tau, f)`` [N m, N] on every body;
- ``stiffness``: ``K = d wrench / d delta`` (6nb, 6nb) where body ``i`` is
  perturbed as ``E_i <- E_i exp([delta_i])`` (Sueda's notes, eq. 1.34) and the
  body twists are held fixed;
- ``damping``: the damping matrix ``D = -d wrench / d phi`` (6nb, 6nb).

The signs are those of the linearly implicit Euler step (Sueda's notes, eq. 1.30)

.. math::

    (M + h D - h^2 K)\\,\\phi^+ = M \\phi + h\\,(f + D \\phi),

obtained from ``M (phi+ - phi) = h f(E+, phi+)`` with
``f(E+, phi+) ~ f + K h phi+ - D (phi+ - phi)`` (``E+ = E exp(h [phi+])``).
With them a viscous damper has ``D = c I`` positive (Sueda's notes §1.9.1) and a
spring has a negative semi-definite ``K`` at rest, so ``M + hD - h^2 K`` is
positive definite.  For a linear damper ``f + D phi = 0``: it acts only on the
left (seed: "no contribution to the right-hand side").

The exact ``K`` of a force is not symmetric away from equilibrium (the
rotation of a body also turns the direction in which a fixed world force is
seen).  Sueda's notes §1.9.2–1.9.3 symmetrizes, ``K <- (K + K^T)/2`` (Baraff and
Witkin), so that the step matrix stays symmetric, which QP backends require
(OSQP reads only the upper triangle).  ``stiffness(..., symmetric=True)`` (the
default) returns that symmetric part; ``symmetric=False`` returns the exact
derivative, which the tests check against finite differences.  Every ``D``
here is symmetric already.
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray

from contactlab.errors import ConfigurationError
from contactlab.scene import Scene

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
Triplets = tuple[IntArray, IntArray, Array]

# id(scene) -> (weak reference to the scene, name -> index); entries are
# dropped when their scene is collected.
_INDEX: dict[int, tuple[weakref.ref[Scene], dict[str, int]]] = {}


def body_indices(scene: Scene, names: Sequence[str | None]) -> IntArray:
    """Indices of bodies by name, ``-1`` for ``None`` (the world); cached per scene.

    Raises
    ------
    ConfigurationError
        A name that is not a body of the scene.
    """
    entry = _INDEX.get(id(scene))
    if entry is None or entry[0]() is not scene:
        mapping = {b.name: i for i, b in enumerate(scene.bodies)}
        key = id(scene)
        _INDEX[key] = (weakref.ref(scene), mapping)
        weakref.finalize(scene, _INDEX.pop, key, None)
        entry = _INDEX[key]
    mapping = entry[1]
    out = np.empty(len(names), dtype=np.int64)
    for k, name in enumerate(names):
        if name is None:
            out[k] = -1
        elif name in mapping:
            out[k] = mapping[name]
        else:
            raise ConfigurationError(
                f"force refers to body {name!r}, which is not in scene {scene.name!r}; "
                f"bodies are {list(mapping)}"
            )
    return out


def as_point(value: ArrayLike, what: str) -> Array:
    """A finite 3-vector, read-only."""
    x = np.array(value, dtype=float).reshape(-1)
    if x.shape != (3,) or not np.all(np.isfinite(x)):
        raise ConfigurationError(f"{what} must be a finite 3-vector [m], got {value!r}")
    x.setflags(write=False)
    return x


def nonnegative(value: float, what: str) -> float:
    if not (np.isfinite(value) and value >= 0):
        raise ConfigurationError(f"{what} must be a finite number >= 0, got {value}")
    return float(value)


def positive(value: float, what: str) -> float:
    if not (np.isfinite(value) and value > 0):
        raise ConfigurationError(f"{what} must be a finite number > 0, got {value}")
    return float(value)


class Force(ABC):
    """Base class of force elements (see the module docstring for the conventions).

    The public methods (:meth:`energy`, :meth:`wrench`, :meth:`stiffness`,
    :meth:`damping`) and the sums (:func:`total_wrench`, ...) go through the
    ``batch_*`` class methods, which evaluate many instances of one class at
    once.  A subclass either

    - implements the per-instance hooks :meth:`bodies`, :meth:`local_energy`,
      :meth:`local_wrench` and, where non-zero, :meth:`local_stiffness` and
      :meth:`local_damping` over its m bodies (the defaults of ``batch_*``
      loop over instances), or
    - overrides the ``batch_*`` class methods with a vectorized evaluation
      (worth it for elements that come by the thousand, like springs).

    A local matrix of size (6m, 6m) is ordered like :meth:`bodies` (m
    distinct body indices, world excluded).

    A subclass that does work its :meth:`energy` does not record (a drive, a
    motor) sets ``supplies_energy = True``, so that the divergence guard does
    not take that work for a blow-up (see :mod:`contactlab.divergence`).
    """

    supplies_energy: ClassVar[bool] = False

    @abstractmethod
    def bodies(self, scene: Scene) -> IntArray:
        """Distinct indices (m,) of the bodies the force acts on (no world)."""

    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        """Potential energy [J] (0 for purely dissipative elements)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither energy hook")

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        """(m, 6) body-frame wrenches on :meth:`bodies`."""
        raise NotImplementedError(f"{type(self).__name__} implements neither wrench hook")

    def local_stiffness(self, scene: Scene, E: Array, phi: Array) -> Array | None:
        """Exact (6m, 6m) ``d wrench / d delta`` over :meth:`bodies`; ``None`` if zero."""
        return None

    def local_damping(self, scene: Scene, E: Array, phi: Array) -> Array | None:
        """(6m, 6m) ``-d wrench / d phi`` over :meth:`bodies`; ``None`` if zero."""
        return None

    def stiffness_triplets(
        self, scene: Scene, E: Array, phi: Array, symmetric: bool = True
    ) -> Triplets | None:
        """``(rows, cols, values)`` of ``K`` in the stacked (6nb, 6nb) numbering."""
        K = self.local_stiffness(scene, E, phi)
        if K is None:
            return None
        return _dense_triplets(self.bodies(scene), 0.5 * (K + K.T) if symmetric else K)

    def damping_triplets(self, scene: Scene, E: Array, phi: Array) -> Triplets | None:
        """``(rows, cols, values)`` of ``D`` in the stacked (6nb, 6nb) numbering."""
        D = self.local_damping(scene, E, phi)
        return None if D is None else _dense_triplets(self.bodies(scene), D)

    # -- many instances of one class at once ---------------------------------
    @classmethod
    def batch_energy(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> float:
        """Total energy [J] of ``items`` (all instances of ``cls``)."""
        return float(sum(f.local_energy(scene, E, phi) for f in items))

    @classmethod
    def batch_wrench(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> Array:
        """Total (nb, 6) wrench of ``items``."""
        out = np.zeros((scene.n_bodies, 6))
        for f in items:
            out[f.bodies(scene)] += f.local_wrench(scene, E, phi)
        return out

    @classmethod
    def batch_stiffness_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array, symmetric: bool
    ) -> list[Triplets | None]:
        """Triplets of the ``K`` of ``items``."""
        return [f.stiffness_triplets(scene, E, phi, symmetric) for f in items]

    @classmethod
    def batch_damping_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array
    ) -> list[Triplets | None]:
        """Triplets of the ``D`` of ``items``."""
        return [f.damping_triplets(scene, E, phi) for f in items]

    # -- public, one element ---------------------------------------------------
    def energy(self, scene: Scene, E: Array, phi: Array) -> float:
        """Potential energy [J] stored by the element."""
        return type(self).batch_energy([self], scene, E, phi)

    def wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        """(nb, 6) body-frame wrenches ``(tau, f)`` [N m, N] on every body."""
        return type(self).batch_wrench([self], scene, E, phi)

    def stiffness(
        self, scene: Scene, E: Array, phi: Array, *, symmetric: bool = True
    ) -> sp.csr_matrix:
        """``K = d wrench / d delta`` (6nb, 6nb); its symmetric part unless ``symmetric=False``."""
        parts = type(self).batch_stiffness_triplets([self], scene, E, phi, symmetric)
        return _assemble(scene.n_bodies, parts)

    def damping(self, scene: Scene, E: Array, phi: Array) -> sp.csr_matrix:
        """``D = -d wrench / d phi`` (6nb, 6nb) (Sueda's notes, eq. 1.30)."""
        return _assemble(scene.n_bodies, type(self).batch_damping_triplets([self], scene, E, phi))


def _dense_triplets(bodies: IntArray, local: Array) -> Triplets:
    idx = (6 * bodies[:, None] + np.arange(6)).reshape(-1)
    return np.repeat(idx, len(idx)), np.tile(idx, len(idx)), local.reshape(-1)


def _assemble(n_bodies: int, parts: Sequence[Triplets | None]) -> sp.csr_matrix:
    n = 6 * n_bodies
    parts = [p for p in parts if p is not None]
    if not parts:
        return sp.csr_matrix((n, n))
    rows, cols, vals = (np.concatenate(a) for a in zip(*parts))
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


# ----------------------------------------------------------------------------
# sums over many forces
# ----------------------------------------------------------------------------
def _parse(args: tuple[Any, ...]) -> tuple[Sequence[Force], Scene, Array, Array]:
    """Accept ``(forces, scene, E, phi)`` or ``(scene, E, phi)`` (forces = scene.forces)."""
    if args and isinstance(args[0], Scene):
        if len(args) != 3:
            raise TypeError("expected (scene, E, phi) or (forces, scene, E, phi)")
        scene, E, phi = args
        forces = scene.forces
    else:
        if len(args) != 4:
            raise TypeError("expected (scene, E, phi) or (forces, scene, E, phi)")
        forces, scene, E, phi = args
    E = np.asarray(E, dtype=float)
    phi = np.asarray(phi, dtype=float)
    nb = scene.n_bodies
    if E.shape != (nb, 4, 4) or phi.shape != (nb, 6):
        raise ConfigurationError(
            f"forces need E of shape ({nb}, 4, 4) and phi of shape ({nb}, 6) for scene "
            f"{scene.name!r}, got {E.shape} and {phi.shape}"
        )
    for f in forces:
        if not isinstance(f, Force):
            raise ConfigurationError(
                f"scene {scene.name!r} holds {f!r}, which is not a contactlab.forces.Force"
            )
    return forces, scene, E, phi


def _groups(forces: Sequence[Force]) -> list[tuple[type[Force], list[Force]]]:
    groups: dict[type[Force], list[Force]] = {}
    for f in forces:
        groups.setdefault(type(f), []).append(f)
    return list(groups.items())


def total_energy(*args: Any) -> float:
    """Sum of the potential energies [J]: ``total_energy([forces,] scene, E, phi)``."""
    forces, scene, E, phi = _parse(args)
    return float(sum(cls.batch_energy(items, scene, E, phi) for cls, items in _groups(forces)))


def total_wrench(*args: Any) -> Array:
    """Sum of the (nb, 6) body wrenches: ``total_wrench([forces,] scene, E, phi)``."""
    forces, scene, E, phi = _parse(args)
    out = np.zeros((scene.n_bodies, 6))
    for cls, items in _groups(forces):
        out += cls.batch_wrench(items, scene, E, phi)
    return out


def total_stiffness(*args: Any, symmetric: bool = True) -> sp.csr_matrix:
    """Sum of the stiffness matrices ``K`` (6nb, 6nb), symmetrized unless told otherwise."""
    forces, scene, E, phi = _parse(args)
    parts: list[Triplets | None] = []
    for cls, items in _groups(forces):
        parts += cls.batch_stiffness_triplets(items, scene, E, phi, symmetric)
    return _assemble(scene.n_bodies, parts)


def total_damping(*args: Any) -> sp.csr_matrix:
    """Sum of the damping matrices ``D = -d wrench/d phi`` (6nb, 6nb)."""
    forces, scene, E, phi = _parse(args)
    parts: list[Triplets | None] = []
    for cls, items in _groups(forces):
        parts += cls.batch_damping_triplets(items, scene, E, phi)
    return _assemble(scene.n_bodies, parts)


def linearly_implicit_terms(
    forces: Sequence[Force], scene: Scene, E: Array, phi: Array, h: float
) -> tuple[sp.csr_matrix, Array]:
    """The force part of the linearly implicit Euler step (Sueda's notes, eq. 1.30).

    Returns ``(A, b)`` such that the unconstrained step is
    ``(M + A) phi+ = M phi + h f_other + b`` with
    ``A = h D - h^2 K`` (6nb, 6nb) and ``b = h (f + D phi)`` (6nb,).
    """
    h = positive(h, "step size h [s]")
    K = total_stiffness(forces, scene, E, phi)
    D = total_damping(forces, scene, E, phi)
    f = total_wrench(forces, scene, E, phi).reshape(-1)
    return sp.csr_matrix(h * D - h * h * K), h * (f + D @ np.asarray(phi).reshape(-1))
