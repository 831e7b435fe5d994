"""The layouts family (harness/families/layouts): its NumPy model of a TMA-landed tile (tile.py, from the layout
library) against what is known from outside it: the tma family's model of where a swizzled TMA load lands each
byte (validated byte for byte on the GPU), the PTX ISA's ldmatrix fragment (lane l: row l / 4, columns 2 (l % 4)
and + 1; .trans: the column and rows swapped) and wgmma's D = A B with B a permutation. Planted faults (another
swizzle mode for the landing or the reads, a wrong LBO or SBO in the descriptor) change what the check expects,
and a probe built with one still compiles to the same instructions (tests/gpu/test_layouts.py runs them)."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.build.sass import check as sass_check
from harness.errors import SpecError
from harness.families.layouts import FAMILY, UNROLL, tile
from harness.families.layouts.cases import cases, parse
from harness.families.tma import model as tma_model
from harness.layouts import Layout
from harness.measure.validate import compare
from harness.swizzles import SWIZZLE_MODES, Swizzled
from helpers import planted_source

CASES = cases()
IDS = [str(c) for c in CASES]


def test_the_cases_are_every_swizzle_mode_and_element_width():
    assert IDS == [f"layouts.tma.{m}.{e}" for e in ("b16", "b8") for m in ("none", "sw32", "sw64", "sw128")]
    assert FAMILY.suites()["layouts-tma"].make() == CASES
    for bad in ("layouts.tma.sw16.b16", "layouts.tma.sw128.b32", "layouts.tma.sw128"):
        with pytest.raises(SpecError):
            parse(bad)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_16_bit_codes_name_their_element_and_8_bit_ones_differ_a_chunk_or_row_group_away(case):
    codes = tile.codes(case)
    assert np.isfinite(tile.values(case)).all() and (tile.values(case) != 0).all()
    if case.element_bytes == 2:
        assert len(np.unique(codes)) == codes.size
        return
    chunk = tile.MATRIX_ROW_BYTES  # 16 elements of a byte
    assert (codes[:, chunk:] != codes[:, :-chunk]).all() and (codes[8:] != codes[:-8]).all()


@pytest.mark.parametrize("case", [c for c in CASES if c.swizzle], ids=str)
def test_the_landed_tile_is_where_the_tma_family_s_validated_model_puts_it(case):
    """tma/model.py landed: byte o of the stage holds logical byte swizzle(o) (runs of record validate it on the
    GPU for every swizzle mode): the layout library's Swizzle<b,4,3> o (64, W):(W, 1) is the same map."""
    assert np.array_equal(tile.landed(case), tma_model.landed(tile.logical_bytes(case).ravel(), case.swizzle))


def test_without_a_swizzle_the_tile_lands_as_16_byte_columns_of_core_matrices():
    case = parse("layouts.tma.none.b16")
    offsets = tile.element_offsets(case)
    assert offsets[0, 0] == 0 and offsets[0, 7] == 14 and offsets[1, 0] == 16 and offsets[0, 8] == 64 * 16
    assert offsets[63, 15] == 2048 - 2


def _fragment(case, t: int, trans: bool) -> np.ndarray:
    """(32, 4) registers of ldmatrix.x4 instruction t by the PTX ISA's fragment, from the logical tile."""
    data = tile.logical_bytes(case)
    halves = data.view("<u2").astype(np.uint32)  # (64, W / 2)
    out = np.zeros((32, 4), dtype=np.uint32)
    for lane in range(32):
        for i in range(4):
            m = 4 * t + i
            g, j = m % 8, m // 8  # row group, 16-byte chunk (tile.ldmatrix_addresses)
            if trans:
                row, col = 8 * g + 2 * (lane % 4), 8 * j + lane // 4
                out[lane, i] = halves[row, col] | halves[row + 1, col] << 16
            else:
                row, col = 8 * g + lane // 4, 8 * j + 2 * (lane % 4)
                out[lane, i] = halves[row, col] | halves[row, col + 1] << 16
    return out


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ldmatrix_at_the_library_s_addresses_returns_the_ptx_fragments_of_the_logical_tile(case):
    image, addresses = tile.landed(case), tile.ldmatrix_addresses(case)
    for trans in (False, True) if case.trans else (False,):
        registers = tile.ldmatrix_registers(case, image, addresses, trans)
        for t in range(len(addresses)):
            assert np.array_equal(registers[t], _fragment(case, t, trans)), (trans, t)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_wgmma_through_the_case_s_descriptor_reads_the_logical_tile(case):
    """D = A P, P the permutation: column j of each K step's D is column pi(j) of the tile's K step."""
    d = tile.wgmma_result(case, tile.landed(case), tile.a_operand(case))
    values, n, pi = tile.values(case), tile.n(case), tile.permutation(case)
    assert sorted(pi) == list(range(n)) and (pi != np.arange(n)).any()
    for s in range(tile.steps(case)):
        assert np.array_equal(d[s], values[:, s * n + pi]), s


def test_the_descriptor_fields_are_the_ptx_canonical_ones():
    # K-major, swizzled: 8-row atoms of `span` bytes, SBO = 8 x span, LBO unused (1, i.e. 16 B); no swizzle:
    # LBO between the two 16-byte core matrices of a K step (a 64-row column: 1024 B), SBO between row groups
    assert [tile.a_operand(parse(f"layouts.tma.sw{s}.b16")).sbo for s in (32, 64, 128)] == [256, 512, 1024]
    none = tile.a_operand(parse("layouts.tma.none.b8"))
    assert (none.lbo, none.sbo, none.swizzle) == (1024, 128, 0)
    b16 = parse("layouts.tma.sw128.b16")
    params = FAMILY.template_params(b16)
    assert (params["a_swizzle"], params["a_sbo"], params["a_step"], params["n"]) == ("B128", 1024, 32, 16)
    assert "m64n16k16.f32.f16.f16" in params["instruction"] and params["immediates"] == ", 1, 1, 0, 0"


def _output(case, image=None, addresses=None, operand=None) -> np.ndarray:
    """What the probe would write if TMA landed `image`, ldmatrix read at `addresses` and wgmma read through
    `operand` (each the case's own by default)."""
    image = tile.landed(case) if image is None else image
    addresses = tile.ldmatrix_addresses(case) if addresses is None else addresses
    operand = tile.a_operand(case) if operand is None else operand
    plain = tile.ldmatrix_registers(case, image, addresses, False)
    parts = [image.view("<u4"), plain.ravel()]
    if case.trans:
        parts.append(tile.ldmatrix_registers(case, image, addresses, True).ravel())
    parts += [tile.wgmma_result(case, image, operand).ravel(), plain[(UNROLL - 1) % len(plain)].ravel()]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])


def _fails(case, output) -> bool:
    (check,) = FAMILY.checks(case, FAMILY.inputs(case, np.random.default_rng(0)))
    return not compare(output, check.expected, np.zeros_like(check.expected)).ok


def _other(span: int) -> int:
    return {0: 32, 32: 64, 64: 128, 128: 64}[span]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_check_passes_the_model_and_fails_a_wrong_swizzle_or_stride(case):
    from dataclasses import replace

    assert not _fails(case, _output(case))
    other = _other(case.swizzle)
    assert _fails(case, _output(case, image=tile.landed(case, other)))  # TMA landed it under another mode
    assert _fails(case, _output(case, addresses=tile.ldmatrix_addresses(case, other)))  # ldmatrix: another mode
    operand = tile.a_operand(case)
    faults = [replace(operand, swizzle=s) for s in (0, 32, 64, 128) if s != case.swizzle]
    faults += [replace(operand, sbo=operand.sbo // 2)] + ([] if case.swizzle else [replace(operand, lbo=operand.lbo // 2)])
    inside = [op for op in faults if all(tile.a_offsets(case, op, s).max() < tile.tile_bytes(case)
                                         for s in range(tile.steps(case)))]  # the model reads only the tile
    assert replace(operand, sbo=operand.sbo // 2) in inside and any(op.swizzle != case.swizzle for op in inside)
    assert case.swizzle or replace(operand, lbo=operand.lbo // 2) in inside
    for op in inside:
        assert _fails(case, _output(case, operand=op)), op


@pytest.mark.parametrize("case_id, planted", [
    ("layouts.tma.sw128.b16", {"a_swizzle": "B64"}), ("layouts.tma.sw64.b8", {"a_sbo": 256}),
    ("layouts.tma.none.b16", {"a_lbo": 512}),
])
def test_a_probe_with_a_planted_descriptor_builds_to_the_same_instructions(case_id, planted, shared_cache):
    """The GPU test's faulty probes (tests/gpu/test_layouts.py) differ only in a descriptor constant."""
    case = parse(case_id)
    source = planted_source(case, FAMILY, **planted)
    assert source.text != planted_source(case, FAMILY).text
    assert sass_check(compile_probe(source), FAMILY.sass_expectation(case)).ok


def test_describe_names_the_layout_and_the_descriptor():
    lines = FAMILY.describe(parse("layouts.tma.sw128.b16"))
    text = "\n".join(lines)
    assert "Swizzle<3,4,3> o (64,(64,1)):(128,(2,8192))" in text and "SBO 1024 B" in text
    assert str(Swizzled(SWIZZLE_MODES[128], Layout((64, (64, 1)), (128, (2, 8192))))) in text
    assert "phase 0 (lanes 0-7): 1 wavefront" in text


def test_the_map_of_bank_groups_is_the_ptx_swizzles_and_can_show_a_conflict():
    """Outside expectations: the 128-byte swizzle XORs a row's 16-byte chunk index with the row mod 8 (PTX ISA,
    "Shared memory matrix layout", swizzling modes); without a swizzle, rows of a core matrix are 16 bytes apart, so
    row r sits in bank group r. Under every mode an 8-row column is conflict-free; the 128-byte tile under no swizzle
    function puts a column in one group, 8 bank cycles a matrix."""
    from harness.families.layouts.figures import bank_groups, column_wavefronts

    r, j = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    assert (bank_groups(parse("layouts.tma.sw128.b16")) == (j ^ r)).all()
    assert (bank_groups(parse("layouts.tma.sw128.b8")) == (j ^ r)).all()
    assert (bank_groups(parse("layouts.tma.none.b16")) == np.arange(8)[:, None]).all()
    assert all(column_wavefronts(case) == 1 for case in cases())
    assert column_wavefronts(parse("layouts.tma.sw128.b16"), swizzle=0) == 8


def _readback_rows(valid=(True,) * 8, step=39.0):
    import pandas as pd

    return pd.DataFrame([{"run_id": 7, "gpu_name": "NVIDIA H100 80GB HBM3", "case_id": case.base_id, "valid": ok,
                          "error": None if ok else "readback: 12 words differ", "value": step + 0.1 * i,
                          "sm_clock_mhz": 1980.0} for i, (case, ok) in enumerate(zip(cases(), valid))])


def test_the_report_says_which_cases_read_back_and_names_a_failed_one(tmp_path):
    from types import SimpleNamespace

    from harness.families.layouts import figures as layouts_figures

    rows = _readback_rows()
    store = SimpleNamespace(query=lambda sql: rows)
    (head, text, path), (_, _, table) = FAMILY.figures(SimpleNamespace(store=store, run_id=7, gpu="NVIDIA H100 80GB HBM3",
                                                                       directory=tmp_path))
    assert path.exists() and "swizzle" in head
    assert text[0].startswith("NVIDIA H100 80GB HBM3 (run 7): 8 of 8 cases read back exactly")
    assert "39.0-39.7 cycles" in text[0]
    assert list(table["read back"]) == ["exact"] * 8
    failed = _readback_rows(valid=(True, False) + (True,) * 6)
    line = layouts_figures.summary("H200", 9, failed)
    assert "7 of 8 cases" in line and f"failed: {cases()[1].base_id}" in line
    assert (layouts_figures.run_table(failed)["read back"] != "exact").sum() == 1
