"""The GEMM ladder family on the CPU: ids, the checks' expectations from NumPy, the measured problem's bound against
what a right and a wrong C show, and the model's bounds against the arithmetic of the tiles."""

from __future__ import annotations

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families.ladder.cases import ORDER, parse
from harness.families.ladder.model import FFMA_FLOPS_PER_CYCLE, LadderModel, bound, bounds
from harness.families.ladder.problem import bound as tolerance
from harness.registry import FAMILIES, parse_case_id

FAMILY = FAMILIES["ladder"]


def test_every_step_at_every_size_round_trips():
    ids = [c.case_id for c in FAMILY.cases()]
    assert len(ids) == len(set(ids)) == 3 * len(ORDER)
    assert [parse_case_id(i).case_id for i in ids] == ids
    assert parse("ladder.wmma.f16.2048x1024x512").dtype == "f16"


@pytest.mark.parametrize("bad", ["ladder.naive.f16.1024x1024x1024",  # the SIMT steps are f32
                                 "ladder.wmma.f32.1024x1024x1024",
                                 "ladder.tiled.f32.1024x1024x1024",  # no such step
                                 "ladder.reg-tiled.f32.1000x1024x1024",  # not whole 128-row tiles
                                 "ladder.naive.f32.1024x1024x1000",  # K not a multiple of 32
                                 "ladder.naive.f32.1024x1024"])
def test_bad_ids_are_refused_in_one_line(bad):
    with pytest.raises((SpecError, IllegalShapeError)) as refused:
        parse_case_id(bad)
    assert "\n" not in str(refused.value)


def test_the_check_problem_expects_numpys_product_bit_for_bit_and_one_wrong_element_fails():
    from harness.measure.validate import compare

    for step in ("naive", "mma-ldmatrix"):
        case = parse(f"ladder.{step}.{'f32' if step == 'naive' else 'f16'}.1024x1024x1024")
        inputs = FAMILY.inputs(case, np.random.default_rng(3))
        check = FAMILY.checks(case, inputs)[0]
        a, b = inputs.values["A"], inputs.values["B"]
        product = (a @ b.T).astype(np.float32).view(np.uint32).ravel().astype(np.float64)
        assert np.array_equal(check.expected, product) and check.tolerance == 0.0
        wrong = product.copy()
        wrong[1234] = np.float64(np.float32(np.float32(wrong[1234].astype(np.uint32).view(np.float32)) + 1)
                                 .view(np.uint32))
        assert compare(product, check.expected, np.zeros_like(product)).ok
        assert not compare(wrong, check.expected, np.zeros_like(product)).ok


def _sequential_f32(a, b):
    """C by one f32 FMA after another along K (np.float32 rounding each step): what the f32 steps do."""
    acc = np.zeros((a.shape[0], b.shape[0]), dtype=np.float32)
    for k in range(a.shape[1]):
        acc = (acc.astype(np.float64) + np.outer(a[:, k], b[:, k]).astype(np.float64)).astype(np.float32)
    return acc.astype(np.float64)


@pytest.mark.parametrize("k", [1024, 4096])
def test_the_measured_bound_passes_a_right_c_and_fails_a_dropped_k_step(k):
    """Normal inputs: C summed in f32 step by step lies within the FFMA bound; the same C with one k16 step left
    out (a k-block dropped), or with two columns swapped (a tile misplaced), does not, for most elements."""
    rng = np.random.default_rng(k)
    a = rng.standard_normal((48, k)).astype(np.float32)
    b = rng.standard_normal((40, k)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact, abs_sum = a64 @ b64.T, np.abs(a64) @ np.abs(b64).T
    for unit in ("FFMA", "HMMA"):
        limit = tolerance(np, abs_sum, k, unit)
        assert (np.abs(_sequential_f32(a, b) - exact) <= limit).all() if unit == "FFMA" else True
        dropped = exact - a64[:, 16:32] @ b64[:, 16:32].T
        assert (np.abs(dropped - exact) > limit).mean() > 0.5, unit
        swapped = exact[:, ::-1]
        assert (np.abs(swapped - exact) > limit).mean() > 0.9, unit


def test_the_ffma_bound_is_the_classical_one_doubled():
    """K roundings of 2^-24 each, doubled: K x 2^-23 x sum |a b|."""
    assert tolerance(np, np.array([1.0]), 4096, "FFMA")[0] == pytest.approx(4096 * 2.0 ** -23)
    assert tolerance(np, np.array([1.0]), 4096, "HMMA")[0] == pytest.approx(4096 * 2.0 ** -22)


def test_the_model_bounds_each_step_by_its_tiles():
    """The steps' bounds rise up the ladder; the SIMT steps never above the FFMA peak (256 FLOP a cycle per SM),
    the register-tiled one issue-bound at 64 FFMA of every 68 instructions; the naive one by its 18 wavefronts a k."""
    params = LadderModel().prior("H100 SXM5")
    values = {step: bound(parse(f"ladder.{step}.{'f16' if step in ('wmma', 'mma-ldmatrix') else 'f32'}"
                                f".4096x4096x4096"), params) for step in ORDER if step != "cublas"}
    assert values["naive"][0] == pytest.approx(64 / 18 * 127.9 / 128)
    assert values["reg-tiled"] == (pytest.approx(FFMA_FLOPS_PER_CYCLE * 64 / 68), "issue")
    assert values["naive"][0] < values["smem-tiled"][0] < values["reg-tiled"][0] < values["mma-ldmatrix"][0]
    assert all(v <= FFMA_FLOPS_PER_CYCLE for s, (v, _) in values.items() if s in ("naive", "smem-tiled", "reg-tiled"))
    assert bounds(parse("ladder.cublas.f32.4096x4096x4096"), params) == {}
    case = parse("ladder.smem-tiled.f32.4096x4096x4096")
    assert LadderModel().predict(case, "peak_fraction", params) == pytest.approx(values["smem-tiled"][0] / 256)
    line, table = LadderModel().datasheet_table("H100 SXM5")
    assert "H100" in line and list(table.step) == [s for s in ORDER if s != "cublas"]


def test_the_plan_times_each_step_beside_cublas_and_the_library_alone():
    from harness.measure.methods import WholeKernel

    (spec,) = FAMILY.plan(parse("ladder.reg-tiled.f32.4096x4096x4096"))
    assert isinstance(spec, WholeKernel) and spec.anchor == "library" and spec.grid == 32 * 32 and spec.threads == 256
    (library,) = FAMILY.plan(parse("ladder.cublas.f32.4096x4096x4096"))
    assert library.anchor is None and not library.records


def _store(path, results_, store=None):
    from helpers import fake_device

    from harness.db.store import Store
    from harness.provenance import Provenance
    from harness.published import shipped

    store = store or Store.open(str(path), create=True, references=shipped())
    prov = Provenance("bench run --suite ladder", "testhost", "abc123", False, "0.1.0", "3.12", "14.2", "13.0")
    run_id = store.start_run(fake_device(), prov, "ladder", None)
    for result in results_:
        store.record_case(run_id, result)
    store.finish_run(run_id, "complete")
    return store, run_id


def _result(case_id, tflops, peak=None, library=None, clock=1700.0):
    from harness.build.sass import SassCheck
    from harness.measure.measurement import CaseResult, Metric

    values = {"throughput_tflops": (tflops, "TFLOPS"), "peak_fraction": (peak, "ratio"),
              "library_fraction": (library, "ratio")}
    metrics = [Metric(name, unit, np.full(5, float(value)), {"problem": "measured"}, sm_clock_mhz=clock)
               for name, (value, unit) in values.items() if value is not None]
    return CaseResult(parse_case_id(case_id), None, SassCheck(True, "ok"), True, None, 0.0, "normal(0,1)", metrics)


def test_the_report_sets_each_step_beside_its_bound_the_best_pipeline_and_the_chapters_figures(tmp_path):
    """Numbers chosen here: the ladder's section draws every step at the run's largest size with the model's bound
    and the gemm family's fastest pipeline and cuBLAS of that size (read by metric); the chapter's fractions of
    peak are judged (0.45 lies in its 40-50 %; 0.05 is below its 9 %), its TFLOPS shown for context."""
    from harness.analysis import paper_verdicts, run_rows
    from harness.analysis.report import ReportContext

    results = [_result("ladder.naive.f32.1024x1024x1024", 1.0, 0.02, 0.05),
               _result("ladder.smem-tiled.f32.1024x1024x1024", 2.5, 0.05, 0.1),
               _result("ladder.reg-tiled.f32.1024x1024x1024", 25.0, 0.45, 0.9),
               _result("ladder.naive.f32.2048x2048x2048", 1.1, 0.02, 0.05),
               _result("ladder.mma-ldmatrix.f16.2048x2048x2048", 300.0, 0.33, 0.5),
               _result("ladder.cublas.f32.2048x2048x2048", 40.0),  # the library's rung, an anchor (run 155's failed)
               _result("gemm.f16.2048x2048x2048.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore", 600.0),
               _result("gemm.f16.2048x2048x2048.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore", 500.0),
               _result("cublas.f16.2048x2048x2048", 620.0),
               _result("gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore", 700.0)]
    store, run_id = _store(tmp_path / "r.db", results)
    measured = run_rows.measured(store, run_id)
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, run_id))
    (head, _, path), (_, _, table), (_, _, published) = FAMILY.figures(ctx)
    assert path.exists() and "ladder" in head.lower()
    rows = table.set_index("step")
    assert list(rows.index) == ["naive", "mma-ldmatrix", "cublas", "best wgmma pipeline", "cuBLAS f16"]
    assert rows.loc["cublas", "runs"].startswith("cuBLAS SGEMM")
    assert rows.loc["best wgmma pipeline", "TFLOPS"] == 600.0 and rows.loc["cuBLAS f16", "TFLOPS"] == 620.0
    naive = parse("ladder.naive.f32.2048x2048x2048")
    expected = bound(naive, LadderModel().prior("H100 SXM5"))[0] * 132 * 1700.0 / 1e6
    assert rows.loc["naive", "model bound TFLOPS"] == pytest.approx(expected, rel=1e-3)
    judged = published.set_index(["case_id", "metric"]).verdict
    assert judged["ladder.reg-tiled.f32.1024x1024x1024", "peak_fraction"] == "agrees"
    assert judged["ladder.smem-tiled.f32.1024x1024x1024", "peak_fraction"].startswith("ours lower")
    assert judged["ladder.reg-tiled.f32.1024x1024x1024", "throughput_tflops"].startswith("for context")
    assert judged["ladder.wmma.f16.1024x1024x1024", "peak_fraction"] == "not measured in this run"


def test_each_step_compiles_to_the_units_it_names_and_not_the_others(shared_cache):
    """sm_90a through NVRTC, disassembled: FFMA in the f32 steps, HMMA and LDSM in the tensor-core steps, no spill;
    the f32 steps' expectation does not hold for a tensor-core kernel (the check can fail)."""
    from dataclasses import replace

    from harness.build.compile import compile_probe
    from harness.build.sass import check
    from harness.registry import probe_source

    builds = {}
    for step in ORDER[:-1]:
        case = parse(f"ladder.{step}.{'f16' if step in ('wmma', 'mma-ldmatrix') else 'f32'}.1024x1024x1024")
        builds[step] = compile_probe(probe_source(case))
        result = check(builds[step], FAMILY.sass_expectation(case))
        assert result.ok, (step, result.note)
    simt = FAMILY.sass_expectation(parse("ladder.reg-tiled.f32.1024x1024x1024"))
    assert not check(builds["mma-ldmatrix"], simt).ok
    tensor = FAMILY.sass_expectation(parse("ladder.mma-ldmatrix.f16.1024x1024x1024"))
    assert not check(builds["reg-tiled"], replace(tensor, spill_kernels=())).ok


def test_the_ladder_takes_the_pipeline_from_the_newest_run_of_its_gpu_when_its_own_has_none(tmp_path):
    from harness.analysis import paper_verdicts, run_rows
    from harness.analysis.report import ReportContext

    pipe = "gemm.f16.1024x1024x1024.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
    store, first = _store(tmp_path / "r.db", [_result(pipe, 400.0), _result("cublas.f16.1024x1024x1024", 410.0)])
    _, second = _store(None, [_result(pipe, 450.0)], store)
    _, ladder = _store(None, [_result("ladder.naive.f32.1024x1024x1024", 1.0, 0.02, 0.05)], store)
    measured = run_rows.measured(store, ladder)
    ctx = ReportContext(store, ladder, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, ladder))
    (_, text, _), (_, _, table), *_ = FAMILY.figures(ctx)
    rows = table.set_index("step")
    assert rows.loc["best wgmma pipeline", "TFLOPS"] == 450.0 and f"run {second}" in rows.loc["best wgmma pipeline", "runs"]
    assert "cuBLAS f16" not in rows.index  # the newest run measured no cuBLAS: none taken from an older one
    assert f"run {second}'s" in text[0]


def test_the_measured_table_in_docs_ladder_comes_from_the_runs():
    """docs/ladder.md's table: each step's TFLOPS at 4096^3 and its library_fraction, runs 137 (H100), 143 (H200)."""
    from pathlib import Path

    import harness

    root = Path(__file__).resolve().parents[1]
    if not (root / "results.db").exists():
        pytest.skip("no shipped results.db in this checkout")
    text = (root / "docs" / "ladder.md").read_text()
    cells = {}
    for run in (137, 143):
        t = harness.results(str(root / "results.db"), run_id=run, metric="throughput_tflops")
        f = harness.results(str(root / "results.db"), run_id=run, metric="library_fraction").set_index("case_id").value
        for r in t[t.m == 4096].itertuples():
            step = r.case_id.split(".")[1]
            cells.setdefault(step, []).append(f"{r.value:.1f}")
            cells[step].append(f"{f[r.case_id]:.3f}" if r.case_id in f.index else "")
    names = {"cublas": "cuBLAS SGEMM"}
    for step, values in cells.items():
        line = f"| {names.get(step, step)} | " + " | ".join(values) + " |"
        assert line in text, line


def test_the_tensor_steps_refuse_a_k_where_validation_could_not_see_a_dropped_step():
    """At K = 16384 the HMMA bound (K x 2^-22 x sum |a b|, about 41 for normal inputs) exceeds what a dropped k-step of
    16 products moves an element (a standard deviation of 4): validation would pass a wrong C, so the case is refused;
    at 8192 (about 10) it still sees one."""
    from harness.errors import SpecError
    from harness.families.ladder import FAMILY as LADDER

    with pytest.raises(SpecError, match="dropped k-step"):
        LADDER.parse("ladder.wmma.f16.4096x4096x16384")
    assert LADDER.parse("ladder.wmma.f16.4096x4096x8192")
    assert LADDER.parse("ladder.reg-tiled.f32.4096x4096x16384")  # FFMA's bound is half: 20, still some elements
    expected = 8192 * 2.0 ** -22 * 8192 * (2 / np.pi)  # E|a b| = 2/pi for independent normals
    assert 9 < expected < 11


def test_the_library_rung_is_an_anchor_with_no_template_and_its_stored_rows_still_read():
    """cuBLAS SGEMM is an anchor (harness/anchors): no probe source, no stub kernel in the template, its checks and
    plan launch its call (and the measured problem's verification, a host kernel too); every ladder.cublas row of
    the runs of record (stored while it was a LadderCase rendering a stub kernel) parses to it with the params and
    columns stored."""
    import json
    from pathlib import Path

    from harness.anchors import KERNEL, has_probe
    from harness.db.store import Store
    from harness.families.ladder.cases import LadderCase, LadderLibraryCase
    from harness.measure.validate import compare
    from harness.registry import probe_source

    library = parse("ladder.cublas.f32.1024x1024x1024")
    assert isinstance(library, LadderLibraryCase) and not has_probe(library) and library.case_id == \
        "ladder.cublas.f32.1024x1024x1024"
    assert all(isinstance(c, LadderCase) and has_probe(c) for c in FAMILY.cases() if c.step != "cublas")
    for suite in ("ladder", "ladder-quick", "ladder-full"):  # every suite lists the rung beside the steps
        assert sum(not has_probe(c) for c in FAMILY.suites()[suite].make()) >= 1, suite
    with pytest.raises(SpecError, match="library call"):
        probe_source(library)
    template = (Path(__file__).resolve().parent.parent / "ptx" / "ladder.cu.in").read_text()
    assert "${library}" not in template and "stub" not in template
    inputs = FAMILY.inputs(library, np.random.default_rng(0))
    checks = FAMILY.checks(library, inputs)
    assert [c.kernel for c in checks] == [KERNEL, "probe_verify"] and checks[0].iters == 0
    poison = FAMILY.decode(library, np.full(FAMILY.output_words(library), 0xFFFFFFFF, dtype=np.uint32))
    assert all(not compare(poison, c.expected, np.broadcast_to(c.tolerance, c.expected.shape)).ok for c in checks)
    (spec,) = FAMILY.plan(library)
    assert (spec.kernel, spec.grid, spec.anchor, spec.records) == (KERNEL, 1, None, False)
    assert library.params() == {"step": "cublas", "m": 1024, "n": 1024, "k": 1024}
    with pytest.raises(IllegalShapeError):
        parse("ladder.cublas.f32.1024x1024x1020")
    with pytest.raises(SpecError):
        parse("ladder.cublas.f16.1024x1024x1024")
    db = Path(__file__).resolve().parent.parent / "results.db"
    if not db.exists():
        pytest.skip("no results.db beside the tests")
    with Store.open(str(db), read_only=True) as store:
        stored = store.query("SELECT DISTINCT case_id, params, instruction, m, n, k, dtype_a, dtype_b, dtype_acc "
                             "FROM cases WHERE family = 'ladder' AND case_id LIKE 'ladder.cublas.%'")
    assert len(stored) >= 3
    for row in stored.itertuples():
        case = FAMILY.parse(row.case_id)
        assert isinstance(case, LadderLibraryCase) and case.params() == json.loads(row.params), row.case_id
        columns = case.columns()
        assert (columns["instruction"], columns["m"], columns["n"], columns["k"], columns["dtype_a"],
                columns["dtype_b"], columns["dtype_acc"]) == (row.instruction, row.m, row.n, row.k, row.dtype_a,
                                                              row.dtype_b, row.dtype_acc), row.case_id


def test_the_library_rung_runs_on_the_simulated_gpu_into_a_database_with_no_build(tmp_path, monkeypatch):
    """The simulated GPU answers ladder.cublas as any case; the run stores it with no build row, its params and
    columns as the runs of record hold them."""
    import json

    from harness.anchors import has_probe
    from harness.db.store import Store
    from harness.orchestration.run import RunPlan, execute
    from harness.orchestration.worker import Worker

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    chosen = [case for case in FAMILY.suites()["ladder-quick"].make() if not has_probe(case)]
    assert [c.case_id for c in chosen] == ["ladder.cublas.f32.1024x1024x1024"]
    db = str(tmp_path / "r.db")
    with Worker(0) as worker:
        worker.start()
        outcome = execute(RunPlan("ladder-quick", None, chosen), db, worker)
    assert outcome.status == "complete" and all(r.valid for r in outcome.results)
    with Store.open(db, read_only=True) as store:
        stored = store.query("SELECT r.metric, r.params, r.instruction, r.dtype_a, m.build_id FROM results r "
                             "JOIN measurement_rows m ON m.id = r.measurement_id")
    assert list(stored.metric) == ["throughput_tflops"] and stored.build_id.isna().all()
    assert json.loads(stored.params.iloc[0]) == {"k": 1024, "m": 1024, "n": 1024, "step": "cublas"}
    assert (stored.instruction.iloc[0], stored.dtype_a.iloc[0]) == ("cublasGemmEx", "f32")


def test_the_ladders_pipeline_is_the_sustained_one_on_normal_inputs_not_a_protocol_variant(tmp_path):
    """gemm-protocol's cases run the same kernel on zero or integer inputs, or as a burst after idle (run 152: 751
    TFLOPS on zeros against 655 on normal inputs): the ladder sets its steps beside the normal, sustained pipeline,
    in the report and in the site's finding."""
    from types import SimpleNamespace

    from harness.analysis import paper_verdicts, run_rows
    from harness.analysis.report import ReportContext
    from harness.db.frames import latest

    pipe = "gemm.f16.1024x1024x1024.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
    store, _ = _store(tmp_path / "r.db", [_result(pipe, 400.0), _result(pipe + ".inputs-zero", 500.0),
                                          _result(pipe + ".burst", 520.0), _result(pipe + ".inputs-int.burst", 530.0),
                                          _result("cublas.f16.1024x1024x1024", 410.0),
                                          _result("cublas.f16.1024x1024x1024.inputs-zero", 480.0)])
    _, ladder = _store(None, [_result("ladder.naive.f32.1024x1024x1024", 1.0, 0.02, 0.05),
                              _result("ladder.reg-tiled.f32.1024x1024x1024", 20.0, 0.4, 0.8)], store)
    measured = run_rows.measured(store, ladder)
    ctx = ReportContext(store, ladder, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, ladder))
    rows = FAMILY.figures(ctx)[1][2].set_index("step")
    assert rows.loc["best wgmma pipeline", "TFLOPS"] == 400.0 and rows.loc["cuBLAS f16", "TFLOPS"] == 410.0
    (head, text, path), = FAMILY.findings(SimpleNamespace(store=store, latest=latest(store), directory=tmp_path))
    assert path.exists() and head.endswith("(NVIDIA H100 80GB HBM3)")
    assert f"(run {ladder}), 1024^3, TFLOPS: naive 1, reg-tiled 20, best wgmma pipeline 400, cuBLAS f16 410" in text[0]
    assert "the reg-tiled step makes 0.80 of cuBLAS SGEMM" in text[0]


def test_the_chapters_cublas_f16_maps_to_the_gemm_familys_library_case_of_its_size(tmp_path):
    """The chapter's cuBLAS f16 on its A100 (250 TFLOPS at 1024^3) is a figure a case measures: the gemm family's
    library case at 1024^3 (no longer unmapped); the ladder's section sets the newest such row of the GPU beside it,
    for context (another GPU)."""
    from harness.analysis import paper_verdicts, run_rows
    from harness.analysis.report import ReportContext
    from harness.published import mapped, unmapped

    (figure,) = [r for r in mapped() if r.source == "seed-gemm-chapter" and r.case_id.startswith("cublas.")]
    assert (figure.case_id, figure.metric, figure.value) == ("cublas.f16.1024x1024x1024", "throughput_tflops", 250.0)
    assert not [r for r in unmapped() if r.source == "seed-gemm-chapter" and r.value == 250.0]
    store, _ = _store(tmp_path / "r.db", [_result("cublas.f16.1024x1024x1024", 300.0)])
    _, ladder = _store(None, [_result("ladder.naive.f32.1024x1024x1024", 1.0, 0.02, 0.05)], store)
    measured = run_rows.measured(store, ladder)
    ctx = ReportContext(store, ladder, "NVIDIA H100 80GB HBM3", tmp_path, measured,
                        paper_verdicts.against_paper(store, ladder))
    published = FAMILY.figures(ctx)[-1][2].set_index(["case_id", "metric"])
    row = published.loc[("cublas.f16.1024x1024x1024", "throughput_tflops")]
    assert row.ours == 300.0 and row.verdict == "for context: ours / theirs = 1.20" and row["their GPU"] == "A100"
