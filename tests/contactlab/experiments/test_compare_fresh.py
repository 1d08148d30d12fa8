"""``compare --force`` reuses unchanged runs of the comparison it replaces, ``--fresh``
recomputes them; the comparison's energy figure has an ``E(t) - E(0)`` panel."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from contactlab.experiments import compare

from . import fakes

ARGS = dict(models=["exp-qp"], set={"height": "3.0"}, dt=0.01, duration=0.15, quiet=True)


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    C = sys.modules["contactlab.experiments.compare"]  # the package exports the function
    made: list[str] = []
    original = C.execute

    def execute(spec, folder, plots=False):  # type: ignore[no-untyped-def]
        made.append(spec.solver)
        return original(spec, folder, plots=plots)

    monkeypatch.setattr(C, "execute", execute)
    return made


def _summaries(out: Path) -> dict[str, bytes]:
    return {p.parent.name: p.read_bytes() for p in sorted(out.glob("runs/*/summary.json"))}


def test_force_reuses_unchanged_runs_and_fresh_recomputes(
    tmp_path: Path, fake_scenarios: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    out = tmp_path / "cmp"
    made = _counting(monkeypatch)
    first = compare("exp-fall", "kkt,osqp", out=out, **ARGS)
    assert sorted(made) == ["kkt", "osqp"] and first.reused == 0
    before = _summaries(out)

    made.clear()
    again = compare("exp-fall", "kkt,osqp", out=out, force=True, **{**ARGS, "quiet": False})
    assert made == [] and again.reused == 2
    assert _summaries(out) == before  # the very runs, byte for byte
    assert "compare cmp: 2 runs reused (same specification and code version" in (
        capsys.readouterr().err
    )

    made.clear()
    fresh = compare("exp-fall", "kkt,osqp", out=out, force=True, fresh=True, **ARGS)
    assert sorted(made) == ["kkt", "osqp"] and fresh.reused == 0

    # another specification (a longer run) is never taken for the old one
    made.clear()
    longer = compare("exp-fall", "kkt,osqp", out=out, force=True, **{**ARGS, "duration": 0.2})
    assert sorted(made) == ["kkt", "osqp"] and longer.reused == 0
    assert (longer.table["steps"] == 20).all()


def test_comparison_energy_figure_has_the_energy_change_panel(
    tmp_path: Path, fake_scenarios: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from matplotlib.figure import Figure

    saved: dict[str, Figure] = {}
    original = Figure.savefig

    def savefig(self, path, *args, **kwargs):  # type: ignore[no-untyped-def]
        saved[Path(path).name] = self
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    compare("exp-fall", "kkt,osqp", out=tmp_path / "cmp", **ARGS)
    fig = saved["energy.png"]
    assert len(fig.axes) == 2 and fig.axes[1].get_ylabel() == "E(t) − E(0) [J]"
    lines = {line.get_label(): line for line in fig.axes[1].get_lines() if "/" in line.get_label()}
    assert sorted(lines) == ["exp-point/exp-qp/kkt", "exp-point/exp-qp/osqp"]
    # symplectic Euler free fall: E(t_n) - E(0) = -m g^2 h^2 n / 2 exactly (m = 1.5 kg)
    m, h = 1.5, 0.01
    for line in lines.values():
        n = np.rint(np.asarray(line.get_xdata()) / h)
        np.testing.assert_allclose(n, np.arange(1, 16))
        np.testing.assert_allclose(line.get_ydata(), -m * fakes.G**2 * h**2 * n / 2, rtol=1e-9)
