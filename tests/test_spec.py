import pytest

from harness.errors import SpecError
from harness.families.wgmma import FAMILY as wgmma
from harness.registry import parse_case_id
from harness.suites import SUITES, select, suite_cases


def test_every_case_id_round_trips():
    for case in wgmma.cases():
        assert parse_case_id(case.case_id) == case


def test_case_id_spells_the_instruction():
    case = parse_case_id("wgmma.mma_async.m64n128k16.f32.bf16.bf16.SS")
    assert (case.m, case.n, case.k, case.dtype_a, case.dtype_acc, case.operands) == (64, 128, 16, "bf16", "f32", "SS")
    assert parse_case_id("wgmma.mma_async.sp.m64n64k32.f32.f16.f16.RS").sparse


@pytest.mark.parametrize("bad", ["", "wgmma", "mma.sync.m16n8k16", "tma.x", "wgmma.mma_async.m64n128k16.f32.f16.f16.XX",
                                 "wgmma.mma_async.m64n128k16.f32.f16.SS"])
def test_malformed_ids_are_rejected(bad):
    with pytest.raises(SpecError):
        parse_case_id(bad)


def test_the_wgmma_suite_covers_every_legal_n_dtype_and_mode():
    cases = suite_cases("wgmma")
    assert len(cases) == 32 * 3 * 2 == len(set(cases))
    assert sorted({c.n for c in cases}) == list(range(8, 257, 8))


def test_unknown_suite_lists_the_known_ones():
    with pytest.raises(SpecError, match="expected one of wgmma, wgmma-energy, wgmma-quick, faults, wgmma-all, wgmma-dense"):
        suite_cases("nope")


def test_filters_are_comma_separated_globs():
    cases = suite_cases("wgmma")
    chosen = select(cases, "*m64n8k16*.SS, *m64n256k16.f32.bf16.bf16.RS")
    assert {c.case_id for c in chosen} == {
        "wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n8k16.f16.f16.f16.SS",
        "wgmma.mma_async.m64n8k16.f32.bf16.bf16.SS", "wgmma.mma_async.m64n256k16.f32.bf16.bf16.RS"}
    with pytest.raises(SpecError, match="matches none"):
        select(cases, "*m64n7k16*")


def test_every_suite_has_cases():
    assert all(len(suite.make()) for suite in SUITES.values())
