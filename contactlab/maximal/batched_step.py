"""Many copies of a box pile stepped by one compiled call per step.

:class:`PileBatch` runs ``N`` scenes of free boxes on planes (the same scenario with other
seeds or parameters) on the default maximal route, box friction by ``pgs``, whose steps
:class:`~contactlab.maximal.compiled_step.CompiledContactStep` takes in compiled code.
Each step is one call of :func:`contactlab.maximal._batch_kernels.batch_step` for all
copies: per copy the compiled box collision, the contact identities and the compiled
contact step, over the copies' arrays concatenated with offsets.  Python runs once per
step for all copies: the vectorized checks of a run (usable status, finite state,
``strict``, the divergence guard) over all copies at once, and per copy only when a check
flags it (then the copy's own :class:`~contactlab.simulator.Simulator` words the error).

Every copy gets the :class:`~contactlab.runs.Run` its own ``Simulator.run`` gives: the
same steps (the same kernels on the same arrays), the same table of metrics, trajectory,
status and message, the same unconverged-step policy (a capped step keeps its iterate and
makes that copy's run ``"inaccurate"``; under ``strict`` it stops that copy only) and the
same failures (a copy that fails or diverges stops; the others go on).  Time columns
differ: collision, assembly and solve are one call for all copies, so a copy's
``solve_time_s`` and ``step_time_s`` are its share of the step's call and of the whole
step, in proportion to its work (bodies plus contact rows times sweeps), and its
``collision_time_s`` and ``assembly_time_s`` are 0; its ``wall_time_s`` is its share of
the batch's.  A copy whose step the kernel leaves to the general path (a decoupled
contact row, a box far larger than the others) is run again on its own afterwards.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError, ContactlabError, StateError
from contactlab.maximal import _pile_kernels as P
from contactlab.maximal.assembly import MIDPOINT_ITERATIONS
from contactlab.models import compiled_box_step as B
from contactlab.runs import Run
from contactlab.scene import State
from contactlab.step_table import StepTable
from contactlab.trajectory import TrajectoryRecorder

Array = NDArray[np.float64]

#: outcome of a copy: its run, or the error its run would raise (with ``run`` attached
#: when a step was taken, as :meth:`~contactlab.simulator.Simulator.run` attaches it)
Outcome = Run | ContactlabError

_USABLE = (P.OPTIMAL, P.MAX_ITERATIONS)
_STATUS = {P.OPTIMAL: "optimal", P.MAX_ITERATIONS: "max_iterations"}
_INT_COLUMNS = frozenset({"step", "iterations", "outer_iterations", "n_contacts"})


def batch_scope(sim: Any) -> str:
    """Why a simulator's steps cannot be batched (empty when they can)."""
    from contactlab.collision.detect import Collider, collider_for
    from contactlab.contact_pairs import excluded_pairs

    if sim.compiled is None or type(sim.compiled).__name__ != "CompiledContactStep":
        return "the route is not the compiled pile step (box friction by pgs on free bodies)"
    if getattr(sim.formulation, "sleep", None) is not None:
        return "sleeping islands (the formulation's option sleep)"
    scene = sim.scene
    if excluded_pairs(scene).size:
        return "the scene excludes pairs from collision"
    col: Collider = collider_for(scene)
    if not col.boxes_only or col._posed.size:
        return "the scene has shapes other than boxes at their body's origin and planes"
    size = np.asarray(col.table.size, dtype=float)
    if size.shape[0]:
        # the grid's "large box" test (contactlab.collision.broadphase.grid_pairs) can
        # never fire: the widest extent a box can take is within its factor of the
        # narrowest any box can take
        widest = float(np.max(2.0 * np.linalg.norm(size, axis=1))) + col.margin
        narrowest = float(np.min(2.0 * np.max(size, axis=1) / np.sqrt(3.0))) + col.margin
        from contactlab.collision.broadphase import LARGE_FACTOR

        if widest > LARGE_FACTOR * narrowest:
            return "the scene's boxes differ in size by more than the broad phase's grid allows"
    return ""


class PileBatch:
    """``N`` copies of a pile on the compiled route, one call per step (module docstring).

    Parameters
    ----------
    simulators : one :class:`~contactlab.simulator.Simulator` per copy, each on the
        compiled pile step (:func:`batch_scope`), with the same step size, model options,
        slip threshold, ``strict`` and divergence guard setting.
    """

    def __init__(self, simulators: Sequence[Any]) -> None:
        if not simulators:
            raise ConfigurationError("a batch needs at least one scene")
        self.sims = list(simulators)
        first = self.sims[0]
        for k, sim in enumerate(self.sims):
            why = batch_scope(sim)
            if why:
                raise ConfigurationError(
                    f"batch copy {k} ({sim.scene.name!r}) cannot be batched: {why}"
                )
            same = (
                sim.dt == first.dt and sim.model_options == first.model_options
                and sim.slip_threshold == first.slip_threshold and sim.strict == first.strict
                and sim.divergence_guard == first.divergence_guard
                and sim.names == first.names
            )  # fmt: skip
            if not same:
                raise ConfigurationError(
                    f"batch copy {k} differs from copy 0 in its step size, model, solver, "
                    "options, slip threshold, strict or guard setting: copies of a batch "
                    "share them"
                )
        self._tables()

    def _tables(self) -> None:
        """The copies' static arrays, concatenated with offsets."""
        from contactlab.collision.detect import collider_for

        sims = self.sims
        n = len(sims)
        self.n = n
        nbs = np.array([s.scene.n_bodies for s in sims], dtype=np.int64)
        self.boff = np.concatenate([[0], np.cumsum(nbs)]).astype(np.int64)
        comp = [s.compiled for s in sims]
        self.mdiag = np.ascontiguousarray(np.concatenate([c._mdiag for c in comp]).reshape(-1, 6))
        self.gravity = np.ascontiguousarray([c._gravity for c in comp], dtype=float)
        h = float(sims[0].dt)
        self.h = h
        self.beta = np.array([c._feedback.beta(h) for c in comp], dtype=float)
        self.max_corr = np.array([c._feedback.max_correction for c in comp], dtype=float)
        tabs = [collider_for(s.scene) for s in sims]
        self.margin = np.array([c.margin for c in tabs], dtype=float)
        t = [c.table for c in tabs]
        self.soff = np.concatenate([[0], np.cumsum([x.body.shape[0] for x in t])]).astype(np.int64)
        cat = np.concatenate
        self.s_body = np.ascontiguousarray(cat([x.body for x in t]), dtype=np.int64)
        self.s_local = np.ascontiguousarray(cat([x.local for x in t]), dtype=np.int64)
        self.s_material = np.ascontiguousarray(cat([x.material for x in t]), dtype=np.int64)
        self.s_size = np.ascontiguousarray(cat([x.size for x in t]).reshape(-1, 3), dtype=float)
        self.s_pose = np.ascontiguousarray(cat([x.pose for x in t]).reshape(-1, 4, 4), dtype=float)
        self.poff = np.concatenate([[0], np.cumsum([x.plane_normal.shape[0] for x in t])]).astype(
            np.int64
        )
        self.pl_normal = np.ascontiguousarray(
            cat([x.plane_normal for x in t]).reshape(-1, 3), dtype=float
        )
        self.pl_offset = np.ascontiguousarray(cat([x.plane_offset for x in t]), dtype=float)
        self.pl_local = np.ascontiguousarray(cat([x.plane_local for x in t]), dtype=np.int64)
        self.pl_material = np.ascontiguousarray(cat([x.plane_material for x in t]), dtype=np.int64)
        mus = [np.ascontiguousarray(x.mu_table, dtype=float) for x in t]
        self.mdim = np.array([m.shape[0] for m in mus], dtype=np.int64)
        self.moff = np.concatenate([[0], np.cumsum([m.size for m in mus])]).astype(np.int64)
        self.mu_flat = np.ascontiguousarray(cat([m.reshape(-1) for m in mus]), dtype=float)
        self.copy_of_body = np.repeat(np.arange(n), nbs)
        model = sims[0].model
        cap = model.options["max_iter"]
        self.tol = float(model.tol)
        self.max_iter = 10000 if cap is None else int(cap)
        # the copies' compiled steps finish by subspace minimization or not, all alike
        finishes = {bool(s.compiled.finish) for s in sims}
        if len(finishes) != 1:
            raise ConfigurationError("the copies of a batch must all finish their steps alike")
        self.finish = finishes.pop()
        # ... and solve them island by island or whole, all alike
        split = {bool(s.compiled.islands) for s in sims}
        if len(split) != 1:
            raise ConfigurationError(
                "the copies of a batch must all solve their steps alike (compiled.islands)"
            )
        self.islands = split.pop()

    # -- the run -------------------------------------------------------------------------

    def runs(self, steps: int | None = None, duration: float | None = None) -> list[Outcome]:
        """Run every copy ``steps`` steps (or ``duration`` [s]); each copy's outcome."""
        from contactlab.maximal import _batch_kernels as K

        sims, n = self.sims, self.n
        counts = {sim.n_steps(steps, duration) for sim in sims}
        if len(counts) != 1:
            raise ConfigurationError(
                f"the copies' durations round to different step counts {sorted(counts)}: "
                "copies of a batch run the same number of steps"
            )
        T = counts.pop()
        wall_start = time.perf_counter()
        outcome: list[Outcome | None] = [None] * n
        states = []
        initial: list[dict[str, float]] = []
        guards: list[Any] = []
        active = np.ones(n, dtype=np.bool_)
        for k, sim in enumerate(sims):
            try:
                state = sim.initial_state()
                init = dict(sim.formulation.metrics(state))
                guard = sim._run_guard(state, init, T)
            except ContactlabError as err:
                outcome[k] = err
                active[k] = False
                state, init, guard = None, {}, None
            states.append(state)
            initial.append(init)
            guards.append(guard if sim.divergence_guard else None)
        nb = int(self.boff[-1])
        E = np.empty((nb, 4, 4))
        phi = np.empty((nb, 6))
        for k, state in enumerate(states):
            sl = slice(self.boff[k], self.boff[k + 1])
            if state is None:
                E[sl], phi[sl] = np.eye(4), 0.0
            else:
                E[sl], phi[sl] = state.E, state.phi
        t0 = float(states[0].t) if states[0] is not None else 0.0
        hist_E = np.empty((T + 1, nb, 4, 4))
        hist_phi = np.empty((T + 1, nb, 6))
        hist_t = np.empty(T + 1)
        hist_E[0], hist_phi[0], hist_t[0] = E, phi, t0
        info_hist = np.zeros((T, n, P.N_INFO))
        nc_hist = np.zeros((T, n), dtype=np.int64)
        share_hist = np.zeros((T, n, 2))
        rows_done = np.full(n, T, dtype=np.int64)
        rerun = np.zeros(n, dtype=np.bool_)
        guard_pre = _GuardCheck(self, guards) if any(g is not None for g in guards) else None
        # the previous step's contacts of every copy (identities, warm starts)
        coff = np.zeros(n + 1, dtype=np.int64)
        old_ids = np.zeros(0, dtype=np.int64)
        old_pair = np.zeros((0, 4), dtype=np.int64)
        old_point = np.zeros((0, 3))
        old_normal = np.zeros(0)
        old_friction = np.zeros((0, 3))
        next_id = np.zeros(n, dtype=np.int64)
        sim0 = sims[0]
        t = t0
        work = np.diff(self.boff).astype(float)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            for i in range(T):
                if not active.any():
                    break
                start = time.perf_counter()
                (E_new, phi_new, coff, old_ids, _, old_pair, old_point, dist, old_normal,
                 old_friction, next_id, info) = K.batch_step(
                    active, self.boff, self.mdiag, E, phi, self.gravity, self.h,
                    MIDPOINT_ITERATIONS, self.soff, self.s_body, self.s_local, self.s_material,
                    self.s_size, self.s_pose, self.poff, self.pl_normal, self.pl_offset,
                    self.pl_local, self.pl_material, self.moff, self.mdim, self.mu_flat,
                    self.margin, self.beta, self.max_corr, coff, old_ids, old_pair, old_point,
                    old_normal, old_friction, next_id, self.tol, self.max_iter, 1.0, 8,
                    sim0.slip_threshold, self.finish, self.islands,
                )  # fmt: skip
                called = time.perf_counter()
                t_before, t = t, t + self.h
                code = info[:, P.I_STATUS].astype(np.int64)
                nc = np.diff(coff)
                stepped = active.copy()
                # the checks of Simulator.step and CompiledContactStep.step, all copies at once
                usable = np.isin(code, _USABLE)
                for k in np.flatnonzero(active & ~usable).tolist():
                    if code[k] in (P.DECOUPLED, K.LARGE_BOX, K.WIDE_KEYS, K.NONFINITE_POSES):
                        rerun[k] = True  # the general path's step: the copy runs alone
                        active[k] = False
                        continue
                    status = _STATUS.get(int(code[k]), "numerical_error")
                    failure = sims[k]._failure(i, t_before, f"solver status {status!r}")
                    self._stop(k, i, failure, active, rows_done, outcome)
                if not (np.all(np.isfinite(phi_new)) and np.all(np.isfinite(E_new))):
                    self._nonfinite(
                        i, t_before, t, E_new, phi_new, code, active, rows_done, outcome
                    )
                info_hist[i] = info
                nc_hist[i] = nc
                if sim0.strict:
                    # the fields of the step's solution the error reads
                    capped: Any = SimpleNamespace(status=_STATUS[P.MAX_ITERATIONS], results=())
                    for k in np.flatnonzero(active & (code == P.MAX_ITERATIONS)).tolist():
                        row = self._row(k, i, t, info[k], int(nc[k]), 0.0, 0.0)
                        failure = sims[k]._strict_failure(i, t_before, row, capped)
                        self._stop(k, i, failure, active, rows_done, outcome)
                E, phi = E_new, phi_new  # a copy left inactive kept its state
                hist_E[i + 1], hist_phi[i + 1], hist_t[i + 1] = E, phi, t
                if guard_pre is not None:
                    flagged = guard_pre.flagged(active, t, info, phi, coff, old_pair, dist)
                    for k in flagged.tolist():
                        guard = guards[k]
                        if guard is None:
                            continue
                        sl = slice(self.boff[k], self.boff[k + 1])
                        c = slice(coff[k], coff[k + 1])
                        contacts = SimpleNamespace(
                            distance=dist[c], body_a=old_pair[c, 0], body_b=old_pair[c, 1]
                        )
                        row = self._row(k, i, t, info[k], int(nc[k]), 0.0, 0.0)
                        try:
                            guard.check(i, t, row, phi[sl], contacts, E=E[sl])
                        except ContactlabError as err:
                            self._stop(k, i + 1, err, active, rows_done, outcome)
                done = time.perf_counter()
                # each copy's share of the step, by its work
                w = work + 3.0 * nc * (info[:, P.I_WORK] + 1.0)
                w = np.where(stepped, w, 0.0)
                total = float(w.sum()) or 1.0
                share_hist[i, :, 0] = (called - start) * w / total
                share_hist[i, :, 1] = (done - start) * w / total
        wall = time.perf_counter() - wall_start
        spent = share_hist[:, :, 1].sum(axis=0)
        whole = float(spent.sum()) or 1.0
        results: list[Outcome] = []
        for k, sim in enumerate(sims):
            if rerun[k]:
                try:
                    results.append(sim.run(steps=T))
                except ContactlabError as err:
                    results.append(err)
                continue
            got = outcome[k]
            if got is not None and states[k] is None:
                results.append(got)
                continue
            m = int(rows_done[k])
            frames = m + 1  # the initial state and one per recorded step
            table = self._table(k, m, hist_t, info_hist, nc_hist, share_hist)
            recorder = self._recorder(k, sim, states[k], T, frames, hist_t, hist_E, hist_phi)
            if got is None:
                status, message = "ok", ""
                if any(s != "optimal" for s in table.column("status")):
                    status = "inaccurate"
                    message = sim._inaccurate_message(table)
                run = sim._make_run(table, recorder, initial[k], wall_start, T, status, message)
                results.append(replace(run, wall_time_s=wall * float(spent[k]) / whole))
            else:
                status = getattr(got, "status", "failed")
                run = sim._make_run(table, recorder, initial[k], wall_start, T, status, str(got))
                got.run = replace(run, wall_time_s=wall * float(spent[k]) / whole)  # type: ignore[union-attr]
                results.append(got)
        return results

    def _stop(
        self, k: int, rows: int, err: ContactlabError, active: NDArray[np.bool_],
        rows_done: NDArray[np.int64], outcome: list[Outcome | None],
    ) -> None:  # fmt: skip
        """Copy ``k`` ends with ``err`` after ``rows`` recorded steps."""
        active[k] = False
        rows_done[k] = rows
        outcome[k] = err

    def _nonfinite(
        self, i: int, t_before: float, t: float, E: Array, phi: Array, code: NDArray[np.int64],
        active: NDArray[np.bool_], rows_done: NDArray[np.int64], outcome: list[Outcome | None],
    ) -> None:  # fmt: skip
        """The copies whose new state is not finite stop as their own run would."""
        for k in np.flatnonzero(active).tolist():
            sl = slice(self.boff[k], self.boff[k + 1])
            if not np.all(np.isfinite(phi[sl])):
                status = _STATUS.get(int(code[k]), "numerical_error")
                what = f"non-finite velocities (status {status!r})"
                failure = self.sims[k]._failure(i, t_before, what)
                self._stop(k, i, failure, active, rows_done, outcome)
            elif not np.all(np.isfinite(E[sl])):
                try:
                    State(t, E[sl], phi[sl]).check_finite()
                except StateError as err:
                    self._stop(k, i, err, active, rows_done, outcome)

    def _row(
        self, k: int, i: int, t: float, info: Array, nc: int, solve: float, step: float
    ) -> dict[str, Any]:
        """Copy ``k``'s row of step ``i`` (:meth:`CompiledContactStep.step`'s columns)."""
        kinetic, potential = float(info[P.I_KINETIC]), float(info[P.I_POTENTIAL])
        lin = info[P.I_LINEAR : P.I_LINEAR + 3].tolist()
        ang = info[P.I_ANGULAR : P.I_ANGULAR + 3].tolist()
        return {
            "step": i, "t": float(t), "h": self.h,
            "kinetic_energy": kinetic, "potential_energy": potential,
            "total_energy": kinetic + potential,
            "linear_momentum_x": lin[0], "linear_momentum_y": lin[1], "linear_momentum_z": lin[2],
            "angular_momentum_x": ang[0], "angular_momentum_y": ang[1],
            "angular_momentum_z": ang[2], "constraint_error": 0.0,
            "status": _STATUS.get(int(info[P.I_STATUS]), "numerical_error"),
            "solve_time_s": solve, "model_setup_time_s": 0.0,
            **B.kernel_columns(info, P, nc),
            "collision_time_s": 0.0, "assembly_time_s": 0.0, "step_time_s": step,
        }  # fmt: skip

    def _table(
        self, k: int, m: int, hist_t: Array, info_hist: Array, nc_hist: NDArray[np.int64],
        share_hist: Array,
    ) -> StepTable:  # fmt: skip
        """Copy ``k``'s first ``m`` rows as columns (the columns of :meth:`_row`)."""
        info = info_hist[:m, k]
        kinetic, potential = info[:, P.I_KINETIC], info[:, P.I_POTENTIAL]
        zero = np.zeros(m)
        status = [_STATUS.get(int(c), "numerical_error") for c in info[:, P.I_STATUS]]
        columns: dict[str, Any] = {
            "step": np.arange(m), "t": hist_t[1 : m + 1], "h": np.full(m, self.h),
            "kinetic_energy": kinetic, "potential_energy": potential,
            "total_energy": kinetic + potential,
            "linear_momentum_x": info[:, P.I_LINEAR], "linear_momentum_y": info[:, P.I_LINEAR + 1],
            "linear_momentum_z": info[:, P.I_LINEAR + 2],
            "angular_momentum_x": info[:, P.I_ANGULAR],
            "angular_momentum_y": info[:, P.I_ANGULAR + 1],
            "angular_momentum_z": info[:, P.I_ANGULAR + 2], "constraint_error": zero,
            "status": status, "solve_time_s": share_hist[:m, k, 0], "model_setup_time_s": zero,
            "iterations": info[:, P.I_SWEEPS], "outer_iterations": zero,
            "n_contacts": nc_hist[:m, k], "penetration": info[:, P.I_PENETRATION],
            "normal_complementarity": info[:, P.I_NORMAL_COMP],
            "normal_feasibility": info[:, P.I_NORMAL_FEAS], "cone_violation": info[:, P.I_CONE],
            "dissipation_violation": info[:, P.I_DISSIPATION], "n_sliding": info[:, P.I_SLIDING],
            "solver_residual": np.maximum(
                np.maximum(info[:, P.I_PRIMAL], info[:, P.I_DUAL]), info[:, P.I_COMP]
            ),
            "collision_time_s": zero, "assembly_time_s": zero,
            "step_time_s": share_hist[:m, k, 1],
        }  # fmt: skip
        return StepTable.from_columns(columns, m, _INT_COLUMNS)

    def _recorder(
        self, k: int, sim: Any, state: State, T: int, frames: int, hist_t: Array,
        hist_E: Array, hist_phi: Array,
    ) -> TrajectoryRecorder:  # fmt: skip
        """Copy ``k``'s trajectory of ``frames`` frames, as its own run records it."""
        sl = slice(self.boff[k], self.boff[k + 1])
        rec = TrajectoryRecorder(sim.formulation, sim.scene, state, 0)
        rec.t = hist_t[:frames].copy()
        rec.E = hist_E[:frames, sl].copy()
        rec.phi = hist_phi[:frames, sl].copy()
        rec.count = frames
        return rec


class _GuardCheck:
    """The divergence guard's tests (:meth:`DivergenceGuard.check`) on all copies at once:
    the copies flagged here are checked again one by one, which raises the exact error."""

    def __init__(self, batch: PileBatch, guards: Sequence[Any]) -> None:
        from contactlab.divergence import ENERGY_FACTOR

        n = batch.n
        self.batch = batch
        self.factor = ENERGY_FACTOR
        on = [g is not None for g in guards]
        self.initial_energy = np.array([g.initial_energy if g else 0.0 for g in guards])
        self.energy_bound = np.array(
            [g.bounds.energy_bound if g and g.bounds.energy_bound is not None else np.inf
             for g in guards]
        )  # fmt: skip
        self.speed_on = np.array([bool(g) and g.bounds.energy_bound is not None for g in guards])
        self.on = np.array(on)
        self.radii = np.concatenate(
            [g.bounds.radii if g else np.full(int(batch.boff[k + 1] - batch.boff[k]), np.inf)
             for k, g in enumerate(guards)]
        )  # fmt: skip
        self.masses = np.concatenate(
            [g.bounds.masses if g else np.ones(int(batch.boff[k + 1] - batch.boff[k]))
             for k, g in enumerate(guards)]
        )  # fmt: skip
        inertia = np.concatenate(
            [g.bounds.min_inertia if g else np.ones(int(batch.boff[k + 1] - batch.boff[k]))
             for k, g in enumerate(guards)]
        )  # fmt: skip
        with np.errstate(divide="ignore"):
            self.inv_m = 1.0 / np.where(self.masses > 0, self.masses, 0.0)
            self.inv_i = 1.0 / np.where(inertia > 0, inertia, 0.0)
        b = [g.bounds if g else None for g in guards]
        self.gravity = np.array([x.gravity if x else 0.0 for x in b])
        self.total_mass = np.array([float(x.masses.sum()) if x else 0.0 for x in b])
        self.v0 = np.array([x.initial_speed if x else 0.0 for x in b])
        self.scale = np.array([x.energy_scale if x else 0.0 for x in b])
        self.copies = np.arange(n)

    def flagged(
        self, active: NDArray[np.bool_], t: float, info: Array, phi: Array,
        coff: NDArray[np.int64], pair: NDArray[np.int64], dist: Array,
    ) -> NDArray[np.int64]:  # fmt: skip
        """The active copies a test may fail on (a superset of those it fails on)."""
        batch = self.batch
        live = active & self.on
        gain = info[:, P.I_KINETIC] + info[:, P.I_POTENTIAL] - self.initial_energy
        flag = live & (gain > self.energy_bound)
        if dist.size:
            owner = np.repeat(self.copies, np.diff(coff))
            base = batch.boff[owner]
            radii = np.append(self.radii, np.inf)
            a = np.where(pair[:, 0] >= 0, pair[:, 0] + base, -1)
            b = np.where(pair[:, 1] >= 0, pair[:, 1] + base, -1)
            over = -dist - np.minimum(radii[a], radii[b])
            flag[np.unique(owner[over > 0.0])] |= True
        fall = self.gravity * self.total_mass * (self.v0 * t + 0.5 * self.gravity * t * t)
        budget = 2.0 * ((self.factor + 1.0) * self.scale + fall)
        per_body = budget[batch.copy_of_body]
        with np.errstate(invalid="ignore"):
            v_over = np.linalg.norm(phi[:, 3:], axis=1) - np.sqrt(per_body * self.inv_m)
            w_over = np.linalg.norm(phi[:, :3], axis=1) - np.sqrt(per_body * self.inv_i)
        fast = batch.copy_of_body[(v_over > 0.0) | (w_over > 0.0)]
        flag[np.unique(fast)] |= self.speed_on[np.unique(fast)]
        return np.flatnonzero(flag & live)


__all__ = ["Outcome", "PileBatch", "batch_scope"]
