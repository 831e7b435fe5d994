"""Crash isolation, driven by the simulated GPU (HOPPER_BENCH_BACKEND=fake): the same worker,
watchdog and restart machinery that the real GPU uses (tests/gpu/test_faults.py runs it there)."""

import pytest

from harness.errors import DeviceError, SpecError
from harness.orchestration.run import execute, plan
from harness.db.store import Store
from harness.orchestration.worker import Worker


@pytest.fixture
def fake_backend(monkeypatch, shared_cache):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")


def test_faulting_probes_are_stored_and_the_run_goes_on(tmp_path, fake_backend):
    run_plan = plan("faults", None)
    db = str(tmp_path / "r.db")
    with Worker(0, watchdog_s=3) as worker:
        worker.start()
        outcome = execute(run_plan, db, worker)
        assert worker.stats.faults == 3 and worker.stats.started == 4  # one fresh worker after each fault
    assert outcome.status == "complete" and len(outcome.results) == len(run_plan.cases) == 15
    status = {r.case.case_id: r.status for r in outcome.results}
    assert {k for k, v in status.items() if v == "fault"} == {c.case_id for c in run_plan.cases if c.fault}
    stored = Store.open(db).query("SELECT DISTINCT case_id, status, error FROM results WHERE run_id = 1")
    errors = dict(zip(stored.case_id, stored.error))
    assert (stored.status == "valid").sum() == 12 and (stored.status == "fault").sum() == 3
    assert "CUDA error" in errors["wgmma.mma_async.m64n16k16.f32.f16.f16.SS+trap"]
    assert "killed by SIGSEGV" in errors["wgmma.mma_async.m64n256k16.f32.f16.f16.SS+oob"]
    assert "no result within the 3 s watchdog" in errors["wgmma.mma_async.m64n64k16.f32.f16.f16.RS+hang"]
    # the case measured right after each fault is valid: the fresh worker works
    order = [c.case_id for c in run_plan.cases]
    for faulted in (c for c in run_plan.cases if c.fault):
        assert status[order[order.index(faulted.case_id) + 1]] == "valid"


def test_a_worker_that_cannot_open_the_gpu_is_a_device_error(monkeypatch):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "cuda")  # this machine has no GPU
    with pytest.raises(DeviceError, match="GPU"), Worker(0) as worker:
        worker.start()


def test_a_bad_backend_or_watchdog_is_refused(monkeypatch):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "quantum")
    with pytest.raises(SpecError, match="HOPPER_BENCH_BACKEND='quantum' is not valid: expected one of cuda, fake"):
        Worker(0)
    with pytest.raises(SpecError, match="watchdog must be positive"):
        Worker(0, backend="fake", watchdog_s=0)
