"""Force-element evaluation time versus number of elements.

Scene: a chain of n free bodies joined by n - 1 zero-rest-length springs and
n - 1 spring-dampers (point to point), plus viscous damping of every body,
for n = 10, 100, 1000, 10000.  For each n the median wall time of

- ``wrench``: :func:`contactlab.forces.total_wrench`,
- ``stiffness``: :func:`contactlab.forces.total_stiffness` (symmetrized, sparse),
- ``damping``: :func:`contactlab.forces.total_damping`,
- ``looped_wrench``: the same wrench summed one element at a time through
  ``Force.wrench`` (what a per-element evaluation costs; n <= 1000 only),

and the scaling exponents (least-squares slope of log time vs log n over
n >= 100).  Two-point elements are evaluated together, vectorized over the
elements of each class, so the vectorized times should grow linearly.

Run: ``python -m benchmarks.bench_forces`` (writes
``results/benchmarks/forces.csv`` and ``forces.md``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks import harness
from benchmarks.harness import markdown_table, median_time
from contactlab import forces, se3
from contactlab.scene import Body, Scene


def spring_chain(n: int) -> Scene:
    bodies = tuple(Body(f"b{i}", 1.0, [0.01, 0.02, 0.02]) for i in range(n))
    elements: list[forces.Force] = []
    for i in range(n - 1):
        a, b = f"b{i}", f"b{i + 1}"
        elements.append(forces.ZeroLengthSpring(a, [0.05, 0, 0], b, [-0.05, 0, 0], 100.0))
        elements.append(forces.SpringDamper(a, [0, 0.01, 0], b, [0, -0.01, 0], 10.0, 0.1, 0.1))
    elements.append(forces.BodyDamping(angular=0.01, linear=0.1))
    return Scene(f"spring-chain-{n}", bodies, forces=tuple(elements))


def measure(n: int, repeat: int, rng: np.random.Generator) -> dict[str, float]:
    scene = spring_chain(n)
    R = se3.random_rotation(rng, n)
    E = se3.make_transform(R, np.c_[0.1 * np.arange(n), np.zeros((n, 2))])
    phi = rng.standard_normal((n, 6))
    row = {
        "n_bodies": n,
        "n_elements": len(scene.forces),
        "wrench_s": median_time(lambda: forces.total_wrench(scene, E, phi), repeat),
        "stiffness_s": median_time(lambda: forces.total_stiffness(scene, E, phi), repeat),
        "damping_s": median_time(lambda: forces.total_damping(scene, E, phi), repeat),
    }
    if n <= 1000:
        row["looped_wrench_s"] = median_time(
            lambda: sum(f.wrench(scene, E, phi) for f in scene.forces), max(1, repeat // 5)
        )
    return row


def run(sizes: list[int], repeat: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([measure(n, repeat, rng) for n in sizes])


def main() -> None:
    parser = harness.parser(__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    df = run(args.sizes, args.repeat)
    big = df[df.n_bodies >= 100]
    lines = [
        "# Force elements: evaluation time vs number of bodies",
        "",
        harness.machine(),
        "",
        "Spring chain: n bodies, 2(n-1) two-point springs, body damping on all bodies.",
        "",
        markdown_table(df),
        "",
        "Scaling exponents (n >= 100): "
        + harness.exponents_text(big.n_bodies, big, ("wrench_s", "stiffness_s", "damping_s")),
    ]
    harness.write(args.out, "forces", df, lines)


if __name__ == "__main__":
    main()
