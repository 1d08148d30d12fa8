"""The exact linearization of the reduced forces, ``K_r = df_r/dq`` and ``D_r = -df_r/dqdot``.

The reduced forces at zero acceleration are minus the inverse dynamics,
``f_r(q, qdot) = -ID(q, qdot, 0; w_e)`` with the force elements' body wrenches
``w_e`` held in the body frames.  Their total derivatives are

.. math::

    K_r = -\\frac{\\partial ID}{\\partial q}\\Big|_{w_e} + J^T K_m J, \\qquad
    D_r = \\frac{\\partial ID}{\\partial \\dot q}\\Big|_{w_e} + J^T D_m J ,

where the partials of the inverse dynamics (the recursive derivatives of
:mod:`contactlab.reduced.derivatives`) carry everything the linearly
implicit step of Sueda's eq. 2.75 leaves out: the geometric term
``(dJ^T/dq) f_m`` (gravity, Coriolis and the force elements' wrenches turned
with the bodies), gravity's stiffness and the Coriolis forces' dependence on
``q`` and ``qdot``; ``K_m``, ``D_m`` are the force elements' own stiffness
and damping in body perturbations (:func:`contactlab.forces.total_stiffness`,
not symmetrized).  Joint springs and dampers enter through the inverse
dynamics (``diag(k)``, ``diag(d)``).

At an acceleration ``qddot`` (``qddot=`` argument) the same partials give
``M dqddot/dq = K_r - (dM/dq) qddot`` (the forward-dynamics derivatives
times ``M``), the Jacobian the second-order integrators of
:mod:`contactlab.reduced.steppers` linearize with.

Left out: the derivatives of applied joint torques ``tau(t, q, qdot)`` (a
callable the scene gives), and the force elements' velocity dependence
through ``phi = J(q) qdot`` in ``K_r`` (a damper's ``D_m (dJ/dq) qdot``),
first order in the damping times the velocity.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import numpy as np

from contactlab import forces
from contactlab.maximal import assembly as asm
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.dynamics import ImplicitTerms
from contactlab.reduced.kinematics import Kinematics

if TYPE_CHECKING:
    from contactlab.reduced.model import Model
    from contactlab.reduced.tree import Array


_MODELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_of(kin: Kinematics) -> Model:
    """The compiled model of ``kin.tree``, built once per tree (and dropped with it)."""
    from contactlab.reduced.model import Model

    model = _MODELS.get(kin.tree)
    if model is None:
        model = _MODELS[kin.tree] = Model(kin.tree)
    return model


def exact_terms(
    kin: Kinematics, qddot: Array | None = None, model: Model | None = None
) -> ImplicitTerms:
    """``K_r`` and ``D_r`` (nq, nq), exact (module docstring), at ``kin``'s ``(q, qdot)``.

    ``qddot`` (default 0) is the acceleration the inverse dynamics is
    differentiated at; at ``0`` ``K_r = df_r/dq`` exactly.
    """
    tree = kin.tree
    scene = tree.scene
    model = model_of(kin) if model is None else model
    nq = tree.nq
    a = np.zeros(nq) if qddot is None else np.asarray(qddot, dtype=float)
    wrenches = asm.force_wrench(scene, kin.E, kin.phi) if scene.forces else None
    dq, dqd, _ = inverse_dynamics_derivatives(model, kin.q, kin.qdot, a, wrenches)
    K = -dq
    D = np.array(dqd)
    if scene.forces:
        J = kin.J
        K += J.T @ (forces.total_stiffness(scene, kin.E, kin.phi, symmetric=False) @ J)
        D += J.T @ (forces.total_damping(scene, kin.E, kin.phi) @ J)
    return ImplicitTerms(K, D)


def symmetric_step(Mhat: Array, b: Array) -> tuple[Array, Array]:
    """A symmetric step matrix with the same unconstrained answer (defect correction).

    With ``Mhat = S + A`` (symmetric and skew parts) and ``u = Mhat^{-1} b``,
    returns ``(S, b - A u)``: ``S u = b - A u``, so without constraints the
    answer is exactly ``u``; with constraint impulses ``r`` the error is
    ``S^{-1} A (v - u)`` (as :mod:`contactlab.maximal.integrators` does for the
    maximal ``K``).  Contact models need a symmetric matrix.
    """
    S = 0.5 * (Mhat + Mhat.T)
    A = 0.5 * (Mhat - Mhat.T)
    if not np.any(A):
        return S, b
    u = np.linalg.solve(Mhat, b)
    return S, b - A @ u
