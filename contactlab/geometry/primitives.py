"""Rigid transforms as sympy matrices: the vocabulary of :class:`TransformJoint`.

Every function returns a 4 x 4 ``sympy.Matrix``; compose them with ``*``.
Arguments may be numbers or sympy expressions of the joint's coordinates.

.. code-block:: python

    from contactlab.geometry.primitives import rot_z, trans
    Q = rot_z(q[0]) * trans(q[1], 0, 0)     # a revolute joint carrying a slider
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contactlab._lazy import lazy_import

sp = lazy_import("sympy")  # loaded when a symbolic expression is first built


def transform(R: Any, p: Sequence[Any] = (0, 0, 0)) -> sp.Matrix:
    """``[[R, p], [0, 1]]`` from a 3 x 3 rotation and a translation [m]."""
    E = sp.eye(4)
    E[:3, :3] = sp.Matrix(R)
    E[:3, 3] = sp.Matrix(list(p))
    return E


def trans(x: Any = 0, y: Any = 0, z: Any = 0) -> sp.Matrix:
    """Translation by ``(x, y, z)`` [m]."""
    return transform(sp.eye(3), (x, y, z))


def rot_x(a: Any) -> sp.Matrix:
    """Rotation by ``a`` [rad] about x."""
    c, s = sp.cos(a), sp.sin(a)
    return transform(sp.Matrix([[1, 0, 0], [0, c, -s], [0, s, c]]))


def rot_y(a: Any) -> sp.Matrix:
    """Rotation by ``a`` [rad] about y."""
    c, s = sp.cos(a), sp.sin(a)
    return transform(sp.Matrix([[c, 0, s], [0, 1, 0], [-s, 0, c]]))


def rot_z(a: Any) -> sp.Matrix:
    """Rotation by ``a`` [rad] about z."""
    c, s = sp.cos(a), sp.sin(a)
    return transform(sp.Matrix([[c, -s, 0], [s, c, 0], [0, 0, 1]]))


def rot(axis: Sequence[float], a: Any) -> sp.Matrix:
    """Rotation by ``a`` [rad] about the unit ``axis`` (Rodrigues' formula)."""
    k = sp.Matrix([sp.nsimplify(x) if isinstance(x, int) else x for x in axis])
    norm = sp.sqrt(sum(x * x for x in k))
    k = k / norm
    K = sp.Matrix([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    R = sp.eye(3) + sp.sin(a) * K + (1 - sp.cos(a)) * K * K
    return transform(R)


def exp_rotation(w: Sequence[Any]) -> sp.Matrix:
    """Rotation by the rotation vector ``w`` [rad] (exponential coordinates)."""
    v = sp.Matrix(list(w))
    theta = sp.sqrt(v.dot(v))
    K = sp.Matrix([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    R = sp.eye(3) + sp.sin(theta) / theta * K + (1 - sp.cos(theta)) / theta**2 * K * K
    return transform(R)


def frame(t1: Any, t2: Any, n: Any, p: Any) -> sp.Matrix:
    """The transform whose columns are the orthonormal ``t1, t2, n`` and origin ``p``."""
    R = sp.Matrix.hstack(sp.Matrix(t1), sp.Matrix(t2), sp.Matrix(n))
    return transform(R, list(sp.Matrix(p)))


def inverse(E: sp.Matrix) -> sp.Matrix:
    """``[[R^T, -R^T p], [0, 1]]`` of a rigid transform."""
    R, p = E[:3, :3], E[:3, 3]
    return transform(R.T, list(-R.T * p))


def screw(xi: Sequence[float], theta: Any) -> sp.Matrix:
    """``exp([xi] theta)`` for a fixed twist ``xi = (omega, nu)`` (angular first).

    With ``phi = |omega|`` and ``a = phi theta``: ``R = rot(omega / phi, a)``,
    ``p = (theta I + (1 - cos a) / phi^2 [omega] + (a - sin a) / phi^3 [omega]^2) nu``.
    """
    w = [float(x) for x in xi[:3]]
    nu = sp.Matrix([sp.Float(float(x)) for x in xi[3:]])
    phi = float(sum(x * x for x in w) ** 0.5)
    if phi < 1e-12:
        return trans(*(nu * theta))
    W = sp.Matrix([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]).applyfunc(sp.Float)
    a = phi * theta
    p = (theta * sp.eye(3) + (1 - sp.cos(a)) / phi**2 * W + (a - sp.sin(a)) / phi**3 * W * W) * nu
    R = rot(w, a)[:3, :3]
    return transform(R, list(p))
