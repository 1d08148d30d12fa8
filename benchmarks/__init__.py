"""Benchmarks: run one with ``python -m benchmarks.<name>``; results go to ``results/benchmarks/``."""
