"""Crash isolation on the real GPU: planted probes that trap, store out of bounds and hang sit
in the middle of a suite; each is stored as a fault, and every other case is measured."""

from __future__ import annotations

import pytest

from harness.orchestration.run import execute, plan
from harness.db.store import Store
from harness.orchestration.worker import Worker

pytestmark = pytest.mark.gpu

WATCHDOG_S = 20.0


def test_faulting_probes_do_not_end_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "cuda")
    run_plan = plan("faults", None)
    db = str(tmp_path / "faults.db")
    with Worker(0, watchdog_s=WATCHDOG_S) as worker:
        worker.start()
        outcome = execute(run_plan, db, worker)
        assert worker.stats.faults == 3 and worker.stats.started == 4
    assert outcome.status == "complete"
    stored = Store.open(db).query("SELECT r.case_id, r.status, MIN(r.error) AS error, "
                                  "MIN(m.telemetry_samples) AS telemetry FROM results r "
                                  "JOIN measurements m ON m.id = r.measurement_id GROUP BY r.case_id, r.status")
    by_case = {row.case_id: row for row in stored.itertuples()}
    assert len(by_case) == 15
    faults = {case: row.error for case, row in by_case.items() if row.status == "fault"}
    assert set(faults) == {c.case_id for c in run_plan.cases if c.fault}
    trap, oob, hang = (next(e for c, e in faults.items() if c.endswith(f"+{f}")) for f in ("trap", "oob", "hang"))
    assert "CUDA error" in trap and "CUDA error" in oob, (trap, oob)
    assert f"no result within the {WATCHDOG_S:g} s watchdog" in hang
    valid = [row for row in by_case.values() if row.status == "valid"]
    assert len(valid) == 12 and all(row.telemetry > 0 for row in valid)
