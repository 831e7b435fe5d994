"""`bench fleet`: a planted outlier among four GPUs of one model is named; three healthy siblings and a
GPU merely clocked lower are not."""

import numpy as np
from click.testing import CliRunner

from helpers import fake_device, fake_result
from harness.published import shipped
from harness.cli import cli
from harness.db.store import Store
from harness.provenance import Provenance

CASES = ("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", "wgmma.mma_async.m64n256k16.f32.f16.f16.SS")


def fleet_db(path, slow_gpu=3, slower=1.06, low_clock_gpu=2):
    """Four H100s: GPU `slow_gpu` has issue intervals `slower` times the others'; GPU `low_clock_gpu`
    runs its time-based measurements at 1500 instead of 1755 MHz, its TFLOPS scaled with the clock."""
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite wgmma", "node", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    rng = np.random.default_rng(0)
    for gpu in range(4):
        run = store.start_run(fake_device(f"GPU-0000000{gpu}-fleet"), prov, "wgmma", None)
        for case_id, interval in zip(CASES, (18.0, 128.0)):
            result = fake_result(case_id, interval * (slower if gpu == slow_gpu else 1.0))
            for metric in result.metrics:
                if metric.name == "throughput_tflops":
                    metric.samples = metric.samples * (1 + rng.normal(0, 0.001))
                    if gpu == low_clock_gpu:
                        metric.sm_clock_mhz = 1500.0
                        metric.samples = metric.samples * 1500.0 / 1755.0
            store.record_case(run, result)
        store.finish_run(run, "complete")
    store.engine.dispose()
    return path


def test_fleet_names_the_planted_outlier_and_only_it(tmp_path):
    db = fleet_db(tmp_path / "fleet.db")
    result = CliRunner().invoke(cli, ["fleet", "--db", str(db)])
    assert result.exit_code == 0, result.output
    unwrapped = result.output.replace("\n  ", " ")  # prose wraps to the terminal, continued indented
    outliers = [line for line in unwrapped.splitlines() if line.startswith("outlier:")]
    assert len(outliers) == 2, result.output
    assert any(line.startswith("outlier: NVIDIA H100 80GB HBM3 03-fleet: 4 of 5 rows apart") for line in outliers)
    assert any("02-fleet: 1 of 5 rows apart" in line and "sm_clock_mhz (-14.5%" in line for line in outliers)
    wide = CliRunner().invoke(cli, ["fleet", "--db", str(db), "--wide"])
    intervals = [line for line in wide.output.splitlines() if "issue_interval_cycles" in line]
    # only the rows where a GPU stands apart, by default; that GPU named in the `apart` column
    assert len(intervals) == 2 and all("NVIDIA H100 80GB HBM3 03-fleet" in line for line in intervals), wide.output
    every = CliRunner().invoke(cli, ["fleet", "--db", str(db), "--all", "--format", "csv"])
    assert every.output.count("issue_interval_cycles") == 4 * 2  # 4 GPUs x 2 cases with an interval
    table = CliRunner().invoke(cli, ["fleet", "--db", str(db), "--metric", "throughput_tflops", "--all", "--format", "csv"])
    low = [line for line in table.output.splitlines() if "02-fleet" in line]
    assert len(low) == 2 and all(line.endswith(",False") for line in low)  # per cycle, like its siblings'


def test_a_healthy_fleet_has_no_outlier_and_bad_options_are_one_line(tmp_path):
    db = fleet_db(tmp_path / "fleet.db", slower=1.0, low_clock_gpu=None)
    result = CliRunner().invoke(cli, ["fleet", "--db", str(db)])
    assert result.exit_code == 0 and "no GPU stands apart" in result.output, result.output
    for args, message in ((["--metric", "speed"], "no metric 'speed' in the database"),
                          (["--case", "*m64n7k16*"], "matches no measured case"),
                          (["--tolerance", "nan"], "not in the range 0..10")):
        bad = CliRunner().invoke(cli, ["fleet", "--db", str(db), *args])
        assert bad.exit_code != 0 and bad.output.count("\n") == 1 and message in bad.output, bad.output


def test_the_report_names_the_outliers_among_its_gpus_siblings(tmp_path):
    from harness.analysis.report import build

    db = fleet_db(tmp_path / "fleet.db")
    text = build(Store.open(str(db), read_only=True), 1, tmp_path / "rep").markdown.read_text()
    section = text.split("## Fleet: this GPU's siblings", 1)[1].split("\n## ", 1)[0]
    assert "4 GPUs of this model (NVIDIA H100 80GB HBM3)" in section and "2 do:" in section
    assert "| NVIDIA H100 80GB HBM3 03-fleet | 4 | 5 |" in section


def test_fleet_says_what_it_compares_a_library_call_per_second(tmp_path):
    """Issue 46: a library call (cuBLAS here) has no clock measured in a kernel of ours, so fleet compares its rate per
    second, kernels' per cycle; the output says which: a header line, the `basis` and `compared_unit` columns, and
    the basis in an outlier's line. GPU 3's cuBLAS runs 8 % slower (a lower clock would do that): per second, it
    stands apart."""
    from harness.build.sass import SassCheck
    from harness.measure.measurement import CaseResult, Metric
    from harness.registry import parse_case_id

    db = tmp_path / "fleet.db"
    store = Store.open(str(db), create=True, references=shipped())
    prov = Provenance("bench run --suite gemm", "node", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    library = "cublas.f16.2048x2048x2048"
    for gpu in range(4):
        run = store.start_run(fake_device(f"GPU-0000000{gpu}-fleet"), prov, "gemm", None)
        store.record_case(run, fake_result(CASES[0], 18.0))
        rate = 600.0 * (0.92 if gpu == 3 else 1.0) * np.array([1.0, 1.0005, 0.9995, 1.0])
        store.record_case(run, CaseResult(parse_case_id(library), None, SassCheck(True, "ok"), True, None, 0.0,
                                          "normal(0,1)", [Metric("throughput_tflops", "TFLOPS", rate,
                                                                 {"problem": "measured"})]))  # no sm_clock_mhz
        store.finish_run(run, "complete")
    store.engine.dispose()

    result = CliRunner().invoke(cli, ["fleet", "--db", str(db)])
    assert result.exit_code == 0, result.output
    unwrapped = result.output.replace("\n  ", " ")  # prose wraps to the terminal, continued indented
    notes = [line for line in unwrapped.splitlines() if line.startswith("compared:")]
    assert len(notes) == 1, result.output  # one header line says what the rows compare
    note = notes[0]
    assert "4 time-based rows per cycle" in note and "TFLOPS/MHz" in note, note  # one wgmma TFLOPS row per GPU
    assert "4 rows of library calls per second" in note and "cuBLAS" in note and "(column basis)" in note, note
    assert "4 rows as measured" in note and "SM clock in MHz" in note, note  # issue intervals, in cycles
    outlier = next(line for line in unwrapped.splitlines() if line.startswith("outlier:"))
    assert outlier.startswith("outlier: NVIDIA H100 80GB HBM3 03-fleet: 1 of") and library in outlier, outlier
    assert "throughput_tflops (-8.0% per second against its siblings' median)" in outlier, outlier
    side = [line for line in result.output.splitlines() if library in line]
    assert len(side) == 1 and "per second" in side[0], result.output  # the side-by-side row names its basis

    import io

    import pandas as pd

    every = CliRunner().invoke(cli, ["fleet", "--db", str(db), "--all", "--format", "csv"])
    rows = pd.read_csv(io.StringIO(every.output))
    assert list(rows.columns[7:10]) == ["compared", "basis", "compared_unit"] and rows.columns[-1] == "outlier"
    by = {(c, m): set(zip(g.basis, g.compared_unit)) for (c, m), g in rows.groupby(["case_id", "metric"])}
    assert by[(library, "throughput_tflops")] == {("per second", "TFLOPS")}
    assert by[(CASES[0], "throughput_tflops")] == {("per cycle", "TFLOPS/MHz")}
    assert by[(CASES[0], "issue_interval_cycles")] == {("cycles", "cycles")}
    assert by[("(every time-based measurement)", "sm_clock_mhz")] == {("clock", "MHz")}
    kernel = rows[(rows.case_id == CASES[0]) & (rows.metric == "throughput_tflops")]
    assert np.allclose(kernel.compared, kernel.value / 1755.0)  # per cycle: over the clock measured in the kernel
    anchor = rows[rows.case_id == library]
    assert np.allclose(anchor.compared, anchor.value)  # per second: the rate itself
