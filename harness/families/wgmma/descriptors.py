"""The wgmma shared-memory matrix descriptor, built from named fields, and the operand layouts.

Descriptor bits (PTX ISA, "Matrix Descriptor Format" for wgmma):
    0-13   start address        >> 4
    16-29  leading byte offset  >> 4   (LBO: between core matrices adjacent in K)
    32-45  stride byte offset   >> 4   (SBO: between core matrices adjacent in M or N)
    49-51  matrix base offset          (0 for layouts whose start is swizzle-pattern aligned)
    62-63  swizzle mode                (0 none, 1 128-byte, 2 64-byte, 3 32-byte)
A core matrix is 8 rows of 16 contiguous bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.errors import SpecError

SWIZZLE_CODES = {"none": 0, "128B": 1, "64B": 2, "32B": 3}
CORE_ROWS = 8  # rows of a core matrix
CORE_ROW_BYTES = 16  # bytes per core-matrix row
CORE_MATRIX_BYTES = CORE_ROWS * CORE_ROW_BYTES
_FIELD_LIMIT = 1 << 18  # 14 bits of a value >> 4


@dataclass(frozen=True)
class SmemDescriptor:
    start_address: int  # bytes
    leading_byte_offset: int  # bytes
    stride_byte_offset: int  # bytes
    base_offset: int = 0
    swizzle: str = "none"

    def __post_init__(self):
        for name in ("start_address", "leading_byte_offset", "stride_byte_offset"):
            value = getattr(self, name)
            if value % 16 or not 0 <= value < _FIELD_LIMIT:
                raise SpecError(f"descriptor {name} must be a multiple of 16 below {_FIELD_LIMIT}, got {value}")
        if not 0 <= self.base_offset < 8:
            raise SpecError(f"descriptor base_offset must be 0..7, got {self.base_offset}")
        if self.swizzle not in SWIZZLE_CODES:
            raise SpecError(f"unknown swizzle {self.swizzle!r}: expected one of {', '.join(SWIZZLE_CODES)}")

    def encode(self) -> int:
        return ((self.start_address >> 4)
                | (self.leading_byte_offset >> 4) << 16
                | (self.stride_byte_offset >> 4) << 32
                | self.base_offset << 49
                | SWIZZLE_CODES[self.swizzle] << 62)

    @classmethod
    def decode(cls, value: int) -> "SmemDescriptor":
        field = lambda lo, bits: (value >> lo) & ((1 << bits) - 1)  # noqa: E731
        swizzle = {code: name for name, code in SWIZZLE_CODES.items()}[field(62, 2)]
        return cls(start_address=field(0, 14) << 4, leading_byte_offset=field(16, 14) << 4,
                   stride_byte_offset=field(32, 14) << 4, base_offset=field(49, 3), swizzle=swizzle)

    def describe(self) -> str:
        return (f"0x{self.encode():016x}: start={self.start_address} B, LBO={self.leading_byte_offset} B, "
                f"SBO={self.stride_byte_offset} B, base_offset={self.base_offset}, swizzle={self.swizzle}")


SWIZZLE_BYTES = {"none": 0, "32B": 32, "64B": 64, "128B": 128}


@dataclass(frozen=True)
class Layout:
    """A rows x k tile of element_bits-bit values in shared memory, as a wgmma descriptor reads it.

    `rows` is the M or N extent, `major` the contiguous dimension ("K" or "MN"), `swizzle` the
    swizzle mode. Every offset is computed in the canonical (unswizzled) layout of the PTX ISA
    ("Shared Memory Matrix Layout", the CuTe notation of its canonical-layout table) and then
    swizzled: byte address bits [4, 4 + b) XOR bits [7, 7 + b), b = log2(swizzle bytes / 16)
    (CuTe Swizzle<b,4,3>), on a tile whose start is aligned to the swizzle's repeat (8 x span).

        K-major, no swizzle   core matrices of 8 rows x 16 B; LBO = between core matrices adjacent
                              in K, SBO = between groups of 8 rows.
        K-major, S-byte       rows of S bytes (K contiguous; bytes past the 32 of one instruction's
                              K are unused); SBO = between groups of 8 rows; LBO is unused (16).
        MN-major, no swizzle  core matrices of 8 K-rows x 16 B of MN; LBO = between groups of 8 in
                              K, SBO = between 16-byte blocks along MN.
        MN-major, S-byte      atoms of S bytes of MN x 8 K-rows; LBO = between atoms along MN,
                              SBO = between groups of 8 in K (the roles swap with the swizzle).

    `packing` says which way consecutive core matrices (or atoms) go: "k-first" (K-major no-swizzle
    default: the core matrices of one row group side by side, the paper's LBO 128 / SBO 256) or
    "mn-first" (the PTX ISA's worked examples, and every MN-major layout here).
    """

    rows: int
    k: int
    element_bits: int
    major: str = "K"
    swizzle: str = "none"
    packing: str = "k-first"

    def __post_init__(self):
        if self.major not in ("K", "MN"):
            raise SpecError(f"unknown major-ness {self.major!r}: expected K or MN")
        if self.swizzle not in SWIZZLE_BYTES:
            raise SpecError(f"unknown swizzle {self.swizzle!r}: expected one of {', '.join(SWIZZLE_BYTES)}")
        if self.major == "MN" and self.element_bits not in (16, 32):
            raise SpecError("MN-major layouts hold 16- or 32-bit elements (wgmma transposes f16/bf16 only)")
        if self.major == "K" and self.span and self.k_bytes > self.span:
            raise SpecError(f"a K-major {self.swizzle} swizzled row holds {self.span} B of K, not {self.k_bytes}")

    @property
    def span(self) -> int:
        """Bytes a swizzled row (K-major) or atom row (MN-major) spans; 0 without swizzle."""
        return SWIZZLE_BYTES[self.swizzle]

    @property
    def k_bytes(self) -> int:
        return self.k * self.element_bits // 8

    @property
    def element_bytes(self) -> int:
        return max(1, self.element_bits // 8)

    def _mn_block(self) -> int:
        """MN elements per 16-byte core-matrix row (no swizzle) or per atom row (swizzled), MN-major."""
        return (self.span or CORE_ROW_BYTES) // self.element_bytes

    def _counts(self) -> tuple[int, int]:
        """(blocks along MN, blocks along K) of the canonical layout."""
        if self.major == "K":
            return -(-self.rows // CORE_ROWS), (1 if self.span else -(-self.k_bytes // CORE_ROW_BYTES))
        return -(-self.rows // self._mn_block()), -(-self.k // CORE_ROWS)

    @property
    def _block_bytes(self) -> int:
        return CORE_ROWS * (self.span or CORE_ROW_BYTES)

    @property
    def strides(self) -> tuple[int, int]:
        """(stride between blocks along MN, stride between blocks along K) in bytes."""
        mn, k = self._counts()
        block = self._block_bytes
        return (block * k, block) if self.packing == "k-first" else (block, block * mn)

    @property
    def leading_byte_offset(self) -> int:
        mn_stride, k_stride = self.strides
        if self.major == "K":
            return CORE_ROW_BYTES if self.span else k_stride  # unused when swizzled: "assumed 1"
        return mn_stride if self.span else k_stride

    @property
    def stride_byte_offset(self) -> int:
        mn_stride, k_stride = self.strides
        if self.major == "K":
            return mn_stride
        return k_stride if self.span else mn_stride

    @property
    def size_bytes(self) -> int:
        mn, k = self._counts()
        return mn * k * self._block_bytes

    def descriptor(self, start_address: int) -> SmemDescriptor:
        return SmemDescriptor(start_address, self.leading_byte_offset, self.stride_byte_offset, swizzle=self.swizzle)

    def byte_offsets(self) -> np.ndarray:
        """Shared-memory offset of byte kb of row `row` (as memory holds the row), rows x k_bytes."""
        row = np.arange(self.rows)[:, None]
        kb = np.arange(self.k_bytes)[None, :]
        mn_stride, k_stride = self.strides
        if self.major == "K":
            if self.span:
                canonical = (row % CORE_ROWS) * self.span + (row // CORE_ROWS) * mn_stride + kb
            else:
                canonical = ((row % CORE_ROWS) * CORE_ROW_BYTES + (row // CORE_ROWS) * mn_stride
                             + kb % CORE_ROW_BYTES + (kb // CORE_ROW_BYTES) * k_stride)
        else:
            k, byte = kb // self.element_bytes, kb % self.element_bytes
            block, line = self._mn_block(), self.span or CORE_ROW_BYTES
            canonical = ((row % block) * self.element_bytes + byte + (k % CORE_ROWS) * line
                         + (row // block) * mn_stride + (k // CORE_ROWS) * k_stride)
        return swizzle(canonical, self.swizzle)

    def image(self, codes: np.ndarray, fill: int = 0) -> np.ndarray:
        """Scatter a rows x k array of element codes (of element_bits each, little-endian, sub-byte
        elements first in the low bits) into the shared-memory byte image; bytes no element uses
        hold `fill` (a decoy: a descriptor that read them would fail validation)."""
        if codes.shape != (self.rows, self.k):
            raise SpecError(f"layout wants a {self.rows}x{self.k} array of {self.element_bits}-bit values")
        image = np.full(self.size_bytes, fill, dtype=np.uint8)
        image[self.byte_offsets()] = row_bytes(codes, self.element_bits)
        return image


def KMajorLayout(rows: int, k: int, element_bits: int) -> Layout:
    """The default layout: K-major, no swizzle, core matrices of a row group side by side."""
    return Layout(rows, k, element_bits)


def swizzle(offsets: np.ndarray, mode: str) -> np.ndarray:
    """Byte offsets (from a base aligned to the mode's repeat) as the swizzle mode places them:
    bits [4, 4 + b) XOR bits [7, 7 + b), b = 1, 2, 3 for 32, 64, 128-byte swizzle."""
    bits = {0: 0, 32: 1, 64: 2, 128: 3}[SWIZZLE_BYTES[mode]]
    mask = (1 << bits) - 1
    return offsets ^ (((offsets >> 7) & mask) << 4)


def row_bytes(codes: np.ndarray, bits: int) -> np.ndarray:
    """(rows, k) element codes -> (rows, k * bits / 8) bytes as memory holds them."""
    codes = np.asarray(codes, dtype=np.uint64)
    if bits >= 8:
        per = bits // 8
        shifts = (8 * np.arange(per, dtype=np.uint64))[None, None, :]
        return ((codes[..., None] >> shifts) & np.uint64(0xFF)).astype(np.uint8).reshape(codes.shape[0], -1)
    per = 8 // bits
    grouped = codes.reshape(codes.shape[0], -1, per)
    shifts = (bits * np.arange(per, dtype=np.uint64))[None, None, :]
    return np.bitwise_or.reduce(grouped << shifts, axis=-1).astype(np.uint8)
