"""SIGINT/SIGTERM sent to a real `bench run` process, then `bench run --resume`."""

import os
import signal
import time

import numpy as np
import pytest

from helpers import bench_process
from harness.db.store import Store
from harness.orchestration.fakegpu import synthetic_result
from harness.suites import suite_cases


def wait_for_measurements(db, at_least, process, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[0]
        if db.exists():
            try:
                n = Store.open(str(db)).query("SELECT COUNT(DISTINCT case_id) AS n FROM results").n[0]
                if n >= at_least:
                    return n
            except Exception:
                pass
        time.sleep(0.1)
    raise AssertionError("the run stored nothing in time")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_marks_the_run_interrupted_and_resume_measures_only_the_rest(tmp_path, shared_cache, sig):
    db = tmp_path / "r.db"
    env = {"HOPPER_BENCH_BACKEND": "fake", "HOPPER_BENCH_FAKE_DELAY": "0.3", "HOPPER_BENCH_CACHE": str(shared_cache)}
    process = bench_process("run", "--suite", "wgmma-quick", "--db", str(db), env=env)
    wait_for_measurements(db, 3, process)
    process.send_signal(sig)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert "Traceback" not in output and "measure the rest with `bench run --resume 1`" in output
    store = Store.open(str(db))
    run = store.query("SELECT status, error, finished_at FROM runs WHERE id = 1")
    assert run.status[0] == "interrupted" and run.finished_at[0] is not None
    kept = store.measured_case_ids(1)
    assert 3 <= len(kept) < 12 and f"{len(kept)} of 12 cases" in run.error[0]
    complete = store.query("SELECT COUNT(*) AS n FROM measurements WHERE run_id = 1 AND n_samples > 0").n[0]
    # the metrics each case declares (N = 256 also measures throughput on the other input distributions)
    metrics = {c.case_id: len(synthetic_result(c, None, np.random.default_rng(0)).metrics)
               for c in suite_cases("wgmma-quick")}
    assert complete == sum(metrics[c] for c in kept)  # every kept case has all its metrics: no half-stored case

    resumed = bench_process("run", "--resume", "1", "--db", str(db), env=env | {"HOPPER_BENCH_FAKE_DELAY": "0"})
    output, _ = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, output
    assert f"resuming run 1: {12 - len(kept)} of 12 cases" in output
    store = Store.open(str(db))
    assert store.query("SELECT status, resumes FROM runs").values.tolist() == [["complete", 1]]
    per_case = store.query("SELECT case_id, COUNT(*) AS n FROM results WHERE run_id = 1 GROUP BY case_id")
    assert len(per_case) == 12 and (per_case.n == per_case.case_id.map(metrics)).all()  # once each, none twice


def test_a_run_killed_with_minus_9_resumes_with_force_and_only_with_it(tmp_path, shared_cache):
    """Issue 46, item 18: after `kill -9` the run stays `running`, and `--resume` refused it until the user edited the
    runs table by hand. It still refuses (nothing tells a dead process from one on another host), in one line that
    names `--force`; `--resume N --force` measures the rest."""
    db = tmp_path / "r.db"
    env = {"HOPPER_BENCH_BACKEND": "fake", "HOPPER_BENCH_FAKE_DELAY": "0.3", "HOPPER_BENCH_CACHE": str(shared_cache)}
    process = bench_process("run", "--suite", "wgmma-quick", "--db", str(db), env=env, start_new_session=True)
    wait_for_measurements(db, 2, process)
    os.killpg(process.pid, signal.SIGKILL)  # the run and its GPU worker, as a lost machine would leave them
    process.communicate(timeout=60)
    assert Store.open(str(db)).query("SELECT status FROM runs WHERE id = 1").status[0] == "running"
    env = env | {"HOPPER_BENCH_FAKE_DELAY": "0"}
    refused = bench_process("run", "--resume", "1", "--db", str(db), env=env)
    output, _ = refused.communicate(timeout=120)
    assert refused.returncode == 2 and "Traceback" not in output
    assert "bench run --resume 1 --force" in output and len(output.strip().splitlines()) == 1, output
    forced = bench_process("run", "--resume", "1", "--force", "--db", str(db), env=env)
    output, _ = forced.communicate(timeout=120)
    assert forced.returncode == 0, output
    store = Store.open(str(db))
    assert store.query("SELECT status FROM runs WHERE id = 1").status[0] == "complete"
    assert len(store.measured_case_ids(1)) == 12


def _interrupted_run(db, env, at_least=2):
    process = bench_process("run", "--suite", "wgmma-quick", "--db", str(db), env=env)
    wait_for_measurements(db, at_least, process)
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=60)
    return Store.open(str(db)).measured_case_ids(1)


def _interrupted_in_process(db, at_least=2):
    """What _interrupted_run leaves (run 1 of wgmma-quick, its first cases stored, marked interrupted), made in this
    process: for a test of what resumes do with such a run, where no signal and no process is under test."""
    from helpers import fake_device
    from harness.provenance import Provenance
    from harness.published import shipped

    store = Store.open(str(db), create=True, references=shipped())
    try:
        prov = Provenance("bench run --suite wgmma-quick", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
        run_id = store.start_run(fake_device(), prov, "wgmma-quick", None)
        rng = np.random.default_rng(0)
        for case in suite_cases("wgmma-quick")[:at_least]:
            store.record_case(run_id, synthetic_result(case, None, rng))
        store.finish_run(run_id, "interrupted", f"interrupted after {at_least} of 12 cases")
        assert run_id == 1 and store.run_info(1).status == "interrupted"
        return store.measured_case_ids(1)
    finally:
        store.close()


def test_two_resumes_of_one_run_at_once_one_measures_the_other_is_refused_in_one_line(tmp_path, shared_cache):
    """Issue 46, item 18: two concurrent `bench run --resume N` gave the loser a raw "UNIQUE constraint failed". The
    loser now says so in one line and exits non-zero; the run is measured once, each case stored once."""
    db = tmp_path / "r.db"
    env = {"HOPPER_BENCH_BACKEND": "fake", "HOPPER_BENCH_FAKE_DELAY": "0.3", "HOPPER_BENCH_CACHE": str(shared_cache)}
    kept = _interrupted_run(db, env)
    metrics = {c.case_id: len(synthetic_result(c, None, np.random.default_rng(0)).metrics)
               for c in suite_cases("wgmma-quick")}
    resumes = [bench_process("run", "--resume", "1", "--db", str(db), env=env | {"HOPPER_BENCH_FAKE_DELAY": "0.1"})
               for _ in range(2)]
    outputs = [r.communicate(timeout=180)[0] for r in resumes]
    codes = sorted(r.returncode for r in resumes)
    assert codes[0] == 0 and codes[1] != 0, outputs
    loser = outputs[[r.returncode for r in resumes].index(codes[1])]
    assert "Traceback" not in loser and "UNIQUE" not in loser, loser
    # its progress (it may have compiled its first case) and then one line: the error, naming the run
    errors = [line for line in loser.splitlines() if "error" in line.lower()]
    assert errors == [loser.strip().splitlines()[-1]] and errors[0].startswith("error: run 1 "), loser
    store = Store.open(str(db))
    assert store.query("SELECT status, resumes FROM runs").values.tolist() == [["complete", 1]]
    per_case = store.query("SELECT case_id, COUNT(*) AS n FROM results WHERE run_id = 1 GROUP BY case_id")
    assert len(per_case) == 12 and (per_case.n == per_case.case_id.map(metrics)).all() and len(kept) < 12


def test_a_resume_planned_before_another_took_the_run_is_refused_and_changes_nothing(tmp_path):
    """The race itself, without timing: both resumes read the run while it is interrupted; the first takes it;
    the second, taking it after, is refused (SpecError) and leaves the run as the first left it."""
    from harness.errors import SpecError
    from harness.orchestration.run import plan_resume

    db = tmp_path / "r.db"
    assert len(_interrupted_in_process(db)) == 2
    store = Store.open(str(db))
    first, second = plan_resume(store, 1), plan_resume(store, 1)
    assert len(first.cases) == len(second.cases) == 10  # both planned the rest, before either took the run
    store.resume_run(1, first.resume_from, first.resumes)
    before = store.query("SELECT status, resumes, finished_at, error FROM runs").values.tolist()
    with pytest.raises(SpecError, match="run 1 was resumed by another `bench run`"):
        store.resume_run(1, second.resume_from, second.resumes)
    assert store.query("SELECT status, resumes, finished_at, error FROM runs").values.tolist() == before
    assert before[0][:2] == ["running", 1]
    store.finish_run(1, "interrupted")  # ... and then interrupted again: a resume planned before it still refused
    with pytest.raises(SpecError):
        store.resume_run(1, second.resume_from, second.resumes)
