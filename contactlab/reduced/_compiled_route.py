"""What the reduced formulation's compiled steps with a kernel of their own share.

The exact-cone step (:class:`contactlab.reduced.cone_step.ConeContactStep`) and the
Stewart--Trinkle step by Lemke (:class:`contactlab.reduced.lemke_step.LemkeReducedStep`)
take the box-friction step's scene data and contacts
(:class:`~contactlab.reduced.compiled_step.CompiledContactStep`) and differ only in the
kernel they call and in what they carry to the next state.  :class:`RouteStep` holds the
rest, once: the contacts and their identities, the joint torques, the kernel's leading
arguments (the tree, the state, the contacts and the penetration feedback), the check of a
non-finite step and the step's record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.collision.contacts import ContactSet
from contactlab.contact import identity
from contactlab.models import compiled_box_step as B
from contactlab.reduced.compiled_step import CompiledContactStep
from contactlab.scene import State

if TYPE_CHECKING:
    from contactlab.simulator import Simulator

Array = np.ndarray


class RouteStep(CompiledContactStep):
    """A reduced compiled step with its own kernel (module docstring)."""

    def _contacts(self, state: State) -> tuple[ContactSet, identity.ContactTrack]:
        """The contacts at ``state`` and their identities (carried from its cache)."""
        previous = state.cache.get(identity.CACHE_KEY)
        contacts, track = self._tracked(state.E, previous)
        if track is None:
            track = identity.identify(contacts, previous)
        return contacts, track

    def _joint_torques(self, state: State) -> Array | None:
        """The joint torques at ``state`` (zero without a torque function); ``None`` when
        the function's answer has the wrong shape (the general path's broadcasting and
        messages then take the step)."""
        if self._torque is None:
            return self._no_tau
        q, qdot = np.asarray(state.q, dtype=float), np.asarray(state.qdot, dtype=float)
        tau = np.asarray(self._torque(state.t, q, qdot), dtype=float)
        if tau.shape != (self._nq,):
            return None
        return np.ascontiguousarray(tau)

    def _kernel_head(
        self, state: State, h: float, tau: Array, contacts: ContactSet
    ) -> tuple[Any, ...]:
        """The kernels' leading arguments: the tree, ``q``, ``qdot``, ``h``, ``tau``, the
        body maps, the contacts and the penetration feedback's ``beta`` and largest
        correction."""
        return (
            *self._step_head, np.ascontiguousarray(state.q, dtype=float),
            np.ascontiguousarray(state.qdot, dtype=float), h, tau, *self._bodies,
            contacts.body_a, contacts.body_b, contacts.point, contacts.normal, contacts.distance,
            contacts.mu, self._feedback.beta(h), self._feedback.max_correction,
        )  # fmt: skip

    @staticmethod
    def _check_finite(
        sim: Simulator, state: State, index: int, info: Any, K: Any, status: str,
        out: tuple[Array, ...],
    ) -> None:  # fmt: skip
        """Raise the simulator's failure when the kernel's step ``out`` (``q+``, ``qdot+``,
        ``v``, transforms, twists) is not finite (``info[K.I_FINITE]`` unset)."""
        if info[K.I_FINITE]:
            return
        q_new, v_new, v, E, phi = out
        if not np.all(np.isfinite(v)):
            raise sim._failure(index, state.t, f"non-finite velocities (status {status!r})")
        State(state.t + sim.dt, E, phi, q_new, v_new).check_finite()

    def _record(
        self, sim: Simulator, state: State, index: int, info: Any, K: Any, status: str,
        out: tuple[Array, ...], z: Array, cache: Mapping[str, Any], contacts: ContactSet,
        track: identity.ContactTrack, times: tuple[float, float, float, float],
    ) -> tuple[State, B.CompiledRecord]:  # fmt: skip
        """The new state (carrying ``cache``) and the step's record, from the kernel's step
        ``out`` (as :meth:`_check_finite`), impulses ``z`` and ``info`` (entries ``K.I_*``);
        ``times`` the clock at the start, after the collision, the set-up and the solve."""
        q_new, v_new, v, E, phi = out
        h = sim.dt
        new_state = State(state.t + h, E, phi, q_new, v_new, cache)
        row = B.step_row(
            info, K, index, float(new_state.t), h,
            (info[K.I_KINETIC], info[K.I_GRAVITY] + info[K.I_SPRING]),
            info[K.I_MOMENTUM : K.I_MOMENTUM + 6], info[K.I_LIMIT], status, len(contacts),
            times,
        )  # fmt: skip
        record = B.record_step(sim, self.formulation, state, contacts, track, index, row, v, z)
        return new_state, record


__all__ = ["RouteStep"]
