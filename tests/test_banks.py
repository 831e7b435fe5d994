"""The banks family (harness/families/banks): its layouts, its NumPy model of what each instruction moves, its
checks and the bank model's predictions, against expectations written out by hand from the bank rules (32
banks of 4 bytes; 128 bytes a phase) and the PTX ISA's ldmatrix/stmatrix fragment map."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import SpecError
from harness.families.banks import FAMILY, load, parse, store
from harness.families.banks.patterns import addresses, names
from harness.measure.validate import compare


@pytest.mark.parametrize("case_id, wavefronts", [
    ("banks.ld.b32.linear", 1), ("banks.ld.b64.linear", 2), ("banks.ld.b128.linear", 4),
    ("banks.ld.b32.way2", 2), ("banks.ld.b32.way32", 32), ("banks.ld.b64.way16", 32), ("banks.ld.b128.way8", 32),
    # a column of 128-byte rows: every row's first word in bank 0 (32 lanes, 32 words), or its first 16 bytes in
    # banks 0-3 (8 lanes a phase, 4 phases); under the 128B swizzle 8 rows spread over the 8 chunks of a line
    ("banks.ld.b32.col128", 32), ("banks.ld.b128.col128", 32), ("banks.ld.b128.sw128", 4),
    ("banks.ld.b128.col64", 16), ("banks.ld.b128.sw64", 4), ("banks.ld.b128.col32", 8), ("banks.ld.b128.sw32", 4),
    ("banks.ldmatrix.x1.col128", 8), ("banks.ldmatrix.x1.sw128", 1), ("banks.ldmatrix.x4.sw128", 4),
    # the chapter's Swizzle<3,4,3> on f16 elements: rows pair up on the same chunk
    ("banks.ldmatrix.x1.sw128.f16elem", 2), ("banks.stmatrix.x4.trans.sw128.f16elem", 8),
    # an epilogue's fragment store: 8 rows x 16 B at a 128-byte pitch all in banks 0-3 (8-way); swizzled, the 8
    # rows take the 8 chunks; 64-bit pairs: 4 rows x 32 B a phase, and under the swizzle rows 2k and 2k + 1
    # swap chunks 0 and 1 between them: still two words in each bank used
    ("banks.st.b32.epi", 8), ("banks.st.b32.epi.sw128", 1), ("banks.st.b64.epi", 8), ("banks.st.b64.epi.sw128", 4),
])
def test_wavefronts_of_the_layouts(case_id, wavefronts):
    assert parse(case_id).wavefronts() == wavefronts


def test_the_model_predicts_bytes_over_wavefronts():
    model = FAMILY.model
    assert model.predict(parse("banks.ld.b32.linear"), "sm_throughput", model.prior("H100 SXM5")) == 128
    assert model.predict(parse("banks.ld.b32.way4"), "sm_throughput", 128.0) == 32
    assert model.predict(parse("banks.ld.b16.linear"), "sm_throughput", 128.0) == 64  # 64 bytes in one cycle
    assert model.predict(parse("banks.ldmatrix.x1.sw128.f16elem"), "sm_throughput", 128.0) == 64
    assert model.predict(parse("banks.ld.b32.linear"), "latency_cycles", 128.0) is None


def test_the_chapter_s_swizzle_puts_row_pairs_in_one_bank():
    # the seed chapter's check: rows 0-7 of column 0, bank = offset x 2 / 4 mod 32, "each row differs"
    rows = addresses("sw128.f16elem", 2)[:8]
    assert [int(a) // 4 % 32 for a in rows] == [0, 0, 8, 8, 16, 16, 24, 24]
    assert [int(a) // 4 % 32 for a in addresses("sw128", 2)[:8]] == [0, 4, 8, 12, 16, 20, 24, 28]


def test_every_layout_stays_in_one_region_and_is_aligned():
    for width in (2, 4, 8, 16):
        for name in names(width):
            a = addresses(name, width)
            assert a.min() >= 0 and a.max() + width <= 4096 and (a % width == 0).all(), (name, width)
            assert len(set(a.tolist())) == 32, (name, width)  # no two lanes on one address


def test_ids_round_trip_and_bad_ones_say_why():
    for case in FAMILY.cases():
        assert parse(case.case_id) == case
    with pytest.raises(SpecError, match="way16"):
        parse("banks.ld.b128.way16")  # a phase of 16-byte accesses has 8 lanes
    with pytest.raises(SpecError):
        parse("banks.ld.b32.trans.linear")


def test_ldmatrix_model_reads_the_rows_the_lanes_supply():
    case = parse("banks.ldmatrix.x1.sw128")
    image = np.arange(8192, dtype=np.uint32)  # word w holds w: halves 2w (low) and 2w + 1 (high) are w & 0xFFFF, 0
    regs = load(case, image)
    # lane 5: row 1 (byte 128 ^ 16 = 144 under the swizzle), elements 2 and 3 -> word (144 + 4) / 4 = 37
    assert int(regs[5, 0]) == 37


def test_a_store_then_a_load_gives_the_registers_back():
    rng = np.random.default_rng(1)
    for case_id in ("banks.st.b64.sw64", "banks.st.b16.way8", "banks.stmatrix.x4.trans.sw128.f16elem"):
        case = parse(case_id)
        image = rng.integers(0, 1 << 32, 8192, dtype=np.uint64).astype(np.uint32)
        registers = rng.integers(0, 1 << 32, (32, 4), dtype=np.uint64)
        registers[:, case.regs:] = 0
        if case.width == 16:
            registers &= 0xFFFF
        other = parse(case_id.replace(".st.", ".ld.").replace("stmatrix", "ldmatrix"))
        assert (load(other, store(case, image, registers)) == registers).all(), case_id


def test_a_wrong_word_fails_the_check():
    case = parse("banks.ld.b128.sw128")
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    for check in FAMILY.checks(case, inputs):
        wrong = check.expected.copy()
        wrong[7] += 1
        tolerance = np.broadcast_to(check.tolerance, wrong.shape)
        assert compare(check.expected, check.expected, tolerance).ok
        assert not compare(wrong, check.expected, tolerance).ok


def test_show_prints_the_layout_and_the_bank_map():
    lines = FAMILY.describe(parse("banks.ld.b64.way4"))
    assert any(line.startswith("layout way4: (4,4,2):(8,128,512)") for line in lines)
    assert "bank model: 8 wavefronts (conflict-free: 2)" in "\n".join(lines)
    assert sum(line.startswith("phase ") for line in lines) == 2


def test_the_measured_section_of_docs_banks_comes_from_runs_146_and_147():
    """docs/banks.md: every case's best rate against the bank model (runs 146, 147), the chapter's swizzle at half of
    sw128's, the warp ramp of LDS.32 at 32 ways."""
    from pathlib import Path

    import harness
    from harness.families.banks.cases import parse
    from harness.families.banks.model import predicted

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    text = " ".join((root / "docs" / "banks.md").read_text().split())
    worst, medians = 0.0, []
    for run in (146, 147):
        rows = harness.results(str(root / "results.db"), run_id=run, metric="sm_throughput")
        best = rows.groupby("case_id").value.max()
        assert len(best) == 194 and rows.valid.all()
        miss = np.array([abs(best[c] / predicted(parse(c)) - 1) for c in best.index])
        worst, medians = max(worst, miss.max()), medians + [np.median(miss)]
        if run == 146:
            assert (f"reads {best['banks.ldmatrix.x1.sw128.f16elem']:.1f} B/cycle/SM, half of `sw128`'s "
                    f"{best['banks.ldmatrix.x1.sw128']:.1f}") in text
            ramp = rows[rows.case_id == "banks.ld.b32.way32"]
            by = {r.launch["warps"]: r.value for r in ramp.itertuples()}
            assert f"{by[1]:.2f} B/cycle/SM with one warp, {by[2]:.2f} with two, {by[4]:.1f} from four on" in text
    assert f"within {100 * worst:.2f} % of the bank model's" in text
    assert f"(median {100 * max(medians):.2f} %)" in text


def test_the_sites_finding_sets_each_case_against_the_model_and_the_chapters_check(tmp_path):
    """Numbers chosen here: one case at half its prediction shows in the range; the chapter's case (Swizzle<3,4,3> on
    f16 element offsets) is set beside the 128-byte swizzle on bytes, each at its measured rate."""
    from types import SimpleNamespace

    import pandas as pd

    from harness.families.banks import FAMILY
    from harness.families.banks.model import predicted

    chapter, on_bytes, linear = ("banks.ldmatrix.x1.sw128.f16elem", "banks.ldmatrix.x1.sw128",
                                 "banks.ld.b32.linear")
    rows = [(chapter, 64.0), (on_bytes, predicted(parse(on_bytes))), (linear, predicted(parse(linear)) / 2)]
    latest = pd.DataFrame([{"family": "banks", "metric": "sm_throughput", "gpu_name": "GPU X", "run_id": 3,
                            "case_id": c, "value": v} for c, v in rows])
    (head, lines, path), = FAMILY.findings(SimpleNamespace(latest=latest, directory=tmp_path))
    assert path.exists() and "bank model" in head
    low = 64.0 / predicted(parse(chapter))
    assert lines[0].startswith(f"GPU X (run 3): 3 cases, measured over predicted {min(low, 0.5):.4f}-1.0000")
    assert f"({chapter}) reads 64.0 B/cycle/SM" in lines[1] and f"({on_bytes}) reads 128.0" in lines[1]
