"""hopper-bench: microbenchmarks for NVIDIA Hopper tensor-core and data-movement instructions.

From Python (notebooks): `harness.results(db, **filters)`, `harness.latest(db, **filters)` and
`harness.references(db)` return the documented views as typed pandas DataFrames (harness/db/frames.py);
`harness.compare(db, run, against)` is `bench compare`'s table (harness/analysis/compare.py).
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


def compare(db=None, run=None, against="paper", metric=None, disagreements=False, include_flagged=False,
            tolerance=None):
    """`bench compare` as a DataFrame: a run (default: the newest complete one) against "paper", "model"
    or another run's id, one row per case and metric with its verdict (harness/verdicts.py). The
    comparison fails where a row's verdict is in harness.verdicts.FAILING (`bench compare` exits 3):
    harness/analysis/compare.py comparison, whose Comparison also says that (`failed`)."""
    from harness.analysis.compare import comparison
    from harness.db.store import Store
    from harness.paper import DEFAULT_TOLERANCE

    with Store.open(db, read_only=True) as store:
        return comparison(store, run, against, metric, disagreements, include_flagged,
                          DEFAULT_TOLERANCE if tolerance is None else tolerance).frame
