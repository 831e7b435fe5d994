"""Verdicts of the data-movement comparison that say no more than the measurement supports (issue 34,
items 1-6): one bandwidth unit, the uncertainty of the statistic compared (never a distribution's width),
the clock basis the paper measured in, the paper's own statistic, a clock verdict that evidence can
contradict, and the roofline as the best plain reader of the run. Each test fails on the old behaviour."""

import pytest

from harness import published as references

H800 = "H800 PCIe"


def _mapped(case_id, metric, gpu=H800):
    return [r for r in references.mapped() if r.gpu == gpu and r.case_id == case_id and r.metric == metric]


# -- 1. units -------------------------------------------------------------------------------------------

def test_every_published_bandwidth_is_decimal_gbps():
    assert references.to_gbps(1.0, "GiB/s") == pytest.approx(1.073741824)
    assert references.to_gbps(3.27, "TB/s") == pytest.approx(3270.0)
    with pytest.raises(ValueError):
        references.to_gbps(1.0, "cycles")
    bandwidths = [r for r in references.load() if r.unit in references.GBPS_PER_UNIT]
    assert bandwidths and {r.unit for r in bandwidths} == {"GB/s"}  # none left in GiB/s or TB/s
    # every TMA bandwidth point is mapped (a fraction of the paper's roofline): the printed unit stays in its notes
    tma = [r for r in references.load() if "TMA/Throughput" in r.table]
    assert tma and all("GiB/s =" in r.notes and "GB/s over" in r.notes for r in tma)


def test_tma_fractions_of_the_paper_roofline_convert_the_logs_gib_to_gb():
    (bulk,) = [r for r in _mapped("cp.async.bulk.shared::cluster.global.8192B", "roofline_fraction")
               if r.launch["blocks_per_sm"] == 4]
    # the log's 1802.97 is GiB/s; Table V's 1861.5 decimal GB/s: mixed, the fraction was 7.4 % low
    assert bulk.value == pytest.approx(1802.971191 * 2**30 / 1e9 / 1861.5)
    assert bulk.value > 1.0 > 1802.971191 / 1861.5
    assert bulk.unit == "ratio" and "GiB/s" in bulk.notes and "1861.5 GB/s" in bulk.notes


# -- 2. the tolerance is the uncertainty of the statistic, never the samples' width --------------------

def test_a_wide_distribution_with_a_precise_median_does_not_widen_the_tolerance():
    import numpy as np

    from harness.analysis.uncertainty import statistic_of
    from harness.stats import median_interval, summarize

    wide = np.r_[np.full(300, 50.0), np.full(400, 100.0), np.full(300, 200.0)]
    assert summarize(wide).spread == 1.5  # the old tolerance: 3 % + 150 %
    found = statistic_of(wide)
    assert found["value"] == 100.0 and found["uncertainty"] == 0.0 and found["n"] == 1000
    # a median known poorly (few samples, spread out) is wide, whatever its IQR
    assert median_interval(np.arange(7.0)) == (0.0, 6.0)
    assert statistic_of(np.arange(1.0, 8.0))["uncertainty"] == pytest.approx(3 / 4)


# -- 4. like statistics: the fastest placement, n = placements ----------------------------------------

def test_dsmem_compares_the_minimum_over_placements_and_counts_them():
    import numpy as np

    from harness.analysis.uncertainty import statistic_of
    from harness.families.dsmem import FAMILY

    assert FAMILY.paper_statistic("ld.shared::cluster.u32.cluster2", "latency_cycles", {"cluster": 2}) == (
        "minimum", 16, "placements")
    # every partner of rank 0 (issue 34 item 4), as the authors' OneToAll log; a run that chased rank 1 alone
    # (no `partners` in its launch) is still read as 16 placements
    assert FAMILY.paper_statistic("ld.shared::cluster.u32.cluster16", "latency_cycles",
                                  {"cluster": 16, "partners": 15}) == ("minimum", 240, "placements x partners", 15)
    assert FAMILY.paper_statistic("ld.shared::cluster.u32.cluster16", "latency_cycles", {"cluster": 16}) == (
        "minimum", 16, "placements")
    assert FAMILY.paper_statistic("ld.shared::cluster.u32.cluster2.chase.local", "latency_cycles") == ("median", 16)
    assert FAMILY.paper_statistic("ld.shared::cluster.u32.cluster4.spread", "latency_cycles") is None
    placements = np.r_[184.5, np.full(15, 211.6)]
    samples = np.tile(placements, 15)  # 16 placements x 15 launches: 240 samples
    found = statistic_of(samples, ("minimum", 16))
    assert found["value"] == 184.5 and found["n"] == 16 and np.median(samples) == 211.6
    assert "184.5-211.6" in found["distribution"]
    # 2 placements x 3 partners: each placement's fastest pair is reported beside the minimum over all
    units = np.array([201.9, 210.0, 214.0, 209.0, 208.0, 215.0])
    found = statistic_of(np.tile(units, 4), ("minimum", 6, "placements x partners", 3))
    assert found["value"] == 201.9 and "each placement's fastest of its 3: 201.9-208.0, median 204.9" in found["distribution"]


# -- 3-6 on the shipped runs of record (results.db beside the tests) -----------------------------------

@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory):
    import sqlite3
    from pathlib import Path

    from harness.db.store import Store
    from harness.published import shipped

    db = Path(__file__).resolve().parent.parent / "results.db"
    if not db.exists():
        pytest.skip("no results.db beside the tests")
    copy = tmp_path_factory.mktemp("shipped") / "results.db"
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return Store.open(str(copy), references=shipped())


def _row(frame, case_id, metric, launch=None, table=None):
    import json

    rows = frame[(frame.case_id == case_id) & (frame.metric == metric) & frame.paper.notna()]
    if launch is not None:
        rows = rows[[json.loads(l) == launch for l in rows.launch]]
    if table is not None:
        rows = rows[rows.paper_table.str.startswith(table)]
    assert len(rows) >= 1, (case_id, metric, launch)
    return rows.iloc[0]


BOX256 = "cp.async.bulk.tensor.1d.shared::cluster.global.tile.b16.box256"


def test_shipped_latencies_beyond_the_sm_compare_in_ns_and_dsmem_by_its_fastest_placement(shipped_copy):
    from harness.analysis.paper_verdicts import against_paper

    for run in (47, 48):
        frame = against_paper(shipped_copy, run)
        hbm = _row(frame, BOX256, "latency_raw_cycles", {"source": "HBM"})
        # 869 cycles at 1980 MHz = 439 ns against 761.5 x 1 / 1.755 = 434 ns: agrees as time, +14 % as cycles
        assert hbm.basis == "ns" and hbm.paper_unit == "ns" and hbm.clock_mhz > 1900
        assert hbm.comparable == pytest.approx(hbm.value * 1e3 / hbm.clock_mhz)
        assert abs(hbm.paper_ratio - 1) < 0.05 < hbm.cycles_ratio - 1
        assert hbm.uncertainty < hbm.spread  # the median's interval, not the IQR
        dsmem = _row(frame, "ld.shared::cluster.u32.cluster2", "latency_cycles")
        # the median over placements (208) DISAGREED with the paper's fastest pair (181); our fastest agrees
        assert dsmem.statistic == "minimum over 16 placements" and dsmem.n_compared == 16
        assert dsmem.value < 190 and dsmem.verdict == "agrees" and "median 2" in dsmem.distribution
    for run in (43, 45):  # memory: Table 3 (wall time x 1755 MHz) as time, Table IV (in-kernel cycles) as cycles
        frame = against_paper(shipped_copy, run)
        assert _row(frame, "ld.global.cg.u32.pchase.l2", "latency_cycles", table="Table 3").basis == "ns"
        assert _row(frame, "ld.global.cg.u32.pchase.l2", "latency_cycles", table="Table IV").basis == "cycles"
        assert _row(frame, "ld.global.u64.pchase.l1", "latency_cycles").basis == "cycles"  # within the SM


def test_both_ends_of_table_3s_l2_range_are_judged(shipped_copy):
    """2501.12084 Table 3 prints the H800's L2 latency as a range over its two partitions, 264.5~502 cycles: two
    figures of one case, metric and table, each judged against our L2 chase (a figure repeated is one figure): ours
    (143 ns on the H100) is 5 % under the near end and half the far one, 1.9 x the near, which no chase of ours
    reproduces (the map's partitions are 29 cycles apart)."""
    from harness.analysis.paper_verdicts import against_paper

    for run in (43, 45):
        frame = against_paper(shipped_copy, run)
        rows = frame[(frame.case_id == "ld.global.cg.u32.pchase.l2") & frame.paper_table.str.startswith("Table 3")
                     & frame.paper.notna()].sort_values("paper")
        assert [round(v, 1) for v in rows.paper] == [150.7, 286.0] and set(rows.paper_unit) == {"ns"}
        assert rows.verdict.tolist() == ["DISAGREES", "DISAGREES"]
        near, far = rows.comparable / rows.paper
        assert 0.9 < near < 1 and far < 0.55


def test_shipped_roofline_is_the_best_plain_reader_beside_the_pin_rate(shipped_copy):
    from harness.analysis.paper_verdicts import against_paper
    from harness.analysis.run_rows import measured, read_roofline

    for run, pin in ((47, 3352.0), (48, 4800.0)):
        rows = measured(shipped_copy, run)
        roofline = read_roofline(rows, "tma").iloc[0]
        bandwidth = rows[rows.metric == "bandwidth_gbps"]
        readers = bandwidth[bandwidth.case_id.isin(["ld.global.v4.u32", "cp.async.cg.shared.global.16",
                                                    "ld.global.v4.u32.then.st.shared.v4.u32"])]
        assert roofline.roofline_gbps == readers.value.max() > bandwidth[bandwidth.case_id == "ld.global.v4.u32"].value.max()
        assert roofline.pin_rate_gbps == pin and roofline.roofline_gbps < pin
        fractions = against_paper(shipped_copy, run)
        fractions = fractions[fractions.metric == "roofline_fraction"]
        assert len(fractions) and (fractions.roofline_gbps == roofline.roofline_gbps).all()
        assert (fractions.pin_rate_gbps == pin).all()


def test_paper_clock_doubtful_rests_on_our_nvml_to_kernel_clock_ratio(shipped_copy):
    from harness.analysis.paper_verdicts import against_paper

    frame = against_paper(shipped_copy, 54)
    doubtful = frame[frame.verdict == "paper clock doubtful"]
    assert len(doubtful)
    # each one: the clock misreading the paper's figure needs is no more than ours measured under the same inputs
    assert (doubtful.paper_ratio <= doubtful.nvml_ratio * (1 + doubtful.uncertainty + 0.03) + 15 / 1755).all()
    assert doubtful.note.str.contains("ours read").all()


def test_every_disagreement_of_a_shipped_tma_run_shows_its_cause_or_says_none_is_known(shipped_copy):
    """Issue 35, item 4: the reasons belong to the data (Family.explain) and are shown on the row. A cause
    that does not close the gap leaves the row DISAGREES; one that does not apply (a roofline fraction with
    copies pipelined) is not given."""
    from harness.analysis.paper_verdicts import against_paper

    frame = against_paper(shipped_copy, 47)
    disagree = frame[frame.verdict == "DISAGREES"]
    assert len(disagree) >= 5 and all(disagree.note.str.contains("known cause: |no reason known"))
    chase = _row(frame, BOX256, "latency_raw_cycles", {"source": "L2"})
    assert chase.verdict == "DISAGREES" and "known cause: theirs is a step of a chase" in chase.note
    local = _row(frame, "ld.shared::cluster.u32.cluster2.chase.local", "latency_cycles")
    assert local.verdict == "DISAGREES" and "index chase" in local.note and local.family == "dsmem"
    from harness.registry import FAMILIES

    tma = FAMILIES["tma"]
    assert tma.explain(BOX256, "roofline_fraction", 0.2, 0.25, {"blocks_per_sm": 4, "stages": 1}).accounts is False
    assert tma.explain(BOX256, "roofline_fraction", 0.2, 0.25, {"blocks_per_sm": 4, "stages": 8}) is None
    assert tma.explain(BOX256, "bandwidth_gbps", 1.0, 2.0, {}) is None


def test_the_docs_quote_the_families_causes_word_for_word():
    """docs/data-movement.md quotes each family's causes (the data's), not the reverse."""
    from pathlib import Path

    from harness.families import dsmem, memory, tma

    docs = " ".join((Path(__file__).resolve().parent.parent / "docs" / "data-movement.md").read_text().split())
    for family in (tma, dsmem, memory):
        for (prefix, metric), text in family.CAUSES.items():
            assert " ".join(text.split()) in docs, (family.__name__, prefix, metric)
    for text in (dsmem.ONE_PARTNER, *dsmem.EXACT_CAUSES.values()):
        assert " ".join(text.split()) in docs


def test_an_old_dsmem_chain_that_chased_rank_1_alone_says_so():
    """Runs before 82 chased rank 1 alone (their launch has no `partners`): their DISAGREES rows carry that cause;
    a run that chased every partner gets the cluster's own cause (at 16: where rank 0 lands) or none."""
    from harness.families import dsmem

    explain = dsmem.FAMILY.explain
    assert explain("ld.shared::cluster.u32.cluster4", "latency_cycles", 211.6, 201, {"cluster": 4}).text == dsmem.ONE_PARTNER
    assert explain("ld.shared::cluster.u32.cluster4", "latency_cycles", 202, 201, {"cluster": 4, "partners": 3}) is None
    sixteen = explain("ld.shared::cluster.u32.cluster16", "latency_cycles", 200.5, 180, {"cluster": 16, "partners": 15})
    assert sixteen is not None and "rank 0" in sixteen.text and sixteen.accounts is False
    # its variants are not rank 0's fastest pair: .spread chases the last rank, .map every pair
    assert explain("ld.shared::cluster.u32.cluster16.spread", "latency_cycles", 210, 180, {"cluster": 16}) is None
    assert explain("ld.shared::cluster.u32.cluster16.map", "latency_cycles", 199, 180, {"cluster": 16}) is None
