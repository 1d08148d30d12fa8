"""The ``lemke`` section of ``benchmarks/bench_contact_speed.py``: the compiled
Stewart--Trinkle step by Lemke (:mod:`contactlab.maximal.lemke_step`) against the general
layers' step of the same pair and MuJoCo, on the same poses.

``box-pile`` of ``sizes`` cubes (default 20 and 50), h = 5 ms, k = 4 pyramid directions:
from the drop (t = 0, ``drop_steps`` steps: the fall and the landing) and at rest (layout
``stacked``, ``rest_steps`` steps).  Per size and phase: the steps with contacts, their
median contacts and LCP size, pivots, the compiled step's thread CPU time per step and
per contact, the steps that did not end ``optimal``, and, on every ``every``-th pose with
contacts, in the same process, the general route's step (``compiled=False``: sparse
assembly, the model's LCP, the backend's tableau with BLAS rank-one updates and LAPACK
re-solves) and MuJoCo's (Newton, elliptic cones; :func:`bench_friction.mujoco_step`),
thread CPU time.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from benchmarks import harness

#: the heading of the section (after "## ")
LEMKE_HEAD = "Stewart–Trinkle / `lemke` (the compiled maximal step)"


def _phase(n: int, layout: str, steps: int, every: int) -> list[dict[str, Any]]:
    """Step ``box-pile`` by the compiled Lemke step; per step with contacts its CPU time,
    contacts, LCP size, pivots and status, and the general route's and MuJoCo's CPU time
    on every ``every``-th such pose."""
    from benchmarks.bench_friction import mujoco_sample
    from contactlab.maximal.lemke_step import LemkeContactStep
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    scene = get_scenario("box-pile").build(n=n, layout=layout)
    fast = Simulator(scene, "maximal", "stewart-trinkle", "lemke")
    assert isinstance(fast.compiled, LemkeContactStep), "the compiled Lemke step"
    general = Simulator(
        scene, "maximal", "stewart-trinkle", "lemke", formulation_options={"compiled": False}
    )
    state = fast.initial_state()
    rows: list[dict[str, Any]] = []
    seen = 0
    for i in range(steps):
        before = state
        t0 = time.thread_time()
        state, record = fast.step(state, i)
        cpu = time.thread_time() - t0
        m = record.metrics
        if m["n_contacts"] == 0:
            continue
        row = {
            "cpu": cpu, "contacts": m["n_contacts"], "pivots": m["iterations"],
            "size": fast.compiled.last_times["size"], "status": m["status"],
        }  # fmt: skip
        if seen % every == 0:
            t0 = time.thread_time()
            general.step(before, i)
            row["general"] = time.thread_time() - t0
            mujoco_sample(scene, before, row)
        seen += 1
        rows.append(row)
    return rows


def lemke_section(sizes: list[int], drop_steps: int, rest_steps: int, every: int) -> str:
    """The section's text (module docstring)."""
    load0 = harness.load_average()
    lines = [
        f"## {LEMKE_HEAD}: box-pile from the drop ({drop_steps} steps from t = 0) and at "
        f"rest (layout `stacked`, {rest_steps} steps), h = 5 ms, k = 4",
        "",
        "Thread CPU time per step with contacts of the compiled step (collision, the LCP "
        "formed from the contact rows, Lemke's method, integration); the general layers' "
        "step of the same pair (`compiled=False`) and MuJoCo's step (Newton, elliptic cones) "
        f"on every {every}-th of those poses, in the same process.",
        "",
        "| boxes | phase | steps | not optimal | contacts | LCP size | pivots | ms / step "
        "| µs / contact | general ms / step | general / compiled | MuJoCo ms / step "
        "| compiled / MuJoCo |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: |",
    ]
    for n in sizes:
        for phase, layout, steps in harness.pile_phases(drop_steps, rest_steps):
            rows = _phase(n, layout, steps, every)
            if not rows:
                continue
            ms = np.array([1e3 * r["cpu"] for r in rows])
            us = np.array([1e6 * r["cpu"] / r["contacts"] for r in rows])
            paired = [r for r in rows if "general" in r]
            # the ratios on the poses both were timed on
            gen = float(np.median([1e3 * r["general"] for r in paired]))
            speedup = float(np.median([r["general"] / r["cpu"] for r in paired]))
            mj = [r for r in paired if "mujoco" in r]
            mj_ms = float(np.median([1e3 * r["mujoco"] for r in mj])) if mj else float("nan")
            vs_mj = float(np.median([r["cpu"] / r["mujoco"] for r in mj])) if mj else float("nan")
            lines.append(
                f"| {n} | {phase} | {len(rows)} "
                f"| {sum(r['status'] != 'optimal' for r in rows)} "
                f"| {np.median([r['contacts'] for r in rows]):.0f} "
                f"| {np.median([r['size'] for r in rows]):.0f} "
                f"| {np.median([r['pivots'] for r in rows]):.0f} "
                f"| {np.median(ms):.2f} | {np.median(us):.1f} | {gen:.2f} | {speedup:.1f} "
                f"| {mj_ms:.3f} | {vs_mj:.0f} |"
            )
    lines += ["", harness.load_span(load0)]
    return "\n".join(lines) + "\n"


__all__ = ["LEMKE_HEAD", "lemke_section"]
