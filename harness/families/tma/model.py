"""The NumPy model of what a TMA probe moves: the source tensor, its tiles, boxes and swizzles.

The source tensor (ptx/tma.cu.in) is a buffer several times the L2 whose 32-bit word w holds
source_word(w), so any box can be computed here without copying the buffer back. Its geometry:
dimensions 0 .. rank-2 hold INNER_TILES boxes each, the last dimension the rest; tile t is the box
whose corner is (digit_d(t) * box_d), the digits innermost first.

Shared memory holds a box densely, innermost dimension first, with the swizzle applied to the byte
offset within each 1024-byte-aligned stage: the 16-byte chunk (bits 4..6) XOR the 128-byte row
(bits 7..9), keeping 1, 2 or 3 bits for the 32, 64 and 128-byte swizzles (the CUDA C++ Programming
Guide, "TMA Swizzle"; CuTe's Swizzle<B, 4, 3>). It is its own inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

INNER_TILES = 2  # boxes along each dimension but the last
SWIZZLE_BITS = {0: 0, 32: 1, 64: 2, 128: 3}
STAGE_ALIGN = 1024  # bytes: the 128-byte swizzle's repeat


def source_words(index: np.ndarray) -> np.ndarray:
    """Word w of the source: a 32-bit mix of w (distinct neighbours, every byte used). The GPU fills the
    buffer with the same arithmetic on uint64 (harness/families/tma/__init__.py attach)."""
    x = np.asarray(index, dtype=np.uint64) * np.uint64(0x9E3779B1) + np.uint64(0x7F4A7C15)
    x = (x ^ (x >> np.uint64(15))) * np.uint64(0x2C1B3C6D)
    return ((x ^ (x >> np.uint64(12))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def source_bytes(offsets: np.ndarray) -> np.ndarray:
    """The source's bytes at these byte offsets (little endian words)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    return ((source_words(offsets // 4) >> (8 * (offsets % 4)).astype(np.uint32)) & 0xFF).astype(np.uint8)


def swizzle(offsets: np.ndarray, span: int) -> np.ndarray:
    """Byte offsets within a stage after the `span`-byte swizzle (0: none)."""
    bits = SWIZZLE_BITS[span]
    offsets = np.asarray(offsets, dtype=np.int64)
    return offsets ^ (((offsets >> 7) & ((1 << bits) - 1)) << 4)


@dataclass(frozen=True)
class Geometry:
    """The source tensor as a rank-`rank` tensor of `elem`-byte elements cut into boxes `box`."""

    rank: int
    elem: int
    box: tuple[int, ...]
    tiles: int  # boxes in the tensor

    @property
    def inner_tiles(self) -> tuple[int, ...]:
        return (INNER_TILES,) * (self.rank - 1)

    @property
    def dims(self) -> tuple[int, ...]:
        """Elements per dimension, innermost first."""
        last = self.tiles // prod(self.inner_tiles)
        return tuple(b * t for b, t in zip(self.box, (*self.inner_tiles, last)))

    @property
    def strides(self) -> tuple[int, ...]:
        """Bytes between neighbours along each dimension (the first is the element size)."""
        out = [self.elem]
        for d in self.dims[:-1]:
            out.append(out[-1] * d)
        return tuple(out)

    @property
    def box_bytes(self) -> int:
        return prod(self.box) * self.elem

    def corner(self, tile: int) -> tuple[int, ...]:
        digits = []
        for t in self.inner_tiles:
            digits.append(tile % t)
            tile //= t
        digits.append(tile)
        return tuple(d * b for d, b in zip(digits, self.box))

    def box_offsets(self, tile: int) -> np.ndarray:
        """Byte offsets in the source of the box's bytes, in the box's logical (dense) order."""
        corner = self.corner(tile)
        axes = [np.arange(c, c + b) for c, b in zip(corner, self.box)]
        grids = np.meshgrid(*axes[::-1], indexing="ij")[::-1]  # innermost varies fastest
        element = sum(g.astype(np.int64) * s for g, s in zip(grids, self.strides)).ravel()
        return (element[:, None] + np.arange(self.elem)[None, :]).ravel()

    def logical_box(self, tile: int) -> np.ndarray:
        """The box's bytes, dense, innermost dimension first."""
        return source_bytes(self.box_offsets(tile))


def landed(box: np.ndarray, span: int) -> np.ndarray:
    """The shared-memory bytes of a loaded box: byte o holds logical byte swizzle(o)."""
    return box[swizzle(np.arange(box.size), span)]


def stored(pattern: np.ndarray, span: int) -> np.ndarray:
    """The box's logical bytes after storing shared-memory bytes `pattern`: logical L is pattern[swizzle(L)]."""
    return pattern[swizzle(np.arange(pattern.size), span)]


def check_tile(rank: int) -> int:
    """The tile every single-copy check loads: digit 1 along each inner dimension, 5 along the last."""
    inner = INNER_TILES ** (rank - 1)
    return sum(INNER_TILES ** d for d in range(rank - 1)) + 5 * inner


def words(data: np.ndarray) -> np.ndarray:
    """Bytes as the little-endian 32-bit words the probe writes to `out`."""
    return np.ascontiguousarray(data, dtype=np.uint8).view(np.uint32)
