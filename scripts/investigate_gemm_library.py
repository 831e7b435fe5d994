# An investigation (issue 42), not a probe of the harness. Two questions the GEMM targets turn on:
#   1. How many clusters of 2 and of 4 CTAs the GPU runs at once for the GEMM kernel (one CTA per SM, its whole
#      shared memory): a persistent grid of more clusters than that leaves the extra ones to a second wave.
#      cuOccupancyMaxActiveClusters on the kernel as the family compiles it.
#   2. Which kernels the libraries run on the problems we compare with (cuBLAS f16, cuBLASLt e4m3 without and
#      with fast accumulation, through the harness's own anchors), their names (tile, cluster, schedule) and
#      times, from CUPTI's kernel records (torch.profiler, a cross-check: the project itself does not use torch).
# Output: stdout (the device call keeps it).
import sys

import cupy
import numpy as np
from harness.build.compile import compile_probe
from harness.measure import launch
from harness.registry import parse_case_id, probe_source

CASES = ("gemm.e4m3.4096x4096x4096.tile128x128x128.s4.wg2.setmaxnreg.cluster{c}.persistent-grouped.tmastore.overlap",
         "gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster{c}.persistent-grouped.tmastore")


def max_active_clusters(case_id: str) -> int:
    case = parse_case_id(case_id)
    function = cupy.RawModule(path=str(compile_probe(probe_source(case)).cubin_path)).get_function("probe_gemm")
    return launch.max_active_clusters(function, case.threads, case.smem_bytes(), case.cluster)


def library_kernels() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    from harness.anchors.cublaslt import CublasLtMatmul
    from harness.anchors.cublas import Library

    for s in (4096, 8192):
        a = cupy.random.randint(0, 0x7E, size=(s, s), dtype=cupy.uint8)  # finite e4m3 codes
        b = cupy.random.randint(0, 0x7E, size=(s, s), dtype=cupy.uint8)
        c = cupy.zeros((s, s), dtype=cupy.uint16)
        ah = cupy.random.standard_normal((s, s), dtype=cupy.float32).astype(cupy.float16)
        bh = cupy.random.standard_normal((s, s), dtype=cupy.float32).astype(cupy.float16)
        calls = {"cublaslt.e4m3": (lambda m=CublasLtMatmul("e4m3", "e4m3", "f16", s, s, s, False): m(a.data.ptr, b.data.ptr, c.data.ptr)),
                 "cublaslt.e4m3.fastaccum": (lambda m=CublasLtMatmul("e4m3", "e4m3", "f16", s, s, s, True): m(a.data.ptr, b.data.ptr, c.data.ptr)),
                 "cublas.f16": (lambda lib=Library("f16"): lib(ah.data.ptr, bh.data.ptr, c.data.ptr, s, s, s))}
        for name, call in calls.items():
            for _ in range(20):
                call()
            cupy.cuda.Device().synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    call()
                cupy.cuda.Device().synchronize()
                torch.cuda.synchronize()
            kernels = {}
            for event in prof.events():
                if event.device_type == torch.autograd.DeviceType.CUDA:
                    kernels.setdefault(event.name, []).append(event.device_time_total if hasattr(event, "device_time_total") else event.cuda_time_total)
            for kernel, times in kernels.items():
                print(f"{name} {s}^3: {len(times)} x {kernel}, median {np.median(times):.1f} us "
                      f"({2 * s ** 3 / np.median(times) / 1e6:.0f} TFLOPS)", flush=True)


if __name__ == "__main__":
    print(cupy.cuda.runtime.getDeviceProperties(0)["name"].decode(), flush=True)
    for template in CASES:
        for cluster in (1, 2, 4):
            case_id = template.format(c=cluster)
            print(f"max active clusters of {cluster}: {max_active_clusters(case_id)} ({case_id})", flush=True)
    try:
        library_kernels()
    except Exception as exc:  # the cross-check is optional: say why it did not run
        print(f"library kernels: not profiled ({type(exc).__name__}: {exc})", file=sys.stderr)
