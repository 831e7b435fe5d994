"""The seed CuTe chapter's claims as reference rows (harness/families/banks/chapter.py, seed_cute_layouts.csv): each algebra
claim carries the layout library's verdict, each bank claim names a legal banks case. The expected verdicts come
from CuTe's documentation (01_layout.md: make_layout's default stride is column-major, index 16 is (1,(1,2)) in
(3,(2,3))) and from the bank arithmetic written out in tests/test_banks.py."""

from __future__ import annotations

import pytest

from harness import published
from harness.families.banks import chapter as cute_chapter
from harness.families.banks import FAMILY, parse


def test_every_claim_of_the_chapter_is_loaded_with_a_verdict_or_a_case():
    rows = [r for r in published.load() if r.source == cute_chapter.SOURCE]
    assert len(rows) == 9
    for r in rows:
        assert r.case_id or r.unmapped_reason.endswith(": holds") or "does not hold" in r.unmapped_reason, r


@pytest.mark.parametrize("metric, value, holds", [
    ("offset_row_major_2_3", 19, True), ("offset_nested_1_0_3", 11, True), ("tiles_of_divide_4x8_by_2x4", 4, True),
    ("index_of_1_1_2", 5, False), ("default_stride_offset_0_1", 1, False),
    ("swizzle_unit_bytes_343_f16", 16, False), ("swizzle_unit_bytes_333_f16", 8, False),
])
def test_the_algebra_verdicts(metric, value, holds):
    reason = cute_chapter.counterpart({"metric": metric, "value": str(value)})
    assert reason.endswith(": holds") == holds, reason
    wrong = cute_chapter.counterpart({"metric": metric, "value": str(value + 1)})
    assert "does not hold" in wrong  # a claim the library disagrees with is never called one that holds


def test_the_bank_claims_name_legal_cases_and_the_model_splits_them():
    rows = {r.case_id: r for r in published.load() if r.source == cute_chapter.SOURCE and r.case_id}
    assert set(rows) == {"banks.ldmatrix.x1.sw128.f16elem", "banks.ldmatrix.x1.sw128"}
    model = FAMILY.model
    for case_id, row in rows.items():
        FAMILY.check(parse(case_id))
        assert row.metric == "sm_throughput" and row.unit == "B/cycle/SM" and row.value == 128
    # the chapter's f16 pairing: 2 wavefronts, half of what it claims; the fp8 tile: as claimed
    assert model.predict(parse("banks.ldmatrix.x1.sw128.f16elem"), "sm_throughput", 128.0) == 64
    assert model.predict(parse("banks.ldmatrix.x1.sw128"), "sm_throughput", 128.0) == 128


def test_the_changelog_counts_the_claims_that_do_not_hold():
    """CHANGELOG.md's count of the chapter's algebra claims that the layout library refutes, from the shipped rows."""
    from pathlib import Path

    claims = [r for r in published.load() if r.source == cute_chapter.SOURCE and not r.case_id]
    failing = sum("does not hold" in r.unmapped_reason for r in claims)
    words = {3: "three", 4: "four", 5: "five", 7: "seven"}
    text = " ".join((Path(__file__).resolve().parents[1] / "CHANGELOG.md").read_text().split())
    assert f"({words[failing]} of {words[len(claims)]} do not hold)" in text
