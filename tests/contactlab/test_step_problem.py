"""The formulation -> model contract: typed step-problem fields, needs vs provides, contact ids.

Facts: a model paired with a formulation that lacks what it needs is refused
when the simulator is built (Python and the command line), with one line
naming both and the formulations that fit; each built-in formulation
provides what it declares; contact ids persist for contacts that persist
(same bodies and shapes, point within the match radius) and are unique in a
step; warm starts carried per id put every impulse back on its contact.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import cli
from contactlab.collision.contacts import ContactSet
from contactlab.contact.identity import MATCH_RADIUS, identify, warm_index
from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.formulation import formulation_class, formulation_names
from contactlab.models.base import make_model
from contactlab.problem import CAPABILITIES, StepProblem
from contactlab.scenario import get_scenario
from contactlab.simulator import Simulator

SOLVER = "osqp"


@pytest.mark.parametrize(
    ("formulation", "model", "fix"),
    [
        ("maximal", "bisp", "--formulation reduced"),
        ("reduced", "joint-friction-sp", "--formulation maximal"),
        ("hyper-reduced", "bisp", "--formulation reduced"),
    ],
)
def test_mismatch_is_refused_when_the_simulator_is_built(formulation, model, fix):
    from scenarios.joint_friction import chain

    scene = chain(n_links=2)
    if formulation == "hyper-reduced":
        scene = scene.with_(hyper_basis=np.ones((2, 1)))
    with pytest.raises(IncompatibleError) as err:
        Simulator(scene, formulation, model, SOLVER)
    msg = str(err.value)
    assert len(msg.splitlines()) == 1
    assert f"model {model!r}" in msg and f"formulation {formulation!r}" in msg and fix in msg


def test_cli_run_refuses_the_mismatch_before_any_step(capsys, tmp_path):
    out = tmp_path / "r"
    code = cli.main(
        ["run", "jf-revolute", "--formulation", "maximal", "--model", "bisp"]
        + ["--solver", SOLVER, "--steps", "2", "--out", str(out), "--quiet"]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("contactlab: error: ")
    assert "model 'bisp'" in err and "formulation 'maximal'" in err
    assert "--formulation reduced" in err
    assert not out.exists()


def test_built_in_formulations_provide_what_they_declare():
    """Every declared capability is a known name, and the step problem of a scene with joint
    friction and contacts carries the fields behind it."""
    for name in formulation_names():
        assert set(formulation_class(name).provides) <= set(CAPABILITIES), name
    from scenarios.joint_friction import chain

    for name, method in (
        ("maximal", "reactions_by_multipliers"),
        ("reduced", "reactions_by_traversal"),
    ):
        assert {"contact_geometry", "joint_contacts", method} <= formulation_class(name).provides
        sim = Simulator(
            chain(n_links=3), name, "bisp" if name == "reduced" else "joint-friction-sp", SOLVER
        )
        state = sim.initial_state()
        _, record = sim.step(state)
        maps = record.problem.joint_friction
        assert maps is not None and maps.method == method.removeprefix("reactions_by_")
        assert maps.rows.layout.n_joints == 3
        # the group rows in the problem's coordinates act on the problem's velocities
        T = maps.rows.Tg if maps.J is None else maps.rows.Tg @ maps.J
        assert T.shape[1] == record.problem.n
        assert record.problem.G_owner.shape == (record.problem.G.shape[0],)


def _contacts(point: np.ndarray, body_a: np.ndarray) -> ContactSet:
    nc = point.shape[0]
    zi = np.zeros(nc, dtype=np.int64)
    normal = np.tile([0.0, 0.0, 1.0], (nc, 1))
    return ContactSet(
        point, normal, np.zeros(nc), body_a.astype(np.int64), zi - 1, zi, zi, np.full(nc, 0.5)
    )


def test_contact_ids_follow_persisting_contacts_and_are_unique():
    rng = np.random.default_rng(7)
    nc = 10
    point = rng.uniform(-0.2, 0.2, (nc, 3))
    body = rng.integers(0, 3, nc)
    first = identify(_contacts(point, body), None)
    np.testing.assert_array_equal(first.ids, np.arange(nc))
    perm = rng.permutation(nc)
    moved = point[perm] + 0.3 * MATCH_RADIUS  # a small slide keeps the identity
    moved[0] += 2.0 * MATCH_RADIUS  # this one moved too far: a new contact
    second = identify(_contacts(moved, body[perm]), first)
    assert second.ids[0] == nc  # the first new id
    np.testing.assert_array_equal(second.ids[1:], perm[1:])
    # two new contacts near one old contact: the nearer keeps its id, the other is new
    near = np.vstack([point[:1] + 0.4 * MATCH_RADIUS, point[:1] + 0.1 * MATCH_RADIUS])
    split = identify(_contacts(near, body[:2] * 0 + body[0]), first)
    assert split.ids[1] == 0 and split.ids[0] == nc
    np.testing.assert_array_equal(split.origin, [0, 0])  # both halves continue contact 0
    # ids of another pair of bodies never carry over
    other = identify(_contacts(point, body + 10), first)
    assert set(other.ids.tolist()).isdisjoint(first.ids.tolist())


def test_warm_index_finds_each_id_in_the_previous_step():
    old = np.array([4, 9, 2, 7], dtype=np.int64)
    np.testing.assert_array_equal(warm_index(old, np.array([7, 5, 4, 2])), [3, -1, 0, 2])
    np.testing.assert_array_equal(warm_index(old[:0], np.array([1])), [-1])


def test_warm_start_follows_ids_not_row_order():
    """A step re-solved with its contacts listed in reverse order (ids reversed with them)
    starts at the solution: PGS needs no sweep and returns the same velocities."""
    scene = get_scenario("box-stack").build(n=3)
    sim = Simulator(
        scene, "maximal", "box-friction", "pgs", dt=0.01, model_options={"solver_tol": 1e-9}
    )
    state, _ = sim.step(sim.initial_state(), 0)
    _, record = sim.step(state, 1)
    p = record.problem
    model = make_model("box-friction", "pgs", solver_tol=1e-8)
    cache: dict = {}
    first = model.solve(p, cache)
    assert first.status == "optimal" and first.iterations > 0
    rev = np.arange(p.n_contacts)[::-1]
    T_rows = np.column_stack([2 * rev, 2 * rev + 1]).ravel()
    flipped = StepProblem(
        h=p.h, M=p.M, f=p.f, v=p.v, G=p.G, g=p.g,
        N=p.N[rev], c=p.c[rev], T=p.T[T_rows], mu=p.mu[rev],
        contacts=p.contacts.select(rev), contact_ids=p.contact_ids[rev],
        contact_origin=p.contact_origin[rev], directions=p.directions,
    )  # fmt: skip
    again = model.solve(flipped, cache)
    assert again.status == "optimal" and again.iterations == 0
    np.testing.assert_allclose(again.v, first.v, rtol=0, atol=1e-14)  # reordered sums


def test_field_shapes_are_checked():
    import scipy.sparse as sp

    M = sp.identity(6, format="csc")
    with pytest.raises(ConfigurationError, match="contact_ids has shape"):
        StepProblem(
            1e-2,
            M,
            np.zeros(6),
            np.zeros(6),
            N=sp.csr_matrix((2, 6)),
            c=np.zeros(2),
            contact_ids=np.arange(3),
        )


def test_scene_settings_are_typed_fields_and_extras_keys_are_refused():
    """``collision`` is a field that switches collision off for a scene with shapes; the
    former extras keys raise one line naming the field to use instead."""
    from contactlab.scenario import can_collide

    scene = get_scenario("box-stack").build(n=2)
    assert can_collide(scene) and not can_collide(scene.with_(collision=False))
    assert Simulator(scene.with_(collision=False), "maximal", "frictionless", "kkt").collide is None
    for key in ("collision", "collide_jointed", "joint_torque", "hyper_basis"):
        with pytest.raises(ConfigurationError, match=f"{key}=") as err:
            scene.with_(extras={key: None})
        assert len(str(err.value).splitlines()) == 1


def test_maximal_formulation_refuses_joint_torques_it_cannot_apply():
    """Joint torques ``tau(t, q, qdot)`` live in joint coordinates: the maximal formulation
    reads one-coordinate joints back from the bodies (REDMAX scene 5 runs in both,
    ``tests/scenarios/test_redmax_both_formulations.py``) and says so instead of running
    without them when a joint has more coordinates."""
    scene = get_scenario("redmax-joint-torque").build()
    assert scene.joint_torque is not None
    Simulator(scene, "maximal", "frictionless", "kkt")  # one-coordinate hinges: applied
    ball = scene.with_(
        joints=tuple(
            j
            if i
            else j.__class__(
                j.name,
                "spherical",
                j.parent,
                j.child,
                frame_parent=j.frame_parent,
                frame_child=j.frame_child,
            )
            for i, j in enumerate(scene.joints)
        )
    )
    with pytest.raises(ConfigurationError, match="--formulation reduced") as err:
        Simulator(ball, "maximal", "frictionless", "kkt")
    assert "joint torque" in str(err.value) and len(str(err.value).splitlines()) == 1
