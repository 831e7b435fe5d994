"""TMA tensor maps (CUtensorMap), encoded once for every family: tiled and im2col maps over a tensor in global
memory, as the 128 opaque bytes a kernel takes by value (a `const __grid_constant__` argument or a field of one).

Every map here has no interleave and zeros out of bounds; the element is named by its size in bytes (the TMA unit
moves bytes: a map of UINT16 and one of FLOAT16 move the same bits) or, where the driver must know the type, by
name. The driver's refusal is one line naming what was asked for. Runs on the GPU side only (cuda.bindings'
driver), and needs no context: the encoders only fill the 128 bytes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from harness.errors import HarnessError

MAP_WORDS = 16  # 128 bytes
MAP_DTYPE = np.dtype([("w", np.uint64, (MAP_WORDS,))], align=True)  # a CUtensorMap passed by value
SWIZZLES = (None, 32, 64, 128)  # bytes of the swizzle span (None: no swizzle)
PROMOTIONS = (None, 64, 128, 256)  # bytes the L2 fetches around each request (None: no promotion)
_ELEMENTS = {1: "UINT8", 2: "UINT16", 4: "UINT32", 8: "UINT64", "f16": "FLOAT16", "bf16": "BFLOAT16",
             "f32": "FLOAT32", "e4m3": "UINT8", "e5m2": "UINT8"}  # fp8 as its bytes


def _layout(element, swizzle: int | None, promotion: int | None):
    from cuda.bindings import driver

    if element not in _ELEMENTS:
        raise HarnessError(f"no TMA element type for {element!r}: expected one of {', '.join(map(str, _ELEMENTS))}")
    if swizzle not in SWIZZLES or promotion not in PROMOTIONS:
        raise HarnessError(f"swizzle {swizzle} / L2 promotion {promotion}: expected one of {SWIZZLES} / {PROMOTIONS}")
    dtype = getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_ELEMENTS[element]}")
    swizzle_code = getattr(driver.CUtensorMapSwizzle, "CU_TENSOR_MAP_SWIZZLE_" + (f"{swizzle}B" if swizzle else "NONE"))
    promotion_code = getattr(driver.CUtensorMapL2promotion, "CU_TENSOR_MAP_L2_PROMOTION_"
                             + (f"L2_{promotion}B" if promotion else "NONE"))
    return dtype, (driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_code, promotion_code,
                   driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)


def _by_value(label: str, encoder: str, shape: str, err, tmap) -> np.ndarray:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        raise HarnessError(f"{label}: {encoder} refused the map: {err.name} ({shape})")
    return np.array([int(w) for w in tmap.opaque], dtype=np.uint64).view(MAP_DTYPE)


def tiled(label: str, element, address: int, dims: Sequence[int], strides: Sequence[int], box: Sequence[int],
          swizzle: int | None = None, promotion: int | None = None) -> np.ndarray:
    """A tiled map over a tensor of `dims` elements (innermost first) at `address`, `strides` the bytes between
    consecutive indices of every dimension but the innermost, copied in boxes of `box` elements."""
    from cuda.bindings import driver

    dtype, layout = _layout(element, swizzle, promotion)
    return _by_value(label, "cuTensorMapEncodeTiled", f"dims {tuple(dims)}, strides {tuple(strides)}, box {tuple(box)}",
                     *driver.cuTensorMapEncodeTiled(
                         dtype, len(dims), address, [driver.cuuint64_t(d) for d in dims],
                         [driver.cuuint64_t(s) for s in strides], [driver.cuuint32_t(b) for b in box],
                         [driver.cuuint32_t(1) for _ in box], *layout))


def matrix(label: str, element, address: int, rows: int, cols: int, box_rows: int, box_cols: int,
           element_bytes: int, swizzle: int | None = 128, promotion: int | None = None) -> np.ndarray:
    """A 2-D map over a row-major rows x cols matrix, boxes of box_rows x box_cols."""
    return tiled(label, element, address, (cols, rows), (cols * element_bytes,), (box_cols, box_rows), swizzle,
                 promotion)


def im2col(label: str, element, address: int, dims: Sequence[int], strides: Sequence[int], corner_low: Sequence[int],
           corner_high: Sequence[int], channels: int, pixels: int, swizzle: int | None = None,
           promotion: int | None = None) -> np.ndarray:
    """An im2col map over (C, W, [H, [D,]] N): `channels` x `pixels` per load, the pixel box from corner_low to
    the extent - 1 + corner_high in every spatial dimension."""
    from cuda.bindings import driver

    dtype, layout = _layout(element, swizzle, promotion)
    return _by_value(label, "cuTensorMapEncodeIm2col", f"dims {tuple(dims)}, channels {channels}, pixels {pixels}",
                     *driver.cuTensorMapEncodeIm2col(
                         dtype, len(dims), address, [driver.cuuint64_t(d) for d in dims],
                         [driver.cuuint64_t(s) for s in strides], list(corner_low), list(corner_high),
                         driver.cuuint32_t(channels), driver.cuuint32_t(pixels),
                         [driver.cuuint32_t(1) for _ in dims], *layout))
