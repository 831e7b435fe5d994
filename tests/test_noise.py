"""Run against run on stored runs whose answer is known (the shipped results.db, read-only): the same
run against itself, two runs of one GPU and commit, an H100 against an H200 in cycles; and a planted
change that must be found (harness/analysis/run_verdicts.py against_run)."""

import shutil
from pathlib import Path

import pytest

from harness.analysis.run_verdicts import against_run
from harness.db.store import Store

SHIPPED = Path(__file__).resolve().parent.parent / "results.db"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    if not SHIPPED.exists():
        pytest.skip("no shipped results.db in this checkout")
    copy = tmp_path_factory.mktemp("shipped") / "results.db"
    shutil.copy(SHIPPED, copy)
    return Store.open(str(copy), read_only=True)


def differences(frame):
    return frame[frame.verdict != "same"]


def test_a_run_against_itself_is_the_same_everywhere(shipped):
    frame = against_run(shipped, 1, 1)
    assert len(frame) == 2790 and differences(frame).empty


@pytest.mark.parametrize("a,b", [(1, 2), (1, 4), (3, 5)])
def test_two_runs_of_one_gpu_and_commit_differ_only_by_noise(shipped, a, b):
    """Runs 1, 2, 4 (H100) and 3, 5 (H200): before the noise model, 442 of 2790 rows of 1 against 2
    were called faster or slower (whole-cycle latency steps, TFLOPS that follow the clock)."""
    frame = against_run(shipped, a, b, tolerance=0.0)
    assert differences(frame).empty, differences(frame)[["case_id", "metric", "compared", "noise"]].head()


def test_h100_against_h200_issue_intervals_are_the_same(shipped):
    frame = against_run(shipped, 7, 9, tolerance=0.0)  # wgmma, one commit, two GPUs
    intervals = frame[frame.metric == "issue_interval_cycles"]
    assert len(intervals) == 192 and differences(intervals).empty
    mma = against_run(shipped, 10, 12, tolerance=0.0)
    assert differences(mma[mma.metric.isin(["latency_cycles", "issue_interval_cycles"])]).empty


def test_a_real_change_is_found_and_the_tolerance_is_honoured(tmp_path):
    """A copy of the shipped runs with run 2's issue interval 5 % slower at one N and its latency 4 cycles
    longer at another (147 against 146 + 4: two whole-cycle steps are noise, three are not)."""
    path = tmp_path / "r.db"
    shutil.copy(SHIPPED, path)
    store = Store.open(str(path))
    m1 = store.query("SELECT measurement_id FROM results WHERE run_id = 2 AND metric = 'issue_interval_cycles' "
                     "AND case_id = 'wgmma.mma_async.m64n64k16.f32.f16.f16.SS'").measurement_id[0]
    m2 = store.query("SELECT measurement_id FROM results WHERE run_id = 2 AND metric = 'latency_added_cycles' "
                     "AND case_id = 'wgmma.mma_async.m64n256k16.f32.f16.f16.SS'").measurement_id[0]
    store.query(f"UPDATE measurement_rows SET value = value * 1.05 WHERE id = {m1}", write=True)
    store.query(f"UPDATE measurement_rows SET value = value + 4 WHERE id = {m2}", write=True)
    found = differences(against_run(store, 1, 2, tolerance=0.0))
    assert set(zip(found.case_id, found.metric, found.verdict)) == {
        ("wgmma.mma_async.m64n64k16.f32.f16.f16.SS", "issue_interval_cycles", "faster"),  # run 1 vs a slower 2
        ("wgmma.mma_async.m64n256k16.f32.f16.f16.SS", "latency_added_cycles", "faster")}
    assert differences(against_run(store, 1, 2, tolerance=0.06)).empty  # 5 % and 3/147: within 6 %


def test_rows_sort_by_number_not_text(shipped):
    ids = list(dict.fromkeys(against_run(shipped, 1, 1).case_id))
    assert ids.index("wgmma.mma_async.m64n8k16.f16.f16.f16.RS") < ids.index("wgmma.mma_async.m64n104k16.f16.f16.f16.RS")
