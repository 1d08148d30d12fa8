"""Types of the extension compiled from ``_cfast.c`` at install (see that file)."""

from typing import Any

import numpy as np
from numpy.typing import NDArray

_F = NDArray[np.float64]

SOURCE_SHA256: str

class Kernels:
    def __init__(self, topo: NDArray[np.int64], geom: _F, dofp: _F, n_other: int) -> None: ...
    def forward_dynamics(
        self, q: Any, qdot: Any, tau: Any, ext: Any, wrenches: Any, minv: bool, out: Any = None, /
    ) -> _F: ...
    def inverse_dynamics(
        self, q: Any, qdot: Any, qddot: Any, ext: Any, wrenches: Any, out: Any = None, /
    ) -> _F: ...
    def mass_matrix(self, q: Any, ext: Any, out: Any = None, /) -> _F: ...
