import numpy as np
import pytest

from harness.families.wgmma.fragments import (a_fragment_words, accumulator_coords, accumulator_registers,
                               gather_accumulators)


@pytest.mark.parametrize("n", range(8, 257, 8))
@pytest.mark.parametrize("acc", ["f32", "f16"])
def test_accumulators_cover_the_tile_exactly_once(n, acc):
    rows, cols = accumulator_coords(n, acc)
    flat = rows * n + cols
    assert sorted(flat.ravel()) == list(range(64 * n))
    assert accumulator_registers(n, acc) * (2 if acc == "f16" else 1) == rows.shape[1]


def test_accumulator_positions_follow_the_ptx_figure():
    rows, cols = accumulator_coords(16, "f32")
    # thread 0: d0,d1 at row 0 cols 0,1; d2,d3 at row 8; d4 starts the second 8-column block.
    assert [(rows[0, j], cols[0, j]) for j in range(5)] == [(0, 0), (0, 1), (8, 0), (8, 1), (0, 8)]
    assert (rows[5, 3], cols[5, 3]) == (9, 3)  # lane 5: group 1, thread-in-group 1
    assert (rows[32, 0], cols[32, 0]) == (16, 0)  # warp 1 owns rows 16..31


def test_f16_accumulators_pack_two_elements_per_word():
    n = 8
    expected = np.arange(64 * n, dtype=np.uint32).reshape(64, n)
    rows, cols = accumulator_coords(n, "f16")
    elements = expected[rows, cols]  # (128, 4) elements per thread
    words = elements[:, 0::2] | (elements[:, 1::2] << 16)
    assert np.array_equal(gather_accumulators(words, n, "f16"), expected)


def test_a_fragments_hold_each_element_once_in_ptx_order():
    a = np.arange(64 * 16, dtype=np.uint32).reshape(64, 16)
    words = a_fragment_words(a.astype(np.uint16))
    halves = np.concatenate([words & 0xFFFF, words >> 16]).ravel()
    assert sorted(halves) == list(range(64 * 16))
    # thread 0: a0 = row 0 cols 0,1; a1 = row 8; a2 = row 0 cols 8,9; a3 = row 8 cols 8,9.
    assert [(w & 0xFFFF, w >> 16) for w in words[0]] == [(0, 1), (128, 129), (8, 9), (136, 137)]


@pytest.mark.parametrize("bits,k,thread,register,expected", [
    # PTX ISA, wgmma register fragments of A: tf32 (m64nNk8) a0..a3 = (row g, col q), (g+8, q),
    # (g, q+4), (g+8, q+4); 8-bit (m64nNk32) four elements per register from col 4q (+16 for a2, a3);
    # b1 (m64nNk256) 32 per register from col 32q (+128).
    (32, 8, 5, 2, [(1, 5)]),
    (8, 32, 37, 1, [(8 + 16 + 1, 4 + j) for j in range(4)]),
    (8, 32, 37, 3, [(8 + 16 + 1, 4 + 16 + j) for j in range(4)]),
    (1, 256, 2, 2, [(0, 64 + 128 + j) for j in range(32)]),
])
def test_a_fragments_of_every_type_follow_the_ptx_layout(bits, k, thread, register, expected):
    """Each element gets a distinct code; the register must hold the codes of the expected elements,
    the first in the lowest bits."""
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 1 << min(bits, 16), (64, k)).astype(np.uint64) if bits > 1 else \
        rng.integers(0, 2, (64, k)).astype(np.uint64)
    words = a_fragment_words(codes, bits)
    value = sum(int(codes[r, c]) << (bits * j) for j, (r, c) in enumerate(expected))
    assert int(words[thread, register]) == value
