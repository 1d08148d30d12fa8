"""A self-contained interactive 3-D viewer of a run: one HTML file, no network.

The page embeds the scene's wireframe (:mod:`contactlab.experiments.wireframe`)
and the body poses of the drawn frames as JSON, and a short script draws them
on a ``<canvas>`` with the same orthographic camera as the animations: drag
to orbit, wheel to zoom, space or the button to play/pause, the slider to
scrub through time.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.experiments.wireframe import contact_points, scene_wireframe
from contactlab.results import RunData
from contactlab.scene import Scene

DIGITS = 5

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px sans-serif; margin: 0; background: #fafafa; }}
#bar {{ padding: 6px 10px; display: flex; gap: 10px; align-items: center; }}
#slider {{ flex: 1; }}
canvas {{ display: block; background: white; border-top: 1px solid #ddd; cursor: grab; }}
</style></head>
<body>
<div id="bar"><button id="play">pause</button><input id="slider" type="range" min="0" value="0">
<span id="time"></span><span>{title} — drag to orbit, wheel to zoom</span></div>
<canvas id="view"></canvas>
<script id="data" type="application/json">{data}</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const cv = document.getElementById("view"), ctx = cv.getContext("2d");
const slider = document.getElementById("slider"), label = document.getElementById("time");
const btn = document.getElementById("play");
const F = D.t.length, NB = D.bodies.length;
let az = -60, el = 25, zoom = 1, frame = 0, playing = true, last = null;
slider.max = F - 1;
const colors = ["#1f77b4","#ff7f0e","#2ca02c","#d62728","#9467bd","#8c564b","#e377c2",
                "#7f7f7f","#bcbd22","#17becf"];
function axes() {{
  const a = az * Math.PI / 180, e = el * Math.PI / 180;
  const tw = [Math.cos(e) * Math.cos(a), Math.cos(e) * Math.sin(a), Math.sin(e)];
  const r = [-Math.sin(a), Math.cos(a), 0];
  const u = [tw[1]*r[2]-tw[2]*r[1], tw[2]*r[0]-tw[0]*r[2], tw[0]*r[1]-tw[1]*r[0]];
  return [r, u];
}}
function resize() {{ cv.width = window.innerWidth; cv.height = window.innerHeight - 40; draw(); }}
function segs(flat, R, p, out) {{
  for (let i = 0; i < flat.length; i += 3) {{
    const x = flat[i], y = flat[i+1], z = flat[i+2];
    out.push(R ? [R[0]*x+R[1]*y+R[2]*z+p[0], R[3]*x+R[4]*y+R[5]*z+p[1],
                  R[6]*x+R[7]*y+R[8]*z+p[2]] : [x, y, z]);
  }}
  return out;
}}
function draw() {{
  const [r, u] = axes(), W = cv.width, H = cv.height;
  const s = zoom * Math.min(W, H) / D.extent;
  const c = D.center;
  const P = q => [W/2 + s*((q[0]-c[0])*r[0] + (q[1]-c[1])*r[1] + (q[2]-c[2])*r[2]),
                  H/2 - s*((q[0]-c[0])*u[0] + (q[1]-c[1])*u[1] + (q[2]-c[2])*u[2])];
  ctx.clearRect(0, 0, W, H);
  const line = (pts, color, w) => {{
    ctx.strokeStyle = color; ctx.lineWidth = w; ctx.beginPath();
    for (let i = 0; i + 1 < pts.length; i += 2) {{
      const a = P(pts[i]), b = P(pts[i+1]); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]);
    }}
    ctx.stroke();
  }};
  line(segs(D.static, null, null, []), "#bbb", 1);
  for (let b = 0; b < NB; b++) {{
    const k = frame * NB + b;
    const p = D.pos.slice(3*k, 3*k+3), R = D.rot.slice(9*k, 9*k+9);
    if (D.bodies[b].length) line(segs(D.bodies[b], R, p, []), colors[b % 10], 1.5);
    else {{ const q = P(p); ctx.fillStyle = colors[b % 10]; ctx.fillRect(q[0]-2, q[1]-2, 4, 4); }}
  }}
  if (D.contacts) {{
    const c = D.contacts[frame];
    for (let i = 0; i < c.length; i += 6) {{
      const a = [c[i], c[i+1], c[i+2]], n = [c[i+3], c[i+4], c[i+5]];
      const tip = [a[0]+0.05*D.extent*n[0], a[1]+0.05*D.extent*n[1], a[2]+0.05*D.extent*n[2]];
      line([a, tip], "red", 1); const q = P(a); ctx.fillStyle = "red";
      ctx.fillRect(q[0]-2, q[1]-2, 4, 4);
    }}
  }}
  label.textContent = "t = " + D.t[frame].toFixed(3) + " s";
  slider.value = frame;
}}
function tick(now) {{
  if (playing && last !== null) {{
    const dt = (now - last) / 1000;
    let target = D.t[frame] + dt * D.speed;
    if (target > D.t[F-1]) target = D.t[0];
    while (frame + 1 < F && D.t[frame+1] <= target) frame++;
    if (target < D.t[frame]) frame = 0;
    draw();
  }}
  last = now; requestAnimationFrame(tick);
}}
let drag = null;
cv.onmousedown = e => {{ drag = [e.clientX, e.clientY]; }};
window.onmouseup = () => {{ drag = null; }};
window.onmousemove = e => {{
  if (!drag) return;
  az -= (e.clientX - drag[0]) * 0.5;
  el = Math.max(-89, Math.min(89, el + (e.clientY - drag[1]) * 0.5));
  drag = [e.clientX, e.clientY]; draw();
}};
cv.onwheel = e => {{ e.preventDefault(); zoom *= Math.exp(-e.deltaY * 0.001); draw(); }};
slider.oninput = () => {{ frame = +slider.value; draw(); }};
btn.onclick = () => {{ playing = !playing; btn.textContent = playing ? "pause" : "play"; }};
window.onkeydown = e => {{ if (e.key === " ") {{ e.preventDefault(); btn.onclick(); }} }};
window.onresize = resize; resize(); requestAnimationFrame(tick);
</script></body></html>
"""


def _flat(values: NDArray[Any]) -> list[float]:
    return [float(x) for x in np.round(np.asarray(values, dtype=float).reshape(-1), DIGITS)]


def viewer_payload(
    run: RunData, scene: Scene, rows: NDArray[np.int64], contacts: bool = False
) -> dict[str, Any]:
    """The JSON data the page draws: wireframes, poses of ``rows``, optional contacts."""
    pos, rot, t = (run.trajectory[k] for k in ("position", "rotation", "t"))
    wire = scene_wireframe(scene, pos[rows])
    pts = pos[rows].reshape(-1, 3)
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    reach = max((float(np.abs(b).max()) for b in wire.bodies if b.size), default=0.2)
    data: dict[str, Any] = {
        "t": _flat(t[rows]),
        "bodies": [_flat(b) for b in wire.bodies],
        "static": _flat(wire.static),
        "pos": _flat(pos[rows]),
        "rot": _flat(rot[rows]),
        "center": _flat(0.5 * (lo + hi)),
        "extent": float(np.max(hi - lo) + 3 * reach),
        "speed": 1.0,
    }
    if contacts:
        data["contacts"] = [_flat(np.hstack(contact_points(scene, pos[k], rot[k]))) for k in rows]
    return data


def write_viewer(
    run: RunData, scene: Scene, rows: NDArray[np.int64], out: Path, contacts: bool = False
) -> Path:
    """Write the viewer page for ``rows`` of ``run`` to ``out``."""
    data = json.dumps(viewer_payload(run, scene, rows, contacts), separators=(",", ":"))
    title = html.escape(
        " / ".join(str(run.summary.get(k, "")) for k in ("scenario", "model", "solver"))
    )
    # "</" would end the script element early; JSON allows the escaped form
    out.write_text(_PAGE.format(title=title, data=data.replace("</", "<\\/")))
    return out
