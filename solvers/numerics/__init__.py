"""Compiled numerics of the frictional-contact problems, shared by problem types and backends.

:mod:`solvers.numerics.fc_local` holds the exact local solves and projections of one
contact; :mod:`solvers.numerics.fc_kernels` the sweeps over all three-row contacts (the
natural map, products through a factor of ``W``, the Gauss--Seidel loop) and
:mod:`solvers.numerics.fc_wide` those over wide contacts (3 to 6 rows);
:mod:`solvers.numerics.fc_methods` the APGD and ADMM loops, written once over either
layout; :mod:`solvers.numerics.csr` the products of a CSR matrix given by its arrays and
the search of a sorted index range; :mod:`solvers.numerics.dense` the Cholesky factor and
solve of a small dense matrix.
:mod:`solvers.frictional` measures residuals with them and :mod:`solvers.backends`
solves with them; this package imports neither.
"""
