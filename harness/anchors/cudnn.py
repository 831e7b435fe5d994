"""A cuDNN fused-attention anchor: scaled dot-product attention forward through NVIDIA's cuDNN frontend
(`nvidia-cudnn-frontend`, its Python graph API), on raw device pointers and CuPy's current stream.

The graph is built once per problem: Q, K, V and O as [batch, heads, seq, D] tensors whose strides are the
[batch, seq, heads, D] layout the attention family stores (so cuDNN reads the very buffers the kernel reads), the
inputs' type in and out, f32 intermediates and compute, attn_scale = 1 / sqrt(D), the causal mask where asked, and
no softmax statistics (inference). Its plan is the heuristic's first that supports the graph (heuristics A, then the
fallback); a workspace is allocated once. A call is one graph execute: nothing allocated, nothing synchronized.

The frontend loads the cuDNN library (libcudnn.so.9) from the `nvidia-cudnn-cu13` wheel or the loader's path; the
`attention` extra pins the frontend (pip install 'hopper-bench[attention]').
"""

from __future__ import annotations

from harness.anchors import Anchor
from harness.errors import HarnessError

INSTALL_HINT = "install the attention extra: pip install 'hopper-bench[attention]' (and cuDNN 9: nvidia-cudnn-cu13)"
DTYPES = ("bf16", "f16")


def available() -> bool:
    """Whether the cuDNN frontend can be imported here (its library is loaded on first use)."""
    import importlib.util

    return importlib.util.find_spec("cudnn") is not None


def anchor() -> Anchor:
    """The fused-attention anchor, as a measurement names it (its versions where the frontend is here)."""
    return Anchor("cuDNN", "sdpa",
                  f"{version()} fused attention (sdpa forward, inference, same inputs)" if available() else "",
                  requires="cudnn", missing=f"cuDNN's attention needs the cuDNN frontend ({INSTALL_HINT})")


def version() -> str:
    """The cuDNN library and frontend versions, in words (a measurement's notes name them)."""
    cudnn = _frontend()
    try:
        backend = cudnn.backend_version_string()
    except Exception:  # the library could not be loaded: the frontend alone is known
        backend = "?"
    return f"cuDNN {backend}, cudnn-frontend {getattr(cudnn, '__version__', '?')}"


def _frontend():
    try:
        import cudnn
    except ImportError as exc:
        raise HarnessError(f"the cuDNN attention anchor needs the cuDNN frontend ({exc}): {INSTALL_HINT}") from None
    return cudnn


def bshd_strides(batch: int, seq: int, heads: int, dim: int) -> list[int]:
    """Element strides of [batch, heads, seq, D] over memory laid out [batch, seq, heads, D]."""
    return [seq * heads * dim, dim, heads * dim, 1]


class CudnnSdpa:
    """O = softmax(Q K^T x scale [+ causal mask]) V for Q, K, V, O in [batch, seq, heads, D] (bf16 or f16), on
    CuPy's current stream."""

    def __init__(self, dtype: str, batch: int, seq: int, heads: int, dim: int, causal: bool, scale: float):
        if dtype not in DTYPES:
            raise HarnessError(f"cuDNN attention anchor: dtype {dtype!r}, expected one of {', '.join(DTYPES)}")
        import cupy

        cudnn = _frontend()
        self._cudnn, self._cupy = cudnn, cupy
        io = cudnn.data_type.BFLOAT16 if dtype == "bf16" else cudnn.data_type.HALF
        try:
            self.handle = cudnn.create_handle()
            graph = cudnn.pygraph(io_data_type=io, intermediate_data_type=cudnn.data_type.FLOAT,
                                  compute_data_type=cudnn.data_type.FLOAT, handle=self.handle)
            dims, strides = [batch, heads, seq, dim], bshd_strides(batch, seq, heads, dim)
            self.q, self.k, self.v = (graph.tensor(name=name, dim=dims, stride=strides, data_type=io)
                                      for name in ("q", "k", "v"))
            self.o, _ = graph.sdpa(name="sdpa", q=self.q, k=self.k, v=self.v, is_inference=True, attn_scale=scale,
                                   use_causal_mask=causal)
            self.o.set_output(True).set_dim(dims).set_stride(strides).set_data_type(io)
            graph.validate()
            graph.build_operation_graph()
            graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
            graph.check_support()
            graph.build_plans()
        except Exception as exc:  # the frontend raises its own types, and RuntimeError from the library
            raise HarnessError(f"cuDNN refused attention {dtype} {batch}x{seq}x{heads}x{dim}"
                               f"{' causal' if causal else ''}: {str(exc).splitlines()[0] if str(exc) else exc!r}") \
                from None
        self.graph = graph
        self.workspace = cupy.empty(max(1, graph.get_workspace_size()), dtype=cupy.uint8)

    def __call__(self, q: int, k: int, v: int, o: int) -> None:
        self._cudnn.set_stream(handle=self.handle, stream=self._cupy.cuda.get_current_stream().ptr)
        self.graph.execute({self.q: q, self.k: k, self.v: v, self.o: o}, self.workspace.data.ptr, handle=self.handle)
