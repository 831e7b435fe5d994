"""Register fragment layouts of a warpgroup (128 threads) for wgmma, as NumPy index maps.

Warp w of the warpgroup owns rows 16w..16w+15. Within a warp, lane l has group g = l // 4 and
thread-in-group q = l % 4 (PTX ISA, "Register Fragments" for wgmma .m64nNk16).
"""

from __future__ import annotations

import numpy as np

WARPGROUP_THREADS = 128


def _thread_coords():
    t = np.arange(WARPGROUP_THREADS)
    warp, lane = t // 32, t % 32
    return 16 * warp + lane // 4, lane % 4  # first row, q


def a_fragment_words(a_bits: np.ndarray) -> np.ndarray:
    """64x16 16-bit A -> (128, 4) uint32 registers for RS mode.

    Register r of a thread holds row g + 8*(r % 2) and columns 2q + 8*(r // 2) + {0, 1}, the lower
    column in the low half.
    """
    row0, q = _thread_coords()
    words = np.zeros((WARPGROUP_THREADS, 4), dtype=np.uint32)
    for r in range(4):
        rows = row0 + 8 * (r % 2)
        cols = 2 * q + 8 * (r // 2)
        lo = a_bits[rows, cols].astype(np.uint32)
        hi = a_bits[rows, cols + 1].astype(np.uint32)
        words[:, r] = lo | (hi << 16)
    return words


def accumulator_registers(n: int, dtype_acc: str) -> int:
    """32-bit accumulator registers per thread for m64nN: 64*N/128 elements, two per word for f16."""
    elements = 64 * n // WARPGROUP_THREADS
    return elements // 2 if dtype_acc == "f16" else elements


def accumulator_coords(n: int, dtype_acc: str):
    """(rows, cols) arrays, shape (128, elements per thread), of each accumulator element.

    f32: element j is in column block i = j // 4, c = j % 4: row g + 8*(c // 2), col 8i + 2q + c % 2.
    f16: word j holds two elements; element e = 2j + half follows the same rule as f32's j = e.
    The element order is the same for both; only the packing into words differs.
    """
    row0, q = _thread_coords()
    j = np.arange(64 * n // WARPGROUP_THREADS)
    block, c = j // 4, j % 4
    rows = row0[:, None] + 8 * (c // 2)[None, :]
    cols = 8 * block[None, :] + 2 * q[:, None] + (c % 2)[None, :]
    return rows, cols


def accumulator_elements(words: np.ndarray, dtype_acc: str) -> np.ndarray:
    """Raw (128, regs) uint32 words -> (128, elements) bit patterns in element order."""
    words = words.astype(np.uint32)
    if dtype_acc == "f16":
        halves = np.stack([words & 0xFFFF, words >> 16], axis=-1)
        return halves.reshape(words.shape[0], -1)
    return words


def gather_accumulators(words: np.ndarray, n: int, dtype_acc: str) -> np.ndarray:
    """Raw per-thread accumulator words -> the 64xN matrix of bit patterns."""
    rows, cols = accumulator_coords(n, dtype_acc)
    matrix = np.zeros((64, n), dtype=np.uint32)
    matrix[rows, cols] = accumulator_elements(words, dtype_acc)
    return matrix
