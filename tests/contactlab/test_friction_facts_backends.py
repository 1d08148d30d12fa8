"""Every backend that fits a model returns the same step velocities on a real step problem.

The step problem comes from the simulator: a stack of three cubes (12 or more
face-corner contacts, redundant in fours, so the impulses are not unique)
whose top cube is launched sideways at 1 m/s, 30 deg off the pyramid's
axes, so the top interface slides while the bottom ones stick.  The
velocities of a model's step are unique (strictly convex in the velocities:
``M`` is positive definite) even where the impulses are not, so the test
compares velocities, not impulses.

Tolerance per backend: ten times its declared accuracy
(``solvers.get_backend(name).tolerance.accuracy``: 1e-9 Lemke, 1e-6 PGS and the
active-set / proximal QP solvers, 1e-5 OSQP and Clarabel, 1e-4 ECOS and SCS)
in [m/s], the velocities being of order 1 m/s.  The reference answer is exact or
asked for far more than any backend gives: on ``box-friction`` the stepping PGS's
answer at its 1e-6 lies 7.3e-6 m/s (box) and 6.4e-6 m/s (disc) from the step's
solution, on which all the other backends agree, so the box LCP's reference is
Lemke's (pivoting, exact to rounding: 2e-11 m/s from the interior point asked for
1e-12) and the disc's the interior point asked for 1e-10 (5e-10 m/s from it at
1e-12).  Measured spreads: below 5e-7 m/s for all backends (ECOS the loosest),
except PGS on ``box-friction`` (above).

Staggered Projections' plain alternation converges linearly on this problem
(the friction impulse changes by a factor of about 0.9 per outer iteration):
from a cold start it needs 93 outer iterations to meet its 1e-6 stopping
test, near its default cap of 100; with its default Anderson acceleration
it needs 6-8 (tests/contactlab/models/test_staggered_convergence.py).  As in
a run, each model starts from the cache of the previous step (Staggered
Projections' friction warm start, Sueda's notes §2.11), and the cap is raised to
300 so that every backend is compared at the converged fixed point.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

import solvers
from contactlab.errors import IncompatibleError
from contactlab.memory import ModelMemory
from contactlab.models import make_model
from contactlab.problem import StepProblem
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

#: pairs whose backend fails on this problem, with what it reports
# HiGHS (qpsolvers) found no solution on the third bounded QP of the box-friction fixed
# point when warm-started from the impulses of PGS sweeping the rows as assembled; from
# those of PGS sweeping contacts bottom-up (box friction's default row order) it solves
# the step and agrees with PGS (2e-7 m/s).
KNOWN_FAILURES: dict[tuple[str, str], str] = {}

#: (model, cone, backend) that stop at their iteration cap here, with the measured figure:
#: reported as max_iterations, never as a wrong answer
CAPPED: dict[tuple[str, Any, str], str] = {
    # Gauss-Seidel on the stack's redundant corner contacts: natural map 5.1e-7 after
    # 10,000 sweeps, short of the 1e-8 asked for
    ("box-friction", "disc", "nsgs"): "5.1e-7 after 10,000 sweeps",
    # proximal ADMM on the same corners: natural map 1.1e-7 when 500 iterations bring no
    # 10 % gain (stalled, reported as such), short of the 1e-8 asked for
    ("box-friction", "disc", "padmm"): "stalled at 1.1e-7 after 709 iterations",
}

#: pairs that need other model options to be solved accurately, with why
# ECOS (through cvxpy) reports 'optimal' on the dual pyramid friction QP of Staggered
# Projections, whose cost is the Delassus matrix of redundant directions (singular to
# rounding), with friction impulses off by up to 3e-2 m/s in the velocities they cause
# (measured at the converged fixed point: 0.032 m/s; Clarabel, OSQP 2e-11 m/s); iterated to
# its own fixed point it lands 1.7e-2 m/s from every other backend.  The primal friction QP
# (velocities, SPD mass-matrix cost; form="primal") it solves to 2e-6 m/s.
OPTIONS_FOR: dict[tuple[str, str], dict[str, Any]] = {
    ("staggered-projections", "cvxpy:ecos"): {"form": "primal"},
    # the frictional-contact backends' tolerance is the natural map relative to ||q||
    # (Siconos's convention), ||q|| ~ 10 m/s here: ask for 1e-8 to compare at 1e-5 m/s
    **{
        (model, name): {"solver_tol": 1e-8}
        for model in ("anitescu-hart", "box-friction", "coulomb")
        for name in ("nsgs", "apgd", "admm", "ipm", "padmm")
    },
}

#: (model, cone, backend) whose third-party solver breaks down with some BLAS kernel sets
#: and not others, with the measured figure: reported as a failure, never as a wrong answer
KERNEL_SENSITIVE: dict[tuple[str, Any, str], str] = {
    # ECOS's interior point: numerical_error with OpenBLAS's Prescott kernels, optimal with
    # the Haswell and SkylakeX ones
    ("anitescu-hart", "soc", "cvxpy:ecos"): "numerical_error with OPENBLAS_CORETYPE=Prescott",
}

# (model, options, reference backend): the reference is an accurate backend of the model;
# it also takes the step before the compared one
CASES = [
    ("frictionless", {}, "lemke"),
    ("anitescu-hart", {}, "qpsolvers:proxqp"),
    ("anitescu-hart", {"cone": "soc"}, "cvxpy:clarabel"),
    ("box-friction", {}, "pgs"),
    ("box-friction", {"cone": "disc"}, "pgs"),
    ("staggered-projections", {"max_outer": 300}, "qpsolvers:proxqp"),
    ("staggered-projections", {"cone": "soc", "max_outer": 300}, "cvxpy:clarabel"),
]

#: (model, cone): the backend and options of the compared step's reference answer where
#: the stepping backend's answer is not accurate enough (module docstring): PGS at its
#: 1e-6 lies 7.3e-6 m/s from the step's solution, within its own 1e-5 but not within
#: Lemke's 1e-8
EXACT_REFERENCE: dict[tuple[str, Any], tuple[str, dict[str, Any]]] = {
    ("box-friction", None): ("lemke", {}),
    ("box-friction", "disc"): ("ipm", {"solver_tol": 1e-10}),
}


def stack_step(
    model: str, options: dict[str, Any], reference: str
) -> tuple[StepProblem, ModelMemory]:
    """The second step of a 3-cube stack whose top cube slides at 1 m/s (h = 10 ms).

    Stepped with the model and its reference backend; returns the step problem
    and the cache the step starts from (the warm start of the models that
    keep one, as in a run).
    """
    scene = get_scenario("box-stack").build(n=3)
    assert scene.initial_phi is not None
    phi = scene.initial_phi.copy()
    az = np.radians(30.0)
    phi[2, 3:] = [np.cos(az), np.sin(az), 0.0]
    scene = replace(scene, initial_phi=phi)
    # the general layers: box friction by pgs steps by plain Gauss--Seidel there (the
    # compiled pile step finishes slow steps by subspace minimization, which poses another
    # second step, on which cvxpy:ecos stops at its iteration cap)
    sim = Simulator(
        scene, "maximal", model, reference, dt=0.01, model_options=options,
        formulation_options={"compiled": False},
    )  # fmt: skip
    state, _ = sim.step(sim.initial_state(), 0)
    _, record = sim.step(state, 1)
    assert record.problem.n_contacts >= 12  # 4 per interface (and more as the top cube tilts)
    return record.problem, ModelMemory(state.cache)


def backends(model: str, options: dict[str, Any], reference: str) -> list[str]:
    cls = type(make_model(model, reference, **options))
    return [s for s in cls.compatible_solvers(**options) if s != "cvxpy"]  # alias of clarabel


def case_id(case: tuple) -> str:
    return "-".join([case[0], *map(str, case[1].values())])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_backends_agree_on_the_step_velocities(case: tuple) -> None:
    model, options, reference = case
    problem, cache = stack_step(model, options, reference)
    exact, exact_options = EXACT_REFERENCE.get((model, options.get("cone")), (reference, {}))
    ref = make_model(model, exact, **options, **exact_options).solve(problem, cache.copy())
    assert ref.status == "optimal"
    # the top cube still slides (body-frame velocity of its centre, 2 steps of friction)
    assert np.linalg.norm(ref.v[15:17]) > 0.5
    names = backends(model, options, reference)
    assert len(names) >= 3, names
    for name in names:
        try:
            extra = OPTIONS_FOR.get((model, name), {})
            sol = make_model(model, name, **options, **extra).solve(problem, cache.copy())
        except IncompatibleError:
            # kkt fits the contact-free steps only
            assert name == "kkt"
            continue
        key = (model, options.get("cone"), name)
        if key in CAPPED and sol.status in ("max_iterations", "stalled"):
            # honestly capped (whether the cap is reached depends on the last bits of the
            # sweeps; converged, it must agree like any other backend)
            continue
        if key in KERNEL_SENSITIVE and sol.status == "numerical_error":
            continue
        if (model, name) in KNOWN_FAILURES:
            # reported as a failure, never as a wrong answer
            assert sol.status not in ("optimal", "optimal_inaccurate")
            continue
        assert sol.status in ("optimal", "optimal_inaccurate"), (name, sol.status)
        tol = 10.0 * solvers.get_backend(name).tolerance.accuracy
        assert np.max(np.abs(sol.v - ref.v)) < tol, (name, np.max(np.abs(sol.v - ref.v)))
