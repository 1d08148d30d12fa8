"""Siconos's ``fc3d`` solvers and error on local frictional-contact problems.

Debian's ``python3-siconos`` (``apt install python3-siconos``; Siconos 4.4,
numerics only, built without FCLIB's I/O) installs for the system Python, not
for a virtual environment, so the problems go to ``/usr/bin/python3`` as
arrays in one ``.npz`` file and the answers come back the same way: one
subprocess for a whole batch.

Siconos's error (``fc3d_compute_error``, the stopping test of its fc3d
solvers, called by them with ``norm = ||q||_2``) is the natural map of De
Saxcé's modified velocity ``||r - P_K(r - û)||_2`` (Coulomb law, exact cone,
``ρ = 1``) -- the numerator of our ``natural_map`` -- divided, in Siconos 4.4,
by ``max(norm, ||r||_2, ||u||_2)`` with ``u = W r + q`` (measured: the
divisor follows ``norm`` only when ``norm`` exceeds both other norms).  Our
``natural_map`` divides by ``||q||_2`` alone, so it is never below Siconos's
error of the same ``r``.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

SYSTEM_PYTHON = "/usr/bin/python3"
INSTALL_HINT = "apt install python3-siconos"

_SCRIPT = """
import json, sys, time
import numpy as np
import siconos.numerics as sn
d = np.load(sys.argv[1])
tol, max_iter = float(d["tol"]), int(d["max_iter"])
out, meta = {}, []
for k in range(int(d["count"])):
    W, q, mu = d[f"W{k}"], d[f"q{k}"], d[f"mu{k}"]
    nc = mu.size
    problem = sn.FrictionContactProblem(3, nc, W, q, mu)
    norm_q = float(np.linalg.norm(q))
    entry = {"contacts": nc}
    if max_iter > 0:
        r, u = np.zeros(3 * nc), np.zeros(3 * nc)
        options = sn.SolverOptions(getattr(sn, "SICONOS_FRICTION_3D_" + str(d[f"solver{k}"])))
        options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = max_iter
        options.dparam[sn.SICONOS_DPARAM_TOL] = tol
        t0 = time.process_time()
        info = sn.fc3d_driver(problem, r, u, options)
        entry.update(info=int(info), time_s=time.process_time() - t0,
                     iterations=int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE]),
                     error=float(options.dparam[sn.SICONOS_DPARAM_RESIDU]))
        out[f"r{k}"], out[f"u{k}"] = r, u
    errors = []
    for j in range(int(d[f"checks{k}"])):
        z = np.ascontiguousarray(d[f"z{k}_{j}"], dtype=float)
        errors.append(float(sn.fc3d_compute_error(problem, z, np.zeros(3 * nc), tol,
                      sn.SolverOptions(sn.SICONOS_FRICTION_3D_NSGS), norm_q)[1]))
    entry["check_errors"] = errors
    meta.append(entry)
np.savez(sys.argv[2], **out)
print(json.dumps(meta))
"""


def unavailable() -> str | None:
    """``None`` if the system Python imports ``siconos.numerics``, else why not and the fix."""
    try:
        probe = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import siconos.numerics"],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        return f"{SYSTEM_PYTHON} cannot run ({exc}); install Siconos: {INSTALL_HINT}"
    if probe.returncode != 0:
        return f"{SYSTEM_PYTHON} cannot import siconos.numerics; install it: {INSTALL_HINT}"
    return None


def fc3d(
    problems: Sequence[tuple[Any, NDArray[np.float64], NDArray[np.float64]]],
    tol: float = 1e-6,
    max_iter: int = 10000,
    check: Sequence[Sequence[NDArray[np.float64]]] | None = None,
    solver: str | Sequence[str] = "NSGS",
) -> list[dict[str, Any]]:
    """A Siconos fc3d solver on local problems ``(W, q, mu)`` (Coulomb law, exact cone).

    Parameters
    ----------
    problems
        ``(W, q, mu)`` per problem: ``W`` dense or scipy.sparse ``(3 nc, 3 nc)``,
        no scalar rows (Siconos's fc3d has none).
    tol, max_iter
        NSGS's tolerance on Siconos's error and its sweep cap; ``max_iter = 0``
        skips the solve (only ``check`` is evaluated).
    check
        Per problem, impulse vectors whose Siconos error (``fc3d_compute_error``
        with ``norm = ||q||_2``, as its solvers call it) is returned.
    solver
        Siconos's name without its ``SICONOS_FRICTION_3D_`` prefix: ``"NSGS"``
        (block Gauss--Seidel, exact one-contact solver), ``"PROX"`` (proximal
        point around a nonsmooth Newton on Alart--Curnier), ``"ADMM"``, ...;
        one name for all problems or one per problem.

    Returns
    -------
    One dict per problem: ``contacts``, ``check_errors`` and, when solved,
    ``info`` (0: converged), ``time_s`` (process CPU time of the solve),
    ``iterations``, ``error`` (Siconos's own) and ``r``, ``u``.

    Raises
    ------
    RuntimeError
        If Siconos is not importable by the system Python (naming the fix) or
        the subprocess fails (its last error line).
    """
    reason = unavailable()
    if reason is not None:
        raise RuntimeError(reason)
    arrays: dict[str, Any] = {
        "count": len(problems),
        "tol": tol,
        "max_iter": max_iter,
    }
    for k, (W, q, mu) in enumerate(problems):
        dense = W.toarray() if hasattr(W, "toarray") else np.asarray(W, dtype=np.float64)
        arrays[f"W{k}"] = np.ascontiguousarray(dense, dtype=np.float64)
        arrays[f"q{k}"] = np.asarray(q, dtype=np.float64)
        arrays[f"mu{k}"] = np.asarray(mu, dtype=np.float64)
        arrays[f"solver{k}"] = solver if isinstance(solver, str) else solver[k]
        zs = [] if check is None else check[k]
        arrays[f"checks{k}"] = len(zs)
        for j, z in enumerate(zs):
            arrays[f"z{k}_{j}"] = np.asarray(z, dtype=np.float64)
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.npz", Path(tmp) / "out.npz"
        np.savez(inp, **arrays)
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", _SCRIPT, str(inp), str(out)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            last = done.stderr.strip().splitlines()[-1:] or ["no message"]
            raise RuntimeError(f"Siconos's fc3d run failed: {last[0]}")
        meta: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
        with np.load(out) as sols:
            for k, entry in enumerate(meta):
                if f"r{k}" in sols:
                    entry["r"], entry["u"] = sols[f"r{k}"], sols[f"u{k}"]
    return meta
