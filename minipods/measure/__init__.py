"""Benchmarks: the parts of `python -m minipods.bench`, the one memory meter, the cost model."""
