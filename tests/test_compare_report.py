"""References, compare and report from small stored runs (no GPU)."""

import re

import numpy as np
import pytest
from pathlib import Path
from click.testing import CliRunner

from helpers import fake_device
from harness.published import shipped
from harness import published as references
from harness.cli import cli
from harness.analysis.compare import compare
from harness.orchestration.fakegpu import synthetic_result
from harness.provenance import Provenance
from harness.analysis.report import build
from harness.db.store import Store
from harness.suites import suite_cases


@pytest.fixture
def db(tmp_path):
    """Two runs of wgmma-quick with synthetic (model-shaped) numbers; run 2 has one slower case. Its N = 256
    cases are measured as the wgmma-energy suite measures them (other inputs, energy), as runs of record do."""
    path = tmp_path / "r.db"
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite wgmma-quick", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    for run in (1, 2):
        run_id = store.start_run(fake_device(), prov, "wgmma-quick", None)
        energy = {c.case_id: c for c in suite_cases("wgmma-energy")}
        for case in suite_cases("wgmma-quick"):
            case = energy.get(case.case_id, case)
            result = synthetic_result(case, None, np.random.default_rng(case.n), fake_device())
            if run == 2 and case.n == 64 and case.operands == "SS":
                for metric in result.metrics:
                    if metric.name == "issue_interval_cycles":
                        metric.samples = metric.samples * 1.25
            store.record_case(run_id, result)
        store.finish_run(run_id, "complete")
    return path


def test_references_are_mapped_deduplicated_and_the_rest_listed():
    mapped, unmapped = references.mapped(), references.unmapped()
    assert len(mapped) + len(unmapped) < 1077 + 299 + 12  # the second paper's repeats are gone
    ids = {(r.gpu, r.case_id, r.metric) for r in mapped}
    assert ("H800 PCIe", "wgmma.mma_async.m64n64k16.f32.f16.f16.SS", "issue_interval_cycles") in ids
    assert ("H800 PCIe", "mma.sync.m16n8k16.row.col.f32.f16.f16.f32", "latency_cycles") in ids
    assert ("H20", "wgmma.mma_async.m64n256k16.f32.f16.f16.SS", "issue_interval_cycles") in ids
    assert ("H800 PCIe", "wgmma.mma_async.sp.m64n256k32.f32.f16.f16.SS", "issue_interval_cycles") in ids
    both = [r for r in mapped if r.also_in and r.also_in.startswith("2501.12084v1")]
    assert both and all(r.source == "2402.13499v1" for r in both)
    assert all(r.unmapped_reason for r in unmapped) and all(r.citation for r in references.load())
    assert {"zero", "random"} <= {r.condition for r in mapped if r.metric == "throughput_tflops"}


def test_the_reference_values_view(db):
    frame = Store.open(str(db)).query("SELECT * FROM reference_values WHERE gpu_name = 'H20' ORDER BY n")
    assert frame.value.tolist() == [18, 32, 64, 128, 256, 512]
    assert {"source", "citation", "gpu_name", "case_id", "m", "n", "k", "dtype_a", "dtype_acc", "operands",
            "sparse", "metric", "value", "unit"} <= set(frame.columns)


def test_compare_against_the_paper(db):
    frame = compare(Store.open(str(db)), 1)
    row = frame[(frame.case_id == "wgmma.mma_async.m64n8k16.f32.f16.f16.SS") &
                (frame.metric == "issue_interval_cycles")].iloc[0]
    assert row.paper == 18 and row.model == 18 and row.verdict == "agrees" and row.model_verdict == "agrees"
    rs8 = frame[(frame.case_id == "wgmma.mma_async.m64n8k16.f32.f16.f16.RS") & (frame.metric == "issue_interval_cycles")]
    assert rs8.paper.item() == 13 and rs8.verdict.item() == "agrees"
    tput = frame[(frame.metric == "throughput_tflops") & frame.paper.notna() & (frame.paper_gpu == "H800 PCIe")]
    # every printed figure, zero and random inputs apart: Table 11 and 2402's tables at the paper's N
    # (6 N x SS/RS x 2 inputs), and 2501.12084 Table 13's N = 256 rows, which print their clock
    assert set(tput.paper_inputs) == {"zero", "random"} and len(tput) > 24
    printed = tput[tput.paper_clock_mhz.notna()]
    assert set(printed.paper_table.str[:8]) == {"Table 13"} and len(printed) == 4
    # the synthetic run is at the full rate, 4096 FLOP per cycle per SM: per cycle, Table 13's 729 TFLOPS
    # at 1560 MHz on 114 SMs is 4099, the same
    assert (printed.verdict == "agrees").all()
    assert printed.comparable.tolist() == pytest.approx((printed.value * 114 / 132 * printed.paper_clock_mhz / 1755).tolist())
    # zero-input figures are set beside our zero-input measurement
    assert all('"inputs":"zeros"' in launch for launch in printed[printed.paper_inputs == "zero"].launch)
    rest = tput[tput.paper_clock_mhz.isna()]
    assert (rest.verdict == "clock not printed").all() and (rest.paper_implied_mhz < 1755).all()
    assert rest.note.str.fullmatch(r"implies \d+ MHz").all()
    assert rest.comparable.tolist() == pytest.approx((rest.value * 114 / 132).tolist())  # the fake runs at 1755 MHz


def test_run_against_run_says_same_within_the_noise(db):
    frame = compare(Store.open(str(db)), 2, against="1")
    interval = frame[frame.metric == "issue_interval_cycles"].set_index("case_id").verdict
    assert interval["wgmma.mma_async.m64n64k16.f32.f16.f16.SS"] == "slower"
    assert (interval.drop("wgmma.mma_async.m64n64k16.f32.f16.f16.SS") == "same").all()


def test_the_report(db, tmp_path):
    report = build(Store.open(str(db)), 1, tmp_path / "reports")
    assert report.directory.name == "nvidia-h100-80gb-hbm3-" + report.directory.name.split("-hbm3-")[1]
    assert all(f.exists() and f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for f in report.figures)
    text = report.markdown.read_text()
    for heading in ("Summary", "wgmma: issue interval against N", "Against the paper", "wgmma: fitted model",
                    "wgmma: residuals", "Tensor-core rates by family", "Disagreements", "Provenance"):
        assert f"## {heading}" in text
    # case, metric, inputs (none printed for a cycle figure), the paper's table, measured, ..., paper 18
    assert re.search(r"\| wgmma\.mma_async\.m64n8k16\.f32\.f16\.f16\.SS \| issue_interval_cycles \|  \| Table X \| 18 "
                     r"\|[^\n]*\| 18 \|[^\n]*\| agrees \|", text)
    assert "abc123" in text and "![wgmma: issue interval against N](issue_interval_vs_n.png)" in text
    # the two N = 256 cases of wgmma-quick (SS, RS), each as a burst on the paper program's two fills
    burst = text.split("## wgmma: sustained against burst")[1].split("\n## ")[0]
    assert sum(line.startswith("| wgmma.mma_async.m64n256k16") for line in burst.splitlines()) == 4
    assert text.rstrip().endswith(f"every number comes from {Path(db).name}.")  # no folder of this machine
    assert str(Path(db).parent) not in text
    page = report.html.read_text()
    assert page.count("data:image/png;base64,") == 4 and not re.search(r"(src|href)=['\"]http", page)


def test_cli_compare_model_advise_report_references(db, tmp_path):
    run = lambda *args: CliRunner().invoke(cli, [*args, "--db", str(db)])  # noqa: E731
    result = run("compare", "--run", "1", "--metric", "issue_interval_cycles", "--format", "csv")
    assert result.exit_code == 0 and result.output.count("agrees") >= 12
    slower = run("compare", "--run", "2", "--against", "1", "--disagreements")
    assert slower.exit_code == 3 and slower.stdout.count("slower") == 2  # its count, its row
    assert "18" in run("model", "--run", "1", "--residuals").output
    h20 = CliRunner().invoke(cli, ["model", "--gpu", "H20"]).output
    assert re.search(r"^256\s+512", h20, re.M)
    advice = CliRunner().invoke(cli, ["advise", "swapab", "--m", "16", "--n", "64", "--k", "16", "--gpu", "H20"])
    assert "direct / swapped = 4.00" in advice.output and "swap A and B" in advice.output
    out = run("report", "--run", "1", "--out", str(tmp_path / "rep"))
    assert out.exit_code == 0 and "report.html" in out.output
    assert "not an instruction figure" in run("references", "--unmapped", "--wide").output


def test_report_of_a_loaders_run_has_its_section_and_no_tensor_sections(tmp_path):
    """A run of another family (ldmatrix/stmatrix, bytes per cycle) gets its own section; the paper table
    and the tensor-core rates, which mean nothing for it, are left out rather than shown empty."""
    store = Store.open(str(tmp_path / "l.db"), create=True, references=shipped())
    prov = Provenance("bench run --suite loaders", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "loaders", None)
    for case in suite_cases("loaders"):
        store.record_case(run_id, synthetic_result(case, None, np.random.default_rng(case.num), fake_device()))
    store.finish_run(run_id, "complete")
    text = build(store, run_id, tmp_path / "reports").markdown.read_text()
    assert "## ldmatrix and stmatrix: latency and shared-memory bandwidth" in text
    assert "| ldmatrix.sync.m8n8.x4.trans.shared.b16 |" in text
    assert "## Tensor-core rates by family" not in text and "## Against the paper" not in text


@pytest.mark.parametrize("suite", ["wgmma-b1", "wgmma-tf32"])
def test_report_of_a_run_of_another_wgmma_type(tmp_path, suite):
    """Types without a model (b1) or with another K (tf32 k8) get the same sections, drawn for them."""
    store = Store.open(str(tmp_path / "t.db"), create=True, references=shipped())
    prov = Provenance(f"bench run --suite {suite}", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, suite, None)
    for case in suite_cases(suite)[:12]:
        store.record_case(run_id, synthetic_result(case, None, np.random.default_rng(case.n), fake_device()))
    store.finish_run(run_id, "complete")
    report = build(store, run_id, tmp_path / "reports")
    text = report.markdown.read_text()
    assert "## wgmma: issue interval against N" in text and report.figures
    assert ("## wgmma: fitted model" in text) == (suite != "wgmma-b1")


def test_compare_names_both_sides_counts_the_verdicts_and_gates_on_a_regression(db, tmp_path):
    """Like `asv continuous`: a line on stderr naming both runs and counting the verdicts; exit 3 when a
    row is slower than the other run (or disagrees with the paper), 0 with --exit-zero or when nothing
    is; two runs with nothing in common are one error line (exit 4)."""
    run = lambda *args: CliRunner().invoke(cli, [*args, "--db", str(db)])  # noqa: E731
    regression = run("compare", "--run", "2", "--against", "1")
    assert regression.exit_code == 3
    # the summary leads, on stdout, in short lines (issue 35, item 2)
    lines = regression.stdout.splitlines()
    assert lines[0] == "run 2 (NVIDIA H100 80GB HBM3, suite wgmma-quick, commit abc123)"
    assert lines[1].startswith("against run 1 (")
    assert re.search(r"^\s+1 slower\b", lines[2]) and any(re.search(r"^\s+\d+ same$", line) for line in lines[3:6])
    assert "--all shows them" in regression.stdout and regression.stdout.count("slower") == 2  # the count, the row
    every = run("compare", "--run", "2", "--against", "1", "--all")
    assert every.stdout.count(" same") > regression.stdout.count(" same")
    csv = run("compare", "--run", "2", "--against", "1", "--format", "csv")  # a program: every row, counts on stderr
    assert csv.stdout.startswith("case_id,") and re.search(r"\b1 slower\b", csv.stderr.splitlines()[-1])
    assert run("compare", "--run", "2", "--against", "1", "--exit-zero").exit_code == 0
    assert run("compare", "--run", "1", "--against", "2").exit_code == 0  # run 1 is faster, no regression
    same = run("compare", "--run", "1", "--against", "1")
    assert same.exit_code == 0 and "slower" not in same.stderr
    # a run of another family shares nothing with these
    store = Store.open(str(db), references=shipped())
    prov = Provenance("bench run --suite loaders", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    other = store.start_run(fake_device(), prov, "loaders", None)
    for case in suite_cases("loaders"):
        store.record_case(other, synthetic_result(case, None, np.random.default_rng(0), fake_device()))
    store.finish_run(other, "complete")
    store.close()
    apart = run("compare", "--run", str(other), "--against", "1")
    assert apart.exit_code == 4 and apart.output.count("\n") == 1
    assert apart.output.startswith(f"error: runs {other} and 1 have no case, metric and launch in common")


def test_run_against_run_shows_the_change_in_percent_and_sorts_by_its_size(tmp_path):
    """Issue 46, item 1: beside the ratio, the change in percent (in the basis compared), and `--sort change` puts
    the largest change first, whichever its sign (asv's --sort ratio); the default keeps the case order."""
    import csv
    import io

    path = tmp_path / "r.db"
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite wgmma-quick", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    scale = {64: 1.10, 128: 0.50, 256: 1.40}  # run 2's issue interval: +10 %, -50 %, +40 % by N (SS)
    for run in (1, 2):
        run_id = store.start_run(fake_device(), prov, "wgmma-quick", None)
        for case in suite_cases("wgmma-quick"):
            result = synthetic_result(case, None, np.random.default_rng(case.n), fake_device())
            if run == 2 and case.operands == "SS" and case.n in scale:
                for metric in result.metrics:
                    if metric.name == "issue_interval_cycles":
                        metric.samples = metric.samples * scale[case.n]
            store.record_case(run_id, result)
        store.finish_run(run_id, "complete")
    store.close()

    def rows(*extra):
        result = CliRunner().invoke(cli, ["compare", "--run", "2", "--against", "1", "--db", str(path), "--format",
                                          "csv", "--disagreements", *extra])
        return [r for r in csv.DictReader(io.StringIO(result.stdout)) if r["metric"] == "issue_interval_cycles"]

    by_size = rows("--sort", "change")
    assert [round(float(r["change_pct"])) for r in by_size] == [-50, 40, 10], by_size  # a half is a double's size
    assert all(abs(float(r["change_pct"]) - 100 * (float(r["ratio"]) - 1)) < 0.06 for r in by_size)
    assert [round(float(r["change_pct"])) for r in rows()] == [10, -50, 40]  # by case: N = 64, 128, 256
    table = CliRunner().invoke(cli, ["compare", "--run", "2", "--against", "1", "--db", str(path)],
                               env={"COLUMNS": "160"})  # a terminal wide enough shows it beside the ratio
    assert "change_pct" in table.stdout.splitlines()[next(i for i, line in enumerate(table.stdout.splitlines())
                                                          if line.startswith("case_id"))]


def test_two_gpu_models_are_compared_but_a_slower_row_is_the_boards(tmp_path):
    """Run against run across GPU models (issue 46, item 1): a note says the boards differ, the slower rows are
    reported and exit 0; --gate-models makes them fail as a regression on one model does."""
    import dataclasses

    path = tmp_path / "r.db"
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite wgmma-quick", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    boards = (fake_device(), dataclasses.replace(fake_device(uuid="GPU-test-1"), name="NVIDIA H200"))
    for run, device in enumerate(boards, 1):
        run_id = store.start_run(device, prov, "wgmma-quick", None)
        for case in suite_cases("wgmma-quick"):
            result = synthetic_result(case, None, np.random.default_rng(case.n), device)
            if run == 2 and case.n == 64 and case.operands == "SS":
                for metric in result.metrics:
                    if metric.name == "issue_interval_cycles":
                        metric.samples = metric.samples * 1.25
            store.record_case(run_id, result)
        store.finish_run(run_id, "complete")
    run = lambda *args: CliRunner().invoke(cli, [*args, "--db", str(path)])  # noqa: E731
    across = run("compare", "--run", "2", "--against", "1")
    assert across.exit_code == 0, across.output
    assert "run 2 is of an NVIDIA H200 and run 1 of an NVIDIA H100 80GB HBM3" in across.stderr
    assert re.search(r"^\s+1 slower \(another GPU model", across.stdout, re.M)
    assert run("compare", "--run", "2", "--against", "1", "--gate-models").exit_code == 3


def test_across_gpu_models_a_library_call_compares_per_second_and_says_so(tmp_path):
    """Issue 46, item 1: across GPU models a kernel of ours compares per cycle (each side over the clock measured in
    it), but a library call (cuBLAS: an anchor) measures no clock of its own, so its row compares per second, is
    named so (`basis`), and the note says how many rows do. Ours: 1300 and 1500 MHz, the TFLOPS in proportion, so
    per cycle the same; cuBLAS: 640 against 700 TFLOPS with no clock, compared as 640 / 700."""
    import csv
    import dataclasses
    import io

    from harness.build.sass import SassCheck
    from harness.families.gemm.configs import BEST, library, pipeline
    from harness.measure.measurement import CaseResult, Metric

    def result(case, tflops, clock):
        metric = Metric("throughput_tflops", "TFLOPS", tflops * (1 + 1e-4 * np.linspace(-1, 1, 5)),
                        {"problem": "measured"}, sm_clock_mhz=clock)
        return CaseResult(case, None, SassCheck(True, "ok"), True, None, 0.0, "normal(0,1)", [metric])

    ours, theirs = pipeline("f16", (8192, 8192, 8192), **BEST), library("f16", (8192, 8192, 8192))
    path = tmp_path / "r.db"
    store = Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite gemm", "host", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    boards = (fake_device(), dataclasses.replace(fake_device(uuid="GPU-test-1"), name="NVIDIA H200"))
    for device, clock, cublas in zip(boards, (1300.0, 1500.0), (640.0, 700.0)):
        run_id = store.start_run(device, prov, "gemm", None)
        store.record_case(run_id, result(ours, 600.0 * clock / 1300.0, clock))
        store.record_case(run_id, result(theirs, cublas, None))  # a library call: no clock
        store.finish_run(run_id, "complete")
    store.close()
    found = CliRunner().invoke(cli, ["compare", "--run", "1", "--against", "2", "--db", str(path), "--format", "csv"])
    assert found.exit_code == 0, found.output
    rows = {r["case_id"]: r for r in csv.DictReader(io.StringIO(found.stdout))}
    assert rows[ours.case_id]["basis"] == "per cycle" and rows[ours.case_id]["verdict"] == "same"
    assert float(rows[ours.case_id]["compared"]) == pytest.approx(1.0, abs=1e-3)
    assert rows[theirs.case_id]["basis"] == "per second"
    assert float(rows[theirs.case_id]["compared"]) == pytest.approx(640 / 700, abs=1e-3)
    assert rows[theirs.case_id]["verdict"] == "slower"  # reported, not failed: another GPU model
    assert "note: 1 row compares per second, not per cycle: library calls" in found.stderr
    same_model = CliRunner().invoke(cli, ["compare", "--run", "1", "--against", "1", "--db", str(path)])
    assert "per second, not per cycle" not in same_model.stderr  # the note is for boards that differ
