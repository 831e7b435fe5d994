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
    """No GPU is visible to the worker, on a machine without one and on a GPU machine alike: CUDA hides
    every device from a process whose CUDA_VISIBLE_DEVICES is empty (the spawned worker inherits it)."""
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "cuda")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(DeviceError, match="no CUDA GPU is visible"), Worker(0) as worker:
        worker.start()


def test_a_bad_backend_or_watchdog_is_refused(monkeypatch):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "quantum")
    with pytest.raises(SpecError, match="HOPPER_BENCH_BACKEND='quantum' is not valid: expected one of cuda, fake"):
        Worker(0)
    with pytest.raises(SpecError, match="watchdog must be positive"):
        Worker(0, backend="fake", watchdog_s=0)


def test_a_simulated_run_into_a_database_of_real_runs_is_refused_before_any_work(tmp_path, monkeypatch, cache_dir):
    """execute() asks first (the Python API, not only the CLI): nothing is compiled, nothing written;
    `bench run` says it in one line."""
    from click.testing import CliRunner

    from helpers import make_db
    from harness.cli import cli
    from harness.errors import StoreError
    from helpers import digest

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    db = make_db(tmp_path / "real.db")
    before = digest(db)
    with Worker(0) as worker:
        worker.start()
        with pytest.raises(StoreError, match="never mixed"):
            execute(plan("wgmma-quick", None), str(db), worker)
    assert not list(cache_dir.glob("*/*.cubin")) and digest(db) == before
    result = CliRunner().invoke(cli, ["run", "--suite", "wgmma-quick", "--db", str(db)])
    assert result.exit_code == 4 and result.output.strip().splitlines() == [
        f"error: {db} holds runs of real GPUs: simulated runs go into a database of their own (--db other.db); "
        "simulated and real numbers are never mixed"], result.output
    assert digest(db) == before


def test_the_run_stores_a_case_while_the_worker_measures_the_next(tmp_path, fake_backend, monkeypatch):
    """bench run overlaps its work: case i+1 is sent to the worker before case i is stored, and every
    case is still stored once, in the plan's order (the first is stored only after the second left)."""
    events = []
    original = Store.record_case
    monkeypatch.setattr(Store, "record_case",
                        lambda self, run_id, result: (events.append(("store", result.case.case_id)),
                                                      original(self, run_id, result))[1])
    run_plan = plan("wgmma-quick", None)
    ids = [c.case_id for c in run_plan.cases]
    with Worker(0) as worker:
        worker.start()
        sent = worker.submit
        monkeypatch.setattr(worker, "submit", lambda case, build, planned=None: (
            events.append(("send", case.case_id)), sent(case, build, planned))[1])
        execute(run_plan, str(tmp_path / "r.db"), worker)
    assert [i for kind, i in events if kind == "store"] == [i for kind, i in events if kind == "send"] == ids
    for i in range(len(ids) - 1):
        assert events.index(("send", ids[i + 1])) < events.index(("store", ids[i]))
    stored = Store.open(str(tmp_path / "r.db")).query("SELECT case_id, COUNT(*) AS n FROM results GROUP BY case_id")
    assert sorted(stored.case_id) == sorted(ids) and len(set(stored.n)) == 1


def test_a_submitted_case_must_be_collected_before_the_next(fake_backend):
    run_plan = plan("wgmma-quick", None)
    with Worker(0) as worker:
        worker.start()
        worker.submit(run_plan.cases[0], None)
        with pytest.raises(RuntimeError, match="not been collected"):
            worker.submit(run_plan.cases[1], None)
        assert worker.collect().case == run_plan.cases[0]


def test_a_probe_that_fails_to_compile_fails_the_run_and_keeps_the_cases_before_it(tmp_path, fake_backend,
                                                                                   monkeypatch):
    """The compiler works ahead of the measurement, so its error arrives mid-run: the run is marked
    failed with NVRTC's message and keeps what was measured before the broken probe."""
    import harness.orchestration.compiling as compiling
    from harness.build.render import ProbeSource
    from harness.errors import CompileError

    run_plan = plan("wgmma-quick", None)
    broken = run_plan.cases[2].case_id
    real = compiling.render  # the run renders each case from the family it looked up once
    monkeypatch.setattr(compiling, "render", lambda case, family: ProbeSource(
        case.case_id, 'extern "C" __global__ void k() { undeclared(); }') if case.case_id == broken else real(case, family))
    db = str(tmp_path / "r.db")
    with Worker(0) as worker, pytest.raises(CompileError, match="undeclared"):
        worker.start()
        execute(run_plan, db, worker)
    store = Store.open(db)
    run = store.query("SELECT status, error FROM runs")
    assert list(run.status) == ["failed"] and "undeclared" in run.error[0]
    assert sorted(store.query("SELECT DISTINCT case_id FROM results").case_id) == sorted(
        c.case_id for c in run_plan.cases[:2])


def test_a_first_probe_that_does_not_compile_leaves_no_run(tmp_path, fake_backend, monkeypatch):
    """The first case is compiled before the run row is written: nothing is stored for a plan whose
    first probe fails."""
    import harness.orchestration.compiling as compiling
    from harness.build.render import ProbeSource
    from harness.errors import CompileError

    run_plan = plan("wgmma-quick", None)
    first = run_plan.cases[0].case_id
    real = compiling.render  # the run renders each case from the family it looked up once
    monkeypatch.setattr(compiling, "render", lambda case, family: ProbeSource(
        case.case_id, 'extern "C" __global__ void k() { undeclared(); }') if case.case_id == first else real(case, family))
    db = str(tmp_path / "r.db")
    with Worker(0) as worker, pytest.raises(CompileError, match="undeclared"):
        worker.start()
        execute(run_plan, db, worker)
    assert len(Store.open(db).query("SELECT id FROM runs")) == 0


def test_the_thread_ahead_stops_when_closed_and_passes_errors_on():
    import itertools
    import threading
    import time

    from harness.orchestration.compiling import _Ahead

    taken = []

    def endless():
        for i in itertools.count():
            taken.append(i)
            yield i

    ahead = _Ahead(endless())
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    time.sleep(0.2)
    count = len(taken)
    time.sleep(0.2)
    assert len(taken) == count  # the thread has stopped filling
    assert not any(t.name == "bench-compile" and t.is_alive() for t in threading.enumerate())

    def failing():
        yield 1
        raise ValueError("broken")

    ahead = _Ahead(failing())
    assert next(ahead) == 1
    with pytest.raises(ValueError, match="broken"):
        next(ahead)
    with pytest.raises(ValueError, match="broken"):  # every later call ends the same way
        next(ahead)
