"""The layout library (harness/layouts.py) against CuTe's documented examples and the bank rules it models.

Expectations come from outside the code: CuTe's documentation (NVIDIA/cutlass media/docs/cpp/cute/
01_layout.md "Coordinate mapping" / "Index mapping", 02_layout_algebra.md "Coalesce", "Composition",
"Complement", "Division"), the PTX ISA's swizzle patterns, and the CUDA C++ Programming Guide's shared-memory
examples (compute capability 5.x and later: 32 banks of 4 bytes; strided 32-bit access conflicts by the
stride's common factor with 32; one word read by many lanes is broadcast)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.layouts import (Layout, coalesce, complement, composition, crd2idx, idx2crd, logical_divide, make_layout,
                             row_major, zipped_divide)
from harness.smembanks import ldmatrix_positions, wavefronts
from harness.swizzles import SWIZZLE_MODES, Swizzle, Swizzled, in_bytes


# -- 01_layout.md -------------------------------------------------------------------------------------

def test_coordinates_split_colexicographically():
    # 01_layout.md, "Coordinate mapping": shape (3,(2,3)); 16 <-> (1,5) <-> (1,(1,2))
    assert idx2crd(16, (3, (2, 3))) == (1, (1, 2))
    assert idx2crd(5, (3, (2, 3))) == (2, (1, 0))  # 5 % 3 = 2; 1 % 2 = 1; 0
    layout = Layout((3, (2, 3)), (3, (12, 1)))  # "Index mapping": all three forms give 17
    assert layout(16) == layout(1, 5) == layout(1, (1, 2)) == 17


def test_make_layout_defaults_to_the_compact_column_major_stride():
    # 01_layout.md: make_layout(make_shape(4, 8)) is (4,8):(1,4) ("LayoutLeft" is the default)
    assert str(make_layout((4, 8))) == "(4,8):(1,4)"
    assert str(make_layout((2, (3, 4)))) == "(2,(3,4)):(1,(2,6))"


def test_every_index_round_trips():
    shape = (4, (2, 3), 5)
    compact = Layout(shape, (1, (4, 8), 24))  # the colexicographic compact stride
    assert [compact(idx2crd(i, shape)) for i in range(120)] == list(range(120))


# -- 02_layout_algebra.md -----------------------------------------------------------------------------

def test_coalesce():
    assert str(coalesce(Layout((2, (1, 6)), (1, (6, 2))))) == "12:1"
    assert str(coalesce(Layout((2, 4), (1, 2)))) == "8:1"


@pytest.mark.parametrize("a, b, expected", [
    (Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1)), "((2,2),3):((24,2),8)"),
    (Layout(20, 2), Layout((5, 4), (4, 1)), "(5,4):(8,2)"),
    (Layout((10, 2), (16, 4)), Layout((5, 4), (1, 5)), "(5,(2,2)):(16,(80,4))"),
])
def test_composition_examples(a, b, expected):
    result = composition(a, b)
    assert str(result) == expected
    assert [result(i) for i in range(b.size)] == [a(b(i)) for i in range(b.size)]


def test_composition_worked_values():
    # "R(1) = A(B(1)) = ... = 24", "R(7) = 34", "R(11) = 42"
    r = composition(Layout((6, 2), (8, 2)), Layout((4, 3), (3, 1)))
    assert [r(i) for i in range(12)] == [0, 24, 2, 26, 8, 32, 10, 34, 16, 40, 18, 42]


def test_composition_with_a_tiler():
    a = Layout((12, (4, 8)), (59, (13, 1)))
    assert str(composition(a, (Layout(3, 4), Layout(8, 2)))) == "(3,(2,4)):(236,(26,1))"
    assert str(composition(a, (3, 8))) == "(3,(4,2)):(59,(13,1))"


@pytest.mark.parametrize("a, expected", [
    (Layout(4, 1), "6:4"), (Layout(6, 4), "4:1"), (Layout((4, 6), (1, 4)), "1:0"), (Layout(4, 2), "(2,3):(1,8)"),
    (Layout((2, 4), (1, 6)), "3:2"), (Layout((2, 2), (1, 6)), "(3,2):(2,12)"),
])
def test_complement_examples(a, expected):
    assert str(complement(a, 24)) == expected


def test_complement_fills_the_codomain_without_overlap():
    a = Layout((2, 2), (1, 6))
    both = {a(i) + complement(a, 24)(j) for i in range(a.size) for j in range(complement(a, 24).size)}
    assert both == set(range(24))


def test_logical_divide_examples():
    assert str(logical_divide(Layout((4, 2, 3), (2, 1, 8)), Layout(4, 2))) == "((2,2),(2,3)):((4,1),(2,8))"
    a = Layout((9, (4, 8)), (59, (13, 1)))
    tiler = (Layout(3, 3), Layout((2, 4), (1, 8)))
    tile = zipped_divide(a, tiler).mode(0)  # "layout<0>(zipped_divide(a, b)) == composition(a, b)"
    assert str(tile) == "(3,(2,4)):(177,(13,2))" == str(composition(a, tiler))


def test_a_wrong_composition_is_caught():
    with pytest.raises(ValueError):
        composition(Layout((6, 2), (8, 2)), Layout(4, 4))  # 4 neither divides 6 nor is a multiple of it


# -- swizzles -----------------------------------------------------------------------------------------

def test_swizzle_is_cute_s_xor_of_bits():
    # swizzle.hpp: the B bits at M + S are XORed into the B bits at M
    sw = Swizzle(3, 4, 3)
    assert sw(0b0000_0111_1000_0000) == 0b0000_0111_1111_0000
    assert sw(0b0000_0000_0111_1111) == 0b0000_0000_0111_1111  # nothing above bit 6: unchanged
    assert all(sw(sw(x)) == x for x in range(4096))  # an involution


@pytest.mark.parametrize("span", [32, 64, 128])
def test_the_ptx_swizzle_modes_permute_16_byte_chunks(span):
    # PTX ISA, "Shared memory matrix layout", swizzle modes: inside each 128-byte line, the 16-byte chunk
    # index is XORed with the line's index modulo span / 16 (the pattern repeats every 256, 512, 1024 bytes)
    sw = SWIZZLE_MODES[span]
    chunks = span // 16
    for line in range(16):
        for chunk in range(8):
            byte = 128 * line + 16 * chunk + 3
            expected = 128 * line + 16 * (chunk ^ (line % chunks)) + 3
            assert sw(byte) == expected, (line, chunk)


def test_a_swizzle_on_elements_is_the_byte_swizzle_shifted_by_the_element_size():
    for elements in (Swizzle(3, 3, 3), Swizzle(3, 4, 3)):
        for eb in (2, 4):
            assert all(eb * elements(x) == in_bytes(elements, eb)(eb * x) for x in range(2048))


def test_swizzled_layout_composes_after_the_layout():
    tile = Swizzled(Swizzle(3, 3, 3), row_major(8, 64))  # f16 elements, 128-byte rows
    assert [tile(r, 0) for r in range(8)] == [64 * r ^ (8 * r) for r in range(8)]


# -- the bank model -----------------------------------------------------------------------------------

@pytest.mark.parametrize("stride_words, expected", [(1, 1), (2, 2), (3, 1), (4, 4), (8, 8), (16, 16), (32, 32),
                                                    (33, 1)])
def test_strided_32_bit_access_conflicts_by_the_common_factor(stride_words, expected):
    assert wavefronts([4 * stride_words * lane for lane in range(32)], 4) == expected


def test_a_word_read_by_every_lane_is_broadcast():
    assert wavefronts([128] * 32, 4) == 1
    assert wavefronts([4 * (lane % 2) for lane in range(32)], 4) == 1  # two words, two banks


def test_wide_accesses_take_a_phase_per_128_bytes():
    assert wavefronts([8 * lane for lane in range(32)], 8) == 2
    assert wavefronts([16 * lane for lane in range(32)], 16) == 4
    assert wavefronts([2 * lane for lane in range(32)], 2) == 1  # 64 bytes, 16 words
    # 128-bit: lanes 0-7 of each phase on one 128-byte line each: eight lines, 8 words a bank
    assert wavefronts([128 * (lane % 8) + 16 * (lane // 8) for lane in range(32)], 16) == 4 * 8


def test_ldmatrix_rows_of_a_128B_swizzle_are_conflict_free_and_plain_rows_are_not():
    rows = [128 * r for r in range(8)]  # chunk 0 of eight 128-byte rows
    assert wavefronts(rows, 16) == 8
    assert wavefronts([SWIZZLE_MODES[128](a) for a in rows], 16) == 1


def test_ldmatrix_lane_map():
    # PTX ISA, "ldmatrix" (without .trans): lane l holds row l // 4, elements 2 (l % 4) and + 1
    rows = np.array([16 * r for r in range(32)])
    pos = ldmatrix_positions(rows, 1, False)
    assert pos[5, 0].tolist() == [8 + 2, 8 + 3]
    assert ldmatrix_positions(rows, 1, True)[5, 0].tolist() == [16 + 1, 24 + 1]  # column 1, rows 2 and 3


@pytest.mark.parametrize("span", [0, 32, 64, 128])
def test_the_swizzle_modes_are_where_tma_loads_landed_their_bytes(span):
    # The tma family validates every swizzled TMA load on the GPU byte for byte against its own model of where
    # each byte lands (harness/families/tma/model.py swizzle; valid sw32/sw64/sw128 rows in runs 24-98 of
    # results.db): the layout library's modes agree with it on every offset of a 1024-byte-aligned stage, and so
    # place bytes where the hardware put them. (The readback through ldmatrix and wgmma's descriptor is not
    # measured yet: docs/banks.md.)
    from harness.families.tma.model import swizzle as tma_swizzle

    offsets = np.arange(16 * 1024)
    assert (np.array([SWIZZLE_MODES[span](int(o)) for o in offsets]) == tma_swizzle(offsets, span)).all()
