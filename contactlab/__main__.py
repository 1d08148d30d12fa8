"""``python -m contactlab`` runs the command line (see :mod:`contactlab.cli`)."""

from contactlab.launch import run

run()
