"""A small layout algebra in CuTe's terms, and the shared-memory bank model the probes are judged by.

Layouts (CuTe's documentation, NVIDIA/cutlass media/docs/cpp/cute/01_layout.md and 02_layout_algebra.md):
a Layout is a shape and a stride, both nested tuples of integers of the same profile; a coordinate of it
is a natural coordinate (same profile), or any coarser one down to a single integer, which is split
colexicographically (the leftmost mode varies fastest), and the offset is the inner product of the
natural coordinate with the stride. On top of that: coalesce, composition (A o B)(i) = A(B(i)),
complement (the ordered layout of what A leaves out, up to a size) and logical_divide, computed as the
documents define them; and Swizzle<B, M, S> (CuTe include/cute/swizzle.hpp): offset ^ ((offset & Y) >> S),
Y the B bits from bit M + S, composed after a layout (Swizzled).

The bank model (bank_map, wavefronts): shared memory has 32 banks of 4-byte words; a bank serves one word
a cycle, and lanes that read the same word share it (the CUDA C++ Programming Guide, "Shared Memory",
compute capability 5.x and later, which 9.0 keeps). One cycle of all 32 banks returns at most 128 bytes
(NVIDIA's answer on the developer forum, "Unexpected shared memory bank conflict", 2019: "the return
bandwidth of L1 and shared memory is 128 bytes/cycle ... LDS.128 requires 4 requests per instruction"),
so a warp's access of W bytes a lane is served in phases of 128 / W lanes (W >= 4: 32 lanes for 32-bit,
16 for 64-bit, 8 for 128-bit), and an 8x8 ldmatrix/stmatrix matrix (8 rows of 16 B) is one phase. A
phase takes as many wavefronts as the most distinct words any one bank holds among its lanes' words; an
instruction takes the sum over its phases. The rule this module states is the model under test: the
bank-conflict family (harness/families/banks) measures it. Not modelled: the pairing of equal
addresses in neighbouring lanes the forum answer describes for compute capability 7.x.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Union

import numpy as np

IntTuple = Union[int, tuple]

BANKS = 32
BANK_BYTES = 4
WAVEFRONT_BYTES = BANKS * BANK_BYTES  # 128 bytes per cycle of all banks


# -- integer tuples ---------------------------------------------------------------------------------

def size(shape: IntTuple) -> int:
    return shape if isinstance(shape, int) else prod(size(s) for s in shape)


def flatten(t: IntTuple) -> tuple:
    return (t,) if isinstance(t, int) else tuple(x for s in t for x in flatten(s))


def congruent(a: IntTuple, b: IntTuple) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return isinstance(a, int) and isinstance(b, int)
    return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))


def idx2crd(index: int, shape: IntTuple) -> IntTuple:
    """The natural coordinate of a 1-D index in `shape`: colexicographic, the last mode taking what is left."""
    if isinstance(shape, int):
        return index
    coords = []
    for i, s in enumerate(shape):
        if i == len(shape) - 1:
            coords.append(idx2crd(index, s))
        else:
            coords.append(idx2crd(index % size(s), s))
            index //= size(s)
    return tuple(coords)


def crd2idx(coord: IntTuple, shape: IntTuple, stride: IntTuple) -> int:
    """The offset of a coordinate (an integer or a tuple, congruent with `shape` down to any mode)."""
    if isinstance(coord, tuple):
        if isinstance(shape, int) or len(coord) != len(shape):
            raise ValueError(f"coordinate {coord} does not match shape {shape}")
        return sum(crd2idx(c, s, d) for c, s, d in zip(coord, shape, stride))
    if isinstance(shape, int):
        return coord * stride
    return crd2idx(idx2crd(coord, shape), shape, stride)


def _text(t: IntTuple) -> str:
    return str(t) if isinstance(t, int) else "(" + ",".join(_text(x) for x in t) + ")"


# -- layouts ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    shape: IntTuple
    stride: IntTuple

    def __post_init__(self):
        if not congruent(self.shape, self.stride):
            raise ValueError(f"shape {_text(self.shape)} and stride {_text(self.stride)} differ in profile")

    def __call__(self, *coord) -> int:
        c = coord[0] if len(coord) == 1 else tuple(coord)
        return crd2idx(c, self.shape, self.stride)

    def __str__(self) -> str:
        return f"{_text(self.shape)}:{_text(self.stride)}"

    @property
    def size(self) -> int:
        return size(self.shape)

    @property
    def cosize(self) -> int:
        return self(self.size - 1) + 1 if self.size else 0

    @property
    def rank(self) -> int:
        return 1 if isinstance(self.shape, int) else len(self.shape)

    def mode(self, i: int) -> "Layout":
        return Layout(self.shape, self.stride) if isinstance(self.shape, int) else Layout(self.shape[i], self.stride[i])

    def modes(self) -> list["Layout"]:
        return [self.mode(i) for i in range(self.rank)]

    def offsets(self) -> np.ndarray:
        return np.array([self(i) for i in range(self.size)], dtype=np.int64)


def compact_left(shape: IntTuple, current: int = 1) -> IntTuple:
    """The colexicographic compact stride of `shape` (CuTe's LayoutLeft, make_layout's default)."""
    if isinstance(shape, int):
        return current
    strides = []
    for s in shape:
        strides.append(compact_left(s, current))
        current *= size(s)
    return tuple(strides)


def make_layout(shape: IntTuple, stride: IntTuple | None = None) -> Layout:
    """CuTe's make_layout: without a stride, the compact column-major (LayoutLeft) one (01_layout.md)."""
    return Layout(shape, compact_left(shape) if stride is None else stride)


def row_major(rows: int, cols: int) -> Layout:
    return Layout((rows, cols), (cols, 1))


def _from_modes(modes: list[tuple[int, int]]) -> Layout:
    if not modes:
        return Layout(1, 0)
    if len(modes) == 1:
        return Layout(*modes[0])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


def concat(*layouts: Layout) -> Layout:
    return Layout(tuple(x.shape for x in layouts), tuple(x.stride for x in layouts))


def coalesce(layout: Layout) -> Layout:
    """The same function on 1-D indices with the fewest modes (02_layout_algebra.md, "Coalesce")."""
    modes: list[tuple[int, int]] = []
    for s, d in zip(flatten(layout.shape), flatten(layout.stride)):
        if s == 1:
            continue
        if modes and modes[-1][0] * modes[-1][1] == d:
            modes[-1] = (modes[-1][0] * s, modes[-1][1])
        else:
            modes.append((s, d))
    return _from_modes(modes)


def composition(a: Layout, b: Layout | tuple) -> Layout:
    """R = A o B, R(i) = A(B(i)) for every i < size(B), R compatible with B (02_layout_algebra.md,
    "Composition"). A tuple `b` is a tiler: composed mode by mode."""
    if isinstance(b, tuple):
        parts = [composition(a.mode(i), t if isinstance(t, (Layout, tuple)) else Layout(t, 1))
                 for i, t in enumerate(b)]
        return concat(*parts, *a.modes()[len(b):])
    if not isinstance(b.shape, int):
        return concat(*(composition(a, m) for m in b.modes()))
    s, d = b.shape, b.stride
    if d == 0:
        return Layout(s, 0)
    flat = coalesce(a)
    shapes, strides = list(flatten(flat.shape)), list(flatten(flat.stride))
    strided: list[tuple[int, int]] = []  # "divide out" d from the left
    rest = d
    for i, (sh, st) in enumerate(zip(shapes, strides)):
        if i == len(shapes) - 1:  # the last mode extends without bound
            strided.append((None, st * rest))
            break
        if sh % rest == 0:
            strided.append((sh // rest, st * rest))
            rest = 1
        elif rest % sh == 0:
            strided.append((1, st * rest))
            rest //= sh
        else:
            raise ValueError(f"stride divisibility: {flat} o {b}")
    kept: list[tuple[int, int]] = []  # "mod out" s from the left
    left = s
    for i, (sh, st) in enumerate(strided):
        if sh is None:
            kept.append((left, st))
            left = 1
            break
        if left % sh == 0:
            kept.append((sh, st))
            left //= sh
        elif sh % left == 0:
            kept.append((left, st))
            left = 1
        else:
            raise ValueError(f"shape divisibility: {flat} o {b}")
    return coalesce(_from_modes(kept))


def complement(a: Layout, cotarget: int) -> Layout:
    """The ordered layout of the offsets `a` leaves out, repeating it up to `cotarget` (02_layout_algebra.md,
    "Complement")."""
    modes = sorted((d, s) for s, d in zip(flatten(a.shape), flatten(a.stride)) if s != 1 and d != 0)
    out: list[tuple[int, int]] = []
    current = 1
    for d, s in modes:
        if d % current:
            raise ValueError(f"complement of {a}: stride {d} is not a multiple of {current}")
        out.append((d // current, current))
        current = s * d
    out.append((-(-cotarget // current), current))
    return coalesce(_from_modes(out))


def logical_divide(a: Layout, tiler: Layout | tuple) -> Layout:
    """A o (B, B*), B* the complement of B up to size(A) (02_layout_algebra.md, "Division"); a tuple
    tiler divides mode by mode."""
    if isinstance(tiler, tuple):
        parts = [logical_divide(a.mode(i), t if isinstance(t, (Layout, tuple)) else Layout(t, 1))
                 for i, t in enumerate(tiler)]
        return concat(*parts, *a.modes()[len(tiler):])
    return composition(a, concat(tiler, complement(tiler, a.size)))


def zipped_divide(a: Layout, tiler: tuple) -> Layout:
    """((tiles' modes), (rests' modes)) of a by-mode logical_divide."""
    divided = logical_divide(a, tiler)
    tiles = [divided.mode(i).mode(0) for i in range(len(tiler))]
    rests = [divided.mode(i).mode(1) for i in range(len(tiler))] + divided.modes()[len(tiler):]
    return concat(concat(*tiles), concat(*rests))


# -- swizzles ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Swizzle:
    """CuTe's Swizzle<B, M, S>: the B bits at M + S are XORed into the B bits at M (|S| >= B >= 0)."""

    bits: int
    base: int
    shift: int

    def __post_init__(self):
        if self.bits < 0 or self.base < 0 or abs(self.shift) < self.bits:
            raise ValueError(f"Swizzle<{self.bits},{self.base},{self.shift}>: needs B, M >= 0 and |S| >= B")

    @property
    def yyy_mask(self) -> int:
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    def __call__(self, offset):
        y = offset & self.yyy_mask
        return offset ^ (y >> self.shift if self.shift >= 0 else y << -self.shift)

    def __str__(self) -> str:
        return f"Swizzle<{self.bits},{self.base},{self.shift}>"


NO_SWIZZLE = Swizzle(0, 4, 3)
# The PTX swizzle modes in bytes (PTX ISA, "Shared memory matrix layout"; CuTe mma_sm90_desc.hpp):
# the 16-byte chunk index (bits 4-6) XORed with the row's bits above the span.
SWIZZLE_MODES = {0: NO_SWIZZLE, 32: Swizzle(1, 4, 3), 64: Swizzle(2, 4, 3), 128: Swizzle(3, 4, 3)}


@dataclass(frozen=True)
class Swizzled:
    """swizzle o layout: an offset of the layout, swizzled (CuTe's composition(Swizzle, Layout))."""

    swizzle: Swizzle
    layout: Layout

    def __call__(self, *coord) -> int:
        return self.swizzle(self.layout(*coord))

    def __str__(self) -> str:
        return f"{self.swizzle} o {self.layout}"

    @property
    def size(self) -> int:
        return self.layout.size


def in_bytes(swizzle: Swizzle, element_bytes: int) -> Swizzle:
    """The swizzle on byte offsets that a swizzle on element offsets of `element_bytes` is."""
    shift = element_bytes.bit_length() - 1
    return Swizzle(swizzle.bits, swizzle.base + shift, swizzle.shift)


# -- ldmatrix/stmatrix's lane map -------------------------------------------------------------------

def ldmatrix_positions(rows: np.ndarray, num: int, trans: bool) -> np.ndarray:
    """(32, num, 2): the 16-bit element index in shared memory of the low and high half of each lane's
    register for each matrix, `rows` being the byte addresses of the rows the 32 lanes supply (lane 8i + r:
    row r of matrix i). PTX ISA, "ldmatrix": lane l holds row l // 4, columns 2 (l % 4) + {0, 1};
    with .trans column l // 4, rows 2 (l % 4) + {0, 1}."""
    lane = np.arange(32)[:, None, None]
    matrix = np.arange(num)[None, :, None]
    half = np.arange(2)[None, None, :]
    group, member = lane // 4, lane % 4
    rows = np.asarray(rows, dtype=np.int64)
    if trans:
        return rows[8 * matrix + 2 * member + half] // 2 + group
    return rows[8 * matrix + group] // 2 + 2 * member + half


# -- the bank model ---------------------------------------------------------------------------------

def phases(lanes: int, width: int) -> list[range]:
    """The lanes each phase of one warp access serves: 128 / width lanes a phase for width >= 4 bytes."""
    per = max(1, WAVEFRONT_BYTES // max(width, BANK_BYTES))
    return [range(i, min(i + per, lanes)) for i in range(0, lanes, per)]


def bank_map(addresses, width: int) -> list[dict[int, set[int]]]:
    """Per phase, {bank: the distinct 4-byte words (word index) its lanes touch there}. `addresses`: the
    byte address of each active lane, in lane order (one warp: at most 32); `width`: bytes a lane."""
    addresses = [int(a) for a in addresses]
    out = []
    for lanes in phases(len(addresses), width):
        banks: dict[int, set[int]] = {}
        for lane in lanes:
            first, last = addresses[lane] // BANK_BYTES, (addresses[lane] + width - 1) // BANK_BYTES
            for word in range(first, last + 1):
                banks.setdefault(word % BANKS, set()).add(word)
        out.append(banks)
    return out


def wavefronts(addresses, width: int) -> int:
    """Bank cycles of one warp access (module docstring): per phase, the most distinct words one bank
    holds; summed over the phases."""
    return sum(max((len(w) for w in banks.values()), default=0) for banks in bank_map(addresses, width))


def conflict_free_wavefronts(lanes: int, width: int) -> int:
    """The fewest cycles `lanes` lanes of `width` bytes can take: one a phase."""
    return len(phases(lanes, width))


def draw_bank_map(addresses, width: int) -> list[str]:
    """Text lines: for each phase, each bank's word count and the lanes that use it (`bench show`)."""
    addresses = [int(a) for a in addresses]
    lines = []
    for p, (lanes, banks) in enumerate(zip(phases(len(addresses), width), bank_map(addresses, width))):
        worst = max((len(w) for w in banks.values()), default=0)
        counts = "".join(str(len(banks.get(b, ()))) if len(banks.get(b, ())) < 10 else "+" for b in range(BANKS))
        lines.append(f"phase {p} (lanes {lanes.start}-{lanes.stop - 1}): {worst} wavefront{'s' * (worst != 1)}; "
                     f"words per bank 0-31: {counts.replace('0', '.')}")
    return lines

