"""Sleeping islands: the bodies of a pile at rest leave the step until something touches them.

With the maximal formulation's option ``sleep`` (off by default), a run keeps, for every
body, whether it sleeps and for how many steps it has rested:

- a body *rests* in a step when its speed and its angular speed times its radius of
  gyration are both below ``sleep_speed`` [m/s];
- at the end of a step, an *island* (the bodies joined by that step's contacts; the static
  world joins nothing) falls asleep when every one of its bodies has rested for
  ``sleep_steps`` steps in a row: their twists are set to zero and they keep their poses;
- a sleeping body is held where it is: its free momentum is zero (no gravity acts), and
  the contacts among sleeping bodies and with the world are left out of the step;
- a contact between an awake body and a sleeping one wakes the sleeping body's whole
  island before the step is posed (the contact is kept), so a box dropped on a sleeping
  pile meets a pile that moves.

Bodies whose twists are zero and whose contacts are left out cost nothing in the solve,
which is what sleeping saves on a pile at rest. It changes the trajectory: a sleeping body
stays exactly where it fell asleep, while an awake one keeps creeping at the solver's
tolerance. The option applies to scenes of free bodies under gravity (no joints,
attachments, force elements or applied joint torques) with the default integrator.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from solvers.islands import pair_labels

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(frozen=True)
class Sleep:
    """Which bodies sleep, and for how many steps in a row each has rested.

    asleep : (nb,) whether the body sleeps.
    rested : (nb,) steps in a row the body has rested (0 after a step it moved).
    island : (nb,) the sleeping island of a sleeping body (-1 for an awake one).
    """

    asleep: BoolArray
    rested: IntArray
    island: IntArray

    @classmethod
    def awake(cls, n_bodies: int) -> Sleep:
        """Every body awake, none rested yet."""
        return cls(
            np.zeros(n_bodies, dtype=bool),
            np.zeros(n_bodies, dtype=np.int64),
            np.full(n_bodies, -1, dtype=np.int64),
        )

    @property
    def sleeping(self) -> int:
        """The number of sleeping bodies."""
        return int(self.asleep.sum())


@dataclass(frozen=True)
class SleepRule:
    """When a body rests and how long an island rests before it sleeps."""

    speed: float  # [m/s]
    steps: int
    gyration: Array  # (nb,) radius of gyration of every body [m]

    @classmethod
    def build(cls, scene: Any, mass_diagonal: Array, speed: Any, steps: Any) -> SleepRule:
        """Check the scene and the options; ``mass_diagonal`` is (6 nb,) angular first."""
        blocked = [
            (what, bool(getattr(scene, attr, ())))
            for what, attr in (
                ("joints", "joints"),
                ("attachments", "attachments"),
                ("force elements", "forces"),
            )
        ]
        torque = getattr(scene, "joint_torque", None)
        blocked.append(("applied joint torques", torque is not None))
        found = [what for what, present in blocked if present]
        if found:
            raise ConfigurationError(
                f"scene {scene.name!r} has {', '.join(found)}; sleeping islands apply to "
                "scenes of free bodies under gravity: run it with sleep=false"
            )
        try:
            speed = float(speed)
        except (TypeError, ValueError):
            speed = float("nan")
        if not np.isfinite(speed) or speed <= 0:
            raise ConfigurationError(
                f"sleep_speed must be a positive speed in m/s, got {speed!r}; for example 0.01"
            )
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
            raise ConfigurationError(
                f"sleep_steps must be a whole number of steps >= 1, got {steps!r}; for example 20"
            )
        d = np.asarray(mass_diagonal, dtype=float).reshape(-1, 6)
        gyration = np.sqrt(d[:, :3].max(axis=1) / d[:, 3])
        return cls(speed, int(steps), gyration)


def before_step(sleep: Sleep, contacts: Any) -> tuple[Sleep, Any]:
    """Wake the islands an awake body touches; leave out the sleeping bodies' contacts.

    Returns the sleep state the step is posed with and the contacts it keeps.
    """
    if contacts is None or len(contacts) == 0 or not sleep.asleep.any():
        return sleep, contacts
    a, b = contacts.body_a, contacts.body_b
    asleep = sleep.asleep
    sleeps_a = (a >= 0) & asleep[np.maximum(a, 0)]
    sleeps_b = (b >= 0) & asleep[np.maximum(b, 0)]
    awake_a = (a >= 0) & ~sleeps_a
    awake_b = (b >= 0) & ~sleeps_b
    # a sleeping body touched by an awake one wakes with its whole island
    touched = np.concatenate([b[awake_a & sleeps_b], a[awake_b & sleeps_a]])
    if touched.size:
        woken = np.isin(sleep.island, np.unique(sleep.island[touched]))
        asleep = asleep & ~woken
        sleep = Sleep(asleep, np.where(woken, 0, sleep.rested), np.where(woken, -1, sleep.island))
        sleeps_a = (a >= 0) & asleep[np.maximum(a, 0)]
        sleeps_b = (b >= 0) & asleep[np.maximum(b, 0)]
    # kept: every contact with an awake body on either side
    keep = ((a >= 0) & ~sleeps_a) | ((b >= 0) & ~sleeps_b)
    return sleep, (contacts if keep.all() else contacts.select(keep))


def after_step(sleep: Sleep, rule: SleepRule, phi: Array, contacts: Any) -> tuple[Sleep, Array]:
    """Count the rested steps and put to sleep the islands that rested long enough.

    ``phi`` (nb, 6) are the step's new twists, ``contacts`` the contacts it was posed
    with. Returns the new sleep state and the twists (zero for the bodies now asleep).
    """
    n = phi.shape[0]
    speed = np.sqrt((phi[:, 3:] ** 2).sum(axis=1))
    spin = np.sqrt((phi[:, :3] ** 2).sum(axis=1)) * rule.gyration
    rests = (speed < rule.speed) & (spin < rule.speed)
    rested = np.where(sleep.asleep, sleep.rested, np.where(rests, sleep.rested + 1, 0))
    if contacts is None or len(contacts) == 0:
        a = b = np.zeros(0, dtype=np.int64)
    else:
        a = np.ascontiguousarray(contacts.body_a, dtype=np.int64)
        b = np.ascontiguousarray(contacts.body_b, dtype=np.int64)
    label = pair_labels(n, a, b)
    ready = (rested >= rule.steps) | sleep.asleep
    # an island falls asleep when all its bodies are ready; count the bodies not ready
    not_ready = np.bincount(label, weights=~ready, minlength=int(label.max()) + 1 if n else 0)
    falls = ~sleep.asleep & (not_ready[label] == 0)
    if not falls.any():
        return Sleep(sleep.asleep, rested, sleep.island), phi
    first = int(sleep.island.max()) + 1
    island = np.where(falls, first + label, sleep.island)
    phi = np.where(falls[:, None], 0.0, phi)
    return Sleep(sleep.asleep | falls, rested, island), phi


def hold(f: Array, v: Array, asleep: BoolArray) -> tuple[Array, Array]:
    """The free momentum and velocity of a step with the sleeping bodies held (zero)."""
    mask = np.repeat(asleep, 6)
    return np.where(mask, 0.0, f), np.where(mask, 0.0, v)
