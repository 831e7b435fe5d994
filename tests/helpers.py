"""What tests import (conftest.py holds only fixtures and pytest's hooks): fake devices and results, a
results database of one run (make_db), the schema fixtures, `bench` as a process, and the checks of a
command's one error line and of a file's bytes."""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

from harness.published import shipped


def one_error_line(result, code, *patterns) -> str:
    """A failing command's output (click's CliRunner result): exit status `code` and exactly one line, on
    which every regular expression of `patterns` is found; no traceback. Returns the line."""
    assert result.exit_code == code, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    for pattern in patterns:
        assert re.search(pattern, lines[0]), (pattern, lines)
    assert "Traceback" not in result.output
    return lines[0]


def digest(path) -> str:
    """A file's SHA-256: unchanged bytes, unchanged digest."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


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


FIXTURES = Path(__file__).resolve().parent / "fixtures"


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


def postgres_binaries():
    """initdb and pg_ctl: on the PATH, else under Debian's /usr/lib/postgresql/<version>/bin (None: missing)."""
    import shutil
    from pathlib import Path

    found = {name: shutil.which(name) for name in ("initdb", "pg_ctl")}
    if not all(found.values()):  # Debian keeps them under /usr/lib/postgresql/<version>/bin
        versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
        found = {name: next((str(v / name) for v in versions if (v / name).exists()), None) for name in found}
    return found


def planted_source(case, family, **params):
    """`case`'s probe source with some of its family's template parameters replaced: a planted fault in what the
    kernel is built with (a descriptor's field, say), the rest as the family renders it."""
    from harness.build.render import ProbeSource, render

    class Planted:
        template = family.template

        @staticmethod
        def template_params(c):
            return {**family.template_params(c), **params}

    source = render(case, Planted)
    return ProbeSource(f"{case.case_id}+planted:" + ",".join(f"{k}={v}" for k, v in params.items()), source.text)
