"""The reduced formulation's compiled exact-cone step (:mod:`contactlab.reduced.cone_step`).

Facts: it is the same step as the general reduced path (the formulation's problem posed as
the same local frictional-contact problem, ``W = C M^-1 C^T`` with the same rows in the
same order, the same warm start, solved by the same backend kernel with the same stopping
test and caps), so on the robot scenes the two trajectories agree to 1e-10 (q and qdot)
when both solve every step tightly (each solution is then exact to its tolerance; what is
left is the rounding of two summation orders of ``W`` and ``q`` carried through the run),
for Coulomb's law and for Anitescu--Hart's cone problem, by ``nsgs`` and by ``apgd``; a
step it declines is the general path's step; it is taken exactly for the set-ups in its
scope.
"""

from __future__ import annotations

from typing import Any

import pytest

from contactlab.reduced import cone_step
from contactlab.reduced.compiled_step import CompiledContactStep
from contactlab.reduced.cone_step import ConeContactStep
from contactlab.simulator import Simulator

try:
    from reduced_routes import AGREE, declining_run, diff, robots, side_by_side, small_tree
except ImportError:  # tests/contactlab imported as a package
    from .reduced_routes import AGREE, declining_run, diff, robots, side_by_side, small_tree

pytest.importorskip("numba")


def _opts(model: str, tol: float, **extra: Any) -> dict[str, Any]:
    opts: dict[str, Any] = {"solver_tol": tol, **extra}
    if model == "anitescu-hart":
        opts["cone"] = "soc"
    return opts


def _pair(scene: Any, model: str, solver: str, opts: dict[str, Any]) -> tuple[Simulator, Simulator]:
    args: dict[str, Any] = {"formulation": "reduced", "model": model, "solver": solver}
    fast = Simulator(scene, model_options=opts, **args)
    general = Simulator(scene, model_options=opts, formulation_options={"compiled": False}, **args)
    return fast, general


# the tolerances: 1e-13 by nsgs (at 1e-12 one route may stop a residual check before the
# other on a landing step: Coulomb's law 2.2e-10 rad/s apart over the run, the cone problem
# 5e-11 with SkylakeX's BLAS and 1.2e-10 with Prescott's, measured)
CASES = [
    ("coulomb", "nsgs", 1e-13),
    ("anitescu-hart", "nsgs", 1e-13),
    ("coulomb", "apgd", 1e-12),
]


@robots
@pytest.mark.parametrize(("model", "solver", "tol"), CASES)
def test_solo12_trajectories_equal_the_general_path(model: str, solver: str, tol: float) -> None:
    """solo12 standing: the runs agree to 1e-10 step by step, and so does each step taken
    from the compiled run's state by both routes."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("solo12-stand").build()
    fast, general = _pair(scene, model, solver, _opts(model, tol))
    assert type(fast.compiled) is ConeContactStep and general.compiled is None
    a, b = fast.initial_state(), general.initial_state()
    worst = worst_step = 0.0
    most = 0
    for i in range(40):
        a_next, ra = fast.step(a, i)
        b_next, rb = general.step(b, i)
        one, _ = general.step(a, i)  # the general route's step from the same state
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        assert ra.metrics["status"] == "optimal"
        most = max(most, ra.metrics["n_contacts"])
        worst = max(worst, diff(a_next, b_next))
        worst_step = max(worst_step, diff(a_next, one))
        a, b = a_next, b_next
    assert most > 0
    assert worst <= AGREE
    assert worst_step <= AGREE


@robots
def test_humanoid_steps_equal_the_general_path() -> None:
    """The humanoid toppling (feet on the ground, then its links on each other): from every
    tenth state of the compiled run, the general route's step is the compiled step to
    1e-10 (Anitescu--Hart's cone problem to 1e-12: 1.2e-13 apart at most, measured).
    Coulomb's law on this fall is not solved to 1e-12 within nsgs's 10,000 sweeps on
    either route (both stop at the cap, 4e-13 apart, measured), so it is not compared."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("humanoid-topple").build()
    fast, general = _pair(scene, "anitescu-hart", "nsgs", _opts("anitescu-hart", 1e-12))
    assert type(fast.compiled) is ConeContactStep
    state = fast.initial_state()
    compared = 0
    worst = 0.0
    for i in range(STEPS_HUMANOID):
        a, ra = fast.step(state, i)
        if i % 10 == 0 and ra.metrics["n_contacts"] > 0:
            b, rb = general.step(state, i)
            if ra.metrics["status"] == rb.metrics["status"] == "optimal":
                worst = max(worst, diff(a, b))
                compared += 1
        state = a
    assert compared >= 5
    assert worst <= AGREE


#: steps of the humanoid's fall compared every tenth step
STEPS_HUMANOID = 240


@pytest.mark.parametrize(
    ("model", "solver", "tol"), [("coulomb", "nsgs", 1e-12), ("anitescu-hart", "admm", 1e-13)]
)
def test_small_tree_run_equals_the_general_path(model: str, solver: str, tol: float) -> None:
    """A box on a free joint with a sphere on a sprung hinge lands tilted and slides: the
    two runs agree to 1e-10 (also ADMM's default penalty, from ``W``'s mean diagonal; ADMM
    to 1e-13: at 1e-12 the runs are 1.2e-10 apart, measured)."""
    fast, general = _pair(small_tree(), model, solver, _opts(model, tol))
    assert type(fast.compiled) is ConeContactStep
    worst, contacts = side_by_side(fast, general, 150)
    assert contacts > 50
    assert worst <= AGREE


def test_declined_steps_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step the kernel declines (its status ``DECOUPLED``) is the general path's step:
    the run equals the general run to rounding."""
    fast, general = _pair(small_tree(), "coulomb", "nsgs", _opts("coulomb", 1e-12))
    calls, worst = declining_run(
        monkeypatch, cone_step.K, "cone_full_step", cone_step.K.DECOUPLED, fast, general
    )
    assert calls == 60
    assert worst <= AGREE


def test_scope() -> None:
    """Taken for coulomb and anitescu-hart with the exact cone by nsgs, apgd or admm (their
    own settings only); box friction keeps the box-friction step; the pyramid, ``ipm``,
    unknown settings, torsion and the general layers keep the general path."""
    scene = small_tree()

    def compiled(model: str, solver: str, **opts: Any) -> Any:
        sim = Simulator(scene, "reduced", model, solver, model_options=opts)
        return type(sim.compiled)

    assert compiled("coulomb", "nsgs") is ConeContactStep
    assert compiled("coulomb", "nsgs", solver_settings={"direct": True}) is ConeContactStep
    assert compiled("anitescu-hart", "apgd", cone="soc") is ConeContactStep
    assert compiled("coulomb", "admm", solver_settings={"rho": 0.5}) is ConeContactStep
    assert compiled("box-friction", "pgs") is CompiledContactStep
    assert compiled("anitescu-hart", "nsgs", cone="pyramid") is type(None)
    assert compiled("coulomb", "ipm") is type(None)
    assert compiled("coulomb", "nsgs", solver_settings={"omega": 1.2}) is type(None)
    assert compiled("coulomb", "nsgs", torsion=0.01) is type(None)
    general = Simulator(
        scene, "reduced", "coulomb", "nsgs", formulation_options={"compiled": False}
    )
    assert general.compiled is None
