"""Shared fixtures: one joint of every kind, in a random pose."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import se3
from contactlab.joints.kinds import make_joint
from contactlab.joints.maps import Joint


def _curve_frames(rng: np.random.Generator, m: int = 5) -> np.ndarray:
    return se3.make_transform(
        se3.exp_so3(0.6 * rng.standard_normal((m, 3))), rng.standard_normal((m, 3))
    )


def every_joint(seed: int = 0) -> dict[str, Joint]:
    """One joint per registered kind (composites chained three deep)."""
    rng = np.random.default_rng(seed)
    axis = rng.standard_normal(3)
    surface = np.zeros((5, 4, 6))
    surface[..., :3] = rng.standard_normal((5, 4, 3))
    surface[..., 3:] = 0.3 * rng.standard_normal((5, 4, 3))
    return {
        "fixed": make_joint("fixed"),
        "revolute": make_joint("revolute", axis),
        "prismatic": make_joint("prismatic", axis),
        "planar": make_joint("planar", axis),
        "planar_z": make_joint("planar"),
        "translational": make_joint("translational"),
        "universal": make_joint("universal"),
        "universal_axes": make_joint("universal", params={"axes": rng.standard_normal((2, 3))}),
        "spherical": make_joint("spherical"),
        "spherical_euler": make_joint("spherical_euler"),
        "free": make_joint("free"),
        "free_translation_first": make_joint("free", params={"order": "translation_first"}),
        "cylindrical": make_joint("cylindrical", axis),
        "composite3": make_joint(
            "composite",
            params={
                "joints": [
                    {"kind": "universal"},
                    {"kind": "prismatic", "axis": axis},
                    {"kind": "spherical"},
                ]
            },
        ),
        "spline_curve": make_joint("spline_curve", params={"frames": _curve_frames(rng)}),
        "spline_curve_cyclic": make_joint(
            "spline_curve", params={"frames": _curve_frames(rng, 4), "cyclic": True}
        ),
        "spline_surface": make_joint("spline_surface", params={"values": surface}),
    }


JOINTS = every_joint()


@pytest.fixture(params=sorted(JOINTS))
def joint(request: pytest.FixtureRequest) -> Joint:
    return JOINTS[request.param]


def box_body(name: str, mass: float, dims: tuple[float, float, float]):  # noqa: ANN201
    """A cuboid body of the given mass [kg] and side lengths [m]."""
    from contactlab.scene import Body

    x, y, z = dims
    inertia = mass / 12.0 * np.array([y * y + z * z, z * z + x * x, x * x + y * y])
    return Body(name, mass, inertia)


def random_tree_scene(
    seed: int, kinds: list[str] | None = None, n: int | None = None, gravity: bool = True
):  # noqa: ANN201
    """A random tree (random parents, frames, inertias) using the given joints.

    ``kinds`` are keys of :data:`JOINTS`; each becomes one joint (``custom``
    kind wrapping the shared instance) unless it is revolute/prismatic, which
    use their registered kinds so the compiled path is exercised.
    """
    from contactlab.scene import JointSpec, Scene

    rng = np.random.default_rng(seed)
    kinds = sorted(JOINTS) if kinds is None else kinds
    if n is not None:
        kinds = [kinds[i % len(kinds)] for i in range(n)]
    bodies, joints = [], []
    for i, kind in enumerate(kinds):
        name = f"b{i}"
        bodies.append(box_body(name, rng.uniform(0.5, 2.0), tuple(rng.uniform(0.1, 1.0, 3))))
        parent = None if i == 0 else (f"b{rng.integers(0, i)}" if rng.random() < 0.8 else None)
        fp = se3.random_transform(rng, scale=0.5)
        fc = se3.random_transform(rng, scale=0.5)
        if kind in ("revolute", "prismatic"):
            joint_kw = {"kind": kind, "axis": rng.standard_normal(3)}
        else:
            joint_kw = {"kind": "custom", "params": {"joint": JOINTS[kind]}}
        joints.append(
            JointSpec(
                f"j{i}", parent=parent, child=name, frame_parent=fp, frame_child=fc, **joint_kw
            )
        )
    return Scene(
        "random",
        tuple(bodies),
        tuple(joints),
        gravity=np.array([0, 0, -9.81]) if gravity else np.zeros(3),
    )


def random_coordinates(tree, rng):  # noqa: ANN001, ANN201
    q = np.concatenate([j.sample(rng) for j in tree.joints])
    return q, rng.standard_normal(tree.nq)
