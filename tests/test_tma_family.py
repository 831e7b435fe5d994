"""The TMA family's NumPy model against the documents that define it, and its plan against shared memory."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError
from harness.families import tma
from harness.families.tma import cases, ids, kernels as tma_kernels, layout, model, suite_cases

SW128 = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128"


@pytest.mark.parametrize("span,bits", [(32, 1), (64, 2), (128, 3)])
def test_swizzle_is_the_chunk_xor_row_rule(span, bits):
    """CUDA C++ Programming Guide, TMA swizzle (CuTe Swizzle<B,4,3>): the 16-byte chunk of a 128-byte row
    is XORed with the row index, keeping `bits` bits; bytes within a chunk stay put."""
    for row in range(16):
        for chunk in range(8):
            for byte in (0, 5, 15):
                offset = 128 * row + 16 * chunk + byte
                expected = 128 * row + 16 * (chunk ^ (row % (1 << bits))) + byte
                assert model.swizzle(np.array([offset]), span)[0] == expected


def test_swizzles_permute_each_1024_byte_repeat_and_are_their_own_inverse():
    offsets = np.arange(4096)
    for span in (0, 32, 64, 128):
        moved = model.swizzle(offsets, span)
        assert np.array_equal(model.swizzle(moved, span), offsets)
        for start in range(0, 4096, 1024):
            assert sorted(moved[start:start + 1024]) == list(range(start, start + 1024))
    assert np.array_equal(model.swizzle(offsets, 0), offsets)


def test_box_offsets_follow_the_tensor_strides():
    """A rank-2 b16 tensor one box wide: a box is whole rows, 64 * 2 bytes apart (whole 256-byte
    segments of the L2 promotion, docs/data-movement.md)."""
    geom = model.Geometry(2, 2, (64, 4), tiles=1000)
    assert geom.dims[0] == 64 and geom.strides == (2, 128)
    assert geom.corner(3) == (0, 12)  # tile 3: the fourth box down
    offsets = geom.box_offsets(3)
    assert offsets.size == geom.box_bytes == 512
    assert np.array_equal(offsets, 12 * 128 + np.arange(512))  # contiguous
    # rank 3: two boxes along dimension 1, so its digit moves the corner by a box's extent
    geom = model.Geometry(3, 2, (64, 4, 2), tiles=1000)
    assert geom.dims[:2] == (64, 8) and geom.strides == (2, 128, 1024)
    assert geom.corner(3) == (0, 4, 2)  # digits 0 (dim 0), 1 (dim 1), 1 (dim 2)
    offsets = geom.box_offsets(3)
    assert offsets[0] == 4 * 128 + 2 * 1024 and offsets[128] == offsets[0] + 128  # next row along dim 1
    assert offsets[4 * 128] == offsets[0] + 1024  # next along dim 2, past the other box's rows
    assert model.check_tile(2) == 5 and model.check_tile(3) == 1 + 5 * 2


def test_a_gemm_tile_is_rows_a_pitch_apart_in_a_matrix_many_boxes_wide():
    """`.pitch8192`: a 2-D b16 matrix 8192 bytes a row (K = 4096), cut into 64 x rows boxes: 64 boxes side by
    side, tile t's corner at column 64 (t % 64), row rows (t // 64); a box's rows are 8192 bytes apart, as a
    GEMM's A tile of BK = 64 is in a row-major M x K matrix."""
    case = ids.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x4.sw128.pitch8192")
    assert case.pitch == 8192 and case.row_boxes == 64 and str(case).endswith(".sw128.pitch8192")
    geom = layout.geometry(case, 64 * 1000)
    assert geom.dims[0] == 4096 and geom.strides == (2, 8192)
    assert geom.corner(1) == (64, 0) and geom.corner(64 + 3) == (192, 4)
    offsets = geom.box_offsets(64 + 3)
    rows = offsets.reshape(4, 128)
    assert np.array_equal(rows[:, 0], 4 * 8192 + 3 * 128 + 8192 * np.arange(4))  # 128 contiguous bytes a row
    assert np.array_equal(rows - rows[:, :1], np.tile(np.arange(128), (4, 1)))
    assert tma_kernels.check_tile(case) == model.check_tile(2, 64) == 1 + 5 * 64
    assert tma.FAMILY.template_params(case)["tiles"].startswith("64, ")
    contiguous = ids.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x4.sw128")
    assert contiguous.row_boxes == 1 and layout.geometry(contiguous, 1000).strides == (2, 128)


def test_a_rank_3_pitch_is_the_authors_1024_cubed_fp32_tensor():
    """`.pitch4096x4194304`: rows 4 KiB and planes 4 MiB apart (their tma_bw_3d log's tensor); 8 x 8 x 4 boxes:
    128 along a row, 128 along a plane, tile t's corner by those digits, then 4 planes a step."""
    case = ids.parse("cp.async.bulk.tensor.3d.shared::cluster.global.tile.b32.box8x8x4.pitch4096x4194304")
    assert (case.pitch, case.plane, case.row_boxes, case.plane_boxes) == (4096, 4 << 20, 128, 128)
    assert str(case).endswith(".box8x8x4.pitch4096x4194304")
    geom = layout.geometry(case, 128 * 128 * 10)
    assert geom.dims == (1024, 1024, 40) and geom.strides == (4, 4096, 4 << 20)
    assert geom.corner(1) == (8, 0, 0) and geom.corner(128 + 2) == (16, 8, 0) and geom.corner(128 * 128) == (0, 0, 4)
    offsets = geom.box_offsets(128 + 2).reshape(4, 8, 32)  # planes, rows, the row's 8 x 4 bytes
    assert offsets[0, 0, 0] == 8 * 4096 + 16 * 4 and offsets[0, 1, 0] - offsets[0, 0, 0] == 4096
    assert offsets[1, 0, 0] - offsets[0, 0, 0] == 4 << 20
    assert tma_kernels.check_tile(case) == 1 + 128 + 128 * 128  # 1 along the planes: inside a source of two slabs
    assert tma.FAMILY.template_params(case)["tiles"].startswith("128, 128, ")
    assert (1, 3) in layout.stream_points(case)  # their 342 blocks on 114 SMs
    big = ids.parse("cp.async.bulk.tensor.3d.shared::cluster.global.tile.b32.box4x4x256.pitch4096x4194304")
    assert layout.source_tiles(big, 2 << 30) == 2 * 256 * 256 and tma_kernels.check_tile(big) < 256 * 256 + 256 + 2


def test_the_authors_96_wide_box_reads_their_map_whose_rows_it_does_not_tile():
    """96 x 32 FP32 boxes of a matrix 32768 elements a row: the map's row is all 32768, the boxes start at
    96 i for i < 341, the source holds whole rows (slabs of 32 rows, 4 MiB)."""
    case = ids.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box96x32.pitch131072")
    assert case.row_boxes == 341 and case.row_elems == 32768
    geom = layout.geometry(case, 341 * 100)
    assert geom.dims == (32768, 3200) and geom.strides == (4, 131072) and geom.slab_bytes == 4 << 20
    assert geom.corner(340) == (32640, 0) and geom.corner(341) == (0, 32)
    tiles = layout.source_tiles(case, 3 << 30)
    assert tiles == 768 * 341 and layout.source_bytes(case, tiles) == 3 << 30
    with pytest.raises(IllegalShapeError, match="2-D loads only"):
        ids.parse("cp.async.bulk.tensor.2d.global.shared::cta.tile.b32.box96x32.pitch131072")


def test_the_suite_measures_gemm_tiles_and_keeps_the_contiguous_boxes_as_a_variant():
    """Issue 34 item 10: every 2-D tile copy of the suite is a GEMM's tile (pitch 8192) but the contiguous
    box sizes, which the suite keeps beside the same boxes as tiles. (The tma-authors suite's 2-D boxes are the
    authors' FP32 matrix, 32768 elements a row: pitch 131072.)"""
    suite = suite_cases.cases()
    assert {c.pitch for c in suite_cases.authors_cases() if c.rank == 2} == {suite_cases.AUTHORS_2D_PITCH}
    two_d = [c for c in suite if c.tensor and c.rank == 2 and not c.im2col]
    contiguous = {(c.op, c.box) for c in two_d if not c.pitch}
    assert all(c.pitch == cases.GEMM_PITCH for c in two_d if c.pitch)
    assert contiguous == {("load", (64, rows)) for rows in suite_cases.BOX_ROWS}
    assert {(c.op, c.box) for c in two_d if c.pitch and c.cluster == 1 and c.swizzle == 128 and c.elem == 2
            and not c.gmap and c.promotion == cases.DEFAULT_PROMOTION and c.op == "load"} >= contiguous
    assert all(c.pitch for c in two_d if c.op != "load" or c.cluster > 1 or c.gmap or c.elem != 2)


def test_source_words_are_distinct_and_bytes_little_endian():
    words = model.source_words(np.arange(1 << 16))
    assert len(np.unique(words)) > 65000
    raw = model.source_bytes(np.arange(8))
    assert np.array_equal(raw.view(np.uint32), model.source_words(np.arange(2)))


def test_stored_is_the_inverse_of_landed():
    rng = np.random.default_rng(0)
    box = rng.integers(0, 256, 8192, dtype=np.uint8)
    assert np.array_equal(model.stored(model.landed(box, 128), 128), box)


@pytest.mark.parametrize("case_id,message", [
    ("cp.async.bulk.tensor.6d.shared::cluster.global.tile.b16.box8x8x8x8x8x8", "rank 1 to 5"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64", "a rank-2 box has 2 extents"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x257", "1 to 256 elements"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box32x8.sw32", "at most 32 bytes, not 64"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x256.sw128.multicast8", "exceed"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch200", "multiple of 16 bytes"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch128", "more than one"),
    ("cp.async.bulk.tensor.3d.shared::cluster.global.tile.b16.box64x8x8.sw128.pitch8192", "its plane's bytes"),
    ("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x8.sw128.pitch8192x65536", "its plane's bytes"),
    ("cp.async.bulk.tensor.4d.shared::cluster.global.tile.b16.box64x4x4x4.sw128.pitch8192", "not a rank-4"),
    ("cp.async.bulk.tensor.3d.shared::cluster.global.tile.b32.box8x8x4.pitch4096x40000", "plane pitch is a multiple"),
    ("cp.async.bulk.tensor.3d.shared::cluster.global.tile.b32.box8x8x4.pitch4096x32768", "more than one"),
])
def test_illegal_boxes_are_one_line_errors(case_id, message):
    with pytest.raises(IllegalShapeError, match=message):
        ids.parse(case_id)


def test_the_sweep_fits_in_shared_memory():
    for case in tma.FAMILY.cases():
        if case.op in ("load", "store", "bulk"):
            points = layout.stream_points(case)
            assert points, case
            for stages, blocks in points:
                assert blocks * (layout.dynamic_smem(case, stages) + 2048) <= layout.SMEM_PER_SM
    big = ids.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x256.sw128")
    assert max(k for k, _ in layout.stream_points(big)) == 4  # 32 KB boxes: at most 4 in flight


def test_multicast_checks_expect_every_cta_to_hold_every_box():
    case = ids.parse(SW128 + ".multicast4")
    inputs = tma.FAMILY.inputs(case, np.random.default_rng(0))
    check = tma.FAMILY.checks(case, inputs)[0]
    per_cta = case.box_bytes * 4 // 4  # words: 4 boxes of 8 KB
    first = check.expected[:per_cta]
    for rank in range(4):
        assert np.array_equal(check.expected[rank * per_cta:(rank + 1) * per_cta], first)
    geom = layout.geometry(case, 1 << 20)
    tile = model.check_tile(2)
    assert np.array_equal(first[:case.box_bytes // 4],
                          model.words(model.landed(geom.logical_box(tile), 128)).astype(np.float64))
    assert check.grid == 4


@pytest.mark.parametrize("rank,pixels", [(3, 128), (4, 32), (4, 256), (5, 128)])
def test_im2col_column_is_the_convolutions_im2col_row_set(rank, pixels):
    """An im2col load's pixels against the textbook definition of a 'same' convolution's im2col (filter
    3, padding 1, stride 1): output pixel p of image n with the filter at position r reads input pixel
    p + r - 1, zero outside the image. Loop by loop, element by element, over the probe's tensor."""
    geom = model.Im2colGeometry(rank, 2, 64, pixels, tiles=1 << 16)
    extents = model.IM2COL_EXTENTS[rank]
    per_image = int(np.prod(extents))
    for tile in (0, 47, 679, 1001):
        channel0 = tile % model.IM2COL_CHANNEL_TILES * 64
        column = tile // model.IM2COL_CHANNEL_TILES
        position = column % 3 ** len(extents)
        filt = [position // 3 ** s % 3 for s in range(len(extents))]
        expected = np.zeros((pixels, 64 * 2), dtype=np.uint8)
        for j in range(pixels):
            out = column * pixels + j
            n, rest = divmod(out, per_image)
            coords = []
            for e in extents:
                coords.append(rest % e)
                rest //= e
            source = [p + r - 1 for p, r in zip(coords, filt)]
            if any(not 0 <= s < e for s, e in zip(source, extents)):
                continue
            element = n
            for s, e in zip(reversed(source), reversed(extents)):
                element = element * e + s
            first = (element * geom.dims[0] + channel0) * 2  # bytes: C innermost, 2-byte elements
            expected[j] = model.source_bytes(np.arange(first, first + 128))
        np.testing.assert_array_equal(geom.logical_box(tile).reshape(pixels, -1), expected, err_msg=f"tile {tile}")


def test_an_illegal_im2col_load_is_one_line():
    with pytest.raises(IllegalShapeError, match="rank 3, 4 or 5"):
        ids.parse("cp.async.bulk.tensor.2d.shared::cluster.global.im2col.b16.ch64.px128.sw128")
    with pytest.raises(IllegalShapeError, match="pixels per column are 1 to 1024"):
        ids.parse("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.b16.ch64.px2048.sw128")
    with pytest.raises(IllegalShapeError, match="inner extent is at most 64 bytes"):
        ids.parse("cp.async.bulk.tensor.4d.shared::cluster.global.im2col.b16.ch64.px128.sw64")


def test_the_l2_promotion_is_part_of_the_id_when_not_the_default():
    from harness.families.tma.cases import DEFAULT_PROMOTION
    from harness.registry import parse_case_id

    base = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128"
    assert parse_case_id(base).promotion == DEFAULT_PROMOTION == 128
    assert parse_case_id(base + ".l2promo256").promotion == 256
    assert str(parse_case_id(base + ".l2promo0")) == base + ".l2promo0"
    with pytest.raises(IllegalShapeError, match="promotion"):
        parse_case_id(base + ".l2promo32")


def test_a_store_is_timed_as_the_sm_draining_it_not_as_a_latency_from_the_l2():
    """Issue 34, item 8: a store's bulk group completes at 29 + bytes / 32 cycles on both GPUs, the SM
    sending the tile out; its metric says so (store_drain_cycles), where loads keep latency_cycles."""
    from harness.registry import FAMILIES

    family = FAMILIES["tma"]
    store = family.parse("cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128")
    load = family.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128")
    named = lambda case: {m for spec in family.plan(case, None) for m, _ in spec.declares(family.work(case))}  # noqa: E731
    assert "store_drain_cycles" in named(store) and "latency_cycles" not in named(store)
    assert "latency_cycles" in named(load) and "store_drain_cycles" not in named(load)


def test_a_loads_latency_is_timed_from_its_issue_in_the_same_launch():
    """Issue 34 item 11: a load's latency_cycles comes from the issue stamps of its own launch; the whole
    sequence less an empty one from another launch is latency_added_cycles (it overlaps the copy's wait)."""
    from harness.measure.methods import BracketedLatency

    load = tma.FAMILY.parse("cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192")
    specs = [s for s in tma.FAMILY.plan(load, None) if isinstance(s, BracketedLatency)]
    assert {s.launch["source"] for s in specs} == {"L2", "HBM", "prefetched"}
    assert all(s.issue_stamps and s.net_metric == "latency_added_cycles" for s in specs)
    store = tma.FAMILY.parse("cp.async.bulk.tensor.2d.global.shared::cta.tile.b16.box64x64.sw128.pitch8192")
    assert [s.issue_stamps for s in tma.FAMILY.plan(store, None) if isinstance(s, BracketedLatency)] == [False]


@pytest.mark.parametrize("case_id", [
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128.pitch8192",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x1.sw128",
    "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x32.sw128.pitch8192.multicast16",
    "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.b16.ch64.px128.sw128",
    "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.b16.ch64.px128.sw128",
    "cp.async.bulk.shared::cluster.global.8192B",
    "cp.async.bulk.shared::cluster.global.12288B"])
def test_nothing_but_the_copys_own_issue_sits_between_the_issue_clock_and_the_copy(case_id, compile_cache, monkeypatch):
    """The latency from the issue starts at the clock read before the copy. The compiler may move plain
    arithmetic across a clock read: before the tile's number, coordinates and addresses were settled ahead of
    the clocks, ptxas placed a fresh tile's 64-bit modulo, the coordinates' digits and the stage's address
    between them (the whole sequence less the time from the issue read 44 cycles on the HBM kernels, 17 on
    contiguous boxes from the L2, 5 on tiles, for the same arrive). In the window now: the lane's election, predicates,
    at most a few moves of a fresh tile's operands to uniform registers (16 instructions at most, 5 typically: the copy
    issued under `if (lane 0)` held the map address's moves too, 12-20, which the elected lane does not); no wide
    multiply (a 12 KiB bulk tile's address), no 64-bit shift, no reading of the CTA's id in the cluster (SR_CgaCtaId:
    a .shared::cluster operand converted where the copy uses it, which NVRTC 13.0 put in the cold multicast and im2col
    windows), no load. The one special register allowed is the block's index (S2UR SR_CTAID.X: whether this block
    records its times, rematerialized there by ptxas; nothing the copy waits for)."""
    import re
    import subprocess

    from harness.build.compile import compile_many
    from harness.build.sass import find_nvdisasm
    from harness.registry import probe_source

    monkeypatch.setenv("HOPPER_BENCH_CACHE", str(compile_cache))
    case = tma.FAMILY.parse(case_id)
    build = compile_many([probe_source(case)])[case_id]
    text = subprocess.run([find_nvdisasm(), "-c", str(build.cubin_path)], capture_output=True, text=True,
                          check=True).stdout
    kernels = (["probe_latency", "probe_latency_cold"]
               + (["probe_latency_prefetched"] if tma_kernels.prefetches(case) else []))
    for kernel in kernels:
        body = text[text.index(f".text.{kernel}:"):]
        body = body[:body.find("\n.text.", 10)] if "\n.text." in body[10:] else body
        lines = [re.sub(r"\s+", " ", line.split("*/", 1)[1]).strip() for line in body.splitlines()
                 if re.search(r"/\*[0-9a-f]{4}\*/", line)]
        copy = next(i for i, line in enumerate(lines) if re.search(r"\b(UTMALDG|UBLKCP)", line))
        issue = max(i for i, line in enumerate(lines[:copy]) if "SR_CLOCKLO" in line)
        window = lines[issue + 1:copy]
        assert len(window) <= 16, (kernel, window)
        assert not [line for line in window if re.search(r"\b(IMAD\.WIDE|IMAD\.HI|U?SHF\.R\.U64|LDG|LDS)\b", line)
                    or (re.search(r"\bS2U?R\b", line) and "SR_CTAID.X" not in line)], (kernel, window)
