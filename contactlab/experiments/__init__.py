"""The experiment platform: comparisons, sweeps, plots, animations and loading results.

* :func:`compare` — one scenario, every fitting formulation × model × solver;
* :func:`sweep` — a TOML grid run in local processes or on a Dask cluster,
  resumable, aggregated per solver (success rate, shifted geometric mean,
  performance profiles);
* :func:`plot` — regenerate the plots of a run, comparison or sweep folder;
* :func:`render` — an animation (GIF/MP4) or an interactive HTML viewer of a run;
* :func:`load_results` — any results folder as pandas DataFrames and numpy arrays.
"""

from contactlab.experiments.compare import compare
from contactlab.experiments.loading import load_results
from contactlab.experiments.plots import plot
from contactlab.experiments.sweep import sweep

__all__ = ["compare", "load_results", "plot", "sweep"]
