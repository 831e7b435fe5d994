"""A cuBLAS GEMM anchor for f16 and bf16: cublasGemmEx through CuPy's cuBLAS bindings, on raw device pointers and
CuPy's current stream.

Layout. cuBLAS is column-major; row-major C[M, N] = A[M, K] . B[N, K]^T is column-major C^T[N, M] = B . A^T: cuBLAS's
m = N, n = M, op T on B's K x N storage (ld K), op N on A's (ld K), C^T with ld N. f32 compute
(CUBLAS_COMPUTE_32F), the default algorithm (CUBLAS_GEMM_DEFAULT), alpha 1 and beta 0 on the host.
"""

from __future__ import annotations

import functools

import numpy as np

from harness.anchors import Anchor

CUDA_R_16F, CUDA_R_16BF = 2, 14  # cudaDataType
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
WORKSPACE_BYTES = 32 << 20
DTYPES = ("f16", "bf16")

GEMM_EX = Anchor("cuBLAS", "cublasGemmEx",
                 "cuBLAS (cublasGemmEx, TN: C = A . B^T, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)")


@functools.cache
def _handle() -> tuple[int, object]:
    """A cuBLAS handle for the process. Where CuPy exposes cublasSetWorkspace, one of our own with a workspace
    of its own: cuBLAS then allocates nothing while a stream is captured, so its calls can be replayed in a
    CUDA graph as the kernel's are. Otherwise (CuPy 14.2 does not expose it) CuPy's handle: its calls are
    launched one by one (WholeKernel says so, and leaves out the rounds where that left the GPU idle)."""
    import cupy
    from cupy_backends.cuda.libs import cublas

    if not hasattr(cublas, "setWorkspace"):
        return cupy.cuda.device.get_cublas_handle(), None
    handle = cublas.create()
    workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
    cublas.setWorkspace(handle, workspace.data.ptr, WORKSPACE_BYTES)
    return handle, workspace


class GemmEx:
    """cublasGemmEx on the current stream: C[M, N] = A[M, K] . B[N, K]^T (row-major, K-major A and B), f16 or bf16
    in and out, f32 compute."""

    def __init__(self, dtype: str):
        from cupy_backends.cuda.libs import cublas

        import cupy

        self._cublas = cublas
        self._cupy = cupy
        self.handle, _ = _handle()
        self.type = CUDA_R_16F if dtype == "f16" else CUDA_R_16BF
        self.alpha = np.ones(1, dtype=np.float32)
        self.beta = np.zeros(1, dtype=np.float32)

    def __call__(self, a: int, b: int, c: int, m: int, n: int, k: int) -> None:
        cublas = self._cublas
        cublas.setStream(self.handle, self._cupy.cuda.get_current_stream().ptr)
        cublas.setPointerMode(self.handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(self.handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, self.alpha.ctypes.data,
                      b, self.type, k, a, self.type, k, self.beta.ctypes.data, c, self.type, n,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
