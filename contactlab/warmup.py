"""``contactlab warmup``: compile numba kernels ahead, into the user cache.

The kernels are compiled lazily, at their first call with given argument
types, and cached on disk (:mod:`solvers.jit`).  Warming up runs the code
paths that call them with the argument types a simulation uses: a box stack
(the compiled collision of box-and-plane scenes, projected Gauss--Seidel), a
cylinder on two boxes (the convex and cylinder narrow phase, box--box and
box--plane in a scene of mixed shapes), a mesh cube on a box (the mesh
narrow phase: mesh--box and mesh--plane), a reduced four-bar with joint friction
(tree recursions, joint-friction kernels), a chain of general joints (generated
joint kernels), the O(n) hybrid dynamics recursion and its derivatives on a
prepared model, and the frictional-contact backends (NSGS, APGD, ADMM) on a
two-contact problem and a box stack through the compiled local problem.  It
then checks that every kernel of
module that owns kernels (:func:`solvers.jit.kernel_modules`) has a compiled
signature and names those that have none.

The steps are independent, so they run in separate processes, as many at a
time as there are cores (``jobs``): numba compiles one function at a time in
a process, and the cache is shared through the disk.  ``only="demo"`` warms
just what ``make demo`` runs (:data:`DEMO_STEPS`: the demo scenarios and the
box scenes of studies 1 and 4), so that a first run on a new machine does not
wait for kernels it never calls; the rest compile at their first use.
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.scene import Scene

#: Registered scenarios stepped by the warm-up, with their step counts.
SCENARIO_CASES: tuple[tuple[str, int], ...] = (
    ("box-stack", 2),
    ("jf-crank", 2),
    ("torus-chain", 2),
)


def _run_scenario(build: Callable[..., Any], name: str, steps: int) -> None:
    build(name).run(steps=steps)


def _cylinder_on_box() -> Scene:
    """A cylinder standing on two stacked boxes on the ground (contacts at the first
    step; a scene of mixed shapes, so its box pair takes the general narrow phase)."""
    from contactlab.bodies import body_from_shape
    from contactlab.shapes import Box, Cylinder, Plane

    half = np.array([0.2, 0.2, 0.05])
    box, _ = body_from_shape("box", Box(half_extents=half), density=1000.0)
    top, _ = body_from_shape("top", Box(half_extents=half), density=1000.0)
    cyl, _ = body_from_shape("cyl", Cylinder(radius=0.05, half_height=0.1), density=1000.0)
    tilt = se3.exp_so3(np.radians([5.0, 0.0, 0.0]))
    return Scene(
        "warmup-cylinder",
        (box, top, cyl),
        static_shapes=(Plane(),),
        initial_E=np.stack(
            [
                se3.make_transform(None, [0, 0, 0.05]),
                se3.make_transform(None, [0, 0, 0.15]),
                se3.make_transform(tilt, [0, 0, 0.3]),
            ]
        ),
        initial_phi=np.zeros((3, 6)),
        dt=0.005,
    )


def _mesh_on_box() -> Scene:
    """A mesh cube resting on a box and another on the ground (mesh--box and
    mesh--plane contacts)."""
    import trimesh

    from contactlab.bodies import body_from_shape
    from contactlab.shapes import Box, Mesh, Plane

    half = np.array([0.2, 0.2, 0.05])
    box, _ = body_from_shape("box", Box(half_extents=half), density=1000.0)
    cube = Mesh.from_trimesh(trimesh.creation.box(extents=[0.1, 0.1, 0.1]))
    on_box, _ = body_from_shape("on-box", cube, density=1000.0)
    on_floor, _ = body_from_shape("on-floor", cube, density=1000.0)
    return Scene(
        "warmup-mesh",
        (box, on_box, on_floor),
        static_shapes=(Plane(),),
        initial_E=np.stack(
            [
                se3.make_transform(None, [0, 0, 0.05]),
                se3.make_transform(None, [0.15, 0, 0.15]),
                se3.make_transform(None, [0.5, 0, 0.05]),
            ]
        ),
        initial_phi=np.zeros((3, 6)),
        dt=0.005,
    )


def _recursion() -> None:
    """One call of the O(n) hybrid-dynamics recursion on a three-link chain."""
    from contactlab.reduced import Tree
    from contactlab.reduced.recursive import hybrid_dynamics
    from contactlab.scenario import get_scenario

    tree = Tree.from_scene(get_scenario("chain").build(n_links=3))
    q, qdot = np.full(tree.nq, 0.3), np.full(tree.nq, 0.1)
    hybrid_dynamics(tree, q, qdot, [tree.specs[0].name], np.zeros(tree.nq))


def _model_recursions() -> None:
    """The prepared-model recursions and their derivatives on a three-link chain."""
    from contactlab.reduced.derivatives import (
        forward_dynamics_derivatives,
        inverse_dynamics_derivatives,
    )
    from contactlab.reduced.model import Model
    from contactlab.scenario import get_scenario

    scene = get_scenario("chain").build(n_links=3)
    model = Model.from_scene(scene)
    q, qdot = np.full(model.nq, 0.3), np.full(model.nq, 0.1)
    qddot = model.forward_dynamics(q, qdot)
    # the numba kernels too (the default calls may run the kernels compiled at install)
    for m in (model, Model.from_scene(scene, kernels="numba")):
        m.forward_dynamics(q, qdot)
        m.inverse_dynamics(q, qdot, qddot)
        m.mass_matrix(q)
        m.bias_forces(q, qdot)
        m.inverse_mass_times(q, qdot)
    inverse_dynamics_derivatives(model, q, qdot, qddot)
    inverse_dynamics_derivatives(model, q, qdot, qddot, composite=False)  # the general form
    forward_dynamics_derivatives(model, q, qdot)
    # generated joints on a prepared model (their joint maps are packed by a compiled call)
    tori = Model.from_scene(get_scenario("torus-chain").build(n=2))
    tori.forward_dynamics(*tori.tree.initial_coordinates())
    # the product of a generated joint's factors, called by joints generated as numba code
    # (no C compiler, or CONTACTLAB_JOINT_BACKEND=numba), with the argument types they pass
    from contactlab.reduced._general_kernels import compose

    F = np.tile(np.eye(4), (2, 1, 1))
    SF, Q, S = np.zeros((2, 6, 2)), np.zeros((1, 4, 4)), np.zeros((1, 6, 2))
    compose(F, SF, SF.copy(), np.zeros(2), np.int64(0), Q, S, S.copy())


def _frictional_backends() -> None:
    """Each frictional-contact backend on a two-contact problem, both laws and cones, and a
    box stack stepped through the compiled local problem (:mod:`contactlab.models.delassus`)
    and by the compiled disc-cone step (:mod:`contactlab.maximal.cone_step`, ``nsgs``, ``apgd``
    and ``admm``), and a problem with a joint row by ``apgd``."""
    import solvers
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator
    from solvers.frictional import FrictionalContact

    scene = get_scenario("box-stack").build()
    Simulator(
        scene, "maximal", "anitescu-hart", "apgd", model_options={"cone": "soc"},
        formulation_options={"compiled": False},
    ).run(steps=2)  # fmt: skip
    # the velocity-form route (rows ordered with q by one pass, the problem given by its
    # factor), with the warm start carried over per contact on the second step
    Simulator(scene, "maximal", "coulomb", "ipm").run(steps=2)
    # the compiled disc-cone step of free bodies (contactlab.maximal.cone_step), by nsgs
    Simulator(scene, "maximal", "coulomb", "nsgs").run(steps=2)
    # and by apgd and admm (contactlab.maximal._cone_fom_kernels)
    Simulator(scene, "maximal", "coulomb", "apgd").run(steps=2)
    Simulator(scene, "maximal", "coulomb", "admm").run(steps=2)
    # the compiled Stewart-Trinkle step by Lemke's method (contactlab.maximal.lemke_step)
    Simulator(scene, "maximal", "stewart-trinkle", "lemke").run(steps=2)

    W = np.eye(6) + 0.1 * np.ones((6, 6))
    q = np.array([-1.0, 0.3, 0.0, -0.5, 0.0, 0.2])
    for law in ("coulomb", "ccp"):
        for cone in ("soc", "pyramid"):
            problem = FrictionalContact(W, q, [0.5, 0.5], law=law, cone=cone)
            for name in ("nsgs", "apgd", "admm", "ipm", "padmm"):
                try:
                    solvers.solve(problem, name)
                except (solvers.IncompatibleProblem, solvers.SolverNotFound):
                    continue  # a backend that does not take this law and cone
    # a joint row, eliminated by apgd's Schur complement before it iterates
    # (solvers.numerics.fc_schur)
    Wj = np.eye(7) + 0.1 * np.ones((7, 7))
    joint = FrictionalContact(Wj, np.append(q, 0.2), [0.5, 0.5], "ccp", "soc", row_lo=[-np.inf])
    solvers.solve(joint, "apgd")
    # wide cones (torsional and rolling rows): both laws, both cones, the four backends
    from solvers.frictional_wide import wide_problem

    Ww = np.eye(11) + 0.1 * np.ones((11, 11))
    qw = np.array([-1.0, 0.3, 0.0, 0.1, -0.5, 0.0, 0.2, 0.0, 0.1, -0.1, 0.0])
    for law in ("coulomb", "ccp"):
        for cone in ("elliptic", "separate"):
            wide = wide_problem(
                Ww, qw, [4, 6], [0.5, 0.5, 0.02, 0.5, 0.5, 0.02, 0.01, 0.01], law, cone, [0.0]
            )
            for name in ("nsgs", "apgd", "admm", "padmm"):
                solvers.solve(wide, name)
            wide.support(qw)
    # a problem given by its factor W = C diag(d) C' only, as the maximal route hands
    # it to the velocity-form backends (the velocity goes through the factor)
    import scipy.sparse as sp

    C = sp.csr_matrix(np.vstack([np.eye(4), 0.3 * np.ones((2, 4))]))
    factored = FrictionalContact(None, q, [0.5, 0.5], "ccp", "soc", factor=(C, np.ones(4)))
    factored.velocity(np.zeros(6))
    # the 6x6-block Cholesky of ipm's normal matrix (used from 65 unknowns on)
    from solvers.backends.block_cholesky import BlockCholesky

    A = sp.triu(sp.csc_matrix(np.kron([[2.0, 0.5], [0.5, 2.0]], np.eye(6)))).tocsc()
    chol = BlockCholesky(A.indptr, A.indices, 6)
    chol.factor(A.data)
    chol.solve(np.ones(12))
    # ipm's semismooth Newton finish of the box law (run only where its fixed point stalls)
    from solvers.backends.fc_newton import BoxNewton

    box = FrictionalContact(None, q, [0.5, 0.5], "coulomb", "box", factor=(C, np.ones(4)))
    BoxNewton(box, C, np.ones(4)).solve(np.zeros(6), 1e-10, 5)
    # and of the pyramid law (Stewart and Trinkle's variables from impulses and back)
    from solvers.backends.fc_newton import PyramidNewton

    pyr = FrictionalContact(None, q, [0.5, 0.5], "coulomb", "pyramid", factor=(C, np.ones(4)))
    PyramidNewton(pyr, C, np.ones(4)).solve(np.array([1.0, 0.1, 0.0, 1.0, 0.0, 0.1]), 1e-10, 5)
    # and of the Coulomb law on the exact cone (Alart--Curnier's function)
    from solvers.backends.fc_newton import SocNewton

    soc = FrictionalContact(None, q, [0.5, 0.5], "coulomb", "soc", factor=(C, np.ones(4)))
    SocNewton(soc, C, np.ones(4)).solve(np.array([1.0, 0.1, 0.0, 1.0, 0.0, 0.1]), 1e-10, 5)
    # ipm's fused interior-point loop (the normal matrix by 6x6 blocks: over 64 unknowns),
    # twice on one pattern (the second reuses the first's symbolic analysis), both cones
    rows = []
    for body in range(12):  # one contact under each of 12 bodies, lever arm (0.1, 0, -0.1)
        for normal in ((0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)):
            row = np.zeros(72)
            row[6 * body : 6 * body + 3] = np.cross((0.1, 0.0, -0.1), normal)
            row[6 * body + 3 : 6 * body + 6] = normal
            rows.append(row)
    C12 = sp.csr_matrix(np.array(rows))
    q12 = np.tile([-1.0, 0.2, 0.1], 12)
    for law, cone in (("ccp", "soc"), ("ccp", "pyramid"), ("coulomb", "soc")):
        blocks = FrictionalContact(
            None, q12, np.full(12, 0.5), law, cone, factor=(C12, np.ones(72))
        )
        first = solvers.solve(blocks, "ipm")
        solvers.solve(blocks, "ipm", warm_start=1.01 * first.x)
        solvers.solve(blocks, "padmm")  # its block Cholesky of sigma M + C'C
    from solvers.islands import island_labels, pair_labels

    island_labels(blocks)
    pair_labels(3, np.array([0, -1], dtype=np.int64), np.array([1, 2], dtype=np.int64))
    for name in ("nsgs", "ipm"):
        try:
            cold = solvers.solve(factored, name)
            # a warm start away from the solution (ipm: its interior point of impulses, used
            # only while the start's natural map is below ``warm_limit``)
            solvers.solve(factored, name, warm_start=np.zeros(6))
            solvers.solve(factored, name, warm_start=1.01 * cold.x)
        except solvers.SolverNotFound:
            continue


def kernels() -> dict[str, list[str]]:
    """``{module: [kernel names]}`` of every compiled kernel module."""
    from numba.core.registry import CPUDispatcher

    from solvers.jit import kernel_modules

    out = {}
    for name in kernel_modules("contactlab", "solvers"):
        module = importlib.import_module(name)
        out[name] = sorted(
            key
            for key, value in vars(module).items()
            if isinstance(value, CPUDispatcher) and value.__module__ == name
        )
    return out


def _compiled(kernel: object) -> bool:
    """Compiled in this process, or found in the on-disk cache (a helper inlined into a
    cached caller is loaded with it, so it gets no signature of its own)."""
    if kernel.signatures:  # type: ignore[attr-defined]
        return True
    index = kernel._cache._cache_file._index_path  # type: ignore[attr-defined]
    return os.path.exists(index)


def uncompiled() -> list[str]:
    """Kernels (``module.name``) neither compiled in this process nor in the cache."""
    missing = []
    for name, keys in kernels().items():
        module = importlib.import_module(name)
        missing += [f"{name}.{k}" for k in keys if not _compiled(getattr(module, k))]
    return missing


def _scenario_steps() -> None:
    from contactlab.runspec import build_simulator

    for name, n in SCENARIO_CASES:
        _run_scenario(build_simulator, name, n)


def _cylinder_steps() -> None:
    from contactlab.simulator import Simulator

    Simulator(_cylinder_on_box()).run(steps=2)


def _mesh_steps() -> None:
    from contactlab.simulator import Simulator

    Simulator(_mesh_on_box()).run(steps=2)


def _demo_runs() -> None:
    """The scenarios of ``contactlab demo`` on their default routes."""
    from contactlab.runspec import DEMO_RUNS, build_simulator

    for name, _ in DEMO_RUNS:
        _run_scenario(build_simulator, name, 2)


def _box_studies(
    models: tuple[str, ...], routes: tuple[str, ...] = ("compiled", "general")
) -> None:
    """The box scenes of studies 1 and 4 (short): the incline, a stack and a small pile,
    with ``models`` and the solvers those studies pair them with, on ``routes``: the
    default one (``"compiled"``: box friction by ``pgs`` takes the compiled maximal step)
    and, where that is compiled, the general layers of the same pair (``"general"``)."""
    from contactlab.errors import ContactlabError
    from contactlab.scenario import get_scenario
    from contactlab.simulator import Simulator

    incline = get_scenario("box-incline").build(mu=0.5, angle_deg=20.0)
    stack = get_scenario("box-stack").build(n=3)
    pile = get_scenario("box-pile").build(n=10)
    for scene, steps in ((incline, 2), (stack, 2), (pile, 2)):
        for model in models:
            for solver in ("osqp", "pgs", "lemke"):
                try:
                    simulator = Simulator(scene, "maximal", model, solver)
                except ContactlabError:  # a pair that does not fit: nothing to warm
                    continue
                if "compiled" in routes or simulator.compiled is None:
                    simulator.run(steps=steps)
                if simulator.compiled is not None and "general" in routes:
                    general = {"compiled": False}
                    Simulator(scene, "maximal", model, solver, formulation_options=general).run(
                        steps=steps
                    )


def _batched_piles() -> None:
    """Two small box piles stepped as one batch (:mod:`contactlab.maximal.batched_step`)."""
    from contactlab.batch import Batch
    from contactlab.scenario import get_scenario

    pile = get_scenario("box-pile")
    Batch([pile.build(n=2, seed=0), pile.build(n=2, seed=1)]).run(steps=2)


def _robot_steps() -> None:
    """A box on a free joint with a sphere on a hinge, on the ground, in reduced
    coordinates with box friction by PGS, with the exact cone by NSGS and Stewart--Trinkle
    by Lemke: the compiled contact steps."""
    from contactlab.bodies import body_from_shape
    from contactlab.scene import JointSpec
    from contactlab.shapes import Box, Plane, Sphere
    from contactlab.simulator import Simulator

    base, _ = body_from_shape("base", Box(half_extents=np.array([0.1, 0.1, 0.05])), mass=1.0)
    ball, _ = body_from_shape("ball", Sphere(radius=0.05), mass=0.2)
    joints = (
        JointSpec("root", "free", None, "base", frame_parent=se3.make_transform(None, [0, 0, 0.1])),
        JointSpec(
            "hinge", "revolute", "base", "ball", axis=[0.0, 1.0, 0.0],
            frame_parent=se3.make_transform(None, [0.2, 0.0, 0.0]), stiffness=1.0, damping=0.1,
        ),
    )  # fmt: skip
    scene = Scene("warmup-robot", (base, ball), joints=joints, static_shapes=(Plane(),))
    Simulator(scene, "reduced", "box-friction", "pgs").run(steps=2)
    # the exact-cone compiled step (contactlab.reduced.cone_step; one kernel for its methods)
    Simulator(scene, "reduced", "coulomb", "nsgs").run(steps=2)
    # the Stewart--Trinkle compiled step by Lemke (contactlab.reduced.lemke_step)
    Simulator(scene, "reduced", "stewart-trinkle", "lemke").run(steps=2)


#: The warm-up steps, by label (module-level functions: they run in worker processes).
STEPS: dict[str, Callable[[], None]] = {
    "scenarios (box stack, joint-friction crank, torus chain)": _scenario_steps,
    "cylinder on two boxes": _cylinder_steps,
    "mesh cube on a box": _mesh_steps,
    "robot in reduced coordinates (compiled contact step)": _robot_steps,
    "batched box piles": _batched_piles,
    "hybrid dynamics recursion": _recursion,
    "model recursions and derivatives": _model_recursions,
    "frictional-contact backends": _frictional_backends,
}

#: The steps that warm what ``make demo`` runs.
DEMO_STEPS: dict[str, Callable[[], None]] = {
    # two halves, so that two processes compile them at once
    # three parts of about equal compile time, so that two processes share them evenly
    "box scenes of studies 1 and 4, box friction, compiled step": partial(
        _box_studies, ("box-friction",), ("compiled",)
    ),
    "box scenes of studies 1 and 4, box friction, general layers": partial(
        _box_studies, ("box-friction",), ("general",)
    ),
    "box scenes of studies 1 and 4, other models": partial(
        _box_studies, ("anitescu-hart", "stewart-trinkle")
    ),
    "demo scenarios": _demo_runs,
}


def _timed(label: str) -> tuple[str, float, float]:
    """Run one step (in a worker process); its label, wall and CPU seconds."""
    from solvers.jit import silence_first_use

    silence_first_use()  # the steps are reported with their times instead
    action = {**STEPS, **DEMO_STEPS}[label]
    began, cpu = time.perf_counter(), time.process_time()
    action()
    return label, time.perf_counter() - began, time.process_time() - cpu


def default_jobs() -> int:
    """Worker processes of the warm-up: the cores this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no sched_getaffinity (macOS, Windows)
        return max(1, os.cpu_count() or 1)


def warmup(report: Callable[[str], None] = print, only: str = "all", jobs: int = 1) -> list[str]:
    """Compile (or load from the cache) the kernels; return the ones left uncompiled.

    ``only``: ``"all"`` (every kernel) or ``"demo"`` (what ``make demo`` runs; nothing is
    reported missing then).  ``jobs``: processes compiling at once (1: in this process).
    """
    from solvers.jit import silence_first_use

    if only not in ("all", "demo"):
        raise ValueError(f"warm-up {only!r} unknown; use 'all' or 'demo'")
    silence_first_use()  # the steps below are reported with their times instead
    start = time.perf_counter()
    labels = list(DEMO_STEPS if only == "demo" else STEPS)
    if jobs <= 1:
        done = map(_timed, labels)
        for label, wall, cpu in done:
            report(f"  {label}: {wall:.1f} s ({cpu:.1f} s of CPU)")
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawned workers: a forked copy of a process that imported numba may deadlock
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(min(jobs, len(labels)), mp_context=context) as pool:
            futures = [pool.submit(_timed, label) for label in labels]
            for future in as_completed(futures):
                label, wall, cpu = future.result()
                report(f"  {label}: {wall:.1f} s ({cpu:.1f} s of CPU, in a worker)")
    if only == "demo":
        report(
            f"the demo's kernels compiled or loaded from the cache in "
            f"{time.perf_counter() - start:.1f} s"
        )
        return []
    missing = uncompiled()
    total = sum(len(v) for v in kernels().values())
    report(
        f"{total - len(missing)} of {total} kernels compiled or loaded from the cache in "
        f"{time.perf_counter() - start:.1f} s"
    )
    return missing
