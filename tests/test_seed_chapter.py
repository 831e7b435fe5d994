"""Issue 45, sections 3 and 6: the seed architecture chapter's H100 SXM figures are loaded, cited and mapped
(or say why not), and compared with the runs of record; the papers' DSMEM ring bandwidth compares in wall
time. Figures are read from the shipped CSVs, never typed in; SM counts from the papers' table and the run."""

import csv

import numpy as np
import pytest

from harness import published as references
from harness import seed_chapter
from harness.analysis.figure_gpus import nearer_end, reference_gpus
from harness.suites import SUITES, suite_cases

CHAPTER = seed_chapter.SOURCE
VAGUE = ("shape ", "not an instruction figure", "no probe family", "a figure (")


def _rows(name: str) -> list[dict]:
    with (references.DATA / name).open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_row_of_the_chapter_is_loaded_cited_and_mapped_or_says_why():
    rows, refs = _rows(seed_chapter.FILE), [r for r in references.load() if r.source == CHAPTER]
    merged = sum(1 for r in refs if r.also_in and r.also_in.startswith(CHAPTER))
    assert len(refs) >= len(rows) - 8 and merged >= 1  # repeats in other sections are kept once
    assert all(r.gpu == "H100 SXM5" and "H100 SXM" in r.citation for r in refs)
    ours = {c.case_id for name in SUITES for c in suite_cases(name)}
    assert {r.case_id for r in refs if r.case_id} <= ours  # every mapped figure names a case a suite measures
    assert not [r.unmapped_reason for r in refs if not r.case_id and r.unmapped_reason.startswith(VAGUE)]


def test_a_range_is_its_low_end_with_the_high_end_in_its_notes_and_compares_with_the_nearer_end():
    row = next(r for r in _rows(seed_chapter.FILE) if r["metric"] == "latency_hbm" and r["value_high"])
    (ref,) = [r for r in references.mapped() if r.source == CHAPTER and r.case_id.endswith("pchase.hbm")
              and r.table == row["table_or_figure"]]
    low, high = float(row["value"]), float(row["value_high"])
    assert ref.value == low and seed_chapter.figure_range(ref.notes) == (low, high)
    import pandas as pd

    ours = pd.Series([low - 1, (low + high) / 2, high + 1])
    assert list(nearer_end(ours, pd.Series([low] * 3), pd.Series([ref.notes] * 3))) == [low, (low + high) / 2, high]


def test_a_run_meets_the_papers_figures_and_its_own_gpus():
    assert reference_gpus("NVIDIA H100 80GB HBM3") == ("H800 PCIe", "H100 SXM5")
    assert reference_gpus("NVIDIA H200") == ("H800 PCIe", "H200 SXM")
    assert reference_gpus("no such GPU") == ("H800 PCIe",)


def test_the_papers_ring_copy_maps_to_our_ring_chase_in_decimal_gbps():
    printed = [r for r in _rows("luo2024_tables.csv") if r["metric"].startswith("bandwidth_dsm_peak_cluster")]
    assert len(printed) == 4
    for row in printed:
        cluster = row["metric"].rsplit("cluster", 1)[1]
        (ref,) = [r for r in references.mapped() if r.table == row["table_or_figure"] and r.metric == "bandwidth_gbps"
                  and r.case_id == f"ld.shared::cluster.u32.cluster{cluster}.chase.ring"]
        assert ref.value == pytest.approx(float(row["value"]) * 1000) and ref.unit == "GB/s"


# -- against the runs of record ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory):
    import sqlite3
    from pathlib import Path

    from harness.db.store import Store
    from harness.published import shipped

    db = Path(__file__).resolve().parent.parent / "results.db"
    if not db.exists():
        pytest.skip("no results.db beside the tests")
    copy = tmp_path_factory.mktemp("chapter") / "results.db"
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return Store.open(str(copy), references=shipped())


def test_the_ring_bandwidth_gets_a_wall_time_verdict_with_our_clock_beside_it(shipped_copy):
    from harness.analysis.paper_verdicts import against_paper
    from harness.paper import DEFAULT_TOLERANCE

    paper_sms = next(int(r["value"]) for r in _rows("luo2024_tables.csv") if r["metric"] == "sm_count"
                     and r["gpu"] == "H800 PCIe")
    frame = against_paper(shipped_copy, 88)  # H100, suite dsmem
    rows = frame[frame.case_id.str.endswith(".chase.ring") & (frame.metric == "bandwidth_gbps") & frame.paper.notna()]
    assert len(rows) == 4
    sms = shipped_copy.query("SELECT DISTINCT sm_count FROM results WHERE run_id = 88").sm_count.tolist()
    for row in rows.itertuples():
        assert row.verdict != "clock not printed" and row.basis == "wall time per SM"
        assert row.comparable == pytest.approx(row.value * paper_sms / sms[0])
        inside = abs(row.comparable / row.paper - 1) <= DEFAULT_TOLERANCE + row.uncertainty
        assert row.verdict == ("agrees" if inside else "DISAGREES")
        assert f"{row.clock_mhz:.0f} MHz" in row.note and "SM clock" in row.note


def _chapter(frame, case_id, metric, table):
    rows = frame[(frame.case_id == case_id) & (frame.metric == metric) & (frame.paper_table == table)]
    assert len(rows) == 1, (case_id, metric, table)
    return rows.iloc[0]


def test_the_chapters_memory_figures_against_run_91(shipped_copy):
    """An L2 latency no chase reproduces, an HBM range ours falls in, a per-SM shared bandwidth a unit off."""
    from harness.analysis.paper_verdicts import against_paper

    frame = against_paper(shipped_copy, 91)  # H100, suite memory
    table = "§4.1 memory hierarchy"
    l2 = _chapter(frame, "ld.global.cg.u32.pchase.l2", "latency_cycles", table)
    assert l2.verdict == "DISAGREES" and l2.value > 1.3 * l2.paper
    hbm = _chapter(frame, "ld.global.cg.u32.pchase.hbm", "latency_cycles", table)
    low, high = seed_chapter.figure_range(next(r for r in references.mapped() if r.source == CHAPTER
                                               and r.case_id == hbm.case_id and r.table == table).notes)
    assert (hbm.verdict == "agrees") == (low <= hbm.value <= high)
    shared = frame[(frame.case_id == "ld.shared.v4.u32.stream") & (frame.paper_table == table)]
    printed = float(next(r["value"] for r in _rows(seed_chapter.FILE) if r["metric"] == "bandwidth_shared_per_sm"))
    per_sm = shared[np.isclose(shared.paper, printed * 1e12 / (seed_chapter.CHAPTER_CLOCK_MHZ * 1e6))]
    assert per_sm.verdict.tolist() == ["DISAGREES"]
    assert (shared[shared.paper == 128].verdict == "agrees").all()


def test_the_spec_box_peaks_compare_per_cycle_at_the_clock_it_prints(shipped_copy):
    from harness.analysis.paper_verdicts import against_paper

    clock = float(next(r["value"] for r in _rows(seed_chapter.FILE) if r["metric"] == "boost_clock"))
    frame = against_paper(shipped_copy, 52)  # H100, wgmma-all: the peaks' instructions
    peaks = frame[(frame.paper_table == "§1.2 spec box") & (frame.metric == "throughput_tflops")]
    assert len(peaks) == 4 and (peaks.paper_clock_mhz == clock).all()
    for row in peaks.itertuples():
        per_cycle = row.value * 1e6 / (132 * row.clock_mhz)
        assert row.comparable == pytest.approx(per_cycle * 132 * clock / 1e6, rel=0.02)


# -- who maps the chapter (issue 45's review: shared code names no family) ------------------------------

def test_the_chapter_module_names_no_family_and_no_case():
    """harness/seed_chapter.py sits below the families: none of its names or strings is a family's name or
    starts with a family's case-id prefix (the cases are named by the families that own them)."""
    import ast
    import re
    from pathlib import Path

    from harness.registry import FAMILIES

    tree = ast.parse(Path(seed_chapter.__file__).read_text())
    words = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    words |= {word for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
              for word in re.findall(r"[\w.:]+", node.value)}
    prefixes = tuple(p for family in FAMILIES.values() for p in family.id_prefixes)
    assert not words & set(FAMILIES)
    assert not [w for w in words if w.startswith(prefixes)]


def test_each_chapter_figure_is_mapped_by_the_family_that_owns_its_case():
    """Every mapped row of the chapter's CSV is claimed by exactly one family's paper_row or paper_case, and the
    case it names parses in that family; an unclaimed row keeps a reason."""
    from harness.families.base import PaperFigure
    from harness.registry import FAMILIES

    owners = []
    for row in _rows(seed_chapter.FILE):
        claims = [(family, found) for family in FAMILIES.values() if (found := family.paper_row(row))]
        assert len(claims) <= 1, row
        if claims:
            family, found = claims[0]
            if isinstance(found, dict):
                family.parse(found["case_id"])  # raises where the case is another family's
                owners.append(family.name)
            continue
        ref = next(r for r in references.load() if r.source == CHAPTER and r.table == row["table_or_figure"]
                   and (r.unmapped_reason or r.case_id))
        assert ref is not None
    assert {"memory", "simt", "tma"} <= set(owners)
    assert "wgmma" in {f.name for f in FAMILIES.values()
                       if f.paper_case(PaperFigure("wgmma.mma_async", 64, 256, 16, "f16", "f32", "SS", False,
                                                   "throughput"))}
