"""Benchmarks: ``python -m benchmarks.<name>``; results go to ``results/benchmarks/``."""
