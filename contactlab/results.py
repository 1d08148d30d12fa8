"""Self-describing results folders: write atomically, load back, plot.

A run's folder holds

``summary.json``
    scenario, parameters, formulation, model, solver, model options, dt,
    steps, duration, package versions, git commit, status, wall time, the run
    aggregates of :data:`contactlab.metrics.RUN_AGGREGATES`, the initial state
    metrics, and a description of every column and aggregate.
``steps.csv``
    one row per step, the columns of :data:`contactlab.metrics.STEP_METRICS`.
``trajectory.npz``
    ``t`` (T+1,), ``body_names`` (nb,), ``position`` (T+1, nb, 3) world
    positions of the body frames [m], ``rotation`` (T+1, nb, 3, 3),
    ``twist`` (T+1, nb, 6) body-frame twists, angular first [rad/s, m/s];
    ``q``, ``qdot`` (T+1, nq) for reduced runs.
``plots/``
    energy (with an ``E(t) - E(0)`` panel), constraint error (when it rises
    above round-off), penetration (when there were contacts) and solve time
    versus time, regenerated from the files by :func:`plot_run`.

A folder is written into a temporary sibling and renamed into place at the
end (:func:`atomic_folder`): on any error the temporary folder is removed, so
no half-written folder remains, and an existing folder is replaced only when
asked (``overwrite=True``), never silently.  The temporary sibling is named
``.NAME.tmp-HOST-PID-TAG`` after the process that writes it, so that
:func:`clean_stale_temporaries` removes those of dead processes and never
those of live ones.  :func:`check_writable` tells before any work whether a
destination can be written at all.
"""

from __future__ import annotations

import datetime as _dt
import errno
import json
import os
import platform
import re
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from contactlab import metrics as M
from contactlab.errors import ResultsError
from contactlab.runs import Run

SUMMARY = "summary.json"
STEPS = "steps.csv"
TRAJECTORY = "trajectory.npz"
PLOTS = "plots"

#: Packages whose versions every summary records.
VERSIONED_PACKAGES = ("contactlab", "numpy", "scipy", "osqp", "qpsolvers", "cvxpy", "pandas")


def package_versions(names: Sequence[str] = VERSIONED_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (``None`` for a package that is not installed)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def git_commit(path: Path | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout holding ``path``.

    ``path`` defaults to the installed contactlab package; outside a git
    checkout (or without git) both values are ``None``.
    """
    where = path or Path(__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        porcelain = subprocess.run(
            ["git", "-C", str(where), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": sha or None, "dirty": bool(porcelain.strip())}


def jsonable(value: Any) -> Any:
    """``value`` with numpy types, tuples and paths converted; non-finite floats become null."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Path):
        return str(value)
    return repr(value)


def summarize(
    run: Run, command: Sequence[str] | None = None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The content of ``summary.json`` for ``run`` (JSON-ready)."""
    summary: dict[str, Any] = {
        "scenario": run.scene.name,
        "parameters": dict(run.parameters),
        "formulation": run.formulation,
        "model": run.model,
        "solver": run.solver,
        "model_options": dict(run.model_options),
        **(
            {"formulation_options": dict(run.formulation_options)}
            if getattr(run, "formulation_options", None)
            else {}
        ),
        "defaults": dict(run.defaults),
        "dt": run.dt,
        "steps": run.n_steps,
        "duration": run.duration,
        "n_bodies": run.scene.n_bodies,
        "status": run.status,
        "message": run.message,
        "unconverged": run.unconverged(),
        "strict": bool(getattr(run, "strict", False)),
        "wall_time_s": run.wall_time_s,
        "aggregates": run.aggregates(),
        "initial_metrics": dict(run.initial_metrics),
        "versions": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "git": git_commit(),
        "created_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": list(command) if command is not None else None,
        "files": {
            SUMMARY: "this file",
            STEPS: "one row per step; columns described under 'columns'",
            TRAJECTORY: "t (T+1,), body_names (nb,), position (T+1, nb, 3) [m], "
            "rotation (T+1, nb, 3, 3), twist (T+1, nb, 6) body frame, angular first; "
            "q, qdot (T+1, nq) for reduced runs",
            PLOTS: "energy and E(t) - E(0), constraint error (when above round-off), "
            "penetration (when there were contacts), solve time vs t (contactlab plot)",
        },
        "columns": M.describe_columns(),
    }
    summary.update(extra or {})
    return jsonable(summary)  # type: ignore[no-any-return]


#: bytes a temporary sibling adds to a name (``.NAME.tmp-HOST-PID-TAG``, or ``.old-``)
_TEMPORARY_EXTRA = 1 + 5 + 24 + 1 + 10 + 1 + 8 + 8


def _exists(path: Path) -> bool:
    """``path.exists()`` that answers False for a name the file system refuses (too long)."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def check_name_length(path: Path | str, what: str = "--out") -> Path:
    """Raise :class:`ResultsError` if a name in ``path`` is longer than the file system allows.

    The last name must also leave room for the temporary sibling it is written
    under (about 60 bytes more).
    """
    target = Path(path)
    ancestor = target.parent
    while not _exists(ancestor) and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    try:
        limit = os.pathconf(ancestor if str(ancestor) else ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        limit = 255
    for i, part in enumerate(target.parts):
        size = len(os.fsencode(part))
        room = limit - (_TEMPORARY_EXTRA if i == len(target.parts) - 1 else 0)
        if size > room:
            short = part if len(part) <= 24 else part[:20] + "..."
            raise ResultsError(
                f"{what} name {short!r} is {size} bytes, longer than the {room} this file "
                f"system allows for it ({limit} per name, less room for the temporary copy); "
                f"choose a shorter {what}"
            )
    return target


def check_target(folder: Path | str, overwrite: bool = False) -> Path:
    """Raise :class:`ResultsError` if ``folder`` exists and may not be overwritten."""
    target = check_name_length(folder)
    if target.exists() and not overwrite:
        raise ResultsError(
            f"results folder {str(target)!r} already exists; choose another --out or pass "
            "--force to replace it"
        )
    if target.exists() and not target.is_dir():
        raise ResultsError(f"{str(target)!r} exists and is not a folder; choose another --out")
    return target


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9]+", "", socket.gethostname())[:24] or "host"


#: ``.NAME.tmp-HOST-PID-TAG`` / ``.NAME.old-HOST-PID-TAG``; older writers used ``-TAG`` only
_TEMPORARY = re.compile(
    r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?:(?P<host>[A-Za-z0-9]+)-(?P<pid>\d+)-)?[0-9a-f]{8}$"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def temporary_owner(path: Path) -> tuple[str, int] | None:
    """``(host, pid)`` of the process writing the temporary folder ``path`` (``None``: unknown)."""
    match = _TEMPORARY.match(path.name)
    if match is None or match["pid"] is None:
        return None
    return match["host"], int(match["pid"])


def is_stale(path: Path) -> bool:
    """Whether ``path`` is a temporary results folder whose writer is gone.

    Folders of another host are never stale here (their process cannot be
    checked); folders of the old naming (no process recorded) are.
    """
    if _TEMPORARY.match(path.name) is None:
        return False
    owner = temporary_owner(path)
    if owner is None:
        return True
    host, pid = owner
    return host == _host() and pid != os.getpid() and not _alive(pid)


def clean_stale_temporaries(root: Path | str, name: str | None = None) -> int:
    """Remove the stale temporary folders under ``root`` (of ``name`` only, if given).

    Returns how many were removed; those of live processes are left alone.  A
    stale ``.old-`` folder is a finished folder moved aside by a writer that
    died before putting the new one in place: it is moved back when its
    place is empty, never deleted then.
    """
    root = Path(root)
    if not root.is_dir():
        return 0
    count = 0
    pattern = f".{name}." if name is not None else "."
    for path in sorted(root.iterdir()):
        if not (path.name.startswith(pattern) and path.is_dir() and is_stale(path)):
            continue
        match = _TEMPORARY.match(path.name)
        original = root / match["name"] if match else None
        if match and match["kind"] == "old" and original is not None and not original.exists():
            os.replace(path, original)
        else:
            shutil.rmtree(path, ignore_errors=True)
        count += 1
    return count


def check_writable(folder: Path | str, what: str = "--out") -> Path:
    """Raise :class:`ResultsError` unless a folder can be created at ``folder``.

    Checked before any work: the nearest existing ancestor must be a folder
    in which this process can create entries (a probe folder is created and
    removed there).  Missing intermediate folders are fine: they are created
    when the results are written.
    """
    target = check_name_length(folder, what)
    if target.exists() and not target.is_dir():
        raise ResultsError(f"{what} {str(target)!r} is a file, not a folder; choose another {what}")
    ancestor = target if target.exists() else target.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ResultsError(
            f"{what} {str(target)!r} cannot be created: {str(ancestor)!r} is a file, not a "
            f"folder; choose another {what}"
        )
    try:
        probe = tempfile.mkdtemp(prefix=".contactlab-probe-", dir=ancestor)
        os.rmdir(probe)
    except OSError as err:
        raise ResultsError(
            f"{what} {str(target)!r} cannot be written: {str(ancestor)!r}: "
            f"{err.strerror or err}; choose a writable {what}"
        ) from err
    return target


def _write_error(target: Path, err: OSError) -> ResultsError:
    reason = err.strerror or str(err)
    if err.errno == errno.ENOSPC:
        reason += " (free some space and run again)"
    return ResultsError(f"could not write {str(target)!r}: {reason}; nothing was written there")


@contextmanager
def atomic_folder(folder: Path | str, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary sibling of ``folder`` to fill; move it into place on success.

    On an exception inside the block the temporary folder is removed and
    ``folder`` (if it existed) is untouched; an :class:`OSError` (a full
    disk, a permission denied) becomes one :class:`ResultsError` line.  With
    ``overwrite`` an existing ``folder`` is replaced only after the new one is
    complete.  Stale temporary siblings of the same name left by dead
    processes are removed first.
    """
    target = check_target(folder, overwrite)
    tag = f"{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = target.parent / f".{target.name}.tmp-{tag}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        clean_stale_temporaries(target.parent, target.name)
        tmp.mkdir()
    except OSError as err:
        raise _write_error(target, err) from err
    try:
        try:
            yield tmp
        except ResultsError as err:
            # an error of a folder written inside this one names the place the user asked
            # for, not the temporary sibling being filled
            if str(tmp) in str(err):
                raise ResultsError(str(err).replace(str(tmp), str(target))) from err
            raise
        except OSError as err:
            raise _write_error(target, err) from err
        check_target(target, overwrite)
        try:
            if target.exists():
                old = target.parent / f".{target.name}.old-{tag}"
                os.replace(target, old)
                try:
                    os.replace(tmp, target)
                except BaseException:
                    os.replace(old, target)
                    raise
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, target)
        except OSError as err:
            if target.exists() and not overwrite:  # another writer finished first
                raise ResultsError(
                    f"results folder {str(target)!r} was written by another process while "
                    "this one ran; choose another --out or pass --force to replace it"
                ) from err
            raise _write_error(target, err) from err
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def atomic_file(path: Path | str) -> Iterator[Path]:
    """Yield a temporary sibling of the file ``path`` (same suffix) to write; rename it on success.

    On any exception the temporary file is removed and ``path`` is untouched;
    an :class:`OSError` becomes one :class:`ResultsError` line.
    """
    target = check_name_length(path, "file")
    if target.is_dir():
        raise ResultsError(f"{str(target)!r} is a folder; name a file to write")
    tag = f"{_host()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp = target.parent / f".{target.stem}.tmp-{tag}{target.suffix}"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            yield tmp
        except ResultsError:
            raise
        except OSError as err:
            raise _write_error(target, err) from err
        try:
            os.replace(tmp, target)
        except OSError as err:
            raise _write_error(target, err) from err
    finally:
        if tmp.exists():
            tmp.unlink()


def write_run(
    run: Run,
    folder: Path | str,
    *,
    overwrite: bool = False,
    plots: bool = True,
    command: Sequence[str] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``run`` as a results folder at ``folder`` (atomically); return its path."""
    with atomic_folder(folder, overwrite) as tmp:
        summary = summarize(run, command, extra)
        (tmp / SUMMARY).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
        run.steps.to_csv(tmp / STEPS, index=False)
        np.savez_compressed(tmp / TRAJECTORY, **run.trajectory)  # type: ignore[arg-type]
        if plots:
            plot_run(tmp)
    return Path(folder)


@dataclass
class RunData:
    """A results folder loaded back: ``summary`` dict, ``steps`` table, ``trajectory`` arrays."""

    folder: Path
    summary: dict[str, Any]
    steps: pd.DataFrame
    trajectory: dict[str, NDArray[Any]]

    @property
    def t(self) -> NDArray[np.float64]:
        """(T+1,) frame times [s]."""
        return self.trajectory["t"]


def _require(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        raise ResultsError(
            f"{str(folder)!r} is not a complete results folder: {name} is missing "
            "(write one with `contactlab run`)"
        )
    return path


def _missing_folder(root: Path) -> ResultsError:
    if root.exists():
        return ResultsError(f"{str(root)!r} is a file, not a results folder; pass the folder")
    return ResultsError(f"results folder {str(root)!r} does not exist")


def _corrupt(path: Path, err: BaseException) -> ResultsError:
    reason = " ".join(str(err).split()) or type(err).__name__
    return ResultsError(
        f"{str(path)!r} is unreadable or corrupt ({reason}); write the run again with "
        "`contactlab run`"
    )


def read_summary_file(root: Path) -> dict[str, Any]:
    """The parsed ``summary.json`` of the run folder ``root`` (a JSON object)."""
    path = _require(root, SUMMARY)
    try:
        summary = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise _corrupt(path, err) from err
    if not isinstance(summary, dict):
        raise _corrupt(path, ValueError("not a JSON object"))
    return summary


def check_summary_steps(root: Path, summary: Mapping[str, Any]) -> None:
    """Raise :class:`ResultsError` unless the summary of a run with a step table records
    its step count (an optimization records its kind instead: its rows are knots)."""
    recorded = summary.get("steps")
    if summary.get("kind") != "spacetime optimization" and (
        isinstance(recorded, bool) or not isinstance(recorded, int) or recorded < 0
    ):
        what = "no 'steps'" if recorded is None else f"'steps' is {recorded!r}, not a count"
        raise ResultsError(
            f"{str(root / SUMMARY)!r} is not a run summary ({what}); write the run again "
            "with `contactlab run`"
        )


def read_steps_file(root: Path) -> pd.DataFrame:
    """The per-step table ``steps.csv`` of the run folder ``root``."""
    path = _require(root, STEPS)
    try:
        steps = pd.read_csv(path, dtype={"status": str})
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise _corrupt(path, err) from err
    if "t" not in steps:
        raise _corrupt(path, KeyError("no column 't'"))
    t = pd.to_numeric(steps["t"], errors="coerce").to_numpy(dtype=float)
    if len(t) and not (np.isfinite(t).all() and np.all(np.diff(t) >= 0)):
        bad = ~np.isfinite(t) | np.concatenate([[False], np.diff(t) < 0])
        row = int(np.argmax(bad))
        raise _corrupt(path, ValueError(f"column 't' is not finite and increasing at row {row}"))
    return steps


def read_trajectory_file(root: Path) -> dict[str, NDArray[Any]]:
    """The arrays of ``trajectory.npz`` of the run folder ``root``."""
    path = _require(root, TRAJECTORY)
    try:
        with np.load(path, allow_pickle=False) as data:
            _check_member_sizes(path, data)
            trajectory = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError, KeyError) as err:
        raise _corrupt(path, err) from err
    except Exception as err:  # zipfile.BadZipFile and zlib.error from a damaged archive
        if type(err).__module__ not in ("zipfile", "zlib"):
            raise
        raise _corrupt(path, err) from err
    if "t" not in trajectory:
        raise _corrupt(path, KeyError("no array 't'"))
    return trajectory


def _check_member_sizes(path: Path, data: Any) -> None:
    """Refuse an ``.npz`` member whose header claims more bytes than the member holds
    (read from the headers, before anything is allocated)."""
    from numpy.lib import format as npformat

    for info in data.zip.infolist():
        with data.zip.open(info) as member:
            version = npformat.read_magic(member)
            if version == (1, 0):
                shape, _, dtype = npformat.read_array_header_1_0(member)
            else:
                shape, _, dtype = npformat.read_array_header_2_0(member)
            if dtype.hasobject:
                continue  # refused when loaded (no pickles)
            claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if claimed > info.file_size:
                raise ValueError(
                    f"member {info.filename!r} claims shape {shape} ({claimed:.3g} bytes) but "
                    f"holds {info.file_size} bytes"
                )


def load_run(folder: Path | str) -> RunData:
    """Load a results folder written by :func:`write_run`.

    Raises
    ------
    ResultsError
        If the folder is missing, incomplete, or holds a corrupt file (named).
    """
    root = Path(folder)
    if not root.is_dir():
        raise _missing_folder(root)
    summary = read_summary_file(root)
    steps = read_steps_file(root)
    trajectory = read_trajectory_file(root)
    check_run_files(root, summary, steps, trajectory)
    return RunData(root, summary, steps, trajectory)


def check_run_files(
    root: Path, summary: Mapping[str, Any], steps: pd.DataFrame, trajectory: Mapping[str, Any]
) -> None:
    """Raise :class:`ResultsError` when the run's files disagree with each other.

    ``trajectory.npz`` must hold ``t`` (T+1,), ``position`` (T+1, nb, 3) and
    ``rotation`` (T+1, nb, 3, 3) (and ``twist`` (T+1, nb, 6), ``q``, ``qdot``
    (T+1, n) when present), all finite; ``steps.csv`` must have the T rows the
    summary records (T+1 for an optimization: one per knot).  A truncated or
    altered file is named, never plotted.
    """
    check_summary_steps(root, summary)
    traj_path = root / TRAJECTORY
    t = np.asarray(trajectory["t"])
    if t.ndim != 1:
        raise _corrupt(traj_path, ValueError(f"'t' has shape {t.shape}, not (frames,)"))
    frames = t.shape[0]
    if t.dtype.kind == "f" and np.isfinite(t).all() and np.any(np.diff(t) < 0):
        frame = int(np.argmax(np.diff(t) < 0)) + 1
        raise _corrupt(traj_path, ValueError(f"'t' decreases at frame {frame}"))
    for key in ("position", "rotation"):
        if key not in trajectory:
            raise _corrupt(traj_path, KeyError(f"no array {key!r}"))
    nb = np.asarray(trajectory["position"]).shape[1] if trajectory["position"].ndim > 1 else -1
    expected = {
        "position": (frames, nb, 3),
        "rotation": (frames, nb, 3, 3),
        "twist": (frames, nb, 6),
        "body_names": (nb,),
    }
    for key, shape in expected.items():
        if key not in trajectory:
            continue
        got = np.shape(trajectory[key])
        if got != shape:
            raise _corrupt(
                traj_path, ValueError(f"{key!r} has shape {got}, expected {shape} from 't'")
            )
    for key in ("q", "qdot"):
        if key in trajectory and (np.ndim(trajectory[key]) != 2 or len(trajectory[key]) != frames):
            raise _corrupt(traj_path, ValueError(f"{key!r} has shape {np.shape(trajectory[key])}"))
    for key in ("t", "position", "rotation", "twist", "q", "qdot"):
        if key not in trajectory:
            continue
        values = np.asarray(trajectory[key])
        if values.dtype.kind in "fc" and not np.isfinite(values).all():
            frame = int(np.argwhere(~np.isfinite(values.reshape(frames, -1)).all(axis=1))[0, 0])
            raise _corrupt(
                traj_path, ValueError(f"{key!r} holds non-finite numbers from frame {frame}")
            )
    rotation = np.asarray(trajectory["rotation"], dtype=float)
    if rotation.size:
        # rotation matrices: R^T R = I up to round-off (1e-6 leaves room for float32 copies)
        defect = np.abs(np.einsum("...ji,...jk->...ik", rotation, rotation) - np.eye(3))
        worst = defect.reshape(frames, -1).max(axis=1)
        if np.any(worst > 1e-6):
            frame = int(np.argmax(worst > 1e-6))
            raise _corrupt(
                traj_path,
                ValueError(f"'rotation' holds no rotation matrix at frame {frame} (R^T R != I)"),
            )
    recorded = summary.get("steps")
    steps_path = root / STEPS
    if isinstance(recorded, int) and not isinstance(recorded, bool) and len(steps) != recorded:
        raise _corrupt(
            steps_path,
            ValueError(f"it has {len(steps)} rows, the summary records {recorded} steps"),
        )
    # a simulation run has one row per step between frames (an optimization, one per knot)
    per_knot = summary.get("kind") == "spacetime optimization"
    if len(steps) != (frames if per_knot else frames - 1):
        raise _corrupt(
            steps_path,
            ValueError(f"it has {len(steps)} rows for the {frames} frames of trajectory.npz"),
        )


def _title(summary: Mapping[str, Any]) -> str:
    keys = ("scenario", "formulation", "model", "solver")
    return " / ".join(str(summary.get(k, "?")) for k in keys) + f"  (h = {summary.get('dt')} s)"


def plot_run(folder: Path | str) -> list[Path]:
    """(Re)draw the plots of the run in ``folder`` from its files; return their paths."""
    from matplotlib.figure import Figure

    root = Path(folder)
    if not root.is_dir():
        raise _missing_folder(root)
    summary = read_summary_file(root)
    steps = read_steps_file(root)
    check_summary_steps(root, summary)
    if (root / TRAJECTORY).exists():  # the files must agree before anything is drawn
        check_run_files(root, summary, steps, read_trajectory_file(root))
    elif isinstance(summary.get("steps"), int) and len(steps) != summary["steps"]:
        raise _corrupt(
            root / STEPS,
            ValueError(f"it has {len(steps)} rows, the summary records {summary['steps']} steps"),
        )
    out_dir = root / PLOTS
    out_dir.mkdir(exist_ok=True)
    t = steps["t"].to_numpy(dtype=float) if "t" in steps else np.zeros(0)
    panels: list[tuple[str, list[tuple[str, str]], str, bool]] = [
        (
            "energy",
            [
                ("kinetic_energy", "kinetic"),
                ("potential_energy", "potential"),
                ("total_energy", "total"),
            ],
            "energy [J]",
            False,
        ),
        ("constraint_error", [("constraint_error", "joint drift")], "drift [m or rad]", True),
        ("penetration", [("penetration", "deepest penetration")], "penetration [m]", True),
        ("solve_time", [("solve_time_s", "solver"), ("step_time_s", "whole step")], "[s]", True),
    ]
    paths = []
    for name, series, ylabel, log in panels:
        path = out_dir / f"{name}.png"
        if not _worth_plotting(name, steps):
            path.unlink(missing_ok=True)  # a plot of an earlier drawing that no longer applies
            continue
        fig = Figure(figsize=(6.4, 5.6 if name == "energy" else 3.6), layout="constrained")
        ax = fig.add_subplot(2, 1, 1) if name == "energy" else fig.add_subplot()
        drawn = False
        for column, label in series:
            if column in steps and len(steps):
                y = pd.to_numeric(steps[column], errors="coerce").to_numpy(dtype=float)
                ax.plot(t, y, label=label, linewidth=1.0)
                drawn = drawn or bool(np.any(y > 0))
        if log and drawn:
            ax.set_yscale("symlog" if name != "solve_time" else "log", **_log_kwargs(name, steps))
        ax.set_xlabel("t [s]")
        ax.set_ylabel(ylabel)
        ax.set_title(_title(summary), fontsize=9)
        ax.grid(True, alpha=0.3)
        if len(series) > 1:
            ax.legend(fontsize=8)
        if name == "energy":
            _energy_change_panel(fig.add_subplot(2, 1, 2), t, steps, summary)
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths


#: [m or rad] a largest bilateral drift below this is round-off, not a result to plot
ROUNDOFF_DRIFT = 1e-12


def _worth_plotting(name: str, steps: pd.DataFrame) -> bool:
    """Whether a panel shows something: contacts for penetration, drift above round-off."""
    if name == "penetration":
        contacts = pd.to_numeric(steps.get("n_contacts", pd.Series(dtype=float)), errors="coerce")
        return bool((contacts > 0).any())
    if name == "constraint_error":
        drift = pd.to_numeric(steps.get(name, pd.Series(dtype=float)), errors="coerce")
        return bool((drift.abs() > ROUNDOFF_DRIFT).any())
    return True


def _energy_change_panel(ax: Any, t: NDArray[Any], steps: pd.DataFrame, summary: dict) -> None:
    """``E(t) - E(0)`` on its own scale, where a drift too small for the energy panel shows."""
    e0 = (summary.get("initial_metrics") or {}).get("total_energy")
    if "total_energy" in steps and e0 is not None and len(steps):
        energy = pd.to_numeric(steps["total_energy"], errors="coerce").to_numpy(dtype=float)
        ax.plot(t, energy - float(e0), linewidth=1.0, color="C2")
    ax.axhline(0.0, color="0.5", linewidth=0.6)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("E(t) − E(0) [J]")
    ax.grid(True, alpha=0.3)


def _log_kwargs(name: str, steps: pd.DataFrame) -> dict[str, float]:
    """Linear threshold of a symlog axis: a small fraction of the largest value."""
    if name == "solve_time":
        return {}
    y = pd.to_numeric(steps[name], errors="coerce").to_numpy(dtype=float)
    top = float(np.nanmax(np.abs(y))) if y.size else 1.0
    return {"linthresh": max(top * 1e-6, 1e-15)}
