"""Joints generated from Q(q) (Si & Guenter): one-time derivation and compile, forward dynamics.

Systems of Si & Guenter, Table 1: revolute chains of 20, 50 and 100 links
(RC20/50/100) whose joints are generated from ``Q = R_y(q)`` or ``R_z(q)`` (given as
text; the prepared model finds their constant screws and runs them as revolute nodes)
(the axes alternate, as in ``benchmarks/bench_reduced.py``), torus chains
of 10 and 20 tori (TC10, TC20: 38 and 78 coordinates) and the windmill
(WM, 73 coordinates), all from :mod:`scenarios.general_joints`.

For each system:

- ``derive_s`` and ``compile_s``: wall time, in a fresh process with an
  empty code cache of its own, to build the tree (symbolic derivation and
  code generation) and to make the first forward-dynamics call of its
  prepared model (numba compilation of the generated joints); ``cached_s``:
  both in a second fresh process with that cache filled (what a second run
  pays).  The framework's own compiled code is loaded first in each process;
- ``model_ms``: CPU time per call of
  :meth:`contactlab.reduced.model.Model.forward_dynamics` (the whole call:
  generated joint maps, kinematics, gravity and the articulated-body
  recursion, compiled); ``kernel_ms``: its compiled recursion alone at given
  joint maps; ``recursive_ms``: the tree path
  :func:`contactlab.reduced.forward_dynamics_recursive` (kinematics and
  gravity in Python, then the compiled recursion);
- ratios to Si & Guenter, Table 1, Method I (0.020 / 0.050 / 0.112 / 0.055 /
  0.115 / 0.108 ms, a 2.67 GHz Core 2); for the revolute chains the same
  chains on the hand-written revolute joint (both paths) and ``pinocchio.aba``
  when Pinocchio is installed, measured in the same process; the calls of one
  system (and of its hand-written twin) are timed in alternating rounds, so a
  change of the shared machine's load does not bias their ratios;
- the machine's load average beside each measurement (the machine is shared).

Run: ``python -m benchmarks.bench_general_joints`` (writes
``results/benchmarks/general_joints.csv`` and ``general_joints.md``);
``--systems RC20,TC10`` measures a subset.  Pinocchio: ``pip install pin``.
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.metadata
import importlib.util
import json
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import pandas as pd

from benchmarks import harness
from benchmarks.bench_reduced import chain
from benchmarks.harness import best_time
from contactlab.reduced import Tree, _fast, forward_dynamics_recursive
from contactlab.reduced.model import Model
from contactlab.reduced.pinocchio_ import to_pinocchio
from contactlab.scene import Scene

#: rounds of alternating measurements (see :func:`_interleaved`)
ROUNDS = 5

SI_GUENTER_MS = {
    "RC20": 0.020,
    "RC50": 0.050,
    "RC100": 0.112,
    "TC10": 0.055,
    "TC20": 0.115,
    "WM": 0.108,
}


def generated_chain(n: int) -> Scene:
    """The revolute chain of ``bench_reduced`` with every joint generated from its Q(q),
    given as text (``"rot_y(q)"``, ``"rot_z(q)"``), as a scene file would."""
    base = chain(n)
    joints = []
    for spec in base.joints:
        Q = "rot_y(q)" if spec.axis[1] > 0.5 else "rot_z(q)"
        joints.append(
            replace(spec, kind="transform", axis=None, params={"Q": Q, "coordinates": ["q"]})
        )
    return base.with_(joints=tuple(joints))


def system(name: str) -> Scene:
    from scenarios import SCENARIOS

    if name.startswith("RC"):
        return generated_chain(int(name[2:]))
    if name.startswith("TC"):
        return SCENARIOS["torus-chain"].build(n=int(name[2:]))
    return SCENARIOS["windmill"].build()


def _load() -> float:
    return os.getloadavg()[0]


def _first_call(name: str) -> dict[str, float]:
    """Build the tree and call forward dynamics once [s of wall time per phase].

    The framework's own compiled code is loaded first (a hand-written chain),
    so the times are what the generated joints cost: derivation and code
    generation (``derive_s``), then numba compilation (``compile_s``), or
    loading both from the cache.
    """
    scene = system(name)
    warm = Model.from_scene(chain(3))
    warm.forward_dynamics(*warm.tree.initial_coordinates())
    forward_dynamics_recursive(warm.tree, *warm.tree.initial_coordinates())
    t0 = time.perf_counter()
    tree = Tree.from_scene(scene)
    t1 = time.perf_counter()
    model = Model(tree)
    model.forward_dynamics(*tree.initial_coordinates())
    t2 = time.perf_counter()
    return {"derive_s": t1 - t0, "compile_s": t2 - t1, "load": _load()}


def _in_fresh_process(name: str, cache: str) -> dict[str, float]:
    code = (
        "import json, sys; from benchmarks.bench_general_joints import _first_call; "
        f"print(json.dumps(_first_call({name!r})))"
    )
    env = {**os.environ, "CONTACTLAB_CACHE": cache}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _state(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    q, qdot = tree.initial_coordinates()
    return q + 0.1 * rng.standard_normal(tree.nq), rng.standard_normal(tree.nq)


def _interleaved(fns: dict[str, Callable[[], object]], budget: float) -> dict[str, float]:
    """Fastest batch of each function [s of CPU time per call], measured in alternating
    rounds (``budget`` s per function in all), so that a change of the machine's load
    hits every function alike: the ratios of functions measured together are reliable."""
    best = dict.fromkeys(fns, np.inf)
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            best[name] = min(best[name], best_time(fn, budget / ROUNDS))
    return best


def _calls(scene: Scene, prefix: str) -> tuple[dict[str, Callable[[], object]], dict[str, float]]:
    """The timed calls of a scene (prepared model, its kernel, the tree path) and checks."""
    model = Model.from_scene(scene)
    tree = model.tree
    q, qdot = _state(tree)
    tau = np.zeros(tree.nq)
    ext = model.joint_maps(q, qdot)
    none = model.node_wrenches(None)
    expected = forward_dynamics_recursive(tree, q, qdot)
    got = model.forward_dynamics(q, qdot)
    scale = max(1.0, float(np.abs(expected).max()))
    fns: dict[str, Callable[[], object]] = {
        f"{prefix}model_ms": lambda: model.forward_dynamics(q, qdot),
        f"{prefix}kernel_ms": lambda: _fast.forward_dynamics(
            model.topo, model.geom, model.dofp, ext, q, qdot, tau, none, False
        ),
        f"{prefix}recursive_ms": lambda: forward_dynamics_recursive(tree, q, qdot),
    }
    return fns, {
        "dof": tree.nq,
        f"{prefix}model_vs_recursive": float(np.abs(got - expected).max()) / scale,
    }


def per_call(scene: Scene, budget: float, hand: Scene | None = None) -> dict[str, float]:
    """CPU ms per forward-dynamics call: prepared model, its kernel, the tree path; with
    ``hand`` (the same system on hand-written joints) the same calls of it (``hand_...``),
    interleaved with the others."""
    fns, out = _calls(scene, "")
    if hand is not None:
        hand_fns, hand_out = _calls(hand, "hand_")
        fns.update(hand_fns)
        out.update({k: v for k, v in hand_out.items() if k != "dof"})
    out.update({k: 1e3 * v for k, v in _interleaved(fns, budget).items()})
    return out


def pinocchio_ms(scene: Scene, budget: float) -> float:
    """CPU ms per ``pinocchio.aba`` call on the same (hand-written) tree; nan without Pinocchio."""
    if importlib.util.find_spec("pinocchio") is None:
        return float("nan")
    import pinocchio as pin

    tree = Tree.from_scene(scene)
    pm = to_pinocchio(tree)
    data = pm.createData()
    q, qdot = _state(tree)
    tau = np.zeros(tree.nq)
    return 1e3 * best_time(lambda: pin.aba(pm, data, q, qdot, tau), budget)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per measurement")
    parser.add_argument("--systems", default=",".join(SI_GUENTER_MS), help="comma-separated")
    args = parser.parse_args(argv)

    rows = []
    for name in args.systems.split(","):
        with tempfile.TemporaryDirectory() as cache:
            cold = _in_fresh_process(name, cache)
            warm = _in_fresh_process(name, cache)
            os.environ["CONTACTLAB_CACHE"] = cache
            load = _load()
            hand = chain(int(name[2:])) if name.startswith("RC") else None
            row = {
                "system": name,
                "derive_s": cold["derive_s"],
                "compile_s": cold["compile_s"],
                "cold_load": cold["load"],
                "cached_s": warm["derive_s"] + warm["compile_s"],
                "si_guenter_ms": SI_GUENTER_MS[name],
                **per_call(system(name), args.budget, hand),
            }
            if name.startswith("RC"):
                row["pinocchio_ms"] = pinocchio_ms(chain(int(name[2:])), args.budget)
            row["call_load"] = 0.5 * (load + _load())
            rows.append(row)
            print(row, flush=True)
    df = pd.DataFrame(rows)
    for col in ("hand_model_ms", "hand_recursive_ms", "pinocchio_ms"):
        if col not in df:
            df[col] = np.nan
    df["model_over_si_guenter"] = df.model_ms / df.si_guenter_ms
    df["kernel_over_si_guenter"] = df.kernel_ms / df.si_guenter_ms
    df["recursive_over_si_guenter"] = df.recursive_ms / df.si_guenter_ms
    df["model_over_hand"] = df.model_ms / df.hand_model_ms
    df["recursive_over_hand"] = df.recursive_ms / df.hand_recursive_ms
    df["model_over_pinocchio"] = df.model_ms / df.pinocchio_ms

    lines = report(df, args.budget).splitlines()
    harness.write(args.out, "general_joints", df, lines, float_format="%.6g")


def _f(x: float, fmt: str) -> str:
    return "" if x is None or np.isnan(x) else format(x, fmt)


def report(df: pd.DataFrame, budget: float) -> str:
    """The markdown table of a run (figures only; the discussion is written beside it)."""
    pin_version = ""
    if importlib.util.find_spec("pinocchio") is not None:
        pin_version = f", Pinocchio {__import__('pinocchio').__version__}"
    lines = [
        "# Joints generated from their transform Q(q) (Si & Guenter)",
        "",
        "Machine: "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores (shared), Python "
        f"{platform.python_version()}, numpy {np.__version__}, "
        f"sympy {importlib.metadata.version('sympy')}"
        f"{pin_version}, one BLAS thread; per-call times are thread CPU time, fastest batch "
        f"mean ({budget:g} s per measurement); derivation/compile times are wall time of a "
        "fresh process. Generated by `benchmarks/bench_general_joints.py`.",
        "",
        "Forward dynamics per call [ms] (target: prepared model within 2x of Si & Guenter's "
        "Method I; generated revolute within 1.2x of hand-written):",
        "",
        "| system | DOF | prepared model | kernel | tree path | Si & Guenter I | model / S&G | "
        "kernel / S&G | tree / S&G | hand-written: model | tree | generated / hand: model "
        "| tree | Pinocchio aba | model / aba | load avg |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
        "---: | ---: | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        lines.append(
            f"| {r['system']} | {r['dof']} | {r['model_ms']:.4f} | {r['kernel_ms']:.4f} | "
            f"{r['recursive_ms']:.4f} | {r['si_guenter_ms']:.3f} | "
            f"{r['model_over_si_guenter']:.2f} | "
            f"{r['kernel_over_si_guenter']:.2f} | {r['recursive_over_si_guenter']:.2f} | "
            f"{_f(r['hand_model_ms'], '.4f')} | {_f(r['hand_recursive_ms'], '.4f')} | "
            f"{_f(r['model_over_hand'], '.2f')} | {_f(r['recursive_over_hand'], '.2f')} | "
            f"{_f(r['pinocchio_ms'], '.4f')} | {_f(r['model_over_pinocchio'], '.2f')} | "
            f"{r['call_load']:.1f} |"
        )
    lines += [
        "",
        "One-time cost [s of wall time] (target: under one minute for the largest system, "
        "instant when cached); each system starts from an empty cache of its own:",
        "",
        "| system | derive + generate | compile | total | load avg | cached (second run) |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        lines.append(
            f"| {r['system']} | {r['derive_s']:.1f} | {r['compile_s']:.1f} | "
            f"{r['derive_s'] + r['compile_s']:.1f} | {r['cold_load']:.1f} | {r['cached_s']:.2f} |"
        )
    lines += ["", "Against the targets (computed from the figures above):", ""]
    for r in df.to_dict("records"):
        ratio = r["model_over_si_guenter"]
        lines.append(
            f"- {r['system']}: forward dynamics {r['model_ms']:.4f} ms = {ratio:.2f}x Si & "
            f"Guenter's Method I: {'met' if ratio <= 2.0 else 'not met'} (<= 2x)"
        )
    for r in df.to_dict("records"):
        if not np.isnan(r["model_over_hand"]):
            lines.append(
                f"- {r['system']}: generated / hand-written revolute {r['model_over_hand']:.2f} "
                f"(prepared model), {r['recursive_over_hand']:.2f} (tree path): "
                f"{'met' if r['model_over_hand'] <= 1.2 else 'not met'} on the prepared model, "
                f"{'met' if r['recursive_over_hand'] <= 1.2 else 'not met'} on the tree path "
                "(<= 1.2x)"
            )
    for r in df.to_dict("records"):
        total = r["derive_s"] + r["compile_s"]
        lines.append(
            f"- {r['system']}: derivation + compilation {total:.1f} s at load "
            f"{r['cold_load']:.1f}: {'met' if total < 60 else 'not met'} (< 60 s); second run "
            f"{r['cached_s']:.2f} s"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
