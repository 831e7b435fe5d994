"""The TMA family's GPU resources (Family.attach): the source tensor, its tensor map (by value and in
global memory), each kernel's dynamic shared memory, and the kernel arguments after the common four
(ptx/tma.cu.in: map, gmap, src, tiles). Runs in the worker process, on the GPU only."""

from __future__ import annotations

from math import prod

import numpy as np

from harness import tensormaps
from harness.errors import HarnessError
from harness.families.base import Attachment
import harness.families.tma.model as model
from harness.families.tma.layout import (SOURCE_L2_MULTIPLE, SOURCE_MIN_BYTES, dynamic_smem, geometry, source_bytes,
                                         source_tiles, stream_stages)
from harness.families.tma.cases import PORTABLE_CLUSTER

FILL_CHUNK_WORDS = 1 << 24
MAP_DTYPE = tensormaps.MAP_DTYPE  # CUtensorMap: 128 opaque bytes, passed by value


def source_size(device) -> int:
    l2 = device.l2_bytes or 50 << 20
    wanted = max(SOURCE_L2_MULTIPLE * l2, SOURCE_MIN_BYTES)
    return min(wanted, (device.total_memory_bytes or 16 << 30) // 8)


def fill_source(cupy, nbytes: int):
    """A device buffer whose 32-bit word w is model.source_words(w), computed on the GPU."""
    words = cupy.empty(nbytes // 4, dtype=cupy.uint32)
    for start in range(0, words.size, FILL_CHUNK_WORDS):
        stop = min(start + FILL_CHUNK_WORDS, words.size)
        x = cupy.arange(start, stop, dtype=cupy.uint64) * cupy.uint64(0x9E3779B1) + cupy.uint64(0x7F4A7C15)
        x = (x ^ (x >> cupy.uint64(15))) * cupy.uint64(0x2C1B3C6D)
        words[start:stop] = ((x ^ (x >> cupy.uint64(12))) & cupy.uint64(0xFFFFFFFF)).astype(cupy.uint32)
    return words


def evict_l2(cupy, l2_bytes: int) -> None:
    """Write twice the L2 elsewhere, so that no part of the source starts out in the L2."""
    scratch = cupy.ones(max(2 * l2_bytes, 1 << 20) // 4, dtype=cupy.uint32)
    scratch += 1
    cupy.cuda.get_current_stream().synchronize()
    del scratch


def encode_map(case, geometry: model.Geometry, address: int) -> np.ndarray:
    """cuTensorMapEncodeTiled over the source, as the by-value kernel argument (harness/tensormaps.py)."""
    # rank 1 has no stride; an empty list reaches the driver as a null pointer, which it refuses
    strides = geometry.strides[1:] or (-(-geometry.dims[0] * geometry.elem // 16) * 16,)
    return tensormaps.tiled(str(case), geometry.elem, address, geometry.dims, strides, geometry.box,
                            case.swizzle or None, case.promotion or None)


def encode_im2col_map(case, geometry: model.Im2colGeometry, address: int) -> np.ndarray:
    """cuTensorMapEncodeIm2col over the source as (C, W, [H, [D,]] N): the pixel box from the corner to
    the extent - 1 + the corner in every spatial dimension, `channels` x `pixels` per load."""
    spatial = len(geometry.spatial)
    return tensormaps.im2col(str(case), geometry.elem, address, geometry.dims, geometry.strides[1:],
                             [model.IM2COL_CORNER] * spatial, [model.IM2COL_CORNER] * spatial, geometry.channels,
                             geometry.pixels, case.swizzle or None, case.promotion or None)


def attach(case, probe, device) -> Attachment:
    import cupy

    from harness.families.tma.cases import COPY_OPS

    copies = case.op in COPY_OPS
    nbytes = source_size(device) if case.op in COPY_OPS or case.op in ("read", "cp.async", "ld+st") else 1 << 20
    if copies:
        tiles = source_tiles(case, nbytes)
        nbytes = source_bytes(case, tiles)
    else:
        tiles = nbytes // 16  # the baselines walk the source in 16-byte words
    source = fill_source(cupy, nbytes)
    tensor_map = np.zeros(1, dtype=MAP_DTYPE)
    if case.im2col:
        tensor_map = encode_im2col_map(case, geometry(case, tiles), source.data.ptr)
    elif case.tensor:
        tensor_map = encode_map(case, geometry(case, tiles), source.data.ptr)
    global_map = cupy.asarray(tensor_map.view(np.uint64))  # 256-byte aligned: CuPy's allocations are
    evict_l2(cupy, device.l2_bytes or 50 << 20)
    smem = {}
    if copies:
        smem = {"probe_check": dynamic_smem(case, 1), "probe_latency": dynamic_smem(case, 1),
                "probe_latency_cold": dynamic_smem(case, 1), "probe_latency_empty": dynamic_smem(case, 1),
                "probe_latency_prefetched": dynamic_smem(case, 1),
                **{f"probe_stream_k{k}": dynamic_smem(case, k) for k in stream_stages(case)}}
    if copies:  # the fresh-tile kernels' launch counters start at zero for every probe (their checks expect it)
        for name in ("cold_launches", "prefetch_launches"):
            try:
                counter = probe.module.get_global(name)
            except Exception:  # a counter no kernel of this probe uses is not in the module
                continue
            cupy.ndarray((1,), cupy.uint32, counter).fill(0)
    if copies and prod(case.box) and tiles < 2000:  # checks read tiles below 1000, the L2 latency up to ~1500
        raise HarnessError(f"{case}: the source holds only {tiles} boxes; the checks and the L2 tiles need 2000")
    return Attachment(extra_args=(tensor_map, global_map, source, np.int64(tiles)), dynamic_smem=smem,
                      resources=(source, global_map),
                      runtime_cluster=case.cluster if case.cluster > PORTABLE_CLUSTER else 0)
