"""Animations of a run: GIF (Pillow), MP4 (ffmpeg, when installed) or an HTML viewer.

The shapes come from rebuilding the scene from ``summary.json`` (scenario and
parameters); body poses from ``trajectory.npz``.  Bodies are drawn as
wireframes (:mod:`contactlab.experiments.wireframe`) in an orthographic
projection seen from azimuth/elevation angles, ground planes as grids.  With
``contacts=True`` the contacts of every drawn frame are recomputed as the
simulator finds them (:func:`contactlab.simulator.scene_contacts`: the pairs
a scene never lets collide, such as bodies joined directly, are left out) and
drawn as points with their normals (the results folder does not store
impulses, so forces are not drawn).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.experiments.loading import load_run_folder
from contactlab.experiments.wireframe import SceneWireframe, contact_points, scene_wireframe
from contactlab.results import RunData, atomic_file, check_name_length, check_writable
from contactlab.scene import Scene

Array = NDArray[np.float64]
FORMATS = (".gif", ".mp4", ".html")


@dataclass(frozen=True)
class Camera:
    """Orthographic camera looking at the scene from ``azimuth``/``elevation`` [deg] (z up)."""

    azimuth: float = -60.0
    elevation: float = 25.0

    def axes(self) -> tuple[Array, Array, Array]:
        """Unit vectors ``right``, ``up`` and ``toward`` (from the scene to the camera)."""
        a, e = np.radians(self.azimuth), np.radians(self.elevation)
        toward = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
        right = np.array([-np.sin(a), np.cos(a), 0.0])
        return right, np.cross(toward, right), toward

    def project(self, points: Array) -> Array:
        """(..., 3) world points to (..., 2) screen coordinates [m]."""
        right, up, _ = self.axes()
        return np.stack([points @ right, points @ up], axis=-1)


def rebuild_scene(summary: dict[str, Any]) -> Scene:
    """The scene of a run, rebuilt from its scenario name and parameters."""
    from contactlab.scenario import get_scenario

    name = summary.get("scenario")
    if not name:
        raise ConfigurationError("summary.json names no scenario; the shapes cannot be rebuilt")
    return get_scenario(str(name)).build(**dict(summary.get("parameters") or {}))


def frame_indices(t: Array, fps: float, max_frames: int) -> NDArray[np.int64]:
    """Trajectory rows to draw: real time at ``fps`` frames per second, at most ``max_frames``."""
    if t.size == 0:
        raise ConfigurationError("the run has no trajectory frames to render")
    if not (fps > 0 and max_frames >= 1):
        raise ConfigurationError(f"fps must be > 0 and max_frames >= 1, got {fps}, {max_frames}")
    n = max(1, min(max_frames, int(np.floor((t[-1] - t[0]) * fps + 1e-9)) + 1))
    targets = np.linspace(t[0], t[-1], n)
    right = np.clip(np.searchsorted(t, targets), 1, max(t.size - 1, 1))
    left = right - 1
    nearest = np.where(
        np.abs(t[left] - targets) <= np.abs(t[np.minimum(right, t.size - 1)] - targets), left, right
    )
    return np.unique(np.clip(nearest, 0, t.size - 1))


def _limits(
    wire: SceneWireframe, run: RunData, rows: NDArray[np.int64], camera: Camera
) -> tuple[Array, Array]:
    pos, rot = run.trajectory["position"], run.trajectory["rotation"]
    pts = [camera.project(wire.static.reshape(-1, 3))] if wire.static.size else []
    for k in rows[:: max(1, len(rows) // 20)]:
        pts += [camera.project(s.reshape(-1, 3)) for s in wire.posed(pos[k], rot[k]) if s.size]
    pts.append(camera.project(pos[rows].reshape(-1, 3)))
    allp = np.concatenate(pts)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    pad = 0.05 * float(np.max(hi - lo)) + 1e-3
    return lo - pad, hi + pad


def draw_frames(
    run: RunData,
    scene: Scene,
    camera: Camera,
    rows: NDArray[np.int64],
    contacts: bool = False,
    size_px: int = 480,
) -> list[NDArray[np.uint8]]:
    """RGB images (h, w, 3) of the trajectory rows ``rows``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure

    pos, rot, t = (run.trajectory[k] for k in ("position", "rotation", "t"))
    wire = scene_wireframe(scene, pos[rows])
    lo, hi = _limits(wire, run, rows, camera)
    aspect = float((hi[1] - lo[1]) / (hi[0] - lo[0]))
    width = size_px / 100
    height = float(np.clip(width * aspect, 2.0, 2.0 * width))
    colors = [f"C{i % 10}" for i in range(len(wire.bodies))]
    title = f"{run.summary.get('scenario', '')}  {run.summary.get('model', '')}"
    images = []
    for k in rows:
        fig = Figure(figsize=(width, height), dpi=100)
        canvas = FigureCanvasAgg(fig)
        ax = fig.add_axes((0, 0, 1, 1))
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal", adjustable="box")
        ax.axis("off")
        if wire.static.size:
            ax.add_collection(LineCollection(_lines(camera, wire.static), colors="0.75", lw=0.6))
        posed = wire.posed(pos[k], rot[k])
        for segs, color in zip(posed, colors):
            if segs.size:
                ax.add_collection(LineCollection(_lines(camera, segs), colors=color, lw=1.2))
        no_shape = [i for i, s in enumerate(posed) if not s.size]
        if no_shape:
            xy = camera.project(pos[k][no_shape])
            ax.scatter(xy[:, 0], xy[:, 1], s=12, c=[colors[i] for i in no_shape])
        if contacts:
            points, normals = contact_points(scene, pos[k], rot[k])
            if len(points):
                xy = camera.project(points)
                tip = camera.project(points + 0.05 * float(np.max(hi - lo)) * normals)
                ax.add_collection(
                    LineCollection(list(np.stack([xy, tip], 1)), colors="red", lw=0.8)
                )
                ax.scatter(xy[:, 0], xy[:, 1], s=8, c="red")
        ax.text(
            0.02, 0.97, f"{title}   t = {t[k]:.3f} s", transform=ax.transAxes, va="top", fontsize=8
        )
        canvas.draw()
        images.append(np.asarray(canvas.buffer_rgba())[..., :3].copy())
    return images


def _lines(camera: Camera, segments: Array) -> list[Array]:
    """Projected (k, 2, 3) segments as the list of (2, 2) polylines matplotlib takes."""
    return list(camera.project(segments))


def ffmpeg_path() -> str | None:
    """The ffmpeg executable on PATH or shipped by ``imageio-ffmpeg``, or ``None``."""
    found = shutil.which("ffmpeg")
    if found:
        return found
    try:
        import imageio_ffmpeg

        return str(imageio_ffmpeg.get_ffmpeg_exe())
    except (ImportError, RuntimeError):
        return None


def require_ffmpeg() -> str:
    """The ffmpeg executable, or one :class:`ConfigurationError` line saying how to get one."""
    exe = ffmpeg_path()
    if exe is None:
        raise ConfigurationError(
            "writing MP4 needs ffmpeg, which is not installed; install ffmpeg "
            "(or pip install imageio-ffmpeg) or ask for a .gif"
        )
    return exe


def _ffmpeg_reason(stderr: bytes) -> str:
    """The last non-empty line ffmpeg printed (its own error), or a generic reason."""
    lines = [ln.strip() for ln in stderr.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def _write_video(images: list[NDArray[np.uint8]], out: Path, fps: float, name: Path) -> None:
    """Encode ``images`` into the file ``out``; ``name`` is the destination named in errors."""
    if out.suffix == ".gif":
        from PIL import Image

        frames = [Image.fromarray(im) for im in images]
        frames[0].save(
            out, save_all=True, append_images=frames[1:], duration=int(round(1000 / fps)), loop=0
        )
        return
    exe = require_ffmpeg()
    import subprocess

    h, w = images[0].shape[:2]
    h2, w2 = h - h % 2, w - w % 2  # H.264 wants even sizes
    cmd = [
        exe,
        "-y",
        "-loglevel",
        "error",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
        f"{w2}x{h2}",
        "-r",
        f"{fps:g}",
        "-i",
        "-",
        "-pix_fmt",
        "yuv420p",
        str(out),
    ]
    data = b"".join(np.ascontiguousarray(im[:h2, :w2]).tobytes() for im in images)
    fix = "install a working ffmpeg or ask for a .gif"
    try:
        done = subprocess.run(
            cmd, input=data, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False
        )
    except OSError as err:  # vanished, not executable, or not a program
        raise ConfigurationError(
            f"ffmpeg {exe!r} could not be started ({err.strerror or err}) while writing "
            f"{str(name)!r}; {fix}; nothing was written there"
        ) from err
    if done.returncode != 0:
        raise ConfigurationError(
            f"ffmpeg failed (exit status {done.returncode}: {_ffmpeg_reason(done.stderr)}) "
            f"while writing {str(name)!r}; {fix}; nothing was written there"
        )


#: largest image width [px] (a 4096 x 3072 RGBA frame is 50 MB; 150 of them 7.5 GB)
MAX_SIZE_PX = 4096
#: smallest image width [px] that still shows a scene
MIN_SIZE_PX = 16
#: largest number of frames
MAX_FRAMES = 10_000


def check_view(fps: float, max_frames: int, azimuth: float, elevation: float, size_px: int) -> None:
    """Refuse options that cannot make an animation, naming the option and its range."""
    import numpy as np

    if not (isinstance(size_px, int) and MIN_SIZE_PX <= size_px <= MAX_SIZE_PX):
        raise ConfigurationError(
            f"--size must be an image width from {MIN_SIZE_PX} to {MAX_SIZE_PX} px, got {size_px}"
        )
    if not (isinstance(max_frames, int) and 1 <= max_frames <= MAX_FRAMES):
        raise ConfigurationError(f"--max-frames must be from 1 to {MAX_FRAMES}, got {max_frames}")
    if not (np.isfinite(fps) and fps > 0):
        raise ConfigurationError(f"--fps must be a positive number, got {fps}")
    for name, value in (("--azimuth", azimuth), ("--elevation", elevation)):
        if not np.isfinite(value):
            raise ConfigurationError(f"{name} must be a finite angle in degrees, got {value}")


def render(
    run_dir: Path | str,
    out: Path | str,
    fps: float = 25.0,
    max_frames: int = 150,
    contacts: bool = False,
    azimuth: float = -60.0,
    elevation: float = 25.0,
    size_px: int = 480,
) -> Path:
    """Animate the run in ``run_dir`` into ``out`` (``.gif``, ``.mp4`` or ``.html``).

    Parameters
    ----------
    fps : frames per second of real (simulated) time.
    max_frames : cap on the frames drawn (the animation then runs faster than real time).
    contacts : recompute and draw contact points and normals.
    azimuth, elevation : view direction [deg].
    size_px : image width [px].
    """
    check_view(fps, max_frames, azimuth, elevation, size_px)
    out = check_name_length(out)
    if out.suffix not in FORMATS:
        raise ConfigurationError(
            f"cannot tell the animation format of {str(out)!r}; end it with {', '.join(FORMATS)}"
        )
    check_writable(out.parent, "--out folder")
    if out.suffix == ".mp4":
        require_ffmpeg()  # before any work
    if out.is_dir():
        raise ConfigurationError(f"--out {str(out)!r} is a folder; name the animation file")
    run = load_run_folder(run_dir)
    if not run.trajectory:
        raise ConfigurationError(f"{str(run_dir)!r} holds no trajectory.npz (a failed run?)")
    scene = rebuild_scene(run.summary)
    rows = frame_indices(run.trajectory["t"], fps, max_frames)
    with atomic_file(out) as tmp:
        if out.suffix == ".html":
            from contactlab.experiments.viewer import write_viewer

            write_viewer(run, scene, rows, tmp, contacts=contacts)
        else:
            images = draw_frames(run, scene, Camera(azimuth, elevation), rows, contacts, size_px)
            _write_video(images, tmp, fps, out)
    return out
