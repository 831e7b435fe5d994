"""The harness version (pyproject.toml says the same): recorded with every run."""

__version__ = "0.1.0"
