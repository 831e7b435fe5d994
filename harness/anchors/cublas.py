"""cuBLAS GEMM anchors, cublasGemmEx on raw device pointers and CuPy's current stream (harness/anchors):

    GEMM_EX   the anchor as a measurement names it (the gemm family's f16 and bf16 library case, cublas.*)
    SGEMM     the ladder's f32 anchor (its library rung, ladder.cublas.f32.*, and its f32 steps' rounds)
    Library   the gemm family's call: through nvmath-python's cuBLAS bindings with a workspace of its own where they
              are installed (it then captures into a CUDA graph), else CuPy's
    GemmEx    the ladder family's call, on CuPy's handle (f16, bf16 or f32 inputs)

No family imports another; what two share lives here.

Layout: row-major C[M, N] = A[M, K] . B[N, K]^T (A and B K-major, the "TN" GEMM) is column-major
C^T[N, M] = B . A^T: cuBLAS's m = N, n = M, its "A" our B (op T, ld K) and its "B" our A (op N, ld K), C's ld N.
f16 inputs compute in f32 (CUBLAS_COMPUTE_32F); f32 inputs likewise, which on CuPy's default math mode is plain
SGEMM on the CUDA cores (no TF32: that needs CUBLAS_COMPUTE_32F_FAST_TF32 or the TF32 math mode, set by nothing
here).
"""

from __future__ import annotations

import functools

import numpy as np

from harness.anchors import Anchor

CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF = 0, 2, 14  # cudaDataType
CUBLAS_COMPUTE_32F = 68
CUBLAS_GEMM_DEFAULT = -1
TYPES = {"f32": CUDA_R_32F, "f16": CUDA_R_16F, "bf16": CUDA_R_16BF}

GEMM_EX = Anchor("cuBLAS", "cublasGemmEx",
                 "cuBLAS (cublasGemmEx, TN: C = A . B^T, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)")
SGEMM = Anchor("cuBLAS", "cublasGemmEx",
               "cuBLAS SGEMM (cublasGemmEx, f32 in and out, CUBLAS_COMPUTE_32F), on CuPy's handle and stream")

WORKSPACE_BYTES = 32 << 20


@functools.cache
def _handle() -> tuple[int, object, object]:
    """A cuBLAS handle for the process, with a workspace of its own where the bindings let us set one: cuBLAS then
    allocates nothing while a stream is captured, so its calls replay in a CUDA graph as the kernel's do (a library
    call that could not be captured is launched call by call, and at small shapes the host's dispatch, not the
    GPU, sets its rate). nvmath-python's cuBLAS bindings (the `fp8` extra) do; CuPy 14.2's neither expose
    cublasSetWorkspace nor allow a cuBLAS call while a stream is captured, so without nvmath it is CuPy's handle.
    Returns (handle, workspace or None, the binding module: nvmath's, or None for CuPy's)."""
    import cupy

    try:
        from nvmath.bindings import cublas as nvmath_cublas
    except ImportError:
        return cupy.cuda.device.get_cublas_handle(), None, None
    handle = nvmath_cublas.create()
    workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
    return handle, workspace, nvmath_cublas


# The stream each nvmath handle was last set to (and its workspace with it), by handle: the handle is the process's,
# shared by every Library, so what one instance set is what the next call finds
_bound_stream: dict[int, int] = {}


class Library:
    """cublasGemmEx on the current stream: C[M, N] = A[M, K] . B[N, K]^T, f32 compute, CUBLAS_GEMM_DEFAULT (the same
    call through either binding: nvmath-python's, capturable, or CuPy's)."""

    def __init__(self, dtype: str):
        from cupy_backends.cuda.libs import cublas

        import cupy

        self._cublas = cublas
        self._cupy = cupy
        self.handle, self._workspace, self._nvmath = _handle()
        self.type = CUDA_R_16F if dtype == "f16" else CUDA_R_16BF
        self.alpha = np.ones(1, dtype=np.float32)
        self.beta = np.zeros(1, dtype=np.float32)

    @property
    def binding(self) -> str:
        return "nvmath-python's cuBLAS bindings, own workspace" if self._nvmath else "CuPy's cuBLAS bindings"

    def __call__(self, a: int, b: int, c: int, m: int, n: int, k: int) -> None:
        stream = self._cupy.cuda.get_current_stream().ptr
        if self._nvmath is not None:
            nv = self._nvmath
            if _bound_stream.get(self.handle) != stream:  # cublasSetStream resets the workspace: set ours after it
                nv.set_stream(self.handle, stream)
                nv.set_workspace(self.handle, self._workspace.data.ptr, WORKSPACE_BYTES)
                nv.set_pointer_mode(self.handle, int(nv.PointerMode.HOST))
                _bound_stream[self.handle] = stream
            nv.gemm_ex(self.handle, int(nv.Operation.T), int(nv.Operation.N), n, m, k, self.alpha.ctypes.data,
                       b, self.type, k, a, self.type, k, self.beta.ctypes.data, c, self.type, n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)
            return
        cublas = self._cublas
        cublas.setStream(self.handle, stream)
        cublas.setPointerMode(self.handle, cublas.CUBLAS_POINTER_MODE_HOST)
        cublas.gemmEx(self.handle, cublas.CUBLAS_OP_T, cublas.CUBLAS_OP_N, n, m, k, self.alpha.ctypes.data,
                      b, self.type, k, a, self.type, k, self.beta.ctypes.data, c, self.type, n,
                      CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT)



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
