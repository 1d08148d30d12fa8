"""Small reference scenes for the reduced-coordinate tests (SI units)."""

from __future__ import annotations

import numpy as np

from contactlab import se3
from contactlab.formulation import make_formulation
from contactlab.problem import StepSolution
from contactlab.scene import JointSpec, Scene, State

from .conftest import box_body

LINK = 0.1  # [m] link length


def chain(
    n: int = 3,
    axes: list[tuple[float, float, float]] | None = None,
    q0: list[float] | None = None,
    gravity: bool = True,
    stiffness: float = 0.0,
    damping: float = 0.0,
) -> Scene:
    """Links of 0.1 x 0.01 x 0.01 m and 1 kg along x, revolute joints (default about y)."""
    axes = axes or [(0.0, 1.0, 0.0)] * n
    q0 = q0 or [0.0] * n
    bodies, joints = [], []
    half = se3.make_transform(None, (LINK / 2, 0, 0))
    for i in range(n):
        bodies.append(box_body(f"link{i}", 1.0, (LINK, 0.01, 0.01)))
        joints.append(
            JointSpec(
                f"j{i}",
                "revolute",
                None if i == 0 else f"link{i - 1}",
                f"link{i}",
                frame_parent=np.eye(4) if i == 0 else half,
                frame_child=se3.inverse(half),
                axis=axes[i],
                q0=[q0[i]],
                stiffness=stiffness,
                damping=damping,
            )
        )
    return Scene(
        f"chain{n}",
        tuple(bodies),
        tuple(joints),
        gravity=np.array([0, 0, -9.81]) if gravity else np.zeros(3),
    )


def spherical_double_pendulum() -> Scene:
    """Two 0.01 x 0.01 x 0.1 m links on exponential-coordinate spherical joints."""
    half = se3.make_transform(None, (0, 0, -LINK / 2))
    bodies = (box_body("a", 1.0, (0.01, 0.01, LINK)), box_body("b", 1.0, (0.01, 0.01, LINK)))
    joints = (
        JointSpec(
            "ja",
            "spherical",
            None,
            "a",
            frame_child=se3.inverse(half),
            q0=[0.6, 0.3, 0.0],
            qdot0=[0.0, 0.0, 12.0],
        ),
        JointSpec(
            "jb",
            "spherical",
            "a",
            "b",
            frame_parent=half,
            frame_child=se3.inverse(half),
            q0=[0.2, -0.5, 0.1],
            qdot0=[3.0, 0.0, -8.0],
        ),
    )
    return Scene("spherical_double_pendulum", bodies, joints)


def gimbal_pendulum(spin: float, width: float = 0.002) -> Scene:
    """A rod (``LINK`` x ``width`` x ``width`` m, 1 kg) on two revolute joints at one point,
    about the world z axis then about the rod's y axis, released horizontal while turning
    about z at ``spin`` [rad/s].  The rod hanging down (``q1 = pi/2``, its axis on z) is the
    chart's singular configuration: there the z coordinate only turns the rod about its own
    axis, so conservation of the z momentum ``I_z(q1) qdot0`` makes ``qdot0`` race near
    it (``I_z`` falls to the rod's axial inertia ``width^2 / 6`` kg m^2)."""
    half = se3.make_transform(None, (LINK / 2, 0, 0))
    bodies = (
        box_body("ring", 1e-3, (width, width, width)),
        box_body("rod", 1.0, (LINK, width, width)),
    )
    joints = (
        JointSpec("jz", "revolute", None, "ring", axis=(0, 0, 1), q0=[0.0], qdot0=[spin]),
        JointSpec("jy", "revolute", "ring", "rod", frame_child=se3.inverse(half), axis=(0, 1, 0)),
    )
    return Scene("gimbal-pendulum", bodies, joints, gravity=np.array([0, 0, -9.81]))


def run_without_contacts(scene: Scene, integrator: str, h: float, T: float, **options):  # noqa: ANN201
    """``(formulation, state at T)``: the reduced formulation with ``integrator`` (and its
    ``options``) stepped by ``h`` [s] over ``T`` [s], each step problem (no rows) solved
    directly, as the KKT backend would."""
    form = make_formulation("reduced", scene, integrator=integrator, **options)
    state: State = form.initial_state()
    empty = np.zeros(0)
    for _ in range(round(T / h)):
        problem = form.assemble(state, h)
        v = np.linalg.solve(problem.M.toarray(), problem.f)
        state = form.advance(state, StepSolution(v, empty, empty, empty), h)
    return form, state
