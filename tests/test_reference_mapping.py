"""Issue 34 item 14: every in-scope data-movement figure of the papers and the authors' logs maps to a case
and metric of ours, or says precisely why it cannot. Published values are read from the shipped reference
files (harness/db/data/references/), never typed in; case ids are spelled out."""

import pytest

from harness import published as references
from harness.families.tma.cases import authors_cases
from harness.registry import FAMILIES
from harness.suites import suite_cases

H800 = "H800 PCIe"
ONE_D = "cp.async.bulk.tensor.1d.shared::cluster.global.tile."
LOGS = "luo2024_repo_logs.csv"
TABLES = "luo2024_tables.csv"
# Reasons that say nothing about the figure: a data-movement figure never keeps one of these.
VAGUE = ("shape ", "not an instruction figure", "one point of the authors' sweep", "no probe family")
DATA_MOVEMENT_TABLES = ("Table IV ", "Table V ", "Table 3 ", "Table 4 ", "Table 5 ", "Table XIII ", "Table XIV ",
                        "Sec. III-D ", "Sec. IV-B ", "Sec. IV-E ", "Sec. 4.1 ", "Sec. 4.2 ", "Sec. 5.1 ", "Sec. 5.2 ",
                        "Sec. 7.1 ", "Sec. 7.2 ", "Sec. 7.3 ")
PAPER_ROOFLINE = next(float(r["value"]) for r in references._read(TABLES)
                      if r["metric"] == "bandwidth_global" and r["gpu"] == H800 and r["paper"] == "2402.13499v1")


def _data_movement(ref) -> bool:
    """A figure of the memory levels, TMA, DSM or the async-copy tables (not DPX, not compute)."""
    in_log = any(part in ref.table for part in ("NewFeatures/TMA/", "NewFeatures/DSM/", "RegularUnits/random_latency"))
    return (in_log or ref.table.startswith(DATA_MOVEMENT_TABLES)) and "DPX" not in _raw(ref)["instruction"]


def _log_row(log: str, shape: str) -> dict:
    """The one row of the authors' TMA bandwidth log `log` (tma_bw, tma_bw_1d, ...) with this shape."""
    rows = [r for r in references._read(LOGS) if r["table_or_figure"].endswith(f"/{log}/log") and r["shape"] == shape]
    assert len(rows) == 1, (log, shape, len(rows))
    return rows[0]


def test_no_data_movement_figure_keeps_a_vague_reason():
    vague = [(r.table, r.metric, r.unmapped_reason) for r in references.unmapped()
             if _data_movement(r) and r.unmapped_reason.startswith(VAGUE)]
    assert not vague, vague[:5]


@pytest.mark.parametrize("log,shape,case_id,blocks", [
    ("tma_bw", "114 thread blocks; load 1 KB", "cp.async.bulk.shared::cluster.global.1024B", 1),
    ("tma_bw", "228 thread blocks; load 12 KB", "cp.async.bulk.shared::cluster.global.12288B", 2),
    ("tma_bw", "456 thread blocks; load 16 KB", "cp.async.bulk.shared::cluster.global.16384B", 4),
    ("tma_bw", "228 thread blocks; load 2 KB", "cp.async.bulk.shared::cluster.global.2048B", 2),
    ("tma_bw_1d", "114 thread blocks; load 0.500000 KB", ONE_D + "b16.box256", 1),
    ("tma_bw_1d", "456 thread blocks; load 0.750000 KB", ONE_D + "b64.box96", 4),
    ("tma_bw_1d", "228 thread blocks; load 2.000000 KB", ONE_D + "b64.box256", 2),
    ("tma_bw_2d", "114 thread blocks; load 1 KB; box 16x16",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box16x16.pitch131072", 1),
    ("tma_bw_2d", "456 thread blocks; load 4 KB; box 32x32",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box32x32.pitch131072", 4),
    ("tma_bw_2d", "228 thread blocks; load 16 KB; box 64x64",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box64x64.pitch131072", 2),
])
def test_the_authors_bandwidth_points_map_to_that_copy_at_that_occupancy(log, shape, case_id, blocks):
    """Each point of their sweep compares with our copy of the same bytes in the same geometry, one copy in
    flight, at the same blocks per SM: as a fraction of each GPU's read roofline (theirs: Table V, GiB/s
    printed, GB/s compared)."""
    row = _log_row(log, shape)
    found = [r for r in references.mapped() if r.table == row["table_or_figure"]
             and r.launch == {"blocks_per_sm": blocks, "stages": 1}
             and r.value == pytest.approx(float(row["value"]) * 2**30 / 1e9 / PAPER_ROOFLINE)]
    assert [(r.case_id, r.metric, r.gpu) for r in found] == [(case_id, "roofline_fraction", H800)]
    assert case_id in {c.case_id for c in suite_cases("tma")}  # measured by the runs-of-record suite


def test_every_mapped_tma_bandwidth_point_is_a_case_of_the_tma_suite():
    ours = {c.case_id for c in suite_cases("tma")}
    points = [r for r in references.mapped() if "NewFeatures/TMA/Throughput" in r.table]
    assert len(points) == 51 and {r.case_id for r in points} <= ours  # 6 bulk + 6 1-D + 5 2-D sizes x 1, 2, 4 per SM
    assert {r.launch["blocks_per_sm"] for r in points} == {1, 2, 4}


def test_the_authors_points_we_cannot_compare_say_what_differs():
    why = {}
    for r in references.unmapped():
        if "NewFeatures/TMA/Throughput" in r.table:
            why.setdefault(r.table.split("/")[-2], []).append(r.unmapped_reason)
    assert len(why["tma_bw_3d"]) == 44 and all("1024 x 1024 x 1024" in w for w in why["tma_bw_3d"])
    assert all(w.startswith("342 blocks (3 per SM") for log in ("tma_bw", "tma_bw_1d") for w in why[log])
    assert len(why["tma_bw"]) == len(why["tma_bw_1d"]) == 6
    assert sorted(why["tma_bw_2d"])[:4] == ["342 blocks (3 per SM of the H800 PCIe's 114): our streams run 1, 2, 4 "
                                            "blocks per SM"] * 4
    odd = [w for w in why["tma_bw_2d"] if "96 x 32" in w]
    assert len(odd) == 4 and "341 such boxes and 32 elements over" in odd[0]


def test_the_new_geometries_are_the_tma_families_and_the_tma_suites():
    new = [c.case_id for c in authors_cases()]
    assert len(new) == 14 and len(set(new)) == 14
    assert set(new) <= {c.case_id for c in FAMILIES["tma"].cases()}
    assert set(new) == {c.case_id for c in suite_cases("tma-authors")}
    assert not set(new) & {c.case_id for c in suite_cases("tma-copies")}


@pytest.mark.parametrize("table,metric,case_id", [
    ("Sec. 7.1 text", "latency_dsm_local", "ld.shared::cluster.u32.cluster2.chase.local"),
    ("Sec. 7.1 text", "latency_dsm_remote_cluster2", "ld.shared::cluster.u32.cluster2"),
    ("Sec. 7.1 text", "latency_shared", "ld.shared.u32.pchase"),
])
def test_the_dsm_section_text_maps_like_the_log_and_tables(table, metric, case_id):
    """Stated in 2501.12084 Sec. 7.1 and printed in the log or Table IV too: one figure, compared once."""
    value = next(float(r["value"]) for r in references._read(TABLES) if r["table_or_figure"] == table
                 and r["metric"] == metric)
    found = [r for r in references.mapped() if r.case_id == case_id and r.metric == "latency_cycles"
             and r.gpu == H800 and r.value == value]
    assert len(found) == 1  # the log's or the table's figure, which this statement repeats
    assert not [r for r in references.unmapped() if r.table == table and _raw(r)["metric"] == metric]


@pytest.mark.parametrize("metric,words", [
    ("latency_sm_to_sm_via_global", "through global memory"),
    ("latency_tma_extra_over_regular", "a difference of two chase steps"),
    ("bandwidth_dsm_local_per_sm", "clock not printed"),
    ("bandwidth_dsm_peak_cluster2", "clock not printed"),
])
def test_text_figures_without_a_counterpart_say_why(metric, words):
    found = [r for r in references.unmapped() if r.gpu == H800 and _raw(r)["metric"] == metric]
    assert found and all(words in r.unmapped_reason for r in found)


def _raw(ref) -> dict:
    """The row of the shipped files an unmapped figure came from (by table, notes and value as printed)."""
    for row in references._read(TABLES) + references._read(LOGS):
        if row["table_or_figure"] != ref.table or not ref.notes.endswith(row["notes"]):
            continue
        printed = float(row["value"])
        if ref.value in (printed, pytest.approx(references.to_gbps(printed, row["unit"]))
                         if row["unit"] in references.GBPS_PER_UNIT else printed):
            return row
    raise LookupError(ref)
