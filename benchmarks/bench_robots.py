"""Real robots in: every URDF of ``example-robot-data`` through the loader, against Pinocchio.

Sections (each a function ``section_<name>(args) -> (markdown lines, DataFrame)``;
``results/benchmarks/robots.md`` holds them in order, ``robots_<name>.csv``
each table):

``urdf``
    For each of the package's URDF files: does Pinocchio's parser load it
    (``buildModelFromUrdf``), does contactlab's (:func:`load_urdf` with
    ``collision="convex"``; else the one-line reason), how many warning
    lines it gives, and the agreement of the dynamics: the largest relative
    difference (``max |ours - theirs| / max |theirs|``) of ``M``, the bias
    ``h``, forward dynamics (Pinocchio's ``aba``) and inverse dynamics
    (``rnea``) over three random states, for the fixed and the floating base
    (Pinocchio's free flyer), coordinates mapped by
    :class:`contactlab.reduced.pinocchio_.PinocchioCoordinates`; forward dynamics
    also as the backward error ``max |M (a - a_p)| / (max |M| max |a_p|)``,
    which the condition number of ``M`` (in the table) does not magnify.  Robots with
    ``<mimic>`` joints are also compared with the coupled dynamics of
    Pinocchio's ``mimic=True`` model (:func:`coupled_errors`, fixed base).
    Load times: contactlab without collision geometry against Pinocchio's
    kinematic model, and contactlab with convex hulls against Pinocchio's
    model plus its collision geometry (``buildGeomFromUrdf``, meshes read by
    coal); the fastest of a few repeats, wall time.

``step``
    The reduced-coordinate contact step of the robot scenarios
    ``solo12-stand``, ``solo12-collapse`` and ``humanoid-topple``
    (``scenarios/robots.py``) against MuJoCo stepping the same model, side by
    side in one process: the scene's tree, masses, joint frames, PD drives
    (joint springs and dampers), convex hulls, excluded pairs, step, gravity
    and friction written into an ``MjModel``
    (:mod:`benchmarks.mujoco_scene`), Newton solver, pyramidal and elliptic
    cones.  Each engine runs ``--steps`` steps from the scenario's initial
    state (MuJoCo: the fastest of five passes), timed by this thread's CPU time
    (``time.thread_time``: on a shared machine other processes' load is not
    counted); contactlab's time is the median of the whole ``Simulator.step`` (collision,
    assembly, contact solve, integration, metrics) on the default route and
    on the alternatives (box friction by PGS, Anitescu--Hart and Coulomb
    friction by the interior-point method), MuJoCo's ``mj_step``; on the
    default route also the cost per step of ``Simulator.run`` (step table,
    trajectory, divergence guard: what ``contactlab run`` pays) and its set-up.  The
    base height at the end is shown for both engines as a check that they
    simulate the same thing (MuJoCo's soft contacts sink about a millimetre).

Requirements: ``pip install example-robot-data pin`` (both in ``contactlab[test]``).
Run: ``python -m benchmarks.bench_robots`` (about 3 minutes).
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import platform
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from contactlab.errors import ModelFileWarning
from contactlab.reduced.constraints import Coupling, scene_constraints
from contactlab.reduced.model import Model
from contactlab.reduced.urdf import load_urdf
from contactlab.reduced.urdf_geometry import example_robot_data

#: agreement target with Pinocchio (issue 24)
TARGET = 1e-9
KEYS = ("M", "h", "FD", "ID", "FD_force")
LABELS = {"M": "M", "h": "h", "FD": "FD", "ID": "ID", "FD_force": "FD backward error"}


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """The result of ``fn`` and its fastest wall time over ``repeats`` calls [s]."""
    best, out = np.inf, None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


def _reason(err: BaseException) -> str:
    return f"{type(err).__name__}: {' '.join(str(err).split())}"


def _load(path: Path, **kwargs: Any) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always", ModelFileWarning)
        scene = load_urdf(path, **kwargs)
    return scene, [str(w.message) for w in record if issubclass(w.category, ModelFileWarning)]


def _agreement(path: Path, rng: np.random.Generator) -> dict[str, float]:
    """Largest relative differences to Pinocchio over both bases and three states."""
    import pinocchio as pin

    from contactlab.reduced.pinocchio_ import PinocchioCoordinates, dynamics_errors

    seen: dict[str, list[float]] = {k: [] for k in KEYS}
    cond = 0.0
    for fixed in (True, False):
        scene, _ = _load(path, collision="none", fixed_base=fixed)
        model = Model.from_scene(scene)
        if fixed:
            pm = pin.buildModelFromUrdf(str(path))
        else:
            pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        peer = PinocchioCoordinates(model.tree, pm)
        for _ in range(3):
            q, qdot, qddot = model.random_state(rng)
            tau = rng.uniform(-1.0, 1.0, model.nq)
            for k, v in dynamics_errors(model, peer, q, qdot, tau, qddot).items():
                seen[k].append(v)
            cond = max(cond, float(np.linalg.cond(model.mass_matrix(q))) if model.nq else 1.0)
    # NaN (M singular in both libraries) wins over any number
    worst = {k: float(np.max(v)) for k, v in seen.items()}
    return {**{f"{k}_error": v for k, v in worst.items()}, "cond_M": cond}


def _mimic_agreement(path: Path, scene: Any, rng: np.random.Generator) -> tuple[int, float, str]:
    """Couplings, the largest relative difference of the coupled dynamics, and a note."""
    import pinocchio as pin

    from contactlab.reduced import Tree
    from contactlab.reduced.pinocchio_ import PinocchioCoordinates, coupled_errors

    couplings = [c for c in scene.constraints if isinstance(c, Coupling)]
    if not couplings:
        return 0, float("nan"), ""
    tree = Tree.from_scene(scene)
    bound = [c for c in scene_constraints(scene, tree) if isinstance(c, Coupling)]
    try:
        pm = pin.buildModelFromUrdf(str(path), True)
    except Exception as err:  # Pinocchio refuses some mimic layouts
        return len(bound), float("nan"), f"Pinocchio's mimic model: {_reason(err)}"
    peer = PinocchioCoordinates(tree, pm)
    worst = 0.0
    for _ in range(3):
        q, qdot, tau = (rng.uniform(-1.0, 1.0, tree.nq) for _ in range(3))
        for c in bound:
            q[c.ib] = c.ratio * q[c.ia] + c.offset
            qdot[c.ib] = c.ratio * qdot[c.ia]
        worst = max(worst, *coupled_errors(tree, bound, peer, q, qdot, tau).values())
    return len(bound), worst, ""


def measure_urdf(path: Path, root: Path, repeats: int) -> dict[str, Any]:
    """One row of the ``urdf`` section (see the module docstring)."""
    import pinocchio as pin

    row: dict[str, Any] = {"robot": str(path.relative_to(root))}
    share = root.parent.parent
    try:
        pm, row["pin_model_ms"] = _timed(lambda: pin.buildModelFromUrdf(str(path)), repeats)
        row["pin_loads"], row["pin_nv"] = True, pm.nv
        _, t_geom = _timed(
            lambda: pin.buildGeomFromUrdf(
                pm, str(path), pin.GeometryType.COLLISION, package_dirs=[str(share)]
            ),
            max(1, repeats // 2),
        )
        row["pin_geometry_ms"] = row["pin_model_ms"] + t_geom
        row["pin_model_ms"] *= 1e3
        row["pin_geometry_ms"] *= 1e3
    except Exception as err:  # Pinocchio's parser raises RuntimeError/ValueError
        row["pin_loads"], row["pin_reason"] = False, _reason(err)
    try:
        (scene, notes), t_none = _timed(lambda: _load(path, collision="none"), repeats)
        (convex, notes), t_convex = _timed(
            lambda: _load(path, collision="convex"), max(1, repeats // 2)
        )
    except Exception as err:  # ConfigurationError, the loader's one-line refusal
        row["loads"], row["reason"] = False, _reason(err)
        return row
    row |= {
        "loads": True,
        "bodies": convex.n_bodies,
        "shapes": sum(len(b.shapes) for b in convex.bodies),
        "warning_lines": len(notes),
        "load_none_ms": 1e3 * t_none,
        "load_convex_ms": 1e3 * t_convex,
    }
    rng = np.random.default_rng(0)
    try:
        row |= _agreement(path, rng)
        row["couplings"], row["mimic_error"], row["mimic_note"] = _mimic_agreement(path, scene, rng)
        row["nq"] = Model.from_scene(scene).nq
    except Exception as err:  # the comparison itself failed: report it, do not stop
        row["compare_reason"] = _reason(err)
    return row


def _fmt(value: Any, spec: str = ".1e") -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "–"
    return format(value, spec)


def _error_cell(value: Any) -> str:
    if value is None:
        return "–"
    return "singular M" if np.isnan(value) else f"{value:.1e}"


def section_urdf(args: argparse.Namespace) -> tuple[list[str], pd.DataFrame]:
    """The ``urdf`` section: every URDF of example-robot-data (module docstring)."""
    root = example_robot_data()
    files = sorted(root.rglob("*.urdf"))
    rows = []
    for path in files:
        print(f"  {path.relative_to(root)}", flush=True)
        rows.append(measure_urdf(path, root, args.repeats))
    df = pd.DataFrame(rows)
    loaded = df[df.loads.fillna(False)]
    pin_loaded = df[df.pin_loads.fillna(False)]
    errors = loaded[[f"{k}_error" for k in KEYS]]
    finite = errors.apply(lambda col: col[np.isfinite(col)].max())
    singular = loaded[errors["FD_error"].isna()].robot.tolist()
    both = loaded.robot.isin(pin_loaded.robot)
    ratio_none = (loaded.load_none_ms / loaded.pin_model_ms)[both]
    ratio_convex = (loaded.load_convex_ms / loaded.pin_geometry_ms)[both]
    exact = errors[[f"{k}_error" for k in KEYS if k != "FD_force"]]
    over = loaded[exact.max(axis=1) > TARGET]
    over_text = "; ".join(
        f"{r['robot']}: FD {r['FD_error']:.1e} with cond(M) {r['cond_M']:.0e}, backward "
        f"error {r['FD_force_error']:.1e}"
        for r in over.to_dict("records")
    )
    mimic = loaded[loaded.couplings.fillna(0) > 0]
    mimic_ok = mimic[np.isfinite(mimic.mimic_error)]
    lines = [
        "## URDF: example-robot-data against Pinocchio",
        "",
        f'{len(loaded)} of {len(df)} URDF files load (`collision="convex"`); Pinocchio\'s '
        f"parser loads {len(pin_loaded)}. Largest relative difference to Pinocchio over all "
        "loaded robots, both bases and three random states each: "
        + ", ".join(f"{LABELS[k]} {finite[f'{k}_error']:.1e}" for k in KEYS)
        + f" (target {TARGET:g}: "
        + ("met" if over.empty else f"met except {over_text}")
        + "). Mimic joints: "
        + f"{len(mimic)} robots couple them; the coupled dynamics of {len(mimic_ok)} equal "
        + "Pinocchio's mimic model to "
        + f"{mimic_ok.mimic_error.max():.1e} (Pinocchio builds no mimic model for the others)."
        + (
            f" Forward dynamics is undefined (M singular in both libraries) for "
            f"{', '.join(singular)}: links that move but carry no mass and no inertia."
            if singular
            else ""
        ),
        "",
        "Load time, median ratio contactlab / Pinocchio over the robots both load: "
        f"{ratio_none.median():.2f} without collision geometry (kinematic model only), "
        f"{ratio_convex.median():.2f} with it (contactlab: convex hulls; Pinocchio: "
        "`buildGeomFromUrdf`, meshes as read).",
        "",
        "| robot | Pinocchio | contactlab | bodies | nq | shapes | warning lines | M | h | "
        "FD (aba) | ID (rnea) | FD backward error | cond(M) | couplings (mimic) | load [ms] | "
        "Pinocchio [ms] | load convex [ms] | Pinocchio + geometry [ms] |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        pin_cell = "loads" if r.get("pin_loads") else f"no: {r.get('pin_reason', '')}"
        if not r.get("loads"):
            lines.append(f"| {r['robot']} | {pin_cell} | no: {r.get('reason', '')} |" + " |" * 15)
            continue
        mimic = ""
        if r.get("couplings"):
            mimic = f"{int(r['couplings'])}: " + (
                _fmt(r["mimic_error"]) if r["mimic_error"] == r["mimic_error"] else r["mimic_note"]
            )
        cells = [
            r["robot"],
            pin_cell,
            "loads" + (f" (compare: {r['compare_reason']})" if r.get("compare_reason") else ""),
            str(int(r["bodies"])),
            _fmt(r.get("nq"), ".0f"),
            str(int(r["shapes"])),
            str(int(r["warning_lines"])),
            *(_error_cell(r.get(f"{k}_error")) for k in KEYS),
            _fmt(r.get("cond_M"), ".0e"),
            mimic,
            _fmt(r["load_none_ms"], ".1f"),
            _fmt(r.get("pin_model_ms"), ".1f"),
            _fmt(r["load_convex_ms"], ".0f"),
            _fmt(r.get("pin_geometry_ms"), ".0f"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines, df


#: the clock of the step section: this thread's CPU time, which other processes on a shared
#: machine do not add to (both engines run in this thread)
_clock = time.thread_time
#: per-step time target against MuJoCo (issue 26; issue 24's was 10x)
STEP_TARGET = 3.0
STEP_SCENES = ("solo12-stand", "solo12-collapse", "humanoid-topple")
#: the routes timed besides the default one: (model, solver)
ALTERNATIVES = (("box-friction", "osqp"), ("anitescu-hart", "ipm"), ("coulomb", "ipm"))


def time_contactlab(
    name: str, steps: int, model: str | None = None, solver: str | None = None
) -> dict[str, Any]:
    """Per-step wall times of ``steps`` steps of scenario ``name`` (after one untimed step
    that compiles and warms), with the route, the statuses and the final base height."""
    from contactlab.runspec import build_simulator

    sim = build_simulator(name, {"duration": (steps + 1) * 1.0}, model=model, solver=solver)
    # the default route: the same steps three times from the start, the pass of the lowest
    # median kept (as MuJoCo's fastest of five passes: a pass slowed as a whole by the
    # machine is not the step's cost); the other routes one pass
    t = np.full(1, np.inf)
    for _ in range(3 if model is None else 1):
        state = sim.initial_state()
        state, _ = sim.step(state, 0)
        times, statuses, contacts = [], [], []
        try:
            for i in range(1, steps + 1):
                start = _clock()
                state, record = sim.step(state, i)
                times.append(_clock() - start)
                statuses.append(record.metrics["status"])
                contacts.append(record.metrics["n_contacts"])
        except Exception as err:  # a route that fails on the scene: report it
            return {"route": "/".join(sim.names[1:]), "failed": _reason(err), "steps": len(times)}
        if np.median(times) < np.median(t):
            t = np.array(times)
    # what a user's run costs (default route): Simulator.run of the same steps and of one
    # step, the fastest of three each; the difference per step is the run's cost of a step
    # (with its step table, trajectory and divergence guard), the one-step run its set-up
    run_ms = setup_ms = np.nan
    if model is None:
        full = one = np.inf
        for _ in range(3):
            start = _clock()
            sim.run(steps=1)
            middle = _clock()
            sim.run(steps=steps)
            one, full = min(one, middle - start), min(full, _clock() - middle)
        run_ms, setup_ms = 1e3 * (full - one) / (steps - 1), 1e3 * one
    return {
        "route": "/".join(sim.names[1:]),
        "run_ms": run_ms,
        "run_setup_ms": setup_ms,
        "ms_median": 1e3 * float(np.median(t)),
        "ms_mean": 1e3 * float(t.mean()),
        "steps": len(t),
        "converged": int(sum(s == "optimal" for s in statuses)),
        "contacts": float(np.median(contacts)),
        "base_z": float(state.E[0, 2, 3]),
        "nq": int(sim.formulation.tree.nq),  # type: ignore[attr-defined]
    }


def time_mujoco(name: str, steps: int, cone: str) -> dict[str, Any]:
    """Mean wall time of ``mj_step`` over ``steps`` steps of the same model and state."""
    import mujoco

    from benchmarks.mujoco_scene import mujoco_model, mujoco_state
    from contactlab.reduced import Tree
    from contactlab.scenario import get_scenario

    scene = get_scenario(name).build()
    model, order = mujoco_model(scene, cone=cone)
    data = mujoco.MjData(model)
    tree = Tree.from_scene(scene)
    q, qdot = tree.initial_coordinates()
    q, qdot, _ = tree.reparameterize(q, qdot)
    elapsed = np.inf
    for _ in range(5):  # the same steps five times from the start: the fastest pass
        mujoco.mj_resetData(model, data)
        mujoco_state(scene, model, data, q, qdot)
        mujoco.mj_step(model, data)
        contacts = []
        start = _clock()
        for _ in range(steps):
            mujoco.mj_step(model, data)
            contacts.append(data.ncon)
        elapsed = min(elapsed, _clock() - start)
    root = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, scene.bodies[0].name)
    return {
        "ms": 1e3 * elapsed / steps,
        "contacts": float(np.median(contacts)),
        "base_z": float(data.xpos[root, 2]),
    }


def section_step(args: argparse.Namespace) -> tuple[list[str], pd.DataFrame]:
    """The ``step`` section: contact step time against MuJoCo (module docstring)."""
    rows = []
    for name in STEP_SCENES:
        print(f"  {name}", flush=True)
        mj = {cone: time_mujoco(name, args.steps, cone) for cone in ("pyramidal", "elliptic")}
        routes = [(None, None), *ALTERNATIVES]
        for model, solver in routes:
            ours = time_contactlab(name, args.steps, model, solver)
            row = {"scenario": name, "default": model is None, **ours}
            row |= {f"mujoco_{c}_ms": v["ms"] for c, v in mj.items()}
            row["mujoco_contacts"] = mj["pyramidal"]["contacts"]
            row["mujoco_base_z"] = mj["pyramidal"]["base_z"]
            if "ms_median" in ours:
                row["ratio"] = ours["ms_median"] / mj["pyramidal"]["ms"]
                row["run_ratio"] = ours["run_ms"] / mj["pyramidal"]["ms"]  # NaN off default
            rows.append(row)
    df = pd.DataFrame(rows)
    default = df[df["default"]]
    lines = [
        "## Contact step against MuJoCo",
        "",
        f"{args.steps} steps of each scene from its initial state (1 ms steps), both engines in "
        "this process, timed by this thread's CPU time (`time.thread_time`: what other "
        "processes on a shared machine take is not counted); contactlab's step time is the "
        "median of its whole `Simulator.step` (default route: the pass of the lowest median "
        "of three from the start), "
        "its run time (default route) the cost per step of `Simulator.run` over the same "
        "steps (step table, trajectory and divergence guard included: what `contactlab run` "
        "costs), taken as the difference between runs of 200 steps and of one step, the "
        "fastest of three each, whose one-step run is the run's set-up, MuJoCo's "
        "the mean of `mj_step` over the fastest of five passes (Newton solver; the ratios "
        "are taken against the pyramidal cone, the counterpart of box friction's four "
        "directions). Target: "
        f"contactlab's step ≤ {STEP_TARGET:g}× MuJoCo's on the default route.",
        "",
        "| scenario | route | nq | contacts | converged steps | contactlab step [ms] | "
        "contactlab run [ms/step] | run set-up [ms] | MuJoCo pyramidal [ms/step] | "
        "MuJoCo elliptic [ms/step] | MuJoCo contacts | ratio step | ratio run | target | "
        "base z contactlab [m] | base z MuJoCo [m] |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| --- | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        route = r["route"] + (" (default)" if r["default"] else "")
        if "failed" in r and isinstance(r["failed"], str):
            lines.append(
                f"| {r['scenario']} | {route} | | | {r['steps']} then: {r['failed']} |" + " |" * 11
            )
            continue
        met = "met" if r["ratio"] <= STEP_TARGET else f"missed (≤ {STEP_TARGET:g}×)"
        lines.append(
            f"| {r['scenario']} | {route} | {r['nq']} | {r['contacts']:.0f} | "
            f"{r['converged']}/{r['steps']} | {_ms(r['ms_median'])} | {_ms(r['run_ms'])} | "
            f"{_ms(r['run_setup_ms'])} | "
            f"{r['mujoco_pyramidal_ms']:.3f} | {r['mujoco_elliptic_ms']:.3f} | "
            f"{r['mujoco_contacts']:.0f} | {_times(r['ratio'])} | {_times(r['run_ratio'])} | "
            f"{met if r['default'] else ''} | {r['base_z']:.4f} | {r['mujoco_base_z']:.4f} |"
        )
    if not default.empty and "ratio" in default:
        lines += [
            "",
            "Default route, step (run): "
            + ", ".join(
                f"{r['scenario']} {_times(r['ratio'])} ({_times(r['run_ratio'])})"
                for r in default.to_dict("records")
            )
            + f" MuJoCo's step time (target ≤ {STEP_TARGET:g}× for the step).",
        ]
    return lines, df


def _ms(value: float) -> str:
    """A time in ms: three decimals below 1 ms, two above; empty when not measured."""
    if not np.isfinite(value):
        return ""
    return f"{value:.3f}" if value < 1.0 else f"{value:.2f}"


def _times(ratio: float) -> str:
    """A ratio to MuJoCo: one decimal below 10, none above; empty when not measured."""
    if not np.isfinite(ratio):
        return ""
    return f"{ratio:.1f}×" if ratio < 10.0 else f"{ratio:.0f}×"


SECTIONS: dict[str, Callable[[argparse.Namespace], tuple[list[str], pd.DataFrame]]] = {
    "urdf": section_urdf,
    "step": section_step,
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="load-time repeats (fastest kept)")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per scene (step)")
    parser.add_argument(
        "--sections", default=",".join(SECTIONS), help="comma-separated sections to run"
    )
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    args = parser.parse_args(argv)
    import pinocchio

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    lines = [
        "# Real robots: model files in, dynamics against the peers",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
        f"average {load:.1f} at the start (shared machine), Python {platform.python_version()}, "
        f"numpy {np.__version__}, Pinocchio {pinocchio.__version__}, example-robot-data "
        f"{_version('example-robot-data')}. Generated by `benchmarks/bench_robots.py`.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    chosen = [n.strip() for n in args.sections.split(",") if n.strip()]
    unknown = sorted(set(chosen) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; sections are {', '.join(SECTIONS)}")
    kept = _previous_sections(args.out / "robots.md")
    if set(chosen) != set(SECTIONS) and "" in kept:
        lines = [*kept[""], ""]  # the machine line of the sections kept
    for name, section in SECTIONS.items():
        if name not in chosen:
            if name in kept:  # a section not rerun keeps its text (and its own machine line)
                lines += [*kept[name], ""]
            continue
        print(f"section {name}", flush=True)
        part, df = section(args)
        df.to_csv(args.out / f"robots_{name}.csv", index=False, float_format="%.6g")
        if set(chosen) != set(SECTIONS):
            part = [part[0], "", f"(Run with load average {load:.1f}.)", *part[1:]]
        lines += [*part, ""]
    (args.out / "robots.md").write_text("\n".join(lines).rstrip() + "\n")


#: the heading each section's text starts with in robots.md
HEADINGS = {
    "urdf": "## URDF: example-robot-data against Pinocchio",
    "step": "## Contact step against MuJoCo",
}


def _previous_sections(path: Path) -> dict[str, list[str]]:
    """The text of each section already in ``path`` (by its heading), to keep when a run
    redoes only some sections."""
    if not path.exists():
        return {}
    found: dict[str, list[str]] = {}
    current: list[str] | None
    current = found.setdefault("", [])  # the title and machine line
    for line in path.read_text().splitlines():
        if line.startswith("## "):
            name = next((k for k, v in HEADINGS.items() if line.strip() == v), None)
            current = found.setdefault(name, []) if name else None
        if current is not None:
            current.append(line)
    return {
        k: [*v[: len(v) - next(i for i, x in enumerate(reversed(v)) if x.strip())]]
        for k, v in found.items()
    }


def _version(dist: str) -> str:
    from importlib import metadata

    return metadata.version(dist)


if __name__ == "__main__":
    main()
