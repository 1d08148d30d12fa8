"""Read and write FCLIB HDF5 files (local and global 3-D frictional-contact problems).

FCLIB's layout (one problem per file):

- ``/fclib_local``: ``W`` (a matrix group), ``vectors/q``, ``vectors/mu``,
  ``spacedim`` (3), ``info/{title, description, math_info}``;
- ``/fclib_global``: ``M``, ``H`` and optionally ``G``, ``vectors/{f, w, mu}``
  and optionally ``vectors/b``, ``spacedim``, ``info``; the problem is
  ``M v = H r + G y + f``, ``u = H' v + w``, ``G' v + b = 0`` (so FCLIB's
  ``G`` is ``(n, mb)``, the transpose of
  :class:`~solvers.frictional.GlobalFrictionalContact`'s ``G``);
- optional ``/solution/{r, u, v}`` and ``/guesses/{k}/{r, u, v}``.

A matrix group holds ``m``, ``n``, ``nzmax``, ``nz``, ``p``, ``i``, ``x``
(CSparse's convention): ``nz = -1`` compressed columns (``p`` column
pointers, ``i`` row indices), ``nz = -2`` compressed rows (``p`` row pointers,
``i`` column indices), ``nz >= 0`` triplets (``p`` column, ``i`` row indices).
Files written here use compressed rows and also record the law and cone as
attributes of the problem group (``contactlab_law``, ``contactlab_cone``,
``contactlab_directions``); files without them are FCLIB's Coulomb law with
the exact cone.  Any defect (a file that is not HDF5 or not FCLIB, 2-D
problems, negative ``mu``, NaN, inconsistent sizes) raises one
:class:`FCLIBError` naming the file and the field.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.errors import ProblemError
from solvers.frictional import FrictionalContact, GlobalFrictionalContact

Vec = NDArray[np.float64]


class FCLIBError(ProblemError):
    """A file is not a readable FCLIB problem (the message names the file and the field)."""


#: Largest number of entries of one matrix or vector read from a file (8e8 bytes of
#: float64): a file claiming more (a 1e12-row W) is refused before anything is allocated.
MAX_ENTRIES = 100_000_000


def _dataset_size(where: str, dataset: Any) -> int:
    """Entries of an HDF5 dataset (from its header), refused beyond :data:`MAX_ENTRIES`."""
    size = int(np.prod(getattr(dataset, "shape", ()) or (1,), dtype=np.float64))
    if size > MAX_ENTRIES:
        raise FCLIBError(
            where, f"claims {size:.3g} entries, more than the limit of {MAX_ENTRIES:,}; refused"
        )
    return size


@dataclass
class FCLIBFile:
    """What an FCLIB file holds: the problem, its info strings and an optional solution."""

    problem: FrictionalContact | GlobalFrictionalContact
    title: str = ""
    description: str = ""
    math_info: str = ""
    solution: dict[str, Vec] | None = None


def _h5py() -> Any:
    try:
        import h5py
    except ImportError as err:  # pragma: no cover - h5py is a core dependency
        raise FCLIBError("h5py", "is not installed (pip install h5py)") from err
    return h5py


def _read_matrix(path: Path, group: Any, name: str) -> sp.csr_matrix:
    if name not in group:
        raise FCLIBError(f"{path}: {group.name}/{name}", "is missing (not an FCLIB problem)")
    g = group[name]
    where = f"{path}: {g.name}"
    try:
        m, n, nz = (int(np.asarray(g[k]).reshape(-1)[0]) for k in ("m", "n", "nz"))
        if m < 0 or n < 0:
            raise FCLIBError(where, f"has negative dimensions m = {m}, n = {n}")
        if max(m, n) > MAX_ENTRIES:
            raise FCLIBError(
                where,
                f"claims a {m} x {n} matrix, beyond the limit of {MAX_ENTRIES:,} rows or "
                "columns; refused",
            )
        for key in ("p", "i", "x"):
            _dataset_size(f"{where}/{key}", g[key])
        p = np.asarray(g["p"], dtype=np.int64)
        i = np.asarray(g["i"], dtype=np.int64)
        x = np.asarray(g["x"], dtype=np.float64)
    except FCLIBError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, OverflowError) as err:
        raise FCLIBError(where, f"is not an FCLIB matrix (needs m, n, nz, p, i, x): {err}") from err
    if not np.all(np.isfinite(x)):
        raise FCLIBError(where, "contains NaN or infinite entries")
    try:
        if nz == -2:
            nnz = int(p[-1])
            mat = sp.csr_matrix((x[:nnz], i[:nnz], p), shape=(m, n))
        elif nz == -1:
            nnz = int(p[-1])
            mat = sp.csc_matrix((x[:nnz], i[:nnz], p), shape=(m, n)).tocsr()
        elif nz >= 0:
            mat = sp.csr_matrix((x[:nz], (i[:nz], p[:nz])), shape=(m, n))
        else:
            raise FCLIBError(where, f"has nz = {nz}; expected -2 (CSR), -1 (CSC) or >= 0 (triplet)")
        mat.check_format(full_check=True)
    except (ValueError, IndexError) as err:
        raise FCLIBError(where, f"has inconsistent sizes: {err}") from err
    return mat


def _read_vector(path: Path, group: Any, name: str, size: int | None = None) -> Vec:
    key = f"vectors/{name}"
    if key not in group:
        raise FCLIBError(f"{path}: {group.name}/{key}", "is missing (not an FCLIB problem)")
    _dataset_size(f"{path}: {group.name}/{key}", group[key])
    v = np.asarray(group[key], dtype=np.float64).reshape(-1)
    if size is not None and v.shape[0] != size:
        raise FCLIBError(
            f"{path}: {group.name}/{key}", f"has {v.shape[0]} entries, expected {size}"
        )
    return v


def _text(group: Any, name: str) -> str:
    key = f"info/{name}"
    if key not in group:
        return ""
    raw = group[key][()]
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _law(group: Any) -> dict[str, Any]:
    attrs = group.attrs
    return {
        "law": str(attrs.get("contactlab_law", "coulomb")),
        "cone": str(attrs.get("contactlab_cone", "soc")),
        "directions": int(attrs.get("contactlab_directions", 4)),
    }


def read(path: str | Path) -> FCLIBFile:
    """Read an FCLIB file (local or global problem, optional solution)."""
    h5py = _h5py()
    path = Path(path)
    try:
        handle = h5py.File(path, "r")
    except OSError as err:
        raise FCLIBError(str(path), f"is not a readable HDF5 file ({err})") from err
    with handle as f:
        if "fclib_local" in f:
            g, kind = f["fclib_local"], "local"
        elif "fclib_global" in f:
            g, kind = f["fclib_global"], "global"
        else:
            raise FCLIBError(
                str(path), "is not an FCLIB file: it has neither /fclib_local nor /fclib_global"
            )
        if "spacedim" in g and int(np.asarray(g["spacedim"]).reshape(-1)[0]) != 3:
            raise FCLIBError(f"{path}: spacedim", "only 3-D frictional contact is supported")
        try:
            if kind == "local":
                W = _read_matrix(path, g, "W")
                q = _read_vector(path, g, "q", W.shape[0])
                mu = _read_vector(path, g, "mu")
                problem: FrictionalContact | GlobalFrictionalContact = FrictionalContact(
                    W, q, mu, **_law(g)
                )
            else:
                M = _read_matrix(path, g, "M")
                H = _read_matrix(path, g, "H")
                f_vec = _read_vector(path, g, "f", M.shape[0])
                w = _read_vector(path, g, "w", H.shape[1])
                mu = _read_vector(path, g, "mu")
                G = b = None
                if "G" in g:
                    G = _read_matrix(path, g, "G").T.tocsr()
                    b = _read_vector(path, g, "b", G.shape[0])
                problem = GlobalFrictionalContact(M, H, f_vec, w, mu, G, b, **_law(g))
        except FCLIBError:
            raise
        except ProblemError as err:
            raise FCLIBError(f"{path}: {err.field}", str(err).split(": ", 1)[-1]) from err
        solution = None
        if "solution" in f:
            solution = {k: np.asarray(v, dtype=np.float64) for k, v in f["solution"].items()}
        return FCLIBFile(
            problem, _text(g, "title"), _text(g, "description"), _text(g, "math_info"), solution
        )


def _write_matrix(group: Any, name: str, mat: sp.spmatrix) -> None:
    csr = sp.csr_matrix(mat)
    csr.sort_indices()
    g = group.create_group(name)
    g["m"] = np.array([csr.shape[0]], dtype=np.int32)
    g["n"] = np.array([csr.shape[1]], dtype=np.int32)
    g["nzmax"] = np.array([csr.nnz], dtype=np.int32)
    g["nz"] = np.array([-2], dtype=np.int32)
    g["p"] = csr.indptr.astype(np.int32)
    g["i"] = csr.indices.astype(np.int32)
    g["x"] = csr.data.astype(np.float64)


def write(
    path: str | Path,
    problem: FrictionalContact | GlobalFrictionalContact,
    *,
    title: str = "",
    description: str = "",
    math_info: str = "",
    solution: dict[str, Vec] | None = None,
) -> None:
    """Write ``problem`` (and an optional solution ``{"r", "u", "v"}``) as an FCLIB file."""
    h5py = _h5py()
    if isinstance(problem, FrictionalContact) and problem.is_wide:
        raise FCLIBError(
            "problem",
            "FCLIB's format has three rows per contact; a problem with torsional or rolling "
            "rows (WideFrictionalContact) cannot be written",
        )
    if isinstance(problem, FrictionalContact) and problem.row_lo.size:
        raise FCLIBError(
            "problem",
            "FCLIB's local form has no scalar (bilateral/unilateral) rows; "
            "write the global form with G and b instead",
        )
    target = Path(path)
    if target.is_dir():
        raise FCLIBError(str(target), "is a folder; name a file to write")
    # written beside the target and renamed: a failure (a full disk) leaves no half file
    tmp = target.parent / f".{target.stem}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}{target.suffix}"
    try:
        _write_file(h5py, tmp, problem, title, description, math_info, solution)
        os.replace(tmp, target)
    except OSError as err:
        reason = " ".join((getattr(err, "strerror", None) or str(err)).split())
        raise FCLIBError(
            str(target), f"could not be written ({reason}); nothing was written there"
        ) from err
    finally:
        if tmp.exists():
            tmp.unlink()


def _write_file(
    h5py: Any,
    path: Path,
    problem: FrictionalContact | GlobalFrictionalContact,
    title: str,
    description: str,
    math_info: str,
    solution: dict[str, Vec] | None,
) -> None:
    with h5py.File(path, "w") as f:
        if isinstance(problem, FrictionalContact):
            g = f.create_group("fclib_local")
            _write_matrix(g, "W", problem.W)
            vec = g.create_group("vectors")
            vec["q"] = problem.q
            vec["mu"] = problem.mu
        else:
            g = f.create_group("fclib_global")
            _write_matrix(g, "M", problem.M)
            _write_matrix(g, "H", problem.H)
            vec = g.create_group("vectors")
            vec["f"] = problem.f
            vec["w"] = problem.w
            vec["mu"] = problem.mu
            if problem.G.shape[0]:
                _write_matrix(g, "G", problem.G.T)
                vec["b"] = problem.b
        g["spacedim"] = np.array([3], dtype=np.int32)
        info = g.create_group("info")
        info["title"] = np.bytes_(title)
        info["description"] = np.bytes_(description)
        info["math_info"] = np.bytes_(math_info)
        g.attrs["contactlab_law"] = problem.law
        g.attrs["contactlab_cone"] = problem.cone
        g.attrs["contactlab_directions"] = problem.directions
        if solution:
            s = f.create_group("solution")
            for key, value in solution.items():
                s[key] = np.asarray(value, dtype=np.float64)
