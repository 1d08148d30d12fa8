"""Many copies of a scene stepped as one: one simulator, one step loop, islands per copy.

:func:`merge` stacks ``N`` scenes (the same scenario with other parameters or seeds:
their own bodies, poses, friction) into one scene whose bodies are the copies' bodies
in order; the copies occupy the same space but never touch: :func:`copies_collide`
collides each copy with its own scene and the world's shapes only and renumbers its
bodies.  :class:`Batch` steps the merged scene with one :class:`~contactlab.simulator.Simulator`
whose model solves island by island (model option ``islands``, :mod:`solvers.islands`),
so each copy's problem is solved on its own, exactly as in a run of its own with
islands on: assembly, identity tracking, warm starts, velocities and integration run
once per step for all copies, and each copy's trajectory is the one of its separate
run, bit for bit (``tests/contactlab/test_batch.py``).

Limits: the copies share the step size and gravity (a merged scene has one of each)
and have no joints (:func:`merge` refuses them, naming the copy); the model must pose
the solver layer's frictional-contact problem (``coulomb``, ``anitescu-hart``, ...), the
route on which islands are solved apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.collision import collide
from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.simulator import Run, Simulator


def merge(scenes: Sequence[Scene]) -> tuple[Scene, list[slice]]:
    """One scene holding every copy's bodies, and the slice of each copy's bodies in it."""
    if not scenes:
        raise ConfigurationError("a batch needs at least one scene")
    first = scenes[0]
    slices: list[slice] = []
    bodies: list[Any] = []
    for k, s in enumerate(scenes):
        if s.joints or s.constraints or s.forces or s.attachments:
            raise ConfigurationError(
                f"batch copy {k} ({s.name!r}) has joints, constraints, forces or attachments; "
                "a batch takes scenes of free bodies only: run it on its own"
            )
        if s.dt != first.dt or not np.array_equal(s.gravity, first.gravity):
            raise ConfigurationError(
                f"batch copy {k} has dt {s.dt} and gravity {list(s.gravity)}, copy 0 has "
                f"{first.dt} and {list(first.gravity)}: copies of a batch share both"
            )
        start = len(bodies)
        bodies.extend(replace(b, name=f"copy{k}/{b.name}") for b in s.bodies)
        slices.append(slice(start, len(bodies)))
    E = np.concatenate([np.asarray(s.initial_E) for s in scenes])
    phi = np.concatenate(
        [np.zeros((len(s.bodies), 6)) if s.initial_phi is None else s.initial_phi for s in scenes]
    )
    merged = replace(
        first, name=f"batch of {len(scenes)} {first.name}", bodies=tuple(bodies),
        initial_E=E, initial_phi=phi, exclude_pairs=(), params={"copies": len(scenes)},
    )  # fmt: skip
    return merged, slices


def copies_collide(scenes: Sequence[Scene], slices: Sequence[slice]) -> Any:
    """A collision function for the merged scene: each copy against itself and the world."""

    def run(_: Scene, E: NDArray[np.float64]) -> ContactSet:
        parts = []
        for s, sl in zip(scenes, slices, strict=True):
            c = collide(s, E[sl])
            off = sl.start
            parts.append(
                replace(
                    c,
                    body_a=np.where(c.body_a >= 0, c.body_a + off, c.body_a),
                    body_b=np.where(c.body_b >= 0, c.body_b + off, c.body_b),
                )
            )
        return ContactSet.concatenate(parts)

    return run


class Batch:
    """``N`` scenes stepped together (module docstring).

    Parameters
    ----------
    scenes : the copies (same ``dt`` and gravity, free bodies only).
    formulation, model, solver : as for :class:`~contactlab.simulator.Simulator`.
    model_options : the model's options; ``islands`` is set to ``True``.
    """

    def __init__(
        self,
        scenes: Sequence[Scene],
        formulation: str = "maximal",
        model: str = "coulomb",
        solver: str = "nsgs",
        model_options: Mapping[str, Any] | None = None,
        **simulator_options: Any,
    ) -> None:
        self.scenes = list(scenes)
        self.scene, self.slices = merge(self.scenes)
        self.simulator = Simulator(
            self.scene, formulation, model, solver,
            model_options={**dict(model_options or {}), "islands": True},
            collide=copies_collide(self.scenes, self.slices), **simulator_options,
        )  # fmt: skip

    def run(self, steps: int | None = None, duration: float | None = None) -> Run:
        """Run every copy; the merged run (see :meth:`trajectory` for one copy's)."""
        return self.simulator.run(steps=steps, duration=duration)

    def trajectory(self, run: Run, k: int) -> dict[str, NDArray[Any]]:
        """Copy ``k``'s trajectory: ``t`` and its bodies' ``position``, ``rotation``, ``twist``."""
        sl = self.slices[k]
        tr = run.trajectory
        return {
            "t": tr["t"],
            "position": tr["position"][:, sl],
            "rotation": tr["rotation"][:, sl],
            "twist": tr["twist"][:, sl],
        }
