"""The compare, sweep, plot and render subcommands, called through ``contactlab.cli.main``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from contactlab.cli import main

from .test_sweep import write_spec


def test_compare_sweep_plot_render_commands(
    tmp_path: Path, fake_scenarios: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp"
    code = main(
        [
            "compare",
            "exp-fall",
            "--solvers",
            "kkt,pgs",
            "--models",
            "exp-qp",
            "--set",
            "height=1.5",
            "--duration",
            "0.05",
            "--out",
            str(out),
            "--quiet",
        ]
    )
    text = capsys.readouterr().out
    assert (
        code == 0
        and "1 combinations run (0 failed, 0 with unconverged steps), 1 do not fit" in text
    )
    assert "exp-point/exp-qp/pgs" in text and f"results: {out / 'comparison.md'}" in text
    table = pd.read_csv(out / "comparison.csv")
    assert table["solver"].tolist() == ["kkt"] and table["success"].all()

    spec = write_spec(tmp_path)
    spec.write_text(spec.read_text().replace("[0.01, 0.005]", "0.01").replace('"osqp", ', ""))
    assert main(["sweep", str(spec), "--workers", "1", "--quiet"]) == 0
    assert "2 runs made, 0 reused, 0 did not finish" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--workers", "1", "--quiet"]) == 0
    assert "0 runs made, 2 reused" in capsys.readouterr().out

    sweep_dir = tmp_path / "fall"
    (sweep_dir / "plots" / "performance_profile.png").unlink()
    assert main(["plot", str(sweep_dir)]) == 0
    assert (sweep_dir / "plots" / "performance_profile.png").exists()

    run_dir = out / "runs" / "exp-point-exp-qp-kkt"
    assert main(["plot", str(run_dir)]) == 0
    assert "energy.png" in capsys.readouterr().out
    assert main(["render", str(run_dir), "--out", str(tmp_path / "a.gif")]) == 0
    assert (tmp_path / "a.gif").stat().st_size > 0


def test_command_errors_are_one_line(
    tmp_path: Path, fake_scenarios: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["sweep", str(tmp_path / "missing.toml")]) == 2
    assert "missing.toml' does not exist" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[sweep]\nsolvers = ["kkt"]\nmodels = ["exp-qp"]\nspeed = 3\n'
        '[[scenarios]]\nname = "exp-fall"\n'
    )
    assert main(["sweep", str(bad)]) == 2
    assert "[sweep] has unknown keys ['speed']" in capsys.readouterr().err
    assert main(["plot", str(tmp_path)]) == 2
    assert "is not a results folder" in capsys.readouterr().err
