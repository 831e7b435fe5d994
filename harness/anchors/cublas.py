"""A cuBLAS GEMM anchor: cublasGemmEx on raw device pointers and CuPy's current stream, for a family that times
its kernels beside the library on the same inputs (harness/families/ladder/gpu.py). No family imports another; what
two share lives here.

Layout: row-major C[M, N] = A[M, K] . B[N, K]^T (A and B K-major, the "TN" GEMM) is column-major
C^T[N, M] = B . A^T: cuBLAS's m = N, n = M, its "A" our B (op T, ld K) and its "B" our A (op N, ld K), C's ld N.
f16 inputs compute in f32 (CUBLAS_COMPUTE_32F); f32 inputs likewise, which on CuPy's default math mode is plain
SGEMM on the CUDA cores (no TF32: that needs CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32 math mode, set by nothing
here).
"""

from __future__ import annotations

import numpy as np

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14  # cudaDataType
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
TYPES = {"f32": CUDA_R_32F, "f16": CUDA_R_16F, "bf16": CUDA_R_16BF}


class GemmEx:
    """cublasGemmEx, C[M, N] = A[M, K] . B[N, K]^T with inputs of `dtype` and C of `out_dtype`, f32 compute, on
    CuPy's handle and current stream (CuPy's calls are not captured into a CUDA graph: WholeKernel launches them
    one by one and says so)."""

    def __init__(self, dtype: str, out_dtype: str):
        import cupy
        from cupy_backends.cuda.libs import cublas

        self._cublas, self._cupy = cublas, cupy
        self.handle = cupy.cuda.device.get_cublas_handle()
        self.in_type, self.out_type = TYPES[dtype], TYPES[out_dtype]
        self.alpha = np.ones(1, dtype=np.float32)
        self.beta = np.zeros(1, dtype=np.float32)

    def __call__(self, a: int, b: int, c: int, m: int, n: int, k: int) -> None:
        cublas = self._cublas
        cublas.setStream(self.handle, self._cupy.cuda.get_current_stream().ptr)
        cublas.setPointerMode(self.handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(self.handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, self.alpha.ctypes.data,
                      b, self.in_type, k, a, self.in_type, k, self.beta.ctypes.data, c, self.out_type, n,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
