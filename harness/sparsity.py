"""Structured sparsity of a sparse matrix multiply's A operand: a pattern, the compressed A, and one warp's
metadata words for 16 rows of A (PTX ISA; a form that spans several warps calls it once per warp).

PTX ISA, "Sparse matrix storage" and "Matrix fragments for multiply-accumulate operation with sparse
matrix A". Each row of A is cut into chunks of four *slots*; two slots of every chunk hold the
non-zeros, and the chunk's 4-bit metadata nibble names them: the first slot index in bits 1:0, the
second in bits 3:2, in increasing order (what the ordered-metadata forms require; the others accept it
too). Those index pairs give the six legal nibbles 0b0100, 0b1000, 0b1100, 0b1001, 0b1101, 0b1110.
A slot is
    one element      f16, bf16, s8, u8, e4m3, e5m2    (2:4 sparsity)
    two elements     s4, u4                           (4:8 sparsity, non-zeros in pairs)
    half an element  tf32                             (1:2 sparsity: nibble 0b0100 keeps element 0
                                                       of a pair, 0b1110 element 1)
A is held compressed (its K/2 kept elements per row, in order) in the dense fragment layout of an
M x K/2 matrix. Metadata: in each group of four lanes (rows g and g + 8 of A), T = chunks per row / 4
lanes hold it, starting at lane 4g + selector * T. How the nibbles spread over those lanes depends
on the slot's width (read off the PTX ISA's metadata figures for f16/bf16/tf32, and measured on an
H100 for every slot width by scripts/discover_sparse_metadata.py):
    16-bit slots (f16, bf16, tf32): lane j holds chunks 4j..4j+3 of row g in bits 15:0 (chunk
        4j + c in bits 4c+3:4c) and the same chunks of row g + 8 in bits 31:16;
    8-bit slots (s8, u8, e4m3, e5m2, and s4/u4 pairs): lane j holds row g + 8 (j % 2), chunks
        8 (j // 2) .. 8 (j // 2) + 7, chunk 8 (j // 2) + c in bits 4c+3:4c.
The other lanes' metadata must be ignored: they carry a decoy (valid, but another pattern), so a
kernel that read them would fail validation.
"""

from __future__ import annotations

from functools import cache

import numpy as np

PAIRS = ((0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3))  # the slot pairs of a chunk that may hold non-zeros
TF32_PAIRS = ((0, 1), (2, 3))  # tf32: a whole element (two slots)
SLOT_ELEMENTS = {"tf32": 0.5, "s4": 2, "u4": 2}  # elements per slot; others 1
DECOY = 0xEEEEEEEE  # every chunk (2, 3): valid metadata for every type, and not the drawn pattern
SELECTOR = 0  # the sparsity selector every probe uses (which lanes of a group hold metadata)


def chunks_per_row(dtype: str, k: int) -> int:
    return int(k / (4 * SLOT_ELEMENTS.get(dtype, 1)))


def metadata_lanes(dtype: str, k: int) -> int:
    """Lanes of each group of four that hold metadata (1, 2 or 4)."""
    return chunks_per_row(dtype, k) // 4


def draw(dtype: str, m: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(m, chunks) slot pairs (m, chunks, 2), each chunk's drawn independently among the legal ones."""
    legal = np.array(TF32_PAIRS if dtype == "tf32" else PAIRS)
    return legal[rng.integers(0, len(legal), (m, chunks_per_row(dtype, k)))]


def kept(dtype: str, pattern: np.ndarray, k: int) -> np.ndarray:
    """(m, k) bool: the elements of A that may be non-zero."""
    m, chunks, _ = pattern.shape
    slots = np.zeros((m, chunks, 4), dtype=bool)
    np.put_along_axis(slots, pattern, True, axis=2)
    slots = slots.reshape(m, chunks * 4)
    per = SLOT_ELEMENTS.get(dtype, 1)
    out = slots[:, ::2] if per < 1 else np.repeat(slots, int(per), axis=1)
    assert out.shape == (m, k) and (out.sum(axis=1) == k // 2).all()
    return out


def compress(a: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """The kept elements of each row of A, in order: (m, k / 2)."""
    return a[keep].reshape(a.shape[0], -1)


@cache
def _places(byte_slots: bool, per_lane: int, selector: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which lanes hold metadata, and for each the (row, chunk, bit shift) of its eight nibbles (module docstring):
    metadata's gather, the same for every call of one slot width, chunk count and selector."""
    lanes, rows, chunks, shifts = [], [], [], []
    for lane in range(32):
        group, member = divmod(lane, 4)
        j = member - selector * per_lane
        if not 0 <= j < per_lane:
            continue
        if byte_slots:  # one row, eight chunks
            row, start = group + 8 * (j % 2), 8 * (j // 2)
            places = [(row, start + c, 4 * c) for c in range(8)]
        else:  # two rows, four chunks each
            places = [(group + 8 * half, 4 * j + c, 16 * half + 4 * c) for half in (0, 1) for c in range(4)]
        lanes.append(lane)
        for column, part in zip((rows, chunks, shifts), zip(*places)):
            column.append(part)
    return (np.array(lanes, dtype=np.intp), np.array(rows, dtype=np.intp).reshape(-1, 8),
            np.array(chunks, dtype=np.intp).reshape(-1, 8), np.array(shifts, dtype=np.uint64).reshape(-1, 8))


def metadata(dtype: str, pattern: np.ndarray, selector: int = SELECTOR) -> np.ndarray:
    """(32,) uint32: each lane's metadata register."""
    m, chunks, _ = pattern.shape
    assert m == 16 and chunks % 4 == 0
    nibbles = (pattern[..., 0] | (pattern[..., 1] << 2)).astype(np.uint64)  # (16, chunks)
    lanes, rows, columns, shifts = _places(dtype not in ("f16", "bf16", "tf32"), chunks // 4, selector)
    words = np.full(32, DECOY, dtype=np.uint64)
    if lanes.size:
        words[lanes] = (nibbles[rows, columns] << shifts).sum(axis=1, dtype=np.uint64)
    return words.astype(np.uint32)
