"""The reduced formulation's compiled Stewart--Trinkle step by Lemke
(:mod:`contactlab.reduced.lemke_step`).

Facts: it is the same step as the general reduced path (the model's LCP over
``[lambda_N; beta; lambda_L; s]`` with the same rows in the same order, solved by the same
Lemke kernel with the same settings and no warm start), so on solo12 standing and on a
small tree that lands and slides the two trajectories agree to 1e-10 (q and qdot): Lemke's
method ends on a basis, and the same basis gives the same solution up to the rounding of
two summation orders of ``C M^-1 C^T`` (9.8e-13 apart over 40 steps of solo12, measured);
the kernel's LCP is the general path's matrix to rounding; a step it declines is the
general path's step; it is taken exactly for the set-ups in its scope.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from contactlab.reduced import lemke_step
from contactlab.reduced.lemke_step import LemkeReducedStep
from contactlab.simulator import Simulator

try:
    from reduced_routes import AGREE, declining_run, diff, robots, side_by_side, small_tree
except ImportError:  # tests/contactlab imported as a package
    from .reduced_routes import AGREE, declining_run, diff, robots, side_by_side, small_tree

pytest.importorskip("numba")

#: the small tree's initial twist: thrown sideways and spinning
THROWN = [0.3, 0.0, 0.0, 0.3, 0.0, 0.0]


def _pair(scene: Any, **opts: Any) -> tuple[Simulator, Simulator]:
    args: dict[str, Any] = {"formulation": "reduced", "model": "stewart-trinkle"}
    fast = Simulator(scene, solver="lemke", model_options=opts, **args)
    general = Simulator(
        scene, solver="lemke", model_options=opts, formulation_options={"compiled": False}, **args
    )
    return fast, general


@robots
def test_solo12_trajectories_equal_the_general_path() -> None:
    """solo12 standing (32 contacts, an LCP of 192 unknowns): the runs agree to 1e-10,
    every step solved (``optimal``) with as many contacts, and the sliding speeds the model
    reports agree too."""
    from contactlab.scenario import get_scenario

    scene = get_scenario("solo12-stand").build()
    fast, general = _pair(scene)
    assert type(fast.compiled) is LemkeReducedStep and general.compiled is None
    a, b = fast.initial_state(), general.initial_state()
    worst = 0.0
    most = 0
    for i in range(25):
        a, ra = fast.step(a, i)
        b, rb = general.step(b, i)
        assert ra.metrics["n_contacts"] == rb.metrics["n_contacts"]
        assert ra.metrics["status"] == rb.metrics["status"] == "optimal"
        most = max(most, ra.metrics["n_contacts"])
        worst = max(worst, diff(a, b))
        s_a = ra.solution.report.sliding_speed
        s_b = rb.solution.report.sliding_speed
        assert np.abs(s_a - s_b).max(initial=0.0) <= AGREE
    assert most > 0
    assert worst <= AGREE


def test_small_tree_run_equals_the_general_path() -> None:
    """A box on a free joint with a sphere on a sprung hinge, thrown, lands tilted and
    slides: the two runs agree to 1e-10 with 4 and with 8 pyramid directions."""
    for k in (4, 8):
        fast, general = _pair(small_tree(THROWN), directions=k)
        assert type(fast.compiled) is LemkeReducedStep
        worst, contacts = side_by_side(fast, general, 150)
        assert contacts > 50
        assert worst <= AGREE


def test_lcp_is_the_models_matrix() -> None:
    """The kernel's LCP on a contact step of the small tree is the matrix and vector the
    model poses on the general path (``StewartTrinkle.solve``'s ``bmat``), to 1e-12
    relative: the same unknowns in the same order."""
    import scipy.sparse as sp

    from solvers import LCP

    fast, general = _pair(small_tree(THROWN))
    captured: list[Any] = []
    model: Any = general.model
    original = model.run

    def capture(problem: Any) -> Any:
        captured.append(problem)
        return original(problem)

    model.run = capture
    kernel = lemke_step.K.lemke_full_step
    seen: list[Any] = []

    def spy(*args: Any) -> Any:
        out = kernel(*args)
        seen.append(args)
        return out

    lemke_step.K.lemke_full_step = spy
    try:
        state = fast.initial_state()
        for i in range(150):
            nxt, record = fast.step(state, i)
            if record.metrics["n_contacts"] > 1:
                break
            state = nxt
        general.step(state, i)
    finally:
        lemke_step.K.lemke_full_step = kernel
    assert captured and isinstance(captured[-1], LCP)
    lcp = captured[-1]
    M_ref = sp.csr_matrix(lcp.M).toarray()
    # the kernel's matrix from the same arguments, through its own pieces
    from contactlab.reduced import _lemke_step_kernels as K

    A, q = _kernel_lcp(K, seen[-1])
    scale = np.abs(M_ref).max()
    assert A.shape == M_ref.shape
    assert np.abs(A - M_ref).max() <= 1e-12 * scale
    assert np.abs(q - lcp.q).max() <= 1e-12 * max(1.0, np.abs(lcp.q).max())


def _kernel_lcp(K: Any, args: tuple[Any, ...]) -> tuple[Any, Any]:
    """The LCP the kernel forms from its arguments ``args`` (its prologue, then
    :func:`~contactlab.reduced._lemke_step_kernels.pyramid_lcp`)."""
    from contactlab.contact.rows import _tangent_basis
    from contactlab.reduced import _step_kernels as S

    head = args[:34]
    (
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support, stiffness,
        damping, rest, armature, gravity, q, qdot, h, tau, node_of_body, _, body_a, body_b,
        point, normal, dist, mu, beta, max_corr, lim_dof, lim_sign, lim_bound, dirs,
    ) = head  # fmt: skip
    none = (
        np.zeros((0, 4, 4)), np.zeros((0, 6, 6)), np.zeros((0, 6, 6)), np.zeros((0, 6, 6)),
        np.zeros((0, 6)), np.zeros(0), np.zeros(0), np.zeros(1, dtype=np.int64),
    )  # fmt: skip
    E, J, M, f = S._system(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau, none,
    )  # fmt: skip
    u_free = np.linalg.solve(M, f)
    na = np.array([node_of_body[b] if b >= 0 else -1 for b in body_a], dtype=np.int64)
    nb = np.array([node_of_body[b] if b >= 0 else -1 for b in body_b], dtype=np.int64)
    t1, t2 = _tangent_basis(normal)
    C, b = S._contact_rows(
        E, J, support, n_support, q, h, na, nb, point, normal, dist, beta, max_corr,
        lim_dof, lim_sign, lim_bound, t1, t2,
    )  # fmt: skip
    Kt = np.linalg.solve(M, C.T)
    A, q_lcp, _, _, _ = K.pyramid_lcp(C, Kt, b, u_free, mu, dirs, dist.shape[0], lim_dof.shape[0])
    return A, q_lcp


def test_declined_steps_take_the_general_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step the kernel declines (its status ``NOT_SPD``) is the general path's step: the
    run equals the general run to 1e-10."""
    fast, general = _pair(small_tree(THROWN))
    calls, worst = declining_run(
        monkeypatch, lemke_step.K, "lemke_full_step", lemke_step.K.NOT_SPD, fast, general
    )
    assert calls == 60
    assert worst <= AGREE


def test_scope() -> None:
    """Taken for stewart-trinkle by lemke (its own settings only); the frictional-contact
    route, unknown settings and the general layers keep the general path."""
    scene = small_tree(THROWN)

    def compiled(model: str, solver: str, **opts: Any) -> Any:
        sim = Simulator(scene, "reduced", model, solver, model_options=opts)
        return type(sim.compiled)

    assert compiled("stewart-trinkle", "lemke") is LemkeReducedStep
    assert (
        compiled("stewart-trinkle", "lemke", solver_settings={"pivot_tol": 1e-10})
        is LemkeReducedStep
    )
    assert compiled("stewart-trinkle", "nsgs") is type(None)
    assert compiled("stewart-trinkle", "lemke", solver_settings={"warm": 1}) is type(None)
    general = Simulator(
        scene, "reduced", "stewart-trinkle", "lemke", formulation_options={"compiled": False}
    )
    assert general.compiled is None
