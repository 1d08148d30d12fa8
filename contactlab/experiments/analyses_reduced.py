"""Study 7's fidelity measurements of the reduced formulation (docs/reduced-integration.md).

- :func:`convergence`: the same scene stepped in maximal and in reduced
  coordinates at three step sizes; the largest body-position difference and
  how it shrinks with ``h``, beside the maximal run's own ``O(h)`` error.
- :func:`scene0_backends`: the scene-0 chain in reduced coordinates with every
  available backend of the frictionless model.
- :func:`gyroscopic_forms`: energy at the end of linearly implicit Euler with the
  explicit gyroscopic terms of eq. 2.73 as printed and with the default form.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from contactlab import se3
from contactlab.experiments.analyses import table_markdown
from contactlab.scene import JointSpec, Scene

#: step sizes [s] and duration [s] of the convergence runs
CONVERGENCE_H = (4e-3, 2e-3, 1e-3)
CONVERGENCE_T = 0.4


def tumbling_body() -> Scene:
    """A 0.3 x 0.2 x 0.1 m, 1 kg box on a free joint, 5 rad/s about its intermediate axis."""
    from contactlab.scene import Body

    d = np.array([0.3, 0.2, 0.1])
    inertia = (np.sum(d**2) - d**2) / 12.0  # box of 1 kg: (b^2 + c^2) / 12, ...
    frame = se3.make_transform(se3.exp_so3([0.3, -0.2, 0.5]), [1.0, 2.0, 0.5])
    twist = np.array([0.05, 5.0, 0.05, 0.3, -0.2, 0.1])
    joint = JointSpec("free", "free", None, "box", frame_parent=frame, q0=np.zeros(6), qdot0=twist)
    return Scene(
        "tumbling-box",
        (Body("box", 1.0, inertia),),
        joints=(joint,),
        gravity=np.zeros(3),
        initial_E=frame[None],
        initial_phi=twist[None],
    )


def rolling_ball(v0: float = 2.0, mu: float = 0.2, radius: float = 0.1) -> Scene:
    """A 1 kg ball on a free joint launched at ``v0`` [m/s] without spin on the ground."""
    from contactlab.bodies import body_from_shape
    from contactlab.scene import ContactParams
    from contactlab.shapes import Plane, Sphere

    body, _ = body_from_shape("ball", Sphere(radius=radius), mass=1.0, material="ball")
    frame = se3.make_transform(None, [0.0, 0.0, radius])
    twist = np.array([0.0, 0.0, 0.0, v0, 0.0, 0.0])
    joint = JointSpec("free", "free", None, "ball", frame_parent=frame, q0=np.zeros(6), qdot0=twist)
    return Scene(
        "rolling-ball",
        (body,),
        joints=(joint,),
        static_shapes=(Plane(),),
        initial_E=frame[None],
        initial_phi=twist[None],
        contact=ContactParams(mu=mu),
    )


def _convergence_scenes() -> list[tuple[str, Scene, str, str]]:
    """(label, scene, model, solver) of the convergence table."""
    from contactlab.scenario import get_scenario

    def named(name: str, **params: Any) -> Scene:
        return get_scenario(name).build(**params)

    return [
        ("chain (scene 0)", named("chain"), "frictionless", "kkt"),
        (
            "chain zyz (scene 1)",
            named("chain", n_links=3, joints="R", axes="zyz", angles_deg=(0.0, 90.0, 90.0)),
            "frictionless",
            "kkt",
        ),
        ("branching", named("branching"), "frictionless", "kkt"),
        ("redmax-spherical", named("redmax-spherical"), "frictionless", "kkt"),
        ("redmax-universal", named("redmax-universal"), "frictionless", "kkt"),
        ("tumbling box (free joint)", tumbling_body(), "frictionless", "kkt"),
        ("rolling ball (free joint)", rolling_ball(), "box-friction", "pgs"),
    ]


def _positions(scene: Scene, formulation: str, model: str, solver: str, h: float) -> np.ndarray:
    """Body positions (T+1, nb, 3) every ``CONVERGENCE_H[0]`` seconds up to ``CONVERGENCE_T``."""
    from contactlab.simulator import Simulator

    sim = Simulator(scene, formulation, model, solver, dt=h)
    state = sim.initial_state()
    stride = int(round(CONVERGENCE_H[0] / h))
    out = [state.E[:, :3, 3].copy()]
    for k in range(int(round(CONVERGENCE_T / h))):
        state, _ = sim.step(state)
        if (k + 1) % stride == 0:
            out.append(state.E[:, :3, 3].copy())
    return np.array(out)


def convergence() -> pd.DataFrame:
    """Largest maximal-versus-reduced position difference per scene and step size.

    ``diff_<h>`` [m]: largest distance of any body position between the two
    formulations over ``CONVERGENCE_T``, sampled every 4 ms; ``order`` is
    ``log2`` of the ratio between consecutive step sizes (1 = first order);
    ``maximal_self_<h>``: the maximal run's own change from ``h`` to ``h/2``, the
    size of its ``O(h)`` error.
    """
    rows = []
    for label, scene, model, solver in _convergence_scenes():
        entry: dict[str, Any] = {"scene": label, "model": model, "solver": solver}
        maximal = {}
        diffs = []
        for h in CONVERGENCE_H:
            pm = _positions(scene, "maximal", model, solver, h)
            pr = _positions(scene, "reduced", model, solver, h)
            maximal[h] = pm
            diffs.append(float(np.max(np.linalg.norm(pm - pr, axis=-1))))
            entry[f"diff_{h:g}"] = diffs[-1]
        for h, h2 in zip(CONVERGENCE_H[:-1], CONVERGENCE_H[1:]):
            entry[f"maximal_self_{h:g}"] = float(
                np.max(np.linalg.norm(maximal[h] - maximal[h2], axis=-1))
            )
        ratios = [a / b for a, b in zip(diffs[:-1], diffs[1:]) if b > 0]
        entry["order"] = float(np.log2(np.mean(ratios))) if ratios else float("nan")
        rows.append(entry)
    return pd.DataFrame(rows)


def scene0_backends() -> pd.DataFrame:
    """The scene-0 chain (2 s) in reduced coordinates with every available frictionless backend."""
    from contactlab.errors import IncompatibleError, StepFailure
    from contactlab.runspec import simulate
    from solvers import available_backends

    rows = []
    for solver in available_backends():
        entry: dict[str, Any] = {"solver": solver}
        try:
            run = simulate(
                "chain",
                {},
                formulation="reduced",
                model="frictionless",
                solver=solver,
                duration=2.0,
            )
        except IncompatibleError:
            continue
        except StepFailure as err:
            entry.update(status="failed", t_end_s=float("nan"), note=str(err)[:120])
        else:
            entry.update(status=run.status, t_end_s=float(run.steps["t"].iloc[-1]), note="")
        rows.append(entry)
    return pd.DataFrame(rows)


def gyroscopic_forms(
    scenes: tuple[tuple[str, str, dict[str, Any]], ...], t_end: float, steps: tuple[float, ...]
) -> pd.DataFrame:
    """``E(T) - E(0)`` [J] of linearly implicit Euler per gyroscopic form and step size."""
    from contactlab.reduced import Tree, step_linearly_implicit
    from contactlab.reduced.dynamics import energies
    from contactlab.reduced.kinematics import forward_kinematics
    from contactlab.scenario import get_scenario

    rows = []
    for label, name, params in scenes:
        tree = Tree.from_scene(get_scenario(name).build(**params))
        q0, qdot0 = tree.initial_coordinates()
        e0 = energies(forward_kinematics(tree, q0, qdot0))["total_energy"]
        entry: dict[str, Any] = {"scene": label}
        for form in ("explicit", "rotated_linear"):
            for h in steps:
                q, qdot = q0.copy(), qdot0.copy()
                for _ in range(int(round(t_end / h))):
                    q, qdot = step_linearly_implicit(tree, q, qdot, h, coriolis=form)
                e = energies(forward_kinematics(tree, q, qdot))["total_energy"]
                entry[f"dE_{form}_h{h:g}_J"] = e - e0
        rows.append(entry)
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame) -> str:
    """The table as markdown (all columns)."""
    return table_markdown(table, list(table.columns))
