"""The reduced position update moves each joint as ``Q exp(h [S qdot])``.

See docs/reduced-integration.md.

A step holds the joint twist ``psi = S(q) qdot`` constant.  The facts:

- subgroup joints (free in both orders, spherical in exponential coordinates
  and XZX Euler angles, SE(2)-type composites, constant-``S`` joints) land
  exactly on ``Q exp(h [psi])`` and keep ``psi`` as their twist;
- every other joint lands within ``C h^2`` of it, with ``C`` the same whether
  its translation coordinates are 1 m or 100 m from the origin (the update
  ``q + h qdot`` of a rotation-first free joint has ``C ~ |omega|^2 |p|``);
- the step's bias ``Jdot qdot`` is the one of that motion: ``evaluate_step``'s
  ``Sdot`` equals the finite-difference derivative of ``S`` along the advanced
  configurations.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.joints.kinds import make_joint
from contactlab.joints.maps import Joint

from .conftest import JOINTS

#: extra composites: two non-subgroup ones with translation after rotation, two SE(2) ones
EXTRA = {
    "spherical_then_prismatic": make_joint(
        "composite", params={"joints": [{"kind": "spherical"}, {"kind": "prismatic"}]}
    ),
    "revolute_then_prismatic": make_joint(
        "composite",
        params={"joints": [{"kind": "revolute"}, {"kind": "prismatic", "axis": (1, 0, 0)}]},
    ),
    "revolute_then_planar": make_joint(
        "composite", params={"joints": [{"kind": "revolute"}, {"kind": "planar"}]}
    ),
    "planar_then_revolute": make_joint(
        "composite", params={"joints": [{"kind": "planar"}, {"kind": "revolute"}]}
    ),
}
ALL = {**JOINTS, **EXTRA}

#: coordinates that are translations [m] (set to distance D from the origin)
TRANSLATIONS = {
    "prismatic": [0],
    "planar": [0, 1],
    "planar_z": [0, 1],
    "translational": [0, 1, 2],
    "free": [3, 4, 5],
    "free_translation_first": [0, 1, 2],
    "cylindrical": [1],
    "composite3": [2],
    "spherical_then_prismatic": [3],
    "revolute_then_prismatic": [1],
    "revolute_then_planar": [1, 2],
    "planar_then_revolute": [0, 1],
}
SUBGROUP = {
    "fixed",
    "revolute",
    "prismatic",
    "planar",
    "planar_z",
    "translational",
    "spherical",
    "spherical_euler",
    "free",
    "free_translation_first",
    "cylindrical",
    "composite3",  # universal, prismatic, spherical: six independent columns, all of SE(3)
    "revolute_then_planar",
    "planar_then_revolute",
}


def configuration(name: str, joint: Joint, distance: float) -> tuple[np.ndarray, np.ndarray]:
    """A sampled ``q`` with its translation coordinates at ``distance`` [m], and a unit ``qdot``."""
    rng = np.random.default_rng(7)
    q = joint.sample(rng)
    idx = TRANSLATIONS.get(name, [])
    if idx:
        u = rng.standard_normal(len(idx))
        q[idx] = distance * u / np.linalg.norm(u)
    qdot = rng.standard_normal(joint.ndof)
    return q, qdot / max(np.linalg.norm(qdot), 1e-300)


def step_error(joint: Joint, q: np.ndarray, qdot: np.ndarray, h: float) -> float:
    """``|log((Q exp(h [S qdot]))^{-1} Q(q+))|`` after one :meth:`Joint.advance`."""
    Q, S, _ = joint.evaluate(q, np.zeros_like(q))
    target = Q @ se3.exp_se3(h * (S @ qdot))
    q_new, _ = joint.advance(q, qdot, h)
    return float(np.linalg.norm(se3.log_se3(se3.inverse(target) @ joint.Q(q_new))))


def test_the_subgroup_joints_are_detected() -> None:
    assert {n for n, j in ALL.items() if j.subalgebra is not None} == SUBGROUP


@pytest.mark.parametrize("name", sorted(ALL))
def test_one_step_moves_the_joint_by_the_exponential_of_its_twist(name: str) -> None:
    joint = ALL[name]
    if joint.ndof == 0:
        return
    h = 1e-3
    errors = {}
    for distance in (1.0, 100.0):
        q, qdot = configuration(name, joint, distance)
        e, e_half = step_error(joint, q, qdot, h), step_error(joint, q, qdot, h / 2)
        errors[distance] = e / h**2
        if name in SUBGROUP:
            # exact up to round-off of transforms whose translation is ~distance
            assert e < 1e-12 * (1.0 + distance), (name, distance, e)
        else:
            # second order: halving h quarters the error
            assert 3.5 < e / e_half < 4.5, (name, distance, e, e_half)
    if name not in SUBGROUP:
        # the constant does not grow with the distance (its O(h^3) part is h * distance
        # smaller: 0.1 relative at h = 1e-3 and 100 m)
        assert errors[100.0] < 1.2 * errors[1.0], (name, errors)


@pytest.mark.parametrize("name", sorted(SUBGROUP - {"fixed"}))
def test_a_subgroup_joint_keeps_its_twist(name: str) -> None:
    joint = ALL[name]
    q, qdot = configuration(name, joint, 10.0)
    psi = joint.S(q) @ qdot
    q_new, qdot_new = joint.advance(q, qdot, 1e-2)
    np.testing.assert_allclose(joint.S(q_new) @ qdot_new, psi, atol=1e-12)


def test_the_chart_update_of_a_rotation_first_free_joint_grows_with_the_distance() -> None:
    """What the group update removes: ``q + h qdot`` is off by ``~ h^2 |omega|^2 |p| / 2``."""
    joint = ALL["free"]
    h = 1e-3
    constant = {}
    for distance in (1.0, 1000.0):
        q, qdot = configuration("free", joint, distance)
        Q, S, _ = joint.evaluate(q, np.zeros(6))
        target = Q @ se3.exp_se3(h * (S @ qdot))
        naive = joint.Q(q + h * qdot)
        constant[distance] = np.linalg.norm(se3.log_se3(se3.inverse(target) @ naive)) / h**2
    # measured 0.20 at 1 m, ~10 at 1 km: linear in |p| (the group update is exact at both)
    assert constant[1000.0] > 20.0 * constant[1.0]


@pytest.mark.parametrize("name", sorted(ALL))
def test_the_step_sdot_is_the_derivative_of_S_along_the_advanced_motion(name: str) -> None:
    """The joint twist ``S(q) qdot`` along :meth:`advance` changes at ``Sdot_step qdot``.

    Central differences of the twist one step ahead and one step back (``advance``
    with ``-qdot``): zero for subgroup joints (the twist is held), the chart's
    ``Sdot qdot`` for chart joints, and for other composites the relative motion
    of their factors (eq. 2.55 with each factor's step ``Sdot``).  Truncation
    ~h^2 = 1e-8.
    """
    joint = ALL[name]
    if joint.ndof == 0:
        return
    q, qdot = configuration(name, joint, 1.0)
    h = 1e-4
    _, S, Sdot_step = joint.evaluate_step(q, qdot)
    qp, qdp = joint.advance(q, qdot, h)
    qm, qdm = joint.advance(q, -qdot, h)  # backwards in time
    qdm = -qdm
    twist_p, twist_m = joint.S(qp) @ qdp, joint.S(qm) @ qdm
    np.testing.assert_allclose((twist_p - twist_m) / (2 * h), Sdot_step @ qdot, atol=1e-6)
    if name in SUBGROUP:
        np.testing.assert_allclose(Sdot_step, 0.0)
    if name in ("universal", "spline_curve", "spline_surface"):
        # a chart joint keeps q + h qdot, so its step Sdot is the chart's
        np.testing.assert_allclose(Sdot_step, joint.evaluate(q, qdot)[2])
