"""The NumPy model of a layouts case, from the layout library (harness/layouts.py): the tile's logical
elements, where a TMA load lands each byte, the row addresses ldmatrix is given and the registers it returns,
and what a wgmma whose descriptor has given fields reads.

The tile: ROWS rows of W bytes (W = the swizzle span; 32 without swizzle), row-major in global memory, element
(r, c) of width e. TMA loads it in boxes of C bytes of each row x ROWS rows (C = W with a swizzle: one box;
without, C = 16: W / 16 boxes, the j-th landing ROWS x 16 bytes after the one before), each landing densely
with its byte offset swizzled (docs/banks.md, "TMA tiles read back"):

    tile_layout = SWIZZLE_MODES[span] o Layout((ROWS, (C/e, W/C)), (C, (e, ROWS C)))   on bytes

C the chunk (W with a swizzle; 16 without, so that each 8 x 16-byte core matrix of wgmma's unswizzled
canonical layout is 128 contiguous bytes). Each element's value encodes where it is: a 16-bit code is
0x1000 + r x cols + c (a normal f16, every element distinct); an 8-bit code (256 values for up to 8192 elements)
is one of the 238 normal finite e4m3 codes, picked by 37 r + 11 c mod 238, which differs between any two
elements a whole number of 16-byte chunks or of 8-row groups apart in one row or column of the tile.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from harness.dtypes import decode
from harness.families.layouts.cases import LayoutCase
from harness.layouts import Layout
from harness.smembanks import ldmatrix_positions
from harness.swizzles import SWIZZLE_MODES, Swizzled

ROWS = 64  # the tile's rows: wgmma's M
MATRIX_ROWS, MATRIX_ROW_BYTES = 8, 16  # an ldmatrix m8n8 matrix: 8 rows of 16 bytes
LDSM_MATRICES = 4  # ldmatrix .x4
K_STEP_BYTES = 32  # bytes of K one wgmma reads: k16 of f16, k32 of e4m3
B_LBO, B_SBO = 128, 256  # wgmma's B (the permutation): no swizzle, core matrices adjacent in K, then in N
ONE = {"f16": 0x3C00, "e4m3": 0x38}  # the code of 1.0
# the normal finite e4m3 codes (exponent field 1-15, not the NaNs 0x7F and 0xFF): no subnormal a tensor core might flush
_E4M3_CODES = np.array([c for c in range(256) if c & 0x78 and c & 0x7F != 0x7F], dtype=np.uint8)


def row_bytes(case: LayoutCase) -> int:
    return case.swizzle or 2 * MATRIX_ROW_BYTES


def chunk_bytes(case: LayoutCase) -> int:
    """Bytes of a row one TMA box row holds (the box's dimension 0)."""
    return case.swizzle or MATRIX_ROW_BYTES


def chunks(case: LayoutCase) -> int:
    return row_bytes(case) // chunk_bytes(case)


def cols(case: LayoutCase) -> int:
    return row_bytes(case) // case.element_bytes


def tile_bytes(case: LayoutCase) -> int:
    return ROWS * row_bytes(case)


def ldmatrix_count(case: LayoutCase) -> int:
    """ldmatrix.x4 instructions that read the whole tile once."""
    return tile_bytes(case) // (LDSM_MATRICES * MATRIX_ROWS * MATRIX_ROW_BYTES)


def steps(case: LayoutCase) -> int:
    """wgmma instructions that read the whole tile once, K_STEP_BYTES of each row each."""
    return row_bytes(case) // K_STEP_BYTES


def n(case: LayoutCase) -> int:
    """wgmma's N: the K elements one instruction reads (B is an N x N permutation)."""
    return K_STEP_BYTES // case.element_bytes


# -- the tile and where TMA lands it ---------------------------------------------------------------------------

def tile_layout(case: LayoutCase, swizzle: int | None = None) -> Swizzled:
    """(row, col) -> byte offset in the landed stage (module docstring); `swizzle`: another mode's (a fault)."""
    e, c = case.element_bytes, chunk_bytes(case)
    dense = Layout((ROWS, (c // e, chunks(case))), (c, (e, ROWS * c)))
    return Swizzled(SWIZZLE_MODES[case.swizzle if swizzle is None else swizzle], dense)


def codes(case: LayoutCase) -> np.ndarray:
    """(ROWS, cols) element codes, each saying where it is (module docstring)."""
    r, c = np.meshgrid(np.arange(ROWS), np.arange(cols(case)), indexing="ij")
    if case.element_bytes == 2:
        return (0x1000 + r * cols(case) + c).astype(np.uint16)
    return _E4M3_CODES[(37 * r + 11 * c) % _E4M3_CODES.size]


def values(case: LayoutCase) -> np.ndarray:
    return decode(case.dtype, codes(case))


def logical_bytes(case: LayoutCase) -> np.ndarray:
    """(ROWS, W) bytes: the tile row-major, as global memory holds it."""
    return np.ascontiguousarray(codes(case)).view(np.uint8).reshape(ROWS, row_bytes(case))


def element_offsets(case: LayoutCase, swizzle: int | None = None) -> np.ndarray:
    f = tile_layout(case, swizzle)
    return np.array([[f(r, c) for c in range(cols(case))] for r in range(ROWS)], dtype=np.int64)


def landed(case: LayoutCase, swizzle: int | None = None) -> np.ndarray:
    """The stage's bytes after the load, if it landed each element where `tile_layout` says."""
    image = np.zeros(tile_bytes(case), dtype=np.uint8)
    e = case.element_bytes
    where = element_offsets(case, swizzle)[..., None] + np.arange(e)
    image[where] = logical_bytes(case).reshape(ROWS, cols(case), e)
    return image


# -- ldmatrix --------------------------------------------------------------------------------------------------

def ldmatrix_addresses(case: LayoutCase, swizzle: int | None = None) -> np.ndarray:
    """(instructions, 32) byte offsets: lane 8i + r of instruction t gives row r of matrix 4t + i, and matrix
    m is the 8 x 16-byte block of row group m % 8 and 16-byte chunk m // 8 of the tile, at the address the
    tile's layout gives its first element."""
    f = tile_layout(case, swizzle)
    out = np.zeros((ldmatrix_count(case), 32), dtype=np.int64)
    for t in range(ldmatrix_count(case)):
        for lane in range(32):
            m, r = LDSM_MATRICES * t + lane // MATRIX_ROWS, lane % MATRIX_ROWS
            out[t, lane] = f(MATRIX_ROWS * (m % 8) + r, MATRIX_ROW_BYTES * (m // 8) // case.element_bytes)
    return out


def ldmatrix_registers(case: LayoutCase, image: np.ndarray, addresses: np.ndarray, trans: bool) -> np.ndarray:
    """(instructions, 32, 4) uint32: each lane's registers after ldmatrix.x4 reads `image` at `addresses`
    (the layout library's lane map of the PTX ISA, layouts.ldmatrix_positions)."""
    halves = image.view("<u2").astype(np.uint32)
    out = np.zeros(addresses.shape + (LDSM_MATRICES,), dtype=np.uint32)
    for t, rows in enumerate(addresses):
        pos = ldmatrix_positions(rows, LDSM_MATRICES, trans)
        out[t] = halves[pos[..., 0]] | (halves[pos[..., 1]] << 16)
    return out


# -- wgmma -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """The fields of wgmma's descriptor for the tile as A (K-major), in bytes, and how far its start moves
    from one K step to the next."""

    swizzle: int
    lbo: int
    sbo: int
    step: int


def a_operand(case: LayoutCase) -> Operand:
    """Swizzled: 8-row atoms of `span` bytes, SBO between row groups, LBO unused (16), K steps 32 bytes on in
    the row. No swizzle: 8 x 16-byte core matrices, LBO between those adjacent in K (one chunk of the tile,
    ROWS x 16 bytes), SBO between row groups (128)."""
    if case.swizzle:
        return Operand(case.swizzle, MATRIX_ROW_BYTES, MATRIX_ROWS * case.swizzle, K_STEP_BYTES)
    chunk = ROWS * MATRIX_ROW_BYTES
    return Operand(0, chunk, MATRIX_ROWS * MATRIX_ROW_BYTES, 2 * chunk)


def permutation(case: LayoutCase) -> np.ndarray:
    """pi: column j of D is column pi(j) of A's K step (B[k, j] = 1 where k = pi(j))."""
    size = n(case)
    return (5 * np.arange(size) + 3) % size


def b_image(case: LayoutCase) -> np.ndarray:
    """B (N x N, element (k, j) one where k = pi(j)) in shared memory, K-major with no swizzle: element (j, k)
    of B's transpose at Layout(((8, N/8), (16/e, 2)), ((16, B_SBO), (e, B_LBO)))."""
    e, size = case.element_bytes, n(case)
    where = Layout(((MATRIX_ROWS, size // MATRIX_ROWS), (MATRIX_ROW_BYTES // e, 2)),
                   ((MATRIX_ROW_BYTES, B_SBO), (e, B_LBO)))
    image = np.zeros(size * K_STEP_BYTES, dtype=np.uint8)
    one = np.array([ONE[case.dtype]], dtype=f"<u{e}").view(np.uint8)
    for j, k in enumerate(permutation(case)):
        image[where(j, int(k)):where(j, int(k)) + e] = one
    return image


def a_offsets(case: LayoutCase, operand: Operand, step: int) -> np.ndarray:
    """(ROWS, N) byte offsets from the tile's 1024-aligned base that a wgmma reads A's elements from, given the
    descriptor's fields: the canonical K-major layout (PTX ISA, "Shared Memory Matrix Layout") from the start,
    then the swizzle on the address's bits (the base is aligned to every mode's repeat)."""
    e = case.element_bytes
    if operand.swizzle:
        canonical = Layout(((MATRIX_ROWS, ROWS // MATRIX_ROWS), n(case)), ((operand.swizzle, operand.sbo), e))
    else:
        canonical = Layout(((MATRIX_ROWS, ROWS // MATRIX_ROWS), (MATRIX_ROW_BYTES // e, K_STEP_BYTES // MATRIX_ROW_BYTES)),
                           ((MATRIX_ROW_BYTES, operand.sbo), (e, operand.lbo)))
    swizzle = SWIZZLE_MODES[operand.swizzle]
    start = step * operand.step
    return np.array([[swizzle(start + canonical(m, k)) for k in range(n(case))] for m in range(ROWS)])


def wgmma_result(case: LayoutCase, image: np.ndarray, operand: Operand) -> np.ndarray:
    """(steps, ROWS, N): D = A B of each K step, A read from `image` as `operand` says, B the permutation."""
    e = case.element_bytes
    out = np.zeros((steps(case), ROWS, n(case)))
    for s in range(steps(case)):
        where = a_offsets(case, operand, s)[..., None] + np.arange(e)
        a = decode(case.dtype, image[where].copy().view(f"<u{e}")[..., 0])
        out[s] = a[:, permutation(case)]
    return out
