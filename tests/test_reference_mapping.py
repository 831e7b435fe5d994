"""Issue 34 item 14: every in-scope data-movement figure of the papers and the authors' logs maps to a case
and metric of ours, or says precisely why it cannot. Published values are read from the shipped reference
files (harness/db/data/references/), never typed in; case ids are spelled out."""

import pytest

from harness import published as references
from harness.families.tma.suite_cases import authors_cases
from harness.registry import FAMILIES
from harness.suites import suite_cases

H800 = "H800 PCIe"
ONE_D = "cp.async.bulk.tensor.1d.shared::cluster.global.tile."
THREE_D = "cp.async.bulk.tensor.3d.shared::cluster.global.tile.b32."
PITCH_3D = ".pitch4096x4194304"
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
    # 342 blocks: 3 per SM, a point the streams of these cases run with one copy in flight
    ("tma_bw", "342 thread blocks; load 2 KB", "cp.async.bulk.shared::cluster.global.2048B", 3),
    ("tma_bw_1d", "342 thread blocks; load 0.500000 KB", ONE_D + "b16.box256", 3),
    ("tma_bw_2d", "342 thread blocks; load 8 KB; box 64x32",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box64x32.pitch131072", 3),
    # 96 x 32: the map's rows are their 32768 FP32 elements (131072 bytes), 341 boxes a row
    ("tma_bw_2d", "114 thread blocks; load 12 KB; box 96x32",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box96x32.pitch131072", 1),
    ("tma_bw_2d", "342 thread blocks; load 12 KB; box 96x32",
     "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b32.box96x32.pitch131072", 3),
    # 3-D: boxes of their 1024^3 FP32 tensor, rows 4 KiB and planes 4 MiB apart
    ("tma_bw_3d", "114 thread blocks; load 1 KB; box 8x8x4", THREE_D + "box8x8x4" + PITCH_3D, 1),
    ("tma_bw_3d", "342 thread blocks; load 12 KB; box 16x16x12", THREE_D + "box16x16x12" + PITCH_3D, 3),
    ("tma_bw_3d", "456 thread blocks; load 16 KB; box 4x4x256", THREE_D + "box4x4x256" + PITCH_3D, 4),
    ("tma_bw_3d", "228 thread blocks; load 16 KB; box 16x256x1", THREE_D + "box16x256x1" + PITCH_3D, 2),
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


def test_every_point_of_the_authors_bandwidth_logs_maps_to_a_case_of_the_tma_suite():
    """All of them (issue 34 item 14): 3 blocks per SM, the 96 x 32 box and the 3-D log included; none unmapped."""
    ours = {c.case_id for c in suite_cases("tma")}
    rows = [r for r in references._read(LOGS) if "NewFeatures/TMA/Throughput" in r["table_or_figure"]]
    points = [r for r in references.mapped() if "NewFeatures/TMA/Throughput" in r.table]
    assert len(points) == len(rows) and {r.case_id for r in points} <= ours
    assert {r.launch["blocks_per_sm"] for r in points} == {1, 2, 3, 4}
    assert {int(r["shape"].split()[0]) // 114 for r in rows} == {1, 2, 3, 4}
    assert not [r for r in references.unmapped() if "NewFeatures/TMA/Throughput" in r.table]
    three_d = [r for r in rows if r["table_or_figure"].endswith("/tma_bw_3d/log")]
    boxes = {r["shape"].split("box ")[1] for r in three_d}
    mapped_3d = {r.case_id for r in points if r.table.endswith("/tma_bw_3d/log")}
    assert mapped_3d == {THREE_D + f"box{b}" + PITCH_3D for b in boxes}  # one case per box shape of the log


def test_the_16_kb_box_shape_study_keeps_its_repeated_point_apart():
    """The 3-D log prints the 16 x 16 x 16 box twice per occupancy: both runs map to the one case (bench compare
    keeps the first printed per case, metric and launch)."""
    rows = [r for r in references._read(LOGS) if r["table_or_figure"].endswith("/tma_bw_3d/log")
            and r["shape"].endswith("box 16x16x16")]
    found = [r for r in references.mapped() if r.table.endswith("/tma_bw_3d/log")
             and r.case_id == THREE_D + "box16x16x16" + PITCH_3D]
    assert len(rows) == len(found) == 8
    assert sorted(r.value for r in found) == pytest.approx(
        sorted(float(r["value"]) * 2**30 / 1e9 / PAPER_ROOFLINE for r in rows))


def test_the_new_geometries_are_the_tma_families_and_the_tma_suites():
    new = [c.case_id for c in authors_cases()]
    assert len(new) == 25 and len(set(new)) == 25
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
