"""A small layout algebra in CuTe's terms (the swizzles composed after a layout: harness/swizzles.py; the
shared-memory bank model the probes are judged by: harness/smembanks.py).

Layouts (CuTe's documentation, NVIDIA/cutlass media/docs/cpp/cute/01_layout.md and 02_layout_algebra.md):
a Layout is a shape and a stride, both nested tuples of integers of the same profile; a coordinate of it
is a natural coordinate (same profile), or any coarser one down to a single integer, which is split
colexicographically (the leftmost mode varies fastest), and the offset is the inner product of the
natural coordinate with the stride. On top of that: coalesce, composition (A o B)(i) = A(B(i)),
complement (the ordered layout of what A leaves out, up to a size) and logical_divide, computed as the
documents define them; and Swizzle<B, M, S> (CuTe include/cute/swizzle.hpp): offset ^ ((offset & Y) >> S),
Y the B bits from bit M + S, composed after a layout (Swizzled).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Union

import numpy as np

IntTuple = Union[int, tuple]


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
