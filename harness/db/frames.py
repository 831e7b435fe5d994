"""The documented views as pandas DataFrames, for notebooks: `harness.results(db, **filters)` and
`harness.references(db)`. The database is opened read-only."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import bindparam, text

from harness.db.store import Store
from harness.errors import SpecError


def _view(db, view: str, filters: dict) -> pd.DataFrame:
    store = Store.open(db, read_only=True)
    try:
        with store.engine.connect() as conn:
            columns = list(conn.execute(text(f"SELECT * FROM {view} LIMIT 0")).keys())
            unknown = sorted(set(filters) - set(columns))
            if unknown:
                raise SpecError(f"no column {', '.join(map(repr, unknown))} in the {view} view: "
                                f"columns are {', '.join(columns)}")
            clauses, params, expanding = [], {}, []
            for i, (column, wanted) in enumerate(sorted(filters.items())):
                if isinstance(wanted, (list, tuple, set, frozenset)):
                    clauses.append(f"{column} IN :p{i}")
                    params[f"p{i}"] = list(wanted)
                    expanding.append(bindparam(f"p{i}", expanding=True))
                elif wanted is None:
                    clauses.append(f"{column} IS NULL")
                else:
                    clauses.append(f"{column} = :p{i}")
                    params[f"p{i}"] = wanted
            where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
            query = text(f"SELECT * FROM {view}{where}").bindparams(*expanding)
            return pd.DataFrame(conn.execute(query, params).fetchall(), columns=columns)
    finally:
        store.close()


def results(db: str | None = None, **filters) -> pd.DataFrame:
    """The `results` view (one row per measurement), filtered by column: a value (equal), a list or
    tuple (any of them) or None (NULL). `db`: a path or URL; default $HOPPER_BENCH_DB or ./results.db.

        harness.results("results.db", family="mma", metric="sm_throughput", gpu_name=["NVIDIA H200"])
    """
    return _view(db, "results", filters)


def references(db: str | None = None, **filters) -> pd.DataFrame:
    """The `reference_values` view: the published figures mapped to our case ids and metrics."""
    return _view(db, "reference_values", filters)
