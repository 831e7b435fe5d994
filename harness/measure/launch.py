"""Load a compiled probe into CuPy and launch its kernels with the common argument shape
(const uint4* in, u32* out, long long* timing, int iters): ptx/common.cuh, followed by any arguments
the family attaches (Family.attach: tensor maps, buffers), with the dynamic shared memory it asks for."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.build.compile import Build


@dataclass
class Launch:
    out: np.ndarray  # uint32 words
    timing: np.ndarray  # int64 words
    elapsed_ms: float  # CUDA-event time of the launch


class LoadedProbe:
    """A cubin in a CuPy RawModule, with its input buffer resident on the GPU."""

    def __init__(self, build: Build, input_bytes: np.ndarray, out_words: int):
        """`out_words`: what the probe's kernels write to `out` (every launch gets that many)."""
        import cupy

        self._cupy = cupy
        self.build = build
        self.module = cupy.RawModule(path=str(build.cubin_path))
        self.load(input_bytes)
        self.out_words = out_words
        self.extra_args: tuple = ()  # appended to every launch's arguments (Family.attach)
        self.dynamic_smem: dict[str, int] = {}  # kernel -> dynamic shared memory bytes (Family.attach)
        self.resources: list = []  # GPU buffers the extra arguments point into, kept alive with the probe

    def load(self, input_bytes: np.ndarray) -> None:
        """Make `input_bytes` the input buffer of every later launch."""
        padded = np.zeros(-(-input_bytes.size // 16) * 16 + 16, dtype=np.uint8)
        padded[:input_bytes.size] = input_bytes
        self.inputs = self._cupy.asarray(padded)

    def max_threads(self, kernel: str) -> int:
        return self.module.get_function(kernel).max_threads_per_block

    def run(self, kernel: str, grid: int, block: int, iters: int, timing_words: int) -> Launch:
        cupy = self._cupy
        function = self.module.get_function(kernel)
        smem = self.dynamic_smem.get(kernel, 0)
        if smem > 48 * 1024 and function.max_dynamic_shared_size_bytes < smem:
            function.max_dynamic_shared_size_bytes = smem
        # Poison the outputs: a word the probe failed to write cannot pass validation.
        out = cupy.full(self.out_words, 0xFFFFFFFF, dtype=cupy.uint32)
        timing = cupy.full(timing_words, -1, dtype=cupy.int64)
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        function((grid,), (block,), (self.inputs, out, timing, np.int32(iters), *self.extra_args), shared_mem=smem)
        stop.record()
        stop.synchronize()
        return Launch(out.get(), timing.get(), cupy.cuda.get_elapsed_time(start, stop))
