"""The run configuration: one :class:`RunSpec` says everything that determines a run.

Scenario and parameters, formulation, contact model (with options), solver,
step size, duration, seed and strictness.  ``run``, ``compare``, ``sweep``,
:func:`contactlab.runspec.simulate` take one, and a finished
:class:`~contactlab.runs.Run` holds the one it ran (with the scene's choices
filled in).  Its :meth:`~RunSpec.digest` is a SHA-256 of a canonical JSON
form, so two specs that mean the same run (parameters given as strings or
numbers, in any order) have the same hash.  Sweeps name results folders after
it and skip a run whose folder already records the same hash.  Checking a spec
and building its simulator is :mod:`contactlab.runspec`'s work.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from contactlab.errors import ConfigurationError

SPEC_VERSION = 1


def _plain(value: Any) -> Any:
    """JSON-ready copy: tuples to lists, numpy scalars to Python numbers, keys sorted."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    return value


def scenario_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters with lists turned into tuples (TOML and JSON have no tuples; scenario
    parameters such as ``half_extents`` are tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid.

    Parameters
    ----------
    scenario : registered scenario name (or a model file, ``file.py:function``).
    params : scenario parameters (resolved values, not strings).
    formulation, model, solver : registered names (a model may also be
        ``file.py:Class``); ``None`` takes the scene's default, chosen when the
        simulator is built (:func:`contactlab.scenario.complete_setup`).
    dt : step size [s]; ``None`` uses the scene's default.
    duration : simulated time [s]; ``None`` uses the scene's default.
    seed : passed to the scenario's ``seed`` parameter when it has one (e.g.
        a random pile); otherwise it only distinguishes repetitions (timing
        statistics).
    model_options : options of the contact model (``cone``, ``directions``, ...).
    formulation_options : options of the formulation (``integrator``, ...);
        left out of :meth:`as_dict` (and so of the hash) when empty, so that
        the specifications written before it existed keep their hashes.
    strict : stop the run at the first step that misses its tolerance (see
        :class:`~contactlab.simulator.Simulator`); left out of :meth:`as_dict`
        when ``False``, like ``formulation_options``.
    """

    scenario: str
    params: Mapping[str, Any] = field(default_factory=dict)
    formulation: str | None = None
    model: str | None = None
    solver: str | None = None
    dt: float | None = None
    duration: float | None = None
    seed: int = 0
    model_options: Mapping[str, Any] = field(default_factory=dict)
    formulation_options: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Canonical, JSON-ready dictionary (what the hash covers)."""
        d = _plain(asdict(self))
        if not d["formulation_options"]:
            del d["formulation_options"]
        if not d["strict"]:
            del d["strict"]
        d["version"] = SPEC_VERSION
        return d

    def digest(self) -> str:
        """SHA-256 hex digest of the canonical JSON form."""
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def folder_name(self) -> str:
        """``<scenario>-<formulation>-<model>-<solver>-<hash12>`` (filesystem-safe)."""
        names = (self.formulation, self.model, self.solver)
        slug = "-".join((self.scenario, *(name or "default" for name in names)))
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", slug)
        return f"{slug}-{self.digest()[:12]}"

    def label(self) -> str:
        """Short human-readable name: ``formulation/model/solver``."""
        names = (self.formulation, self.model, self.solver)
        return "/".join(name or "default" for name in names)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """Inverse of :meth:`as_dict` (unknown keys rejected)."""
        known = {
            "scenario",
            "params",
            "formulation",
            "model",
            "solver",
            "dt",
            "duration",
            "seed",
            "model_options",
            "formulation_options",
            "strict",
        }
        extra = set(data) - known - {"version"}
        if extra:
            raise ConfigurationError(
                f"run specification has unknown keys {sorted(extra)}; known keys: {sorted(known)}"
            )
        values = {k: data[k] for k in known if k in data}
        values["params"] = scenario_values(values.get("params", {}))
        if not isinstance(values.get("strict", False), bool):
            raise ConfigurationError(
                f"run specification: strict must be true or false, got {values['strict']!r}"
            )
        return cls(**values)
