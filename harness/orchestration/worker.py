"""Crash isolation: cases are measured in a worker process that owns the GPU's CUDA context.

A probe that traps, stores to an illegal address or hangs ruins (or blocks) its CUDA context for
good. The run's own process never creates one: it sends each case to a worker subprocess and
waits for the result under a watchdog. When the worker reports a CUDA error, dies, or stays
silent past the watchdog, the case is stored as a fault with the reason, the worker is killed if
need be, and a fresh one (a fresh context) measures the next case.

Backends run inside the worker: "cuda" (the real GPU, harness.orchestration.runner.measure_case) and "fake"
(harness.orchestration.fakegpu, a simulated GPU that lets CI drive this machinery without one). The
HOPPER_BENCH_BACKEND environment variable picks one; "cuda" is the default.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import signal
import time
from dataclasses import dataclass

from harness.build.compile import Build
from harness.measure.device import DeviceInfo
from harness.errors import DeviceError, SpecError
from harness.measure.measurement import CaseResult, unmeasured
from harness.orchestration.runner import CasePlan, RunSettings, declared_metrics
from harness.spec import Case

BACKENDS = {"cuda": "harness.orchestration.worker:CudaBackend", "fake": "harness.orchestration.fakegpu:FakeBackend"}
DEFAULT_WATCHDOG_S = 120.0  # no case of the shipped suites takes a tenth of this
STARTUP_TIMEOUT_S = 120.0  # spawn, import CuPy, create the CUDA context


def backend_name() -> str:
    from harness import environment

    return environment.backend()


class CudaBackend:
    """The real GPU: measure_case with NVML telemetry, in the worker process."""

    def __init__(self, settings: RunSettings):
        self.settings = settings

    def open(self, gpu_index: int) -> DeviceInfo:
        from harness.measure import telemetry
        from harness.measure.device import cuda_uuid, open_device

        uuid = cuda_uuid(gpu_index)  # NVML reads the GPU CUDA measures: matched by UUID, never by index
        reader = telemetry.nvml_reader(uuid) if uuid else None
        before = _pids(reader)
        self.device = open_device(gpu_index)
        import cupy

        cupy.zeros(1)  # create the context now, so NVML lists this process from here on
        self.sampler = (telemetry.Sampler(reader, telemetry.own_pids(before, _pids(reader)))
                        if reader else telemetry.NullSampler())
        return self.device

    def measure(self, case: Case, build: Build, planned: CasePlan | None = None) -> CaseResult:
        from harness.orchestration.runner import measure_case

        return measure_case(case, build, self.device, self.settings, self.sampler, planned)


def _pids(reader) -> set[int]:
    try:
        return reader.compute_pids() if reader else set()
    except Exception:
        return set()


def _serve(conn, backend_ref: str, gpu_index: int, settings: RunSettings) -> None:
    """The worker's main loop: ("ready", DeviceInfo), then one reply per (case, build, plan) received."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the run decides
    module, _, name = backend_ref.partition(":")
    backend = getattr(importlib.import_module(module), name)(settings)
    try:
        conn.send(("ready", backend.open(gpu_index)))
    except Exception as exc:
        conn.send(("error", _one_line(exc)))
        return
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        case, build, planned = request
        try:
            result = backend.measure(case, build, planned)
        except Exception as exc:  # a CUDA error: this process's context may be unusable, so end it
            conn.send(("fault", f"{type(exc).__name__}: {_one_line(exc)}"))
            conn.close()
            os._exit(3)  # skip interpreter teardown: freeing objects of a broken context only prints errors
        conn.send(("result", result))


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _exit_reason(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


@dataclass
class WorkerStats:
    started: int = 0  # worker processes started (1 + restarts)
    faults: int = 0


class Worker:
    """One worker process per GPU, restarted after every fault."""

    def __init__(self, gpu_index: int, settings: RunSettings = RunSettings(), backend: str | None = None,
                 watchdog_s: float = DEFAULT_WATCHDOG_S):
        if watchdog_s <= 0:
            raise SpecError(f"watchdog must be positive, got {watchdog_s:g} s")
        self.gpu_index, self.settings, self.watchdog_s = gpu_index, settings, watchdog_s
        self.backend_ref = BACKENDS[backend or backend_name()]
        self.device: DeviceInfo | None = None
        self.stats = WorkerStats()
        self._context = multiprocessing.get_context("spawn")
        self._process = None
        self._conn = None
        self._pending: tuple[Case, Build | None, CasePlan | None, float] | None = None  # submitted, not collected

    def start(self) -> DeviceInfo:
        """Start the worker; DeviceError if it cannot open the GPU (or opens a different one)."""
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, name=f"bench-worker-gpu{self.gpu_index}",
                                              args=(child, self.backend_ref, self.gpu_index, self.settings),
                                              daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        self.stats.started += 1
        if not parent.poll(STARTUP_TIMEOUT_S):
            self._kill()
            raise DeviceError(f"the GPU worker did not start within {STARTUP_TIMEOUT_S:g} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            code = self._reap()
            raise DeviceError(f"the GPU worker died while opening GPU {self.gpu_index} ({_exit_reason(code)})") from None
        if kind == "error":
            self._reap()
            raise DeviceError(payload)
        if self.device is not None and payload.uuid != self.device.uuid:
            self._kill()
            raise DeviceError(f"the restarted worker opened {payload.uuid}, not {self.device.uuid}")
        self.device = payload
        return payload

    def measure(self, case: Case, build: Build | None, planned: CasePlan | None = None) -> CaseResult:
        """The case's result, or a fault result if the worker failed it (the worker is then replaced)."""
        self.submit(case, build, planned)
        return self.collect()

    def submit(self, case: Case, build: Build | None, planned: CasePlan | None = None) -> None:
        """Send a case to the worker, which starts measuring it; `collect` returns its result. One case
        at a time: the caller may do its own work (store the previous case) while this one runs. `planned`: the
        case's plan on this GPU (runner.case_plan), asked once by the caller; None: the worker asks for it."""
        if self._pending is not None:
            raise RuntimeError("the worker's previous case has not been collected")
        if self._process is None or not self._process.is_alive():
            self.start()
        self._pending = (case, build, planned, time.monotonic())
        self._conn.send((case, build, planned))

    def collect(self) -> CaseResult:
        """The submitted case's result, or a fault result (the worker is then replaced); the watchdog
        counts from the submission."""
        case, build, planned, started = self._pending
        self._pending = None
        # a result that came while the caller was busy is taken at once, even past the watchdog's time
        if not self._conn.poll(max(self.watchdog_s - (time.monotonic() - started), 0.0)) and not self._conn.poll(0):
            self._kill()
            return self._fault(case, build, planned, f"hang: no result within the {self.watchdog_s:g} s watchdog; "
                                            "worker killed")
        try:
            kind, payload = self._conn.recv()
        except EOFError:
            code = self._reap()
            return self._fault(case, build, planned, f"crash: the worker died ({_exit_reason(code)}) after "
                                            f"{time.monotonic() - started:.1f} s")
        if kind == "fault":
            self._reap()
            return self._fault(case, build, planned, f"CUDA error: {payload}")
        return payload

    def _fault(self, case: Case, build: Build | None, planned: CasePlan | None, reason: str) -> CaseResult:
        self.stats.faults += 1
        declared = list(planned.declared) if planned is not None else declared_metrics(case, self.device)
        return unmeasured(case, f"{reason}; the next case gets a fresh worker and CUDA context",
                          build, fault=True, metrics=declared)

    def _reap(self, timeout: float = 30.0) -> int | None:
        self._process.join(timeout)
        if self._process.is_alive():
            return self._kill()
        code = self._process.exitcode
        self._discard()
        return code

    def _kill(self) -> int | None:
        self._process.kill()
        self._process.join()
        code = self._process.exitcode
        self._discard()
        return code

    def _discard(self) -> None:
        self._conn.close()
        self._process = self._conn = self._pending = None

    def close(self) -> None:
        """Ask the worker to finish; kill it if it does not."""
        if self._process is None:
            return
        try:
            self._conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self._reap(timeout=10.0)

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        if exc[0] is None:
            self.close()
        elif self._process is not None:  # interrupted or failed: do not wait for a case in flight
            self._kill()
