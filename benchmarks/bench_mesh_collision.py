"""Mesh (convex hull) narrow phase: time per pair query, against coal.

For each pair kind, ``m`` random poses of the two shapes with their centres
at random distances around contact (about half the poses penetrate), and

- ``ours``: the compiled mesh kernels (:func:`contactlab.collision.hulls.mesh_pairs`,
  :func:`~contactlab.collision.hulls.mesh_plane`) on all poses in one call,
  i.e. what :func:`contactlab.collision.collide` runs per pair kind: distance,
  normal and the clipped manifold; microseconds per pair;
- ``box-box``: for the cube pair, the primitive box-box kernel on the same
  poses (the reference a mesh cube is measured against);
- ``coal``: coal (the collision library of Pinocchio, ``pip install coal``),
  ``coal.collide`` with contact computation on the same hulls and poses,
  one Python call per pair (coal has no batched call); microseconds per pair,
  Python's call overhead included, as a step would pay it.

Shapes: a cube (8 vertices), two random hulls of 24 and 30 points on
ellipsoids (~0.15 m), and an icosphere hull of 642 vertices (a detailed
mesh); a sphere, capsule and cylinder of ~0.07 m.

Times are the thread's CPU time (``time.thread_time``), so that other
processes on a shared machine do not inflate them.

Run: ``python -m benchmarks.bench_mesh_collision`` (writes
``results/benchmarks/mesh_collision.md``).
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import trimesh

from benchmarks.harness import median_time
from contactlab import se3
from contactlab.collision import boxes, hulls
from contactlab.collision.polytope import hull_set, polytope
from contactlab.collision.shape_table import BOX, CAPSULE, CYLINDER, MESH, SPHERE

OUT = Path("results/benchmarks/mesh_collision.md")


def _points(rng: np.random.Generator, n: int, radii: list[float]) -> np.ndarray:
    p = rng.normal(size=(n, 3))
    return p / np.linalg.norm(p, axis=1)[:, None] * np.asarray(radii)


def _poses(rng: np.random.Generator, m: int, reach: float) -> np.ndarray:
    W = np.zeros((m, 4, 4))
    W[:, :3, :3] = se3.random_rotation(rng, m)
    d = rng.normal(size=(m, 3))
    W[:, :3, 3] = d / np.linalg.norm(d, axis=1)[:, None] * rng.uniform(0.5, 1.1, (m, 1)) * reach
    W[:, 3, 3] = 1.0
    return W


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    m = args.pairs
    cube_pts = trimesh.creation.box(extents=[0.2, 0.2, 0.2]).vertices
    solids = {
        "cube": cube_pts,
        "hull24": _points(rng, 24, [0.15, 0.1, 0.08]),
        "hull30": _points(rng, 30, [0.12, 0.14, 0.1]),
        "hull642": trimesh.creation.icosphere(subdivisions=3, radius=0.12).vertices,
    }
    P = {k: polytope(v) for k, v in solids.items()}
    names = list(P)
    hs = hull_set([P[k] for k in names])
    index = {k: i for i, k in enumerate(names)}
    prim = {
        "box": (BOX, np.array([0.1, 0.1, 0.1])),
        "sphere": (SPHERE, np.array([0.07, 0.0, 0.0])),
        "capsule": (CAPSULE, np.array([0.04, 0.1, 0.0])),
        "cylinder": (CYLINDER, np.array([0.06, 0.09, 0.0])),
    }
    cases = [
        ("box", "cube"),
        ("cube", "cube"),
        ("sphere", "hull24"),
        ("capsule", "hull24"),
        ("box", "hull24"),
        ("cylinder", "hull24"),
        ("hull24", "hull30"),
        ("hull642", "hull642"),
    ]
    try:
        import coal
    except ImportError:
        coal = None
    rows = []
    for a, b in cases:
        Wa, Wb = _poses(rng, m, 0.25), np.tile(np.eye(4), (m, 1, 1))
        if a in prim:
            ka, sa, ha = prim[a][0], np.tile(prim[a][1], (m, 1)), np.full(m, -1)
        else:
            ka, sa, ha = MESH, np.tile(hs.half_extents[index[a]], (m, 1)), np.full(m, index[a])
        sb, hb = np.tile(hs.half_extents[index[b]], (m, 1)), np.full(m, index[b])

        def ours(Wa=Wa, Wb=Wb, ka=ka, sa=sa, ha=ha, sb=sb, hb=hb) -> Any:
            return hulls.mesh_pairs(ka, Wa, sa, ha, MESH, Wb, sb, hb, hs, 1e-3)

        t = median_time(ours, args.repeat, time.thread_time)
        pair = ours()[0]
        row = {
            "pair": f"{a}-{b}",
            "ours_us": 1e6 * t / m,
            "touching": np.unique(pair).size / m,
            "contacts_per_touching_pair": pair.size / max(np.unique(pair).size, 1),
        }
        if (a, b) == ("box", "cube"):
            half = np.full((m, 3), 0.1)

            def box_box(Wa=Wa, Wb=Wb, half=half) -> Any:
                return boxes.box_box(Wa, half, Wb, half, 1e-3)

            row["box_box_us"] = 1e6 * median_time(box_box, args.repeat, time.thread_time) / m
        if coal is not None:
            row["coal_us"] = 1e6 * _coal_time(coal, a, b, Wa, P, prim, hs, index, m) / m
        rows.append(row)
        print(row, flush=True)
    for name in ("cube", "hull642"):
        W = _poses(rng, m, 0.1)
        W[:, 2, 3] = np.abs(W[:, 2, 3])
        h = np.full(m, index[name])
        n = np.tile([0.0, 0.0, 1.0], (m, 1))

        def plane(W=W, h=h, n=n) -> object:
            return hulls.mesh_plane(W, h, hs, n, np.zeros(m), 1e-3)

        rows.append(
            {
                "pair": f"{name}-plane",
                "ours_us": 1e6 * median_time(plane, args.repeat, time.thread_time) / m,
            }
        )
        print(rows[-1], flush=True)
    _write(rows, m)


def _coal_time(coal, a, b, Wa, P, prim, hs, index, m) -> float:  # type: ignore[no-untyped-def]
    def geometry(name: str):  # type: ignore[no-untyped-def]
        if name in prim:
            kind, s = prim[name]
            return {
                BOX: lambda: coal.Box(*(2 * s)),
                SPHERE: lambda: coal.Sphere(s[0]),
                CAPSULE: lambda: coal.Capsule(s[0], 2 * s[1]),
                CYLINDER: lambda: coal.Cylinder(s[0], 2 * s[1]),
            }[kind]()
        V = P[name].vertices - hs.centres[index[name]]
        points = coal.StdVec_Vec3s()
        for x in V:
            points.append(np.array(x, dtype=float))
        return coal.ConvexBase.convexHull(points, False, "")

    ga, gb = geometry(a), geometry(b)
    req, res = coal.CollisionRequest(), coal.CollisionResult()
    req.enable_contact = True
    req.num_max_contacts = 8
    req.security_margin = 1e-3
    tb = coal.Transform3s()
    tfs = [coal.Transform3s(Wa[k, :3, :3], Wa[k, :3, 3]) for k in range(m)]

    def run() -> None:
        for k in range(m):
            res.clear()
            coal.collide(ga, tfs[k], gb, tb, req, res)

    return median_time(run, 3, time.thread_time)


def _write(rows: list[dict[str, object]], m: int) -> None:
    lines = [
        "# Mesh (convex hull) narrow phase: time per pair query",
        "",
        f"`python -m benchmarks.bench_mesh_collision`; {m} random poses per pair kind "
        f"(about half touching), {platform.processor() or platform.machine()}, "
        "thread CPU time, median of repeats.  `ours`: the compiled kernel over all poses in one "
        "call (distance, normal, clipped manifold); `coal`: `coal.collide` with contacts, "
        "one Python call per pair; `box-box`: the primitive box kernel on the same poses.",
        "",
        "| pair | ours [us/pair] | box-box [us/pair] | coal [us/pair] | touching "
        "| contacts per touching pair |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]

    def f(row: dict[str, object], key: str, fmt: str) -> str:
        return format(row[key], fmt) if key in row else ""

    for r in rows:
        lines.append(
            f"| {r['pair']} | {f(r, 'ours_us', '.2f')} | {f(r, 'box_box_us', '.2f')} | "
            f"{f(r, 'coal_us', '.2f')} | {f(r, 'touching', '.2f')} | "
            f"{f(r, 'contacts_per_touching_pair', '.1f')} |"
        )
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
