"""Energy drift of the reduced formulation's integrators against the step size.

Scenes without contact: ``windmill`` (a hub on an axle with six arms of three
bodies on surface joints, 73 coordinates), ``torus-chain`` (tori on
torus-torus surface joints, 38 coordinates) and ``redmax-spherical`` (a
double spherical pendulum).  Each integrator of
:data:`contactlab.reduced.steppers.INTEGRATORS` steps each scene over a
horizon ``T`` at the scene's step ``h0`` times each factor; the step problem
(no rows) is solved by a dense solve, as the KKT backend would.  Reported:
the largest energy error ``max_t |E(t) - E(0)| / max(|E(0)|, max_t KE(t))``
over the run (checked every step), the time at which a run failed
(``StepFailure``, or an energy gain past ten times the initial energy scale, which
ends the run), and the
thread CPU time per step.  ``midpoint`` runs with ``substep_angle`` as given
(``--substep-angle``, default 0.05 rad), ``midpoint4`` at its default substep angle
(0.025 rad), ``dop853`` with ``rtol`` 1e-8,
``atol`` 1e-10.

Run: ``python -m benchmarks.bench_reduced_integrators`` (writes
``results/benchmarks/reduced_integrators.csv`` and ``reduced_integrators.md``).

``--drift``: one run per scene, integrator (and substep angle, ``--angles``, where
``default`` is the integrator's default) at
the scene's own step over 2 s (issue 28's target), the largest energy error
against ``|E(0)|`` and against the largest kinetic energy of the run (the scale
that does not depend on where gravity's zero is); writes
``reduced_integrators_drift.csv`` and ``.md``.
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import harness
from contactlab.errors import StepFailure
from contactlab.formulation import make_formulation
from contactlab.problem import StepSolution
from contactlab.reduced.steppers import INTEGRATORS
from contactlab.scenario import get_scenario

SCENES = ("windmill", "torus-chain", "redmax-spherical")
FACTORS = (2.0, 1.0, 0.5)


#: the columns of the ``--drift`` table: heading, alignment, cell of a result row
DRIFT_COLUMNS: list[tuple[str, str, Callable[[dict], str]]] = [
    ("scene", "---", lambda r: r["scene"]),
    ("integrator", "---", lambda r: r["integrator"]),
    (
        "substep angle [rad]",
        "---:",
        lambda r: (
            ""
            if np.isnan(r["substep_angle"])
            else f"{r['substep_angle']:g}" + (" (default)" if r["default_angle"] else "")
        ),
    ),
    ("h [ms]", "---:", lambda r: f"{1e3 * r['h']:g}"),
    ("E(0) [J]", "---:", lambda r: f"{r['E0']:.4g}"),
    ("max KE [J]", "---:", lambda r: f"{r['max_KE']:.3g}"),
    ("max error [J]", "---:", lambda r: f"{r['max_error_J']:.2e}"),
    ("at [s]", "---:", lambda r: f"{r['at']:.3f}"),
    ("error at T [J]", "---:", lambda r: f"{r['final_error_J']:+.2e}"),
    ("/ abs E(0)", "---:", lambda r: f"{r['rel_E0']:.1e}"),
    ("/ max KE", "---:", lambda r: f"{r['rel_max_KE']:.1e}"),
    ("CPU per step [ms]", "---:", lambda r: f"{r['ms_per_step']:.1f}"),
]


def _formulation(scene: Any, integrator: str, angle: float | None) -> Any:
    """The reduced formulation with ``integrator``: ``midpoint`` and ``midpoint4`` at
    substep angle ``angle`` [rad] (``None``: their default), ``dop853`` at rtol 1e-8."""
    options: dict = {}
    if integrator in ("midpoint", "midpoint4") and angle is not None:
        options["substep_angle"] = angle
    if integrator == "dop853":
        options.update(rtol=1e-8, atol=1e-10)
    return make_formulation("reduced", scene, integrator=integrator, **options)


def _step(form: Any, state: Any, h: float) -> Any:
    """One step of ``form`` from ``state``, the step problem (no rows) solved directly."""
    problem = form.assemble(state, h)
    v = np.linalg.solve(problem.M.toarray(), problem.f)
    empty = np.zeros(0)
    return form.advance(state, StepSolution(v, empty, empty, empty), h)


def run(scene_name: str, integrator: str, h: float, T: float, angle: float) -> dict:
    """One run; the energy error, the failure time (NaN if none) and the CPU time per step."""
    form = _formulation(
        get_scenario(scene_name).build(), integrator, angle if integrator == "midpoint" else None
    )
    state = form.initial_state()
    m = form.metrics(state)
    E0, kmax, err = m["total_energy"], m["kinetic_energy"], 0.0
    scale0 = max(abs(E0), kmax)
    failed = float("nan")
    steps = round(T / h)
    t0 = time.thread_time()
    done = 0
    for k in range(steps):
        try:
            state = _step(form, state, h)
        except (StepFailure, np.linalg.LinAlgError, FloatingPointError):
            failed = k * h
            break
        done += 1
        m = form.metrics(state)
        kmax = max(kmax, m["kinetic_energy"])
        e = m["total_energy"]
        if not np.isfinite(e):
            failed = (k + 1) * h
            break
        err = max(err, abs(e - E0))
        if e - E0 > 10.0 * scale0:  # a gain of ten times the energy scale: diverged
            failed = (k + 1) * h
            break
    cpu = (time.thread_time() - t0) / max(done, 1)
    return {
        "scene": scene_name,
        "integrator": integrator,
        "h": h,
        "T": T,
        "energy_error": err / max(abs(E0), kmax),
        "failed_at": failed,
        "ms_per_step": 1e3 * cpu,
    }


def drift(scene_name: str, integrator: str, T: float, angle: float | None) -> dict:
    """The energy error of one run at the scene's own step over ``T`` against three scales.

    ``|E(0)|`` depends on where gravity's zero is (the windmill's is at its axle,
    ``E(0) = 0.117 J``); the largest kinetic energy of the run (the energy the scene
    exchanges between its kinetic and potential parts) does not.  Also reported: when
    the largest error occurred, the error at ``T`` and the thread CPU time per step.
    """
    scene = get_scenario(scene_name).build()
    h = scene.dt
    form = _formulation(scene, integrator, angle)
    state = form.initial_state()
    m = form.metrics(state)
    E0, kmax, err, t_err = m["total_energy"], m["kinetic_energy"], 0.0, 0.0
    steps = round(T / h)
    t0 = time.thread_time()
    e = E0
    for k in range(steps):
        state = _step(form, state, h)
        m = form.metrics(state)
        kmax = max(kmax, m["kinetic_energy"])
        e = m["total_energy"]
        if abs(e - E0) > err:
            err, t_err = abs(e - E0), (k + 1) * h
    return {
        "scene": scene_name,
        "integrator": integrator,
        "substep_angle": getattr(form, "substep_angle", None) or float("nan"),
        "default_angle": angle is None and integrator in ("midpoint", "midpoint4"),
        "h": h,
        "T": T,
        "E0": E0,
        "max_KE": kmax,
        "max_error_J": err,
        "at": t_err,
        "final_error_J": e - E0,
        "rel_E0": err / abs(E0),
        "rel_max_KE": err / kmax,
        "ms_per_step": 1e3 * (time.thread_time() - t0) / steps,
    }


def main_drift(args: argparse.Namespace) -> None:
    """``--drift``: the 2 s runs at the scenes' own steps (docs/reduced-integration.md)."""
    rows = []
    for scene_name in args.scenes:
        for integrator in args.integrators:
            angles = (
                [None if a == "default" else float(a) for a in args.angles]
                if integrator in ("midpoint", "midpoint4")
                else [None]
            )
            for angle in angles:
                row = drift(scene_name, integrator, args.horizon, angle)
                print(row, flush=True)
                rows.append(row)
    _write(
        args,
        rows,
        "Energy error of the reduced integrators at the scenes' own step",
        "Thread CPU time per step. Horizon T = "
        f"{args.horizon:g} s at each scene's step h; largest `|E(t) - E(0)|` over the run "
        "(checked every step), when it occurred, and relative to `|E(0)|` (which depends on "
        "where gravity's zero is) and to the largest kinetic energy of the run (which does "
        "not). `midpoint` and `midpoint4` at the substep angle given (`(default)`: the "
        "integrator's default; `midpoint` takes one step when it is empty), `dop853` at rtol "
        "1e-8. Generated by "
        "`benchmarks/bench_reduced_integrators.py --drift`.",
        DRIFT_COLUMNS,
    )


def _write(
    args: argparse.Namespace,
    rows: list[dict],
    title: str,
    intro: str,
    columns: list[tuple[str, str, Callable[[dict], str]]],
) -> None:
    """``rows`` as ``<name>.csv`` and as a Markdown table of ``columns`` (heading, alignment,
    cell of a row) in ``<name>.md`` in ``args.out``, after the machine and its load average."""
    lines = [
        f"# {title}",
        "",
        f"{harness.machine(load=True, at='end')}. {intro}",
        "",
        "| " + " | ".join(c[0] for c in columns) + " |",
        "| " + " | ".join(c[1] for c in columns) + " |",
    ]
    df = pd.DataFrame(rows)
    for r in df.to_dict("records"):
        lines.append("| " + " | ".join(c[2](r) for c in columns) + " |")
    harness.write(args.out, args.name, df, lines, float_format="%.6g")


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--scenes", nargs="*", default=list(SCENES))
    parser.add_argument("--integrators", nargs="*", default=list(INTEGRATORS))
    parser.add_argument("--factors", nargs="*", type=float, default=list(FACTORS))
    parser.add_argument(
        "--horizon", type=float, default=None, help="simulated time T [s] (0.5; 2 with --drift)"
    )
    parser.add_argument("--substep-angle", type=float, default=0.05)
    parser.add_argument("--name", default=None)
    parser.add_argument(
        "--drift",
        action="store_true",
        help="2 s runs at the scenes' own steps against |E(0)| and the largest KE",
    )
    parser.add_argument(
        "--angles",
        nargs="*",
        default=["default"],
        help="substep angles of the midpoint integrators with --drift [rad] ('default': theirs)",
    )
    args = parser.parse_args(argv)
    if args.drift:
        args.horizon = 2.0 if args.horizon is None else args.horizon
        args.name = args.name or "reduced_integrators_drift"
        main_drift(args)
        return
    args.name = args.name or "reduced_integrators"
    args.horizon = 0.5 if args.horizon is None else args.horizon
    rows = []
    for scene_name in args.scenes:
        h0 = get_scenario(scene_name).build().dt
        for integrator in args.integrators:
            for factor in args.factors:
                row = run(scene_name, integrator, h0 * factor, args.horizon, args.substep_angle)
                print(row, flush=True)
                rows.append(row)
    _write(
        args,
        rows,
        "Energy drift of the reduced integrators against the step size",
        f"Horizon T = {args.horizon:g} s; energy error "
        "`max_t |E(t) - E(0)| / max(|E(0)|, max_t KE)`; `failed` is the time at which the run "
        "stopped (Newton or solve failure, or an energy gain past ten times the initial "
        f"scale). `midpoint` with substep_angle {args.substep_angle:g} rad, `midpoint4` at its "
        "default substep angle (0.025 rad), `dop853` at rtol "
        "1e-8. Generated by `benchmarks/bench_reduced_integrators.py`.",
        [
            ("scene", "---", lambda r: r["scene"]),
            ("integrator", "---", lambda r: r["integrator"]),
            ("h [ms]", "---:", lambda r: f"{1e3 * r['h']:g}"),
            ("energy error", "---:", lambda r: f"{r['energy_error']:.1e}"),
            (
                "failed at [s]",
                "---:",
                lambda r: "" if np.isnan(r["failed_at"]) else f"{r['failed_at']:.3f}",
            ),
            ("CPU per step [ms]", "---:", lambda r: f"{r['ms_per_step']:.1f}"),
        ],
    )


if __name__ == "__main__":
    main()
