"""hopper-bench: microbenchmarks for NVIDIA Hopper tensor-core and data-movement instructions."""

__version__ = "0.1.0"
