"""Joints defined by their transform ``Q(q)`` (Si & Guenter, Si & Guenter).

The user writes the joint's 4 x 4 transform as a sympy expression of its
coordinates (or builds it from :mod:`contactlab.geometry.primitives` and
:mod:`contactlab.geometry.surfaces`); :class:`TransformJoint` derives ``S``
and ``Sdot`` symbolically and compiles them (:mod:`contactlab.joints.kernel_cache`).
The joint then works wherever a hand-written one does: the tree evaluates
all joints of one expression in one compiled call, so the recursive O(n)
dynamics stays compiled end to end.

.. code-block:: python

    import sympy as sp
    from contactlab.joints.transform import TransformJoint

    t, s = sp.symbols("t s", real=True)
    screw = TransformJoint(
        sp.Matrix([[sp.cos(t), -sp.sin(t), 0, 0], [sp.sin(t), sp.cos(t), 0, 0],
                   [0, 0, 1, s * t], [0, 0, 0, 1]]),
        coordinates=[t], parameters={s: 0.01})      # pitch s [m/rad]

In a scene: ``JointSpec(..., kind="transform", params={"Q": ..., "coordinates":
[...], "parameters": {...}})``; ``Q`` may also be a string parsed by sympy
(or a list of strings, the factors; the names of
:mod:`contactlab.geometry.primitives` are available), or a callable
receiving the coordinate symbols.  Text definitions name the generated code
by their text, so a second build needs no sympy.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab._lazy import lazy_import
from contactlab.errors import ConfigurationError
from contactlab.joints.kinds import register_joint
from contactlab.joints.maps import Array, Joint

_NODE0 = np.zeros(1, dtype=np.int64)
#: relative size of the smallest singular value of S below which a chart is singular
SINGULAR_RTOL = 1e-9
#: tolerance on R^T R - I for Q(q) to count as a rigid transform
RIGID_TOL = 1e-8
#: (expression key, parameter values) already checked to be rigid in this process
_CHECKED: set[tuple[str, tuple[float, ...]]] = set()


if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")  # loaded when a symbolic expression is first built


def _symbol(x: Any, what: str) -> sp.Symbol:
    if isinstance(x, str) and x.isidentifier():
        return sp.Symbol(x, real=True)
    if isinstance(x, sp.Symbol):
        return x
    raise ConfigurationError(f"{what} must be a sympy Symbol or a name, got {x!r}")


def _name(x: Any, what: str) -> str:
    """The name of a symbol given by name or as a sympy Symbol (sympy is not imported)."""
    if isinstance(x, str) and x.isidentifier():
        return x
    sympy = sys.modules.get("sympy")
    if sympy is not None and isinstance(x, sympy.Symbol):
        return str(x.name)
    raise ConfigurationError(f"{what} must be a sympy Symbol or a name, got {x!r}")


def _coordinate_names(coordinates: Sequence[Any] | int) -> tuple[str, ...]:
    if isinstance(coordinates, int):
        return tuple(f"q{k}" for k in range(coordinates))
    names = tuple(_name(x, "a coordinate") for x in coordinates)
    if len(set(names)) != len(names):
        raise ConfigurationError(f"transform joint coordinates {names} repeat a name")
    return names


def _coordinates(coordinates: Sequence[Any] | int) -> tuple[sp.Symbol, ...]:
    if isinstance(coordinates, int):
        return sp.symbols(f"q0:{coordinates}", real=True) if coordinates > 0 else ()
    return tuple(_symbol(x, "a coordinate") for x in coordinates)


#: names a text ``Q`` may use besides its symbols (:mod:`contactlab.geometry.primitives`)
_VOCABULARY = (
    "transform",
    "trans",
    "rot_x",
    "rot_y",
    "rot_z",
    "rot",
    "exp_rotation",
    "frame",
    "inverse",
    "screw",
)


def _text_source(Q: Any) -> str | None:
    """The definition text of a ``Q`` given as text (one string or a list of factors)."""
    if isinstance(Q, str):
        texts = [Q]
    elif isinstance(Q, (list, tuple)) and Q and all(isinstance(F, str) for F in Q):
        texts = list(Q)
    else:
        return None
    from contactlab.joints.kernel_cache import module_digest

    return f"text|{texts!r}|{module_digest('contactlab.geometry.primitives')}"


def _matrix(
    Q: Any, coords: tuple[sp.Symbol, ...], params: tuple[sp.Symbol, ...]
) -> sp.ImmutableMatrix:
    if isinstance(Q, str):
        from contactlab.geometry import primitives

        local: dict[str, Any] = {name: getattr(primitives, name) for name in _VOCABULARY}
        local.update({str(s): s for s in coords + params})
        try:
            Q = sp.sympify(Q, locals=local)
        except (sp.SympifyError, SyntaxError, TypeError, NameError) as err:
            raise ConfigurationError(f"cannot parse Q(q) {Q!r}: {err}") from err
    try:
        M = sp.ImmutableMatrix(Q)
    except (TypeError, ValueError) as err:
        raise ConfigurationError(f"Q(q) must be a 4x4 matrix, got {Q!r}") from err
    if M.shape != (4, 4):
        raise ConfigurationError(f"Q(q) must be a 4x4 transform, got shape {M.shape}")
    bottom = [sp.simplify(M[3, c] - (1 if c == 3 else 0)) for c in range(4)]
    if any(b != 0 for b in bottom):
        raise ConfigurationError(
            f"Q(q) is not a rigid transform: its bottom row is {list(M[3, :])}, "
            "it must be (0, 0, 0, 1)"
        )
    return M


def _factors(
    Q: Any, coords: tuple[sp.Symbol, ...], params: tuple[sp.Symbol, ...]
) -> list[sp.ImmutableMatrix]:
    """``Q`` as a list of 4x4 factors (one unless a sequence of matrices or texts was given)."""
    if callable(Q) and not isinstance(Q, sp.MatrixBase):
        Q = Q(coords)
    if isinstance(Q, (list, tuple)) and Q and all(isinstance(F, (sp.MatrixBase, str)) for F in Q):
        return [_matrix(F, coords, params) for F in Q]
    return [_matrix(Q, coords, params)]


class TransformJoint(Joint):
    """A joint whose transform is the sympy expression ``Q(q)``.

    Parameters
    ----------
    Q : (4, 4) sympy matrix (or nested lists, a string, or a callable taking
        the tuple of coordinate symbols), the child joint frame in the
        parent's joint frame.  A list of sympy matrices (or of strings) is
        their product ``Q = F_1 F_2 ...``: each factor is differentiated on
        its own and the products are formed numerically (much smaller code
        for joints composed of frames, such as the surface joints).  A string
        may use the names of :mod:`contactlab.geometry.primitives`
        (``"rot_z(t) * trans(0, 0, s * t)"``).
    coordinates : the coordinate symbols (or names, or their number ``n``,
        which names them ``q0 .. q{n-1}``), in the order of ``q``.
    parameters : values of the other symbols in ``Q`` (lengths [m], angles
        [rad], ...).  They stay symbols in the compiled code, so joints of
        one expression with different values share it.  A parameter given
        by name is the symbol of that name in ``Q``.
    source : text that fixes ``Q`` without sympy (default: ``Q`` itself when
        given as text).  When set, the generated code is named by a hash of
        this text, the coordinate and parameter names (not by the expression),
        so a second build finds it without building the expression: no sympy
        is imported.  Builders of joints (:mod:`contactlab.joints.surface`)
        pass the sources of the modules that write ``Q`` out.

    Attributes
    ----------
    key : hash of the source or of the expression (the name of the generated code).
    generated_now : ``False`` when the code came from the disk cache.
    """

    def __init__(
        self,
        Q: Any,
        coordinates: Sequence[Any] | int,
        parameters: Mapping[Any, float] | None = None,
        *,
        source: str | None = None,
    ) -> None:
        from contactlab.joints import kernel_cache

        given = dict(parameters or {})
        names = _coordinate_names(coordinates)
        values = {_name(k, "a parameter"): float(v) for k, v in given.items()}
        if len(values) != len(given):
            raise ConfigurationError(f"transform joint parameters {list(given)} repeat a name")
        pnames = tuple(sorted(values))
        self.ndof = len(names)
        self.params = np.array([[values[k] for k in pnames]], dtype=float).reshape(1, len(pnames))
        self.source = _text_source(Q) if source is None else source
        self._definition = (Q, coordinates, given)
        self._symbolic: tuple[list[sp.ImmutableMatrix], tuple, tuple] | None = None
        key = None if self.source is None else kernel_cache.source_key(self.source, names, pnames)
        kernel = None if key is None else kernel_cache.cached_kernel(key)
        if key is not None and kernel is not None:  # generated before: no sympy at all
            self.key, self.kernel, self.generated_now = key, kernel, False
            self._python_kernel = kernel_cache.python_kernel(key)
            if (key, tuple(self.params[0])) not in _CHECKED:
                self._check_rigid_generated()
                _CHECKED.add((key, tuple(self.params[0])))
            return
        factors, coords, psyms = self._derive_symbols()
        key = key or kernel_cache.expression_key(factors, coords, psyms)
        checked = (key, tuple(self.params[0])) in _CHECKED
        existed = checked or kernel_cache.is_generated(key)
        if not existed:  # each factor, before any code is generated for it
            for F in factors:
                self._check_rigid(F)
        self.key, self.kernel, cached = kernel_cache.compiled_kernel(factors, coords, psyms, key)
        self.generated_now = not cached
        # one joint at a time runs the same generated code uncompiled: trees use the
        # compiled kernel (:attr:`batch`), and a joint evaluated alone pays no compilation
        self._python_kernel = kernel_cache.python_kernel(self.key)
        if existed and not checked:  # generated before: check Q(q) with that code
            self._check_rigid_generated()
        _CHECKED.add((key, tuple(self.params[0])))

    def _derive_symbols(self) -> tuple[list[sp.ImmutableMatrix], tuple, tuple]:
        """``(factors, coordinate symbols, parameter symbols)``, checked (sympy work)."""
        if self._symbolic is not None:
            return self._symbolic
        Q, coordinates, given = self._definition
        coords = _coordinates(coordinates)
        first = {_symbol(k, "a parameter"): float(v) for k, v in given.items()}
        factors = _factors(Q, coords, tuple(sorted(first, key=str)))
        free = set().union(*(F.free_symbols for F in factors))
        # a parameter given by name is the symbol of that name in Q, whatever its assumptions
        by_name = {str(x): x for x in free}
        values = {
            (by_name.get(k, _symbol(k, "a parameter")) if isinstance(k, str) else k): float(v)
            for k, v in given.items()
        }
        psyms = tuple(sorted(values, key=str))
        clash = set(coords) & set(psyms)
        if clash:
            raise ConfigurationError(
                f"symbols {sorted(map(str, clash))} are both coordinates and parameters"
            )
        for x in coords:
            if x not in free:
                raise ConfigurationError(
                    f"coordinate {x} does not appear in Q(q); remove it from the coordinates "
                    "or use it in Q"
                )
        unknown = free - set(coords) - set(psyms)
        if unknown:
            raise ConfigurationError(
                f"Q(q) holds symbols {sorted(map(str, unknown))} that are neither coordinates "
                "nor parameters; give their values in parameters"
            )
        self._symbolic = (factors, coords, psyms)
        return self._symbolic

    @property
    def factors(self) -> list[sp.ImmutableMatrix]:
        """The factors of ``Q`` (built with sympy on first access for cached joints)."""
        return self._derive_symbols()[0]

    @property
    def coordinates(self) -> tuple[sp.Symbol, ...]:
        """The coordinate symbols, in the order of ``q``."""
        return self._derive_symbols()[1]

    @property
    def parameter_symbols(self) -> tuple[sp.Symbol, ...]:
        """The parameter symbols, in the order of the parameter values."""
        return self._derive_symbols()[2]

    @property
    def expression(self) -> sp.Matrix:
        """The transform ``Q(q)`` (the product of the factors)."""
        M = sp.Matrix(self.factors[0])
        for F in self.factors[1:]:
            M = M * F
        return M

    def _check_points(self) -> list[Array]:
        rng = np.random.default_rng(0)
        return [np.zeros(self.ndof)] + [rng.uniform(-1, 1, self.ndof) for _ in range(4)]

    def _check_rigid(self, F: sp.ImmutableMatrix) -> None:
        """``R^T R = I`` and ``det R = 1`` at q = 0 and a few random points (each factor)."""
        f = sp.lambdify(self.coordinates + self.parameter_symbols, F, "numpy")
        for q in self._check_points():
            with np.errstate(all="ignore"):
                E = np.asarray(f(*q, *self.params[0]), dtype=float)
            self._raise_unless_rigid(E, q, len(self.factors) > 1)

    def _check_rigid_generated(self) -> None:
        """The same check on ``Q`` from the generated code (no sympy work: cached joints)."""
        zero = np.zeros(self.ndof)
        for q in self._check_points():
            try:  # the uncompiled code raises where the compiled code returns nan or inf
                E = self.evaluate(q, zero)[0]
            except (ArithmeticError, ValueError):
                continue
            self._raise_unless_rigid(E, q, False)

    @staticmethod
    def _raise_unless_rigid(E: Array, q: Array, factor: bool) -> None:
        if not np.all(np.isfinite(E)):
            return
        R = E[:3, :3]
        err = float(np.abs(R.T @ R - np.eye(3)).max())
        if err > RIGID_TOL or np.linalg.det(R) < 0:
            where = " of a factor" if factor else ""
            raise ConfigurationError(
                f"Q(q) is not a rigid transform: at q={np.round(q, 3).tolist()} the rotation "
                f"block{where} has |R^T R - I| = {err:.3g} and det {np.linalg.det(R):.3g}; "
                "build the rotation from rotations (contactlab.geometry.primitives) or "
                "orthonormal frames"
            )

    def screw_chain(self) -> tuple[list[Array], Array] | None:
        """``Q(q) = C_0 exp([xi_1] q_1) C_1 ... exp([xi_n] q_n) C_n`` when ``Q`` has that form.

        Returns the constant transforms ``C_0 .. C_n`` (4, 4) and the screws
        ``xi`` (n, 6) (angular first, in the frame after ``C_{k-1}``), or ``None``.
        The form is found when the code is generated
        (:func:`contactlab.joints.kernel_cache.screw_factors_source`): every factor
        of ``Q`` is constant or has a Jacobian ``S`` independent of ``q`` (a
        revolute or prismatic joint about any fixed axis, a translation, their
        products), whatever expression it was written with.
        """
        from contactlab.joints.kernel_cache import screw_factors

        parts = screw_factors(self.key, self.params[0])
        if parts is None:
            return None
        offsets: list[Array] = []
        screws: list[Array] = []
        C = np.eye(4)
        for F0, columns in parts:
            C = C @ np.asarray(F0, dtype=float)
            for _, xi in columns:
                offsets.append(C)
                screws.append(np.asarray(xi, dtype=float))
                C = np.eye(4)
        offsets.append(C)
        return offsets, np.array(screws, dtype=float).reshape(len(screws), 6)

    @property
    def batch(self) -> tuple[str, Callable[..., None], Array]:
        """``(key, kernel, parameter values)``: lets a tree evaluate joints of one key together."""
        return self.key, self.kernel, self.params[0]

    def evaluate(self, q: Array, qdot: Array) -> tuple[Array, Array, Array]:
        Q = np.empty((1, 4, 4))
        S = np.zeros((1, 6, self.ndof))
        Sd = np.zeros((1, 6, self.ndof))
        self._python_kernel(
            np.ascontiguousarray(q, dtype=float),
            np.ascontiguousarray(qdot, dtype=float),
            _NODE0,
            _NODE0,
            self.params,
            Q,
            S,
            Sd,
        )
        return Q[0], S[0], Sd[0]

    def check_regular(self, q: Array, where: str = "the initial state") -> None:
        """Raise if the parameterization is singular at ``q`` (S loses rank)."""
        q = np.asarray(q, dtype=float)
        S = self.S(q)
        sv = np.linalg.svd(S, compute_uv=False)
        if self.ndof and (not np.all(np.isfinite(S)) or sv[-1] <= SINGULAR_RTOL * max(sv[0], 1.0)):
            raise ConfigurationError(
                f"the parameterization Q(q) is singular at {where} q={np.round(q, 6).tolist()}: "
                f"S has rank {int(np.sum(sv > SINGULAR_RTOL * max(sv[0], 1.0)))} < {self.ndof} "
                "coordinates; start away from the singular point or reparameterize"
            )


@register_joint("transform")
def _transform(axis: Any, p: Mapping[str, Any]) -> Joint:
    """A joint given by its transform ``Q`` (a 4x4 sympy expression of ``coordinates``
    and ``parameters``); kernels are generated from it."""
    if "Q" not in p or "coordinates" not in p:
        raise ConfigurationError(
            "transform joint needs params['Q'] (a 4x4 sympy expression) and "
            "params['coordinates'] (its coordinate symbols or names)"
        )
    return TransformJoint(p["Q"], p["coordinates"], p.get("parameters"))
