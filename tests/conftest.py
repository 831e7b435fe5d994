"""Fixtures shared by CPU and GPU tests; `gpu` tests skip cleanly without an sm_90 GPU."""

from __future__ import annotations

import functools
import os

import pytest
from harness.published import shipped


def pytest_addoption(parser):
    parser.addoption("--full-sweep", action="store_true", default=False,
                     help="GPU tests: validate every case of every family (about 15 minutes on an H100), not the "
                          "sample of tests/gpu/sample.py")


@functools.cache
def sm90_gpu_reason() -> str | None:
    """None if an sm_90 GPU is usable, else why not."""
    try:
        from harness.measure.device import open_device

        open_device(0)
    except Exception as exc:  # DeviceError, or CuPy missing entirely
        return str(exc)
    return None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and (reason := sm90_gpu_reason()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"needs an sm_90 GPU: {reason}"))


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private compile cache, empty (for the tests of the cache and of compiling itself)."""
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def compile_cache(tmp_path_factory):
    """One compile cache for the tests that only need builds: the conformance sweep fills it and the
    simulated runs after it find their probes there (a build is keyed by the hash of its source,
    options and NVRTC version, so whoever made it, it is the same build)."""
    return tmp_path_factory.mktemp("compile-cache")


@pytest.fixture
def shared_cache(compile_cache, monkeypatch):
    """compile_cache as this test's HOPPER_BENCH_CACHE (restored after it)."""
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(compile_cache))
    return compile_cache


def fake_device(uuid="GPU-test-0"):
    from harness.measure.device import DeviceInfo

    return DeviceInfo(index=0, name="NVIDIA H100 80GB HBM3", uuid=uuid, sm_count=132, cc_major=9,
                      cc_minor=0, total_memory_bytes=80 << 30, l2_bytes=50 << 20, max_sm_clock_mhz=1980,
                      max_mem_clock_mhz=2619, power_limit_w=700.0, driver_version="580.159.04",
                      cuda_driver_version="13.0")


def fake_result(case_id, interval=None, error=None):
    """A measured (or invalid, with `error`) case, as the runner would return it."""
    from pathlib import Path

    import numpy as np

    from harness.build.compile import Build
    from harness.measure.measurement import CaseResult, Metric
    from harness.build.sass import SassCheck
    from harness.registry import parse_case_id

    case = parse_case_id(case_id)
    build = Build(case_id, "src" + case_id, "build" + case_id, Path("/nonexistent.cubin"),
                  "ptxas info    : Compiling entry function 'probe_chain' for 'sm_90a'\n"
                  "ptxas info    : Used 40 registers", ("-arch=sm_90a",), "13.0")
    if error:
        metrics = [Metric(name, unit, None) for name, unit in (("issue_interval_cycles", "cycles"),
                                                                ("throughput_tflops", "TFLOPS"))]
        return CaseResult(case, build, SassCheck(True, "ok"), False, error, None, "normal", metrics)
    samples = np.array([interval, interval, interval * 1.001, interval])
    metrics = [Metric("issue_interval_cycles", "cycles", samples, {"warpgroups": 1, "ilp": 1}, sm_clock_mhz=1980.0),
               Metric("throughput_tflops", "TFLOPS", samples * 5, {"warpgroups": 2, "ilp": 1}, sm_clock_mhz=1755.0)]
    return CaseResult(case, build, SassCheck(True, "ok"), True, None, 0.0, "normal(0,1) rounded to f16", metrics)


def make_db(path, status="complete", fresh=False):
    """A results database holding one run of three cases: two measured, one invalid. A file is a copy
    of one built once per test process (building one runs every migration: a fifth of a second,
    and some 400 tests ask for one), unless `fresh` (a run of its own, started now, as a second
    run of the same GPU to merge); a URL (PostgreSQL) is built in place."""
    import shutil

    if fresh or "://" in str(path):
        return _build_db(path, status)
    shutil.copyfile(_template_db(status), path)
    return path


@functools.cache
def _template_db(status):
    import atexit
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="hopper-bench-test-db-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return _build_db(folder / "r.db", status)


def _build_db(path, status):
    from harness.provenance import Provenance
    from harness.db.store import Store

    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite wgmma", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "wgmma", None)
    store.record_case(run_id, fake_result("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", 18.0))
    store.record_case(run_id, fake_result("wgmma.mma_async.m64n256k16.f32.f16.f16.SS", 128.0))
    store.record_case(run_id, fake_result("wgmma.mma_async.m64n16k16.f32.f16.f16.RS", error="validation failed: D[0,0]"))
    store.finish_run(run_id, status)
    store.engine.dispose()
    return path


FIXTURES = __import__("pathlib").Path(__file__).resolve().parent / "fixtures"


def copy_fixture(name, tmp_path):
    """A private copy of tests/fixtures/<name> (a database of an older schema)."""
    import shutil

    target = tmp_path / name
    shutil.copyfile(FIXTURES / name, target)
    return target


def bench_process(*args, env=None, **popen):
    """`bench ARGS` as a real process (python -m harness), for signals and concurrency."""
    import os
    import subprocess
    import sys

    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.STDOUT, **popen}
    return subprocess.Popen([sys.executable, "-m", "harness", *args], env={**os.environ, **(env or {})},
                            text=True, **streams)


# -- a real PostgreSQL server for the tests that run against it (tests/test_postgres.py) -----------

def _postgres_binaries():
    import shutil
    from pathlib import Path

    found = {name: shutil.which(name) for name in ("initdb", "pg_ctl")}
    if not all(found.values()):  # Debian keeps them under /usr/lib/postgresql/<version>/bin
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
        found = {name: next((str(v / name) for v in versions if (v / name).exists()), None) for name in found}
    return found


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A PostgreSQL server of its own: initdb and pg_ctl on a temporary directory, Unix socket only.
    As root (CI containers) it runs as the `postgres` user, as PostgreSQL requires. Skips, saying why,
    where the server or psycopg is not installed."""
    import os
    import pwd
    import shutil
    import subprocess

    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install -e '.[test]')")
    binaries = _postgres_binaries()
    if not all(binaries.values()):
        pytest.skip("no PostgreSQL server here (Debian: apt-get install postgresql)")
    import tempfile
    from pathlib import Path

    prefix = []
    # Not under pytest's own temporary directory: as root that is closed to the `postgres` user.
    base = Path(tempfile.mkdtemp(prefix="hopper-bench-pg-"))
    if os.geteuid() == 0:
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root without a `postgres` user to run the server as")
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root without runuser to start the server as `postgres`")
        prefix = [runuser, "-u", "postgres", "--"]
        os.chown(base, user.pw_uid, user.pw_gid)
    data = base / "data"
    port = 55000 + os.getpid() % 5000
    run = lambda *args: subprocess.run([*prefix, *args], capture_output=True, text=True)  # noqa: E731
    init = run(binaries["initdb"], "-D", str(data), "-A", "trust", "-U", "bench", "--no-sync")
    if init.returncode:
        pytest.skip(f"initdb failed: {init.stderr.strip().splitlines()[-1] if init.stderr.strip() else init.returncode}")
    start = run(binaries["pg_ctl"], "-D", str(data), "-w", "-l", str(base / "log"),
                "-o", f"-k {base} -p {port} -c listen_addresses='' -c fsync=off", "start")
    if start.returncode:
        pytest.skip(f"the PostgreSQL server did not start: {start.stderr.strip()[-200:]}")
    yield {"host": str(base), "port": port}
    run(binaries["pg_ctl"], "-D", str(data), "-m", "immediate", "stop")
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def pg_url(postgres_server, request):
    """A fresh, empty database on the test server; its URL (postgresql+psycopg, no password)."""
    import re

    import psycopg

    name = "t_" + re.sub(r"\W", "_", request.node.name)[:40].lower() + f"_{os.getpid()}"
    with psycopg.connect(host=postgres_server["host"], port=postgres_server["port"], user="bench",
                         dbname="postgres", autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}"')
        con.execute(f'CREATE DATABASE "{name}"')
    return f"postgresql+psycopg://bench@/{name}?host={postgres_server['host']}&port={postgres_server['port']}"
