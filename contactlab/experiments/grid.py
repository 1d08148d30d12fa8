"""Sweep specifications: a TOML file expanded into a grid of :class:`RunSpec`.

Format (every list is a grid dimension; a scalar is a fixed value)::

    [sweep]
    out = "sweep-out"            # relative to this file's folder; default: <file stem>/
    duration = 0.5               # [s]; default the scene's
    dt = [1e-3, 5e-3]            # [s]; default the scene's
    seeds = [0, 1]               # default [0]
    formulations = ["maximal"]   # default: the scenario's formulations
    models = ["frictionless", "anitescu-hart"]
    solvers = ["osqp", "pgs"]
    compare_by = ["model", "solver"]   # what the aggregates compare (default shown)
    shift = 10.0                 # shift of the geometric mean of time [ms]
    strict = false               # true: a run stops at its first unconverged step

    [model_options]              # lists are grid dimensions here too
    directions = [4, 8]

    [formulation_options]        # likewise, e.g. the maximal formulation's integrator
    integrator = ["linearly-implicit", "trapezoidal"]

    [[scenarios]]
    name = "box-stack"
    params = { n = [2, 4] }      # grid over the scenario's parameters
    models = ["frictionless"]    # any [sweep] key may be overridden per scenario

A ``[short]`` table makes a quick version of the same sweep (``short=True``):
its ``sweep`` table overrides keys of ``[sweep]`` and its ``scenarios`` list,
when given, replaces ``[[scenarios]]``::

    [short.sweep]
    duration = 0.2
    [[short.scenarios]]
    name = "box-stack"

A combination that does not fit (the model cannot be solved by the solver,
the scenario lacks the formulation, the solver is not installed) is not a
run: it is listed with the reason in the sweep's ``skipped.csv``.  A name
that names nothing (a typo) refuses the whole grid before the first run.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.runspec import RunSpec, check_fits, check_names, scenario_values
from contactlab.trajectory import MAX_STEPS

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SWEEP_KEYS = {
    "out",
    "duration",
    "dt",
    "seeds",
    "formulations",
    "models",
    "solvers",
    "compare_by",
    "shift",
    "model_options",
    "formulation_options",
    "name",
    "description",
    "strict",
}
SPEC_COLUMNS = [
    "scenario",
    "params",
    "formulation",
    "model",
    "model_options",
    "formulation_options",
    "solver",
    "dt",
    "duration",
    "seed",
]


@dataclass
class Grid:
    """An expanded sweep: the runs, the combinations that do not fit, and the settings."""

    runs: list[RunSpec]
    skipped: list[dict[str, Any]]
    out: Path
    compare_by: list[str] = field(default_factory=lambda: ["model", "solver"])
    shift: float = 10.0
    name: str = ""
    description: str = ""

    @property
    def problem_columns(self) -> list[str]:
        """Spec columns that identify a problem (all but those compared)."""
        return [c for c in SPEC_COLUMNS if c not in self.compare_by]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _product(options: Mapping[str, Any], where: str = "") -> list[dict[str, Any]]:
    keys = list(options)
    for key in keys:
        if isinstance(options[key], (list, tuple)) and len(options[key]) == 0:
            raise ConfigurationError(
                f"{where}{key} is an empty list, which makes an empty grid; give at least one value"
            )
    return [
        dict(zip(keys, combo)) for combo in itertools.product(*(_as_list(options[k]) for k in keys))
    ]


def _axis(cfg: Mapping[str, Any], key: str, default: Any, where: str) -> list[Any]:
    """The values of grid dimension ``key``; an empty list is an error (no runs at all)."""
    values = _as_list(cfg.get(key, default))
    if not values:
        raise ConfigurationError(
            f"{where}: {key} is an empty list, which makes an empty grid; give at least one value"
        )
    return values


def _names(cfg: Mapping[str, Any], key: str, default: Any, where: str) -> list[str]:
    """The names of grid dimension ``key`` (formulations, models, solvers): non-empty strings."""
    values = _axis(cfg, key, default, where)
    for value in values:
        if not isinstance(value, str) or not value:
            raise ConfigurationError(
                f'{where}: {key} must list names such as {key} = ["..."], got {value!r}'
            )
    return values


def _positive_seconds(value: Any, key: str, where: str) -> float | None:
    """A step size or duration [s]: ``None`` (the scene's) or a positive finite number."""
    if value is None:
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or value <= 0:
        raise ConfigurationError(
            f"{where}: {key} = {value!r} is not a positive number of seconds; "
            f"write e.g. {key} = 0.01"
        )
    return float(value)


def _seed(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{where}: seeds must be integers, got {value!r}")
    return value


def load_spec(path: Path | str) -> dict[str, Any]:
    """Parse the TOML file; clear errors for a missing file or bad syntax."""
    path = Path(path)
    if not path.is_file():
        raise ConfigurationError(f"sweep specification {str(path)!r} does not exist")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise ConfigurationError(
            f"sweep specification {str(path)!r} is not text (byte {err.start} is not UTF-8); "
            "give a TOML file"
        ) from err
    except OSError as err:
        raise ConfigurationError(
            f"sweep specification {str(path)!r} cannot be read: {err.strerror}"
        ) from err
    except tomllib.TOMLDecodeError as err:
        raise ConfigurationError(
            f"sweep specification {str(path)!r} is not valid TOML: {err}"
        ) from err


#: Most runs one specification may expand to: each is a folder on disk and a process
#: task, and the grid is expanded and checked in memory before the first run.
MAX_RUNS = 100_000


def expand(data: Mapping[str, Any], base: Path, out: Path | str | None = None) -> Grid:
    """Expand a parsed specification into a :class:`Grid` (see the module docstring)."""
    from contactlab.scenario import get_scenario

    tables = {"sweep", "scenarios", "model_options", "formulation_options", "short"}
    extra_tables = set(data) - tables
    if extra_tables:
        raise ConfigurationError(
            f"the sweep specification has unknown tables {sorted(extra_tables)}; known: "
            "[sweep], [[scenarios]], [model_options], [formulation_options], [short]"
        )
    top = dict(data.get("sweep", {}))
    unknown = set(top) - SWEEP_KEYS
    if unknown:
        raise ConfigurationError(
            f"[sweep] has unknown keys {sorted(unknown)}; known keys: {sorted(SWEEP_KEYS)}"
        )
    top.setdefault("model_options", data.get("model_options", {}))
    top.setdefault("formulation_options", data.get("formulation_options", {}))
    entries = data.get("scenarios")
    if not entries:
        raise ConfigurationError("the sweep specification lists no [[scenarios]]; add at least one")
    runs: list[RunSpec] = []
    skipped: list[dict[str, Any]] = []
    seen: set[str] = set()
    planned = 0
    for entry in entries:
        entry = dict(entry)
        if "name" not in entry:
            raise ConfigurationError('every [[scenarios]] entry needs a name = "..."')
        sc = get_scenario(entry.pop("name"))
        grid_params = entry.pop("params", {})
        if not isinstance(grid_params, Mapping):
            raise ConfigurationError(
                f"[[scenarios]] {sc.name!r}: params must be a table such as "
                f"params = {{ n = [2, 4] }}, got {grid_params!r}"
            )
        bad = set(entry) - SWEEP_KEYS
        if bad:
            raise ConfigurationError(
                f"[[scenarios]] {sc.name!r} has unknown keys {sorted(bad)}; known: "
                f"name, params, {', '.join(sorted(SWEEP_KEYS))}"
            )
        cfg = {**top, **entry}
        if "solvers" not in cfg or "models" not in cfg:
            raise ConfigurationError(
                f"scenario {sc.name!r}: the sweep needs solvers = [...] and models = [...]"
            )
        where = f"scenario {sc.name!r}"
        dts = [_positive_seconds(v, "dt", where) for v in _axis(cfg, "dt", None, where)]
        duration = _positive_seconds(cfg.get("duration"), "duration", where)
        for dt in dts:  # the step limit of one run, for the whole grid before its first run
            if dt is not None and duration is not None and duration / dt > MAX_STEPS:
                raise ConfigurationError(
                    f"{where}: a duration of {duration:g} s at dt = {dt:g} s is "
                    f"{duration / dt:.3g} steps, more than the limit of {MAX_STEPS:,} steps per "
                    "run; use a larger dt or a shorter duration"
                )
        seeds = [_seed(v, where) for v in _axis(cfg, "seeds", 0, where)]
        strict = cfg.get("strict", False)
        if not isinstance(strict, bool):
            raise ConfigurationError(f"{where}: strict must be true or false, got {strict!r}")
        formulations = _names(cfg, "formulations", list(sc.formulations), where)
        models = _names(cfg, "models", None, where)
        solvers = _names(cfg, "solvers", None, where)
        try:  # a typo refuses the grid; a known solver that is not installed is skipped
            check_names(solvers, models, formulations)
        except UnknownNameError as err:
            err.args = (f"{where}: {err}; correct the sweep specification",)
            raise
        grid_rows = _product(grid_params, f"{where}: params.")
        option_rows = _product(cfg.get("model_options", {}), f"{where}: model_options.")
        form_rows = _product(cfg.get("formulation_options", {}), f"{where}: formulation_options.")
        sizes = (grid_rows, formulations, models, option_rows, solvers, dts, seeds, form_rows)
        planned += math.prod(len(axis) for axis in sizes)
        if planned > MAX_RUNS:
            raise ConfigurationError(
                f"{where}: the sweep specification expands to {planned:,} runs or more, beyond "
                f"the limit of {MAX_RUNS:,}; give fewer values per grid dimension"
            )
        dims = itertools.product(
            grid_rows, formulations, models, option_rows, solvers, dts, seeds, form_rows
        )
        for params, form, model, options, solver, dt, seed, form_options in dims:
            if form_options:
                from contactlab.formulation import formulation_class, formulation_names

                if form in formulation_names():  # an unknown name is reported as not fitting
                    formulation_class(form).check_options(form_options)
            spec = RunSpec(
                sc.name,
                sc.resolve(scenario_values(params)),
                form,
                model,
                solver,
                dt,
                duration,
                int(seed),
                options,
                form_options,
                strict,
            )
            digest = spec.digest()
            if digest in seen:
                continue
            seen.add(digest)
            try:
                check_fits(spec)
            except (IncompatibleError, UnknownNameError) as err:
                entry = {
                    "scenario": sc.name,
                    "formulation": form,
                    "model": model,
                    "solver": solver,
                    "reason": str(err),
                }
                # one row per combination that does not fit, whatever the parameters,
                # step sizes and seeds it was crossed with
                if entry not in skipped:
                    skipped.append(entry)
                continue
            runs.append(spec)
    if not runs:
        first = "; ".join(
            f"{r['formulation']}/{r['model']}/{r['solver']}: {r['reason']}" for r in skipped[:2]
        )
        raise IncompatibleError(
            f"no run of the sweep fits ({len(skipped)} combinations do not: {first}); "
            "change the solvers or models of the specification"
        )
    target = Path(out) if out is not None else base / str(top.get("out", "sweep"))
    compare_by = _as_list(top.get("compare_by", ["model", "solver"]))
    bad_cols = set(compare_by) - set(SPEC_COLUMNS)
    if bad_cols:
        raise ConfigurationError(
            f"compare_by names unknown columns {sorted(bad_cols)}; choose from {SPEC_COLUMNS}"
        )
    return Grid(
        runs,
        skipped,
        target,
        compare_by,
        float(top.get("shift", 10.0)),
        str(top.get("name", "")),
        str(top.get("description", "")),
    )


def shorten(data: Mapping[str, Any]) -> dict[str, Any]:
    """The specification with its ``[short]`` overrides applied (see the module docstring)."""
    short = dict(data.get("short", {}))
    if not short:
        raise ConfigurationError("the sweep specification has no [short] table for a short run")
    bad = set(short) - {"sweep", "scenarios"}
    if bad:
        raise ConfigurationError(f"[short] has unknown keys {sorted(bad)}; known: sweep, scenarios")
    out = dict(data)
    out["sweep"] = {**data.get("sweep", {}), **short.get("sweep", {})}
    if "scenarios" in short:
        out["scenarios"] = short["scenarios"]
    return out


def load_grid(path: Path | str, out: Path | str | None = None, short: bool = False) -> Grid:
    """Read and expand the TOML file at ``path``; relative ``out`` is against its folder.

    ``short`` applies the specification's ``[short]`` overrides.
    """
    path = Path(path)
    data = load_spec(path)
    if short:
        data = shorten(data)
    if not data.get("scenarios"):
        raise ConfigurationError(
            f"sweep specification {str(path)!r} lists no [[scenarios]]; add at least one "
            '(a [[scenarios]] table with name = "...")'
        )
    grid = expand(data, path.parent, out)
    if out is None and "out" not in data.get("sweep", {}):
        grid.out = path.parent / path.stem
    return grid
