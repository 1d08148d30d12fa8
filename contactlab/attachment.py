"""Attachments: a body whose motion is that of another body (or of the world).

An :class:`Attachment` holds a body at a fixed transform in its master's frame
(``E_k = E_m T``), still in the world (``master=None``), or carried along a
prescribed path (``trajectory``, a parametrically controlled body).  It is the
formulation-neutral description held by :attr:`contactlab.scene.Scene.attachments`;
the scene checks the attachments against its bodies
(:func:`contactlab.scene.check_attachments`), and the maximal formulation realises
them by null-space reduction (:class:`contactlab.maximal.attachment_map.AttachmentMap`,
where the mathematics is written out; ArtiSynth's notes §0.17–0.21).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]


@dataclass(frozen=True)
class Attachment:
    """Body ``body`` attached rigidly to ``master`` (a body name; ``None``: the world).

    Attributes
    ----------
    body : name of the attached body.
    master : name of the body it moves with, or ``None`` to hold it fixed in
        the world.
    transform : (4, 4) pose of ``body``'s frame in ``master``'s frame (in the
        world frame for ``master=None``, in the driving frame with a
        ``trajectory``); ``None`` takes it from the initial poses.  A given
        transform overrides the attached body's initial pose.
    trajectory : ``t [s] -> (4, 4)`` world pose of a driving frame that
        carries the body (``master`` must be ``None``): the body is then
        parametrically controlled (§0.21), ``E(t) = trajectory(t) transform``.
    """

    body: str
    master: str | None = None
    transform: ArrayLike | None = None
    trajectory: Callable[[float], ArrayLike] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.body, str) or not self.body:
            raise ConfigurationError(f"Attachment: body must be a body name, got {self.body!r}")
        if self.master is not None and not isinstance(self.master, str):
            raise ConfigurationError(
                f"Attachment of {self.body!r}: master must be a body name or None (the world), "
                f"got {self.master!r}"
            )
        if self.master == self.body:
            raise ConfigurationError(f"Attachment: body {self.body!r} is attached to itself")
        if self.trajectory is not None:
            if not callable(self.trajectory):
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: trajectory must be a function t -> (4, 4) "
                    f"world pose, got {type(self.trajectory).__name__}"
                )
            if self.master is not None:
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: a trajectory drives a body in the world; "
                    f"drop master={self.master!r} (or drive the master and attach to it)"
                )
        if self.transform is not None:
            T = np.array(self.transform, dtype=float)
            if T.shape != (4, 4) or not np.all(np.isfinite(T)):
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: transform must be a finite 4x4 matrix"
                )
            if not se3.is_rotation(T[:3, :3], tol=1e-9) or not np.allclose(
                T[3], (0.0, 0.0, 0.0, 1.0)
            ):
                raise ConfigurationError(
                    f"Attachment of {self.body!r}: transform is not a rigid transform "
                    "(orthonormal rotation with det +1, last row 0 0 0 1)"
                )
            object.__setattr__(self, "transform", T)

    @property
    def supplies_energy(self) -> bool:
        """A driven body does work that no potential records."""
        return self.trajectory is not None


def driving_pose(attachment: Attachment, t: float) -> Array:
    """``attachment.trajectory(t)`` checked: a finite rigid (4, 4) transform."""
    assert attachment.trajectory is not None
    D = np.asarray(attachment.trajectory(t), dtype=float)
    if (
        D.shape != (4, 4)
        or not np.all(np.isfinite(D))
        or not se3.is_rotation(D[:3, :3], tol=1e-9)
        or not np.allclose(D[3], (0.0, 0.0, 0.0, 1.0))
    ):
        raise ConfigurationError(
            f"Attachment of {attachment.body!r}: trajectory({t:g}) is not a finite rigid 4x4 "
            "transform (orthonormal rotation with det +1, last row 0 0 0 1)"
        )
    return D


def attachments_of(items: Sequence[Any]) -> tuple[Attachment, ...]:
    """``items`` as a tuple of :class:`Attachment` (accepts ``(body, master)`` pairs)."""
    out = []
    for a in items:
        if isinstance(a, Attachment):
            out.append(a)
        elif isinstance(a, (tuple, list)) and len(a) in (2, 3):
            out.append(Attachment(*a))
        else:
            raise ConfigurationError(
                "an attachment must be Attachment(body, master) or a (body, master) pair, "
                f"got {a!r}"
            )
    return tuple(out)
