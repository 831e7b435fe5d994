"""`bench run --gpus`: one worker process and one run per GPU, in parallel, on the simulated backend
(two fake GPUs with their own UUIDs); Ctrl-C interrupts every run, and each resumes on its own GPU."""

import signal
import time

from helpers import bench_process
from harness.db.store import Store


def env(shared_cache, delay="0"):
    return {"HOPPER_BENCH_BACKEND": "fake", "HOPPER_BENCH_FAKE_DELAY": delay, "HOPPER_BENCH_FAKE_GPUS": "2",
            "HOPPER_BENCH_CACHE": str(shared_cache)}


def test_every_gpu_runs_the_suite_at_once_into_one_database(tmp_path, shared_cache):
    db = tmp_path / "r.db"
    process = bench_process("run", "--suite", "wgmma-quick", "--gpus", "all", "--db", str(db), env=env(shared_cache))
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 0, output
    assert "2 GPUs (0, 1): one run each of suite wgmma-quick" in output and "Traceback" not in output
    runs = Store.open(str(db), read_only=True).query(
        "SELECT r.id, r.status, r.started_at, d.uuid, COUNT(DISTINCT c.case_id) AS cases FROM runs r "
        "JOIN devices d ON d.id = r.device_id JOIN measurements m ON m.run_id = r.id JOIN cases c ON c.id = m.case_pk "
        "GROUP BY r.id, r.status, r.started_at, d.uuid ORDER BY d.uuid")
    assert runs.uuid.tolist() == ["FAKE-GPU-0", "FAKE-GPU-1"] and set(runs.status) == {"complete"}
    assert runs.cases.tolist() == [12, 12]
    started = runs.started_at.astype("datetime64[ns]")
    assert abs((started.iloc[0] - started.iloc[1]).total_seconds()) < 30  # started together


def test_ctrl_c_interrupts_every_run_and_each_resumes_on_its_gpu(tmp_path, shared_cache):
    db = tmp_path / "r.db"
    process = bench_process("run", "--suite", "wgmma-quick", "--gpus", "0,1", "--db", str(db),
                            env=env(shared_cache, "0.3"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.2)
        try:
            done = Store.open(str(db), read_only=True).query(
                "SELECT COUNT(DISTINCT run_id) AS runs, COUNT(*) AS n FROM measurements")
            if done.runs[0] == 2 and done.n[0] >= 8:
                break
        except Exception:
            pass
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output
    assert "Traceback" not in output and output.count("measure the rest with `bench run --resume") == 2, output
    store = Store.open(str(db), read_only=True)
    assert set(store.query("SELECT status FROM runs").status) == {"interrupted"}
    for run_id in (1, 2):
        resumed = bench_process("run", "--resume", str(run_id), "--db", str(db), env=env(shared_cache))
        out, _ = resumed.communicate(timeout=120)
        assert resumed.returncode == 0, out
    runs = Store.open(str(db), read_only=True).query("SELECT status FROM runs")
    assert set(runs.status) == {"complete"}


def test_the_slurm_script_is_valid_bash_and_uses_existing_options():
    import re
    import subprocess
    from pathlib import Path

    from click.testing import CliRunner

    from harness.cli import cli

    script = Path(__file__).resolve().parent.parent / "scripts" / "slurm" / "bench-node.sbatch"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    line = next(l for l in script.read_text().splitlines() if "bench run" in l and not l.lstrip().startswith("#"))
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert all(option in help_text for option in re.findall(r"--[a-z]+", line))


def test_runs_that_all_fail_end_on_one_error_line_and_leave_the_database_alone(tmp_path, shared_cache):
    """Simulated GPUs into a database of real-GPU runs: each child refuses (runs are never mixed), and
    the last line says how many failed (found by the environment fuzz test: it ended on a child's line)."""
    from helpers import make_db
    from helpers import digest

    db = make_db(tmp_path / "real.db")
    before = digest(db)
    process = bench_process("run", "--suite", "wgmma-quick", "--gpus", "all", "--db", str(db), env=env(shared_cache))
    output, _ = process.communicate(timeout=300)
    lines = output.strip().splitlines()
    assert process.returncode != 0 and "Traceback" not in output, output
    assert lines[-1].startswith("error: 2 of 2 runs failed (GPU 0") and "never mixed" in output, output
    assert digest(db) == before
