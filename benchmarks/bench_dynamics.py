"""Fast dynamics calls of the prepared model vs Pinocchio, per call, in the same process.

Scenes: the revolute chains of 10, 20, 50, 100 and 200 links and the
63-body binary tree of :mod:`benchmarks.bench_reduced`, built identically in
Pinocchio (joint frame i = contactlab's child-side joint frame, see
``tests/contactlab/reduced/test_derivatives.py``).  Per call, thread CPU
time of the fastest batch, one BLAS thread, in three rounds that alternate the
calls (the fastest round is kept, so one busy spell of a shared machine spoils
one round, not the entry):

- ``FD``: :meth:`Model.forward_dynamics` vs ``pinocchio.aba``;
- ``ID``: :meth:`Model.inverse_dynamics` vs ``pinocchio.rnea``;
- ``M``: :meth:`Model.mass_matrix` vs ``pinocchio.crba``;
- ``dID``: :func:`inverse_dynamics_derivatives` (dtau/dq, dtau/dqdot and M)
  vs ``pinocchio.computeRNEADerivatives`` (the same three matrices);
- ``FD (previous)``: :func:`forward_dynamics_recursive`, the per-call Python path.

Every pair is checked to agree (relative difference in the table).  Scaling
exponents are log-log slopes over the chains.  The first-call time is
measured in fresh processes: build a model of the 20-link chain and call
forward dynamics once, with an empty numba cache (compilation) and again
with the cache it filled, for the default kernels (compiled at install when a
C compiler was found) and for the numba kernels (an install without one).

Pinocchio: ``pip install pin`` (or ``pip install contactlab[peers]``).
Run: ``python -m benchmarks.bench_dynamics`` (writes
``results/benchmarks/dynamics.csv`` and ``dynamics.md``).
"""

# ruff: noqa: E402  (the BLAS thread count must be set before numpy is imported)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import importlib.util
import json
import subprocess
import sys
import tempfile

import numpy as np
import pandas as pd

from benchmarks import harness
from benchmarks.bench_reduced import binary_tree, chain
from benchmarks.harness import best_time
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.model import Model
from contactlab.reduced.pinocchio_ import to_pinocchio
from contactlab.reduced.recursive import forward_dynamics_recursive
from contactlab.scene import Scene

HAS_PIN = importlib.util.find_spec("pinocchio") is not None
OPS = ("FD", "ID", "M", "dID")
TARGETS = {"FD": 1.5, "M": 2.0, "dID": 3.0}

_FIRST_CALL = """
import time, sys
t0 = time.perf_counter()
from benchmarks.bench_reduced import chain
from contactlab.reduced.model import Model
import numpy as np
t1 = time.perf_counter()
model = Model.from_scene(chain(20), kernels=sys.argv[1])
q = np.zeros(20)
model.forward_dynamics(q, q, q)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, model.kernels)
"""


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


def measure(scene: Scene, budget: float, rounds: int = 3) -> dict[str, float]:
    """Per-call times [us]: each call is timed in ``rounds`` rounds of ``budget / rounds``
    seconds, the libraries alternating, and the fastest round is kept (one busy spell of a
    shared machine then spoils one round, not the entry)."""
    model = Model.from_scene(scene)
    numba_model = Model(model.tree, kernels="numba")
    n = model.nq
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, n))
    tau = rng.uniform(-1, 1, n)
    calls = {
        "FD_us": lambda: model.forward_dynamics(q, qd, tau),
        "ID_us": lambda: model.inverse_dynamics(q, qd, qdd),
        "M_us": lambda: model.mass_matrix(q),
        "dID_us": lambda: inverse_dynamics_derivatives(model, q, qd, qdd),
        "FD_numba_us": lambda: numba_model.forward_dynamics(q, qd, tau),
        "ID_numba_us": lambda: numba_model.inverse_dynamics(q, qd, qdd),
        "M_numba_us": lambda: numba_model.mass_matrix(q),
        "FD_previous_us": lambda: forward_dynamics_recursive(model.tree, q, qd, tau),
    }
    if HAS_PIN:
        import pinocchio as pin

        pm = to_pinocchio(model.tree)
        data = pm.createData()
        calls |= {
            "FD_pin_us": lambda: pin.aba(pm, data, q, qd, tau),
            "ID_pin_us": lambda: pin.rnea(pm, data, q, qd, qdd),
            "M_pin_us": lambda: pin.crba(pm, data, q),
            "dID_pin_us": lambda: pin.computeRNEADerivatives(pm, data, q, qd, qdd),
        }
    row: dict[str, float] = {key: np.inf for key in calls}
    for _ in range(rounds):
        for key, fn in calls.items():
            row[key] = min(row[key], 1e6 * best_time(fn, budget / rounds))
    if not HAS_PIN:
        return row
    for op in OPS:
        row[f"{op}_ratio"] = row[f"{op}_us"] / row[f"{op}_pin_us"]
    M_pin = pin.crba(pm, data, q)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    dq, dqd, _ = inverse_dynamics_derivatives(model, q, qd, qdd)
    pin.computeRNEADerivatives(pm, data, q, qd, qdd)
    row["max_rel_difference"] = max(
        _rel(model.forward_dynamics(q, qd, tau), pin.aba(pm, data, q, qd, tau)),
        _rel(model.inverse_dynamics(q, qd, qdd), pin.rnea(pm, data, q, qd, qdd)),
        _rel(model.mass_matrix(q), M_pin),
        _rel(dq, data.dtau_dq),
        _rel(dqd, data.dtau_dv),
    )
    return row


def first_call_times() -> dict[str, float | str]:
    """Fresh processes with an empty, then a warm, numba cache [s], per kernel set.

    ``auto``: the kernels compiled at install when the extension was built (else numba);
    ``numba``: the numba kernels (the path of an install without a C compiler).
    """
    out: dict[str, float | str] = {}
    for kernels in ("auto", "numba"):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=os.getcwd())
            for label in ("cold", "warm"):
                res = subprocess.run(
                    [sys.executable, "-c", _FIRST_CALL, kernels],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                imp, first, used = res.stdout.split()
                key = f"{kernels}_{label}"
                out[f"import_{key}_s"], out[f"first_call_{key}_s"] = float(imp), float(first)
                out[f"kernels_{kernels}"] = used
    return out


def _slope(df: pd.DataFrame, col: str, lo: int = 0) -> float:
    sel = df[df.dof >= lo]
    return float(
        np.polyfit(np.log(sel.dof.to_numpy(float)), np.log(sel[col].to_numpy(float)), 1)[0]
    )


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--budget", type=float, default=1.0, help="seconds per measurement")
    args = parser.parse_args(argv)

    first = first_call_times()
    rows = [
        {"scene": f"revolute chain {n}", "dof": n, **measure(chain(n), args.budget)}
        for n in (10, 20, 50, 100, 200)
    ]
    rows.append({"scene": "binary tree 63", "dof": 63, **measure(binary_tree(), args.budget)})
    df = pd.DataFrame(rows)
    chains = df[df.scene.str.startswith("revolute")]

    lines = [
        "# Fast dynamics calls vs Pinocchio",
        "",
        harness.machine(load=True)
        + (f", Pinocchio {__import__('pinocchio').__version__}" if HAS_PIN else ", no Pinocchio")
        + "; thread CPU time per call, fastest batch of the fastest of three rounds "
        f"({args.budget:g} s per call and library in all), both "
        "libraries called from Python with numpy arrays in the same process. Generated by "
        "`benchmarks/bench_dynamics.py`.",
        "",
        "Per call [us] and the ratio contactlab / Pinocchio (target in the header):",
        "",
        "| scene | DOF | FD | aba | FD ratio (<= 1.5) | ID | rnea | ID ratio | M | crba | "
        "M ratio (<= 2) | dID | computeRNEADerivatives | dID ratio (<= 3) | FD previous path | "
        "max rel. difference |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        cells = [r["scene"], str(r["dof"])]
        for op in OPS:
            cells.append(f"{r[f'{op}_us']:.1f}")
            if HAS_PIN:
                ratio = r[f"{op}_ratio"]
                mark = "" if op not in TARGETS else (" ok" if ratio <= TARGETS[op] else " **over**")
                cells += [f"{r[f'{op}_pin_us']:.1f}", f"{ratio:.2f}{mark}"]
            else:
                cells += ["", ""]
        cells.append(f"{r['FD_previous_us']:.1f}")
        cells.append(f"{r['max_rel_difference']:.1e}" if HAS_PIN else "")
        lines.append("| " + " | ".join(cells) + " |")
    kernels = Model.from_scene(chain(2)).kernels
    lines += [
        "",
        f"The table above uses the default kernels (`{kernels}`: "
        + ("compiled at install" if kernels == "c" else "the C extension was not built")
        + '). The numba kernels (`Model(tree, kernels="numba")`, the path of an install without '
        "a C compiler), per call [us] and ratio to Pinocchio:",
        "",
        "| scene | FD | FD ratio | ID | ID ratio | M | M ratio |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in df.to_dict("records"):
        cells = [r["scene"]]
        for op in ("FD", "ID", "M"):
            cells.append(f"{r[f'{op}_numba_us']:.1f}")
            cells.append(f"{r[f'{op}_numba_us'] / r[f'{op}_pin_us']:.2f}" if HAS_PIN else "")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "Scaling exponents (slope of log time vs log DOF over the chains 10-200 / 50-200):",
        "",
        "| call | contactlab | Pinocchio |",
        "| --- | ---: | ---: |",
    ]
    for op in OPS:
        ours = f"{_slope(chains, f'{op}_us'):.2f} / {_slope(chains, f'{op}_us', 50):.2f}"
        theirs = (
            f"{_slope(chains, f'{op}_pin_us'):.2f} / {_slope(chains, f'{op}_pin_us', 50):.2f}"
            if HAS_PIN
            else ""
        )
        lines.append(f"| {op} | {ours} | {theirs} |")
    lines += [
        "",
        "First forward-dynamics call in a fresh process (model of the 20-link chain built and "
        "called once; target <= 3 s cold, <= 1 s warm):",
        "",
        "| kernels | numba cache | import [s] | model + first call [s] |",
        "| --- | --- | ---: | ---: |",
    ]
    for kernels in ("auto", "numba"):
        name = ("compiled at install (C)" if first[f"kernels_{kernels}"] == "c" else "numba") + (
            " (default)" if kernels == "auto" else " (fallback without a C compiler)"
        )
        for label, cache in (("cold", "empty (compiles)"), ("warm", "warm")):
            key = f"{kernels}_{label}"
            lines.append(
                f"| {name} | {cache} | {first[f'import_{key}_s']:.2f} | "
                f"{first[f'first_call_{key}_s']:.2f} |"
            )
    lines += [
        "",
        "FD = `Model.forward_dynamics` (articulated-body recursion), ID = "
        "`Model.inverse_dynamics` (Newton-Euler in the Balafoutis-Patel form), M = "
        "`Model.mass_matrix` (composite-rigid-body algorithm), dID = "
        "`inverse_dynamics_derivatives` (Guenter & Rose's recursive partials; returns dtau/dq, "
        "dtau/dqdot and M like `computeRNEADerivatives`). `FD previous path` is "
        "`forward_dynamics_recursive`, the per-call Python path this model replaces. `max rel. "
        "difference` is the largest relative difference between the two libraries' FD, ID, M, "
        "dtau/dq and dtau/dqdot.",
    ]
    harness.write(args.out, "dynamics", df, lines, float_format="%.6g")
    (args.out / "dynamics_first_call.json").write_text(json.dumps(first, indent=2) + "\n")


if __name__ == "__main__":
    main()
