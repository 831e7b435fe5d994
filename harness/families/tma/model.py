"""The NumPy model of what a TMA probe moves: the source tensor, its tiles, boxes and swizzles.

The source tensor (ptx/tma.cu.in) is a buffer several times the L2 whose 32-bit word w holds
source_word(w), so any box can be computed here without copying the buffer back. Its geometry:
dimension 0 is one box wide (a box's rows are whole rows of the tensor: each box contiguous), or, for a
2-D case with a row pitch (cases.py, `.pitch8192`), `row_boxes` boxes wide (a GEMM's matrix: each box a
tile of rows far apart); dimensions 1 .. rank-2 hold INNER_TILES boxes each (a rank-3 case with a plane pitch,
`.pitch4096x4194304`: `plane_boxes` along dimension 1, the authors' 1024^3 tensor), the last dimension the rest;
tile t is the box whose corner is (digit_d(t) * box_d), the digits innermost first.

Why dimension 0 is one box wide: with two boxes side by side (a 256-byte row pitch under 128-byte box
rows) and the maps' 256-byte L2 promotion, every row a box reads pulls its neighbour's half into the
L2 too; 64 x 64 b16 boxes then streamed at 0.89-0.90 of the read roofline on an H100, at every stages x
blocks point, against 1.00 with whole rows (or 0.97 with the promotion off):
scripts/investigate_tma.py bandwidth, docs/data-movement.md.

Shared memory holds a box densely, innermost dimension first, with the swizzle applied to the byte
offset within each 1024-byte-aligned stage: the 16-byte chunk (bits 4..6) XOR the 128-byte row
(bits 7..9), keeping 1, 2 or 3 bits for the 32, 64 and 128-byte swizzles (the CUDA C++ Programming
Guide, "TMA Swizzle"; CuTe's Swizzle<B, 4, 3>). It is its own inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

INNER_TILES = 2  # boxes along dimensions 1 .. rank-2 (dimension 0 is one box wide, the last takes the rest)
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


def dense_strides(elem: int, dims: tuple[int, ...]) -> tuple[int, ...]:
    """Bytes between neighbours along each dimension of a dense tensor (the first is the element size)."""
    out = [elem]
    for d in dims[:-1]:
        out.append(out[-1] * d)
    return tuple(out)


@dataclass(frozen=True)
class Geometry:
    """The source tensor as a rank-`rank` tensor of `elem`-byte elements cut into boxes `box`."""

    rank: int
    elem: int
    box: tuple[int, ...]
    tiles: int  # boxes in the tensor
    row_boxes: int = 1  # boxes side by side along dimension 0 (a 2-D tensor many boxes wide: a GEMM's matrix)
    plane_boxes: int = 0  # boxes along dimension 1 of a rank-3 tensor with a plane pitch (0: INNER_TILES)
    row_elems: int = 0  # elements along dimension 0 where more than the boxes cover (a row pitch not a whole
    #                     number of boxes: the elements past the last box are never read); 0: the boxes'

    @property
    def inner_tiles(self) -> tuple[int, ...]:
        return inner_tiles(self.rank, self.row_boxes, self.plane_boxes)

    @property
    def dims(self) -> tuple[int, ...]:
        """Elements per dimension, innermost first."""
        last = self.tiles // prod(self.inner_tiles)
        dims = tuple(b * t for b, t in zip(self.box, (*self.inner_tiles, last)))
        return (max(dims[0], self.row_elems), *dims[1:])

    @property
    def slab_bytes(self) -> int:
        """Bytes of the tensor per prod(inner_tiles) boxes (one box along the last dimension, every box of the others)."""
        return prod(self.dims[:-1]) * self.box[-1] * self.elem

    @property
    def strides(self) -> tuple[int, ...]:
        return dense_strides(self.elem, self.dims)

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


def inner_tiles(rank: int, row_boxes: int = 1, plane_boxes: int = 0) -> tuple[int, ...]:
    """Boxes along dimensions 0 .. rank-2: `row_boxes` along dimension 0 (one: each box contiguous),
    `plane_boxes` along dimension 1 where given (a rank-3 tensor with a plane pitch), INNER_TILES along the others."""
    if rank <= 1:
        return ()
    inner = [INNER_TILES] * (rank - 2)
    if plane_boxes and inner:
        inner[0] = plane_boxes
    return (row_boxes, *inner)


def check_tile(rank: int, row_boxes: int = 1, plane_boxes: int = 0) -> int:
    """The tile every single-copy check loads: digit 1 along each inner dimension that has more than
    one box, 5 along the last (1 with a plane pitch)."""
    tile, place = 0, 1
    for extent in inner_tiles(rank, row_boxes, plane_boxes):
        tile += place * (1 if extent > 1 else 0)
        place *= extent
    # 1 along the last where dimension 1 holds plane_boxes: its slabs are large (4x4x256 of a 1024^3 FP32 tensor:
    # 65536 boxes, 1 GiB), the source may hold only two, and the L2 tiles run ~1500 past this one
    return tile + (1 if plane_boxes else 5) * place


def words(data: np.ndarray) -> np.ndarray:
    """Bytes as the little-endian 32-bit words the probe writes to `out`."""
    return np.ascontiguousarray(data, dtype=np.uint8).view(np.uint32)


# -- im2col ------------------------------------------------------------------------------------------
#
# An im2col load reads `pixels` pixels of `channels` channels each from a tensor of dimensions
# (C, W, [H, [D,]] N), innermost first, and lands them as `pixels` rows of `channels` elements (then
# the swizzle, as for a tile). Which pixels, by the PTX ISA's "im2col mode" and cuTensorMapEncodeIm2col:
# the map holds a pixel box per spatial dimension, from its lower corner L to the extent - 1 + its
# upper corner U; the instruction gives the first pixel's coordinates (c, w, h, d, n) and one offset
# per spatial dimension (the filter position). The walk takes the pixels of the box in order, W
# fastest, then H, then D, then the next image N, from the first one on; each pixel read is its
# coordinates plus the offsets, and a pixel outside the tensor reads as zeros.
#
# The probe's tensor and tiles: L = U = -1 in every spatial dimension (a 3-wide filter with padding
# 1: the box spans each extent); C holds IM2COL_CHANNEL_TILES copies' worth of channels. Tile t reads
# channels (t mod CT) x channels on, from output pixel (t div CT) x pixels on (output pixels counted
# over the box, W fastest, then the images), with filter position (t div CT) mod 3^spatial, its digits
# (W first) the offsets, 0..2 each.

IM2COL_CHANNEL_TILES = 2
IM2COL_CORNER = -1  # the lower and the upper corner of the pixel box, every spatial dimension
IM2COL_EXTENTS = {3: (16,), 4: (16, 16), 5: (8, 8, 8)}  # W, H, D of the probe's tensor
IM2COL_FILTER = 3  # offsets 0, 1, 2 per spatial dimension


@dataclass(frozen=True)
class Im2colGeometry:
    """The source tensor as (C, spatial..., N) of `elem`-byte elements, read `pixels` x `channels` at a time."""

    rank: int
    elem: int
    channels: int
    pixels: int
    tiles: int

    @property
    def spatial(self) -> tuple[int, ...]:
        return IM2COL_EXTENTS[self.rank]

    @property
    def box(self) -> tuple[int, ...]:
        """The pixel box's extent per spatial dimension: extent - 1 + upper - lower + 1."""
        return tuple(s + IM2COL_CORNER - IM2COL_CORNER for s in self.spatial)

    @property
    def images(self) -> int:
        return -(-self.tiles // IM2COL_CHANNEL_TILES * self.pixels // prod(self.box))

    @property
    def dims(self) -> tuple[int, ...]:
        return (IM2COL_CHANNEL_TILES * self.channels, *self.spatial, self.images)

    @property
    def strides(self) -> tuple[int, ...]:
        return dense_strides(self.elem, self.dims)

    @property
    def box_bytes(self) -> int:
        return self.pixels * self.channels * self.elem

    def start(self, tile: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The instruction's coordinates (c, w, [h, [d,]] n) and offsets (w, [h, [d]]) for a tile."""
        column = tile // IM2COL_CHANNEL_TILES
        first = column * self.pixels
        coords = [tile % IM2COL_CHANNEL_TILES * self.channels]
        for extent in self.box:
            coords.append(IM2COL_CORNER + first % extent)
            first //= extent
        coords.append(first)
        position = column % IM2COL_FILTER ** len(self.box)
        offsets = tuple(position // IM2COL_FILTER ** s % IM2COL_FILTER for s in range(len(self.box)))
        return tuple(coords), offsets

    def pixel_walk(self, tile: int) -> np.ndarray:
        """(pixels, spatial + 1) coordinates read, W first, N last: the box walked from the first pixel,
        plus the offsets."""
        coords, offsets = self.start(tile)
        place = 0  # the first pixel's place in the walk: its image, then its place in the box
        for extent, at in zip(reversed(self.box), reversed(coords[1:-1])):
            place = place * extent + (at - IM2COL_CORNER)
        index = coords[-1] * prod(self.box) + place + np.arange(self.pixels, dtype=np.int64)
        out = []
        for extent, offset in zip(self.box, offsets):
            out.append(IM2COL_CORNER + index % extent + offset)
            index = index // extent
        out.append(index)
        return np.stack(out, axis=1)

    def logical_box(self, tile: int) -> np.ndarray:
        """The landed bytes before the swizzle: a row of `channels` elements per pixel, zeros outside."""
        coords, _ = self.start(tile)
        pixels = self.pixel_walk(tile)
        inside = np.all((pixels >= 0) & (pixels < np.asarray((*self.spatial, self.images))), axis=1)
        base = sum(pixels[:, s].astype(np.int64) * self.strides[1 + s] for s in range(pixels.shape[1]))
        element = base[:, None] + (coords[0] + np.arange(self.channels))[None, :] * self.elem
        offsets = (element[..., None] + np.arange(self.elem)).reshape(self.pixels, -1)
        data = source_bytes(np.where(inside[:, None], offsets, 0))
        data[~inside] = 0
        return data.ravel()
