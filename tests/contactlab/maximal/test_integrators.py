"""Integrators of the maximal formulation (ArtiSynth notes §0.9–0.10, §0.5, §0.23).

Facts
-----
* Order of accuracy on a smooth conservative scene (a body on a spring of
  rest length 0.5 m, orbiting in a plane; reference: DOP853 at 1e-12):
  the position error at t = 0.3 s shrinks by 2 per halving of h for the
  Euler family and by 4 for the trapezoidal rule and Bridson–Marino (whose
  undamped form is velocity Verlet).  Measured ratios at h = 20, 10, 5 ms:
  2.03–2.06 (first order), 3.97–4.01 (second order).  Bands [1.8, 2.2] and
  [3.6, 4.4]: the next term of the error expansion is O(h) relative, about
  5 % at these steps (omega h <= 0.2).
* Energy on a linear spring (zero rest length, k = 100, m = 1, omega = 10),
  where the linearization is exact so the discrete maps are known in closed
  form: implicit Euler loses energy by exactly ``1/(1 + omega^2 h^2)`` per step;
  the trapezoidal rule (implicit midpoint for linear forces) keeps it to
  round-off; symplectic Euler keeps its modified energy
  ``|v|^2 + omega^2 |x|^2 - h omega^2 x.v`` to round-off, so the energy stays
  within ``h omega`` of its start for ever; Bridson–Marino keeps
  ``|v|^2 + omega^2 |x|^2 (1 - h^2 omega^2 / 4)``.
* Stiff spring (k = 1e6, omega h = 10): symplectic Euler and Bridson–Marino
  (explicit in the position Jacobian) blow up by orders of magnitude in 20
  steps; the energy of the implicit ones never grows (implicit Euler damps
  it away, the trapezoidal rule, A- but not L-stable, keeps it).
* Non-symmetric Jacobians (§0.23): on a spinning body on a frame spring the
  implicit-Euler step equals the solution of the exact non-symmetric system
  to 1e-12, and differs from the symmetrized one by more than 1e-3.
* Constraints (§0.10 with §0.5): a 3-link chain keeps its joint errors below
  1e-10 with every new integrator (projection) against ~2e-3 without.
* Friction (§0.10): a box on a 30 degree incline with mu = 0.5 slides at
  ``g (sin - mu cos)`` within 1 % with every integrator, and stays on the plane.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from scipy.integrate import solve_ivp

from contactlab import forces, se3
from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.formulation import make_formulation
from contactlab.maximal import assembly as asm
from contactlab.maximal.integrators import INTEGRATORS
from contactlab.problem import StepSolution
from contactlab.scenario import get_scenario
from contactlab.scene import Body, Scene
from contactlab.simulator import Simulator

NEW = [name for name in INTEGRATORS if name != "linearly-implicit"]


def _spring_scene(k: float, rest: float, x0, v0) -> Scene:
    if rest == 0.0:  # defined at zero length too (Sueda's notes eq. 1.35)
        spring = forces.ZeroLengthSpring(None, np.zeros(3), "a", np.zeros(3), spring_constant=k)
    else:
        spring = forces.AxialSpring(
            ((None, (0.0, 0.0, 0.0)), ("a", (0.0, 0.0, 0.0))), spring_constant=k, rest_length=rest
        )
    phi0 = np.zeros((1, 6))
    phi0[0, 3:] = v0
    return Scene(
        name="spring",
        bodies=(Body("a", mass=1.0, inertia=[0.1, 0.1, 0.1]),),
        forces=(spring,),
        gravity=np.zeros(3),
        initial_E=se3.make_transform(p=x0)[None],
        initial_phi=phi0,
    )


def _free_run(scene: Scene, integrator: str, h: float, steps: int):
    """Positions and velocities (steps+1, 3) of an unconstrained scene: v+ = Mhat^-1 b."""
    form = make_formulation("maximal", scene, integrator=integrator)
    state = form.initial_state()
    xs, vs = [state.E[0, :3, 3].copy()], [state.phi[0, 3:].copy()]
    for _ in range(steps):
        p = form.assemble(state, h)
        v = spla.spsolve(sp.csc_matrix(p.M), p.f)
        state = form.advance(state, StepSolution(v, np.zeros(0), np.zeros(0), np.zeros(0)), h)
        xs.append(state.E[0, :3, 3].copy())
        vs.append(state.phi[0, 3:].copy())
    return np.array(xs), np.array(vs)


ORDER = {
    "linearly-implicit": 1,
    "symplectic-euler": 1,
    "implicit-euler": 1,
    "trapezoidal": 2,
    "bridson-marino": 2,
}


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_order_of_accuracy(integrator: str) -> None:
    k, rest, T = 100.0, 0.5, 0.3
    x0, v0 = np.array([0.8, 0.0, 0.0]), np.array([0.0, 2.0, 0.0])
    scene = _spring_scene(k, rest, x0, v0)

    def rhs(_t, y):
        x, v = y[:3], y[3:]
        length = np.linalg.norm(x)
        return np.r_[v, -k * (length - rest) * x / length]

    ref = solve_ivp(rhs, (0, T), np.r_[x0, v0], method="DOP853", rtol=1e-12, atol=1e-12)
    x_ref = ref.y[:3, -1]
    errors = []
    for h in (0.02, 0.01, 0.005):
        xs, _ = _free_run(scene, integrator, h, int(round(T / h)))
        errors.append(np.linalg.norm(xs[-1] - x_ref))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0 ** ORDER[integrator]
    assert np.all(np.abs(ratios - expected) < 0.1 * expected), ratios


INERTIA = np.array([0.1, 0.2, 0.3])
SPIN = np.array([0.2, 3.0, 0.3, 0.5, -0.2, 0.1])  # near the unstable middle axis [rad/s, m/s]


def _spin_reference(T: float, gravity: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rotation, body angular velocity and position at T: Euler's equations by DOP853."""

    def rhs(_t, y):
        R, w, v = y[:9].reshape(3, 3), y[9:12], y[15:18]
        return np.concatenate(
            [(R @ se3.bracket3(w)).ravel(), -np.cross(w, INERTIA * w) / INERTIA, R @ v,
             -np.cross(w, v) + R.T @ gravity]
        )  # fmt: skip

    y0 = np.concatenate([np.eye(3).ravel(), SPIN[:3], np.zeros(3), SPIN[3:]])
    y = solve_ivp(rhs, (0, T), y0, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
    return y[:9].reshape(3, 3), y[9:12], y[12:15]


@pytest.mark.parametrize("gravity", [0.0, 9.81])
@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_order_of_accuracy_on_a_tumbling_body(integrator: str, gravity: float) -> None:
    """A torque-free asymmetric body spinning near its unstable axis, in free fall or not.

    The gyroscopic term (Euler's equations and the turning of the body-frame
    momenta) is the only force, besides gravity, whose body-frame wrench
    turns with the body.  The trapezoidal rule turns the momenta and the
    world-fixed force impulse of step k together (a Strang split around the
    midpoint rotation) and Bridson–Marino splits the midpoint rule into its
    two half-kicks, so both are second order: the largest error of
    rotation, angular velocity and position at t = 0.5 s shrinks by 4.00 per
    halving of h (20, 10, 5 ms); the Euler family by 2.0.  (Before the split
    the trapezoidal rule was first order in the position under gravity, error
    0.29 m at h = 20 ms over 1 s against 2.8e-3 m now; Bridson–Marino first
    order in the rotation.)
    """
    T, g = 0.5, np.array([0.0, 0.0, -gravity])
    scene = Scene(
        "tumbling",
        (Body("b", 2.0, INERTIA),),
        gravity=g,
        initial_E=np.eye(4)[None],
        initial_phi=SPIN[None],
        collision=False,
    )
    R_ref, w_ref, x_ref = _spin_reference(T, g)
    errors = []
    for h in (0.02, 0.01, 0.005):
        form = make_formulation("maximal", scene, integrator=integrator)
        state = form.initial_state()
        for _ in range(int(round(T / h))):
            p = form.assemble(state, h)
            v = spla.spsolve(sp.csc_matrix(p.M), p.f)
            solution = StepSolution(v, np.zeros(0), np.zeros(0), np.zeros(0))
            state = form.advance(state, solution, h)
        errors.append(
            max(
                np.abs(state.E[0, :3, :3] - R_ref).max(),
                np.abs(state.phi[0, :3] - w_ref).max(),
                np.abs(state.E[0, :3, 3] - x_ref).max(),
            )
        )
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    expected = 2.0 ** ORDER[integrator]
    assert np.all(np.abs(ratios - expected) < 0.1 * expected), (errors, ratios)


OMEGA = 10.0
X0, V0 = np.array([0.1, 0.0, 0.0]), np.array([0.0, 0.5, 0.0])


def _linear_run(integrator: str, h: float, steps: int):
    scene = _spring_scene(OMEGA**2, 0.0, X0, V0)
    return _free_run(scene, integrator, h, steps)


def _energy(xs, vs):
    return 0.5 * np.sum(vs * vs, axis=1) + 0.5 * OMEGA**2 * np.sum(xs * xs, axis=1)


def test_implicit_euler_dissipates_by_the_closed_form_factor() -> None:
    h, n = 0.01, 100
    xs, vs = _linear_run("implicit-euler", h, n)
    e = _energy(xs, vs)
    predicted = e[0] * (1.0 + OMEGA**2 * h**2) ** -np.arange(n + 1)
    np.testing.assert_allclose(e, predicted, rtol=1e-9)
    assert e[-1] < 0.4 * e[0]


def test_trapezoidal_conserves_energy_on_a_linear_spring() -> None:
    xs, vs = _linear_run("trapezoidal", 0.01, 100)
    e = _energy(xs, vs)
    assert np.max(np.abs(e - e[0])) < 1e-12 * e[0]


def test_symplectic_euler_energy_is_bounded() -> None:
    h, n = 0.02, 300  # ten periods
    xs, vs = _linear_run("symplectic-euler", h, n)
    modified = (
        np.sum(vs * vs, axis=1)
        + OMEGA**2 * np.sum(xs * xs, axis=1)
        - h * OMEGA**2 * np.sum(xs * vs, axis=1)
    )
    assert np.max(np.abs(modified - modified[0])) < 1e-12 * modified[0]
    e = _energy(xs, vs)
    assert np.max(np.abs(e - e[0])) < h * OMEGA * e[0]
    # no trend: the last period's mean equals the first period's within 1e-3
    period = int(round(2 * np.pi / OMEGA / h))
    assert abs(e[-period:].mean() - e[:period].mean()) < 1e-3 * e[0]


def test_bridson_marino_keeps_its_modified_energy() -> None:
    h, n = 0.02, 300
    xs, vs = _linear_run("bridson-marino", h, n)
    modified = np.sum(vs * vs, axis=1) + OMEGA**2 * (1 - (h * OMEGA) ** 2 / 4) * np.sum(
        xs * xs, axis=1
    )
    assert np.max(np.abs(modified - modified[0])) < 1e-12 * modified[0]


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_stiff_spring_blows_up_only_the_explicit_ones(integrator: str) -> None:
    """k = 1e6, m = 1, h = 10 ms: omega h = 10, beyond the explicit limit 2."""
    scene = _spring_scene(1e6, 0.0, X0, V0)
    xs, vs = _free_run(scene, integrator, 0.01, 20)
    e = 0.5 * np.sum(vs * vs, axis=1) + 0.5e6 * np.sum(xs * xs, axis=1)
    if integrator in ("symplectic-euler", "bridson-marino"):
        assert e[-1] > 1e10 * e[0]
    else:
        assert np.all(np.diff(e) <= 1e-12 * e[0])  # never grows
        if integrator != "trapezoidal":  # A-stable, not L-stable: it keeps the energy
            assert e[-1] < 1e-3 * e[0]


def _spinning_scene() -> tuple[Scene, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    frame_a = se3.random_transform(rng, scale=0.5)
    frame_b = se3.random_transform(rng, scale=0.5)
    spring = forces.FrameSpring("a", None, frame_a, frame_b, k_t=400.0, k_r=30.0, d_t=1.0, d_r=0.2)
    E = se3.make_transform(se3.exp_so3([0.4, -0.3, 0.9]), [0.2, -0.1, 0.3])[None]
    phi = np.array([[1.0, 6.0, -2.0, 0.3, 0.0, -0.2]])
    scene = Scene(
        name="spin",
        bodies=(Body("a", mass=2.0, inertia=[0.1, 0.2, 0.25]),),
        forces=(spring,),
        gravity=np.zeros(3),
        initial_E=E,
        initial_phi=phi,
    )
    return scene, E, phi


@pytest.mark.parametrize("integrator", ["implicit-euler", "trapezoidal"])
def test_non_symmetric_jacobian_is_used_and_matters(integrator: str) -> None:
    scene, E, phi = _spinning_scene()
    (spring,) = scene.forces
    h = 0.02
    md = scene.spatial_inertia
    M = np.diag(md.reshape(-1))
    K = spring.stiffness(scene, E, phi, symmetric=False).toarray()
    D = spring.damping(scene, E, phi).toarray()
    w = spring.wrench(scene, E, phi).reshape(-1)
    v = phi[0]
    if integrator == "implicit-euler":
        p = asm.rotated_momentum(md, phi, h).reshape(-1)
        A, b = M + h * D - h * h * K, p + h * (w + D @ v)
    else:  # the impulse h/2 f^k is turned with the momenta (no gravity here)
        p = asm.rotated_momentum(md, phi + h / 2 * w.reshape(1, 6) / md, h).reshape(-1)
        A, b = M + h / 2 * D - h * h / 4 * K, p + h / 2 * w + h / 2 * D @ v + h * h / 4 * K @ v
    exact = np.linalg.solve(A, b)
    steps = {}
    for jac in ("exact", "symmetric"):
        form = make_formulation(
            "maximal", scene, integrator=integrator, jacobian=jac, coriolis="rotated"
        )
        prob = form.assemble(form.initial_state(), h)
        M_step = prob.M.toarray()
        assert np.array_equal(M_step, M_step.T)  # what every contact model needs
        steps[jac] = np.linalg.solve(M_step, prob.f)
    np.testing.assert_allclose(steps["exact"], exact, rtol=0, atol=1e-12 * np.abs(exact).max())
    assert np.abs(steps["exact"] - steps["symmetric"]).max() > 1e-3 * np.abs(phi).max()


@pytest.mark.parametrize("integrator", NEW)
def test_chain_projection_removes_joint_drift(integrator: str) -> None:
    """A 3-link chain released from its default angles, 40 steps of 10 ms: the
    projection leaves joint errors below 1e-10 (measured 6e-13 to 9e-13);
    without it the velocity-level Baumgarte rows leave 1.8e-3 to 5.4e-3."""
    scene = get_scenario("chain").build()
    errors = {}
    for projection in (True, False):
        run = Simulator(
            scene,
            "maximal",
            "frictionless",
            "kkt",
            dt=0.01,
            formulation_options={"integrator": integrator, "projection": projection},
        ).run(steps=40)
        assert run.status == "ok"
        errors[projection] = run.steps["constraint_error"].max()
    assert errors[True] < 1e-10
    assert errors[False] > 1e-4


@pytest.mark.parametrize("integrator", list(INTEGRATORS))
def test_box_slides_down_an_incline_at_the_coulomb_rate(integrator: str) -> None:
    angle, mu = 30.0, 0.5
    scene = get_scenario("box-incline").build(angle_deg=angle, mu=mu)
    sim = Simulator(
        scene,
        "maximal",
        "stewart-trinkle",
        "lemke",
        dt=0.01,
        formulation_options={"integrator": integrator},
    )
    run = sim.run(duration=0.4)
    assert run.status == "ok"
    t = run.trajectory["t"][5:]
    p = run.trajectory["position"][:, 0]
    x = (p[5:] - p[0]) @ scene.extras["downhill"]
    a = 2.0 * np.polyfit(t, x, 2)[0]
    a_pred = 9.81 * (np.sin(np.radians(angle)) - mu * np.cos(np.radians(angle)))
    assert a == pytest.approx(a_pred, rel=1e-2)
    assert abs((p[-1] - p[0]) @ scene.extras["normal"]) < 1e-6


def test_unknown_integrator_is_one_clear_line() -> None:
    scene = get_scenario("pendulum").build()
    with pytest.raises(UnknownNameError, match="unknown integrator 'rk4'; known integrators"):
        Simulator(
            scene, "maximal", "frictionless", "kkt", formulation_options={"integrator": "rk4"}
        )
    with pytest.raises(ConfigurationError, match="has no option 'integrater'"):
        Simulator(
            scene, "maximal", "frictionless", "kkt", formulation_options={"integrater": "rk4"}
        )


def test_cli_run_takes_the_integrator_and_records_it(tmp_path, capsys) -> None:
    import json

    from contactlab import cli

    out = tmp_path / "run"
    argv = ["run", "pendulum", "--steps", "3", "--quiet", "--no-plots", "--out", str(out)]
    assert cli.main([*argv, "--integrator", "trapezoidal"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["formulation_options"] == {"integrator": "trapezoidal"}
    capsys.readouterr()
    code = cli.main([*argv, "--force", "--integrator", "rk4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "unknown integrator 'rk4'; known integrators: " in err


def test_sweep_grid_has_an_integrator_axis(tmp_path) -> None:
    from contactlab.experiments.grid import expand
    from contactlab.runspec import RunSpec

    data = {
        "sweep": {"models": ["frictionless"], "solvers": ["kkt"], "duration": 0.05},
        "formulation_options": {"integrator": ["trapezoidal", "bridson-marino"]},
        "scenarios": [{"name": "pendulum", "formulations": ["maximal"]}],
    }
    grid = expand(data, tmp_path)
    assert [r.formulation_options["integrator"] for r in grid.runs] == [
        "trapezoidal",
        "bridson-marino",
    ]
    assert len({r.digest() for r in grid.runs}) == 2
    # a specification without formulation options keeps the hash it had before they existed
    plain = RunSpec("pendulum", {}, "maximal", "frictionless", "kkt")
    assert "formulation_options" not in plain.as_dict()
    data["formulation_options"] = {"integrator": ["rk4"]}
    with pytest.raises(UnknownNameError, match="unknown integrator 'rk4'"):
        expand(data, tmp_path)


def test_study_8_grid_crosses_every_integrator_with_compliance() -> None:
    from pathlib import Path

    from contactlab.experiments.grid import load_grid

    root = Path(__file__).resolve().parents[3]
    spec = root / "results" / "studies" / "8-artisynth-integrators" / "spec.toml"
    grid = load_grid(spec, Path("unused"))
    assert not grid.skipped
    seen = {
        (r.formulation_options["integrator"], r.formulation_options["compliance"])
        for r in grid.runs
    }
    assert seen == {(i, c) for i in INTEGRATORS for c in (0.0, 1e-4)}


@pytest.mark.parametrize("integrator", NEW)
def test_attachments_move_like_fixed_joints_with_every_integrator(integrator: str) -> None:
    """An attachment to an attached body (notes §0.18) against two fixed joints, 30 tumbling
    steps of 1 ms under gravity: the same poses to 1e-9 with every integrator (the
    projection and Bridson–Marino's second half-kick act in the active twists)."""
    from test_attachments import _pair

    poses = {}
    for attached in (True, False):
        run = Simulator(
            _pair(3, attached),
            "maximal",
            "frictionless",
            "kkt",
            dt=1e-3,
            formulation_options={"integrator": integrator},
        ).run(steps=30)
        assert run.status == "ok"
        poses[attached] = (run.trajectory["position"], run.trajectory["rotation"])
    for a, w in zip(poses[True], poses[False]):
        assert np.abs(a - w).max() < 1e-9
