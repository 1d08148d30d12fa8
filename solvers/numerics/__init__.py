"""Compiled numerics of the frictional-contact problems, shared by problem types and backends.

:mod:`solvers.numerics.fc_local` holds the exact local solves and projections of one
contact; :mod:`solvers.numerics.fc_kernels` the sweeps over all contacts (the natural
map, products through a factor of ``W``, the Gauss--Seidel, APGD and ADMM loops);
:mod:`solvers.numerics.csr` the products of a CSR matrix given by its arrays.
:mod:`solvers.frictional` measures residuals with them and :mod:`solvers.backends`
solves with them; this package imports neither.
"""
