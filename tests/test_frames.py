"""harness.results and harness.references: the views as DataFrames, filtered, read-only."""

import hashlib

import pytest

import harness
from conftest import make_db
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


def test_the_readme_python_example_runs(tmp_path):
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    db = str(make_db(tmp_path / "r.db"))
    namespace = {}
    exec(block.replace('"results.db"', repr(db)), namespace)
    assert "best" in namespace and "paper" in namespace
