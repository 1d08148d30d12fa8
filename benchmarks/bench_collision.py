"""Collision detection and contact-row assembly time versus number of contacts.

Scene: the ``box-pile`` scenario with n cubes (side 0.1 m), n = 10, 100,
500, 1000, 2000, placed as a *packed pile* so that it has the contacts of a
settled one: columns of 4 layers on a square grid, horizontal spacing
1.02 x the side (2 mm gaps, inside the 5 mm margin, so neighbours touch
side to side), layers 0.5 mm into each other, every cube tilted by up to 2
degrees and shifted by up to 0.5 mm at random.  (The scenario's own initial
state drops the cubes from apart and has no contact at all.)

For each n the median wall time of

- ``collision``: :func:`contactlab.collision.collide` (broad + narrow phase);
- ``grid``: the broad phase alone (uniform hash grid, what ``collide``
  uses), ``sweep_prune`` the sweep-and-prune alternative, and ``all_pairs``
  the brute-force AABB test of all n^2/2 pairs they replace;
- ``assembly``: :func:`contactlab.contact.contact_rows` (sparse N, c, T, mu);
- ``step`` (n <= ``--step-max``, default 10): one whole simulator step (collision, assembly,
  box-friction model, PGS at its default tolerance) from the packed pile at
  rest,

the number of contacts and candidate pairs, and the scaling exponents (slope
of log time vs log number of contacts over n >= 100).

Run: ``python -m benchmarks.bench_collision`` (writes
``results/benchmarks/collision.csv`` and ``collision.md``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks import harness
from benchmarks.harness import markdown_table, median_time
from contactlab import se3
from contactlab.collision import Collider, brute_force_pairs, grid_pairs, sweep_and_prune
from contactlab.contact import contact_rows
from contactlab.scenario import get_scenario
from contactlab.scene import Scene, State

SIZE = 0.1


def packed_pile(n: int, rng: np.random.Generator) -> tuple[Scene, np.ndarray]:
    """The box-pile scene with n cubes and a packed, settled-like configuration."""
    scene = get_scenario("box-pile").build(n=n, size=SIZE)
    side = max(1, int(np.ceil(np.sqrt(n / 4.0))))
    k = np.arange(n)
    ix, iy, iz = k % side, (k // side) % side, k // (side * side)
    pitch, layer = 1.02 * SIZE, SIZE - 0.0005
    centre = np.stack(
        [
            (ix - 0.5 * (side - 1)) * pitch,
            (iy - 0.5 * (side - 1)) * pitch,
            0.5 * SIZE - 0.0005 + iz * layer,
        ],
        axis=1,
    ) + rng.uniform(-0.0005, 0.0005, (n, 3))
    tilt = rng.normal(size=(n, 3))
    tilt *= (
        np.radians(2.0) * rng.uniform(0, 1, (n, 1)) / np.linalg.norm(tilt, axis=1, keepdims=True)
    )
    return scene, se3.make_transform(se3.exp_so3(tilt), centre)


def step_time(scene: Scene, E: np.ndarray, repeat: int) -> float:
    from contactlab.simulator import Simulator

    sim = Simulator(scene, model="box-friction", solver="pgs")
    state = State(0.0, E, np.zeros((scene.n_bodies, 6)))
    return median_time(lambda: sim.step(state, 0), repeat)


def measure(n: int, repeat: int, rng: np.random.Generator, with_step: bool) -> dict[str, object]:
    scene, E = packed_pile(n, rng)
    col = Collider(scene)
    contacts = col(E)
    W = col.table.world_poses(E)
    lo, hi = col.table.aabbs(W, col.margin)
    h = scene.dt
    row: dict[str, object] = {
        "n_boxes": n,
        "n_contacts": len(contacts),
        "candidate_pairs": int(col.candidate_pairs(W)[0].size),
        "all_pairs": n * (n - 1) // 2,
        "collision_s": median_time(lambda: col(E), repeat),
        "grid_s": median_time(lambda: grid_pairs(lo, hi), repeat),
        "sweep_prune_s": median_time(lambda: sweep_and_prune(lo, hi), repeat),
        "all_pairs_s": median_time(lambda: brute_force_pairs(lo, hi), max(1, repeat // 4)),
        "assembly_s": median_time(lambda: contact_rows(contacts, E, n, h, scene.contact), repeat),
    }
    if with_step:
        try:
            row["step_s"] = step_time(scene, E, max(1, repeat // 4))
        except Exception as err:  # report, do not hide, a failing step
            row["step_s"] = float("nan")
            row["step_error"] = f"{type(err).__name__}: {err}"[:200]
    return row


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500, 1000, 2000])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--step-max", type=int, default=10, help="largest n for the whole-step timing"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    df = pd.DataFrame([measure(n, args.repeat, rng, n <= args.step_max) for n in args.sizes])
    big = df[df.n_boxes >= 100]
    lines = [
        "# Collision and contact-row assembly: time vs number of contacts",
        "",
        f"{harness.machine()}; median of {args.repeat} runs.",
        "",
        "Packed box pile (cubes of 0.1 m in columns of 4 layers, 2 mm side gaps, "
        "0.5 mm layer overlap, up to 2 deg tilt); see benchmarks/bench_collision.py. "
        "`step_s`: one simulator step (collision, assembly, box-friction LCP by PGS).",
        "",
        markdown_table(df),
        "",
        "Scaling exponents vs number of contacts (n >= 100): "
        + harness.exponents_text(
            big.n_contacts, big, ("collision_s", "grid_s", "sweep_prune_s", "assembly_s")
        ),
    ]
    harness.write(args.out, "collision", df, lines)


if __name__ == "__main__":
    main()
