"""Built-in whole-body transitions for ``contactlab optimize`` (robots of ``example-robot-data``).

* ``humanoid-squat``: the Unitree G1 humanoid (29 joints + floating base,
  35 coordinates) standing on slightly bent legs lowers itself into a
  deeper stance while raising both arms forward and turning its waist, in
  1 s, both feet welded to the ground (each foot a 6-component contact
  wrench), joint limits from the URDF (``limits=False``, ``--set limits=false``,
  drops them: the welded feet can then carry any posture and joints wind).

The robot comes from the ``humanoid-topple`` scenario (found through the
scenario registry); its joint limits are read from the URDF's ``<limit>``
elements.  The end pose is placed on the feet by
:meth:`~contactlab.optimize.transition.ContactTransition.place_on_feet`
(base and legs move, the arm and waist angles stay as given).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.optimize.transition import ContactTransition
from contactlab.reduced.model import Model
from contactlab.reduced.tree import Array

G1_URDF = "g1_description/urdf/g1_29dof_rev_1_0.urdf"
G1_FEET = ("left_ankle_roll_link", "right_ankle_roll_link")
#: Intervals of ``humanoid-squat`` by default (``--set knots=N``): at 10 (h = 0.1 s) the
#: default solver converges within a minute (results/optimize/transition.md); at 20 its
#: exact-Hessian phase, a dense eigen-decomposition over 917 unknowns per iteration, took
#: 150 iterations (11 min at load 8) without converging.
DEFAULT_KNOTS = 10


def urdf_limits(path: Path, model: Model) -> tuple[Array, Array]:
    """(nq,) lower and upper position limits of the revolute and prismatic joints of ``path``
    (``inf`` for the others and for a joint without a ``<limit>``)."""
    lower, upper = np.full(model.nq, -np.inf), np.full(model.nq, np.inf)
    tree = model.tree
    names = {s.name for s in tree.specs}
    for joint in ET.parse(path).getroot().iter("joint"):
        limit = joint.find("limit")
        name = joint.get("name")
        if limit is None or name not in names or joint.get("type") not in ("revolute", "prismatic"):
            continue
        i = tree.dofs(name).start
        lower[i] = float(limit.get("lower", "-inf"))
        upper[i] = float(limit.get("upper", "inf"))
    return lower, upper


def _set(tree: object, q: Array, values: dict[str, float]) -> Array:
    for name, value in values.items():
        q[tree.dofs(name)] = value  # type: ignore[attr-defined]
    return q


def humanoid_squat(
    knots: int = DEFAULT_KNOTS, duration: float = 1.0, limits: bool = True
) -> ContactTransition:
    """G1 from a light stance to a deeper one, arms raised and waist turned, feet welded."""
    from contactlab.reduced.urdf_geometry import example_robot_data
    from contactlab.scenario import get_scenario

    model = Model.from_scene(get_scenario("humanoid-topple").build())
    tree = model.tree
    lower, upper = urdf_limits(example_robot_data() / G1_URDF, model)
    q0 = tree.initial_coordinates()[0]

    def legs(hip: float) -> dict[str, float]:
        return {
            f"{side}_{joint}_joint": value
            for side in ("left", "right")
            for joint, value in (("hip_pitch", -hip), ("knee", 2 * hip), ("ankle_pitch", -hip))
        }

    start = _set(tree, q0.copy(), legs(0.15))
    arms = {
        "left_shoulder_pitch_joint": -1.0,
        "right_shoulder_pitch_joint": -1.0,
        "left_elbow_joint": 0.5,
        "right_elbow_joint": 0.5,
        "waist_yaw_joint": 0.3,
    }
    end = _set(tree, _set(tree, start.copy(), legs(0.3)), arms)
    keep = np.concatenate([np.arange(tree.dofs(j).start, tree.dofs(j).stop) for j in arms])
    probe = ContactTransition(model, duration, knots, start, start, G1_FEET)
    end = probe.place_on_feet(end, keep=keep)
    return ContactTransition(
        model, duration, knots, start, end, G1_FEET,
        lower=lower if limits else None, upper=upper if limits else None,
    )  # fmt: skip


#: name -> builder of a :class:`ContactTransition` (``contactlab optimize NAME``).
TRANSITIONS: dict[str, Callable[..., ContactTransition]] = {"humanoid-squat": humanoid_squat}


def transition(name: str, **parameters: object) -> ContactTransition:
    """The built-in transition ``name`` built with ``parameters`` (``knots``, ``duration``)."""
    if name not in TRANSITIONS:
        raise ConfigurationError(
            f"unknown transition {name!r}; built-in transitions: {', '.join(TRANSITIONS)}"
        )
    kinds: dict[str, Callable[[str], object]] = {
        "knots": int,
        "duration": float,
        "limits": lambda v: str(v).lower() in ("1", "true", "yes"),
    }
    unknown = sorted(set(parameters) - set(kinds))
    if unknown:
        raise ConfigurationError(f"{name}: no parameters {unknown}; it takes {', '.join(kinds)}")
    try:
        values = {k: kinds[k](v) if isinstance(v, str) else v for k, v in parameters.items()}
    except ValueError as exc:
        raise ConfigurationError(f"{name}: {exc} (knots is an integer, duration in s)") from exc
    return TRANSITIONS[name](**values)
