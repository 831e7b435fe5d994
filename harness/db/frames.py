"""The documented views as pandas DataFrames, for notebooks: `harness.results(db, **filters)`,
`harness.latest(db, **filters)` and `harness.references(db)`. The database is opened read-only.

The frames are typed for pandas, not as SQL returns them: flags are booleans (nullable), timestamps
are datetimes, integers that may be missing are Int64, `params` and `launch` are dicts (with
`launch_key`, the canonical JSON, to group by; `layout_key`, the case's layout as its id spells it). Three
columns are renamed so that no column hides a DataFrame attribute: the view's `sparse`, `min` and
`max` are `is_sparse`, `sample_min` and `sample_max` (filters accept either name).
"""

from __future__ import annotations

import json

import pandas as pd
from sqlalchemy import bindparam, text

from harness.db.store import Store
from harness.errors import SpecError


RENAMED = {"sparse": "is_sparse", "min": "sample_min", "max": "sample_max"}  # view column -> frame column
FLAGS = ("sparse", "valid", "throttled", "power_capped", "flagged", "emulated")
MAYBE_MISSING_INTEGERS = ("m", "n", "k", "warpgroups", "ilp", "other_processes", "sm_count", "n_samples")
TIMESTAMPS = ("run_started_at",)


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for column in FLAGS:
        if column in frame:
            frame[column] = _flags(frame[column])
    for column in MAYBE_MISSING_INTEGERS:
        if column in frame:
            frame[column] = pd.to_numeric(frame[column]).astype("Int64")
    for column in TIMESTAMPS:
        if column in frame:
            frame[column] = pd.to_datetime(frame[column])
    if "launch" in frame:
        frame["launch_key"] = frame["launch"].fillna("")
        frame["launch"] = _dicts(frame["launch_key"])
    if "params" in frame:
        frame["params"] = _dicts(frame["params"].fillna(""))
        # the layout as the case id spells it (e.g. "MN", "K-SW128"): a key to group and filter by,
        # beside `layout`, its description; None for the other families (docs/database.md, `layout`)
        frame["layout_key"] = [p.get("layout") for p in frame["params"]]
    return frame.rename(columns=RENAMED)


def _flags(column: pd.Series) -> pd.Series:
    """A column of SQL flags as booleans: missing (None or NaN) stays missing, any other value is its truth
    (Python's bool(), as NumPy casts objects to bool)."""
    missing = column.isna().to_numpy()
    values = column.to_numpy(dtype=object).copy()
    values[missing] = False
    array = pd.arrays.BooleanArray(values.astype(bool), missing)
    return pd.Series(array, index=column.index, name=column.name)


def _dicts(texts: pd.Series) -> list:
    """Each JSON text parsed, {} for an empty one: every row its own object. A text that many rows share is
    parsed once; the rows get copies where the parsed value is a dict of plain values (a shallow copy is then
    a whole one), else each row parses it again."""
    texts = texts.tolist()
    parsed = {}
    for text in dict.fromkeys(texts):
        value = json.loads(text) if text else {}
        flat = isinstance(value, dict) and not any(isinstance(v, (dict, list)) for v in value.values())
        parsed[text] = value if flat else None
    return [dict(value) if (value := parsed[text]) is not None else (json.loads(text) if text else {})
            for text in texts]


SQL_INTEGER = (-2 ** 63, 2 ** 63 - 1)  # what a filter's integer can be (SQLite's and PostgreSQL's BIGINT)


def _filter_value(column: str, value):
    """A filter's value as SQL can compare it, or a SpecError naming the column."""
    if value is None or isinstance(value, (str, bool, float)):
        return value
    if isinstance(value, int):
        if not SQL_INTEGER[0] <= value <= SQL_INTEGER[1]:
            raise SpecError(f"filter {column}={value}: integers are 64-bit ({SQL_INTEGER[0]}..{SQL_INTEGER[1]})")
        return value
    raise SpecError(f"filter {column}: a {type(value).__name__} is not a value to compare with "
                    "(give a string, a number, a boolean, None, or a list of them)")


def _view(db, view: str, filters: dict) -> pd.DataFrame:
    back = {frame_name: view_name for view_name, frame_name in RENAMED.items()}
    filters = {back.get(column, column): wanted for column, wanted in filters.items()}
    for column, wanted in filters.items():
        for value in (wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]):
            _filter_value(column, value)
    store = db if isinstance(db, Store) else Store.open(db, read_only=True)
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
            # plain tuples: pandas builds a frame of them in half the time it takes over SQLAlchemy's rows
            return pd.DataFrame([tuple(row) for row in conn.execute(query, params).fetchall()], columns=columns)
    finally:
        if store is not db:
            store.close()


def results(db: "str | Store | None" = None, **filters) -> pd.DataFrame:
    """The `results` view (one row per measurement), typed (module docstring), filtered by column: a
    value (equal), a list or tuple (any of them) or None (NULL). `db`: a path or URL; default
    $HOPPER_BENCH_DB, else ./bench.db, else the shipped ./results.db.

        harness.results("results.db", metric="sm_throughput", gpu_name=["NVIDIA H200"])
    """
    return _typed(_view(db, "results", filters))


def latest(db: str | None = None, **filters) -> pd.DataFrame:
    """Valid measurements only, and of each GPU, case, metric and launch the one of the newest run
    that has it (a case appears in up to 10 runs of the shipped database): what the GPU does today.

        harness.latest("results.db", metric="issue_interval_cycles", dtype_a="f16")
    """
    frame = results(db, **{"valid": True, **filters})
    frame = frame[frame.valid.fillna(False)]
    keys = ["gpu_name", "case_id", "metric", "launch_key"]
    frame = frame.sort_values(["run_started_at", "run_id"], kind="stable")
    return frame.groupby(keys, sort=False, dropna=False).tail(1).sort_values(keys, kind="stable").reset_index(drop=True)


def references(db: str | None = None, **filters) -> pd.DataFrame:
    """The `reference_values` view: the published figures mapped to our case ids and metrics, typed as
    results() is (module docstring): m, n and k Int64, `is_sparse` a boolean, `launch` a dict beside
    its `launch_key`."""
    return _typed(_view(db, "reference_values", filters))
