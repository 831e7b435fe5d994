"""The shipped runs of record (results.db) hold what issue 21 asked of the data-movement probes: on every
GPU's newest tma run, no TMA or DSMEM latency sits on a coarse grid, the L2 tile-load latency rises with
the box, and some 2-D box of 4 KiB or more streams at 0.95 of the read roofline or better."""

from pathlib import Path

import numpy as np
import pytest

from harness.db.distributions import run_samples
from harness.db.store import Store
from harness.families.tma.cases import GEMM_PITCH
from harness.families.tma.ids import parse
from harness.stats import coarse_grid

DB = Path(__file__).resolve().parent.parent / "results.db"


@pytest.fixture(scope="module")
def store():
    if not DB.exists():
        pytest.skip("no results.db beside the tests")
    with Store.open(str(DB), read_only=True) as store:  # closed: no -wal/-shm left beside results.db
        yield store


def _newest_tma_runs(store):
    runs = store.query("""SELECT r.id, d.name AS gpu FROM runs r JOIN devices d ON d.id = r.device_id
                          WHERE r.suite = 'tma' AND r.status = 'complete' ORDER BY r.id""")
    newest = runs.groupby("gpu").id.max()
    assert {"NVIDIA H100 80GB HBM3", "NVIDIA H200"} <= set(newest.index)
    return newest.items()


def test_no_data_movement_latency_sits_on_a_coarse_grid(store):
    for gpu, run in _newest_tma_runs(store):
        measured = run_samples(store, run, ("latency_cycles", "latency_raw_cycles"))
        assert len(measured) > 100
        for key, values in measured.items():
            assert coarse_grid(values) is None, (gpu, run, key)


def test_tile_latency_from_the_l2_rises_with_the_box(store):
    """The near half of the L2: a tile's samples fall in two modes, the L2 partition near the SM and the far
    one (~35 cycles apart), in a proportion set by which SM ran the probe; the median flips between them from
    run to run (run 72: 293 cycles at 128 B, 264 at 256 B), and so, less, does a low percentile: the curve is
    taken at the fastest sample, the near partition's floor."""
    for gpu, run in _newest_tma_runs(store):
        rows = store.query(f"""SELECT measurement_id, case_id FROM results WHERE run_id = {run}
                               AND metric = 'latency_cycles' AND launch = '{{"source":"L2"}}'""")
        arrays = store.samples_of(rows.measurement_id)
        curve = {}
        for measurement, case_id in rows.itertuples(index=False):
            case = parse(case_id)
            if case.op == "load" and case.rank == 2 and case.box[0] == 64 and case.swizzle == 128 \
                    and case.cluster == 1 and not case.gmap and case.promotion == 128 and case.pitch == GEMM_PITCH:
                curve[case.box_bytes] = float(np.min(arrays[measurement]))
        sizes = sorted(curve)
        assert sizes[0] == 128 and sizes[-1] == 32768, sizes
        near = np.array([curve[s] for s in sizes])
        assert np.all(np.diff(near) > -8), (gpu, dict(zip(sizes, near)))  # a few cycles of noise at most
        # 32 KiB takes at least its extra bytes at 256 B/cycle longer than 128 B (no SM copies faster)
        assert near[-1] - near[0] >= (32768 - 128) / 256, (gpu, near)


def test_a_tma_load_from_the_l2_takes_no_less_than_a_plain_load_hit(store):
    """Issue 34 item 11: the newest tma run's loads, timed from their issue less two clock reads of the same
    launch, never come out faster than the newest memory run's fastest ld.global.cg L2 hit on that GPU (the
    old net, less an empty bracket from another launch, read 246 against 253 cycles on an H100)."""
    for gpu, run in _newest_tma_runs(store):
        memory = store.query(f"""SELECT MAX(r.id) AS id FROM runs r JOIN devices d ON d.id = r.device_id
                                 WHERE r.suite = 'memory' AND r.status = 'complete' AND d.name = '{gpu}'""").id[0]
        hit = store.query(f"""SELECT measurement_id FROM results WHERE run_id = {memory} AND metric = 'latency_cycles'
                              AND case_id = 'ld.global.cg.u32.pchase.l2' AND launch = '{{"timed":"each access"}}'""")
        fastest_hit = float(np.min(store.samples_of(hit.measurement_id)[hit.measurement_id[0]]))
        rows = store.query(f"""SELECT measurement_id, case_id FROM results WHERE run_id = {run}
                               AND metric = 'latency_cycles' AND launch = '{{"source":"L2"}}'""")
        loads = rows[[parse(c).op in ("load", "bulk") for c in rows.case_id]]
        assert len(loads) > 20, (gpu, run)
        arrays = store.samples_of(loads.measurement_id)
        fastest = {c: float(np.min(arrays[m])) for m, c in loads.itertuples(index=False)}
        assert min(fastest.values()) >= fastest_hit, (gpu, run, fastest_hit, sorted(fastest.items(), key=lambda x: x[1])[:3])


def test_two_d_boxes_reach_the_read_roofline(store):
    for gpu, run in _newest_tma_runs(store):
        rows = store.query(f"SELECT case_id, value FROM results WHERE run_id = {run} AND metric = 'bandwidth_gbps'")
        roofline = rows[rows.case_id == "ld.global.v4.u32"].value.max()
        best = max(value for case_id, value in rows.itertuples(index=False)
                   if case_id.startswith("cp.async.bulk.tensor.2d.shared::cluster") and parse(case_id).cluster == 1
                   and parse(case_id).box_bytes >= 4096)
        assert best >= 0.95 * roofline, (gpu, best, roofline)


def test_every_shipped_run_has_a_report(store, tmp_path):
    """scripts/make_reports.sh reports every run; run 36 (two tma measurements without an in-kernel
    clock) once failed on its GPU-state line. Its report says what was not measured instead."""
    from click.testing import CliRunner

    from harness.cli import cli

    made = CliRunner().invoke(cli, ["report", "--db", str(DB), "--run", "36", "--out", str(tmp_path)])
    assert made.exit_code == 0, made.output
    page = next(tmp_path.glob("*-run36/report.md")).read_text()
    assert "GPU state (NVML, during every measurement): no in-kernel SM clock, power up to" in page
    reported = {int(p.name.rpartition("-run")[2]) for p in (DB.parent / "reports").glob("*-run*") if p.is_dir()}
    assert reported == set(store.query("SELECT id FROM runs").id), "run scripts/make_reports.sh"
