"""Scenarios from files: a URDF or MJCF model, or a Python function that builds a scene.

Wherever a scenario name is taken (``contactlab run``, ``compare``, ``sweep``,
:class:`~contactlab.runspec.RunSpec`), a file may stand in for it:

* ``robot.urdf`` — read by :func:`contactlab.reduced.urdf.load_urdf`;
* ``robot.xml`` (or ``.mjcf``) — compiled by MuJoCo and read by
  :func:`contactlab.reduced.mjcf.load_mjcf`;
* ``scenes.py:make_scene`` — the function ``make_scene`` of that Python file
  (a plain function returning a :class:`~contactlab.scene.Scene`, or a
  :class:`~contactlab.scenario.Scenario` made with ``@scenario``).

A model file's scenario has as parameters (``--set KEY=VALUE``) the loader's own
keyword options that take a number, a flag or a text (``fixed_base``,
``joint_limits``, ...; see ``contactlab list FILE``), and three of its own:
``ground`` (add the ground plane z = 0 when the model has none), ``height``
(lift the model: every root joint's frame is raised by this many metres, so a
floating robot starts above the ground) and ``duration`` of the scene's
default run.  A Python function's parameters are its keyword arguments, as for
a registered scenario.
"""

from __future__ import annotations

import importlib.util
import inspect
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.scene import Scene
from contactlab.userfiles import existing_file, file_object, names_file_object

#: File suffixes read as model files, with the loader's module and function.
LOADERS: dict[str, tuple[str, str]] = {
    ".urdf": ("contactlab.reduced.urdf", "load_urdf"),
    ".xml": ("contactlab.reduced.mjcf", "load_mjcf"),
    ".mjcf": ("contactlab.reduced.mjcf", "load_mjcf"),
}

#: Parameter types a loader option may have to be settable from the command line.
_SETTABLE = (bool, int, float, str)


def looks_like_file(name: str) -> bool:
    """Whether a scenario name names a file (a model file or ``file.py:function``)."""
    if Path(name).suffix.lower() in LOADERS:
        return True
    return names_file_object(name)


def python_builder(name: str) -> Any:
    """The object ``function`` of ``file.py:function`` (a scene builder or a Scenario), or
    :class:`ConfigurationError` naming the file and what it defines."""
    builder = file_object(name)
    if not callable(builder) and not hasattr(builder, "builder"):
        attr = name.rpartition(":")[2]
        raise ConfigurationError(
            f"{name!r}: {attr!r} is a {type(builder).__name__}, not a function returning a Scene"
        )
    return builder


def _existing(path: Path, what: str) -> Path:
    return existing_file(path, what)


def _loader(suffix: str) -> Callable[..., Scene]:
    module, function = LOADERS[suffix]
    if module.endswith("mjcf") and importlib.util.find_spec("mujoco") is None:
        raise ConfigurationError(
            "MJCF files are compiled by MuJoCo, which is not installed; "
            "install it with `pip install 'contactlab[mjcf]'`"
        )
    return getattr(importlib.import_module(module), function)  # type: ignore[no-any-return]


def _options(loader: Callable[..., Scene]) -> dict[str, inspect.Parameter]:
    """The loader's keyword options settable from the command line (``None`` defaults are
    taken as text, empty meaning ``None``)."""
    out = {}
    for p in inspect.signature(loader).parameters.values():
        if p.kind is not inspect.Parameter.KEYWORD_ONLY or p.name in ("name", "gravity"):
            continue
        if p.default is None or isinstance(p.default, _SETTABLE):
            out[p.name] = p
    return out


#: A model file's parameter: name, default, type, description.
FileParameter = tuple[str, Any, type, str]


def model_builder(name: str) -> tuple[Callable[..., Scene], list[FileParameter], str]:
    """The scene builder of a model file, its parameters and a description."""
    path = _existing(Path(name), "model file")
    loader = _loader(path.suffix.lower())
    options = _options(loader)
    params: list[FileParameter] = []
    for key, p in options.items():
        default = "" if p.default is None else p.default
        params.append((key, default, type(default), f"{loader.__name__} option"))
    params.append(("ground", False, bool, "add the ground plane z = 0"))
    params.append(("height", 0.0, float, "raise the model's root joints [m]"))
    params.append(("duration", 2.0, float, "default run duration [s]"))

    def build(ground: bool = False, height: float = 0.0, duration: float = 2.0, **kw: Any) -> Scene:
        given = {k: (None if options[k].default is None and v == "" else v) for k, v in kw.items()}
        try:
            scene = loader(path, **given)
        except ConfigurationError as err:
            if path.name in str(err) or type(err) is not ConfigurationError:
                raise
            # the loader names the link or shape; the user named the file
            raise ConfigurationError(f"model file {name!r}: {err}") from err
        if not scene.bodies:
            raise ConfigurationError(
                f"model file {name!r} describes no bodies; check that it is the model you "
                f"meant ({loader.__name__} reads it)"
            )
        return place(scene, ground=ground, height=height).with_(duration=duration)

    return build, params, f"model file {path.name} ({loader.__name__})"


def place(scene: Scene, *, ground: bool = False, height: float = 0.0) -> Scene:
    """``scene`` raised by ``height`` [m] (every joint to the world moves up) and, with
    ``ground``, given the ground plane z = 0 unless it has a plane already."""
    from contactlab.shapes import Plane

    if not np.isfinite(height) or abs(height) > 1e6:
        raise ConfigurationError(f"height {height!r} m: give a finite lift below 1e6 m")
    changes: dict[str, Any] = {}
    if height != 0.0:
        lift = np.eye(4)
        lift[2, 3] = height
        joints = []
        for j in scene.joints:
            if j.parent is None:
                frame = np.eye(4) if j.frame_parent is None else np.asarray(j.frame_parent)
                j = replace(j, frame_parent=lift @ frame)
            joints.append(j)
        changes["joints"] = tuple(joints)
        if scene.initial_E is not None:
            E = np.array(scene.initial_E, dtype=float)
            E[:, 2, 3] += height
            changes["initial_E"] = E
    if ground and not any(isinstance(s, Plane) for s in scene.static_shapes):
        changes["static_shapes"] = (*scene.static_shapes, Plane())
    return scene.with_(**changes) if changes else scene
