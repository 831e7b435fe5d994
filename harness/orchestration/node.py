"""`bench run --gpus all|I,J,...`: every GPU of a node at once, one `bench run --gpu I` process each.

Each child is a whole run (its own run row, worker, crash isolation and resume), writing to the same
database; the parent starts them together, shows one progress line per GPU from the lines they
print (`--progress lines`), forwards Ctrl-C and SIGTERM so that each child marks its run
interrupted, and returns the worst exit status. GPUs are named by CUDA index on the command line and
told apart by UUID everywhere else (harness/measure/device.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field

from harness.errors import DeviceError, SpecError

PROGRESS = "progress"  # child line: progress DONE TOTAL DETAIL
DEVICE = "device"  # child line: device INDEX UUID NAME...


def gpu_indices(spec: str) -> list[int]:
    """'all' -> every CUDA device; '0,2' -> [0, 2]. SpecError (the spelling, checked first) or DeviceError."""
    indices = None
    if spec.strip() != "all":
        try:
            indices = [int(part) for part in spec.split(",")]
        except ValueError:
            raise SpecError(f"--gpus {spec!r}: expected 'all' or comma-separated GPU indices such as 0,1") from None
        if len(set(indices)) != len(indices):
            raise SpecError(f"--gpus {spec!r} names a GPU twice")
    count = _device_count()
    if count == 0:
        raise DeviceError("no CUDA GPU is visible: `bench run` needs an sm_90 GPU")
    if indices is None:
        return list(range(count))
    bad = [i for i in indices if not 0 <= i < count]
    if bad:
        raise DeviceError(f"--gpus {spec!r}: GPU {bad[0]} does not exist (this machine has GPUs 0..{count - 1})")
    return indices


def _device_count() -> int:
    """CUDA's device count (no context is created); the simulated backend's HOPPER_BENCH_FAKE_GPUS."""
    from harness.orchestration.worker import backend_name

    if backend_name() == "fake":
        from harness import environment

        return environment.fake_gpus()
    try:
        from cupy.cuda import runtime

        return runtime.getDeviceCount()
    except Exception as exc:
        raise DeviceError(f"no CUDA GPU is visible ({str(exc).splitlines()[0][:120]}): `bench run` needs an "
                          "sm_90 GPU") from None


def index_of(uuid: str | None) -> int:
    """The index of the GPU with this UUID (0 when none matches: the resume check then names the GPU the
    run needs)."""
    from harness.orchestration.worker import backend_name

    if backend_name() == "fake":
        from harness.orchestration.fakegpu import simulated_device

        uuid_at = lambda i: simulated_device(i).uuid  # noqa: E731
    else:
        from harness.measure.device import cuda_uuid as uuid_at
    try:
        count = _device_count()
    except DeviceError:
        return 0
    return next((i for i in range(count) if uuid and uuid_at(i) == uuid), 0)


@dataclass
class Child:
    index: int
    process: subprocess.Popen
    label: str = ""
    done: int = 0
    total: int = 0
    detail: str = ""
    summary: list[str] = field(default_factory=list)


def run_node(indices: list[int], args: list[str], on_update=None) -> tuple[list[Child], int]:
    """Start `bench run ARGS --gpu I --progress lines` for every I; wait for all. `on_update(child)` is
    called on every progress line. Returns the children and the worst exit status."""
    children = []
    for index in indices:
        command = [sys.executable, "-m", "harness", "run", *args, "--gpu", str(index), "--progress", "lines"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
        children.append(Child(index, process, label=f"GPU {index}"))

    def read(child: Child) -> None:
        for line in child.process.stdout:
            words = line.rstrip("\n").split(" ", 3)
            if words[0] == PROGRESS and len(words) >= 3:
                child.done, child.total = int(words[1]), int(words[2])
                child.detail = words[3] if len(words) > 3 else ""
            elif words[0] == DEVICE and len(words) >= 3:
                child.label = f"GPU {words[1]} {words[2][-8:]}"
            elif line.strip():
                child.summary.append(line.rstrip("\n"))
            if on_update:
                on_update(child)

    readers = [threading.Thread(target=read, args=(c,), daemon=True) for c in children]
    for thread in readers:
        thread.start()

    def forward(signum, _frame):
        for child in children:
            if child.process.poll() is None:
                child.process.send_signal(signal.SIGINT)  # each child marks its run interrupted

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for child in children:
            while True:
                try:
                    child.process.wait()
                    break
                except KeyboardInterrupt:  # a second Ctrl-C while waiting: keep waiting for the children
                    forward(signal.SIGINT, None)
        for thread in readers:
            thread.join(timeout=5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    codes = [c.process.returncode for c in children]
    worst = max(codes, key=lambda code: (code != 0, abs(code)))
    return children, worst
