"""A user's default run is the benchmark's: piles landing from the drop by ``ipm``.

``contactlab run box-pile --set n=200 --model anitescu-hart --solver ipm --model-option
cone=soc`` used to stop at step 129 with the default tolerance (1e-8 then; the iterate
stalled on the cone boundary at 1.2e-6), while the benchmark, asking for 1e-6, converged
on every step.  With the defaults now the benchmark's (``ipm``: 1e-6, its budgets), a
50-box pile dropped in four layers (the top one from about 0.8 m) is stepped through
its landing transient, 0.65 s at h = 5 ms (130 steps: every layer has hit the one below
by 0.4 s; the 200-box run had failed at step 129), by each friction model the benchmark
runs with ``ipm``, with default options: the run ends ``ok`` and every step's every inner
solve is ``optimal`` with a natural map, by the layer's own measure, within the default
tolerance.
"""

from __future__ import annotations

from typing import Any

import pytest

from contactlab.models import make_model
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

pytest.importorskip("numba")

DURATION = 0.65


@pytest.mark.parametrize(
    "model, options",
    [("anitescu-hart", {"cone": "soc"}), ("coulomb", {}), ("box-friction", {})],
    ids=["anitescu-hart-soc", "coulomb", "box-friction"],
)
def test_fifty_box_drop_completes_with_default_options(model: str, options: dict) -> None:
    tol = make_model(model, "ipm", **options).tol
    assert tol == 1e-6  # the benchmark's request (benchmarks/bench_friction.py)
    scene = get_scenario("box-pile").build(n=50)
    sim = Simulator(scene, "maximal", model, "ipm", dt=0.005, model_options=options)
    worst: list[float] = []
    failed: list[tuple[int, str]] = []

    def check(state: Any, record: Any) -> None:
        for res in record.solution.results:
            if res.status != "optimal":
                failed.append((len(worst), res.message))
            worst.append(res.residuals["natural_map"])

    run = sim.run(duration=DURATION, callback=check)
    assert run.status == "ok", run.message
    assert len(run.steps) == round(DURATION / 0.005)
    assert not failed, failed[:3]
    assert worst and max(worst) <= tol
