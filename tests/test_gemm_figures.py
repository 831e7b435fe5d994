"""The gemm family's report sections and findings (harness/families/gemm/figures.py, findings.py), from small
stored runs whose numbers are chosen here (no GPU): the stages a finding names are the ones the data implies, the pairs
it compares are the cases that differ in that alone, and cuBLAS "wins" where the library_fraction says so."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from helpers import fake_device

from harness.analysis import paper_verdicts, run_rows
from harness.analysis.report import ReportContext, build
from harness.build.sass import SassCheck
from harness.db.frames import results
from harness.db.store import Store
from harness.families.gemm import FAMILY
from harness.families.gemm.configs import BEST, LADDER, library, pipeline
from harness.families.gemm.suite_cases import everyday, fp8, quick
from harness.measure.measurement import CaseResult, Metric
from harness.orchestration.fakegpu import synthetic_result
from harness.provenance import Provenance
from harness.published import shipped

BIG = (8192, 8192, 8192)
SWEEP = dict(BEST, epilogue="regs")
# TFLOPS by stages: 128x256 is within 2 % of its best from 3 stages (630 >= 0.98 x 640), 128x128 from 5
# (558 >= 0.98 x 568) though 6 dips; cycles per k-block fall to the tensor cores' 1024 / 512 and stop there.
SWEEPS = {(128, 256): {1: (300, 2450, 170e3), 2: (445, 1590, 166e3), 3: (630, 1046, 44e3), 4: (640, 1030, 18e3)},
          (128, 128): {1: (205, 1824, 152e3), 2: (260, 1394, 147e3), 3: (389, 920, 83e3), 4: (531, 588, 39e3),
                       5: (558, 576, 35e3), 6: (549, 574, 34e3), 7: (568, 550, 28e3)}}


def _result(case, tflops, fraction=None, kblock=None, full=None, empty=None, epilogue=None, clock=1300.0, watts=None,
            spread=0.0):
    values = {"throughput_tflops": (tflops, "TFLOPS"), "library_fraction": (fraction, "ratio"),
              "cycles_per_kblock": (kblock, "cycles"), "full_wait_cycles_per_tile": (full, "cycles"),
              "empty_wait_cycles_per_tile": (empty, "cycles"), "epilogue_cycles_per_tile": (epilogue, "cycles"),
              "power_mean_w": (watts, "W"), "energy_efficiency": (watts and tflops / watts, "TFLOPS/W")}
    # `spread`: the library_fraction's rounds scattered by +-spread around their median
    scatter = {"library_fraction": 1 + spread * np.linspace(-1, 1, 5)}
    metrics = [Metric(name, unit, float(value) * scatter.get(name, np.ones(5)), {"problem": "measured"}, sm_clock_mhz=clock)
               for name, (value, unit) in values.items() if value is not None]
    return CaseResult(case, None, SassCheck(True, "ok"), True, None, 0.0, "normal(0,1)", metrics)


def _store(path, results_):
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite gemm", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "gemm", None)
    for result in results_:
        store.record_case(run_id, result)
    store.finish_run(run_id, "complete")
    return store, run_id


@pytest.fixture
def gemm_run(tmp_path):
    rows = []
    for (bm, bn), points in SWEEPS.items():
        for stages, (tflops, kblock, full) in points.items():
            rows.append(_result(pipeline("f16", BIG, **dict(SWEEP, bm=bm, bn=bn, stages=stages)), tflops, tflops / 640,
                                kblock, full, 100e3, 10e3))
    best = pipeline("f16", BIG, **BEST)
    rows.append(_result(best, 651, 1.005, 1050, 47e3, 98e3, 1.5e3))  # the TMA store beside SWEEP's s3 (630)
    rows.append(_result(pipeline("f16", BIG, **dict(SWEEP, cluster=1)), 620, 0.94, 1046, 41e3, 107e3, 9.7e3))
    rows.append(_result(pipeline("f16", BIG, **LADDER["2"]), 150, 0.21, 1234, 122e3, 138e3, 1e3))
    small = (2048, 2048, 2048)
    rows.append(_result(pipeline("f16", small, **BEST), 540, 0.9, 1100, 50e3, 90e3, 1.5e3))
    rows += [_result(library("f16", BIG), 640), _result(library("f16", small), 600)]
    return _store(tmp_path / "gemm.db", rows)


def _findings(store, run_id, directory):
    return FAMILY.findings(SimpleNamespace(store=store, latest=results(store, run_id=run_id, valid=True),
                                           directory=Path(directory)))


def test_findings_name_the_stages_the_data_implies_and_where_cublas_wins(gemm_run, tmp_path):
    store, run_id = gemm_run
    sections = _findings(store, run_id, tmp_path)
    # issue 46, item 4: the site's GEMM answer leads with one figure and one table, ours against the library by size
    # (it had opened with 20 paragraphs and a figure of stages under a heading that asked where cuBLAS wins)
    (lead, said, figure), (_, _, sizes), (heading, text, path), (_, _, table) = sections
    assert lead.startswith("Where does cuBLAS still win?") and heading == "How many stages does a GEMM tile need?"
    assert figure.name == "gemm_library_fraction.png" and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert said[0].startswith("NVIDIA H100 80GB HBM3: The best pipeline against cuBLAS") and len(said) == 2
    assert list(sizes.problem) == ["2048x2048x2048", "8192x8192x8192"]
    assert list(sizes.configuration) == ["128x256 s3 wg2 setmaxnreg cl2 pers-grouped tmastore"] * 2  # named, both
    assert sizes["of cuBLAS"].tolist() == pytest.approx([0.9, 1.005])
    assert {"p10 of the ratio", "p90 of the ratio", "SM MHz", "TFLOPS"} <= set(sizes.columns)
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    needed = dict(zip(table.tile, table["stages needed"]))
    assert needed == {"128x128": 5, "128x256": 3}  # not the best (7, 4): the fewest within 2 % of it
    joined = " ".join(text)
    assert "128x256 needs 3 stages" in joined and "128x128 needs 5 stages" in joined
    # 128x256 at 3 stages: 1046 cycles per k-block against 1024, so the tensor cores set the pace
    assert "1.02 x the tensor cores' 1024 cycles" in joined and "more stages cannot help" in joined
    # 128x128 at 5: 576 against 512 cycles, deeper rings no better than 550: not the tensor cores
    assert "1.12 x the tensor cores' 512 cycles" in joined and "did no better than 550" in joined
    # the pairs: the TMA store against the same configuration from registers, cluster 2 against 1
    assert "630 -> 651 TFLOPS" in joined and "10000 -> 1500 cycles per tile" in joined
    assert "620 -> 630 TFLOPS" in joined
    # the library: the best pipeline at each size; cuBLAS wins at 2048^3 (0.9) and not at 8192^3 (1.005)
    assert "2048x2048x2048 f16: 0.900" in said[0] and "8192x8192x8192 f16: 1.005" in said[0]
    assert "cuBLAS wins at 2048x2048x2048 f16 (11.1% faster" in said[0]


def test_figures_draw_the_ladder_stages_time_and_sizes_with_the_planner(gemm_run, tmp_path):
    store, run_id = gemm_run
    measured = run_rows.measured(store, run_id)
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, run_id))
    sections = dict((heading, body) for heading, _, body in FAMILY.figures(ctx))
    for name in ("the worklog's ladder", "TFLOPS against stages", "where the time goes", "against cuBLAS by size"):
        body = sections[f"From instructions to a GEMM: {name}"]
        assert body.exists() and body.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ladder = sections["From instructions to a GEMM: the ladder in numbers"]
    assert list(ladder.step) == ["2", "6b", "8", "10"]  # the steps measured at 8192^3 (2048^3 has one: no ladder)
    assert ladder.set_index("step")["of cuBLAS's TFLOPS"]["10"] == pytest.approx(651 / 640, abs=1e-3)
    # the planner's TFLOPS is compare's model column: per cycle per SM x SMs x the case's clock
    against = ctx.against[ctx.against.metric == "throughput_tflops"].set_index("case_id").model
    best = pipeline("f16", BIG, **BEST).case_id
    assert ladder.set_index("step")["planner TFLOPS"]["10"] == pytest.approx(against[best], rel=1e-3)
    stages = sections["From instructions to a GEMM: stages each tile needs"].set_index("tile")
    assert stages["stages needed (within 2 % of the best)"].to_dict() == {"128x128": 5, "128x256": 3}
    sizes = sections["From instructions to a GEMM: against cuBLAS, in numbers"].set_index("problem")
    assert sizes.library_fraction.to_dict() == pytest.approx({"f16 2048x2048x2048": 0.9, "f16 8192x8192x8192": 1.005})


def test_the_report_carries_the_section_and_the_findings(gemm_run, tmp_path):
    store, run_id = gemm_run
    report = build(store, run_id, tmp_path / "reports")
    text = report.markdown.read_text()
    assert "## From instructions to a GEMM: the worklog's ladder" in text
    # ... and it is the report's first bullet (issue 46, item 4: the headline had been the sixth of a run's twelve)
    bullets = [line for line in text.split("## Summary", 1)[1].splitlines() if line.startswith("- ")]
    assert bullets[0].startswith("- Where does cuBLAS still win?") and "The best pipeline against cuBLAS" in bullets[0]
    assert any(b.startswith("- How many stages does a GEMM tile need?") for b in bullets)
    assert {f.name for f in report.figures} >= {"gemm_ladder.png", "gemm_stages.png", "gemm_time.png",
                                                  "gemm_library_fraction.png"}


@pytest.mark.parametrize("suite", [everyday, quick, fp8])
def test_a_simulated_run_of_a_suite_reports_without_error(suite, tmp_path):
    """The fake backend's numbers (every pipeline the same rate, counters alike): ties and a run without a
    stage sweep still make sections, and a GPU the planner has no parameters for draws no prediction."""
    rng = np.random.default_rng(1)
    store, run_id = _store(tmp_path / "sim.db", [synthetic_result(case, None, rng, fake_device()) for case in suite()])
    report = build(store, run_id, tmp_path / "reports")
    assert "## From instructions to a GEMM" in report.markdown.read_text()
    found = _findings(store, run_id, tmp_path)
    assert found and found[0][2] is not None and found[0][2].exists()


def test_the_worklogs_observations_are_tested_against_our_counters_and_pairs(tmp_path):
    """Its step 3 profile (a stored tile 4572 cycles against a loaded one 1415: 3.23 loads), 128 SMs against
    all, and power: each sentence's verdict follows the numbers chosen here."""
    step3 = pipeline("f16", BIG, **LADDER["3"])
    rows = [_result(step3, 213, 0.3, 1757, 150e3, 160e3, 4000.0),  # load 1757 - 512 = 1245; 4000 / 1245 = 3.21
            _result(pipeline("f16", BIG, **BEST), 651, 1.0, 1050, 47e3, 98e3, 1.5e3, clock=1300.0, watts=702.0),
            _result(pipeline("f16", BIG, **dict(BEST, grid_sms=128)), 660, 1.01, 1040, 45e3, 96e3, 1.5e3, clock=1300.0),
            _result(pipeline("f16", (2048, 2048, 2048), **BEST), 540, 0.9, 1100, 50e3, 90e3, 1.5e3, clock=1600.0,
                    watts=698.0),
            _result(library("f16", BIG), 650)]
    store, run_id = _store(tmp_path / "worklog.db", rows)
    joined = " ".join(_findings(store, run_id, tmp_path)[0][1])
    assert "leaving 1245 for the load" in joined and "4000 cycles per tile (3.2 loads): it holds" in joined
    assert "651 -> 660 TFLOPS at 1300 -> 1300 MHz (x1.014" in joined and "of cuBLAS 1.000 -> 1.010" in joined
    assert "the worklog's finding holds (of cuBLAS x1.010)" in joined
    assert "1600 MHz at f16 2048x2048x2048 and 1300 at f16 8192x8192x8192" in joined
    assert "698 and 702 W (2 s of each alone): the same power at both, so both are power-bound" in joined
    # a store that costs twice as many loads as the worklog's, and 128 SMs slower: both verdicts turn
    rows[0] = _result(step3, 213, 0.3, 1757, 150e3, 160e3, 8000.0)
    rows[2] = _result(pipeline("f16", BIG, **dict(BEST, grid_sms=128)), 630, 0.97, 1080, 45e3, 96e3, 1.5e3, clock=1300.0)
    store, run_id = _store(tmp_path / "worklog2.db", rows)
    joined = " ".join(_findings(store, run_id, tmp_path)[0][1])
    assert "(6.4 loads): it does not hold" in joined and "finding does not hold here (of cuBLAS x0.970)" in joined
    # rounds that scatter by 5 % around their median: a 1 % difference between the two is inside it
    rows[1] = _result(pipeline("f16", BIG, **BEST), 651, 1.0, 1050, 47e3, 98e3, 1.5e3, clock=1300.0, watts=702.0,
                      spread=0.05)
    rows[2] = _result(pipeline("f16", BIG, **dict(BEST, grid_sms=128)), 660, 1.01, 1040, 45e3, 96e3, 1.5e3,
                      clock=1300.0, spread=0.05)
    store, run_id = _store(tmp_path / "worklog4.db", rows)
    joined = " ".join(_findings(store, run_id, tmp_path)[0][1])
    assert "the same within the rounds' spread" in joined and "the worklog's gain is not shown here" in joined
    # a clock that falls while the power falls too (a cooler, lighter load) is not called power-bound
    rows[1] = _result(pipeline("f16", BIG, **BEST), 651, 1.0, 1050, 47e3, 98e3, 1.5e3, clock=1300.0, watts=520.0)
    store, run_id = _store(tmp_path / "worklog3.db", rows)
    joined = " ".join(_findings(store, run_id, tmp_path)[0][1])
    assert "698 and 520 W (2 s of each alone): the power differs, so the clock alone does not say" in joined


def test_the_size_table_sets_each_pipeline_beside_cublas_per_watt(tmp_path):
    """Each side's TFLOPS per watt from its own energy window; the ratio is ours over cuBLAS's."""
    small = (2048, 2048, 2048)
    rows = [_result(pipeline("f16", BIG, **BEST), 660, 1.0, watts=700.0),
            _result(pipeline("f16", small, **BEST), 600, 0.95, watts=600.0),
            _result(library("f16", BIG), 660, watts=660.0), _result(library("f16", small), 630, watts=700.0)]
    store, run_id = _store(tmp_path / "watts.db", rows)
    measured = run_rows.measured(store, run_id)
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, run_id))
    sections = dict((heading, body) for heading, _, body in FAMILY.figures(ctx))
    table = sections["From instructions to a GEMM: against cuBLAS, in numbers"].set_index("problem")
    assert table["TFLOPS/W (solo 2 s)"].to_dict() == pytest.approx({"f16 8192x8192x8192": 660 / 700, "f16 2048x2048x2048": 1.0},
                                                        abs=1e-3)  # the table is rounded to 3 places
    assert table["of cuBLAS's TFLOPS/W"].to_dict() == pytest.approx(
        {"f16 8192x8192x8192": (660 / 700) / 1.0, "f16 2048x2048x2048": 1.0 / (630 / 700)}, abs=1e-3)


def test_the_library_table_shows_the_rounds_p10_and_p90(tmp_path):
    """Issue 46, item 4: beside library_fraction (the rounds' median), the 10th and 90th percentiles of the ratio over
    the rounds, read from the per-round ratios stored as the measurement's samples: in the site's table and the
    report's. Five rounds at 0.96, 0.98, 1, 1.02, 1.04 x the median: p10 lies 0.4 of the way from the first to the
    second (0.968 x), p90 as far below the last (1.032 x)."""
    small = (2048, 2048, 2048)
    rows = [_result(pipeline("f16", BIG, **BEST), 651, 1.005, spread=0.04),
            _result(pipeline("f16", small, **BEST), 540, 0.9, spread=0.02),
            _result(library("f16", BIG), 640), _result(library("f16", small), 600)]
    store, run_id = _store(tmp_path / "rounds.db", rows)
    expected = {"f16 8192x8192x8192": (1.005 * 0.968, 1.005 * 1.032), "f16 2048x2048x2048": (0.9 * 0.984, 0.9 * 1.016)}
    sizes = dict((h, b) for h, _, b in _findings(store, run_id, tmp_path))["GEMM: ours against cuBLAS, in numbers"]
    found = {f"{d} {p}": (lo, hi) for d, p, lo, hi in zip(sizes.dtype, sizes.problem, sizes["p10 of the ratio"],
                                                        sizes["p90 of the ratio"])}
    assert sorted(found) == sorted(expected)
    for key, bounds in expected.items():
        assert found[key] == pytest.approx(bounds, abs=5e-4)  # the table is rounded to 3 places
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, run_rows.measured(store, run_id),
                        paper_verdicts.against_paper(store, run_id))
    table = dict((h, b) for h, _, b in FAMILY.figures(ctx))["From instructions to a GEMM: against cuBLAS, in numbers"]
    found = {p: (lo, hi) for p, lo, hi in zip(table.problem, table["p10 of the ratio"], table["p90 of the ratio"])}
    assert sorted(found) == sorted(expected)
    for key, bounds in expected.items():
        assert found[key] == pytest.approx(bounds, abs=5e-4)
    assert "spread of the ratio" not in table  # the interquartile range is no longer what it shows


def test_the_gemm_sections_lead_with_ours_against_the_library(gemm_run, tmp_path):
    """Issue 46, item 4: the first GEMM sections answer where the library still wins (a figure, then a table that
    names each configuration, with the ratio's spread, the per-cycle peak fraction and the clock); the ladder and the
    stage sweeps follow."""
    store, run_id = gemm_run
    measured = run_rows.measured(store, run_id)
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, run_id))
    sections = FAMILY.figures(ctx)  # once: each call draws every figure again
    headings = [heading for heading, _, _ in sections]
    assert headings[:2] == ["From instructions to a GEMM: against cuBLAS by size",
                            "From instructions to a GEMM: against cuBLAS, in numbers"], headings
    table = dict((heading, body) for heading, _, body in sections)[headings[1]]
    assert {"case_id", "library_fraction", "p10 of the ratio", "p90 of the ratio", "SM MHz"} <= set(table.columns)
    assert table.case_id.str.startswith("gemm.").all()
