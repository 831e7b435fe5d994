# An investigation (issue 42), not a probe of the harness: the GEMM targets ask for the pipeline at or above "the
# best Triton persistent kernel" at 4096^3 and 8192^3 (f16, bf16). Triton is not a dependency of the project; the
# device image has it (with torch, which Triton's launcher takes tensors from). This script:
#   1. writes a persistent Triton matmul (C = A . B^T, A [M, K] and B [N, K] row-major, as the family's problem;
#      tiles walked in groups of GROUP rows, as the family's grouped order), with TMA descriptors where this Triton
#      has them (tl.make_tensor_descriptor) and plain pointer loads otherwise, over a handful of tile configurations;
#   2. checks each against cupy.matmul (cuBLAS) on normal(0, 1) inputs, within the family's measured bound;
#   3. picks the fastest (median of 30 timed launches after 1 s of warm-up, each configuration alike);
#   4. measures the family's best case (configs.BEST) by the harness's own method twice in one process: with its
#      usual anchor (cuBLAS) and with the anchor replaced by the Triton call on the same buffers, so that
#      `library_fraction` is ours / Triton round by round (rounds alternating, the order reversed every other round,
#      the warm-up the method's), with the rounds' p10 / p90.
# Output: stdout (reports/investigation/gemm-triton-<gpu>.txt keeps it).
from __future__ import annotations

import sys
import time

import cupy
import numpy as np

import harness.families.gemm.gpu as gemm_gpu
from harness.build.compile import compile_probe
from harness.families.gemm.configs import BEST, pipeline
from harness.families.gemm.problem import measured_bound
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.registry import probe_source

import torch
import triton
import triton.language as tl

GROUP = 8
CONFIGS = (  # BM, BN, BK, stages, warps
    (128, 256, 64, 3, 8), (128, 256, 64, 4, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4), (128, 128, 64, 5, 8))
TMA = hasattr(tl, "make_tensor_descriptor")


@triton.jit
def _tile(tile, tiles_m, tiles_n, GROUP: tl.constexpr):
    per_group = GROUP * tiles_n
    first = (tile // per_group) * GROUP
    rows = tl.minimum(tiles_m - first, GROUP)
    return first + (tile % per_group) % rows, (tile % per_group) // rows


@triton.jit
def matmul_tma(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP: tl.constexpr, SMS: tl.constexpr, STAGES: tl.constexpr):
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    a = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    c = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS):
        tm, tn = _tile(tile, tiles_m, tiles_n, GROUP)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for ks in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
            acc = tl.dot(a.load([tm * BM, ks * BK]), b.load([tn * BN, ks * BK]).T, acc)
        c.store([tm * BM, tn * BN], acc.to(c_ptr.dtype.element_ty))


@triton.jit
def matmul_pointers(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    GROUP: tl.constexpr, SMS: tl.constexpr, STAGES: tl.constexpr):
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, SMS):
        tm, tn = _tile(tile, tiles_m, tiles_n, GROUP)
        rows, cols, ks = tm * BM + tl.arange(0, BM), tn * BN + tl.arange(0, BN), tl.arange(0, BK)
        pa = a_ptr + rows[:, None] * K + ks[None, :]
        pb = b_ptr + cols[:, None] * K + ks[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in tl.range(0, tl.cdiv(K, BK), num_stages=STAGES):
            acc = tl.dot(tl.load(pa), tl.trans(tl.load(pb)), acc)
            pa += BK
            pb += BK
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_ptr.dtype.element_ty))


TORCH = {"f16": torch.float16, "bf16": torch.bfloat16}
CUPY = {"f16": cupy.float16, "bf16": None}


def as_torch(pointer: int, shape, dtype: str):
    """A torch view of device memory the harness owns (no copy)."""
    size = int(np.prod(shape)) * 2
    memory = cupy.cuda.UnownedMemory(pointer, size, None)
    words = cupy.ndarray(shape, dtype=cupy.uint16, memptr=cupy.cuda.MemoryPointer(memory, 0))
    return torch.from_dlpack(words).view(TORCH[dtype])


class TritonMatmul:
    def __init__(self, dtype: str, m: int, n: int, k: int, sms: int, config):
        self.dtype, self.m, self.n, self.k, self.sms, self.config = dtype, m, n, k, sms, config
        bm, bn, bk, stages, warps = config
        self.kernel = matmul_tma if TMA else matmul_pointers
        self.grid = (min(sms, (m // bm) * (n // bn)),)
        self.args = dict(BM=bm, BN=bn, BK=bk, GROUP=GROUP, SMS=self.grid[0], STAGES=stages, num_warps=warps)

        self.views: dict = {}

    def __call__(self, a: int, b: int, c: int):
        """On CuPy's current stream (the harness's, a graph's capture included); the tensors' views are made on the
        first call (outside any capture: the method's first launch of a contender is not captured)."""
        m, n, k = self.m, self.n, self.k
        if (a, b, c) not in self.views:
            self.views[a, b, c] = (as_torch(a, (m, k), self.dtype), as_torch(b, (n, k), self.dtype),
                                   as_torch(c, (m, n), self.dtype))
        stream = cupy.cuda.get_current_stream().ptr
        if stream == torch.cuda.default_stream().cuda_stream:  # both the legacy default stream (0)
            self.kernel[self.grid](*self.views[a, b, c], m, n, k, **self.args)
            return
        with torch.cuda.stream(torch.cuda.ExternalStream(stream)):  # a graph's capture stream
            self.kernel[self.grid](*self.views[a, b, c], m, n, k, **self.args)

    def __str__(self):
        bm, bn, bk, stages, warps = self.config
        return f"triton {'TMA' if TMA else 'pointers'} {bm}x{bn}x{bk} s{stages} w{warps} grid {self.grid[0]}"


def seconds(call, launches: int = 30) -> float:
    """The median of `launches` launches, each between two events on CuPy's stream (the one the call launches on)."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(launches):
        start.record()
        call()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return float(np.median(times))


def best_triton(dtype: str, s: int, sms: int) -> TritonMatmul:
    a = cupy.random.standard_normal((s, s), dtype=cupy.float32)
    b = cupy.random.standard_normal((s, s), dtype=cupy.float32)
    ta, tb = torch.from_dlpack(a).to(TORCH[dtype]), torch.from_dlpack(b).to(TORCH[dtype])
    tc = torch.empty((s, s), dtype=TORCH[dtype], device="cuda")
    reference = (ta.float() @ tb.float().T).to(TORCH[dtype]).float()
    pointers = (ta.data_ptr(), tb.data_ptr(), tc.data_ptr())
    results = []
    for config in CONFIGS:
        matmul = TritonMatmul(dtype, s, s, s, sms, config)
        try:
            matmul(*pointers)
            torch.cuda.synchronize()
        except Exception as exc:  # a configuration this Triton cannot build (shared memory, registers)
            print(f"  {matmul}: not built ({type(exc).__name__}: {str(exc).splitlines()[0][:100]})", flush=True)
            continue
        theirs = cupy.from_dlpack(reference.contiguous())
        bound = measured_bound(cupy, "random", dtype, theirs)
        bad = int(cupy.count_nonzero(~(cupy.abs(cupy.from_dlpack(tc.float().contiguous()) - theirs) <= bound)))
        end = time.time() + 1.0
        while time.time() < end:
            matmul(*pointers)
        torch.cuda.synchronize()
        t = seconds(lambda: matmul(*pointers))
        tflops = 2 * s ** 3 / t / 1e12
        print(f"  {matmul}: {tflops:.0f} TFLOPS, {bad} elements beyond the bound", flush=True)
        if bad == 0:
            results.append((tflops, matmul))
    if not results:
        raise SystemExit(f"no Triton configuration validated at {s}^3 {dtype}")
    return max(results, key=lambda r: r[0])[1]


def measure(case, device, label: str):
    result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
    if not result.valid:
        print(f"  {label}: INVALID {result.error}", flush=True)
        return
    by = {m.name: m for m in result.metrics}
    ours = by["throughput_tflops"]
    fraction = by.get("library_fraction")
    line = f"  {label}: ours {ours.value:.0f} TFLOPS at {ours.sm_clock_mhz or float('nan'):.0f} MHz"
    if fraction is not None and fraction.samples is not None and len(fraction.samples):
        p10, p50, p90 = np.percentile(fraction.samples, (10, 50, 90))
        line += f"; of the anchor, round by round: median {p50:.3f}, p10 {p10:.3f}, p90 {p90:.3f} " \
                f"({len(fraction.samples)} rounds)"
    print(line, flush=True)


_scratch: dict[int, torch.Tensor] = {}


def scratch(size: int, alignment: int, stream):
    """Triton's global scratch for device-side tensor descriptors: one buffer per size, kept (nothing is allocated
    while a graph is captured)."""
    if size not in _scratch:
        _scratch[size] = torch.empty(size, dtype=torch.int8, device="cuda")
    return _scratch[size]


def main() -> None:
    device = open_device(0)
    if TMA and hasattr(triton, "set_allocator"):
        triton.set_allocator(scratch)
    print(f"{torch.cuda.get_device_name()}; Triton {triton.__version__}, torch {torch.__version__}; "
          f"{'TMA descriptors' if TMA else 'pointer loads'}; streams: CuPy's {cupy.cuda.get_current_stream().ptr}, "
          f"torch's {torch.cuda.current_stream().cuda_stream}", flush=True)
    sizes = [int(x) for x in sys.argv[1:]] or [4096, 8192]
    original = gemm_gpu._call
    for dtype in ("f16", "bf16"):
        for s in sizes:
            print(f"{dtype} {s}^3", flush=True)
            triton_call = best_triton(dtype, s, device.sm_count)
            print(f"  the best: {triton_call}", flush=True)
            case = pipeline(dtype, (s, s, s), **BEST)
            gemm_gpu._call = original
            measure(case, device, f"{case.case_id} against cuBLAS")

            def patched(case_, m, n, k, scales, fast_accum=False):  # gemm_gpu._call's signature
                plan = TritonMatmul(dtype, m, n, k, device.sm_count, triton_call.config)
                return plan, lambda a, b, c: plan(a, b, c)

            gemm_gpu._call = patched  # the anchor (and the verification's reference) become the Triton call
            measure(case, device, f"{case.case_id} against {triton_call}")
            gemm_gpu._call = original


if __name__ == "__main__":
    main()
