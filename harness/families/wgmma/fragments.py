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


def a_fragment_words(a_codes: np.ndarray, bits: int = 16) -> np.ndarray:
    """64 x K A (element codes of `bits` each) -> (128, 4) uint32 registers for RS mode.

    With p = 32 / bits elements per register (one for tf32), register r of a thread holds row
    g + 8 (r % 2) and columns p q + 4 p (r // 2) + j for j < p, the lowest column in the lowest bits:
    16-bit 2q + 8 (r // 2) + {0, 1}; tf32 q + 4 (r // 2); 8-bit 4q + 16 (r // 2) + {0..3};
    b1 32q + 128 (r // 2) + {0..31} (PTX ISA, wgmma register fragments of A for each type).
    """
    row0, q = _thread_coords()
    per = max(1, 32 // bits)
    words = np.zeros((WARPGROUP_THREADS, 4), dtype=np.uint64)
    for r in range(4):
        rows = row0 + 8 * (r % 2)
        for j in range(per):
            cols = per * q + 4 * per * (r // 2) + j
            words[:, r] |= a_codes[rows, cols].astype(np.uint64) << np.uint64(bits * j)
    return words.astype(np.uint32)


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
