"""Attachments by null-space reduction (ArtiSynth notes §0.17–0.19).

Facts
-----
* The reduced mass ``P^T M P`` of a body of mass m (inertia I_B) attached at
  offset c is the composite's spatial inertia about the master's frame
  (parallel-axis theorem, the notes' ``M + m G^T G`` of §0.19), to 1e-14.
* An attached body keeps its initial pose relative to its master exactly
  (1e-12 over 60 steps: it is placed, never integrated), also when attached to
  an attached body (§0.18).
* The motion equals that of the same scene with fixed joints in place of the
  attachments (hard constraint rows, the same step otherwise) to 1e-9 m, for a
  spinning free body with an attached body and for a hinged pendulum carrying
  a chain of two attached bodies, with every integrator.
* A body attached to an attached body, or to the world, and bad input (a
  cycle, an unknown body, a joint between bodies the attachments already join)
  are handled with one clear error.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.formulation import make_formulation
from contactlab.maximal.integrators import INTEGRATORS
from contactlab.scene import Body, JointSpec, Scene
from contactlab.simulator import Simulator

C_B = np.array([0.3, -0.1, 0.2])
C_C = np.array([0.0, 0.25, -0.1])


def _bodies():
    return (
        Body("a", mass=2.0, inertia=[0.1, 0.2, 0.25]),
        Body("b", mass=0.7, inertia=[0.01, 0.02, 0.03]),
        Body("c", mass=0.4, inertia=[0.02, 0.01, 0.01]),
    )


def _scene(kind: str, hinged: bool, attach: bool) -> Scene:
    """Bodies a, b (offset C_B, turned), c (offset C_C from b); joints or attachments."""
    Rb = se3.exp_so3([0.2, 0.1, -0.3])
    Ea = se3.make_transform(se3.exp_so3([0.1, -0.4, 0.2]), [0.0, 0.0, -0.5])
    Tb = se3.make_transform(Rb, C_B)
    Tc = se3.make_transform(se3.exp_so3([0.0, 0.3, 0.0]), C_C)
    E = np.stack([Ea, Ea @ Tb, Ea @ Tb @ Tc])
    phi = np.zeros((3, 6))
    joints = []
    if hinged:
        joints.append(
            JointSpec(
                "hinge",
                "revolute",
                None,
                "a",
                frame_parent=np.eye(4),
                frame_child=se3.inverse(Ea),
                axis=(0, 1, 0),
            )
        )
        phi[0] = [0.0, 3.0, 0.0, 0.0, 0.0, 0.0]
    else:
        phi[0] = [1.0, 6.0, -2.0, 0.3, 0.0, -0.2]  # spinning, thrown
    if kind == "chain":
        if not attach:
            joints += [
                JointSpec("ab", "fixed", "a", "b", frame_parent=Tb, frame_child=np.eye(4)),
                JointSpec("bc", "fixed", "b", "c", frame_parent=Tc, frame_child=np.eye(4)),
            ]
    # twists of the attached bodies consistent with a's
    phi[1] = se3.adjoint_inverse(Tb) @ phi[0]
    phi[2] = se3.adjoint_inverse(Tc) @ phi[1]
    return Scene(
        name="attached",
        bodies=_bodies(),
        joints=tuple(joints),
        initial_E=E,
        initial_phi=phi,
        dt=0.01,
        collision=False,
    )


ATTACH = {"b": "a", "c": "b"}  # c is attached to an attached body


def test_reduced_mass_is_the_composite_inertia() -> None:
    bodies = (
        Body("a", mass=2.0, inertia=[0.1, 0.2, 0.25]),
        Body("b", mass=0.7, inertia=[0.01, 0.02, 0.03]),
    )
    E = np.stack([np.eye(4), se3.make_transform(p=C_B)])
    scene = Scene(
        name="pair", bodies=bodies, initial_E=E, initial_phi=np.zeros((2, 6)), gravity=np.zeros(3)
    )
    form = make_formulation("maximal", scene, attachments={"b": "a"})
    problem = form.assemble(form.initial_state(), 0.01)
    C = se3.bracket3(C_B)
    m = 0.7
    expected = np.zeros((6, 6))
    expected[:3, :3] = np.diag([0.1, 0.2, 0.25]) + np.diag([0.01, 0.02, 0.03]) + m * C.T @ C
    expected[:3, 3:] = m * C
    expected[3:, :3] = m * C.T
    expected[3:, 3:] = (2.0 + m) * np.eye(3)
    np.testing.assert_allclose(problem.M.toarray(), expected, atol=1e-14)


@pytest.mark.parametrize("hinged", [False, True], ids=["free-spinning", "hinged"])
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_attachment_moves_like_fixed_joints(hinged: bool, integrator: str) -> None:
    opts = {"integrator": integrator}
    steps = 30
    attached = Simulator(
        _scene("chain", hinged, attach=True),
        "maximal",
        "frictionless",
        "kkt",
        formulation_options={**opts, "attachments": ATTACH},
    ).run(steps=steps)
    joined = Simulator(
        _scene("chain", hinged, attach=False),
        "maximal",
        "frictionless",
        "kkt",
        formulation_options=opts,
    ).run(steps=steps)
    assert attached.status == joined.status == "ok"
    pa, pj = attached.trajectory["position"], joined.trajectory["position"]
    assert np.abs(pa - pj).max() < 1e-9
    Ra, Rj = attached.trajectory["rotation"], joined.trajectory["rotation"]
    assert np.abs(Ra - Rj).max() < 1e-9
    # the attached bodies keep their initial relative poses exactly
    E = np.zeros(Ra.shape[:2] + (4, 4))
    E[..., :3, :3], E[..., :3, 3], E[..., 3, 3] = Ra, pa, 1.0
    for k, master in ((1, 0), (2, 1)):
        rel = np.linalg.inv(E[:, master]) @ E[:, k]
        assert np.abs(rel - rel[0]).max() < 1e-12


def test_attached_to_the_world_stays_put() -> None:
    scene = _scene("chain", hinged=False, attach=True)
    run = Simulator(
        scene,
        "maximal",
        "frictionless",
        "kkt",
        formulation_options={"attachments": {"b": None}},
    ).run(steps=5)
    p = run.trajectory["position"]
    assert np.abs(p[:, 1] - p[0, 1]).max() == 0.0
    assert np.abs(run.trajectory["twist"][:, 1]).max() == 0.0
    assert np.abs(p[:, 0] - p[0, 0]).max() > 1e-3  # the free ones move


def test_bad_attachments_are_one_clear_line() -> None:
    scene = _scene("chain", hinged=True, attach=True)
    for attachments, message in (
        ({"b": "c", "c": "b"}, "attachments form a cycle"),
        ({"b": "z"}, "'z' is not a body of scene"),
        ({"a": None}, "joint 'hinge' joins 'the world' and 'a', which the attachments"),
    ):
        with pytest.raises(ConfigurationError, match=message):
            Simulator(
                scene,
                "maximal",
                "frictionless",
                "kkt",
                formulation_options={"attachments": attachments},
            )
    free = _scene("chain", hinged=False, attach=True)
    with pytest.raises(ConfigurationError, match="fix every body to the world"):
        Simulator(
            free,
            "maximal",
            "frictionless",
            "kkt",
            formulation_options={"attachments": {"a": "b", "b": None, "c": None}},
        )
