"""The reproduced studies: a sweep specification each, plus the analysis that measures the fact.

A study lives in ``results/studies/<n>-<slug>/``: ``spec.toml`` (the grid),
and, after :func:`run_study`, ``README.md`` (expected outcome, what was
measured, the command that regenerates it), ``measurements.csv``, the
sweep's ``sweep.csv`` and ``aggregates.csv``, and ``plots/``.  The runs
themselves (trajectories) go to ``results/scratch/studies/`` (not
committed); re-running the command resumes from them.

``contactlab studies 1 4 --short`` runs the ``[short]`` versions of the
specifications (the demo).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from contactlab.errors import ConfigurationError
from contactlab.experiments import analyses as A
from contactlab.experiments import analyses_integrators as I8
from contactlab.experiments import analyses_joints as J
from contactlab.experiments import study9 as S9
from contactlab.experiments.grid import load_grid
from contactlab.experiments.sweep import run_grid

ROOT = Path("results") / "studies"
SCRATCH = Path("results") / "scratch" / "studies"
#: the repository holding this package (the reference studies are its ``results/studies``)
REPOSITORY = Path(__file__).resolve().parents[2]


def resolve_root(root: Path | str = ROOT) -> Path:
    """The folder of the study specifications that ``root`` names.

    The default, ``results/studies``, means the repository's reference studies,
    wherever the command runs from; any other folder is taken as given.

    Raises
    ------
    ConfigurationError
        When the folder does not exist (one line naming it and the fix).
    """
    given = Path(root)
    found = REPOSITORY / ROOT if given == ROOT else given
    if not found.is_dir():
        where = (
            f"the repository's {ROOT.as_posix()} ({found}), which an installed package "
            "does not include"
            if given == ROOT
            else repr(str(given))
        )
        raise ConfigurationError(
            f"no study specifications in {where}; run from a clone of the repository "
            "or pass --root FOLDER holding <n>-<name>/spec.toml"
        )
    return found


#: an analysis reads the sweep table and folder and writes plots into ``out/plots``;
#: it returns the measurements table and the markdown of its findings
Analysis = Callable[[pd.DataFrame, Path, Path], tuple[pd.DataFrame, str]]


@dataclass(frozen=True)
class Study:
    """A reproduced study: number, folder name, title, the expected outcome and its analysis."""

    number: int
    slug: str
    title: str
    expected: str
    analysis: Analysis | None
    #: a study that runs its own experiments instead of a sweep grid: ``(spec.toml, report
    #: folder, short) -> (measurements, findings)`` (study 9)
    custom: Callable[[Path, Path, bool], tuple[pd.DataFrame, str]] | None = None

    @property
    def folder(self) -> str:
        return f"{self.number}-{self.slug}"


STUDIES: dict[int, Study] = {
    s.number: s
    for s in (
        Study(1, "stick-slip", "Stick/slip threshold on an incline", A.EXPECTED_1, A.stick_slip),
        Study(
            2,
            "anitescu-hart-gap",
            "Anitescu–Hart separation while sliding",
            A.EXPECTED_2,
            A.anitescu_hart_gap,
        ),
        Study(
            3,
            "cone-discretization",
            "Friction-cone discretization",
            A.EXPECTED_3,
            A.cone_discretization,
        ),
        Study(
            4,
            "solver-comparison",
            "Solver comparison on stacks and piles",
            A.EXPECTED_4,
            A.solver_comparison,
        ),
        Study(5, "baumgarte", "Baumgarte stabilization of joint drift", J.EXPECTED_5, J.baumgarte),
        Study(
            6,
            "bisp-vs-staggered",
            "BISP versus Staggered Projections with joint friction",
            J.EXPECTED_6,
            J.bisp_vs_staggered,
        ),
        Study(
            7,
            "redmax-scenes",
            "REDMAX reference scenes, maximal versus reduced",
            J.EXPECTED_7,
            J.redmax_scenes,
        ),
        Study(
            8,
            "artisynth-integrators",
            "ArtiSynth integrators and soft constraints on friction scenes",
            I8.EXPECTED_8,
            I8.integrators,
        ),
        Study(
            9,
            "contact-models",
            "Contact models compared (Le Lidec et al., T-RO 2024)",
            S9.EXPECTED,
            None,
            S9.run,
        ),
    )
}


def get_study(number: int) -> Study:
    if number not in STUDIES:
        raise ConfigurationError(
            f"no study {number}; the reproduced studies are {', '.join(map(str, STUDIES))}"
        )
    return STUDIES[number]


def regenerate_command(
    number: int, short: bool = False, root: Path | str = ROOT, out: Path | str | None = None
) -> str:
    """The ``contactlab studies`` command line that writes the same report folder again.

    ``out`` is :func:`run_study`'s report folder; the command line's ``--out`` is the
    folder holding the study folders, so it is given only when ``out`` is named like
    the study's folder (as the command line names it).
    """
    command = f"contactlab studies {number}" + (" --short" if short else "")
    if Path(root) != ROOT:
        command += f" --root {Path(root).as_posix()}"
    if out is not None and Path(out).name == get_study(number).folder:
        command += f" --out {Path(out).parent.as_posix()}"
    return command


def run_study(
    number: int,
    root: Path | str = ROOT,
    out: Path | str | None = None,
    scratch: Path | str = SCRATCH,
    short: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    quiet: bool = False,
    fresh: bool = False,
) -> Path:
    """Run (or resume) study ``number`` and write its report; return the report folder.

    Parameters
    ----------
    root : folder holding ``<n>-<slug>/spec.toml``; the default means the
        repository's reference studies from any working directory (:func:`resolve_root`).
    out : report folder; default the study's folder under ``root``.
    scratch : where the sweep's runs are kept (``<scratch>/<n>-<slug>[-short]``).
    short : the ``[short]`` version of the specification.
    workers, scheduler, fresh : as for :func:`contactlab.experiments.sweep.sweep`.
    """
    study = get_study(number)
    folder = resolve_root(root)
    if study.custom is not None:
        return _run_custom(study, folder, root, out, short)
    spec = folder / study.folder / "spec.toml"
    if not spec.is_file():
        raise ConfigurationError(
            f"study {number} has no specification {str(spec)!r}; pass --root FOLDER holding "
            f"{study.folder}/spec.toml"
        )
    shown = (Path(root) / study.folder / "spec.toml").as_posix()  # as the command names it
    report = Path(out) if out is not None else folder / study.folder
    sweep_dir = Path(scratch) / (study.folder + ("-short" if short else ""))
    start = time.perf_counter()
    grid = load_grid(spec, sweep_dir, short=short)
    result = run_grid(grid, scheduler=scheduler, workers=workers, quiet=quiet, fresh=fresh)
    report.mkdir(parents=True, exist_ok=True)
    (report / "plots").mkdir(exist_ok=True)
    for name in ("sweep.csv", "aggregates.csv", "aggregates.md", "skipped.csv"):
        if (sweep_dir / name).exists():
            shutil.copyfile(sweep_dir / name, report / name)
    for png in (sweep_dir / "plots").glob("*.png"):
        shutil.copyfile(png, report / "plots" / png.name)
    assert study.analysis is not None
    measured, findings = study.analysis(result.table, sweep_dir, report)
    measured.to_csv(report / "measurements.csv", index=False)
    command = regenerate_command(number, short, root, out)
    incomplete = (
        f"\n**Incomplete:** {len(result.incomplete)} runs did not finish; run the command "
        "again to complete them.\n"
        if result.incomplete
        else ""
    )
    (report / "README.md").write_text(
        f"# Study {number}: {study.title}\n\n"
        f"Regenerate: `{command}` (specification: `{shown}`"
        f"{', short version' if short else ''}). "
        f"{len(result.table)} runs, {len(grid.skipped)} combinations that do not fit "
        f"(`skipped.csv`); this invocation took {time.perf_counter() - start:.0f} s on a "
        "2-core machine (runs already on disk are reused).\n"
        f"{incomplete}\n"
        f"## Expected\n\n{study.expected}\n\n## Measured\n\n{findings}\n"
    )
    return report


def _run_custom(
    study: Study, folder: Path, root: Path | str, out: Path | str | None, short: bool
) -> Path:
    """Run a study with its own experiments (no sweep grid) and write its report."""
    assert study.custom is not None
    report = Path(out) if out is not None else folder / study.folder
    spec = folder / study.folder / "spec.toml"
    if not spec.is_file():
        raise ConfigurationError(
            f"study {study.number} has no specification {str(spec)!r}; pass --root FOLDER "
            f"holding {study.folder}/spec.toml"
        )
    report.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured, findings = study.custom(spec, report, short)
    measured.to_csv(report / "measurements.csv", index=False)
    command = regenerate_command(study.number, short, root, out)
    (report / "README.md").write_text(
        f"# Study {study.number}: {study.title}\n\n"
        f"Regenerate: `{command}` (specification: "
        f"`{(Path(root) / study.folder / 'spec.toml').as_posix()}`"
        f"{', short version' if short else ''}); the experiments are defined in "
        "`contactlab/experiments/study9.py` (docs/study-9.md). "
        f"{len(measured)} rows; this invocation took {time.perf_counter() - start:.0f} s on a "
        "2-core machine shared with other work.\n\n"
        f"## Expected\n\n{study.expected}\n\n## Measured\n\n{findings}\n"
    )
    return report


def run_studies(numbers: Sequence[int], **kwargs: object) -> list[Path]:
    """Run several studies in turn (see :func:`run_study`)."""
    return [run_study(n, **kwargs) for n in numbers]  # type: ignore[arg-type]
