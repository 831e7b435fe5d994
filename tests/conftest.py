"""Fixtures shared by CPU and GPU tests, and pytest's hooks (`gpu` tests skip cleanly without an sm_90 GPU).
Fixtures only: the helpers that tests import are in tests/helpers.py."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

# One BLAS thread (before NumPy loads; subprocesses inherit it): where the tests run, the background compile
# (pytest_collection_finish) keeps the other core busy, and OpenBLAS's second thread only spins beside it (the
# GEMM family's checks of every case: 30 CPU-s with two threads, 19 with one, in the same wall time). A value
# set outside is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from helpers import postgres_binaries


def pytest_addoption(parser):
    parser.addoption("--full-sweep", action="store_true", default=False,
                     help="every case of every family, not the sample of tests/gpu/sample.py: GPU tests validate "
                          "each (about 15 minutes on an H100); the CPU sweep compiles each (tests/sweep.py)")
    parser.addoption("--record-sweep", action="store_true", default=False,
                     help="with --full-sweep: write each family whose every probe compiled and met its SASS "
                          "expectation to tests/fixtures/sweep_record.json (tests/sweep.py)")


@functools.cache
def sm90_gpu_reason() -> str | None:
    """None if an sm_90 GPU is usable, else why not."""
    try:
        from harness.measure.device import open_device

        open_device(0)
    except Exception as exc:  # DeviceError, or CuPy missing entirely
        return str(exc)
    return None


SHARED = "HOPPER_BENCH_TEST_SHARED"  # the session's folder: pytest-xdist's workers inherit it in the environment


def _controller(config) -> bool:
    """A plain run, or pytest-xdist's controller (-n), not one of its workers: it starts what the session's
    processes share, the compile cache and the build of ./results.db."""
    return not hasattr(config, "workerinput")


def pytest_sessionstart(session):
    _take_sigint_back()
    if _controller(session.config):  # before pytest-xdist starts its workers (its own sessionstart runs last)
        import tempfile

        folder = Path(tempfile.mkdtemp(prefix="hopper-bench-tests-"))
        (folder / "cache").mkdir()
        os.environ[SHARED] = str(folder)
        _build_results_db(session.config, folder)


def _take_sigint_back() -> None:
    """A shell without job control starts a background command with SIGINT ignored, and every process it starts
    inherits that: `bench` then installs no Ctrl-C handler and the tests that interrupt one with SIGINT see no
    interruption (seen: a report built to its end, then an internal error). The tests take SIGINT back."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


RESULTS_DB = pytest.StashKey[subprocess.Popen]()


def _build_results_db(config, folder: Path) -> None:
    """A clone holds the runs of record as runs/run-NNNN.db.xz only: build ./results.db from them once
    (about 50 s on a 2-core machine, scripts/runs_of_record.py), so that the tests reading the shipped runs run. Not for
    `-m gpu` (a device run reads none of them). It builds in a process of its own while pytest collects;
    each process's first test past the compile sweep waits for `folder/results-db.done`, which marks its
    end (_results_db_built)."""
    root = Path(__file__).resolve().parent.parent
    done = folder / "results-db.done"
    if (root / "results.db").exists() or not (root / "runs").is_dir() or config.getoption("markexpr") == "gpu":
        done.touch()
        return
    import threading

    process = subprocess.Popen([sys.executable, str(root / "scripts" / "runs_of_record.py"), "build"], cwd=root)
    config.stash[RESULTS_DB] = process
    threading.Thread(target=lambda: (process.wait(), done.touch()), daemon=True).start()


@functools.cache
def _results_db_built() -> None:
    """Wait for the build of ./results.db that the session's controller began, if any (once a process)."""
    import time

    done = Path(os.environ[SHARED]) / "results-db.done"
    while not done.exists():
        time.sleep(0.2)


# The slowest test modules on the 2-core machine (seconds, pytest --durations, summed over a module's tests;
# approximate, for the order alone).
SLOW_FIRST = {"test_sm_partitions": 65, "test_slurm": 55, "test_readme_findings": 63, "test_tables": 46,
              "test_site": 45, "test_interrupt": 37, "test_cli": 31, "test_node": 28, "test_figures_honest": 25,
              "test_concurrency": 25, "test_gemm_shapes": 22, "test_postgres": 19, "test_maps": 18,
              "test_attention": 15, "test_worker": 12, "test_model_out_of_sample": 12, "test_gemm_figures": 12}


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if gpu_items and (reason := sm90_gpu_reason()):
        for item in gpu_items:
            item.add_marker(pytest.mark.skip(reason=f"needs an sm_90 GPU: {reason}"))
    if config.pluginmanager.hasplugin("xdist"):  # under -n (--dist loadgroup) one process runs the GPU tests in turn
        for item in gpu_items:
            item.add_marker(pytest.mark.xdist_group("gpu"))
    # The longest go first, so that under pytest-xdist the others fill in around them and the workers end together
    # (in file order the slowest modules, s to w, came last): the conformance sweep's compiles, then the modules
    # that take longest (SLOW_FIRST). Only the order changes.
    items.sort(key=lambda item: ("compiles_and_meets" not in item.name,
                                 0 if "gpu" in item.keywords else -SLOW_FIRST.get(Path(str(item.fspath)).stem, 0)))


def pytest_runtest_setup(item):
    # The tests of the shipped runs read ./results.db; the compile sweep's tests (first in the order) read
    # nothing of it and run while it is built.
    if "compiles_and_meets" not in item.name:
        _results_db_built()


def pytest_sessionfinish(session):
    if _controller(session.config):
        import shutil

        if (process := session.config.stash.get(RESULTS_DB, None)) is not None:
            process.wait()  # where collection failed, no test waited for it
        shutil.rmtree(os.environ.pop(SHARED), ignore_errors=True)


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """A private compile cache, empty (for the tests of the cache and of compiling itself; every other test
    compiles into the session's, _compile_cache_by_default)."""
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture(scope="session")
def compile_cache():
    """One compile cache for the whole session, every process of it (pytest-xdist's workers too): the conformance
    sweep fills it and the simulated runs find their probes there (a build is keyed by the hash of its source,
    options and NVRTC version, so whoever made it, it is the same build; the cache writes each file whole)."""
    return Path(os.environ[SHARED]) / "cache"


@pytest.fixture(autouse=True)
def _compile_cache_by_default(request, monkeypatch):
    """Every CPU test compiles into the session's compile_cache unless it asks for another (cache_dir, or a
    HOPPER_BENCH_CACHE of its own): not into ~/.cache/hopper-bench, empty on a clean CI machine, where each
    such test compiled its probes again, whatever the sweep or another test had built. A build is keyed by
    its source, options and NVRTC version, so sharing the cache changes no build. GPU tests keep the
    environment's cache."""
    if "gpu" not in request.keywords:
        monkeypatch.setenv("HOPPER_BENCH_CACHE", str(request.getfixturevalue("compile_cache")))


@pytest.fixture
def shared_cache(compile_cache, monkeypatch):
    """compile_cache as this test's HOPPER_BENCH_CACHE (restored after it)."""
    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(compile_cache))
    return compile_cache


# -- a real PostgreSQL server for the tests that run against it (tests/test_postgres.py) -----------

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
    binaries = postgres_binaries()
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
