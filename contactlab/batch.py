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

On the default route of box piles (maximal, ``box-friction`` by ``pgs``, free boxes on
planes: the compiled pile step) the batch takes another way: one compiled call per step
for all copies (:class:`contactlab.maximal.batched_step.PileBatch`), each copy with its
own gravity, contact parameters and friction, and :meth:`Batch.run` gives each copy's own
:class:`~contactlab.runs.Run` (or the error its run would raise).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.collision import collide
from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError, ContactlabError
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


def simulators_for(
    scenes: Sequence[Scene],
    formulation: str | None,
    model: str | None,
    solver: str | None,
    model_options: Mapping[str, Any] | None = None,
    **options: Any,
) -> list[Simulator]:
    """One :class:`~contactlab.simulator.Simulator` per scene, with the same choices."""
    return [
        Simulator(s, formulation, model, solver, model_options=model_options, **options)
        for s in scenes
    ]


class Batch:
    """``N`` scenes stepped together (module docstring).

    Parameters
    ----------
    scenes : the copies (same ``dt``; free bodies only).
    formulation, model, solver : as for :class:`~contactlab.simulator.Simulator`; ``None``
        takes the scenes' defaults (for box piles: maximal, ``box-friction``, ``pgs``).
    model_options : the model's options; on the islands route ``islands`` is set to ``True``.
    simulator_options : further keywords of :class:`~contactlab.simulator.Simulator`
        (``strict``, ``divergence_guard``, ...).

    Attributes
    ----------
    route : ``"compiled"`` (one compiled call per step for all copies) or ``"islands"``
        (one merged scene solved island by island).
    """

    def __init__(
        self,
        scenes: Sequence[Scene],
        formulation: str | None = None,
        model: str | None = None,
        solver: str | None = None,
        model_options: Mapping[str, Any] | None = None,
        **simulator_options: Any,
    ) -> None:
        from contactlab.maximal.batched_step import PileBatch, batch_scope

        self.scenes = list(scenes)
        if not self.scenes:
            raise ConfigurationError("a batch needs at least one scene")
        self.piles: PileBatch | None = None
        try:
            sims = simulators_for(
                self.scenes, formulation, model, solver, model_options, **simulator_options
            )
        except ContactlabError:
            sims = []  # the merged scene's simulator says what is wrong
        if sims and all(not batch_scope(sim) for sim in sims):
            self.route = "compiled"
            self.piles = PileBatch(sims)
            return
        self.route = "islands"
        self.scene, self.slices = merge(self.scenes)
        self.simulator = Simulator(
            self.scene, formulation, model, solver,
            model_options={**dict(model_options or {}), "islands": True},
            collide=copies_collide(self.scenes, self.slices), **simulator_options,
        )  # fmt: skip

    def run(self, steps: int | None = None, duration: float | None = None) -> Any:
        """Run every copy: on the islands route the merged :class:`~contactlab.runs.Run`, on
        the compiled route each copy's outcome (see :meth:`trajectory` for one copy's)."""
        if self.piles is not None:
            return self.piles.runs(steps=steps, duration=duration)
        return self.simulator.run(steps=steps, duration=duration)

    def runs(self, steps: int | None = None, duration: float | None = None) -> list[Any]:
        """Each copy's own run (or the error its run would raise); compiled route only."""
        if self.piles is None:
            raise ConfigurationError(
                "each copy's own run needs the compiled route (box friction by pgs on free "
                "boxes); on the islands route use run() and trajectory()"
            )
        return self.piles.runs(steps=steps, duration=duration)

    def trajectory(self, run: Any, k: int) -> dict[str, NDArray[Any]]:
        """Copy ``k``'s trajectory: ``t`` and its bodies' ``position``, ``rotation``, ``twist``."""
        if isinstance(run, list):
            got = run[k]
            tr = got.trajectory if isinstance(got, Run) else got.run.trajectory
            return {key: tr[key] for key in ("t", "position", "rotation", "twist")}
        sl = self.slices[k]
        tr = run.trajectory
        return {
            "t": tr["t"],
            "position": tr["position"][:, sl],
            "rotation": tr["rotation"][:, sl],
            "twist": tr["twist"][:, sl],
        }
