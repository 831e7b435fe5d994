"""hopper-bench: microbenchmarks for NVIDIA Hopper tensor-core and data-movement instructions.

From Python (notebooks): `harness.results(db, **filters)`, `harness.latest(db, **filters)` and
`harness.references(db)` return the documented views as typed pandas DataFrames (harness/db/frames.py).
"""

from harness.version import __version__  # noqa: F401


def results(db=None, **filters):
    """The `results` view as a DataFrame: harness/db/frames.py results."""
    from harness.db.frames import results as view

    return view(db, **filters)


def latest(db=None, **filters):
    """The newest valid measurement of each GPU, case, metric and launch: harness/db/frames.py latest."""
    from harness.db.frames import latest as view

    return view(db, **filters)


def references(db=None, **filters):
    """The `reference_values` view as a DataFrame: harness/db/frames.py references."""
    from harness.db.frames import references as view

    return view(db, **filters)
