"""The mma family on the CPU: fragment maps against entries of the PTX ISA's figures, packing,
decoding, references, legality and the SASS forms."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError
from harness.families.mma import FAMILY as mma
from harness.families.mma import fragments, sass
from harness.spec import parse_case_id

# (lane, element index in the lane's order) -> (row, col), read off the PTX ISA figures
# "MMA .m16n8k16 fragment layout for matrix A/B/C with .f16/.bf16", ".m16n8k32 ... .s8", ".m16n8k4
# ... .tf32", ".m8n8k4 ... .f64" and ".m16n8k256 ... .b1".
FIGURES = [
    ("a", 16, 16, 16, [((0, 0), (0, 0)), ((0, 1), (0, 1)), ((0, 2), (8, 0)), ((0, 4), (0, 8)), ((0, 7), (8, 9)),
                       ((5, 0), (1, 2)), ((5, 3), (9, 3)), ((31, 7), (15, 15))]),
    ("b", 16, 8, 16, [((5, 0), (2, 1)), ((5, 3), (11, 1)), ((31, 3), (15, 7))]),
    ("a", 16, 32, 8, [((5, 9), (1, 21)), ((31, 15), (15, 31))]),
    ("a", 16, 4, 32, [((5, 1), (9, 1))]),
    ("a", 8, 4, 64, [((5, 0), (1, 1))]),
    ("b", 4, 8, 64, [((5, 0), (1, 1)), ((6, 0), (2, 1))]),
    ("a", 16, 256, 1, [((5, 70), (1, 166))]),
]
D_FIGURES = [(16, [((5, 0), (1, 2)), ((5, 3), (9, 3)), ((31, 3), (15, 7))]), (8, [((6, 1), (1, 5))])]


@pytest.mark.parametrize("matrix,rows,cols,bits,entries", FIGURES)
def test_operand_fragments_follow_the_ptx_figures(matrix, rows, cols, bits, entries):
    r, c = fragments.a_coords(rows, cols, bits) if matrix == "a" else fragments.b_coords(rows, cols, bits)
    for (lane, element), place in entries:
        assert (r[lane, element], c[lane, element]) == place
    assert sorted((r * cols + c).ravel()) == list(range(rows * cols))  # each element held exactly once


@pytest.mark.parametrize("m,entries", D_FIGURES)
def test_accumulator_fragments_follow_the_ptx_figures(m, entries):
    r, c = fragments.d_coords(m, 8)
    for (lane, element), place in entries:
        assert (r[lane, element], c[lane, element]) == place


def test_packing_puts_the_first_element_in_the_low_bits():
    codes = np.array([[1, 2, 3, 4, 5, 6, 7, 8]], dtype=np.uint64)
    assert fragments.pack(4, codes).tolist() == [[0x87654321]]
    assert fragments.pack(16, codes[:, :2]).tolist() == [[0x00020001]]
    assert fragments.unpack(4, np.array([[0x87654321]], dtype=np.uint32)).tolist() == [[1, 2, 3, 4, 5, 6, 7, 8]]
    value = np.array([[1.5]]).view(np.uint64)
    assert fragments.unpack(64, fragments.pack(64, value)).view(np.float64).tolist() == [[1.5]]


def test_decode_places_each_accumulator_register_where_the_figure_says():
    case = parse_case_id("mma.sync.m16n8k16.row.col.f32.f16.f16.f32")
    words = np.zeros((8, 32, 4), dtype=np.float32)  # 8 accumulators (ILP), 32 lanes, 4 registers
    words[0, 5, 3] = 7.0  # lane 5, c3: row 9, col 3
    d = mma.decode(case, words.view(np.uint32).ravel())
    assert d[9, 3] == 7.0 and np.count_nonzero(d) == 1


def test_b1_references_count_and_and_xor_bits():
    for op, expected in (("and", 1.0), ("xor", 2.0)):
        case = parse_case_id(f"mma.sync.m8n8k128.row.col.s32.b1.b1.s32.{op}.popc")
        a = np.zeros((8, 128))
        b = np.zeros((128, 8))
        a[0, :3] = 1  # row 0: bits 0, 1, 2
        b[1:3, 0] = [1, 0]  # col 0: bit 1 only
        inputs = mma.inputs(case, np.random.default_rng(0))
        ref = mma.reference(case, type(inputs)(inputs.buffer, {"a": a, "b": b}, ""))
        assert ref[0, 0] == expected  # and: bit 1; xor: bits 0 and 2


def test_inputs_are_exact_in_their_types():
    rng = np.random.default_rng(0)
    f64 = mma.inputs(parse_case_id("mma.sync.m16n8k16.row.col.f64.f64.f64.f64"), rng).values["a"]
    assert np.array_equal(f64 * 4, np.rint(f64 * 4))
    s4 = mma.inputs(parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), rng).values
    assert s4["a"].min() >= -8 and s4["a"].max() <= 7 and s4["b"].min() >= 0 and s4["b"].max() <= 15
    assert mma.tolerance(parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), mma.inputs(
        parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), rng)) == 0.0


@pytest.mark.parametrize("case_id,message", [
    ("mma.sync.m16n8k16.row.col.f32.f16.f16.f16", "not a legal f16 m16n8k16 form"),
    ("mma.sync.m16n8k12.row.col.f32.f16.f16.f32", "f16 mma.sync has shapes"),
    ("mma.sync.m16n8k16.row.col.f16.bf16.bf16.f16", "not a legal bf16 m16n8k16 form"),
])
def test_illegal_forms_are_refused_naming_the_legal_ones(case_id, message):
    with pytest.raises(IllegalShapeError, match=message):
        mma.check(parse_case_id(case_id))


def test_the_suite_and_the_emulated_forms():
    cases = mma.cases()
    assert len(cases) == 64 and {c.dtype_a for c in cases} == {"f16", "bf16", "tf32", "s8", "u8", "s4", "u4", "b1",
                                                                 "e4m3", "e5m2", "f64"}
    emulated = {c.case_id for c in cases if sass.form(c).emulated}
    assert all(c.dtype_a in ("e4m3", "e5m2", "s4", "u4") or c.bit_op == "xor" for c in map(parse_case_id, emulated))
    assert sass.form(parse_case_id("mma.sync.m16n8k32.row.col.f32.e4m3.e5m2.f32")).mnemonic == "HMMA.16816.F32"
    assert sass.form(parse_case_id("mma.sync.m16n8k16.row.col.f64.f64.f64.f64")).mnemonic == "DMMA.16x8x16"
