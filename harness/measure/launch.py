"""Load a compiled probe into CuPy and launch its kernels with the common argument shape
(const uint4* in, u32* out, long long* timing, int iters): ptx/common.cuh, followed by any arguments
the family attaches (Family.attach returns an Attachment: tensor maps, buffers), with the dynamic shared memory
it asks for."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from harness.build.compile import Build

OUT_GUARD_WORDS = 4096  # poison after a probe's outputs, checked after every launch


@dataclass
class Launch:
    out: np.ndarray  # uint32 words
    timing: np.ndarray  # int64 words
    elapsed_ms: float  # CUDA-event time of the launch
    host_seconds: float = 0.0  # what enqueueing the launches took the host


# A host kernel: fn(out, timing, iters), which enqueues its work (a library call, a verification) on CuPy's current
# stream; launched and timed like a module's kernel (`out`: the probe's output buffer, `timing`: the launch's words).
HostKernel = Callable[[object, object, int], None]


@dataclass(frozen=True)
class Attachment:
    """What a family attaches to its loaded probe (Family.attach's answer), taken once before any launch."""

    extra_args: tuple = ()  # appended to every launch's arguments of a module kernel (tensor maps, Problems)
    dynamic_smem: Mapping[str, int] = field(default_factory=dict)  # kernel -> dynamic shared memory bytes
    resources: tuple = ()  # GPU buffers (and library plans) the arguments point into, kept alive with the probe
    # CTAs per cluster chosen at launch time (0: none, or the kernel's own __cluster_dims__). A size over the
    # portable 8 needs cuLaunchKernelEx on the CUfunction CuPy loaded.
    runtime_cluster: int = 0
    host_kernels: Mapping[str, HostKernel] = field(default_factory=dict)  # kernel name -> its host call
    # kernel -> its preferred shared-memory carve-out, in percent of the SM's most shared memory (the rest of the
    # SM's L1/shared storage is L1: 0 asks for the largest L1); set once, as the probe takes the attachment
    shared_carveout: Mapping[str, int] = field(default_factory=dict)
    # Launches before a block's arguments repeat: a family's inputs in `period` copies taken in turn, so that no
    # launch finds them where the launch before left them in the L2 (a block of launches is a whole number of turns:
    # WholeKernel). `rotation`: a module kernel's extra arguments for each turn, empty where extra_args serve every
    # turn. The first must be extra_args: a single launch (a check, a verification, a counting build's launch) takes
    # it, and a block ends on it (launch i of a block of several takes rotation[(i + 1) % period]), so that the block
    # after a single launch begins on the copy read longest ago. A family's host kernels take their turns themselves,
    # in the same order (harness/families/gemm/gpu.py in_turn).
    period: int = 1
    rotation: tuple = ()

    def __post_init__(self):
        if self.runtime_cluster < 0 or any(b < 0 for b in self.dynamic_smem.values()):
            raise ValueError("a cluster size and shared memory bytes are not negative")
        if self.period < 1 or (self.rotation and len(self.rotation) != self.period):
            raise ValueError("a period is at least 1 launch, and a rotation holds one set of arguments a turn")
        if self.rotation and (len(self.rotation[0]) != len(self.extra_args)
                              or any(a is not b for a, b in zip(self.rotation[0], self.extra_args))):
            raise ValueError("a rotation's first arguments are the attachment's extra_args")
        if any(not 0 <= p <= 100 for p in self.shared_carveout.values()):
            raise ValueError("a shared-memory carve-out is a percentage from 0 to 100")
        if set(self.shared_carveout) & set(self.host_kernels):
            raise ValueError(f"{sorted(set(self.shared_carveout) & set(self.host_kernels))}: a host kernel has no "
                             "carve-out of its own")
        clash = set(self.dynamic_smem) & set(self.host_kernels)
        if clash:
            raise ValueError(f"{sorted(clash)}: a host kernel has no shared memory of its own")


NOTHING_ATTACHED = Attachment()


class LoadedProbe:
    """A cubin in a CuPy RawModule, with its input buffer resident on the GPU; without a build (an anchor, a library
    call: harness/anchors), no module, and the host kernels the family attaches are its only kernels."""

    def __init__(self, build: Build | None, input_bytes: np.ndarray, out_words: int):
        """`out_words`: what the probe's kernels write to `out` (every launch gets that many)."""
        import cupy

        self._cupy = cupy
        self.build = build
        self.module = None if build is None else cupy.RawModule(path=str(build.cubin_path))
        self.load(input_bytes)
        self.out_words = out_words
        self.attached = NOTHING_ATTACHED  # the family's (attach)
        # One output buffer for every launch, poisoned before each: its address is fixed, so a family
        # may point a tensor map at it (Family.attach).
        self.out = cupy.empty(out_words + OUT_GUARD_WORDS, dtype=cupy.uint32)
        self._graphs: dict = {}  # (kernel, grid, block, iters, timing words, repeat) -> captured launches

    def load(self, input_bytes: np.ndarray) -> None:
        """Make `input_bytes` the input buffer of every later launch."""
        padded = np.zeros(-(-input_bytes.size // 16) * 16 + 16, dtype=np.uint8)
        padded[:input_bytes.size] = input_bytes
        self.inputs = self._cupy.asarray(padded)

    def attach(self, attachment: Attachment) -> None:
        """Take the family's GPU resources (Family.attach), once, before any launch."""
        if self.attached is not NOTHING_ATTACHED:
            from harness.errors import HarnessError

            raise HarnessError("a probe takes one attachment, before its first launch")
        for kernel, percent in attachment.shared_carveout.items():  # cuFuncSetAttribute on the module's function
            self.module.get_function(kernel).preferred_shared_memory_carveout = percent
        self.attached = attachment

    @property
    def period(self) -> int:
        """Launches before a block's arguments repeat (Attachment.rotation; 1 without one)."""
        return self.attached.period

    def max_threads(self, kernel: str) -> int:
        if kernel in self.attached.host_kernels:
            return 1024
        return self.module.get_function(kernel).max_threads_per_block

    def enqueue(self, kernel: str, grid: int, block: int, iters: int, timing, repeat: int = 1) -> None:
        """`repeat` launches of `kernel` on CuPy's current stream, untimed and unpoisoned: `run` times them, and a
        host kernel (a verification) launches a module kernel of the probe through it, with the attached arguments,
        shared memory and cluster size as every launch has them."""
        out = self.out
        host_kernels = self.attached.host_kernels
        if kernel in host_kernels:
            call = host_kernels[kernel]
            for _ in range(repeat):
                call(out, timing, iters)
            return
        if self.module is None:
            from harness.errors import HarnessError

            raise HarnessError(f"no kernel {kernel!r}: this probe is a library call's (host kernels "
                               f"{', '.join(host_kernels) or 'none'})")
        function = self.module.get_function(kernel)
        smem = self.attached.dynamic_smem.get(kernel, 0)
        if smem > 48 * 1024 and function.max_dynamic_shared_size_bytes < smem:
            function.max_dynamic_shared_size_bytes = smem
        turns = self.attached.rotation or (self.attached.extra_args,)
        cluster = self.attached.runtime_cluster
        for i in range(repeat):  # a block ends on the first set (Attachment.rotation), a single launch takes it
            args = (self.inputs, out, timing, np.int32(iters), *turns[(i + 1) % len(turns) if repeat > 1 else 0])
            if cluster:
                _launch_cluster(function, grid, block, smem, cluster, args)
            else:
                function((grid,), (block,), args, shared_mem=smem)

    def run(self, kernel: str, grid: int, block: int, iters: int, timing_words: int, repeat: int = 1,
            graph: bool = False) -> Launch:
        """Launch `kernel` `repeat` times back to back between two CUDA events (the timing words are
        the last launch's). With `graph`, the launches are captured once into a CUDA graph and replayed:
        the host enqueues one graph, so a kernel shorter than a launch call's host time (some tens of
        microseconds through CuPy) is not timed at the host's dispatch rate. `host_seconds` says how long
        the host took to enqueue the block either way."""
        cupy = self._cupy
        # Poison the outputs: a word the probe failed to write cannot pass validation. A guard of poison
        # follows them: a probe that writes past its outputs (into the timing records CuPy may place next)
        # is an error, not a wrong clock.
        out = self.out
        out.fill(0xFFFFFFFF)
        if graph and repeat > 1:
            key = (kernel, grid, block, iters, timing_words, repeat)
            if key not in self._graphs:
                timing = cupy.empty(timing_words, dtype=cupy.int64)
                stream = cupy.cuda.Stream(non_blocking=True)
                with stream:
                    stream.begin_capture()
                    try:
                        self.enqueue(kernel, grid, block, iters, timing, repeat)
                    finally:
                        captured = stream.end_capture()
                self._graphs[key] = (captured, timing, stream)
            captured, timing, stream = self._graphs[key]
            timing.fill(-1)
            cupy.cuda.get_current_stream().synchronize()
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            began = time.perf_counter()
            start.record(stream)
            captured.launch(stream)
            stop.record(stream)
            host = time.perf_counter() - began
        else:
            timing = cupy.full(timing_words, -1, dtype=cupy.int64)
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            began = time.perf_counter()
            start.record()
            self.enqueue(kernel, grid, block, iters, timing, repeat)
            stop.record()
            host = time.perf_counter() - began
        stop.synchronize()
        words = out.get()
        if (words[self.out_words:] != 0xFFFFFFFF).any():
            from harness.errors import HarnessError

            raise HarnessError(f"{kernel} wrote past its {self.out_words} output words (grid {grid}, block {block})")
        return Launch(words[:self.out_words], timing.get(), cupy.cuda.get_elapsed_time(start, stop), host)


def _cluster_config(grid: int, block: int, smem: int, cluster: int):
    """A 1-D CUlaunchConfig of `grid` blocks of `block` threads with clusters of `cluster` CTAs."""
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = smem
    dims = driver.CUlaunchAttribute()
    dims.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dims.value.clusterDim.x, dims.value.clusterDim.y, dims.value.clusterDim.z = cluster, 1, 1
    config.attrs, config.numAttrs = [dims], 1
    return config


def max_active_clusters(function, block: int, smem: int, cluster: int) -> int:
    """Clusters of `cluster` CTAs of this kernel (`block` threads, `smem` bytes of dynamic shared memory) the GPU
    runs at once (cuOccupancyMaxActiveClusters): a grid of more runs the rest only as others finish. A cluster
    must fit in one GPC, so whole GPCs' worth can be fewer than SMs / cluster (the H100 SXM: 30 of 4, 120 SMs)."""
    from cuda.bindings import driver

    from harness.errors import DeviceError

    handle = driver.CUfunction(function.kernel.ptr)
    driver.cuFuncSetAttribute(handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
    err, count = driver.cuOccupancyMaxActiveClusters(handle, _cluster_config(cluster, block, smem, cluster))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise DeviceError(f"cuOccupancyMaxActiveClusters for clusters of {cluster}: {err.name}")
    return int(count)


def _launch_cluster(function, grid: int, block: int, smem: int, cluster: int, args: tuple) -> None:
    """cuLaunchKernelEx with a cluster dimension, on the kernel CuPy loaded, in CuPy's current stream.
    Arguments: device arrays as pointers, NumPy scalars as their C type, a one-element structured array
    (a tensor map) by value."""
    import ctypes

    import cupy
    from cuda.bindings import driver

    from harness.errors import DeviceError

    def check(result):
        err = result[0] if isinstance(result, tuple) else result
        if err != driver.CUresult.CUDA_SUCCESS:
            raise DeviceError(f"cluster launch of {cluster} CTAs refused: {err.name}")
        return result

    handle = driver.CUfunction(function.kernel.ptr)
    attribute = driver.CUfunction_attribute
    check(driver.cuFuncSetAttribute(handle, attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))
    check(driver.cuFuncSetAttribute(handle, attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem))
    config = _cluster_config(grid, block, smem, cluster)
    config.hStream = cupy.cuda.get_current_stream().ptr
    values, types = [], []
    for arg in args:
        if isinstance(arg, cupy.ndarray):
            values.append(arg.data.ptr)
            types.append(ctypes.c_void_p)
        elif isinstance(arg, np.ndarray):  # a structure by value: its bytes, as a ctypes structure
            layout = type("ByValue", (ctypes.Structure,), {"_fields_": [("bytes", ctypes.c_uint8 * arg.nbytes)]})
            values.append(layout.from_buffer_copy(arg.tobytes()))
            types.append(None)
        else:
            values.append(arg.item())
            types.append({np.dtype(np.int32): ctypes.c_int, np.dtype(np.int64): ctypes.c_longlong}[arg.dtype])
    check(driver.cuLaunchKernelEx(config, handle, (tuple(values), tuple(types)), 0))
