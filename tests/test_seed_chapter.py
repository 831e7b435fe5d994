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


def test_a_run_meets_the_papers_figures_its_own_gpus_and_those_of_a_gpu_with_its_sm():
    assert reference_gpus("NVIDIA H100 80GB HBM3") == ("H800 PCIe", "H100 SXM5", "H200 SXM")
    assert reference_gpus("NVIDIA H200") == ("H800 PCIe", "H200 SXM", "H100 SXM5")
    assert reference_gpus("no such GPU") == ("H800 PCIe",)
    assert reference_gpus("NVIDIA H800 PCIe") == ("H800 PCIe",)


def test_the_h200_shares_the_h100_sxm5s_sm_as_data_and_not_its_memory():
    """gpu_specs.csv's sm_of says whose SM a GPU's is; the datasheet rows agree on the SM and differ on memory."""
    from harness.analysis.figure_gpus import MAX_SM_CLOCK_MHZ, other_boards
    from harness.datasheets import gpu_specs, same_sm

    specs = gpu_specs()
    h200, h100 = specs["H200 SXM"], specs["H100 SXM5"]
    assert h200.sm_of == "H100 SXM5" and h100.sm_of is None
    assert same_sm("H200 SXM") == ("H100 SXM5",) and same_sm("H100 SXM5") == ("H200 SXM",)
    assert same_sm("H800 PCIe") == () and same_sm("no such GPU") == ()
    assert (h200.sm_count, h200.tensor_cores_per_sm, h200.flops_per_tc_per_clk_fp16) == \
        (h100.sm_count, h100.tensor_cores_per_sm, h100.flops_per_tc_per_clk_fp16)
    assert MAX_SM_CLOCK_MHZ["H200 SXM"] == MAX_SM_CLOCK_MHZ["H100 SXM5"]
    assert h200.memory_bandwidth_gbps > h100.memory_bandwidth_gbps
    assert other_boards("NVIDIA H200") == ("H100 SXM5",) and other_boards("NVIDIA H800 PCIe") == ()


def test_a_figure_of_the_sm_is_its_familys_word_and_never_wall_time():
    """of_the_sm: the case stays inside the SM (Family.within_sm) and compares in cycles or per cycle per SM."""
    from harness.analysis.figure_gpus import of_the_sm
    from harness.registry import FAMILIES

    inside = [("wgmma.mma_async.m64n256k16.f32.f16.f16.SS", "throughput_tflops", "TFLOPS"),
              ("mma.sync.m16n8k16.row.col.f64.f64.f64.f64", "throughput_tflops", "TFLOPS"),
              ("simt.fma.rn.f32", "sm_throughput", "result/cycle/SM"),
              ("ld.shared.u32.ptrchase", "latency_cycles", "cycles"),
              ("ld.global.u64.pchase.l1", "latency_cycles", "cycles"),
              ("ld.shared.v4.u32.stream", "sm_throughput", "B/cycle/SM")]
    beyond = [("ld.global.cg.u32.pchase.l2", "latency_cycles", "cycles"),
              ("ld.global.cg.u32.pchase.hbm", "latency_cycles", "cycles"),
              ("ld.global.cg.v4.u32.stream.l2", "sm_throughput", "B/cycle/SM"),
              ("ld.global.v4.u32", "bandwidth_gbps", "GB/s"),  # the chapter's HBM bandwidth (tma's reader)
              ("ld.shared.u32.ptrchase", "latency_cycles", "ns"),  # inside the SM, but compared as wall time
              (FAMILIES["tma"].example_id, "latency_raw_cycles", "cycles"),
              (FAMILIES["gemm"].example_id, "throughput_tflops", "TFLOPS"),
              (FAMILIES["dsmem"].example_id, "latency_cycles", "cycles"),
              ("no.such.case", "latency_cycles", "cycles")]
    assert [of_the_sm(*row) for row in inside] == [True] * len(inside)
    assert [of_the_sm(*row) for row in beyond] == [False] * len(beyond)


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
    # The same line's 128 B/cycle/SM term is a figure of its own (analysis/pairing.py: figures of one case, metric,
    # table and launch apart by more than the tolerance are each judged), and it holds.
    assert any(r.source == CHAPTER and r.case_id == "ld.shared.v4.u32.stream" and r.table == table and r.value == 128
               for r in references.mapped())
    assert sorted(shared.paper.tolist()) == [128, pytest.approx(printed * 1e12 / (seed_chapter.CHAPTER_CLOCK_MHZ * 1e6))]
    assert shared[shared.paper == 128].verdict.tolist() == ["agrees"]


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


# -- a GPU with the H100 SXM5's SM: the H200 meets the chapter's figures of the SM, not its memory system's --------

SAME_SM = "H100 SXM5"  # the chapter's GPU, whose SM the H200's is (gpu_specs.csv sm_of)


# The tests that read both_policies run in one pytest-xdist process (--dist loadgroup), so that its cache computes each
# run's comparisons once: spread over two processes, each computed those of runs 54 and 190 again.
ON_BOTH_POLICIES = pytest.mark.xdist_group("seed-chapter-both-policies")


@pytest.fixture(scope="module")
def both_policies(shipped_copy):
    """against_paper of a run now, and as before GPUs that share an SM met each other's figures (no sm_of)."""
    from harness.analysis import figure_gpus
    from harness.analysis.paper_verdicts import against_paper

    cache = {}

    def compare(run: int, same_sm: bool = True):
        if (run, same_sm) not in cache:
            if same_sm:
                cache[run, same_sm] = against_paper(shipped_copy, run)
            else:
                with pytest.MonkeyPatch.context() as patch:
                    patch.setattr(figure_gpus, "same_sm", lambda gpu: ())
                    cache[run, same_sm] = against_paper(shipped_copy, run)
        return cache[run, same_sm]
    return compare


COLUMNS = ["case_id", "metric", "launch", "paper_table", "paper", "comparable", "verdict", "note"]


def _rows_of(frame, gpu):
    return frame[frame.paper_gpu == gpu][COLUMNS].reset_index(drop=True)


@pytest.mark.parametrize("run", [91, 52, 190])  # H100: memory, wgmma-all (the peaks), tma (the HBM reader)
@ON_BOTH_POLICIES
def test_an_h100_runs_rows_and_verdicts_are_unchanged(both_policies, run):
    import pandas as pd

    now, before = both_policies(run), both_policies(run, same_sm=False)
    pd.testing.assert_frame_equal(now, before)
    assert (now.paper_gpu == SAME_SM).any() or run == 190


@pytest.mark.parametrize("run", [93, 54, 199])  # H200: memory, wgmma-all, tma
@ON_BOTH_POLICIES
def test_an_h200_runs_comparison_with_the_paper_is_unchanged(both_policies, run):
    """The H800 PCIe's rows are the same; every measurement compared before still is."""
    import pandas as pd

    now, before = both_policies(run), both_policies(run, same_sm=False)
    assert not (before.paper_gpu == SAME_SM).any()
    pd.testing.assert_frame_equal(_rows_of(now, "H800 PCIe"), _rows_of(before, "H800 PCIe"))
    assert set(zip(before.case_id, before.metric)) <= set(zip(now.case_id, now.metric))


@ON_BOTH_POLICIES
def test_an_h200_memory_run_meets_the_chapters_shared_memory_and_l1_not_its_l2_or_hbm(both_policies):
    from harness.families.memory import BEYOND_SM
    from harness.registry import parse_case_id

    frame = both_policies(93)  # H200, suite memory
    chapter = frame[frame.paper_gpu == SAME_SM]
    levels = {parse_case_id(c).level for c in chapter.case_id}
    assert levels == {"shared", "l1"} and not levels & set(BEYOND_SM)
    assert (chapter.basis == "cycles").all() and chapter.verdict.isin(["agrees", "DISAGREES"]).all()
    assert all(n.startswith("the H100 SXM5's figure; the H200 SXM has the same SM") for n in chapter.note)
    # the shared-memory latency, a range 20-30 in §4.1: ours, in cycles as counted, against its nearer end
    shared = _chapter(frame, "ld.shared.u32.ptrchase", "latency_cycles", "§4.1 memory hierarchy")
    low, high = seed_chapter.figure_range(next(r for r in references.mapped() if r.source == CHAPTER
                                               and r.case_id == shared.case_id and r.table == shared.paper_table).notes)
    assert shared.comparable == shared.value and shared.paper == min(max(shared.value, low), high)
    assert (shared.verdict == "agrees") == (low <= shared.value <= high)
    # the L2 and HBM: the chapter's figures are the H100's board's, not met here; the H800's still are
    for case in ("ld.global.cg.u32.pchase.l2", "ld.global.cg.u32.pchase.hbm", "ld.global.cg.v4.u32.stream.l2"):
        rows = frame[frame.case_id == case]
        assert len(rows) and not (rows.paper_gpu == SAME_SM).any() and (rows.paper_gpu == "H800 PCIe").any()


@ON_BOTH_POLICIES
def test_an_h200_meets_the_chapters_tensor_peaks_per_cycle_per_sm(both_policies, shipped_copy):
    clock = float(next(r["value"] for r in _rows(seed_chapter.FILE) if r["metric"] == "boost_clock"))
    sms = int(next(r["value"] for r in _rows(seed_chapter.FILE) if r["metric"] == "sm_count"))
    frame = both_policies(54)  # H200, wgmma-all: the peaks' instructions
    peaks = frame[(frame.paper_gpu == SAME_SM) & (frame.paper_table == "§1.2 spec box")
                  & (frame.metric == "throughput_tflops")]
    assert len(peaks) == 4 and (peaks.paper_clock_mhz == clock).all() and (peaks.basis == "per cycle per SM").all()
    ours = shipped_copy.query("SELECT DISTINCT sm_count FROM results WHERE run_id = 54").sm_count.tolist()
    for row in peaks.itertuples():
        per_cycle = row.value * 1e6 / (ours[0] * row.clock_mhz)  # ours per cycle per SM, at the clock measured
        assert row.comparable == pytest.approx(per_cycle * sms * clock / 1e6)
        assert row.note.startswith("the H100 SXM5's figure; the H200 SXM has the same SM")
        assert row.verdict == "agrees"


@ON_BOTH_POLICIES
def test_an_h200_tma_run_meets_no_figure_of_the_chapters_hbm(both_policies, shipped_copy):
    """The chapter's 3.35 TB/s is the H100 SXM5's HBM3, in wall time: the H200's HBM3e is another board's."""
    (hbm,) = [r for r in references.mapped() if r.source == CHAPTER and r.metric == "bandwidth_gbps"
              and not r.case_id.startswith("memcpy.")]  # (the host link's 64 GB/s: the hostlink family's)
    measured = shipped_copy.query(f"SELECT COUNT(*) AS n FROM results WHERE run_id = 199 AND case_id = '{hbm.case_id}' "
                                  "AND metric = 'bandwidth_gbps'").n.iloc[0]
    h200 = both_policies(199)
    assert measured and not (h200.paper_gpu == SAME_SM).any()  # measured, and no verdict against the H100's HBM
    h100 = both_policies(190)  # its own GPU's figure, as before
    assert ((h100.case_id == hbm.case_id) & (h100.paper_gpu == SAME_SM)).any()


def test_compare_names_whose_figures_an_h200_run_meets():
    import pandas as pd

    from harness.cli.comparing import _figures_of

    frame = pd.DataFrame({"paper_gpu": ["H800 PCIe", SAME_SM, None]})
    text = _figures_of(frame, "NVIDIA H200")
    assert text.startswith("the paper (H800 PCIe) and the H100 SXM5's figures of the SM") and "left out" in text
    assert _figures_of(frame, "NVIDIA H100 80GB HBM3") == "the paper (H800 PCIe) and the figures stated for the H100 SXM5"
