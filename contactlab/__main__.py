"""``python -m contactlab`` runs the command line (see :mod:`contactlab.cli`)."""

from contactlab.cli import main

raise SystemExit(main())
