"""The reduced formulation's exact-cone step on robots: compiled against the general path and
MuJoCo (elliptic cones), on the same poses.

For ``solo12-stand`` and ``humanoid-topple`` (``scenarios/robots.py``) a run of the compiled
exact-cone step (:mod:`contactlab.reduced.cone_step`) gives the poses: every
``--every``-th state of ``--steps`` steps.  From each pose three steps are timed, each the
fastest of ``--repeats`` by this thread's CPU time (``time.thread_time``: other processes'
load on a shared machine is not counted): the compiled step (the whole ``Simulator.step``:
contacts, assembly, solve, integration, metrics), the general reduced path's step
(``compiled=False``) from the same state and warm start, and MuJoCo's ``mj_step`` from the
same ``q``, ``qdot`` (the model of :mod:`benchmarks.mujoco_scene`, Newton solver, elliptic
cones, its geoms' margin the scene's contact margin so that it holds the contacts
contactlab holds at a pose; its solver starts cold at every pose).  Routes: Coulomb's law
and Anitescu--Hart's cone problem (``cone="soc"``) by ``nsgs``, Coulomb's law by ``apgd``,
at the default tolerance (natural map 1e-6 relative to ``||q||``).  The table gives the
median over the poses, the largest difference of the next ``(q, qdot)`` between the
compiled and the general step, and the load average.

With ``--lemke`` it measures instead Stewart--Trinkle by ``lemke`` (the compiled step of
:mod:`contactlab.reduced.lemke_step`, the scene's pyramid) against the general path and
MuJoCo with pyramidal cones, on the same kind of poses (its compiled run gives them), and
writes that section of ``robots_cone.md`` (the part from its heading on) and
``robots_cone_lemke.csv``.

Requirements: ``example-robot-data``, ``mujoco``.
Run: ``python -m benchmarks.bench_robots_cone`` (about 5 minutes); writes
``results/benchmarks/robots_cone.md`` and ``robots_cone.csv``.
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

_clock = time.thread_time
SCENES = ("solo12-stand", "humanoid-topple")
#: (model, solver, model options)
ROUTES: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("coulomb", "nsgs", {}),
    ("anitescu-hart", "nsgs", {"cone": "soc"}),
    ("coulomb", "apgd", {}),
)
#: the Lemke section's routes (``--lemke``)
LEMKE_ROUTES: tuple[tuple[str, str, dict[str, Any]], ...] = (("stewart-trinkle", "lemke", {}),)
#: the heading of the Lemke section of robots_cone.md
LEMKE_HEADING = "## Stewart--Trinkle by Lemke: the reduced compiled step"


def _fastest(fn: Any, repeats: int) -> tuple[Any, float]:
    best, out = np.inf, None
    for _ in range(repeats):
        start = _clock()
        out = fn()
        best = min(best, _clock() - start)
    return out, best


def _mujoco(scene: Any, cone: str = "elliptic") -> tuple[Any, Any]:
    import mujoco

    from benchmarks.mujoco_scene import mujoco_model

    model, _ = mujoco_model(scene, cone=cone)
    # MuJoCo's contacts within the scene's contact margin, as contactlab's: from a pose at
    # rest on the ground (distances about zero) both engines then hold the same contacts
    model.geom_margin[:] = float(scene.contact.margin)
    return model, mujoco.MjData(model)


def measure(
    name: str, model: str, solver: str, opts: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """The per-step times of the three engines on the poses of one scene and route."""
    import mujoco

    from benchmarks.mujoco_scene import mujoco_state
    from contactlab.reduced.cone_step import ConeContactStep
    from contactlab.reduced.lemke_step import LemkeReducedStep
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario(name).build()
    kw: dict[str, Any] = {"formulation": "reduced", "model": model, "solver": solver}
    fast = Simulator(scene, model_options=opts, **kw)
    general = Simulator(scene, model_options=opts, formulation_options={"compiled": False}, **kw)
    lemke = solver == "lemke"
    step_type = LemkeReducedStep if lemke else ConeContactStep
    assert type(fast.compiled) is step_type and general.compiled is None
    mj_model, mj_data = _mujoco(scene, "pyramidal" if lemke else "elliptic")
    state = fast.initial_state()
    general.step(state, 0)  # compiles and warms both routes
    t_fast, t_general, t_mj, diff, contacts, mj_contacts = [], [], [], [], [], []
    for i in range(args.steps):
        if i % args.every == 0 and i > 0:
            (a, ra), tf = _fastest(lambda s=state, k=i: fast.step(s, k), args.repeats)
            (b, _), tg = _fastest(lambda s=state, k=i: general.step(s, k), args.repeats)

            best = np.inf
            n_mj = 0
            for _ in range(args.repeats):
                mujoco.mj_resetData(mj_model, mj_data)
                mujoco_state(scene, mj_model, mj_data, np.asarray(state.q), np.asarray(state.qdot))
                start = _clock()
                mujoco.mj_step(mj_model, mj_data)
                best = min(best, _clock() - start)
                n_mj = int(mj_data.ncon)
            t_fast.append(tf)
            t_general.append(tg)
            t_mj.append(best)
            mj_contacts.append(n_mj)
            contacts.append(ra.metrics["n_contacts"])
            diff.append(
                max(
                    np.abs(np.asarray(a.q) - np.asarray(b.q)).max(),
                    np.abs(np.asarray(a.qdot) - np.asarray(b.qdot)).max(),
                )
            )
            state = a
        else:
            state, _ = fast.step(state, i)
    med = lambda x: 1e3 * float(np.median(x))  # noqa: E731
    return {
        "scene": name,
        "route": f"{model}{'/soc' if opts.get('cone') == 'soc' else ''}/{solver}",
        "poses": len(t_fast),
        "contacts": float(np.median(contacts)),
        "compiled_ms": med(t_fast),
        "general_ms": med(t_general),
        "mujoco_ms": med(t_mj),
        "mujoco_contacts": float(np.median(mj_contacts)),
        "speedup": float(np.median(t_general)) / float(np.median(t_fast)),
        "vs_mujoco": float(np.median(t_fast)) / float(np.median(t_mj)),
        "max_diff": float(max(diff)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of the run giving the poses")
    parser.add_argument("--every", type=int, default=20, help="a pose every this many steps")
    parser.add_argument("--repeats", type=int, default=3, help="timings per pose (fastest kept)")
    parser.add_argument("--scenes", default=",".join(SCENES), help="comma-separated scenes")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks"))
    parser.add_argument(
        "--lemke", action="store_true", help="the Stewart--Trinkle section by lemke instead"
    )
    args = parser.parse_args(argv)
    import mujoco

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    rows = []
    for name in [s.strip() for s in args.scenes.split(",") if s.strip()]:
        for model, solver, opts in LEMKE_ROUTES if args.lemke else ROUTES:
            print(f"{name} {model} {solver}", flush=True)
            rows.append(measure(name, model, solver, opts, args))
    end_load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.lemke:
        _lemke_section(df, rows, args, load, end_load, mujoco.__version__)
        return
    df = df.rename(columns={"mujoco_ms": "mujoco_elliptic_ms"})
    df.to_csv(args.out / "robots_cone.csv", index=False, float_format="%.6g")
    lines = [
        "# Robots with the exact friction cone: the reduced compiled step",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
        f"average {load:.1f} at the start and {end_load:.1f} at the end (shared machine), "
        f"Python {platform.python_version()}, numpy {np.__version__}, MuJoCo "
        f"{mujoco.__version__}. Generated by `benchmarks/bench_robots_cone.py` "
        f"(--steps {args.steps} --every {args.every} --repeats {args.repeats}).",
        "",
        "Per-step CPU time (this thread) from the same poses, median over the poses: the "
        "compiled exact-cone step of the reduced formulation (`contactlab.reduced.cone_step`), "
        "the general reduced path (`compiled=False`) from the same state and warm start, and "
        "MuJoCo's `mj_step` (Newton, elliptic cones, geom margin the scene's contact margin so "
        "that both hold the contacts of a pose, solver started cold at each pose). "
        "`max diff` is the largest difference of the next `(q, qdot)` between the compiled "
        "and the general step (both stop at the natural map's 1e-6).",
        "",
        "| scene | route | poses | contacts | compiled [ms/step] | general [ms/step] | "
        "MuJoCo elliptic [ms/step] | MuJoCo contacts | general / compiled | compiled / MuJoCo | "
        "max diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scene']} | {r['route']} | {r['poses']} | {r['contacts']:.0f} | "
            f"{r['compiled_ms']:.3f} | {r['general_ms']:.3f} | {r['mujoco_ms']:.3f} | "
            f"{r['mujoco_contacts']:.0f} | {r['speedup']:.1f}x | {r['vs_mujoco']:.1f}x | "
            f"{r['max_diff']:.1e} |"
        )
    md = args.out / "robots_cone.md"
    old = md.read_text() if md.exists() else ""
    kept = old[old.index(LEMKE_HEADING) :] if LEMKE_HEADING in old else ""
    md.write_text("\n".join(lines) + "\n" + ("\n" + kept if kept else ""))
    print("\n".join(lines))


def _lemke_section(  # noqa: PLR0913
    df: Any, rows: list[dict[str, Any]], args: Any, load: float, end_load: float, version: str
) -> None:
    """Write the Lemke section of robots_cone.md (replacing an earlier one) and its csv."""
    df = df.rename(columns={"mujoco_ms": "mujoco_pyramidal_ms"})
    df.to_csv(args.out / "robots_cone_lemke.csv", index=False, float_format="%.6g")
    lines = [
        LEMKE_HEADING,
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
        f"average {load:.1f} at the start and {end_load:.1f} at the end (shared machine), "
        f"MuJoCo {version}. Generated by `benchmarks/bench_robots_cone.py --lemke` "
        f"(--steps {args.steps} --every {args.every} --repeats {args.repeats}).",
        "",
        "Per-step CPU time (this thread) from the same poses, median over the poses: the "
        "compiled Stewart--Trinkle step by Lemke (`contactlab.reduced.lemke_step`, the "
        "scene's pyramid), the general reduced path (`compiled=False`) from the same state, "
        "and MuJoCo's `mj_step` (Newton, pyramidal cones, cold start at each pose). "
        "`max diff` is the largest difference of the next `(q, qdot)` between the compiled "
        "and the general step.",
        "",
        "| scene | route | poses | contacts | compiled [ms/step] | general [ms/step] | "
        "MuJoCo pyramidal [ms/step] | MuJoCo contacts | general / compiled | "
        "compiled / MuJoCo | max diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['scene']} | {r['route']} | {r['poses']} | {r['contacts']:.0f} | "
            f"{r['compiled_ms']:.3f} | {r['general_ms']:.3f} | {r['mujoco_ms']:.3f} | "
            f"{r['mujoco_contacts']:.0f} | {r['speedup']:.1f}x | {r['vs_mujoco']:.1f}x | "
            f"{r['max_diff']:.1e} |"
        )
    md = args.out / "robots_cone.md"
    old = md.read_text() if md.exists() else ""
    head = old[: old.index(LEMKE_HEADING)] if LEMKE_HEADING in old else old
    md.write_text(head.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
