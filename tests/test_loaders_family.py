"""The ldmatrix/stmatrix family on the CPU: the fragment model against the PTX ISA's ldmatrix text
and Figure "ldmatrix fragment layout for one 8x8 Matrix with 16-bit elements", the pointer chase
the inputs build, and the ids."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families import loaders
from harness.families.loaders import FAMILY as LOADERS
from harness.registry import parse_case_id


def test_row_addresses_come_from_lanes_0_7_per_matrix():
    """PTX ISA, ldmatrix: x1 reads addr0-addr7 from threads 0-7, x2 threads 0-15, x4 threads 0-31."""
    rows = loaders.row_offsets(4)
    assert rows[:8].tolist() == [16 * r for r in range(8)] and rows[8] == 128 and rows[31] == 3 * 128 + 7 * 16
    assert loaders.row_offsets(1)[8:].tolist() == loaders.row_offsets(1)[:24].tolist()  # repeats


# (lane, matrix) -> (row, column) of the low element; the high one is the next column (next row with .trans)
FIGURE = [((0, 0), (0, 0)), ((1, 0), (0, 2)), ((5, 0), (1, 2)), ((31, 0), (7, 6)), ((9, 1), (2, 2))]


@pytest.mark.parametrize("trans", [False, True])
def test_each_lane_holds_the_elements_the_figure_shows(trans):
    rows = loaders.row_offsets(2)
    pos = loaders.positions(rows, 2, trans)
    for (lane, matrix), (row, col) in FIGURE:
        if trans:  # the transpose: lane l holds column l // 4, rows 2 (l % 4) and 2 (l % 4) + 1
            row, col = col, row
            expected = [(128 * matrix + 16 * (row + h)) // 2 + col for h in (0, 1)]
        else:
            expected = [(128 * matrix + 16 * row) // 2 + col + h for h in (0, 1)]
        assert pos[lane, matrix].tolist() == expected
    assert sorted(pos.ravel().tolist()) == list(range(2 * 64))  # every element of both matrices once


def test_load_packs_the_low_element_in_the_low_half_and_store_inverts_load():
    rng = np.random.default_rng(0)
    image = rng.integers(0, 1 << 16, 1024).astype(np.uint32)
    rows = loaders.row_offsets(4, 512)
    for trans in (False, True):
        registers = loaders.load(image, rows, 4, trans)
        assert registers[0, 0] == image[256] | (image[257 if not trans else 256 + 8] << 16)
        assert np.array_equal(loaders.store(np.zeros_like(image), rows, registers, trans)[256:512], image[256:512])


@pytest.mark.parametrize("case_id", ["ldmatrix.sync.m8n8.x1.shared.b16", "ldmatrix.sync.m8n8.x4.trans.shared.b16"])
def test_the_inputs_build_a_pointer_chase_between_regions_0_and_1(case_id):
    """Following the model: every lane's first register, read from region 0, is its row in region 1 and
    back, so the chain's loads need no arithmetic."""
    case = parse_case_id(case_id)
    inputs = LOADERS.inputs(case, np.random.default_rng(3))
    image = inputs.values["image"]
    a, b = loaders.row_offsets(case.num), loaders.row_offsets(case.num, loaders.REGION)
    assert np.array_equal(loaders.load(image, a, case.num, case.trans)[:, 0], b)
    assert np.array_equal(loaders.load(image, b, case.num, case.trans)[:, 0], a)
    if case.num > 1:  # the other matrices are random
        assert len(np.unique(loaders.load(image, a, case.num, case.trans)[:, 1:])) > 64


def test_stmatrix_readback_is_where_the_first_register_lands():
    case = parse_case_id("stmatrix.sync.m8n8.x2.trans.shared.b16")
    registers = np.arange(64, dtype=np.uint32).reshape(32, 2) + 0x10000
    image = loaders.store(np.zeros(4096, dtype=np.uint32), loaders.row_offsets(2), registers, True)
    readback = 2 * loaders.positions(loaders.row_offsets(2), 2, True)[:, 0, 0]
    assert np.array_equal(image[readback // 2], registers[:, 0] & 0xFFFF)
    assert LOADERS.work(case).amount == 256 and LOADERS.peak(case) == 128


def test_ids_round_trip_and_bad_ones_are_refused():
    assert len(LOADERS.cases()) == 12
    assert parse_case_id("stmatrix.sync.m8n8.x4.trans.shared.b16").ptx == "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
    with pytest.raises(SpecError, match="cannot parse case id"):
        parse_case_id("ldmatrix.sync.m16n16.x1.shared.b16")
    with pytest.raises(IllegalShapeError, match="x1, x2 or x4"):
        LOADERS.check(parse_case_id("ldmatrix.sync.m8n8.x3.shared.b16"))
