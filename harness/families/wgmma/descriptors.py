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


@dataclass(frozen=True)
class KMajorLayout:
    """A rows x k tile, K-major, no swizzle: core matrices of 8 rows x 16 bytes.

    Core matrices adjacent in K are LBO apart; adjacent in rows, SBO apart. The default packs one
    row-block of core matrices contiguously (LBO = 128 B, SBO = 128 B x core matrices along K),
    the layout the paper's code uses for k = 16 (LBO 128 B, SBO 256 B). Every dense wgmma type
    has 32 bytes of K per row (16 x 16-bit, 8 x tf32, 32 x 8-bit, 256 x b1).
    """

    rows: int
    k: int
    element_bits: int

    @property
    def k_bytes(self) -> int:
        return self.k * self.element_bits // 8

    @property
    def leading_byte_offset(self) -> int:
        return CORE_MATRIX_BYTES

    @property
    def stride_byte_offset(self) -> int:
        return CORE_MATRIX_BYTES * (self.k_bytes // CORE_ROW_BYTES)

    @property
    def size_bytes(self) -> int:
        return (self.rows // CORE_ROWS) * self.stride_byte_offset

    def descriptor(self, start_address: int) -> SmemDescriptor:
        return SmemDescriptor(start_address, self.leading_byte_offset, self.stride_byte_offset)

    def byte_offsets(self) -> np.ndarray:
        """Shared-memory offset of byte kb of row `row`, as a rows x k_bytes array."""
        row = np.arange(self.rows)[:, None]
        kb = np.arange(self.k_bytes)[None, :]
        return ((row % CORE_ROWS) * CORE_ROW_BYTES + (row // CORE_ROWS) * self.stride_byte_offset
                + kb % CORE_ROW_BYTES + (kb // CORE_ROW_BYTES) * self.leading_byte_offset)

    def image(self, codes: np.ndarray) -> np.ndarray:
        """Scatter a rows x k array of element codes (of element_bits each, little-endian, sub-byte
        elements first in the low bits) into the shared-memory byte image."""
        if codes.shape != (self.rows, self.k):
            raise SpecError(f"layout wants a {self.rows}x{self.k} array of {self.element_bits}-bit values")
        image = np.zeros(self.size_bytes, dtype=np.uint8)
        image[self.byte_offsets()] = row_bytes(codes, self.element_bits)
        return image


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
