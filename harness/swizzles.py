"""CuTe's swizzles (include/cute/swizzle.hpp): Swizzle<B, M, S>, offset ^ ((offset & Y) >> S), Y the B bits from
bit M + S; the PTX swizzle modes in bytes; a swizzle composed after a layout (Swizzled, over harness/layouts.py)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.layouts import Layout


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
