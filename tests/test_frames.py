"""harness.results and harness.references: the views as DataFrames, filtered, read-only."""

import hashlib

import pytest

import harness
from helpers import make_db
from harness.errors import SpecError


def test_results_filtered_by_value_list_and_null(tmp_path):
    db = str(make_db(tmp_path / "r.db"))
    before = hashlib.sha256(open(db, "rb").read()).hexdigest()
    everything = harness.results(db)
    assert len(everything) == 6 and {"case_id", "metric", "value", "launch", "gpu_name"} <= set(everything.columns)
    intervals = harness.results(db, metric="issue_interval_cycles", valid=True)
    assert sorted(intervals.value) == [18.0, 128.0]
    some = harness.results(db, case_id=["wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "nope"], metric="issue_interval_cycles")
    assert some.value.tolist() == [18.0]
    assert len(harness.results(db, value=None)) == len(everything[everything.value.isna()])
    assert hashlib.sha256(open(db, "rb").read()).hexdigest() == before


def test_references_and_an_unknown_column(tmp_path):
    db = str(make_db(tmp_path / "r.db"))
    paper = harness.references(db, gpu_name="H800 PCIe", metric="issue_interval_cycles")
    assert len(paper) > 0 and set(paper.metric) == {"issue_interval_cycles"}
    with pytest.raises(SpecError, match="no column 'colour' in the results view: columns are measurement_id"):
        harness.results(db, colour="red")


@pytest.mark.parametrize("filters,message", [
    ({"family": 2 ** 63}, "filter family=9223372036854775808: integers are 64-bit"),  # found by Hypothesis
    ({"run_id": [1, -2 ** 63 - 1]}, "filter run_id=-9223372036854775809: integers are 64-bit"),
    ({"metric": {"a": 1}}, "filter metric: a dict is not a value to compare with"),
])
def test_a_filter_sql_cannot_hold_is_one_clear_error(tmp_path, filters, message):
    db = str(make_db(tmp_path / "r.db"))
    with pytest.raises(SpecError, match=message):
        harness.results(db, **filters)
    assert len(harness.results(db, run_id=2 ** 63 - 1)) == 0  # the largest integer SQL holds is a value


def test_the_readme_python_example_runs(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    db = str(make_db(tmp_path / "r.db"))
    namespace = {}
    exec(block.replace('"results.db"', repr(db)), namespace)
    assert "best" in namespace and "paper" in namespace


def test_the_frame_is_typed_for_pandas_and_hides_no_attribute(tmp_path):
    """Flags are booleans, the run's start a timestamp, launch and params dicts beside a launch_key to
    group by; no column is named like a DataFrame attribute (df.sparse, df.min and df.max stay pandas')."""
    import pandas as pd

    db = str(make_db(tmp_path / "r.db"))
    frame = harness.results(db)
    assert not {"sparse", "min", "max"} & set(frame.columns) and {"is_sparse", "sample_min", "sample_max"} <= set(frame)
    assert callable(frame.min) and callable(frame.max)
    for column in ("valid", "is_sparse", "flagged", "emulated"):
        assert frame[column].dtype == "boolean", column
    assert pd.api.types.is_datetime64_any_dtype(frame.run_started_at) and frame.n.dtype == "Int64"
    measured = frame[frame.value.notna()]
    assert all(isinstance(v, dict) for v in measured.launch) and measured.launch.iloc[0] == {"ilp": 1, "warpgroups": 1}
    assert measured.launch_key.iloc[0] == '{"ilp":1,"warpgroups":1}' and isinstance(measured.params.iloc[0], dict)
    assert len(harness.results(db, is_sparse=False)) == len(harness.results(db, sparse=False)) == len(frame)
    # the layout as a key: what the case id ends with for a layout case, the default layout's name else
    from harness.registry import parse_case_id

    for case_id, key in zip(frame.case_id, frame.layout_key):
        assert key == parse_case_id(case_id).params()["layout"]


def test_latest_keeps_the_newest_valid_run_of_each_gpu_and_case(tmp_path):
    """Three runs of one GPU: the newest that has a case's metric wins; an invalid measurement never does."""
    from helpers import fake_device, fake_result
    from harness.db.store import Store
    from harness.provenance import Provenance

    db = make_db(tmp_path / "r.db")  # run 1: m64n8k16 SS 18, m64n256k16 SS 128, one invalid case
    store = Store.open(str(db))
    prov = Provenance("bench run", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    second = store.start_run(fake_device(), prov, "wgmma", None)
    store.record_case(second, fake_result("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", 19.0))
    store.finish_run(second, "complete")
    third = store.start_run(fake_device(), prov, "wgmma", None)
    store.record_case(third, fake_result("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", error="validation failed"))
    store.finish_run(third, "complete")
    store.close()
    latest = harness.latest(str(db), metric="issue_interval_cycles")
    by_case = dict(zip(latest.case_id, zip(latest.run_id, latest.value)))
    assert by_case == {"wgmma.mma_async.m64n8k16.f32.f16.f16.SS": (second, 19.0),
                       "wgmma.mma_async.m64n256k16.f32.f16.f16.SS": (1, 128.0)}
    assert latest.valid.all()


def test_references_are_typed_like_results(tmp_path):
    """harness.references gave m, n, k and sparse as float64 (issue 35, item 11): the same typing as
    harness.results, so that the two frames join on n and is_sparse."""
    import pandas as pd

    db = str(make_db(tmp_path / "r.db"))
    paper = harness.references(db, gpu_name="H800 PCIe")
    assert len(paper) > 0
    for column in ("m", "n", "k"):
        assert str(paper[column].dtype) == "Int64", (column, paper[column].dtype)
    assert str(paper.is_sparse.dtype) == "boolean" and "sparse" not in paper
    assert pd.api.types.is_string_dtype(paper.launch_key) and all(isinstance(v, dict) for v in paper.launch)
    results = harness.results(db)
    assert paper.n.dtype == results.n.dtype and paper.is_sparse.dtype == results.is_sparse.dtype
