"""Contact stepping speed: the exact Coulomb law's solvers against MuJoCo, and batched runs.

Sections (``results/benchmarks/contact_speed.md``):

``coulomb``
    A ``box-pile`` of ``--boxes`` cubes (default 200) dropped from t = 0 and stepped by
    ``coulomb`` / ``ipm`` (h = 5 ms) for ``--steps`` steps; every posed problem is kept
    with its warm start and solved again, in the same process, by each other backend
    (``padmm``, ``nsgs``) from the same warm start, and the pose of every step is stepped
    once by MuJoCo (Newton, elliptic cones; the scene of :func:`bench_friction.mujoco_step`).
    Per backend: steps, steps that met the tolerance (1e-6, natural map), median and
    90 % solve time [ms], µs per contact, median iterations, largest velocity difference
    to ``ipm`` over the steps both met [m/s]; MuJoCo's median step time on the same poses.
    The solve is the whole of the difference between two routes' steps (collision and
    assembly are shared), so ``ipm``'s full step time is reported beside it.

``cone``
    The compiled disc-cone step (:mod:`contactlab.maximal.cone_step`): ``coulomb`` and
    ``anitescu-hart`` with ``cone="soc"`` by ``nsgs`` on ``box-pile`` of ``--cone-sizes``
    cubes (default 200), from the drop (t = 0, ``--cone-drop-steps`` steps) and at rest
    (layout ``stacked``, ``--cone-rest-steps`` steps), h = 5 ms, default tolerance (sweep
    cap ``--cone-max-iter``, default the route's 10,000): per model, size and phase the
    steps with contacts, the steps stopped at the cap (with the largest residual), median
    contacts, islands, sweeps (the largest island's), thread CPU time and µs per contact,
    and MuJoCo's (Newton, elliptic cones; :func:`bench_friction.mujoco_step`) µs per
    contact on every ``--pose-every``-th pose, in the same process.

``fom``
    The compiled disc-cone step by first-order methods
    (:mod:`contactlab.maximal._cone_fom_kernels`): ``coulomb`` and ``anitescu-hart`` with
    ``cone="soc"`` by ``apgd`` and ``admm`` on ``box-pile`` of ``--fom-sizes`` cubes
    (default 20, 50, 200), from the drop (t = 0, ``--fom-drop-steps`` steps) and at rest
    (layout ``stacked``, ``--fom-rest-steps`` steps), h = 5 ms, default tolerance
    (iteration cap ``--fom-max-iter``, default the routes' 20,000 and 5,000; methods
    ``--fom-methods`` and models ``--fom-models``, default all): per model,
    method, size and phase the steps with contacts, the steps stopped at the cap (with the
    largest residual), median contacts, islands, iterations (the largest island's),
    thread CPU time and µs per contact, the compiled ``nsgs`` step's median time on the
    same sampled poses and MuJoCo's (Newton, elliptic cones;
    :func:`bench_friction.mujoco_step`) µs per contact on every ``--pose-every``-th pose,
    in the same process.

``pgs``
    Box friction solved by ``pgs`` (the default route of box piles: the compiled maximal
    contact step, :mod:`contactlab.maximal.compiled_step`) on ``box-pile`` of 50, 200 and
    1000 cubes (``--pgs-sizes``), h = 5 ms, default tolerance: from the drop (t = 0,
    ``--drop-steps`` steps: the fall, the landing and the start of rest), at rest (the
    ``stacked`` layout, built at rest at exact contact, ``--rest-steps`` steps) and, for
    ``--landed-sizes`` (default 200), landed: dropped and stepped ``--settle`` seconds
    (default 2) untimed, then ``--rest-steps`` steps.  Per
    phase: contacts, Gauss--Seidel sweeps (with the products with ``W`` of the step's
    subspace finish), steps that did not converge (capped), the
    step's thread CPU time and µs per contact, the share of the step outside compiled
    code (:func:`solvers.jit.kernel_accounting`), the general layers' step
    (``compiled=False``) and MuJoCo's step (Newton, elliptic cones;
    :func:`bench_friction.mujoco_step`) on the same poses, every ``--pose-every``-th step,
    in the same process.

``batch``
    ``--copies`` copies (default 64) of a 20-box pile (seeds 0..) on the default route
    (box friction by ``pgs``: the compiled pile step) for ``--batch-steps`` steps (default
    100: the cubes land from about step 25 on; the contacts are counted and reported):
    one :class:`contactlab.batch.Batch` in this process (one compiled call per step for all
    copies), the same seeds as one ``contactlab sweep`` process (batched), against the
    same number of separate ``contactlab run`` processes and of separate simulators run one
    after another in this process (each measured on ``--separate`` of them, default 8, and
    multiplied by ``--copies``): steps per second of all copies.

``lemke``
    Stewart--Trinkle by ``lemke`` (the compiled maximal step,
    :mod:`contactlab.maximal.lemke_step`) on ``box-pile`` of ``--lemke-sizes`` cubes
    (default 20 and 50) from the drop and at rest, against the general layers' step and
    MuJoCo on the same poses (:mod:`benchmarks.bench_lemke_step`).

``default``
    The measurement behind the exact-cone models' default backend
    (``contactlab.scenario.EXACT_CONE_SOLVER``): ``coulomb`` and ``anitescu-hart`` with
    ``cone="soc"`` by ``pgs``, ``nsgs`` and ``apgd`` on the scenes of ``DEFAULT_SCENES``
    (piles, a stack, a chain in both formulations, a robot), at each scene's own step:
    thread CPU time a step and the steps left unsolved.

Run: ``python -m benchmarks.bench_contact_speed [--boxes 200 --steps 40] [--only coulomb]``
(``--only pgs`` writes the ``pgs`` section alone into ``--out``).
Times are wall clock on a shared machine: the load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import harness

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "results" / "benchmarks" / "contact_speed.md"
TOL = 1e-6
#: the heading of the ``pgs`` section (after "## ")
PGS_HEAD = "Box friction / `pgs` (the compiled maximal step)"
BATCH_HEAD = "Batched runs"


def record_drop(boxes: int, steps: int) -> tuple[Any, list[dict[str, Any]]]:
    """Step the drop with ``coulomb`` / ``ipm``; per step its state, posed problem, warm
    start, ``ipm``'s result and step time."""
    from contactlab.models.base import SolvingModel
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=boxes)
    sim = Simulator(scene, "maximal", "coulomb", "ipm")
    state = sim.initial_state()
    posed: list[tuple[Any, Any, Any]] = []
    original = SolvingModel.run

    def recording(self: SolvingModel, problem: Any, warm: Any = None) -> Any:
        res = original(self, problem, warm)
        posed.append((problem, warm, res))
        return res

    rows: list[dict[str, Any]] = []
    SolvingModel.run = recording  # type: ignore[method-assign]
    try:
        for i in range(steps):
            posed.clear()
            before = state
            t0 = time.perf_counter()
            state, _ = sim.step(state, i)
            dt = time.perf_counter() - t0
            for problem, warm, res in posed:
                rows.append(
                    {"step": i, "state": before, "problem": problem, "warm": warm,
                     "ipm": res, "step_ms": 1e3 * dt}
                )  # fmt: skip
    finally:
        SolvingModel.run = original  # type: ignore[method-assign]
    return scene, rows


def coulomb_section(boxes: int, steps: int, backends: list[str]) -> str:
    import solvers
    from benchmarks.bench_friction import mujoco_step

    load0 = os.getloadavg()[0]
    scene, rows = record_drop(boxes, steps)
    rows = [r for r in rows if r["problem"].nc > 0]
    per: dict[str, list[tuple[str, float, int, float, int]]] = {}
    for r in rows:
        p, ref = r["problem"], r["ipm"]
        per.setdefault("ipm", []).append(
            (ref.status, 1e3 * (ref.setup_time + ref.solve_time), ref.iterations, 0.0, p.nc)
        )
        for name in backends:
            t0 = time.perf_counter()
            res = solvers.solve(p, name, tol=TOL, warm_start=r["warm"])
            ms = 1e3 * (time.perf_counter() - t0)
            du = (
                float(np.max(np.abs(res.w - ref.w)))
                if res.status == "optimal" and ref.status == "optimal"
                else float("nan")
            )
            per.setdefault(name, []).append((res.status, ms, res.iterations, du, p.nc))
    mj = []
    for r in rows:
        m = mujoco_step(scene, r["state"], scene.dt, 1)
        if m is not None:
            mj.append((m["step_ms"], m["contacts"]))
    load1 = os.getloadavg()[0]
    lines = [
        f"## Exact Coulomb law: {boxes}-box pile drop, {len(rows)} steps with contacts "
        f"(of {steps} from t = 0), h = 5 ms, tol {TOL:g}",
        "",
        f"Load average {load0:.2f} before, {load1:.2f} after (2 cores, shared).",
        "",
        "| solver | steps met tol | median ms | p90 ms | µs / contact | median iterations "
        "| max ‖u − u_ipm‖∞ [m/s] |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, vals in per.items():
        ok = sum(v[0] == "optimal" for v in vals)
        ms = np.array([v[1] for v in vals])
        nc = np.array([v[4] for v in vals])
        du = np.array([v[3] for v in vals])
        du_max = float(np.nanmax(du)) if np.isfinite(du).any() else float("nan")
        lines.append(
            f"| {name} | {ok} / {len(vals)} | {np.median(ms):.1f} | {np.quantile(ms, 0.9):.1f} "
            f"| {1e3 * np.median(ms / nc):.1f} | {np.median([v[2] for v in vals]):.0f} "
            f"| {du_max:.1e} |"
        )
    step_ms = np.array([r["step_ms"] for r in rows])
    lines += [
        "",
        f"`ipm`'s whole step (collision, assembly, solve, integration): median "
        f"{np.median(step_ms):.1f} ms.",
    ]
    if mj:
        ms = np.array([m[0] for m in mj])
        nc = np.array([max(m[1], 1.0) for m in mj])
        lines.append(
            f"MuJoCo (Newton, elliptic) on the same poses: median {np.median(ms):.2f} ms per "
            f"step, {1e3 * np.median(ms / nc):.1f} µs per contact "
            f"({np.median(nc):.0f} contacts)."
        )
    return "\n".join(lines) + "\n"


#: the heading of the compiled disc-cone section (after "## ")
CONE_HEAD = 'Exact cone, compiled step (`coulomb` and `anitescu-hart` with `cone="soc"`, `nsgs`)'
#: the models of the compiled disc-cone section: (label, model, options)
CONE_MODELS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("coulomb", "coulomb", {}),
    ("anitescu-hart (soc)", "anitescu-hart", {"cone": "soc"}),
)


def _timed_steps(
    sim: Any, scene: Any, state: Any, steps: int, every: int, count: str, also: Any = None
) -> list[dict[str, Any]]:
    """Step ``sim`` ``steps`` times from ``state``; per step its thread CPU time, contacts,
    islands, iterations (under the key ``count``), status and residual, and on every ``every``-th
    step with contacts the step of ``also`` (if given) from the same state, its thread CPU
    time as ``nsgs``, and MuJoCo's step (:func:`benchmarks.bench_friction.mujoco_sample`)."""
    from benchmarks.bench_friction import mujoco_sample

    rows: list[dict[str, Any]] = []
    for i in range(steps):
        before = state
        t0 = time.thread_time()
        state, record = sim.step(state, i)
        cpu = time.thread_time() - t0
        m = record.metrics
        row = {
            "cpu": cpu, "contacts": m["n_contacts"], count: m["iterations"],
            "status": m["status"], "residual": m["solver_residual"],
            "islands": sim.compiled.last_times.get("islands", 1.0),
        }  # fmt: skip
        if m["n_contacts"] > 0 and i % every == 0:
            if also is not None:
                t0 = time.thread_time()
                also.step(before, i)
                row["nsgs"] = time.thread_time() - t0
            mujoco_sample(scene, before, row)
        rows.append(row)
    return rows


def _cone_phase(
    n: int, layout: str, model: str, opts: dict[str, Any], steps: int, every: int, cap: int | None
) -> list[dict[str, Any]]:
    """Step ``box-pile`` (``n`` cubes, ``layout``) by the compiled disc-cone step of
    ``model`` / ``nsgs`` from t = 0; per step its thread CPU time, contacts, sweeps and
    status, and MuJoCo's step on every ``every``-th pose with contacts."""
    from contactlab.maximal.cone_step import ConeContactStep
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=n, layout=layout)
    options = dict(opts) if cap is None else {**opts, "max_iter": cap}
    sim = Simulator(scene, "maximal", model, "nsgs", model_options=options)
    assert isinstance(sim.compiled, ConeContactStep), "the compiled disc-cone step"
    state = sim.initial_state()
    sim.step(state, 0)  # kernels loaded
    return _timed_steps(sim, scene, state, steps, every, "sweeps")


def _capped(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], float]:
    """The steps of ``rows`` that did not end ``optimal`` and their largest residual."""
    capped = [r for r in rows if r["status"] != "optimal"]
    return capped, max((r["residual"] for r in capped), default=0.0)


def cone_section(
    sizes: list[int], drop_steps: int, rest_steps: int, every: int, cap: int | None
) -> str:
    """The compiled disc-cone step against MuJoCo on the same poses (module docstring)."""
    load0 = harness.load_average()
    lines = [
        f"## {CONE_HEAD}: box-pile from the drop ({drop_steps} steps from t = 0) and at "
        f"rest (layout `stacked`, {rest_steps} steps), h = 5 ms, default tolerance 1e-6"
        + ("" if cap is None else f", sweep cap {cap}"),
        "",
        "Thread CPU time per step of the compiled step (collision, rows, block NSGS, "
        "integration) and MuJoCo's (Newton, elliptic cones) on the same poses (every "
        f"{every}-th step with contacts), in the same process; steps with contacts only.",
        "",
        "| model | boxes | phase | steps | capped (largest residual) | contacts (median) "
        "| islands (median) | median sweeps | median ms | µs / contact | MuJoCo µs / contact "
        "| × MuJoCo per contact |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, model, opts in CONE_MODELS:
        for n in sizes:
            for phase, layout, steps in harness.pile_phases(drop_steps, rest_steps):
                rows = [
                    r
                    for r in _cone_phase(n, layout, model, opts, steps, every, cap)
                    if r["contacts"]
                ]
                if not rows:
                    continue
                capped, worst = _capped(rows)
                us = np.array([1e6 * r["cpu"] / r["contacts"] for r in rows])
                mj = [r for r in rows if "mujoco" in r]
                mj_us = (
                    float(np.median([1e6 * r["mujoco"] / max(r["mujoco_contacts"], 1) for r in mj]))
                    if mj
                    else float("nan")
                )
                ours = float(np.median(us))
                lines.append(
                    f"| {label} | {n} | {phase} | {len(rows)} "
                    f"| {len(capped)}" + (f" ({worst:.1e})" if capped else "") + " "
                    f"| {np.median([r['contacts'] for r in rows]):.0f} "
                    f"| {np.median([r['islands'] for r in rows]):.0f} "
                    f"| {np.median([r['sweeps'] for r in rows]):.0f} "
                    f"| {1e3 * np.median([r['cpu'] for r in rows]):.2f} | {ours:.1f} "
                    f"| {mj_us:.1f} | {ours / mj_us:.1f} |"
                )
    lines += ["", harness.load_span(load0)]
    return "\n".join(lines) + "\n"


#: the heading of the compiled first-order cone section (after "## ")
FOM_HEAD = "Exact cone, compiled first-order step (`apgd`, `admm`)"


def _fom_phase(
    n: int, layout: str, model: str, opts: dict[str, Any], solver: str, steps: int, every: int
) -> list[dict[str, Any]]:
    """Step ``box-pile`` (``n`` cubes, ``layout``) by the compiled disc-cone step of
    ``model`` / ``solver`` from t = 0; per step its thread CPU time, contacts, iterations
    and status, and on every ``every``-th pose with contacts the compiled ``nsgs`` step's
    thread CPU time from the same state and MuJoCo's step."""
    from contactlab.maximal.cone_step import ConeContactStep
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=n, layout=layout)
    sim = Simulator(scene, "maximal", model, solver, model_options=opts)
    nsgs = Simulator(scene, "maximal", model, "nsgs", model_options=opts)
    assert isinstance(sim.compiled, ConeContactStep), "the compiled disc-cone step"
    # kernels loaded (the collision's narrow phase too) on a pose with contacts, untimed
    pair = get_scenario("box-pile").build(n=2, layout="stacked")
    for s in (solver, "nsgs"):
        Simulator(pair, "maximal", model, s, model_options=opts).run(steps=2)
    return _timed_steps(sim, scene, sim.initial_state(), steps, every, "iterations", nsgs)


def fom_section(
    sizes: list[int],
    drop_steps: int,
    rest_steps: int,
    every: int,
    cap: int | None,
    methods: tuple[str, ...] = ("apgd", "admm"),
    models: tuple[str, ...] = ("coulomb", "anitescu-hart"),
) -> str:
    """The compiled first-order cone steps against MuJoCo on the same poses (module
    docstring)."""
    load0 = harness.load_average()
    lines = [
        f"## {FOM_HEAD}: box-pile from the drop ({drop_steps} steps from t = 0) and at "
        f"rest (layout `stacked`, {rest_steps} steps), h = 5 ms, default tolerance 1e-6"
        + ("" if cap is None else f", iteration cap {cap}"),
        "",
        "Thread CPU time per step of the compiled step (collision, rows, the first-order "
        "method with `W x` through the contact rows, integration), of the compiled `nsgs` "
        "step and of MuJoCo (Newton, elliptic cones) on the same poses (every "
        f"{every}-th step with contacts), in the same process; steps with contacts only.",
        "",
        "| model | method | boxes | phase | steps | capped (largest residual) "
        "| contacts (median) | islands (median) | median iterations | median ms | µs / contact "
        "| sampled: ms | sampled: `nsgs` ms | MuJoCo µs / contact | × MuJoCo per contact |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: |",
    ]
    for label, model, opts in CONE_MODELS:
        if model not in models:
            continue
        options = dict(opts) if cap is None else {**opts, "max_iter": cap}
        for solver in methods:
            for n in sizes:
                for phase, layout, steps in harness.pile_phases(drop_steps, rest_steps):
                    rows = [
                        r
                        for r in _fom_phase(n, layout, model, options, solver, steps, every)
                        if r["contacts"]
                    ]
                    if not rows:
                        continue
                    capped, worst = _capped(rows)
                    cpu = np.array([r["cpu"] for r in rows])
                    per = 1e6 * np.sum(cpu) / np.sum([r["contacts"] for r in rows])
                    sampled = [r for r in rows if "nsgs" in r]
                    mj = [r for r in sampled if "mujoco" in r]
                    if mj:
                        ours = sum(r["cpu"] for r in mj) / sum(r["contacts"] for r in mj)
                        theirs = sum(r["mujoco"] for r in mj) / max(
                            sum(r["mujoco_contacts"] for r in mj), 1
                        )
                        mj_cells = f"{1e6 * theirs:.2f} | {ours / theirs:.3g}"
                    else:
                        mj_cells = "n/a | n/a"
                    same = (
                        f"{1e3 * np.median([r['cpu'] for r in sampled]):.2f} "
                        f"| {1e3 * np.median([r['nsgs'] for r in sampled]):.2f}"
                        if sampled
                        else "n/a | n/a"
                    )
                    lines.append(
                        f"| {label} | `{solver}` | {n} | {phase} | {len(rows)} "
                        f"| {len(capped)}" + (f" ({worst:.1e})" if capped else "") + " "
                        f"| {np.median([r['contacts'] for r in rows]):.0f} "
                        f"| {np.median([r['islands'] for r in rows]):.0f} "
                        f"| {np.median([r['iterations'] for r in rows]):.0f} "
                        f"| {1e3 * np.median(cpu):.2f} | {per:.1f} | {same} | {mj_cells} |"
                    )
    lines += [
        "",
        f"{harness.load_span(load0)} "
        "`µs / contact`: all the phase's step time over all its contacts. `sampled`: every "
        f"{every}-th step with contacts, stepped also by the compiled `nsgs` step (from the "
        "same state and warm start) and by MuJoCo (its own contacts); `× MuJoCo per "
        "contact` compares ours and MuJoCo's time over contacts, summed over those poses.",
    ]
    return "\n".join(lines) + "\n"


#: the heading of the exact-cone default-backend section (after "## ")
DEFAULT_HEAD = "Exact cone, default backend"
#: the scenes of the default-backend section: (scenario, parameters, formulation, steps)
DEFAULT_SCENES: tuple[tuple[str, dict[str, Any], str, int], ...] = (
    ("box-pile", {"n": 20}, "maximal", 100),
    ("box-pile", {"n": 50}, "maximal", 100),
    ("box-stack", {}, "maximal", 100),
    ("chain-fall", {}, "reduced", 40),
    ("chain-fall", {}, "maximal", 40),
    ("solo12-collapse", {}, "reduced", 40),
)


def _default_run(
    scene: Any, form: str, model: str, opts: dict[str, Any], solver: str, steps: int
) -> str:
    """One cell of the default-backend table: thread CPU time a step and steps not solved."""
    from contactlab.errors import ContactlabError
    from contactlab.simulator import Simulator

    try:
        sim = Simulator(scene, form, model, solver, model_options=opts)
    except ContactlabError:
        return "—"
    state = sim.initial_state()
    sim.step(state, 0)  # kernels loaded
    cpu, capped = 0.0, 0
    for i in range(steps):
        t0 = time.thread_time()
        try:
            state, record = sim.step(state, i)
        except ContactlabError:
            return f"fails at step {i}"
        cpu += time.thread_time() - t0
        capped += record.metrics["status"] != "optimal"
    return f"{cpu / steps * 1e3:.2f} ms, {capped} capped"


def default_section() -> str:
    """Per exact-cone model (``coulomb``, ``anitescu-hart`` with ``cone="soc"``) and scene of
    :data:`DEFAULT_SCENES`, each cone backend's thread CPU time a step and the steps it
    leaves unsolved: the measurement behind ``contactlab.scenario.EXACT_CONE_SOLVER``."""
    from contactlab.scenario import get_scenario

    load0 = os.getloadavg()[0]
    lines = []
    for scen, params, form, steps in DEFAULT_SCENES:
        scene = get_scenario(scen).build(**params)
        label = f"`{scen}` {params or ''} ({form}), {steps} steps"
        for name, model, opts in CONE_MODELS:
            cells = [
                _default_run(scene, form, model, opts, solver, steps)
                for solver in ("pgs", "nsgs", "apgd")
            ]
            lines.append(f"| {label} | {name} | " + " | ".join(cells) + " |")
    load1 = os.getloadavg()[0]
    return "\n".join(
        [
            f"## {DEFAULT_HEAD}: thread CPU time a step and steps left unsolved, per exact-cone "
            f"backend (load average {load0:.1f} -> {load1:.1f})\n",
            "| scene | model | `pgs` | `nsgs` | `apgd` |",
            "|---|---|---|---|---|",
            *lines,
            "",
        ]
    )


def _warm_pgs() -> None:
    """Load every kernel of both routes before any timed step: three steps of a stacked
    pile of 20 cubes (contacts from the first step, so the later steps match them to the
    previous step's contacts by a kernel numba loads at its first call, about 10 ms)."""
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=20, layout="stacked")
    for options in ({}, {"compiled": False}):
        sim = Simulator(scene, formulation_options=options)
        state = sim.initial_state()
        for i in range(3):
            state, _ = sim.step(state, i)


def _pgs_phase(n: int, layout: str, steps: int, every: int, settle: float = 0.0) -> dict[str, Any]:
    """Step ``box-pile`` (``n`` cubes, ``layout``) by the default route, after ``settle``
    seconds untimed; per step its thread CPU time, contacts, sweeps, status and time
    inside compiled code; the general route and MuJoCo on every ``every``-th pose."""
    from benchmarks.bench_friction import mujoco_step
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator
    from solvers.jit import kernel_accounting

    scene = get_scenario("box-pile").build(n=n, layout=layout)
    fast = Simulator(scene)
    assert fast.compiled is not None, "the default route of box-pile is the compiled step"
    general = Simulator(scene, formulation_options={"compiled": False})
    _warm_pgs()
    state = fast.initial_state()
    first = int(round(settle / scene.dt))
    for i in range(first):  # landing, untimed
        state, _ = fast.step(state, i)
    rows: list[dict[str, Any]] = []
    with kernel_accounting() as account:
        for i in range(first, first + steps):
            before = state
            account.reset()
            t0 = time.thread_time()
            state, record = fast.step(state, i)
            cpu = time.thread_time() - t0
            m = record.metrics
            row = {
                "cpu": cpu, "inside": account.seconds, "contacts": m["n_contacts"],
                "sweeps": m["iterations"], "status": m["status"],
                "islands": fast.compiled.last_times.get("islands", 1.0),
                "row_sweeps": fast.compiled.last_times.get("row_sweeps", m["iterations"]),
            }  # fmt: skip
            if m["n_contacts"] > 0 and i % every == 0:
                t0 = time.thread_time()
                _, rg = general.step(before, i)
                row["general"] = time.thread_time() - t0
                row["general_sweeps"] = rg.metrics["iterations"]
                mj = mujoco_step(scene, before, scene.dt, 1)
                if mj is not None:
                    row["mujoco"] = 1e-3 * mj["step_ms"]
                    row["mujoco_contacts"] = mj["contacts"]
            rows.append(row)
    return {"rows": rows, "speed": float(np.abs(state.phi).max())}


def pgs_section(
    sizes: list[int],
    drop_steps: int,
    rest_steps: int,
    every: int,
    landed: list[int] | None = None,
    settle: float = 2.0,
) -> str:
    load0 = os.getloadavg()[0]
    lines = [
        f"## {PGS_HEAD}: box-pile from the drop "
        f"({drop_steps} steps from t = 0), at rest (layout `stacked`, {rest_steps} "
        f"steps) and landed (dropped, {settle:g} s untimed, then {rest_steps} steps), "
        "h = 5 ms, default tolerance 1e-6",
        "",
        "| n | phase | steps with contacts | contacts (median) | islands (median) "
        "| sweeps median / max | row-weighted sweeps (median) | capped | step ms (median) "
        "| µs / contact | outside compiled | sampled: step ms "
        "| sampled: general route ms | sampled: MuJoCo ms | MuJoCo µs / contact "
        "| × MuJoCo per contact |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: | ---: |",
    ]
    for n in sizes:
        phases = [("drop", "drop", drop_steps, 0.0), ("rest", "stacked", rest_steps, 0.0)]
        if n in (landed or []):
            phases.append((f"landed {settle:g} s", "drop", rest_steps, settle))
        for phase, layout, steps, wait in phases:
            out = _pgs_phase(n, layout, steps, every, wait)
            rows = [r for r in out["rows"] if r["contacts"] > 0]
            if not rows:
                continue
            nc = np.array([r["contacts"] for r in rows], dtype=float)
            cpu = np.array([r["cpu"] for r in rows])
            sweeps = np.array([r["sweeps"] for r in rows])
            capped = sum(r["status"] != "optimal" for r in rows)
            outside = 1.0 - np.sum([r["inside"] for r in rows]) / np.sum(cpu)
            per = 1e6 * np.sum(cpu) / np.sum(nc)
            # the general route and MuJoCo against this route on the same sampled poses
            both = [r for r in rows if "general" in r]
            gen_ms = f"{1e3 * np.median([r['general'] for r in both]):.1f}" if both else "n/a"
            same_ms = f"{1e3 * np.median([r['cpu'] for r in both]):.2f}" if both else "n/a"
            mj = [r for r in both if "mujoco" in r]
            if mj:
                ours = sum(r["cpu"] for r in mj) / sum(r["contacts"] for r in mj)
                theirs = sum(r["mujoco"] for r in mj) / max(
                    sum(r["mujoco_contacts"] for r in mj), 1
                )
                mj_ms = np.median([r["mujoco"] for r in mj])
                mj_cells = f"{1e3 * mj_ms:.2f} | {1e6 * theirs:.2f} | {ours / theirs:.3g}"
            else:
                mj_cells = "n/a | n/a | n/a"
            lines.append(
                f"| {n} | {phase} | {len(rows)} | {np.median(nc):.0f} "
                f"| {np.median([r['islands'] for r in rows]):.0f} "
                f"| {np.median(sweeps):.0f} / {sweeps.max()} "
                f"| {np.median([r['row_sweeps'] for r in rows]):.0f} | {capped} "
                f"| {1e3 * np.median(cpu):.2f} | {per:.2f} | {100 * outside:.0f} % "
                f"| {same_ms} | {gen_ms} | {mj_cells} |"
            )
    load1 = os.getloadavg()[0]
    lines += [
        "",
        f"Load average {load0:.2f} before, {load1:.2f} after (2 cores, shared). Times are "
        "thread CPU time. Each step's contacts are solved island by island (bodies joined "
        "by contacts; the ground joins none), each island with its own stopping test and "
        "sweep cap: `sweeps` are the largest island's sweeps and products with `W` (what "
        "the cap counts), `row-weighted sweeps` the islands' sweeps weighted by their "
        "rows (the work, in sweeps of the whole problem), `capped` the steps with an "
        "island at the cap. `µs / contact`: all the phase's step time over all its contacts. "
        f"`sampled`: every {every}-th step with contacts, stepped also by the general "
        "layers (`compiled=False`, from the same state and warm start) and by MuJoCo "
        "(its own contacts); `× MuJoCo per contact` compares the two on those poses "
        "(time over contacts, summed over the sampled poses).",
    ]
    return "\n".join(lines) + "\n"


def _children_cpu() -> float:
    """CPU seconds (user and system) of this process's finished children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _separate_run(index: int, steps: int, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``contactlab run`` process of seed ``index``."""
    from contactlab.commands import EXIT_UNCONVERGED

    t0, c0 = time.perf_counter(), _children_cpu()
    done = subprocess.run(
        [sys.executable, "-m", "contactlab", "run", "box-pile", "--set", "n=20",
         "--set", f"seed={index}", "--steps", str(steps), "--quiet", "--no-plots",
         "--out", str(out)],
        check=False, env=env, capture_output=True,
    )  # fmt: skip
    if done.returncode not in (0, EXIT_UNCONVERGED):  # 3: some steps capped
        raise RuntimeError(f"separate run {index} failed: {done.stderr.decode()[-500:]}")
    return time.perf_counter() - t0, _children_cpu() - c0


def _sweep_file(folder: Path, copies: int, steps: int, dt: float) -> Path:
    """The sweep of ``copies`` seeds of a 20-box pile on the default route."""
    path = folder / "batch.toml"
    path.write_text(
        "\n".join(
            [
                "[sweep]",
                'name = "pile-seeds"',
                f"duration = {steps * dt!r}",
                f"seeds = {list(range(copies))}",
                'formulations = ["maximal"]',
                'models = ["box-friction"]',
                'solvers = ["pgs"]',
                "",
                "[[scenarios]]",
                'name = "box-pile"',
                "params = { n = 20 }",
                "",
            ]
        )
    )
    return path


def batch_section(copies: int, steps: int, separate: int) -> str:
    """``copies`` copies of a 20-box pile on the default route (box friction by ``pgs``),
    ``steps`` steps: one :class:`contactlab.batch.Batch`, the batched ``contactlab sweep``,
    separate ``contactlab run`` processes and separate simulators in one process."""
    from contactlab.batch import Batch
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    load0 = os.getloadavg()
    scenes = [get_scenario("box-pile").build(n=20, seed=s) for s in range(copies)]
    Batch(scenes[:2]).run(steps=2)  # kernels loaded
    Simulator(scenes[0]).run(steps=2)
    t0, c0 = time.perf_counter(), time.thread_time()
    batch = Batch(scenes)
    runs = batch.run(steps=steps)
    batch_s, batch_cpu = time.perf_counter() - t0, time.thread_time() - c0
    assert batch.route == "compiled"
    nc = np.array([r.steps["n_contacts"].to_numpy() for r in runs])
    sweeps = np.array([r.steps["iterations"].to_numpy() for r in runs])
    capped = sum(int((r.steps["status"] != "optimal").sum()) for r in runs)
    first_contact = int(np.min(np.argmax(nc > 0, axis=1)))
    t0, c0 = time.perf_counter(), time.thread_time()
    for scene in scenes[:separate]:
        Simulator(scene).run(steps=steps)
    lone_s, lone_cpu = time.perf_counter() - t0, time.thread_time() - c0
    # the batch's CPU time on those seeds (its time shared out by work)
    mine = sum(r.wall_time_s for r in runs[:separate]) / sum(r.wall_time_s for r in runs)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        measured = [_separate_run(s, steps, Path(tmp) / f"run{s}", env) for s in range(separate)]
        spec = _sweep_file(Path(tmp), copies, steps, float(scenes[0].dt))
        t0, c0 = time.perf_counter(), _children_cpu()
        done = subprocess.run(
            [sys.executable, "-m", "contactlab", "sweep", str(spec), "--workers", "1",
             "--quiet", "--out", str(Path(tmp) / "sweep")],
            check=False, env=env, capture_output=True,
        )  # fmt: skip
        sweep_s, sweep_cpu = time.perf_counter() - t0, _children_cpu() - c0
        if done.returncode not in (0, 3):
            raise RuntimeError(f"the sweep failed: {done.stderr.decode()[-800:]}")
        batched = sum(
            "batch_copies" in p.read_text()
            for p in (Path(tmp) / "sweep" / "runs").glob("*/summary.json")
        )
    one, one_cpu = (float(x) for x in np.mean(measured, axis=0))
    load1 = os.getloadavg()
    total = copies * steps
    scale = copies / separate
    rows = [
        ("one `Batch` in one process (one compiled call per step; set-up included)",
         batch_s, batch_cpu),
        (f"`contactlab sweep` of the {copies} seeds, one process (batched: {batched} of "
         f"{copies} runs; start-up, warm-up run, {copies} results folders included)",
         sweep_s, sweep_cpu),
        (f"{copies} separate `contactlab run` processes (mean of {separate} measured, seeds "
         f"0-{separate - 1}: {one:.1f} s wall, {one_cpu:.2f} s CPU each; × {copies})",
         copies * one, copies * one_cpu),
        (f"{copies} separate simulators one after another in this process ({separate} "
         f"measured, × {scale:g})", scale * lone_s, scale * lone_cpu),
    ]  # fmt: skip
    table = [
        "| route | wall [s] | CPU [s] | copy-steps per CPU second | CPU / `Batch` CPU |",
        "| --- | ---: | ---: | ---: | ---: |",
    ] + [
        f"| {name} | {wall:.1f} | {cpu:.1f} | {total / cpu:.0f} | {cpu / batch_cpu:.2f} |"
        for name, wall, cpu in rows
    ]
    return (
        "\n".join(
            [
                f"## {BATCH_HEAD}: {copies} copies of a 20-box pile, {steps} steps each "
                "(default route: box friction / `pgs`, the compiled pile step)",
                "",
                f"Load average (1, 5, 15 min) {load0[0]:.2f}, {load0[1]:.2f}, {load0[2]:.2f} "
                f"before, {load1[0]:.2f}, {load1[1]:.2f}, {load1[2]:.2f} after (2 cores, "
                f"shared). Seeds 0-{copies - 1}, h = {scenes[0].dt * 1e3:g} ms. The cubes "
                f"land: contacts from step {first_contact} on; {int((nc > 0).sum())} of {total} "
                f"copy-steps with contacts, {int(nc.sum())} contacts in all, up to "
                f"{int(nc.max())} in one copy's step; {int(sweeps.sum())} Gauss-Seidel sweeps "
                f"in all, {capped} copy-steps capped at the default 10000 sweeps (kept with "
                "their iterate, as a run keeps them).",
                "",
                *table,
                "",
                f"Throughput against {copies} separate `contactlab run` processes: "
                f"{copies * one / batch_s:.1f}x in wall time and "
                f"{copies * one_cpu / batch_cpu:.1f}x in CPU time for the `Batch`, "
                f"{copies * one / sweep_s:.1f}x and "
                f"{copies * one_cpu / sweep_cpu:.1f}x for the batched `contactlab sweep` "
                f"(target: 10x). CPU time is the process's own (thread CPU time in this "
                "process, the children's user and system time for the commands); wall time "
                f"follows the machine's load. On seeds 0-{separate - 1} the batch spent "
                f"{mine * batch_cpu:.1f} s of CPU (its time shared out by work), the same "
                f"simulators one by one {lone_cpu:.1f} s.",
            ]
        )
        + "\n"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=200)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--backends", default="padmm")
    ap.add_argument("--copies", type=int, default=64)
    ap.add_argument("--batch-steps", type=int, default=100)
    ap.add_argument("--separate", type=int, default=8)
    ap.add_argument("--pgs-sizes", default="50,200,1000")
    ap.add_argument("--drop-steps", type=int, default=100)
    ap.add_argument("--rest-steps", type=int, default=30)
    ap.add_argument("--pose-every", type=int, default=5)
    ap.add_argument("--landed-sizes", default="200")
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--cone-sizes", default="200")
    ap.add_argument("--cone-drop-steps", type=int, default=60)
    ap.add_argument("--cone-rest-steps", type=int, default=20)
    ap.add_argument("--cone-max-iter", type=int, default=None)
    ap.add_argument("--fom-sizes", default="20,50,200")
    ap.add_argument("--fom-drop-steps", type=int, default=40)
    ap.add_argument("--fom-rest-steps", type=int, default=10)
    ap.add_argument("--fom-max-iter", type=int, default=None)
    ap.add_argument("--fom-methods", default="apgd,admm")
    ap.add_argument("--fom-models", default="coulomb,anitescu-hart")
    ap.add_argument("--lemke-sizes", default="20,50")
    ap.add_argument("--lemke-drop-steps", type=int, default=60)
    ap.add_argument("--lemke-rest-steps", type=int, default=4)
    ap.add_argument("--lemke-every", type=int, default=4)
    ap.add_argument(
        "--only", choices=("coulomb", "cone", "fom", "default", "pgs", "batch", "lemke")
    )
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    parts = ["# Contact stepping speed\n", "Written by `benchmarks/bench_contact_speed.py`.\n"]
    if args.only in (None, "coulomb"):
        parts.append(coulomb_section(args.boxes, args.steps, args.backends.split(",")))
    if args.only in (None, "cone"):
        parts.append(
            cone_section(
                [int(x) for x in args.cone_sizes.split(",")],
                args.cone_drop_steps,
                args.cone_rest_steps,
                args.pose_every,
                args.cone_max_iter,
            )  # fmt: skip
        )
    if args.only in (None, "fom"):
        parts.append(
            fom_section(
                [int(x) for x in args.fom_sizes.split(",")],
                args.fom_drop_steps,
                args.fom_rest_steps,
                args.pose_every,
                args.fom_max_iter,
                tuple(args.fom_methods.split(",")),
                tuple(args.fom_models.split(",")),
            )  # fmt: skip
        )
    if args.only in (None, "default"):
        parts.append(default_section())
    if args.only in (None, "pgs"):
        sizes = [int(x) for x in args.pgs_sizes.split(",")]
        landed = [int(x) for x in args.landed_sizes.split(",") if x]
        parts.append(
            pgs_section(
                sizes, args.drop_steps, args.rest_steps, args.pose_every, landed, args.settle
            )
        )
    if args.only in (None, "batch"):
        parts.append(batch_section(args.copies, args.batch_steps, args.separate))
    if args.only in (None, "lemke"):
        from benchmarks.bench_lemke_step import lemke_section

        parts.append(
            lemke_section(
                [int(x) for x in args.lemke_sizes.split(",")],
                args.lemke_drop_steps,
                args.lemke_rest_steps,
                args.lemke_every,
            )
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    from benchmarks.bench_lemke_step import LEMKE_HEAD

    heads = {
        "pgs": PGS_HEAD,
        "batch": BATCH_HEAD,
        "cone": CONE_HEAD,
        "fom": FOM_HEAD,
        "default": DEFAULT_HEAD,
        "lemke": LEMKE_HEAD,
    }
    if args.only in heads and args.out.exists():
        # the other sections stay: the section replaces its previous versions
        old = args.out.read_text().split("\n## ")
        head = heads[args.only]
        kept = [old[0].rstrip("\n") + "\n"] + [
            "## " + part.rstrip("\n") + "\n" for part in old[1:] if not part.startswith(head)
        ]
        parts = kept + parts[2:]
    args.out.write_text("\n".join(parts))
    print(args.out.read_text())


if __name__ == "__main__":
    main()
