"""The trajectory of a run: its length checked before anything is allocated, and the
preallocated arrays filled frame by frame."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.formulation import Formulation
from contactlab.scene import Scene, State
from contactlab.step_table import StepTable

#: Most steps one run may take: beyond it a run is a mistake in ``--dt``, ``--steps`` or
#: ``--duration`` (1e7 steps of the pendulum already take hours), refused before anything
#: is allocated.
MAX_STEPS = 10_000_000
#: Largest share of the available memory a run's preallocated trajectory may take.
MEMORY_SHARE = 0.5


def run_length(
    scene: Scene,
    dt: float | None = None,
    steps: int | None = None,
    duration: float | None = None,
    frame_bytes: int | None = None,
) -> int:
    """Number of steps of a run of ``scene`` (see :meth:`Simulator.n_steps`), checked.

    ``dt`` defaults to the scene's, ``duration`` to the scene's; ``frame_bytes``
    (bytes per recorded frame) to the maximal formulation's.
    """
    h = scene.dt if dt is None else dt
    if not (isinstance(h, (int, float)) and np.isfinite(h) and h > 0):
        raise ConfigurationError(f"step size dt must be a positive number [s], got {dt!r}")
    if steps is not None and duration is not None:
        raise ConfigurationError("give either steps or duration, not both")
    if steps is not None:
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ConfigurationError(f"steps must be a positive integer, got {steps!r}")
        if steps > MAX_STEPS:
            raise ConfigurationError(
                f"--steps {steps} is more than the limit of {MAX_STEPS:,} steps per run; "
                "run fewer steps or use a larger --dt"
            )
        n = int(steps)
    else:
        T = scene.duration if duration is None else duration
        if not (isinstance(T, (int, float)) and np.isfinite(T) and T > 0):
            raise ConfigurationError(f"duration must be a positive number [s], got {T!r}")
        count = T / h
        if not count <= MAX_STEPS + 0.5:
            raise ConfigurationError(
                f"a duration of {T:g} s at --dt {h:g} s is {count:.3g} steps, more than the "
                f"limit of {MAX_STEPS:,} steps per run; use a larger --dt or a shorter --duration"
            )
        n = max(1, int(round(count)))
    frame = 8 * (22 * scene.n_bodies + 1) if frame_bytes is None else frame_bytes
    need = (n + 1) * frame + n * StepTable.ROW_BYTES
    available = available_memory()
    if available is not None and need > MEMORY_SHARE * available:
        raise ConfigurationError(
            f"{n:,} steps of {scene.n_bodies} bodies need {need / 2**30:.3g} GiB for the "
            f"trajectory, more than {MEMORY_SHARE:.0%} of the {available / 2**30:.3g} GiB of "
            "memory available; run fewer steps (a larger --dt or a shorter --duration)"
        )
    return n


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation (``None``: unknown on this system)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


class TrajectoryRecorder:
    """Preallocated trajectory arrays filled frame by frame."""

    @staticmethod
    def frame_bytes(scene: Scene, formulation: Formulation) -> int:
        """Bytes of one frame (the body transforms and twists, and q, qdot if reduced)."""
        nq = int(getattr(getattr(formulation, "tree", None), "nq", 0) or 0)
        return 8 * (scene.n_bodies * (16 + 6) + 2 * nq + 1)

    def __init__(self, formulation: Formulation, scene: Scene, state: State, n: int) -> None:
        self.formulation = formulation
        self._maximal = formulation.maximal
        nb = scene.n_bodies
        self.names = np.array([b.name for b in scene.bodies], dtype=str)
        self.t = np.zeros(n + 1)
        self.E = np.zeros((n + 1, nb, 4, 4))
        self.phi = np.zeros((n + 1, nb, 6))
        self.q = None if state.q is None else np.zeros((n + 1, np.size(state.q)))
        self.qdot = None if state.qdot is None else np.zeros((n + 1, np.size(state.qdot)))
        self.count = 0
        self.add(state)

    def add(self, state: State) -> None:
        k = self.count
        E, phi = self._maximal(state)
        self.t[k] = state.t
        self.E[k] = E
        self.phi[k] = phi
        q, qdot = state.q, state.qdot
        if self.q is not None and q is not None:
            self.q[k] = q if type(q) is np.ndarray and q.ndim == 1 else np.asarray(q).reshape(-1)
        if self.qdot is not None and qdot is not None:
            self.qdot[k] = (
                qdot
                if type(qdot) is np.ndarray and qdot.ndim == 1
                else np.asarray(qdot).reshape(-1)
            )
        self.count = k + 1

    def arrays(self) -> dict[str, NDArray[Any]]:
        k = self.count
        out: dict[str, NDArray[Any]] = {
            "t": self.t[:k].copy(),
            "body_names": self.names,
            "position": self.E[:k, :, :3, 3].copy(),
            "rotation": self.E[:k, :, :3, :3].copy(),
            "twist": self.phi[:k].copy(),
        }
        if self.q is not None:
            out["q"] = self.q[:k].copy()
        if self.qdot is not None:
            out["qdot"] = self.qdot[:k].copy()
        return out
