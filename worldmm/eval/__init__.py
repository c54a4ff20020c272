"""Benchmarks over the memory stack (`worldmm eval`): datasets, baselines and the runner."""
