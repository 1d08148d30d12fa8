"""Run every benchmark in turn (``python -m benchmarks`` or ``make bench``).

``python -m benchmarks NAME ...`` runs only the named ones (``solvers``, ``maximal``,
``reduced``, ``reduced_advance``, ``dynamics``, ``forces``, ``collision``, ``contact``,
``bisp``, ``integrators``, ``robots``). Each writes its tables to ``results/benchmarks/``.
"""

from __future__ import annotations

import importlib
import sys
import time

NAMES = (
    "solvers",
    "forces",
    "maximal",
    "reduced",
    "reduced_advance",
    "dynamics",
    "collision",
    "contact",
    "bisp",
    "integrators",
    "robots",
)


def main(argv: list[str] | None = None) -> int:
    names = list(argv if argv is not None else sys.argv[1:]) or list(NAMES)
    unknown = [n for n in names if n not in NAMES]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {', '.join(NAMES)}", file=sys.stderr)
        return 2
    for name in names:
        start = time.perf_counter()
        print(f"== benchmarks.bench_{name}", flush=True)
        module = importlib.import_module(f"benchmarks.bench_{name}")
        # Each benchmark parses its own options; give it none.
        saved, sys.argv = sys.argv, [f"bench_{name}"]
        try:
            module.main()
        finally:
            sys.argv = saved
        print(f"== bench_{name} done in {time.perf_counter() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
