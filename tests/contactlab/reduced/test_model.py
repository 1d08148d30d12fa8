"""The prepared model's compiled calls agree with the existing dense and recursive paths."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from contactlab.errors import ConfigurationError
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.model import COMPILED_AHEAD, Model
from contactlab.reduced.recursive import forward_dynamics_recursive
from contactlab.reduced.tree import Tree

from .conftest import JOINTS, random_tree_scene

# Joints the model compiles (no Python per call); the splines are OTHER nodes.
ANALYTIC = [k for k in sorted(JOINTS) if not k.startswith("spline")]


def springy_tree(seed: int, kinds: list[str]) -> Tree:
    """A random tree with joint springs and dampers on every joint, gravity on."""
    rng = np.random.default_rng(100 + seed)
    scene = random_tree_scene(seed, kinds)
    joints = tuple(
        dataclasses.replace(j, stiffness=rng.uniform(0, 5), damping=rng.uniform(0, 2))
        for j in scene.joints
    )
    return Tree.from_scene(scene.with_(joints=joints))


# The kernels compiled at install (C) and the numba kernels must establish the same facts.
KERNELS = [
    pytest.param(
        "c",
        marks=pytest.mark.skipif(
            not COMPILED_AHEAD, reason="contactlab.reduced._cfast not built (no C compiler)"
        ),
    ),
    "numba",
]
EVERY_KIND = sorted(JOINTS) + ["revolute", "prismatic", "revolute", "revolute"]


@pytest.fixture(params=[(0, "c"), (1, "c"), (0, "numba")], ids=["0-c", "1-c", "0-numba"])
def model(request: pytest.FixtureRequest) -> Model:
    seed, kernels = request.param
    if kernels == "c" and not COMPILED_AHEAD:
        pytest.skip("contactlab.reduced._cfast not built (no C compiler)")
    return Model(springy_tree(seed, EVERY_KIND), kernels=kernels)


def test_compiled_joints_need_no_python_per_call() -> None:
    assert not Model(springy_tree(0, ANALYTIC)).has_other_joints


def test_forward_dynamics_matches_the_dense_redmax_path(model: Model) -> None:
    """qddot from the compiled ABA equals M_r^{-1} f_r (J^T M J, Cholesky) to 1e-10 relative."""
    rng = np.random.default_rng(3)
    q, qd, _ = model.random_state(rng)
    tau = rng.standard_normal(model.nq)
    dense = dyn.forward_dynamics_dense(model.tree, q, qd, tau)
    fast = model.forward_dynamics(q, qd, tau)
    np.testing.assert_allclose(fast, dense, atol=1e-10 * np.abs(dense).max())


def test_inverse_dynamics_of_forward_dynamics_returns_the_torques(model: Model) -> None:
    """ID(q, qdot, FD(q, qdot, tau)) = tau to 1e-10 (relative to |tau|), wrenches included."""
    rng = np.random.default_rng(4)
    q, qd, _ = model.random_state(rng)
    tau = rng.standard_normal(model.nq)
    wrenches = rng.standard_normal((model.tree.scene.n_bodies, 6))
    qdd = model.forward_dynamics(q, qd, tau, wrenches)
    back = model.inverse_dynamics(q, qd, qdd, wrenches)
    np.testing.assert_allclose(back, tau, atol=1e-10 * max(1.0, np.abs(tau).max()))
    np.testing.assert_allclose(
        qdd,
        forward_dynamics_recursive(model.tree, q, qd, tau, wrenches),
        atol=1e-9 * np.abs(qdd).max(),
    )


def test_crba_mass_matrix_equals_jt_m_j(model: Model) -> None:
    """CRBA's M equals the REDMAX J^T M J to 1e-12 (relative to the largest entry)."""
    rng = np.random.default_rng(5)
    q, _, _ = model.random_state(rng)
    M = model.mass_matrix(q)
    reference = dyn.mass_matrix(forward_kinematics(model.tree, q))
    np.testing.assert_allclose(M, reference, rtol=0, atol=1e-12 * np.abs(reference).max())


def test_bias_forces_and_inverse_mass_products(model: Model) -> None:
    """h = -f_r(tau = 0) of the dense path; M^{-1} x by the recursion equals a dense solve."""
    rng = np.random.default_rng(6)
    q, qd, _ = model.random_state(rng)
    h = model.bias_forces(q, qd)
    reference = dyn.bias_forces(model.tree, q, qd)
    np.testing.assert_allclose(h, reference, atol=1e-10 * np.abs(reference).max())
    x = rng.standard_normal(model.nq)
    y = np.linalg.solve(model.mass_matrix(q), x)
    np.testing.assert_allclose(model.inverse_mass_times(q, x), y, atol=1e-9 * np.abs(y).max())


def test_mass_matrix_has_the_branch_sparsity_of_the_tree() -> None:
    """Coordinates on different branches do not couple: those entries are exactly zero."""
    model = Model(springy_tree(2, ["revolute"] * 12))
    M = model.mass_matrix(model.random_state(np.random.default_rng(0))[0])
    parent = model.topo[:, 0]

    def ancestors(i: int) -> set[int]:
        out = {i}
        while parent[i] >= 0:
            i = int(parent[i])
            out.add(i)
        return out

    for i in range(model.nq):
        for j in range(model.nq):
            related = i in ancestors(j) or j in ancestors(i)
            assert (M[i, j] != 0.0) == related


def test_bad_input_names_the_argument() -> None:
    model = Model(springy_tree(0, ["revolute", "revolute"]))
    with pytest.raises(Exception, match="qdot must have shape"):
        model.forward_dynamics(np.zeros(2), [0.0, 0.0, 0.0])


@pytest.mark.skipif(
    not COMPILED_AHEAD, reason="contactlab.reduced._cfast not built (no C compiler)"
)
@pytest.mark.parametrize("kinds", [EVERY_KIND, ANALYTIC + ANALYTIC], ids=["with-other", "compiled"])
def test_compiled_ahead_and_numba_kernels_agree(kinds: list[str]) -> None:
    """The C and numba kernels run the same recursions: equal to 1e-14 relative on every call."""
    tree = springy_tree(3, kinds)
    c, nb = Model(tree, kernels="c"), Model(tree, kernels="numba")
    assert (c.kernels, nb.kernels) == ("c", "numba")
    rng = np.random.default_rng(7)
    q, qd, qdd = c.random_state(rng)
    tau = rng.standard_normal(c.nq)
    wrenches = rng.standard_normal((tree.scene.n_bodies, 6))
    calls = [
        lambda m: m.forward_dynamics(q, qd, tau),
        lambda m: m.forward_dynamics(q, qd, tau, wrenches),
        lambda m: m.inverse_dynamics(q, qd, qdd),
        lambda m: m.inverse_dynamics(q, qd, qdd, wrenches),
        lambda m: m.bias_forces(q, qd),
        lambda m: m.mass_matrix(q),
        lambda m: m.inverse_mass_times(q, tau),
    ]
    for call in calls:
        a, b = call(c), call(nb)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-14 * np.abs(b).max())


@pytest.mark.parametrize("kernels", KERNELS)
def test_out_receives_the_result(kernels: str) -> None:
    """``out=`` is written and returned; lists are converted; a wrong ``out`` is named."""
    model = Model(springy_tree(0, ["revolute", "spherical", "prismatic"]), kernels=kernels)
    rng = np.random.default_rng(8)
    q, qd, qdd = model.random_state(rng)
    out, M = np.empty(model.nq), np.empty((model.nq, model.nq))
    assert model.forward_dynamics(q, qd, qdd, out=out) is out
    np.testing.assert_array_equal(out, model.forward_dynamics(list(q), list(qd), list(qdd)))
    assert model.inverse_dynamics(q, qd, qdd, out=out) is out
    np.testing.assert_array_equal(out, model.inverse_dynamics(q, qd, qdd))
    assert model.mass_matrix(q, out=M) is M
    np.testing.assert_array_equal(M, model.mass_matrix(q))
    with pytest.raises(ConfigurationError, match="out must be a writeable C-contiguous float64"):
        model.mass_matrix(q, out=np.empty((model.nq, model.nq)).T[:, :-1])


@pytest.mark.parametrize("kernels", KERNELS)
def test_a_pickled_model_computes_the_same(kernels: str) -> None:
    """A model sent to another process (pickle) rebuilds its kernels and gives equal results."""
    model = Model(springy_tree(1, ["revolute", "spherical", "prismatic"]), kernels=kernels)
    copy = pickle.loads(pickle.dumps(model))
    q, qd, qdd = model.random_state(np.random.default_rng(9))
    assert copy.kernels == model.kernels
    np.testing.assert_array_equal(
        copy.forward_dynamics(q, qd, qdd), model.forward_dynamics(q, qd, qdd)
    )
    np.testing.assert_array_equal(copy.mass_matrix(q), model.mass_matrix(q))


def test_unknown_kernels_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="kernels must be 'auto', 'c' or 'numba'"):
        Model(springy_tree(0, ["revolute"]), kernels="fortran")


@pytest.mark.skipif(
    not COMPILED_AHEAD, reason="contactlab.reduced._cfast not built (no C compiler)"
)
def test_an_extension_built_from_another_source_is_detected(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The extension records the SHA-256 of the C file it was built from; a different file
    beside it (edited after ``pip install -e .``) is reported stale."""
    from contactlab.reduced import _cfast
    from contactlab.reduced import model as model_module

    assert not model_module._stale_extension()
    monkeypatch.setattr(_cfast, "SOURCE_SHA256", "0" * 64)
    assert model_module._stale_extension()
