"""Nothing stale: cached sweep runs are keyed by the specification and the code version.

The code version hashes the sources of the packages; here it is pointed at a
temporary copy of the contact-model sources, which the test edits as a
developer would, so that the fact is checked without touching the checkout.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import contactlab.models
from contactlab import codeversion
from contactlab.experiments.sweep import sweep

from .specs import write_sweep

SWEEP = {"name": "fall", "duration": 0.05, "dt": [0.01], "models": ["exp-qp"], "solvers": ["kkt"]}
FALLS = [{"name": "exp-fall", "params": {"height": [1.0, 2.0]}}]


@pytest.fixture
def model_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of ``contactlab/models`` that the code version is computed from."""
    copy = tmp_path / "src" / "models"
    shutil.copytree(Path(contactlab.models.__file__).parent, copy)
    monkeypatch.setattr(codeversion, "package_roots", lambda: (copy,))
    codeversion._cached.cache_clear()
    yield copy
    codeversion._cached.cache_clear()


def test_source_hash_sees_every_change_and_nothing_else(model_sources: Path) -> None:
    before = codeversion.source_hash((model_sources,))
    assert codeversion.source_hash((model_sources,)) == before  # deterministic
    path = model_sources / "box_friction.py"
    path.write_text(path.read_text() + "\n# a change\n")
    assert codeversion.source_hash((model_sources,)) != before


def test_a_sweep_reruns_its_runs_after_a_model_source_changes(
    tmp_path: Path, model_sources: Path, fake_scenarios: None, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = write_sweep(tmp_path / "fall.toml", SWEEP, FALLS)
    out = tmp_path / "sweep"
    first = sweep(spec, workers=1, out=out, quiet=True)
    assert (first.executed, first.reused) == (2, 0)
    assert first.reasons == {"not run yet": 2}

    again = sweep(spec, workers=1, out=out)
    assert (again.executed, again.reused) == (0, 2)
    version = codeversion.code_version()
    assert f"2 runs reused (same specification and code version {version}" in (
        capsys.readouterr().err
    )

    # a developer edits a model: the cached runs were made by other code
    path = model_sources / "frictionless.py"
    path.write_text(path.read_text() + "\n# a change to the model\n")
    codeversion._cached.cache_clear()  # the version is computed once per process: a new one
    changed = sweep(spec, workers=1, out=out)
    assert codeversion.code_version() != version
    assert (changed.executed, changed.reused) == (2, 0)
    assert changed.reasons == {"the code changed since it was made": 2}
    assert "2 to run (the code changed since it was made)" in capsys.readouterr().err
    assert len(changed.table) == 2

    # unchanged code again: reused; --fresh recomputes regardless
    assert sweep(spec, workers=1, out=out, quiet=True).reused == 2
    fresh = sweep(spec, workers=1, out=out, quiet=True, fresh=True)
    assert (fresh.executed, fresh.reused) == (2, 0)
