"""The mma family on the CPU: fragment maps against entries of the PTX ISA's figures, packing,
decoding, references, legality and the SASS forms."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError
from harness.families.mma import FAMILY as mma
from harness import sparsity
from harness.families.mma import fragments, sass
from harness.families.mma.checks import reference, tolerance
from harness.families.mma.probe import shapes
from harness.registry import parse_case_id

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
        ref = reference(case, type(inputs)(inputs.buffer, {"a": a, "b": b}, ""))
        assert ref[0, 0] == expected  # and: bit 1; xor: bits 0 and 2


def test_inputs_are_exact_in_their_types():
    rng = np.random.default_rng(0)
    f64 = mma.inputs(parse_case_id("mma.sync.m16n8k16.row.col.f64.f64.f64.f64"), rng).values["a"]
    assert np.array_equal(f64 * 4, np.rint(f64 * 4))
    s4 = mma.inputs(parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), rng).values
    assert s4["a"].min() >= -8 and s4["a"].max() <= 7 and s4["b"].min() >= 0 and s4["b"].max() <= 15
    assert tolerance(parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), mma.inputs(
        parse_case_id("mma.sync.m16n8k64.row.col.s32.s4.u4.s32"), rng)) == 0.0


@pytest.mark.parametrize("case_id,message", [
    ("mma.sync.m16n8k16.row.col.f32.f16.f16.f16", "not a legal f16 m16n8k16 mma.sync form"),
    ("mma.sync.m16n8k12.row.col.f32.f16.f16.f32", "f16 mma.sync has shapes m8n8k4, m16n8k8, m16n8k16,"),
    ("mma.sync.m16n8k16.row.col.f16.bf16.bf16.f16", "not a legal bf16 m16n8k16 mma.sync form"),
    ("mma.sync.m8n8k4.row.col.f16.f16.f16.f32", "legal: col.col.f16.f16.f16.f16, "),  # ptxas: no d f16 with c f32
    ("mma.sync.m16n8k16.col.col.f32.f16.f16.f32", "legal: row.col.f16.f16.f16.f16, row.col.f32.f16.f16.f32$"),
    ("mma.sp.sync.m16n8k8.row.col.f32.f16.f16.f32", "f16 mma.sp has shapes m16n8k16, m16n8k32, not m16n8k8"),
    ("mma.sp::ordered_metadata.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32", "e4m3 mma.sp::ordered_metadata has "
                                                                         "shapes m16n8k64, not m16n8k32"),
    ("mma.sp.sync.m8n8k128.row.col.s32.b1.b1.s32.and.popc", "mma.sp has no input type 'b1'"),
    ("mma.sp.sync.m16n8k16.row.col.f64.f64.f64.f64", "mma.sp has no input type 'f64'"),
])
def test_illegal_forms_are_refused_naming_the_legal_ones(case_id, message):
    with pytest.raises(IllegalShapeError, match=message):
        mma.check(parse_case_id(case_id))


def test_the_suite_and_the_emulated_forms():
    cases = mma.cases()
    dense = [c for c in cases if not c.sparse]
    assert len(dense) == 76 and {c.dtype_a for c in dense} == {"f16", "bf16", "tf32", "s8", "u8", "s4", "u4", "b1",
                                                                "e4m3", "e5m2", "f64"}
    # mma.sp and mma.sp::ordered_metadata: the same 32 forms each (PTX ISA, mma.sp shapes and types)
    for kind in ("sp", "sp::ordered_metadata"):
        sparse = [c for c in cases if c.sparse == kind]
        assert len(sparse) == 32 and {c.dtype_a for c in sparse} == {"f16", "bf16", "tf32", "s8", "u8", "s4", "u4",
                                                                      "e4m3", "e5m2"}
    assert {(c.layout_a, c.layout_b) for c in cases if c.shape == "m8n8k4" and c.dtype_a == "f16"} == {
        ("row", "row"), ("row", "col"), ("col", "row"), ("col", "col")}
    emulated = {c.case_id for c in cases if sass.form(c).emulated}
    assert all(c.dtype_a in ("e4m3", "e5m2", "s4", "u4") or c.bit_op == "xor" or c.shape == "m8n8k4"
               for c in map(parse_case_id, emulated))
    assert not sass.form(parse_case_id("mma.sync.m8n8k4.row.col.f64.f64.f64.f64")).emulated
    assert sass.form(parse_case_id("mma.sync.m16n8k32.row.col.f32.e4m3.e5m2.f32")).mnemonic == "HMMA.16816.F32"
    assert sass.form(parse_case_id("mma.sync.m16n8k16.row.col.f64.f64.f64.f64")).mnemonic == "DMMA.16x8x16"
    # ptx-facts / ptxas 13 for sm_90a: the sparse forms' SASS
    for case_id, mnemonic in [("mma.sp.sync.m16n8k32.row.col.f32.bf16.bf16.f32", "HMMA.SP.16832.F32.BF16"),
                              ("mma.sp.sync.m16n8k8.row.col.f32.tf32.tf32.f32", "HMMA.SP.1688.F32.TF32"),
                              ("mma.sp::ordered_metadata.sync.m16n8k64.row.col.s32.s8.u8.s32", "IMMA.SP.16864.S8.U8"),
                              ("mma.sp.sync.m16n8k64.row.col.f32.e4m3.e4m3.f32", "HMMA.SP.16832.F32")]:
        assert sass.form(parse_case_id(case_id)).mnemonic == mnemonic


def test_work_and_peak_count_sparse_dense_equivalent_and_m8n8k4_four_products():
    sparse = parse_case_id("mma.sp.sync.m16n8k32.row.col.f32.f16.f16.f32")
    assert mma.work(sparse).amount == 2 * 16 * 8 * 32 and mma.peak(sparse) == 2 * 4096
    quad = parse_case_id("mma.sync.m8n8k4.row.row.f32.f16.f16.f16")
    assert mma.work(quad).amount == 4 * 2 * 8 * 8 * 4


# f16 m8n8k4 (PTX ISA, "Matrix Fragments for mma.m8n8k4 with .f16", Figures 46-52): (lane, element)
# -> (computation, row, col). Computation c is lanes 4c..4c+3 (low group) and 16+4c..16+4c+3 (high).
M884 = [
    ("a", "row", [((0, 0), (0, 0, 0)), ((17, 2), (0, 5, 2)), ((6, 3), (1, 2, 3)), ((31, 1), (3, 7, 1))]),
    ("a", "col", [((0, 3), (0, 3, 0)), ((17, 2), (0, 6, 1)), ((9, 0), (2, 0, 1))]),
    ("b", "row", [((1, 3), (0, 1, 3)), ((18, 1), (0, 2, 5)), ((13, 0), (3, 1, 0))]),
    ("b", "col", [((1, 3), (0, 3, 1)), ((18, 1), (0, 1, 6)), ((30, 2), (3, 2, 6))]),
    ("d", "f16", [((2, 7), (0, 2, 7)), ((20, 0), (1, 4, 0))]),
    ("d", "f32", [((1, 2), (0, 3, 0)), ((18, 5), (0, 4, 7)), ((6, 7), (1, 2, 7)), ((0, 4), (0, 0, 4))]),
]


@pytest.mark.parametrize("matrix,variant,entries", M884)
def test_m8n8k4_quad_pair_fragments_follow_the_ptx_figures(matrix, variant, entries):
    maker = {"a": fragments.m884_a_coords, "b": fragments.m884_b_coords, "d": fragments.m884_d_coords}[matrix]
    comp, rows, cols = maker(variant)
    for (lane, element), place in entries:
        assert (comp[lane, element], rows[lane, element], cols[lane, element]) == place
    size = {"a": (8, 4), "b": (4, 8), "d": (8, 8)}[matrix]
    flat = (comp * size[0] + rows) * size[1] + cols
    assert sorted(flat.ravel()) == list(range(4 * size[0] * size[1]))  # every element of the 4 held once


def test_sparse_metadata_uses_only_the_nibbles_the_ptx_isa_calls_meaningful():
    """PTX ISA, "Sparse matrix storage": 2:4 indices 0b0100, 0b1000, 0b1001, 0b1100, 0b1101, 0b1110;
    tf32 (1:2) 0b1110 and 0b0100 only; the selector's lanes: one per group for f16 m16n8k16 and tf32
    m16n8k8, a pair for f16 m16n8k32, tf32 m16n8k16, s8 m16n8k32 and s4 m16n8k64, all four for s8
    m16n8k64, s4 m16n8k128 and fp8 m16n8k64."""
    rng = np.random.default_rng(1)
    for dtype, k, meaningful, lanes in [("f16", 16, {4, 8, 9, 12, 13, 14}, 1), ("f16", 32, {4, 8, 9, 12, 13, 14}, 2),
                                        ("tf32", 8, {4, 14}, 1), ("tf32", 16, {4, 14}, 2), ("s8", 32, None, 2),
                                        ("s8", 64, None, 4), ("s4", 64, None, 2), ("s4", 128, None, 4),
                                        ("e4m3", 64, None, 4)]:
        assert sparsity.metadata_lanes(dtype, k) == lanes
        pattern = sparsity.draw(dtype, 16, k, rng)
        words = sparsity.metadata(dtype, pattern)
        holders = [lane for lane in range(32) if lane % 4 < lanes]
        nibbles = {(int(w) >> (4 * i)) & 0xF for w in words[holders] for i in range(8)}
        assert nibbles <= (meaningful or {4, 8, 9, 12, 13, 14}) and len(nibbles) > 1  # several patterns
        assert all(words[lane] == sparsity.DECOY for lane in range(32) if lane % 4 >= lanes)
        keep = sparsity.kept(dtype, pattern, k)
        assert keep.sum() == 16 * k // 2


def test_sparse_metadata_places_each_chunk_where_the_layout_says():
    """Row 9 (group 1, upper half), chunk 5 of f16 m16n8k32: the pair's second lane (5), bits 16+4..16+7."""
    pattern = np.zeros((16, 8, 2), dtype=int)
    pattern[..., 1] = 1  # every chunk (0, 1): 0b0100
    pattern[9, 5] = (2, 3)  # 0b1110
    words = sparsity.metadata("f16", pattern)
    assert words[4] == 0x44444444 and words[5] == 0x44E44444
    keep = sparsity.kept("f16", pattern, 32)
    assert keep[9, 20:24].tolist() == [False, False, True, True] and keep[0, :4].tolist() == [True, True, False, False]
    s4 = sparsity.kept("s4", pattern[:, :8], 64)  # s4: slots are pairs of elements
    assert s4[0, :8].tolist() == [True] * 4 + [False] * 4


def test_sparse_inputs_hold_the_compressed_a_and_the_reference_uses_the_dense_one():
    case = parse_case_id("mma.sp::ordered_metadata.sync.m16n8k16.row.col.f32.f16.f16.f32")
    inputs = mma.inputs(case, np.random.default_rng(2))
    a = inputs.values["a"]
    assert a.shape == (16, 16) and (np.count_nonzero(a.reshape(16, 4, 4), axis=2) <= 2).all()
    regs = shapes(case)
    assert regs == {"a": 2, "b": 2, "c": 4, "d": 4, "e": 1}
    assert inputs.buffer.size == 4 * 32 * (2 + 2 + 1) + 8
    assert np.array_equal(reference(case, inputs), a @ inputs.values["b"])


def test_sparse_metadata_of_byte_slots_is_one_row_per_lane():
    """Measured on an H100 (scripts/discover_sparse_metadata.py): for s8/u8, fp8 and s4/u4 pairs, lane
    4g + j holds row g + 8 (j % 2), chunks 8 (j // 2) + c in bits 4c+3:4c."""
    pattern = np.zeros((16, 16, 2), dtype=int)
    pattern[..., 1] = 1  # 0b0100 everywhere
    pattern[9, 10] = (1, 3)  # 0b1101: row 9 (group 1, upper) chunk 10 -> lane 4 + 3, nibble 2
    words = sparsity.metadata("s8", pattern)
    assert words[7] == 0x44444D44 and words[4] == words[5] == words[6] == 0x44444444


def test_an_emulated_form_has_a_call_interval_not_an_issue_interval():
    """The independent-accumulator chain of a form ptxas emulates (fp8, s4/u4, xor.popc, m8n8k4 f16: the
    PTX ISA's sm_90 table has no such native MMA) is stored as call_interval_cycles."""
    from harness.registry import FAMILIES
    from harness.families.mma import sass
    from harness.measure.methods import ChainSlope

    names = {}
    for case in FAMILIES["mma"].cases():
        (interval,) = [s.metric for s in FAMILIES["mma"].plan(case) if isinstance(s, ChainSlope)
                       and s.metric != "latency_cycles"]
        names[case.case_id] = interval
        assert interval == ("call_interval_cycles" if sass.form(case).emulated else "issue_interval_cycles")
    assert names["mma.sync.m16n8k32.row.col.f32.e4m3.e4m3.f32"] == "call_interval_cycles"
    assert names["mma.sync.m8n8k4.row.col.f32.f16.f16.f32"] == "call_interval_cycles"
    assert names["mma.sync.m16n8k16.row.col.f32.f16.f16.f32"] == "issue_interval_cycles"


def test_the_paper_latency_difference_is_explained_only_where_its_cause_applies():
    """2402.13499 Table VII prints 16.0 for m16n8k8 f16; docs/chains.md measured why ours differ: 17 with
    two body lengths, 16.875 with one body of 16 (the branch pair's 15 cycles spread over it)."""
    from harness.registry import FAMILIES

    explain = FAMILIES["mma"].explain
    case = "mma.sync.m16n8k8.row.col.f32.f16.f16.f32"
    assert "17 cycles apart in straight-line code" in explain(case, "latency_cycles", 17.0003, 16.0).text
    assert "17 - 2/16 = 16.875" in explain(case, "latency_cycles", 16.875, 16.0).text
    assert explain(case, "latency_cycles", 18.0, 16.0) is None  # not what the cause predicts
    assert explain(case, "latency_cycles", 24.0, 24.0) is None
    assert explain(case, "issue_interval_cycles", 17.0, 16.0) is None
