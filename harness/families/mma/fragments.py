"""Register fragments of mma.sync (one warp): which element of A, B and C/D each lane holds.

PTX ISA, "Matrix Fragments for mma.m16n8k*" and "for mma.m8n8k*": lane l has group
g = l // 4 and thread-in-group q = l % 4. Elements are grouped in 32-bit slots of p = 32 / bits
consecutive K elements (one element per slot for 32- and 64-bit types):
    A (M x K), slot s, element j of the slot:
        m16: row g + 8 (s % 2), col q p + j + (s // 2) 4p        m8: row g, col q p + j + 4 p s
    B (K x N), slot s, element j:  row q p + j + 4 p s, col g
    C, D (M x N), element i:       m16: row g + 8 (i // 2), col 2q + i % 2    m8: row g, col 2q + i
f16 m8n8k4 is four independent 8x8x4 products, one per quad pair (lanes 4c..4c+3 and 16+4c..16+4c+3
for computation c; "Matrix Fragments for mma.m8n8k4 with .f16"): its maps return (computation, row,
col), with h = 4 for the upper lane of the pair (l >= 16), 0 for the lower, i the element index:
    A row-major: row l%4 + h, col i         A col-major: row i + h, col l%4
    B row-major: row l%4, col i + h         B col-major: row i, col l%4 + h
    C, D .f16:   row l%4 + h, col i         C, D .f32:   row (l&1) + (i&2) + h, col (i&4) + (l&2) + (i&1)
Sparse A (mma.sp) is held compressed, in the dense layout of an M x K/2 matrix (sparsity.py).
tests/test_mma_family.py checks these maps against entries of the PTX ISA's figures.
"""

from __future__ import annotations

import numpy as np

WARP = 32


def _lanes():
    lane = np.arange(WARP)
    return lane // 4, lane % 4


def per_slot(bits: int) -> int:
    return max(1, 32 // bits)


def a_coords(m: int, k: int, bits: int):
    """(rows, cols), each (32, elements per lane), in the order the lane's registers hold them."""
    g, q = _lanes()
    p = per_slot(bits)
    i = np.arange(m * k // WARP)
    s, j = i // p, i % p
    if m == 16:
        return g[:, None] + 8 * (s % 2)[None, :], q[:, None] * p + (j + (s // 2) * 4 * p)[None, :]
    return np.repeat(g[:, None], i.size, 1), q[:, None] * p + (j + s * 4 * p)[None, :]


def b_coords(k: int, n: int, bits: int):
    g, q = _lanes()
    p = per_slot(bits)
    i = np.arange(k * n // WARP)
    s, j = i // p, i % p
    return q[:, None] * p + (j + s * 4 * p)[None, :], np.repeat(g[:, None], i.size, 1)


def d_coords(m: int, n: int):
    g, q = _lanes()
    i = np.arange(m * n // WARP)
    if m == 16:
        return g[:, None] + 8 * (i // 2)[None, :], 2 * q[:, None] + (i % 2)[None, :]
    return np.repeat(g[:, None], i.size, 1), 2 * q[:, None] + i[None, :]


def pack(bits_per_element: int, codes: np.ndarray) -> np.ndarray:
    """(32, elements) unsigned codes -> (32, registers) uint32 words, the first element lowest.
    64-bit elements become two words each (low word first)."""
    codes = np.asarray(codes, dtype=np.uint64)
    if bits_per_element == 64:
        return np.stack([codes & 0xFFFFFFFF, codes >> 32], axis=-1).reshape(codes.shape[0], -1).astype(np.uint32)
    p = per_slot(bits_per_element)
    grouped = codes.reshape(codes.shape[0], -1, p)
    shifts = (np.arange(p, dtype=np.uint64) * bits_per_element)[None, None, :]
    return np.bitwise_or.reduce(grouped << shifts, axis=-1).astype(np.uint32)


def unpack(bits_per_element: int, words: np.ndarray) -> np.ndarray:
    """The inverse of pack: (32, registers) uint32 -> (32, elements) unsigned codes."""
    words = np.asarray(words, dtype=np.uint64)
    if bits_per_element == 64:
        pairs = words.reshape(words.shape[0], -1, 2)
        return pairs[..., 0] | (pairs[..., 1] << np.uint64(32))
    p = per_slot(bits_per_element)
    shifts = (np.arange(p, dtype=np.uint64) * bits_per_element)[None, None, :]
    mask = np.uint64((1 << bits_per_element) - 1)
    return ((words[..., None] >> shifts) & mask).reshape(words.shape[0], -1)


def registers(elements_per_lane: int, bits: int) -> int:
    """32-bit registers per lane for that many elements (64-bit elements: two each)."""
    return elements_per_lane * 2 if bits == 64 else elements_per_lane // per_slot(bits)


QUAD_PAIRS = 4  # f16 m8n8k4: independent 8x8x4 products per warp


def _quad_pair(elements: int):
    lane = np.arange(WARP)[:, None]
    i = np.arange(elements)[None, :]
    comp = np.broadcast_to((lane % 16) // 4, (WARP, elements))
    return lane, i, comp, 4 * (lane >= 16)


def m884_a_coords(layout: str):
    lane, i, comp, h = _quad_pair(4)
    if layout == "row":
        return comp, np.broadcast_to(lane % 4 + h, comp.shape), np.broadcast_to(i, comp.shape)
    return comp, i + h, np.broadcast_to(lane % 4, comp.shape)


def m884_b_coords(layout: str):
    lane, i, comp, h = _quad_pair(4)
    if layout == "row":
        return comp, np.broadcast_to(lane % 4, comp.shape), i + h
    return comp, np.broadcast_to(i, comp.shape), np.broadcast_to(lane % 4 + h, comp.shape)


def m884_d_coords(dtype: str):
    lane, i, comp, h = _quad_pair(8)
    if dtype == "f16":
        return comp, np.broadcast_to(lane % 4 + h, comp.shape), np.broadcast_to(i, comp.shape)
    return comp, (lane & 1) + (i & 2) + h, (i & 4) + (lane & 2) + (i & 1)
