"""Benchmarks: ``python -m benchmarks.<name>``; results go to ``results/benchmarks/``.

What they share (the ``--out`` option, the clocks, the sentence on the machine, the writing
of a table and its report) is :mod:`benchmarks.harness`.
"""
