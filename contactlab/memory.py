"""What a contact model carries from one step to the next: warm starts, by key, and nothing else.

A model's memory is a :class:`ModelMemory`: under its own key each model keeps
the record it warm-starts from (the previous step's impulses by contact
identity, :class:`~contactlab.models.warm.ImpulseMemory` and its kin), and the
simulator keeps the contact track (:data:`contactlab.contact.identity.CACHE_KEY`).
Memory is never needed for correctness -- a step from an empty memory is a
cold start -- and never holds diagnostics: what a model measured in a step
goes in :attr:`StepSolution.report <contactlab.problem.StepSolution.report>`.

Each step the simulator hands the model a copy of the state's memory; what
the model writes there reaches the next state only, so one model object can
step several simulators and a state, once made, does not change.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import TypeVar

T = TypeVar("T")


def recall(memory: Mapping[str, object], key: str, kind: type[T]) -> T | None:
    """The record under ``key`` in ``memory`` if it is a ``kind``, else ``None`` (a cold start).

    A record of another type under the key (left by another model, or by an
    older version of this one) is not a warm start of this model.  ``memory`` is
    a :class:`ModelMemory` or any mapping a caller steps a model with.
    """
    found = memory.get(key)
    return found if isinstance(found, kind) else None


class ModelMemory(MutableMapping[str, object]):
    """Warm starts by key, carried by a :class:`~contactlab.scene.State` between steps."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, object] | None = None) -> None:
        self._items: dict[str, object] = dict(items or {})

    def recall(self, key: str, kind: type[T]) -> T | None:
        """:func:`recall` of this memory."""
        return recall(self, key, kind)

    def merged(self, *others: Mapping[str, object]) -> ModelMemory:
        """A new memory: this one updated by ``others`` in order."""
        out = ModelMemory(self._items)
        for other in others:
            out._items.update(other)
        return out

    def copy(self) -> ModelMemory:
        """A shallow copy (the records themselves are not copied: they are never mutated)."""
        return ModelMemory(self._items)

    def __getitem__(self, key: str) -> object:
        return self._items[key]

    def get(self, key: str, default: object = None) -> object:
        # the dict's own look-up: the mixin's goes through __getitem__ and a KeyError
        return self._items.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __setitem__(self, key: str, value: object) -> None:
        if not isinstance(key, str):
            raise TypeError(f"model memory keys are strings, got {type(key).__name__}")
        self._items[key] = value

    def __delitem__(self, key: str) -> None:
        del self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        kinds = ", ".join(f"{k}: {type(v).__name__}" for k, v in self._items.items())
        return f"ModelMemory({{{kinds}}})"
