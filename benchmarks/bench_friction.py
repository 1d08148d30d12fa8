"""Friction models x frictional-contact backends on landed box piles, beside today's routes.

Scene: ``box-pile`` (n cubes of 10 cm, 1 kg, mu = 0.5), n = 10, 100, 200,
1000, h = 5 ms, landed for ``settle`` seconds with box friction by PGS at
``solver_tol = 1e-4`` (:func:`benchmarks.bench_contact.landed_pile`), except
the sizes in ``--stacked`` (default n = 1000), built at rest at exact contact
(``box-pile`` with ``layout="stacked"``: four staggered square layers, every
cube on four below; landing 1000 dropped cubes took over an hour).  From the
start state each pair takes ``warmup`` untimed steps (its own warm start) and
``steps`` timed steps.  Each pair runs through the entry point of ``contactlab
run``: its :class:`~contactlab.runspec.RunSpec` (``box-pile``, the pair's model
and solver, and only the model options that differ from the defaults a user
gets: :func:`user_options`) is checked by :func:`~contactlab.runspec.check_fits`,
builds its simulator by :meth:`RunSpec.simulator`, and every step is
:meth:`Simulator.step` (stable contact ids, warm starts per persistent contact,
the step's metrics; until 28 November 2026 the benchmark assembled the step
itself).  A row whose figure needs options a user would not set names them
(``options``: the ``--model-option`` flags; ``command``: the whole command line,
in the CSV).  Reported per pair (medians over the timed steps unless said): the
step (thread CPU time [ms]) and its parts (collision, assembly, model solve: the
step record's wall-clock split applied to the step's thread CPU time), the
share of the step spent inside the compiled solver kernel (the
backend's own solve time, ``kernel_share``: wall time, and it counts the
backend's Python between its kernels as inside and the compiled collision and
assembly as outside), the share of the step's thread CPU time spent inside
compiled code (``compiled_share``, with ``compiled_calls`` the calls per step:
every call from Python of a numba kernel made by :func:`solvers.jit.njit` --
the box narrow phase, the Delassus and assembly kernels, the backends' kernels
-- or of the C extension or SuperLU's factorisation, timed by :func:`solvers.jit.kernel_accounting`,
entered around each step; a kernel called by a kernel is counted once, in its
caller; the proxy's own cost, about a microsecond per call, falls partly
inside and partly outside), the iterations, the number of timed steps that did
not reach the tolerance, the largest natural-map residual (Siconos/FCLIB's
``fc3d`` error relative to ``||q||``, see :mod:`solvers.frictional`), and
after the last step the deepest penetration [mm] and the fastest body speed
[mm/s] (a pile at rest stays at rest).

Pairs: ``anitescu-hart`` (exact cone and 4-direction pyramid), ``coulomb``
(exact cone) and ``box-friction`` with every new backend that fits
(``nsgs``, ``apgd``, ``admm``), beside today's best routes
(``box-friction`` by ``pgs`` at 1e-6, ``anitescu-hart`` by ``osqp``), and
``staggered-projections`` with the box cone by ``pgs`` at 1e-7, with its
default coupled start by ``ipm`` and as the alternation alone
(``coupled=None``); for it the CSV also records the largest natural map of
the friction at the returned iterate (``max_outer_natural_map``, relative to
the impulse scale of its stopping test) and the timed steps whose coupled
start failed (``coupled_fallbacks``).
Iterative backends are asked for the natural-map tolerance 1e-6.

Peers, on the same landed poses: MuJoCo (``pip install contactlab[peers]``;
elliptic cones, Newton solver, same h, mu, masses) as time per contact, and,
when Debian's ``python3-siconos`` is installed, Siconos's ``fc3d`` NSGS on the
step problems written as FCLIB files (solved through ``/usr/bin/python3`` in a
subprocess).

Landed piles are kept in ``results/scratch/friction-piles/`` (keyed by n, settle
and h) so that a second run does not land them again.  Every row records the
load average of the machine (1 minute, before and after the pair): on a
shared machine only ratios measured in the same run are comparable.  The
targets of the reading (end of the Markdown) are evaluated from the table by
:func:`targets`.

Run: ``python -m benchmarks.bench_friction`` (writes
``results/benchmarks/friction.{csv,md}``; ``--sizes``, ``--pairs``,
``--steps``, ``--warmup``, ``--settle``, ``--stacked`` change the set-up;
``--quick`` runs n = 10 and 100 with 1 + 3 steps; the pairs of ``ON_REQUEST``
(``coulomb / ipm (plain fixed point)``, ``box-friction / ipm (plain fixed point)``:
``ipm``'s Coulomb fixed point by the relaxed plain iteration, ``acceleration="none"``;
``box-friction / ipm (no Newton finish)`` and ``staggered-projections box / pgs (no Newton
finish)``: ``ipm`` on the box law without its semismooth Newton finish, ``newton=0``;
``stewart-trinkle / ipm`` and ``stewart-trinkle / ipm (no Newton finish)``: the pyramid law
by ``ipm`` with and without its Newton finish)
run only when named in ``--pairs``; ``--merge`` joins earlier
runs' tables, a later folder's row replacing an earlier one of the same size
and pair, so that a part can be re-run alone).

Long transient: ``--transient SECONDS`` steps each pair of ``TRANSIENT_PAIRS``
(``anitescu-hart`` soc and pyramid, ``coulomb`` and ``box-friction`` by ``ipm``,
``box-friction`` by ``pgs`` at 1e-6 and 1e-4, ``staggered-projections`` box by
``pgs``; each up to its largest size in ``PAIRS``) for SECONDS from the drop
(the pile's initial poses, not landed; ``--from-landed`` starts from the landed
pile instead), sizes 100 and 200 unless ``--sizes`` says otherwise, every step
as :meth:`Simulator.step` takes it and counted.  Per pair
(:func:`transient_summary`): the steps whose status is not ``optimal`` and the
first of them, the steps whose natural map exceeds the pair's tolerance, the
largest natural map, the median and largest iterations, the median, 90 %, 99 %
quantiles and largest step time (thread CPU time: collision, assembly, model
solve).  Writes ``friction_transient.{csv,md}``, each pair's per-step table
``friction_transient_steps-<n>-<pair>.csv``, and for the first step not
converged its posed problems (every inner solve's ``(problem, warm start)``, as
:func:`posed_problems` records them) with the state it started from, pickled in
``friction_transient_problems/<n>-<pair>.pkl`` to reproduce it:
``--replay PKL...`` solves those problems again (:func:`replay`) and prints their
status, iterations and natural map beside the saved ones.  ``--save-all`` pickles
every such step, not only the first (``<n>-<pair>-step<i>.pkl``).
"""

from __future__ import annotations

import argparse
import os
import pickle
import platform
import shlex
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.bench_contact import landed_pile
from contactlab.collision import collide
from contactlab.commands import parse_option_value
from contactlab.errors import StepFailure
from contactlab.models.base import SolvingModel, model_class
from contactlab.runspec import RunSpec, build_simulator, check_fits
from contactlab.scene import State
from contactlab.simulator import Simulator
from solvers.jit import kernel_accounting

SIZES = (10, 100, 200, 1000)
#: sizes built at rest (``layout="stacked"``) instead of dropped and landed
STACKED = (1000,)
TOL = {"solver_tol": 1e-6}
BASE = "box-friction / pgs (today)"
#: The same model and backend at the tolerance it reaches on piles: the converged baseline.
BASE_LOOSE = "box-friction / pgs (tol 1e-4)"

# (label, model, solver, options, largest n): nsgs and admm need thousands of
# sweeps / CG-heavy iterations on piles (measured at 100 boxes: 2-9 s per step,
# nsgs capped on most steps), so they run on the 10-box pile only; apgd runs up
# to 200, Anitescu-Hart soc by apgd and box friction by pgs to 1000; on the
# stacked piles (at rest, warm-started) the pairs of STACKED_PAIRS run too.
PAIRS: list[tuple[str, str, str, dict[str, Any], int]] = [
    (BASE, "box-friction", "pgs", {"solver_tol": 1e-6}, 1000),
    (BASE_LOOSE, "box-friction", "pgs", {"solver_tol": 1e-4}, 200),
    ("anitescu-hart soc / ipm", "anitescu-hart", "ipm", {"cone": "soc", **TOL}, 1000),
    ("anitescu-hart pyramid / ipm", "anitescu-hart", "ipm", {"directions": 4, **TOL}, 200),
    ("coulomb / ipm", "coulomb", "ipm", TOL, 200),
    ("box-friction / ipm", "box-friction", "ipm", TOL, 200),
    ("anitescu-hart / osqp (today)", "anitescu-hart", "osqp", {}, 100),
    (
        "staggered-projections box / pgs (today)",
        "staggered-projections",
        "pgs",
        {"cone": "box", "solver_tol": 1e-7},
        100,
    ),
    (
        "staggered-projections box / pgs (alternation only)",
        "staggered-projections",
        "pgs",
        {"cone": "box", "solver_tol": 1e-7, "coupled": None},
        100,
    ),
    ("anitescu-hart soc / nsgs", "anitescu-hart", "nsgs", {"cone": "soc", **TOL}, 10),
    ("anitescu-hart soc / apgd", "anitescu-hart", "apgd", {"cone": "soc", **TOL}, 1000),
    ("anitescu-hart soc / admm", "anitescu-hart", "admm", {"cone": "soc", **TOL}, 10),
    ("anitescu-hart pyramid / nsgs", "anitescu-hart", "nsgs", {"directions": 4, **TOL}, 10),
    ("anitescu-hart pyramid / apgd", "anitescu-hart", "apgd", {"directions": 4, **TOL}, 200),
    ("anitescu-hart pyramid / admm", "anitescu-hart", "admm", {"directions": 4, **TOL}, 10),
    ("coulomb / nsgs", "coulomb", "nsgs", TOL, 10),
    ("coulomb / apgd", "coulomb", "apgd", TOL, 200),
    ("coulomb / admm", "coulomb", "admm", TOL, 10),
    ("box-friction / nsgs", "box-friction", "nsgs", TOL, 10),
    ("box-friction / apgd", "box-friction", "apgd", TOL, 200),
    ("box-friction / admm", "box-friction", "admm", TOL, 10),
]

#: pairs that run on the stacked sizes whatever their largest landed size
STACKED_PAIRS = ("anitescu-hart soc / nsgs", "anitescu-hart soc / admm")

#: pairs that run only when named in ``--pairs``: ``ipm``'s Coulomb fixed point by the
#: relaxed plain iteration (its method before Newton's and Anderson's steps), for a
#: before/after comparison in the same run
ON_REQUEST: list[tuple[str, str, str, dict[str, Any], int]] = [
    (
        "box-friction / ipm (no Newton finish)",
        "box-friction",
        "ipm",
        {**TOL, "solver_settings": {"newton": 0}},
        200,
    ),
    (
        "staggered-projections box / pgs (no Newton finish)",
        "staggered-projections",
        "pgs",
        {"cone": "box", "solver_tol": 1e-7, "coupled_settings": {"newton": 0}},
        100,
    ),
    ("stewart-trinkle / ipm", "stewart-trinkle", "ipm", TOL, 200),
    (
        "stewart-trinkle / ipm (no Newton finish)",
        "stewart-trinkle",
        "ipm",
        {**TOL, "solver_settings": {"newton": 0}},
        200,
    ),
    (
        "coulomb / ipm (plain fixed point)",
        "coulomb",
        "ipm",
        {**TOL, "solver_settings": {"acceleration": "none"}},
        200,
    ),
    (
        "box-friction / ipm (plain fixed point)",
        "box-friction",
        "ipm",
        {**TOL, "solver_settings": {"acceleration": "none"}},
        200,
    ),
]


def stacked(n: int) -> tuple[Any, State]:
    """``box-pile`` of ``n`` cubes at rest at exact contact and its state at t = 0."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("box-pile").build(n=n, layout="stacked")
    return scene, Simulator(scene, "maximal", "frictionless", "pgs").initial_state()


def landed(n: int, settle: float, h: float, folder: Path) -> tuple[Any, State]:
    """:func:`landed_pile`, kept in ``folder`` once landed (the scene is rebuilt, cheap)."""
    from contactlab.scenario import get_scenario

    path = folder / f"landed-{n}-{settle:g}s-h{h:g}.pkl"
    if path.exists():
        with path.open("rb") as fh:
            state = pickle.load(fh)
        return get_scenario("box-pile").build(n=n), state
    scene, state = landed_pile(n, settle, h)
    folder.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(replace(state, cache=dict(state.cache)), fh)
    return scene, state


def pile_params(n: int, at_rest: bool = False) -> dict[str, Any]:
    """``box-pile``'s parameters for ``n`` cubes (``layout="stacked"`` when built at rest)."""
    return {"n": n, **({"layout": "stacked"} if at_rest else {})}


def user_options(model: str, solver: str, options: dict[str, Any]) -> dict[str, Any]:
    """The options of a pair that ``contactlab run`` would not take by default.

    An option equal to the model's default is left out, and so is a ``solver_tol``
    equal to the tolerance the model asks of ``solver`` when it is unset (its
    ``benchmarked_tol`` or the backend's ``tolerance.request``): what remains is what a
    user would have to set with ``--model-option`` to get the row's figure.
    """
    cls = model_class(model)
    assert issubclass(cls, SolvingModel), model  # every pair's model solves through the layer
    defaults = cls.merged_options()
    out = {}
    for key, value in options.items():
        if key == "solver_tol":
            if value is not None and float(value) != cls.default_tolerance(solver):
                out[key] = value
        elif defaults.get(key, object()) != value:
            out[key] = value
    return out


def pair_spec(n: int, at_rest: bool, model: str, solver: str, options: dict[str, Any],
              h: float) -> RunSpec:  # fmt: skip
    """The :class:`RunSpec` of a pair on the ``n``-cube pile: ``box-pile`` with the pair's
    model and solver, only the options :func:`user_options` names, and ``dt`` only when
    ``h`` is not the scene's own step -- the run ``contactlab run`` makes with the flags of
    :func:`command_line`.  Checked by :func:`check_fits` before anything is stepped."""
    from contactlab.scenario import get_scenario

    params = pile_params(n, at_rest)
    scene_dt = get_scenario("box-pile").build(**params).dt
    spec = RunSpec(
        "box-pile",
        params,
        "maximal",
        model,
        solver,
        dt=None if h == scene_dt else h,
        model_options=user_options(model, solver, options),
    )
    check_fits(spec)
    return spec


def _option_text(value: Any) -> str:
    """``value`` as ``--model-option`` reads it back (a plain word unquoted)."""
    if isinstance(value, str) and parse_option_value(value) == value:
        return value
    return repr(value)


def named_options(spec: RunSpec) -> str:
    """The flags beyond ``contactlab run``'s defaults that the pair's figure needs
    (``--model-option KEY=VALUE``, ``--dt``); empty when the defaults give it."""
    flags = [
        f"--model-option {shlex.quote(f'{k}={_option_text(v)}')}"
        for k, v in sorted(spec.model_options.items())
    ]
    if spec.dt is not None:
        flags.append(f"--dt {spec.dt:g}")
    return " ".join(flags)


def command_line(spec: RunSpec) -> str:
    """``contactlab run ...`` that makes the pair's run from the drop (the benchmark times it
    from the landed or stacked pile)."""
    sets = " ".join(f"--set {k}={v}" for k, v in spec.params.items())
    extra = named_options(spec)
    return f"contactlab run box-pile {sets} --model {spec.model} --solver {spec.solver}" + (
        f" {extra}" if extra else ""
    )


def timed_step(sim: Simulator, state: State, i: int) -> tuple[State, Any, dict[str, float]]:
    """One :meth:`Simulator.step` (the step of ``contactlab run``: collision, the
    jointed-pair filter, assembly, stable contact ids, the model's solve, integration,
    metrics) in thread CPU time, with the compiled calls inside it accounted.

    The step's parts (collision, assembly, solve) are its record's wall-clock split
    applied to the step's thread CPU time (the step runs on one thread).
    """
    with kernel_accounting() as account:
        w0 = time.perf_counter()
        t0 = time.thread_time()
        new, record = sim.step(state, i)
        cpu = time.thread_time() - t0
        wall = time.perf_counter() - w0
    m = record.metrics
    scale = cpu / max(float(m["step_time_s"]), 1e-12)
    times = {
        "collision": scale * float(m["collision_time_s"]),
        "assembly": scale * float(m["assembly_time_s"]),
        "solve": scale * float(m["solve_time_s"]),
        "step": cpu,
        "wall": wall,
        "compiled": account.seconds / max(cpu, 1e-12),
        "compiled_calls": float(account.calls),
    }
    return new, record, times


def measure(
    spec: RunSpec, start: State, steps: int, warmup: int,
) -> dict[str, float]:  # fmt: skip
    """Thread CPU times [ms] and accuracy of ``steps`` timed steps after ``warmup`` steps,
    each made by the simulator of ``spec`` (:meth:`RunSpec.simulator`, as ``contactlab
    run`` builds it) from ``start``."""
    sim = build_simulator(spec)
    model = spec.model
    state = start
    rows: list[dict[str, float]] = []
    warm_capped = 0
    load = os.getloadavg()[0]
    for i in range(warmup + steps):
        try:
            state, record, times = timed_step(sim, state, i)
        except StepFailure:
            return {"failed": 1.0, "failed_step": float(i)}
        problem, solution = record.problem, record.solution
        if i < warmup:
            warm_capped += int(solution.status != "optimal")
            continue
        # the backends time their compiled solve in wall time: compare with the step's wall time
        kernel = sum(r.solve_time for r in solution.results) / times["wall"]
        natural = max(
            (r.residuals.get("natural_map", np.nan) for r in solution.results), default=np.nan
        )
        if not np.isfinite(natural) and model == "box-friction":
            natural = fclib_natural_map(problem, solution)
        # Staggered Projections: the friction natural map of the returned iterate
        report = solution.report
        produced = getattr(report, "produced", None)
        outer_natural = float(produced[-1, 1]) if produced is not None and produced.size else np.nan
        # ... and whether its coupled start was used or the step fell back to the alternation
        coupled = getattr(report, "coupled", None)
        fallback = float(not coupled["used"]) if isinstance(coupled, dict) else np.nan
        rows.append(
            {
                **{k: times[k] for k in ("collision", "assembly", "solve", "step")},
                "kernel": kernel,
                "compiled": times["compiled"],
                "compiled_calls": times["compiled_calls"],
                "iterations": float(solution.iterations),
                "outer": float(solution.outer_iterations),
                "not_optimal": float(solution.status != "optimal"),
                "natural_map": float(natural),
                "outer_natural_map": outer_natural,
                "coupled_fallback": fallback,
                "contacts": float(problem.n_contacts),
            }
        )
    df = pd.DataFrame(rows)
    E, _ = sim.formulation.maximal(state)
    final = collide(sim.scene, E)
    speed = float(np.max(np.linalg.norm(state.phi[:, 3:], axis=1)))
    moved = float(np.max(np.linalg.norm(E[:, :3, 3] - start.E[:, :3, 3], axis=1)))
    return {
        "failed": 0.0,
        "step_ms": 1e3 * float(df["step"].median()),
        "collision_ms": 1e3 * float(df["collision"].median()),
        "assembly_ms": 1e3 * float(df["assembly"].median()),
        "solve_ms": 1e3 * float(df["solve"].median()),
        "kernel_share": float(df["kernel"].median()),
        "compiled_share": float(df["compiled"].median()),
        "compiled_calls": float(df["compiled_calls"].median()),
        "iterations": float(df["iterations"].median()),
        "outer_max": float(df["outer"].max()),
        "not_optimal": float(df["not_optimal"].sum()),
        "warmup_not_optimal": float(warm_capped),
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "max_natural_map": float(df["natural_map"].max()),
        "max_outer_natural_map": float(df["outer_natural_map"].max()),
        "coupled_fallbacks": float(df["coupled_fallback"].sum(min_count=1)),
        "contacts": float(df["contacts"].median()),
        "penetration_mm": 1e3 * float(np.max(-final.distance, initial=0.0)),
        "max_speed_mm_s": 1e3 * speed,
        "max_moved_mm": 1e3 * moved,
    }


def fclib_natural_map(problem: Any, solution: Any) -> float:
    """The FCLIB natural map of a box-friction step solved by an LCP route (e.g. ``pgs``).

    The step posed as the local Coulomb problem with the box cone
    (:func:`contactlab.models.fc_route.local_step`), at the solution's impulses:
    the measure the frictional-contact backends stop on (relative to
    ``||q||_2``), beside PGS's own (``max |z - P(z - w)|``, absolute).
    """
    from contactlab.models.fc_route import local_step
    from solvers.frictional import fc_residuals

    step = local_step(problem, "coulomb", "box")
    z = np.concatenate([solution.lambda_G, solution.lambda_N, solution.lambda_T, solution.lambda_L])
    return float(fc_residuals(step.fc, z[step.order])["natural_map"])


def mujoco_step(scene: Any, state: State, h: float, steps: int) -> dict[str, float] | None:
    """MuJoCo on the same poses (elliptic cones): median ms per step and contacts."""
    try:
        import mujoco
    except ImportError:
        return None
    half = 0.05
    bodies = []
    for k in range(state.E.shape[0]):
        bodies.append(
            f'<body name="b{k}"><freejoint/><geom type="box" size="{half} {half} {half}" '
            f'mass="1" friction="0.5 0.005 0.0001"/></body>'
        )
    xml = (
        f'<mujoco><option timestep="{h}" cone="elliptic" solver="Newton"/>'
        '<worldbody><geom type="plane" size="50 50 0.1" friction="0.5 0.005 0.0001"/>'
        + "".join(bodies)
        + "</worldbody></mujoco>"
    )
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    quat = np.empty(4)
    for k in range(state.E.shape[0]):
        mujoco.mju_mat2Quat(quat, state.E[k, :3, :3].ravel())
        data.qpos[7 * k : 7 * k + 3] = state.E[k, :3, 3]
        data.qpos[7 * k + 3 : 7 * k + 7] = quat
    mujoco.mj_forward(model, data)
    times, ncon = [], []
    for _ in range(steps + 2):
        t0 = time.thread_time()
        mujoco.mj_step(model, data)
        times.append(time.thread_time() - t0)
        ncon.append(data.ncon)
    return {"step_ms": 1e3 * float(np.median(times[2:])), "contacts": float(np.median(ncon[2:]))}


def mujoco_sample(scene: Any, state: State, row: dict[str, Any]) -> None:
    """MuJoCo's step of ``scene`` from ``state`` (:func:`mujoco_step`, one step) into ``row``:
    its CPU time per step [s] as ``mujoco`` and its contacts as ``mujoco_contacts`` (nothing
    without MuJoCo)."""
    mj = mujoco_step(scene, state, scene.dt, 1)
    if mj is not None:
        row["mujoco"] = 1e-3 * mj["step_ms"]
        row["mujoco_contacts"] = mj["contacts"]


def siconos_times(files: list[Path]) -> list[dict[str, Any]] | None:
    """Siconos's fc3d NSGS on FCLIB files, through the system Python, or ``None``.

    Debian's ``python3-siconos`` is built without FCLIB's I/O, so the files are
    read here (:func:`solvers.fclib.read`) and handed over as arrays
    (:func:`solvers.peers.siconos.fc3d`).
    """
    from solvers import fclib
    from solvers.peers import siconos

    if siconos.unavailable() is not None:
        return None
    problems = []
    for path in files:
        p = fclib.read(path).problem
        problems.append((p.W, p.q, p.mu))  # type: ignore[union-attr]
    try:
        out = siconos.fc3d(problems, tol=1e-6, max_iter=10000)
    except RuntimeError as exc:
        return [{"error_text": str(exc)}]
    keys = ("info", "time_s", "iterations", "error", "contacts")
    return [{"file": str(f), **{k: s[k] for k in keys}} for f, s in zip(files, out, strict=True)]


def posed_problems(sim: Simulator, state: State, steps: int) -> list[tuple[Any, Any]]:
    """``(problem, warm start)`` of every solve the model posed over ``steps`` steps."""
    from contactlab.models.base import SolvingModel

    posed: list[tuple[Any, Any]] = []
    original = SolvingModel.run

    def recording(self: SolvingModel, problem: Any, warm: Any = None) -> Any:
        posed.append((problem, warm))
        return original(self, problem, warm)

    SolvingModel.run = recording  # type: ignore[method-assign]
    try:
        for i in range(steps):
            state, _ = sim.step(state, i)
    finally:
        SolvingModel.run = original  # type: ignore[method-assign]
    return posed


def export_steps(scene: Any, state: State, h: float, out: Path, steps: int) -> list[Path]:
    """Coulomb step problems of the landed pile as FCLIB files (stepped by nsgs)."""
    from solvers import fclib

    sim = Simulator(scene, "maximal", "coulomb", "nsgs", dt=h, model_options=TOL)
    files = []
    for k, (problem, _) in enumerate(posed_problems(sim, state, steps)):
        path = out / f"pile-{scene.extras.get('n', len(scene.bodies))}-step{k}.hdf5"
        fclib.write(path, problem, title="box pile", description="contactlab coulomb step")
        files.append(path)
    return files


#: pairs of the long transient (``--transient``), by label of :data:`PAIRS` (each up to its
#: largest size there)
TRANSIENT_PAIRS = (
    "anitescu-hart soc / ipm",
    "anitescu-hart pyramid / ipm",
    "coulomb / ipm",
    "box-friction / ipm",
    BASE,
    BASE_LOOSE,
    "staggered-projections box / pgs (today)",
)


def transient_summary(steps: pd.DataFrame, tol: float) -> dict[str, float]:
    """Per-pair summary of a transient's per-step table (one row per step taken).

    ``steps`` has the columns ``status``, ``natural_map``, ``iterations``, ``outer``,
    ``step_ms`` and ``contacts``.  Counted: the steps whose status is not ``optimal``
    (capped or otherwise not converged), the steps whose natural map exceeds ``tol``
    (NaN, not measured, is not counted) and the largest natural map; the median and
    largest iterations; the step time's median, 90 %, 99 % quantiles and largest.
    """
    nat = steps["natural_map"].to_numpy(dtype=float)
    ms = steps["step_ms"].to_numpy(dtype=float)
    it = steps["iterations"].to_numpy(dtype=float)
    bad = steps["status"] != "optimal"
    return {
        "steps": float(len(steps)),
        "not_optimal": float(bad.sum()),
        "first_not_optimal": float(steps.index[bad][0]) if bad.any() else np.nan,
        "above_tol": float(np.sum(nat > tol)),
        "max_natural_map": float(np.nanmax(nat)) if np.isfinite(nat).any() else np.nan,
        "iterations_median": float(np.median(it)),
        "iterations_max": float(np.max(it)),
        "outer_max": float(steps["outer"].max()),
        "step_ms_median": float(np.median(ms)),
        "step_ms_p90": float(np.quantile(ms, 0.9)),
        "step_ms_p99": float(np.quantile(ms, 0.99)),
        "step_ms_max": float(np.max(ms)),
        "contacts_max": float(steps["contacts"].max()),
    }


def run_transient(
    spec: RunSpec, start: State, seconds: float, save: Path | None = None,
    save_all: bool = False,
) -> tuple[dict[str, float], pd.DataFrame]:  # fmt: skip
    """Step the simulator of ``spec`` for ``seconds`` from ``start``; its summary and
    per-step table.

    Each step is :meth:`Simulator.step` (stable contact ids, warm starts per persistent
    contact), timed in thread CPU time.  The first step that is not ``optimal`` or whose
    natural map exceeds the pair's tolerance has its posed problems (every inner solve's
    ``(problem, warm start)``, as :func:`posed_problems` records them) and the state it
    started from pickled to ``save`` (with ``save_all``, every such step, to ``save``
    with ``-step<i>`` before its suffix).  A step the simulator could not use ends the
    transient (``failed_step`` in the summary).
    """
    from contactlab.models.base import SolvingModel

    model, solver, options = spec.model, spec.solver, dict(spec.model_options)
    sim = build_simulator(spec)
    tol = float(getattr(sim.model, "tol", 1e-6))
    h = sim.dt
    state = start
    rows: list[dict[str, Any]] = []
    posed: list[tuple[Any, Any]] = []
    original = SolvingModel.run

    # per inner solve: the backend, tolerance, cap and settings it was posed with (a model
    # may pose its inner solves to more than one backend: Staggered Projections' coupled start)
    calls: list[tuple[str, float, Any, dict[str, Any]]] = []

    def recording(self: SolvingModel, problem: Any, warm: Any = None) -> Any:
        posed.append((problem, warm))
        settings = dict(self.options["solver_settings"] or {})
        calls.append((self.solver, self.tol, self.options["max_iter"], settings))
        return original(self, problem, warm)

    saved = ""
    failed_step = np.nan
    load = os.getloadavg()[0]
    SolvingModel.run = recording  # type: ignore[method-assign]
    try:
        for i in range(int(round(seconds / h))):
            posed.clear()
            calls.clear()
            started = state
            try:
                state, record, times = timed_step(sim, state, i)
            except StepFailure as err:
                usable, status, natural = False, "failed", np.nan
                rows.append({"step": i, "t": float(started.t), "status": status,
                             "natural_map": natural, "iterations": np.nan, "outer": np.nan,
                             "step_ms": np.nan, "contacts": np.nan, "error": str(err)})  # fmt: skip
            else:
                usable = True
                problem, solution = record.problem, record.solution
                status = str(solution.status)
                natural = max(
                    (r.residuals.get("natural_map", np.nan) for r in solution.results),
                    default=np.nan,
                )
                if not np.isfinite(natural) and model == "box-friction":
                    natural = fclib_natural_map(problem, solution)
                rows.append(
                    {
                        "step": i,
                        "t": float(started.t),
                        "status": status,
                        "natural_map": float(natural),
                        "iterations": float(solution.iterations),
                        "outer": float(solution.outer_iterations),
                        "step_ms": 1e3 * times["step"],
                        "contacts": float(problem.n_contacts),
                    }
                )
            bad = status != "optimal" or bool(natural > tol) or not usable
            if bad and save is not None and (save_all or not saved):
                target = save.with_name(f"{save.stem}-step{i}{save.suffix}") if save_all else save
                target.parent.mkdir(parents=True, exist_ok=True)
                with target.open("wb") as fh:
                    pickle.dump(
                        {"step": i, "status": status, "natural_map": natural,
                         "model": model, "solver": solver, "options": options, "h": h,
                         "posed": list(posed), "calls": list(calls),
                         "state": replace(started, cache=dict(started.cache))},
                        fh,
                    )  # fmt: skip
                saved = saved or str(target)
            if not usable:
                failed_step = float(i)
                break
    finally:
        SolvingModel.run = original  # type: ignore[method-assign]
    table = pd.DataFrame(rows)
    done = table[table["status"] != "failed"] if len(table) else table
    E, _ = sim.formulation.maximal(state)
    final = collide(sim.scene, E)
    summary = {
        **transient_summary(done, tol),
        "tol": tol,
        "failed_step": failed_step,
        "load_before": load,
        "load_after": os.getloadavg()[0],
        "penetration_mm": 1e3 * float(np.max(-final.distance, initial=0.0)),
        "max_speed_mm_s": 1e3 * float(np.max(np.linalg.norm(state.phi[:, 3:], axis=1))),
    }
    return {**summary, "saved_problem": saved}, table  # type: ignore[dict-item]


def replay(path: Path) -> list[dict[str, Any]]:
    """Solve again the posed problems of a step saved by :func:`run_transient`.

    Each inner problem by the pair's backend, at its tolerance and settings, from the
    saved warm start: its status, iterations and natural map beside the saved ones.
    """
    import solvers

    with Path(path).open("rb") as fh:
        saved = pickle.load(fh)
    options = saved["options"]
    pair = (
        saved["solver"],
        options.get("solver_tol", 1e-6),
        options.get("max_iter"),
        options.get("solver_settings") or {},
    )
    # the backend each inner solve was posed to (older files: the pair's backend for all)
    calls = saved.get("calls") or [pair] * len(saved["posed"])
    out = []
    for (problem, warm), (solver, tol, cap, settings) in zip(saved["posed"], calls, strict=True):
        res = solvers.solve(problem, solver, tol=tol, max_iter=cap, warm_start=warm, **settings)
        out.append(
            {
                "file": str(path),
                "step": saved["step"],
                "saved_status": saved["status"],
                "saved_natural_map": saved["natural_map"],
                "solver": solver,
                "status": str(res.status),
                "iterations": int(res.iterations),
                "natural_map": float(res.residuals.get("natural_map", np.nan)),
            }
        )
    return out


def _row(df: pd.DataFrame, n: int, pair: str) -> dict[str, Any] | None:
    hit = df[(df["n"] == n) & (df["pair"] == pair)]
    if hit.empty or bool(hit.iloc[0]["failed"]):
        return None
    return dict(hit.iloc[0])


def _converged(r: dict[str, Any]) -> bool:
    return bool(r["not_optimal"] == 0 and r["max_natural_map"] <= 1e-6)


def _verdict(ok: bool | None) -> str:
    return "not measured" if ok is None else ("met" if ok else "not met")


SOC_PAIRS = (
    "anitescu-hart soc / ipm",
    "anitescu-hart soc / apgd",
    "anitescu-hart soc / nsgs",
    "anitescu-hart soc / admm",
)


#: the frictional-contact backends the issue asks for (and ``ipm`` on the same problems)
NEW_BACKENDS = ("nsgs", "apgd", "admm", "ipm")


def _new_backend(pair: str) -> bool:
    """Whether a pair is solved by one of :data:`NEW_BACKENDS`."""
    parts = pair.split(" / ")
    return len(parts) == 2 and parts[1].split()[0] in NEW_BACKENDS


def targets(df: pd.DataFrame) -> list[str]:
    """The issue's targets evaluated on this run's table (one Markdown line each).

    The target "time outside compiled kernels <= 30 % of the step" is evaluated on
    ``compiled_share`` (thread CPU time inside every compiled call of the step:
    collision, assembly and Delassus kernels, the backend's kernels; see
    :func:`solvers.jit.kernel_accounting`) for the pairs of the new backends
    (:data:`NEW_BACKENDS`: ``nsgs``, ``apgd``, ``admm``, ``ipm``), which the
    target is about.  Today's routes (``pgs``, ``osqp``, Staggered Projections'
    alternation) are reported beside but excluded: they are the baselines the new
    backends are compared to (box friction by ``pgs`` is the LCP route with its
    own Python set-up per step; ``osqp`` is a foreign library), not the
    compiled contact step the target asks for.
    """
    out = []
    for label, pairs, factor in (
        ("anitescu-hart soc", ["anitescu-hart soc / ipm", "anitescu-hart soc / apgd",
                               "anitescu-hart soc / nsgs", "anitescu-hart soc / admm"], 2.0),
        ("anitescu-hart pyramid", ["anitescu-hart pyramid / ipm", "anitescu-hart pyramid / apgd",
                                   "anitescu-hart pyramid / nsgs",
                                   "anitescu-hart pyramid / admm"], 2.0),
        ("coulomb", ["coulomb / ipm", "coulomb / apgd", "coulomb / nsgs", "coulomb / admm"], 4.0),
    ):  # fmt: skip
        base, base_label = _row(df, 200, BASE), BASE
        if base is None or base["not_optimal"] > 0:
            base, base_label = _row(df, 200, BASE_LOOSE), BASE_LOOSE
        rows = [(p, _row(df, 200, p)) for p in pairs]
        rows = [(p, r) for p, r in rows if r is not None]
        if base is None or not rows:
            out.append(f"- **{label} at 200 boxes, converged, <= {factor:g}x box-friction/pgs**: "
                       "not measured.")  # fmt: skip
            continue
        p, r = min(rows, key=lambda pr: (not _converged(pr[1]), pr[1]["step_ms"]))
        ratio = r["step_ms"] / base["step_ms"]
        ok = _converged(r) and ratio <= factor and base["not_optimal"] == 0
        base_note = (
            f"{base['not_optimal']:.0f} of its timed steps capped"
            if base["not_optimal"]
            else "every timed step converged"
        )
        out.append(
            f"- **{label} at 200 boxes, every step converged, <= {factor:g}x box-friction/pgs "
            f"(converged)**: {_verdict(ok)}. Best: {p}, {r['step_ms']:.0f} ms per step, "
            f"{r['not_optimal']:.0f} timed steps not converged, natural map <= "
            f"{r['max_natural_map']:.1e}; {ratio:.2f}x {base_label} ({base['step_ms']:.0f} ms, "
            f"{base_note})."
        )
    big = [(p, _row(df, 1000, p)) for p in SOC_PAIRS]
    big = [(p, r) for p, r in big if r is not None]
    if not big:
        out.append("- **1000 boxes, anitescu-hart soc at rest, <= 150 ms per step**: not measured.")
    else:
        p, r = min(big, key=lambda pr: (not _converged(pr[1]), pr[1]["step_ms"]))
        rest = r["penetration_mm"] < 1.0 and r["max_speed_mm_s"] < 1.0
        ok = _converged(r) and rest and r["step_ms"] <= 150.0
        base = _row(df, 1000, BASE)
        beside = (
            f"; {BASE}: {base['step_ms']:.0f} ms, fastest body {base['max_speed_mm_s']:.2g} mm/s"
            if base is not None
            else ""
        )
        pile = "stacked at rest" if r.get("pile") == "stacked" else "landed"
        out.append(
            f"- **1000 boxes ({pile}), anitescu-hart soc at rest, <= 150 ms per step**: "
            f"{_verdict(ok)}. Best: {p}, {r['step_ms']:.0f} ms per step "
            f"(solve {r['solve_ms']:.0f}, collision {r['collision_ms']:.0f}, assembly "
            f"{r['assembly_ms']:.0f}), {r['iterations']:.0f} iterations, "
            f"{r['not_optimal']:.0f} timed steps not converged, natural map <= "
            f"{r['max_natural_map']:.1e}, penetration {r['penetration_mm']:.2f} mm, fastest body "
            f"{r['max_speed_mm_s']:.2g} mm/s, moved up to {r['max_moved_mm']:.2g} mm{beside}."
        )
    sp_rows = [
        (p, r)
        for p in df["pair"].unique()
        if str(p).startswith("staggered-projections")
        for r in [_row(df, 100, p)]
        if r is not None
    ]
    if not sp_rows:
        out.append(
            "- **staggered-projections at 100 boxes, <= 20 outer iterations**: not measured."
        )
    for p, r in sp_rows:
        left = r.get("max_outer_natural_map", np.nan)
        # converged: the stopping test met on every step and the friction's natural map at
        # the returned iterate within the same tolerance (contactlab.models.staggered)
        ok = r["outer_max"] <= 20 and r["not_optimal"] == 0 and bool(left <= 1e-6)
        left_note = (
            f", friction natural map of the returned iterate up to {left:.1e} of the impulse "
            "scale (tolerance 1e-6)"
            if np.isfinite(left)
            else ""
        )
        falls = r.get("coupled_fallbacks", np.nan)
        if np.isfinite(falls):
            left_note += f", {falls:.0f} timed steps fell back from the coupled start"
        # the alternation without its coupled start runs beside as the comparison
        head = (
            "staggered-projections at 100 boxes, the alternation alone (coupled=None, "
            "for comparison), <= 20 outer iterations, all converged"
            if "alternation only" in str(p)
            else "staggered-projections at 100 boxes, <= 20 outer iterations, all converged"
        )
        out.append(
            f"- **{head}**: "
            f"{_verdict(ok)} ({p}: up to {r['outer_max']:.0f} outer iterations, "
            f"{r['not_optimal']:.0f} timed steps not converged, {r['step_ms']:.0f} ms per step"
            f"{left_note})."
        )
    landed_sizes = df["n"] if "pile" not in df else df["n"][df["pile"] != "stacked"]
    for n in sorted(landed_sizes.unique()):  # a stacked pile has no landing transient
        bf = [
            (p, _row(df, n, p))
            for p in df["pair"].unique()
            if str(p).startswith("box-friction")
            and p != BASE_LOOSE
            and p not in {q[0] for q in ON_REQUEST}
        ]
        parts = [
            f"{p.split(' / ')[1].split()[0]} {r['warmup_not_optimal'] + r['not_optimal']:.0f}"
            for p, r in bf
            if r is not None
        ]
        clean = [
            p for p, r in bf if r is not None and r["warmup_not_optimal"] + r["not_optimal"] == 0
        ]
        if parts:
            met = "met by " + ", ".join(clean) if clean else "not met"
            out.append(
                f"- **box friction at 1e-6, no capped step in the transient ({n} boxes, all "
                f"untimed and timed steps after landing)**: {met}; "
                f"steps not converged per backend: {', '.join(parts)}."
            )
    # the time outside compiled code, on the accounting of every compiled call
    # (compiled_share), for the pairs of the new backends only (NEW_BACKENDS)
    r200 = [(p, _row(df, 200, p)) for p in df["pair"].unique() if _new_backend(str(p))]
    r200 = [
        (p, r) for p, r in r200 if r is not None and np.isfinite(r.get("compiled_share", np.nan))
    ]
    if r200:
        outside = ", ".join(f"{p} {1 - r['compiled_share']:.0%}" for p, r in r200)
        ok = all(1 - r["compiled_share"] <= 0.3 for _, r in r200)
        out.append(
            f"- **200 boxes, time outside compiled kernels <= 30 % of the step (pairs of "
            f"{', '.join(NEW_BACKENDS)}; thread CPU time outside every compiled call)**: "
            f"{_verdict(ok)} ({outside})."
        )
    return out


def _options_cell(r: Any) -> str:
    """The row's flags beyond ``contactlab run``'s defaults, for a Markdown cell (rows
    written before the column existed: ``?``)."""
    value = r.get("options", None)
    if not isinstance(value, str):
        return "?" if value is None or pd.isna(value) else str(value)
    return f"`{value}`" if value else ""


def write_markdown(df: pd.DataFrame, peers: pd.DataFrame, path: Path, args: Any) -> None:
    lines = [
        "# Friction models x frictional-contact backends on landed box piles",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores shared "
        f"with other jobs, Python {platform.python_version()}; thread CPU time, h = {args.h:g} s, "
        f"piles landed for {args.settle:g} s; {args.warmup} untimed then {args.steps} timed steps "
        "per pair (medians). `kernel` = share of the step (wall time) inside the backend's "
        "compiled solve; `compiled` = share of the step's thread CPU time inside every "
        "compiled call (collision, assembly, backend kernels; `solvers.jit.kernel_accounting`); "
        "`natural map` = largest Siconos/FCLIB natural-map residual (relative "
        "to ||q||) of the timed steps; `capped` = timed steps not converged (untimed in "
        "brackets); `outer` = most outer iterations of a step; `load` = 1-minute load average "
        "before the pair; penetration and body speed after the last step. `n stacked` = the "
        "pile built at rest at exact contact (`box-pile` layout `stacked`), not landed. "
        "Written by `python -m benchmarks.bench_friction`.",
        "",
        "Each pair is the run `contactlab run box-pile` makes with `--model` and `--solver` "
        "(`RunSpec`, `Simulator.step`, the defaults a user gets), timed from the pile; "
        "`options` names the flags beyond those defaults that a row's figure needs (empty: "
        "none), the CSV's `command` column the whole command line.",
        "",
        "| n | pair | options | contacts | step [ms] | collision | assembly | solve | kernel | "
        "compiled | iterations | outer | capped | natural map | penetration [mm] | "
        "speed [mm/s] | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in df.iterrows():
        n_label = f"{r['n']} stacked" if r.get("pile") == "stacked" else f"{r['n']}"
        if r["failed"]:
            lines.append(
                f"| {n_label} | {r['pair']} | {_options_cell(r)} | | failed at step "
                f"{int(r['failed_step'])} | | | | | | | | | | | | |"
            )
            continue
        lines.append(
            f"| {n_label} | {r['pair']} | {_options_cell(r)} | {r['contacts']:.0f} | "
            f"{r['step_ms']:.1f} | "
            f"{r['collision_ms']:.1f} | {r['assembly_ms']:.1f} | {r['solve_ms']:.1f} | "
            f"{r['kernel_share']:.0%} | {r.get('compiled_share', np.nan):.0%} | "
            f"{r['iterations']:.0f} | {r['outer_max']:.0f} | "
            f"{r['not_optimal']:.0f} ({r['warmup_not_optimal']:.0f}) | "
            f"{r['max_natural_map']:.1e} | {r['penetration_mm']:.2f} | "
            f"{r['max_speed_mm_s']:.2f} | {r['load_before']:.1f} |"
        )
    if not peers.empty:
        lines += ["", "## Peers on the same start poses", ""]
        lines += ["| n | peer | contacts | step [ms] | per contact [us] |", "|---|---|---|---|---|"]
        for _, r in peers.iterrows():
            per = 1e3 * r["step_ms"] / max(r["contacts"], 1.0)
            lines.append(
                f"| {r['n']} | {r['peer']} | {r['contacts']:.0f} | {r['step_ms']:.2f} | {per:.1f} |"
            )
    lines += ["", "## Targets (evaluated on this run's table)", "", *targets(df)]
    path.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--settle", type=float, default=2.0)
    parser.add_argument(
        "--stacked", type=int, nargs="*", default=list(STACKED),
        help="sizes built at rest (layout stacked) instead of dropped and landed",
    )  # fmt: skip
    parser.add_argument("--h", type=float, default=5e-3)
    parser.add_argument("--pairs", nargs="*", default=None, help="labels to run (default all)")
    parser.add_argument("--quick", action="store_true", help="n = 10 and 100, 1 + 3 steps")
    parser.add_argument("--no-peers", action="store_true", help="skip MuJoCo and Siconos")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    parser.add_argument("--piles", type=Path, default=Path("results/scratch/friction-piles"))
    parser.add_argument(
        "--merge", type=Path, nargs="*", default=None,
        help="folders of earlier runs whose friction.csv / friction_peers.csv to join",
    )  # fmt: skip
    parser.add_argument(
        "--transient", type=float, default=None, metavar="SECONDS",
        help="step the pairs of TRANSIENT_PAIRS for SECONDS from the drop (default sizes "
        "100 and 200); writes friction_transient.{csv,md}",
    )  # fmt: skip
    parser.add_argument(
        "--from-landed", action="store_true",
        help="with --transient: start from the landed pile instead of the drop",
    )  # fmt: skip
    parser.add_argument(
        "--save-all", action="store_true",
        help="with --transient: pickle every step not converged, not only the first",
    )  # fmt: skip
    parser.add_argument(
        "--replay", type=Path, nargs="+", default=None, metavar="PKL",
        help="solve again the steps saved by --transient and print their status",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.replay:
        for path in args.replay:
            for r in replay(path):
                print(r, flush=True)
        return
    if args.transient is not None:
        sizes = [100, 200] if args.sizes == list(SIZES) else args.sizes
        main_transient(sizes, args)
        return
    if args.quick:
        args.sizes, args.steps, args.warmup = [10, 100], 3, 1
    args.out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        tables = [pd.read_csv(d / "friction.csv") for d in args.merge]
        peer_files = [d / "friction_peers.csv" for d in args.merge]
        peer_tables = [pd.read_csv(f) for f in peer_files if f.exists()]
        # a later folder's row replaces an earlier one of the same size and pair
        df = pd.concat(tables, ignore_index=True).drop_duplicates(["n", "pair"], keep="last")
        peers = pd.concat(peer_tables, ignore_index=True) if peer_tables else pd.DataFrame()
        if not peers.empty:
            peers = peers.drop_duplicates(["n", "peer"], keep="last")
        df.to_csv(args.out / "friction.csv", index=False)
        if not peers.empty:
            peers.to_csv(args.out / "friction_peers.csv", index=False)
        write_markdown(df, peers, args.out / "friction.md", args)
        return
    rows, peer_rows = [], []
    for n in args.sizes:
        at_rest = n in args.stacked
        scene, state = stacked(n) if at_rest else landed(n, args.settle, args.h, args.piles)
        requested = [p for p in ON_REQUEST if args.pairs and p[0] in args.pairs]
        for label, model, solver, options, largest in PAIRS + requested:
            runs = n <= largest or (at_rest and label in STACKED_PAIRS)
            if not runs or (args.pairs and label not in args.pairs):
                continue
            spec = pair_spec(n, at_rest, model, solver, options, args.h)
            row = measure(spec, state, args.steps, args.warmup)
            rows.append({"n": n, "pair": label, "pile": "stacked" if at_rest else "landed",
                         "options": named_options(spec), "command": command_line(spec),
                         **row})  # fmt: skip
            print(n, label, {k: round(v, 4) for k, v in row.items()}, flush=True)
            # written as it goes: a long run cut short keeps what it measured
            pd.DataFrame(rows).to_csv(args.out / "friction.csv", index=False)
        if args.no_peers:
            continue
        mj = mujoco_step(scene, state, args.h, args.steps)
        if mj is not None:
            peer = "mujoco (elliptic, Newton)" + (", stacked pile" if at_rest else "")
            peer_rows.append({"n": n, "peer": peer, **mj})
        if n <= 100 and not at_rest:
            with tempfile.TemporaryDirectory() as tmp:
                files = export_steps(scene, state, args.h, Path(tmp), 3)
                sic = siconos_times(files)
                if sic and "time_s" in sic[0]:
                    failed = sum(s["info"] != 0 for s in sic)
                    peer_rows.append(
                        {
                            "n": n,
                            "peer": f"siconos fc3d NSGS solve only (tol 1e-6; {failed} of "
                            f"{len(sic)} FCLIB steps not converged, max error "
                            f"{max(s['error'] for s in sic):.1e})",
                            "step_ms": 1e3 * float(np.median([s["time_s"] for s in sic])),
                            "contacts": float(sic[0]["contacts"]),
                        }
                    )
                ours = [fclib_solve_ms(f) for f in files]
                peer_rows.append(
                    {
                        "n": n,
                        "peer": "contactlab nsgs solve only (tol 1e-6, same FCLIB steps, cold)",
                        "step_ms": float(np.median(ours)),
                        "contacts": float(scene_contacts(files[0])),
                    }
                )
    df = pd.DataFrame(rows)
    peers = pd.DataFrame(peer_rows)
    df.to_csv(args.out / "friction.csv", index=False)
    if not peers.empty:
        peers.to_csv(args.out / "friction_peers.csv", index=False)
    write_markdown(df, peers, args.out / "friction.md", args)


def main_transient(sizes: list[int], args: Any) -> None:
    """``--transient``: every pair of :data:`TRANSIENT_PAIRS` up to its largest size."""
    from contactlab.scenario import get_scenario

    args.out.mkdir(parents=True, exist_ok=True)
    by_label = {p[0]: p for p in PAIRS}
    pairs = [by_label[q] for q in TRANSIENT_PAIRS if not args.pairs or q in args.pairs]
    rows = []
    for n in sizes:
        if args.from_landed:
            scene, state = landed(n, args.settle, args.h, args.piles)
        else:
            scene = get_scenario("box-pile").build(n=n)
            state = Simulator(scene, "maximal", "frictionless", "pgs").initial_state()
        for label, model, solver, options, largest in pairs:
            if n > largest:
                continue
            slug = label.replace(" / ", "-").replace(" ", "-").replace("(", "").replace(")", "")
            save = args.out / "friction_transient_problems" / f"{n}-{slug}.pkl"
            spec = pair_spec(n, False, model, solver, options, args.h)
            summary, table = run_transient(spec, state, args.transient, save, args.save_all)
            named = {"options": named_options(spec), "command": command_line(spec)}
            table.to_csv(args.out / f"friction_transient_steps-{n}-{slug}.csv", index=False)
            start = "landed" if args.from_landed else "drop"
            rows.append({"n": n, "pair": label, "start": start, **named, "seconds": args.transient,
                         **summary})  # fmt: skip
            print(n, label, summary, flush=True)
            pd.DataFrame(rows).to_csv(args.out / "friction_transient.csv", index=False)
    df = pd.DataFrame(rows)
    df.to_csv(args.out / "friction_transient.csv", index=False)
    write_transient_markdown(df, args.out / "friction_transient.md", args)


def write_transient_markdown(df: pd.DataFrame, path: Path, args: Any) -> None:
    """The table of ``--transient`` (one row per size and pair)."""
    lines = [
        "# Friction pairs over a long pile transient",
        "",
        f"{args.transient:g} s from `start` (`drop`: the pile's initial poses, not landed; "
        f"`landed`: the pile landed for {args.settle:g} s), h = {args.h:g} s, every step "
        "counted; thread CPU "
        "time per step (collision, assembly, model solve). `not optimal` = steps whose status "
        "is not `optimal` (first such step in brackets); `> tol` = steps whose natural map "
        "(Siconos/FCLIB, relative to ||q||) exceeds the pair's tolerance; `load` = 1-minute "
        "load average before / after; the largest step time can include a kernel's first-use "
        "compilation (numba, cached afterwards), the 99 % quantile does not. "
        f"Machine: {os.cpu_count()} cores shared with other jobs. "
        "Written by `python -m benchmarks.bench_friction --transient SECONDS`.",
        "",
        "Each pair is the run `contactlab run box-pile` makes (`RunSpec`, `Simulator.step`); "
        "`options` names the flags beyond its defaults that the row needs.",
        "",
        "| n | start | pair | options | steps | not optimal | > tol | natural map max "
        "| iterations median / max | outer max | step ms median / p90 / p99 / max "
        "| contacts max | penetration [mm] "
        "| load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for _, r in df.iterrows():
        first = f" ({r['first_not_optimal']:.0f})" if np.isfinite(r["first_not_optimal"]) else ""
        failed = f", failed at step {r['failed_step']:.0f}" if np.isfinite(r["failed_step"]) else ""
        lines.append(
            f"| {r['n']} | {r['start']} | {r['pair']} | {_options_cell(r)} | "
            f"{r['steps']:.0f}{failed} "
            f"| {r['not_optimal']:.0f}{first} | {r['above_tol']:.0f} "
            f"| {r['max_natural_map']:.1e} | "
            f"{r['iterations_median']:.0f} / {r['iterations_max']:.0f} | {r['outer_max']:.0f} | "
            f"{r['step_ms_median']:.1f} / {r['step_ms_p90']:.1f} / {r['step_ms_p99']:.1f} / "
            f"{r['step_ms_max']:.1f} | {r['contacts_max']:.0f} | {r['penetration_mm']:.2f} | "
            f"{r['load_before']:.1f} / {r['load_after']:.1f} |"
        )
    path.write_text("\n".join(lines) + "\n")


def fclib_solve_ms(path: Path) -> float:
    """Thread CPU time [ms] of nsgs on an FCLIB file from zero impulses (as Siconos starts)."""
    from solvers import fclib, solve

    problem = fclib.read(path).problem
    t0 = time.thread_time()
    solve(problem, "nsgs", tol=1e-6, max_iter=10000)
    return 1e3 * (time.thread_time() - t0)


def scene_contacts(path: Path) -> int:
    """Number of contacts of an FCLIB file."""
    from solvers import fclib

    problem = fclib.read(path).problem
    return int(problem.nc)


if __name__ == "__main__":
    main()
