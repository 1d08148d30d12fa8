"""One catalogue of everything selectable by name: scenarios, formulations, models,
constraint and joint kinds, solvers.

Every section reads one :class:`solvers.plugins.Registry` (built-ins plus the
entry points of its group), so a third-party plug-in is listed like a
built-in one, with the entry point it came from under ``origin``.

Used by ``contactlab list`` (text and ``--json``) and by anything that needs
to enumerate the choices.  Each section is gathered independently: a section
that cannot be loaded (for example a solver layer that is not installed)
reports why instead of breaking the others.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


def _type_name(value: Any) -> str:
    return type(value).__name__


def scenarios() -> list[dict[str, Any]]:
    """Registered scenarios with their formulations and parameters (name, type, default, doc)."""
    from contactlab import scenario as registry

    rows = []
    for name, spec in sorted(registry.load_scenarios().items()):
        rows.append(
            {
                "name": name,
                "description": spec.description,
                "formulations": list(spec.formulations),
                "default": _default_setup(spec),
                "parameters": [
                    {
                        "name": p.name,
                        "type": _type_name(p.default),
                        "default": p.default,
                        "doc": p.doc,
                    }
                    for p in spec.parameters.values()
                ],
            }
        )
    return rows


def _origin(registry: Any, name: str) -> str:
    return registry.origin(name) or "contactlab"


def _default_setup(spec: Any) -> dict[str, str] | None:
    """The scenario's default formulation, model and solver (``None`` if it cannot be built)."""
    try:
        return spec.default_setup().as_dict()  # type: ignore[no-any-return]
    except Exception:  # a scenario whose defaults do not build still lists its parameters
        return None


def formulations() -> list[dict[str, Any]]:
    """Registered formulations with their options (``--formulation-option KEY=VALUE``)."""
    from contactlab.formulation import FORMULATIONS, formulation_names

    return [
        {
            "name": name,
            "description": _first_line(FORMULATIONS.get(name)),
            "origin": _origin(FORMULATIONS, name),
            "options": formulation_options(FORMULATIONS.get(name)),
        }
        for name in formulation_names()
    ]


def formulation_options(cls: type) -> list[dict[str, Any]]:
    """The keyword options of a formulation class: name, default and description.

    Read from ``__init__`` (every parameter but the scene) and the class
    docstring's ``name : description`` entries; a class whose ``__init__``
    passes ``**options`` on to its base lists the base's options too.
    """
    from contactlab.docstrings import doc_of, parameter_docs

    rows: list[dict[str, Any]] = []
    seen = {"self", "scene"}
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        docs = parameter_docs(doc_of(klass))
        passes_on = False
        for p in inspect.signature(init).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                passes_on = passes_on or p.kind is p.VAR_KEYWORD
                continue
            if p.name in seen:
                continue
            seen.add(p.name)
            default = None if p.default is inspect.Parameter.empty else p.default
            rows.append({"name": p.name, "default": default, "doc": docs.get(p.name, "")})
        if not passes_on:
            break
    return rows


def models() -> list[dict[str, Any]]:
    """Registered contact models with the problem forms they pose."""
    from contactlab.models.base import MODELS, model_names

    return [
        {
            "name": name,
            "forms": list(MODELS.get(name).forms),
            "description": _first_line(MODELS.get(name)),
            "origin": _origin(MODELS, name),
        }
        for name in model_names()
    ]


def constraints() -> list[dict[str, Any]]:
    """Constraint kinds of the maximal formulation (``joint``: every joint kind with rows)."""
    from contactlab.joints.body_constraints import CONSTRAINTS, constraint_kinds

    return [
        {
            "name": name,
            "description": _first_line(CONSTRAINTS.get(name)),
            "origin": _origin(CONSTRAINTS, name),
        }
        for name in constraint_kinds()
    ]


def joints() -> list[dict[str, Any]]:
    """Joint kinds (reduced formulation; maximal too where the joint map declares rows)."""
    from contactlab.joints.kinds import JOINTS, joint_kinds

    return [
        {
            "name": name,
            "description": _first_line(JOINTS.get(name)),
            "origin": _origin(JOINTS, name),
        }
        for name in joint_kinds()
    ]


def solvers() -> list[dict[str, Any]]:
    """Solver-layer backends with availability, the reason when unavailable, and the pip extra."""
    import solvers as layer

    return [
        {
            "name": row["name"],
            "available": bool(row["available"]),
            "reason": row.get("reason"),
            "extra": row.get("extra"),
            "forms": list(row.get("forms") or ()),
            "description": row.get("description", ""),
            "origin": row.get("origin") or "solvers",
        }
        for row in layer.backend_table()
    ]


def _first_line(obj: Any) -> str:
    """The description of ``obj``: its docstring's first paragraph, whole, on one line."""
    from contactlab.docstrings import doc_of, summary

    return summary(doc_of(obj))


SECTIONS: dict[str, Callable[[], list[dict[str, Any]]]] = {
    "scenarios": scenarios,
    "formulations": formulations,
    "models": models,
    "constraints": constraints,
    "joints": joints,
    "solvers": solvers,
}


def catalog() -> dict[str, Any]:
    """``{section: rows}`` for every section, and ``errors: {section: message}`` for failures."""
    out: dict[str, Any] = {"errors": {}}
    for section, gather in SECTIONS.items():
        try:
            out[section] = gather()
        except Exception as err:  # a half-installed optional piece must not hide the rest
            out[section] = []
            out["errors"][section] = f"{type(err).__name__}: {err}"
    return out
