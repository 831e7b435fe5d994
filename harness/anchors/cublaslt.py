"""A cuBLASLt fp8 GEMM anchor: cublasLtMatmul through nvmath-python's low-level cuBLASLt bindings
(`nvmath.bindings.cublasLt`), on raw device pointers and CuPy's current stream.

Why the bindings and not `nvmath.linalg.advanced.Matmul`: the stateful Matmul takes fp8 operands only as
tensors whose dtype is float8_e4m3fn / float8_e5m2 (torch tensors in practice; CuPy has no fp8 dtype, and
a CuPy uint8 array is taken as uint8), and its execute() allocates the result unless inplace, records an
event and goes through the package-agnostic stream/workspace layers on every call. The bindings are the
same cuBLASLt calls the Matmul makes (matmul_desc_create, MatmulDescAttribute.FAST_ACCUM,
matmul_algo_get_heuristic, matmul), on integers: the CuPy-native path.

Layout. cuBLASLt is column-major; row-major C[M, N] = A[M, K] . B[N, K]^T is column-major
C^T[N, M] = B . A^T, i.e. cuBLAS's m = N, n = M with cuBLAS's "A" = our B (K x N column-major, ld K, op T)
and cuBLAS's "B" = our A (K x M column-major, ld K, op N): the "TN" form that fp8 requires. Per-tensor
scales go into alpha (their product multiplies the whole product): cuBLASLt 13.1 refuses to run an fp8 matmul
with A/B_SCALE_POINTER set on our H200 (driver 580), though it plans one.

Per call: one cublasLtMatmul on the plan of __init__ (descriptors, layouts, the heuristic's first
algorithm, a workspace, alpha (the scales' product) and beta on the host): nothing is allocated, and
nothing synchronizes.
"""

from __future__ import annotations

import numpy as np

from harness.anchors import Anchor
from harness.errors import HarnessError

INSTALL_HINT = "install the fp8 extra: pip install 'hopper-bench[fp8]'"
WORKSPACE_BYTES = 32 << 20  # cuBLAS's recommendation for Hopper
ALIGNMENT = 256  # cuBLASLt's default MIN_ALIGNMENT_*_BYTES preference: the plan assumes it
# cudaDataType_t
CUDA_R_32F, CUDA_R_16F, CUDA_R_16BF, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 = 0, 2, 14, 28, 29
INPUT_TYPES = {"e4m3": CUDA_R_8F_E4M3, "e5m2": CUDA_R_8F_E5M2}
OUTPUT_TYPES = {"f16": CUDA_R_16F, "bf16": CUDA_R_16BF}



def anchor(fast_accumulation: bool = False, block_scaled: bool = False, b_dtype: str = "e4m3") -> Anchor:
    """The fp8 GEMM anchor, as a measurement names it (e4m3 x e4m3 or e5m2 -> f16, per-tensor scales of 1 or block
    scales)."""
    return Anchor("cuBLASLt", "cublasLtMatmul",
                  f"cuBLASLt fp8 (cublasLtMatmul through nvmath-python; TN, e4m3 x {b_dtype} -> f16, f32 compute, "
                  + ("block scales A 1x128 and B 128x128 (VEC128_32F, BLK128x128_32F), " if block_scaled
                     else "scales 1, ")
                  + ("fast accumulation on: the tensor cores' sum for the whole of K)" if fast_accumulation
                     else "no fast accumulation: partial sums promoted into f32)"),
                  requires="nvmath",
                  missing="cuBLASLt's fp8 matmul needs nvmath-python (pip install 'hopper-bench[fp8]')")


_handles: dict[int, int] = {}  # one cuBLASLt handle per device for the process


def _bindings():
    """nvmath's cublasLt and cublas binding modules, or a HarnessError saying how to install them."""
    try:
        from nvmath.bindings import cublas, cublasLt
    except ImportError as exc:
        raise HarnessError(f"the cuBLASLt fp8 anchor needs nvmath-python ({exc}): {INSTALL_HINT}") from None
    return cublasLt, cublas


def _set(set_attribute, dtype_of, obj: int, attribute, value) -> None:
    """One cuBLASLt attribute: `value` as the attribute's own C type."""
    buf = np.array(value, dtype=dtype_of(attribute))
    set_attribute(obj, attribute, buf.ctypes.data, buf.itemsize)


class CublasLtMatmul:
    """C[M, N] (row-major, f16 or bf16 out) = A[M, K] . B[N, K]^T, A and B row-major (K-major), e4m3 inputs
    (B may be e5m2), f32 accumulation, per-tensor scales (default 1.0), on CuPy's current stream.

    fast_accumulation sets CUBLASLT_MATMUL_DESC_FAST_ACCUM: off, cuBLASLt promotes the tensor cores' fp8
    partial sums into f32 registers at intervals along K; on, it keeps them in the tensor cores'
    accumulator for the whole K (faster, less accurate on Hopper). The plan (and its device buffers)
    belongs to the device current at construction; call it with that device current."""

    def __init__(self, a_dtype: str, b_dtype: str, out_dtype: str, m: int, n: int, k: int, fast_accumulation: bool,
                 *, a_scale: float = 1.0, b_scale: float = 1.0, block_scales: tuple[int, int] | None = None):
        if a_dtype != "e4m3" or b_dtype not in INPUT_TYPES:
            raise HarnessError(f"cuBLASLt fp8 anchor: A must be e4m3 and B e4m3 or e5m2, not {a_dtype} x {b_dtype}")
        if out_dtype not in OUTPUT_TYPES:
            raise HarnessError(f"cuBLASLt fp8 anchor: the output must be f16 or bf16, not {out_dtype}")
        if min(m, n, k) <= 0 or m % 16 or n % 16 or k % 16:
            raise HarnessError(f"cuBLASLt fp8 anchor: M, N, K must be positive multiples of 16 (fp8), not {m}x{n}x{k}")
        lt, cublas = _bindings()
        import cupy

        self.a_dtype, self.b_dtype, self.out_dtype = a_dtype, b_dtype, out_dtype
        self.m, self.n, self.k = m, n, k
        self.fast_accumulation = bool(fast_accumulation)
        self.a_scale, self.b_scale = float(a_scale), float(b_scale)
        # DeepSeek-V3's block scales (device pointers to f32): A's [K / 128][M] (cuBLASLt's VEC128_32F on its B),
        # B's [N / 128][K / 128] (BLK128x128_32F on its A). Measured on an H100 (cuBLASLt 13.1): of the four
        # row/column orders only this one gives the scaled product; the others miss by up to 100 x
        self.block_scales = block_scales
        # cuBLASLt reads B's 128x128 scales a 16-byte row at a time (measured on an H100 with cuBLASLt 13.1: with
        # 9 k-blocks a row, packed, C's second and third 128 columns came out wrong; padded to 12, right)
        if block_scales is not None and (self.fast_accumulation or n % 128 or k % 512):
            raise HarnessError(f"cuBLASLt fp8 anchor: block scales take no fast accumulation, N in multiples of 128 "
                               f"and K of 512 (rows of B's scales in whole 16 bytes), not {m}x{n}x{k}"
                               + (" with fast accumulation" if self.fast_accumulation else ""))
        self.name = (f"cuBLASLt fp8 {a_dtype} x {b_dtype} -> {out_dtype}, f32 accumulation "
                     + ("with fast accumulation (CUBLASLT_MATMUL_DESC_FAST_ACCUM on)" if self.fast_accumulation
                        else "(no fast accumulation)")
                     + ("" if (self.a_scale, self.b_scale) == (1.0, 1.0)
                        else f", scales A {self.a_scale:g} B {self.b_scale:g}")
                     + ("" if block_scales is None else ", block scales (A 1x128 VEC128_32F, B 128x128 BLK128x128_32F)"))
        self._cupy = cupy
        self._error = lt.cuBLASLtError
        self._lt = lt
        self._desc = self._layouts = self._preference = None
        try:
            self.device = cupy.cuda.runtime.getDevice()
            self._handle = _handles.get(self.device) or _handles.setdefault(self.device, lt.create())
            self.version = lt.get_version()
            self._plan(lt, cublas, cupy)
        except HarnessError:
            raise
        except Exception as exc:  # cuBLASLtError, a library or driver that cannot be loaded, a CUDA error
            raise HarnessError(f"cuBLASLt refused {self.name} at {m}x{n}x{k}: {type(exc).__name__}: {exc}") from None

    def _plan(self, lt, cublas, cupy) -> None:
        m, n, k = self.m, self.n, self.k
        desc_attr, set_desc = lt.MatmulDescAttribute, lt.matmul_desc_set_attribute
        # Device memory of our own, made once: the workspace.
        self._workspace = cupy.empty(WORKSPACE_BYTES, dtype=cupy.uint8)
        self._alpha = np.ones(1, dtype=np.float32)
        self._beta = np.zeros(1, dtype=np.float32)

        self._desc = lt.matmul_desc_create(int(cublas.ComputeType.COMPUTE_32F), CUDA_R_32F)
        dtype_of = lt.get_matmul_desc_attribute_dtype
        _set(set_desc, dtype_of, self._desc, desc_attr.TRANSA, int(cublas.Operation.T))
        _set(set_desc, dtype_of, self._desc, desc_attr.TRANSB, int(cublas.Operation.N))
        _set(set_desc, dtype_of, self._desc, desc_attr.FAST_ACCUM, int(self.fast_accumulation))
        # Per-tensor scales through alpha (D = alpha . scale_A . scale_B . A B is the same product): cuBLASLt 13.1
        # plans a matmul with A/B_SCALE_POINTER set but refuses to run it (CUBLAS_STATUS_NOT_SUPPORTED, seen on an
        # H200 with driver 580), and runs it without them.
        self._alpha[0] = self.a_scale * self.b_scale
        if self.block_scales is not None:  # cuBLAS's A is our B, its B our A
            scale_a, scale_b = self.block_scales
            modes = lt.MatmulMatrixScale
            _set(set_desc, dtype_of, self._desc, desc_attr.A_SCALE_MODE, int(modes.BLK128x128_32F))
            _set(set_desc, dtype_of, self._desc, desc_attr.B_SCALE_MODE, int(modes.VEC128_32F))
            _set(set_desc, dtype_of, self._desc, desc_attr.A_SCALE_POINTER, int(scale_b))
            _set(set_desc, dtype_of, self._desc, desc_attr.B_SCALE_POINTER, int(scale_a))

        self._layouts = [lt.matrix_layout_create(INPUT_TYPES[self.b_dtype], k, n, k),  # cuBLAS's A: our B
                         lt.matrix_layout_create(INPUT_TYPES[self.a_dtype], k, m, k),  # cuBLAS's B: our A
                         lt.matrix_layout_create(OUTPUT_TYPES[self.out_dtype], n, m, n)]  # C and D: C^T
        self._preference = lt.matmul_preference_create()
        _set(lt.matmul_preference_set_attribute, lt.get_matmul_preference_attribute_dtype, self._preference,
             lt.MatmulPreferenceAttribute.MAX_WORKSPACE_BYTES, WORKSPACE_BYTES)

        self._results = np.zeros(1, dtype=lt.matmul_heuristic_result_dtype)
        found = np.zeros(1, dtype=np.int32)
        a_layout, b_layout, d_layout = self._layouts
        lt.matmul_algo_get_heuristic(self._handle, self._desc, a_layout, b_layout, d_layout, d_layout,
                                     self._preference, 1, self._results.ctypes.data, found.ctypes.data)
        if found[0] < 1 or self._results[0]["state"] != 0:
            raise HarnessError(f"cuBLASLt {self.version} has no algorithm for {self.name} at {m}x{n}x{k}")
        # The chosen algorithm, in place in the heuristic's result (kept alive by self._results).
        self._algo = self._results.ctypes.data + self._results.dtype.fields["algo"][1]
        self.workspace_bytes = int(self._results[0]["workspace_size"])
        self.algorithm = self._describe(lt)
        self._args = (self._handle, self._desc, self._alpha.ctypes.data, a_layout, b_layout, self._beta.ctypes.data,
                      d_layout, self._algo, self._workspace.data.ptr, WORKSPACE_BYTES)

    def _describe(self, lt) -> dict[str, int]:
        """The chosen algorithm's configuration (id, tile, stages, cluster shape ...), for reports."""
        out = {}
        written = np.zeros(1, dtype=np.uint64)  # size_t
        for attribute in lt.MatmulAlgoConfigAttribute:
            try:
                buf = np.zeros(1, dtype=lt.get_matmul_algo_config_attribute_dtype(attribute))
                lt.matmul_algo_config_get_attribute(self._algo, attribute, buf.ctypes.data, buf.itemsize,
                                                    written.ctypes.data)
                out[attribute.name.lower()] = int(buf[0])
            except Exception:  # an attribute this cuBLASLt does not know: leave it out
                continue
        return out

    def __call__(self, a_ptr: int, b_ptr: int, c_ptr: int) -> None:
        """C = A . B^T on CuPy's current stream. Allocates nothing, synchronizes nothing."""
        if (a_ptr | b_ptr | c_ptr) % ALIGNMENT:
            raise HarnessError(f"{self.name}: A, B and C must be {ALIGNMENT}-byte aligned "
                               f"(A {a_ptr:#x}, B {b_ptr:#x}, C {c_ptr:#x})")
        handle, desc, alpha, a_layout, b_layout, beta, d_layout, algo, workspace, workspace_bytes = self._args
        try:
            self._lt.matmul(handle, desc, alpha, b_ptr, a_layout, a_ptr, b_layout, beta, c_ptr, d_layout, c_ptr,
                            d_layout, algo, workspace, workspace_bytes, self._cupy.cuda.get_current_stream().ptr)
        except self._error as exc:
            raise HarnessError(f"cuBLASLt refused {self.name} at {self.m}x{self.n}x{self.k}: {exc}") from None

    def close(self) -> None:
        """Destroy the descriptors (the handle stays, shared by the process); idempotent."""
        lt = self._lt
        self._args = None
        if self._preference is not None:
            lt.matmul_preference_destroy(self._preference)
            self._preference = None
        for layout in self._layouts or ():
            lt.matrix_layout_destroy(layout)
        self._layouts = None
        if self._desc is not None:
            lt.matmul_desc_destroy(self._desc)
            self._desc = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
