"""Animations and the HTML viewer draw the recorded poses with the stated projection."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from contactlab.errors import ConfigurationError
from contactlab.experiments.compare import compare
from contactlab.experiments.loading import load_run_folder
from contactlab.experiments.render import Camera, frame_indices, rebuild_scene, render
from contactlab.experiments.wireframe import scene_wireframe, shape_segments
from contactlab.shapes import Box, Sphere


@pytest.fixture
def box_run(tmp_path: Path, fake_scenarios: None) -> Path:
    compare(
        "exp-fall",
        "kkt",
        models="exp-qp",
        set={"box": "true"},
        duration=0.2,
        out=tmp_path / "cmp",
        quiet=True,
    )
    return tmp_path / "cmp" / "runs" / "exp-point-exp-qp-kkt"


def test_wireframes_are_the_shapes() -> None:
    # a box has 12 edges of lengths 2a, 2b, 2c (four each), all corners at (+-a, +-b, +-c)
    segs = shape_segments(Box(half_extents=(0.1, 0.2, 0.3)))
    lengths = np.sort(np.linalg.norm(segs[:, 1] - segs[:, 0], axis=1))
    np.testing.assert_allclose(lengths, np.repeat([0.2, 0.4, 0.6], 4), atol=1e-15)
    np.testing.assert_allclose(np.abs(segs).reshape(-1, 3).max(axis=0), [0.1, 0.2, 0.3])
    # a sphere's circles lie on the sphere, centred where its pose puts it
    pose = np.eye(4)
    pose[:3, 3] = [1.0, 2.0, 3.0]
    pts = shape_segments(Sphere(radius=0.5, pose=pose)).reshape(-1, 3)
    np.testing.assert_allclose(np.linalg.norm(pts - [1.0, 2.0, 3.0], axis=1), 0.5, atol=1e-12)


def test_camera_projection_and_frames() -> None:
    right, up, toward = Camera(azimuth=0.0, elevation=0.0).axes()
    # looking from +x: screen x is world y, screen y is world z
    np.testing.assert_allclose([right, up, toward], np.eye(3)[[1, 2, 0]], atol=1e-15)
    t = np.linspace(0.0, 1.0, 1001)
    rows = frame_indices(t, fps=10, max_frames=100)
    np.testing.assert_array_equal(rows, np.arange(0, 1001, 100))
    assert len(frame_indices(t, fps=1000, max_frames=7)) == 7
    with pytest.raises(ConfigurationError, match="fps"):
        frame_indices(t, fps=0, max_frames=7)


def test_gif_has_one_frame_per_drawn_pose(box_run: Path, tmp_path: Path) -> None:
    from PIL import Image

    out = render(box_run, tmp_path / "fall.gif", fps=25, size_px=200)
    with Image.open(out) as gif:
        # 0.2 s at 25 frames per second: frames at t = 0, 0.04, ..., 0.2
        assert gif.n_frames == 6 and gif.size[0] == 200
    if shutil.which("ffmpeg") is None:
        with pytest.raises(ConfigurationError, match="needs ffmpeg"):
            render(box_run, tmp_path / "fall.mp4")
    with pytest.raises(ConfigurationError, match="end it with"):
        render(box_run, tmp_path / "fall.avi")


HARNESS = r"""
const fs = require("fs");
const page = fs.readFileSync(process.argv[2], "utf8");
const data = page.match(/<script id="data" type="application\/json">([\s\S]*?)<\/script>/)[1];
const code = page.match(/<script>\s*([\s\S]*?)<\/script>/)[1];
const segs = []; let pen = null;
const ctx = { clearRect() {}, beginPath() {}, stroke() {}, fillRect() {},
  moveTo(x, y) { pen = [x, y]; }, lineTo(x, y) { segs.push([pen, [x, y]]); } };
const el = { textContent: data, getContext: () => ctx, style: {} };
global.document = { getElementById: () => el };
global.window = { innerWidth: 800, innerHeight: 640 };
global.requestAnimationFrame = () => {};
new Function(code)();
console.log(JSON.stringify(segs));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_html_viewer_draws_the_first_frame(box_run: Path, tmp_path: Path) -> None:
    page = render(box_run, tmp_path / "view.html", fps=25)
    text = page.read_text()
    assert "http://" not in text and "https://" not in text  # self-contained
    script = tmp_path / "harness.js"
    script.write_text(HARNESS)
    drawn = np.array(
        json.loads(
            subprocess.run(
                ["node", str(script), str(page)], capture_output=True, text=True, check=True
            ).stdout
        )
    )
    # expected: the box at its first recorded pose, projected like Camera (az -60, el 25)
    run = load_run_folder(box_run)
    pos, rot = run.trajectory["position"], run.trajectory["rotation"]
    data = json.loads(text.split('type="application/json">')[1].split("</script>")[0])
    segs = scene_wireframe(rebuild_scene(run.summary), pos).posed(pos[0], rot[0])[0]
    W, H = 800, 600
    s = min(W, H) / data["extent"]
    xy = Camera().project(segs - np.array(data["center"]))
    expected = np.stack([W / 2 + s * xy[..., 0], H / 2 - s * xy[..., 1]], axis=-1)
    assert drawn.shape == (12, 2, 2)
    np.testing.assert_allclose(drawn, expected, atol=1e-2)  # payload rounded to 1e-5 m
