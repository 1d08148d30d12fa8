"""Files in place of scenario names: a URDF, an MJCF file or ``file.py:function``.

Facts: a floating URDF model raised by ``height`` starts exactly that much higher and, with
no ground, falls as a free body (the centre of mass follows the semi-implicit Euler
recursion of free fall exactly); with ``ground`` it comes to rest on the plane z = 0; a
Python function building a registered scene gives that scene's run; the command line runs
files like scenarios and names a missing file or function in one line.
"""

from __future__ import annotations

import numpy as np
import pytest

from contactlab import cli
from contactlab.runspec import simulate
from contactlab.scenario import get_scenario

ROBOT = """<?xml version="1.0" encoding="utf-8"?>
<robot name="hopper">
  <link name="torso">
    <inertial><mass value="2.0"/>
      <inertia ixx="0.02" iyy="0.03" izz="0.04" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><geometry><box size="0.3 0.2 0.1"/></geometry></collision>
  </link>
  <link name="leg">
    <inertial><origin xyz="0 0 -0.1"/><mass value="0.5"/>
      <inertia ixx="0.002" iyy="0.002" izz="0.0005" ixy="0" ixz="0" iyz="0"/></inertial>
    <collision><origin xyz="0 0 -0.1"/><geometry><box size="0.05 0.05 0.2"/></geometry>
    </collision>
  </link>
  <joint name="hip" type="revolute">
    <parent link="torso"/><child link="leg"/><origin xyz="0 0 -0.05"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="10" velocity="5"/>
  </joint>
</robot>
"""


@pytest.fixture
def robot(tmp_path):
    path = tmp_path / "hopper.urdf"
    path.write_text(ROBOT, encoding="utf-8")
    return str(path)


def _com_height(run):
    masses = np.array([b.mass for b in run.scene.bodies])
    z = run.trajectory["position"][:, :, 2]
    return z @ masses / masses.sum()


def test_height_raises_the_model_and_it_falls_freely_without_ground(robot):
    low = get_scenario(robot).build(fixed_base=False)
    high = get_scenario(robot).build(fixed_base=False, height=0.75)
    h, n = 0.002, 50
    run = simulate(robot, {"fixed_base": False, "height": 0.75}, dt=h, steps=n)
    assert run.status == "ok"
    z = _com_height(run)
    # every body starts 0.75 m higher than in the model as written
    for lo, hi in zip(low.bodies, high.bodies, strict=True):
        assert lo.name == hi.name
    start = simulate(robot, {"fixed_base": False}, dt=h, steps=1).trajectory["position"][0]
    np.testing.assert_allclose(
        run.trajectory["position"][0] - start, [[0, 0, 0.75]] * 2, atol=1e-12
    )
    # free fall, semi-implicit Euler: z_k = z_0 - g h^2 k (k + 1) / 2 (no contact, no torque)
    k = np.arange(len(z)) - (len(z) - 1 - n)  # the trajectory's first row is the state 0
    g = 9.81
    np.testing.assert_allclose(z - z[0], -g * h**2 * k * (k + 1) / 2, atol=1e-9)


def test_ground_holds_the_fallen_model_on_the_plane(robot):
    run = simulate(
        robot, {"fixed_base": False, "height": 0.4, "ground": True}, dt=0.005, duration=1.5
    )
    assert run.status == "ok", run.message
    z = _com_height(run)
    # torso centre at the lift, the leg's centre 0.15 m below it: (2 * 0.4 + 0.5 * 0.25) / 2.5
    assert z[0] == pytest.approx(0.37, abs=1e-12)
    # at rest: the leg (0.2 m below the hip, 0.05 m under the torso) or the torso on the plane
    speed = np.abs(run.trajectory["twist"][-1]).max()
    assert speed < 1e-2
    lowest_centre = run.trajectory["position"][-1, :, 2].min()
    assert 0.0 < lowest_centre < 0.2
    assert run.steps["penetration"].iloc[-20:].max() < 5e-3


def test_a_python_function_gives_the_registered_scene(tmp_path):
    script = tmp_path / "scenes.py"
    script.write_text(
        "from contactlab.scenario import get_scenario\n"
        "def make_scene(n_links: int = 3):\n"
        "    '''A chain.  n_links : links.'''\n"
        "    return get_scenario('chain').build(n_links=n_links)\n"
    )
    mine = simulate(f"{script}:make_scene", {"n_links": 4}, dt=0.002, steps=40)
    ours = simulate(
        "chain",
        {"n_links": 4},
        dt=0.002,
        steps=40,
        formulation=mine.formulation,
        model=mine.model,
        solver=mine.solver,
    )
    np.testing.assert_allclose(mine.trajectory["position"], ours.trajectory["position"], atol=1e-12)


def test_command_line_runs_a_urdf_and_names_missing_files(robot, tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(
        [
            "run",
            robot,
            "--set",
            "fixed_base=false",
            "--set",
            "height=0.3",
            "--set",
            "ground=true",
            "--steps",
            "20",
            "--quiet",
            "--no-plots",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    assert (out / "summary.json").exists()
    capsys.readouterr()
    assert cli.main(["run", str(tmp_path / "absent.urdf"), "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.urdf" in err[0] and "not found" in err[0]
    script = tmp_path / "s.py"
    script.write_text("def other():\n    pass\n")
    assert cli.main(["run", f"{script}:make_scene", "--steps", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "make_scene" in err[0] and "other" in err[0]
