"""The attention family on the CPU: ids, refusals, the template's parameters, and the tolerance of its checks, which
must hold a faithful emulation of the kernel's arithmetic and refuse a kernel that drops a block of keys or uses the
wrong scale (the GPU tests run the kernel itself: tests/gpu/test_probes.py)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.dtypes import round_to
from harness.errors import IllegalShapeError, SpecError
from harness.families.attention.cases import AttentionCase, check_case
from harness.families.attention.suite_cases import attention
from harness.families.attention.problem import LOG2E, check_reference, scale_log2
from harness.build.sass import issued_in_flight
from harness.families.base import InFlight
from harness.registry import FAMILIES, parse_case_id

FAMILY = FAMILIES["attention"]


def emulate(case, values, drop=None, scale=None, block=None):
    """ptx/attention.cu.in's arithmetic in NumPy, independently of problem.py's bound: per block of keys S in f32,
    the running max and sum rescaled, P = 2^(S c - max) rounded to the case's type before P V, O summed in f32,
    divided by the row sum and rounded to the type. `drop`: a block left out; `scale`: another c; `block`: keys a
    block other than the case's (cuDNN's case has none of its own)."""
    small = check_case(case)
    bn = block or small.bn
    c = np.float32(scale_log2(case) if scale is None else scale)
    out = np.zeros((small.batch, small.seq, small.heads, small.head_dim))
    rows = np.arange(small.seq)
    for h in range(small.heads):
        q, k, v = (values[name][0, :, h].astype(np.float32) for name in "QKV")
        m = np.full(small.seq, -np.inf, np.float32)
        total = np.zeros(small.seq, np.float32)
        o = np.zeros((small.seq, small.head_dim), np.float32)
        for index in range(small.seq // bn):
            if index == drop:
                continue
            keys = np.arange(index * bn, (index + 1) * bn)
            s = (q @ k[keys].T).astype(np.float32)
            if case.causal:
                s = np.where(keys[None, :] <= rows[:, None], s, -np.inf).astype(np.float32)
            new = np.maximum(m, s.max(axis=1) * c)
            alpha = np.exp2(m - new).astype(np.float32)
            m = new
            p = np.exp2(s * c - m[:, None]).astype(np.float32)
            total = total * alpha + p.sum(axis=1, dtype=np.float32)
            o = o * alpha[:, None] + round_to(case.dtype, p).astype(np.float32) @ v[keys]
        out[0, :, h] = round_to(case.dtype, o / total[:, None])
    return out


CASES = ["attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg",
         "attention.bf16.4x4096x16x128.causal.tile128x128.s2.wg2.setmaxnreg",
         "attention.f16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg",
         "attention.bf16.16x1024x32x64.causal.tile128x128.s3.wg2.setmaxnreg",
         "attention.bf16.4x4096x8x256.tile128x64.s2.wg2.setmaxnreg"]


@pytest.mark.parametrize("case_id", CASES)
def test_the_bound_holds_the_kernels_arithmetic_and_refuses_a_dropped_block_or_a_wrong_scale(case_id):
    case = parse_case_id(case_id)
    inputs = FAMILY.inputs(case, np.random.default_rng(3))
    o, tolerance = check_reference(case, inputs.values)
    error = np.abs(emulate(case, inputs.values) - o)
    assert (error <= tolerance).all(), f"worst {np.max(error / tolerance):.2f} of the bound"
    assert np.max(error / tolerance) > 0.01  # the bound is not vacuous: the arithmetic uses a visible part of it
    dropped = np.abs(emulate(case, inputs.values, drop=1) - o)
    assert (dropped > tolerance).mean() > 0.5
    wrong_scale = np.float32(LOG2E / case.head_dim)  # 1 / D in place of 1 / sqrt(D)
    assert (np.abs(emulate(case, inputs.values, scale=wrong_scale) - o) > tolerance).mean() > 0.5


def test_ids_name_the_problem_and_the_pipeline():
    case = attention("bf16", 4096, 128, causal=True)
    assert case.case_id == "attention.bf16.4x4096x16x128.causal.tile128x128.s2.wg2.setmaxnreg"
    assert (case.batch * case.seq, case.heads * case.head_dim) == (16384, 2048)  # the FA3 paper's setting
    assert parse_case_id(case.case_id) == case
    assert case.flops == 4 * 4 * 16 * 4096 ** 2 * 128 / 2  # causal: half, as FA3 counts
    assert attention("bf16", 4096, 128).flops == 2 * case.flops


@pytest.mark.parametrize("case_id,why", [
    ("attention.e4m3.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg", "dtype"),
    ("attention.bf16.4x4096x16x96.tile128x128.s2.wg2.setmaxnreg", "head dim 96"),
    ("attention.bf16.4x4000x16x128.tile128x128.s2.wg2.setmaxnreg", "sequence 4000"),
    ("attention.bf16.4x4096x16x128.tile128x96.s2.wg2.setmaxnreg", "block of 96 keys"),
    ("attention.bf16.4x4096x8x256.tile128x128.s2.wg2.setmaxnreg", "registers"),
    ("attention.bf16.4x4096x8x256.tile128x64.s3.wg2.setmaxnreg", "shared memory"),
    ("attention.bf16.4x4096x16x128.tile64x128.s2.wg2.setmaxnreg", "cannot split 64 rows"),
    ("attention.bf16.4x4096x16x128.tile128x128.s2.wg1", "64 query rows per consumer"),
    ("attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg.overlap", "3 stages at least"),
    ("attention.bf16.4x4096x16x128.tile128x128.s1.wg2.setmaxnreg.paired", "2 stages at least"),
    ("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.overlap.paired", "one"),
    ("attention.bf16.4x4096x8x256.tile128x64.s3.wg2.setmaxnreg.overlap", "shared memory"),
    # a cluster shares K and V by multicast in the overlapped schedule only, never causal, two tiles of one head
    ("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster2", "overlapped schedule only"),
    ("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster2.turns.paired", "overlapped schedule only"),
    ("attention.bf16.4x4096x16x128.causal.tile128x128.s3.wg2.setmaxnreg.cluster2.overlap", "causal cluster"),
    ("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster4.overlap", "cluster 4"),
    ("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster3.overlap", "cluster 3"),
    ("attention.bf16.4x384x16x128.tile128x128.s3.wg2.setmaxnreg.cluster2.overlap", "whole number of clusters"),
])
def test_what_the_template_cannot_run_is_refused_in_one_line(case_id, why):
    with pytest.raises(IllegalShapeError) as refused:
        parse_case_id(case_id)
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_a_malformed_id_says_what_an_id_looks_like():
    with pytest.raises(SpecError, match="expected e.g. attention.bf16"):
        parse_case_id("attention.bf16.4x4096x16")
    with pytest.raises(SpecError, match="no .cluster1"):  # no cluster is written as none: one id per case
        parse_case_id("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster1.overlap")


def test_a_cluster_is_named_after_setmaxnreg_and_no_cluster_is_not_named():
    case = attention("bf16", 4096, 128, stages=3, overlap=True, turns=True, cluster=2)
    assert case.case_id == "attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster2.turns.overlap"
    assert parse_case_id(case.case_id) == case and parse_case_id(case.case_id).cluster == 2
    alone = attention("bf16", 4096, 128, stages=3, overlap=True, turns=True)
    assert alone.cluster == 1 and "cluster" not in alone.case_id  # the ids of record are unchanged
    params = FAMILY.template_params(case)
    assert params["cluster"] == 2 and params["cluster_attr"] == "__cluster_dims__(2, 1, 1)"
    assert FAMILY.template_params(alone)["cluster_attr"] == ""
    # setmaxnreg: within the 168 x 384 registers the launch gives the CTA, the producer's and the consumers'
    for c in (case, alone):
        p = FAMILY.template_params(c)
        assert 128 * p["producer_regs"] + 256 * p["consumer_regs"] <= 168 * 384
        assert p["producer_regs"] % 8 == 0 and p["consumer_regs"] % 8 == 0


def test_a_cluster_loads_half_of_k_and_v_per_cta_and_all_of_q(monkeypatch):
    import harness.families.attention.gpu as gpu

    boxes = []

    def tiled(label, element, address, dims, strides, box, swizzle=None, promotion=None):
        boxes.append((address, tuple(box)))
        return np.zeros(16, dtype=np.uint64)

    monkeypatch.setattr(gpu.tensormaps, "tiled", tiled)
    for cluster, k_rows in ((1, 128), (2, 64)):
        case = attention("bf16", 4096, 128, stages=3, overlap=True, cluster=cluster)
        boxes.clear()
        gpu.problem(case, 1 << 20, 2 << 20, 3 << 20, 4 << 20)
        # (64 head-dim columns, one head, rows): Q's box is the tile's 128 rows, K's and V's 128 / cluster keys, O's
        # a consumer warpgroup's 64 rows (the TMA store's epilogue)
        assert dict(boxes) == {1 << 20: (64, 1, 128), 2 << 20: (64, 1, k_rows), 3 << 20: (64, 1, k_rows),
                               4 << 20: (64, 1, 64)}


def test_the_tma_store_epilogue_is_a_case_of_one_tile_per_cta_with_a_store_per_panel():
    case = attention("bf16", 4096, 128, stages=3, overlap=True, epilogue="tmastore")
    assert case.case_id.endswith(".overlap.tmastore") and FAMILY.parse(case.case_id) == case
    assert FAMILY.template_params(case)["epilogue_tma"] == "true"
    expected = {k.mnemonic: k.count for _, k in FAMILY.sass_expectation(case).kernels}
    assert expected["UTMASTG.3D"] == 2  # a store per 64-column panel of head dim 128
    plain = {k.mnemonic for _, k in FAMILY.sass_expectation(replace(case, epilogue="regs")).kernels}
    assert "UTMASTG.3D" not in plain
    with pytest.raises(IllegalShapeError, match="a CTA of one tile"):
        attention("bf16", 4096, 128, stages=3, overlap=True, persistent=True, epilogue="tmastore")


def test_the_template_takes_the_scale_exactly_and_the_wgmma_forms():
    case = parse_case_id(CASES[4])
    params = FAMILY.template_params(case)
    assert float.fromhex(params["scale_log2"].rstrip("f")) == float(np.float32(LOG2E / 16))
    assert params["qk_instruction"].endswith("m64n64k16.f32.bf16.bf16")  # S: a block of 64 keys
    assert params["pv_instruction"].endswith("m64n256k16.f32.bf16.bf16")  # O: the head dim
    assert params["pv_desc_b_operand"] == 128 + 4  # after O's 128 registers and P's four


def test_the_check_problem_wraps_the_ring_and_has_two_tiles():
    from harness.anchors import has_probe

    for case in filter(has_probe, FAMILY.cases()):  # cuDNN's cases have no ring (their check: the next test)
        small = check_case(case)
        assert small.seq // small.bn >= 2 * case.stages + 1 and small.tiles >= 2
        assert small.seq % case.bm == 0 and small.seq % case.bn == 0
        assert (small.seq // case.bm) % case.cluster == 0  # a cluster's tiles are of one head
    # the fa3 suite's 3-stage ring: 7 blocks of 128 keys, 8 on a cluster of two (an even number of tiles per head)
    overlapped = attention("bf16", 4096, 128, stages=3, overlap=True)
    assert check_case(overlapped).seq == 7 * 128
    assert check_case(replace(overlapped, cluster=2)).seq == 8 * 128


def test_decode_reads_two_halves_per_word_the_lower_first():
    case = parse_case_id(CASES[2])
    words = np.array([0x3C00 | (0xC000 << 16)], dtype=np.uint32)  # f16 1.0 in the lower half, -2.0 in the upper
    assert list(FAMILY.decode(case, words)) == [1.0, -2.0]


def test_cudnn_sees_the_family_layout():
    """cuDNN's [batch, heads, seq, D] tensors over [batch, seq, heads, D] memory: the strides of that transpose."""
    from harness.anchors.cudnn import bshd_strides

    memory = np.zeros((2, 48, 3, 64), dtype=np.uint16)
    view = memory.transpose(0, 2, 1, 3)
    assert bshd_strides(2, 48, 3, 64) == [s // 2 for s in view.strides]


def test_without_the_frontend_the_plan_says_there_is_no_anchor(monkeypatch):
    import harness.anchors.cudnn as cudnn

    monkeypatch.setattr(cudnn, "available", lambda: False)
    (spec,) = FAMILY.plan(parse_case_id(CASES[0]))
    assert spec.anchor is None and "no anchor" in spec.notes and "hopper-bench[attention]" in spec.notes


def test_the_model_recovers_k_and_b_and_carries_them_to_another_run():
    """Cycles made from known K and b per schedule (max(T, X) + K + b / n, with T and X computed here from the tile:
    T = 4 BM BN D / 4096, X the two warps' BN / 2 + 2 ex2 a block at 10.75 cycles each, beside wgmma) are fitted
    back; another run's rows are predicted with them; the prior is the three times, K the counted SIMT work."""
    import pandas as pd

    model = FAMILY.model
    truth = {"in series": (850.0, 3000.0), "overlap": (540.0, 9000.0)}

    def rows(cases):
        out = []
        for case in cases:
            k, b = truth["overlap" if case.overlap else "in series"]
            tensor = 4 * case.bm * case.bn * case.head_dim / 4096
            mufu = 2 * (case.bn / 2 + 2) * 10.75
            blocks = (case.seq + case.bm) / 2 / case.bn if case.causal else case.seq / case.bn
            out.append({"case_id": case.case_id, "metric": "cycles_per_kblock",
                        "value": max(tensor, mufu) + k + b / blocks})
        return pd.DataFrame(out)

    ours = [case for case in FAMILY.cases() if isinstance(case, AttentionCase) and case.dtype == "bf16"
            and not case.turns and not case.paired and case.cluster == 1]
    report = model.fit(rows(ours), "GPU A", "run 1")
    for name, (k, b) in truth.items():
        assert report.fits[name] == pytest.approx((k, b), rel=1e-6)
    assert report.residuals.relative.abs().max() < 1e-9
    other = [case for case in FAMILY.cases() if isinstance(case, AttentionCase) and case.dtype == "f16"]
    moved = model.transfer(report, rows(other), "GPU B", "run 1")
    assert len(moved.rows) == len(other) and moved.residuals.relative.abs().max() < 1e-9
    case = other[0]
    assert case.head_dim == 128 and case.bn == 128
    # head dim 128, 128 x 128: 2048 cycles of wgmma over two warps' 66 ex2 beside it (1419); K0 two warps' 3 x 64
    # + 10 + 64 FP32 instructions at 1.10 and 32 converts at 2.09
    k0 = 2 * ((3 * 64 + 10 + 64) * 1.10 + 32 * 2.09)
    assert model.predict(case, "cycles_per_kblock", model.prior("H100")) == pytest.approx(2048 + k0)
    assert model.predict(case, "throughput_tflops", {}) is None


ANCHORS = ["cudnn.sdpa.bf16.4x4096x16x128", "cudnn.sdpa.bf16.4x4096x16x128.causal", "cudnn.sdpa.f16.4x4096x16x128",
           "cudnn.sdpa.bf16.16x1024x32x64.causal", "cudnn.sdpa.bf16.4x4096x8x256"]


@pytest.mark.parametrize("case_id", ANCHORS)
@pytest.mark.parametrize("block", [16, 64, 128])
def test_cudnns_case_is_held_to_the_bound_of_a_fused_kernel_of_any_key_block(case_id, block):
    """cuDNN's case is checked against the same f64 reference; its key block is not known, so the bound takes the
    smallest (16): the arithmetic of a fused kernel with blocks of 16, 64 or 128 keys passes it, a dropped block or
    a wrong scale does not."""
    case = parse_case_id(case_id)
    inputs = FAMILY.inputs(case, np.random.default_rng(5))
    o, tolerance = check_reference(case, inputs.values)
    assert o.shape == (1, 384, 2, case.head_dim)
    error = np.abs(emulate(case, inputs.values, block=block) - o)
    assert (error <= tolerance).all(), f"worst {np.max(error / tolerance):.2f} of the bound"
    assert (np.abs(emulate(case, inputs.values, block=block, drop=1) - o) > tolerance).mean() > 0.3
    wrong_scale = np.float32(LOG2E / case.head_dim)
    assert (np.abs(emulate(case, inputs.values, block=block, scale=wrong_scale) - o) > tolerance).mean() > 0.5


def test_cudnns_own_case_is_an_anchor_listed_in_every_suite_beside_its_kernels():
    """cudnn.sdpa.<problem> is an anchor (harness/anchors): no template, its checks and plan launch its call (and
    the measured problem's verification), timed by WholeKernel as a kernel's rounds time it; every attention suite
    lists it once for each problem its kernels run, as the gemm suites list cublas.*."""
    from harness.anchors import KERNEL, VERIFY, has_probe
    from harness.families.attention.cases import CudnnCase, cudnn
    from harness.registry import probe_source

    case = parse_case_id("cudnn.sdpa.bf16.4x4096x16x128.causal")
    assert isinstance(case, CudnnCase) and not has_probe(case) and case.family == "attention"
    kernel = parse_case_id("attention.bf16.4x4096x16x128.causal.tile128x128.s2.wg2.setmaxnreg")
    assert cudnn(kernel) == case and case.flops == kernel.flops and case.scale == kernel.scale
    assert case.columns()["instruction"] == "sdpa" and case.columns()["m"] == 4096
    with pytest.raises(SpecError, match="library call"):
        probe_source(case)
    for name, suite in FAMILY.suites().items():
        cases = suite.make()
        kernels = [c for c in cases if has_probe(c)]
        anchors = [c for c in cases if not has_probe(c)]
        assert kernels and {c.case_id for c in anchors} == {cudnn(c).case_id for c in kernels}, name
        assert len(anchors) == len({c.case_id for c in anchors}), name
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    checks = FAMILY.checks(case, inputs)
    assert [c.kernel for c in checks] == [KERNEL, VERIFY] and checks[0].iters == 0
    (spec,) = FAMILY.plan(case)
    assert (spec.kernel, spec.grid, spec.anchor, spec.records, spec.energy) == (KERNEL, 1, None, False, True)
    from harness.families.attention.model import AttentionModel

    assert AttentionModel().predict(case, "cycles_per_kblock", None) is None


@pytest.mark.parametrize("bad", ["cudnn.sdpa.bf16.4x4096x16x96", "cudnn.sdpa.e4m3.4x4096x16x128",
                                 "cudnn.sdpa.bf16.4x4000x16x128", "cudnn.sdpa.bf16.04x4096x16x128",
                                 "cudnn.bf16.4x4096x16x128", "cudnn.sdpa.bf16.4x4096x16x128.tile128x128.s2.wg2"])
def test_a_bad_cudnn_id_is_refused_in_one_line(bad):
    with pytest.raises((SpecError, IllegalShapeError)) as refused:
        parse_case_id(bad)
    assert "\n" not in str(refused.value)


def test_the_report_sets_cudnns_own_case_beside_its_kernels_and_lists_no_row_for_it():
    import pandas as pd

    from harness.families.attention.figures import table

    kernel = "attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg"
    other = "attention.bf16.4x4096x16x128.causal.tile128x128.s2.wg2.setmaxnreg"  # its problem's cuDNN not measured
    rows = [(kernel, "throughput_tflops", 500.0), (kernel, "library_fraction", 0.8), (other, "throughput_tflops", 300.0),
            ("cudnn.sdpa.bf16.4x4096x16x128", "throughput_tflops", 610.0)]
    frame = pd.DataFrame([{"case_id": c, "metric": m, "value": v, "spread": 0.01} for c, m, v in rows])
    out = table(frame).set_index("case_id")
    assert list(out.index) == [kernel, other]
    assert out.at[kernel, "cuDNN alone TFLOPS"] == 610.0 and out.at[kernel, "cuDNN TFLOPS"] == 625.0
    assert out.at[other, "cuDNN alone TFLOPS"] is None or np.isnan(out.at[other, "cuDNN alone TFLOPS"])


def test_the_report_shows_cudnns_ratio_as_the_rounds_p10_and_p90(tmp_path):
    """Issue 46: beside 'of cuDNN' (the rounds' median), the attention tables (the run's report and the site's
    findings) show the 10th and 90th percentiles of the ratio over the rounds, read from the per-round ratios stored
    as the measurement's samples, as the GEMM tables do; not the interquartile range over the median."""
    from types import SimpleNamespace

    from helpers import fake_device

    from harness.analysis import run_rows
    from harness.analysis.report import ReportContext
    from harness.build.sass import SassCheck
    from harness.db.frames import results
    from harness.db.store import Store
    from harness.measure.measurement import CaseResult, Metric
    from harness.provenance import Provenance
    from harness.published import shipped

    # uneven rounds: their p10/p90 are not the median +- half the IQR
    rounds = {"attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg": [0.81, 0.84, 0.85, 0.86, 0.95, 0.70, 0.88],
              "attention.bf16.4x8192x16x128.tile128x128.s2.wg2.setmaxnreg": [0.90, 0.91, 0.99, 0.92, 0.60]}
    store = Store.open(str(tmp_path / "attention.db"), create=True, references=shipped())
    run_id = store.start_run(fake_device(), Provenance("bench run --suite attention", "testhost", "abc123", False,
                                                       "0.1.0", "3.12", "14.2", "13.0"), "attention", None)
    for case_id, ratios in rounds.items():
        metrics = [Metric("throughput_tflops", "TFLOPS", 500.0 * np.ones(len(ratios)), {"problem": "measured"}),
                   Metric("library_fraction", "ratio", np.array(ratios), {"problem": "measured"})]
        store.record_case(run_id, CaseResult(parse_case_id(case_id), None, SassCheck(True, "ok"), True, None, 0.0,
                                             "normal(0,1)", metrics))
    store.finish_run(run_id, "complete")
    expected = {c: (np.percentile(r, 10), np.percentile(r, 90)) for c, r in rounds.items()}
    assert all(abs(lo - (np.median(r) - (np.percentile(r, 75) - np.percentile(r, 25)) / 2)) > 0.005
               for (lo, _), r in zip(expected.values(), rounds.values()))  # the two spreads differ here
    ctx = ReportContext(store, run_id, "NVIDIA H100 80GB HBM3", tmp_path, run_rows.measured(store, run_id),
                        None)
    (heading, note, table), = FAMILY.figures(ctx)
    sections = FAMILY.findings(SimpleNamespace(store=store, latest=results(store, run_id=run_id, valid=True),
                                               directory=tmp_path))
    (_, said, rows), = sections
    for text, shown in ((note, table), (said, rows.assign(case_id=table.case_id))):  # the findings' rows: the table's
        assert "spread of the ratio" not in shown and "interquartile" not in " ".join(text)
        assert "10th and 90th percentiles of the ratio over the rounds" in " ".join(text)
        found = {c: (lo, hi) for c, lo, hi in zip(table.case_id, shown["p10 of the ratio"], shown["p90 of the ratio"])}
        assert sorted(found) == sorted(expected)
        for case_id, bounds in expected.items():
            assert found[case_id] == pytest.approx(bounds, abs=5e-4)  # the table is rounded to 3 places
            assert shown.set_index(table.case_id).at[case_id, "of cuDNN"] == pytest.approx(np.median(rounds[case_id]),
                                                                                          abs=5e-4)


def test_cudnns_cases_run_on_the_simulated_gpu_into_a_database_with_no_build(tmp_path, monkeypatch):
    """The simulated GPU answers cuDNN's cases as the worker answers any case (the metrics the plan declares), and
    the run stores them with no build row, under their own ids, as the attention family's."""
    from harness.anchors import has_probe
    from harness.db.store import Store
    from harness.orchestration.fakegpu import simulated_device
    from harness.orchestration.run import RunPlan, execute
    from harness.orchestration.runner import declared_metrics
    from harness.orchestration.worker import Worker

    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    chosen = [case for case in FAMILY.suites()["attention-quick"].make() if not has_probe(case)]
    assert [c.case_id for c in chosen] == ["cudnn.sdpa.bf16.4x4096x16x128", "cudnn.sdpa.bf16.4x4096x16x128.causal"]
    db = str(tmp_path / "r.db")
    with Worker(0) as worker:
        worker.start()
        outcome = execute(RunPlan("attention-quick", None, chosen), db, worker)
    assert outcome.status == "complete" and all(r.valid for r in outcome.results)
    with Store.open(db, read_only=True) as store:
        stored = store.query("SELECT r.case_id, r.family, r.metric, r.unit, r.instruction, m.build_id FROM results r "
                             "JOIN measurement_rows m ON m.id = r.measurement_id")
    assert set(stored.family) == {"attention"} and stored.build_id.isna().all() and set(stored.instruction) == {"sdpa"}
    for case in chosen:
        rows = stored[stored.case_id == case.case_id]
        assert set(zip(rows.metric, rows.unit)) == set(declared_metrics(case, simulated_device()))
        assert "throughput_tflops" in set(rows.metric) and "peak_fraction" not in set(rows.metric)


# FA3's order as written (S, P V, wait 1, softmax, wait 0) and what ptxas 13.0 made of it: the wait for P V issued
# above the exponentials (the SASS of runs 121-122's `.overlap`); and the lookahead walk's order, where the next S
# holds the exponentials above the wait that retires P V
HOISTED = ["HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], R24, gsb0", "HGMMA.64x128x16.F32.BF16 R88, R156, "
           "gdesc[UR16].tnspB, R88, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x1", "SHFL.BFLY PT, R9, R8, 0x1, 0x1f",
           "WARPGROUP.DEPBAR.LE gsb0, 0x0"] + ["MUFU.EX2 R24, R24"] * 66
LOOKAHEAD = ["HGMMA.64x128x16.F32.BF16 R88, R156, gdesc[UR16].tnspB, R88, gsb0", "BAR.ARV R10, 0x100",
             "WARPGROUP.DEPBAR.LE gsb0, 0x1"] + ["MUFU.EX2 R24, R24"] * 66 + [
             "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR16], RZ, !UPT, gsb0", "WARPGROUP.DEPBAR.LE gsb0, 0x1",
             "MUFU.EX2 R7, R7"]


def test_an_exponential_counts_only_while_a_p_v_is_in_flight():
    under_pv = InFlight("MUFU.EX2", ".tnspB", 66)
    assert issued_in_flight(HOISTED, under_pv) == 0
    # the S issued before the P V is the group the first wait retires: the P V stays in flight under the softmax
    assert issued_in_flight(HOISTED[:3] + HOISTED[5:], under_pv) == 66
    # the next S's issue keeps the P V in flight; the wait after it retires the P V, so the last MUFU is not under it
    assert issued_in_flight(LOOKAHEAD, under_pv) == 66
    assert issued_in_flight(["@P0 " + ins for ins in LOOKAHEAD], under_pv) == 66  # guarded alike
    assert issued_in_flight(LOOKAHEAD, InFlight("MUFU.EX2", ".tnspA", 1)) == 0  # no such group


def test_the_overlapped_kernel_issues_its_softmax_under_p_v_and_the_serial_one_does_not(compile_cache):
    from harness.build.compile import compile_many
    from harness.build.render import render
    from harness.build.sass import check, disassemble

    family = FAMILIES["attention"]
    serial = parse_case_id("attention.bf16.4x4096x16x128.causal.tile128x128.s3.wg2.setmaxnreg")
    overlapped = parse_case_id("attention.bf16.4x4096x16x128.causal.tile128x128.s3.wg2.setmaxnreg.turns.overlap")
    builds = compile_many([render(case, family) for case in (serial, overlapped)])
    under_pv = InFlight("MUFU.EX2", ".tnspB", 1)
    for case, least in ((serial, 0), (overlapped, 2 * (overlapped.bn // 2 + 2))):
        sass = disassemble(builds[case.case_id].cubin_path)["probe_attention"]
        issued = issued_in_flight(sass, under_pv)
        assert issued >= least and (least or issued == 0), (case.case_id, issued)
        assert check(builds[case.case_id], family.sass_expectation(case)).ok


def test_the_paired_schedule_is_its_own_case_beside_the_overlap_in_fa3s_suite():
    paired = parse_case_id("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.turns.paired")
    assert (paired.paired, paired.overlap, paired.turns) == (True, False, True)
    assert paired.case_id.endswith(".turns.paired")
    ids = {case.case_id for case in FAMILY.suites()["attention-fa3"].make()}
    # every overlapped case of the suite has its paired twin, with and without turns, on the same ring (a cluster's
    # twin is its own case without the cluster)
    for case_id in [i for i in ids if i.endswith(".overlap") and ".cluster" not in i]:
        assert case_id.replace(".overlap", ".paired") in ids
        assert case_id.replace(".overlap", ".turns.paired").replace(".turns.turns", ".turns") in ids


def test_fa3s_suite_runs_each_non_causal_overlapped_case_on_a_cluster_of_two_beside_it():
    cases = FAMILY.suites()["attention-fa3"].make()
    ids = {case.case_id for case in cases}
    clustered = [case for case in cases if getattr(case, "cluster", 1) > 1]
    expected = {f"attention.bf16.{16384 // seq}x{seq}x{2048 // dim}x{dim}.tile128x128.s3.wg2.setmaxnreg.cluster2{turns}"
                ".overlap" for dim in (64, 128) for seq in (4096, 8192, 16384) for turns in ("", ".turns")}
    assert {case.case_id for case in clustered} == expected
    for case in clustered:  # each beside its twin without the cluster, in the same run
        assert case.case_id.replace(".cluster2", "") in ids


@pytest.mark.parametrize("case_id", [
    "attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.cluster2.turns.overlap",
    "attention.bf16.4x4096x32x64.tile128x128.s3.wg2.setmaxnreg.cluster2.overlap"])
def test_a_cluster_kernel_multicasts_k_and_v_and_loads_q_alone(case_id, compile_cache):
    """ptxas's SASS of a cluster case: K's and V's panels as UTMALDG.3D.MULTICAST, Q's as plain UTMALDG.3D, no spill
    and no serialization note; and the family's expectation of it holds, and fails the kernel without a cluster."""
    import collections
    import re

    from harness.build.compile import compile_many
    from harness.build.render import render
    from harness.build.sass import check, disassemble

    case = parse_case_id(case_id)
    alone = replace(case, cluster=1)
    builds = compile_many([render(c, FAMILY) for c in (case, alone)])
    panels = case.head_dim // 64
    for c, multicast, plain in ((case, 2 * panels, panels), (alone, 0, 3 * panels)):
        sass = disassemble(builds[c.case_id].cubin_path)["probe_attention"]
        ops = collections.Counter(re.sub(r"^@!?U?P\w+ ", "", line.strip()).split(" ")[0] for line in sass)
        assert (ops["UTMALDG.3D.MULTICAST"], ops["UTMALDG.3D"]) == (multicast, plain), c.case_id
        assert check(builds[c.case_id], FAMILY.sass_expectation(c)).ok, c.case_id
        build = builds[c.case_id]
        assert build.spill_bytes("probe_attention") == 0 and not re.search(r"C75\d\d", build.log)
    assert not check(builds[alone.case_id], FAMILY.sass_expectation(case)).ok  # the expectation tells them apart


def test_an_older_runs_id_this_version_refuses_gets_no_prediction_not_an_error():
    """Run 121 holds head dim 256 `.overlap` ids on two stages, which the overlap now refuses (three slots): the
    site's model column gives them no prediction instead of stopping the site."""
    import pandas as pd

    from harness.analysis.paper_verdicts import model_predictions

    refused = "attention.bf16.16x1024x8x256.causal.tile128x64.s2.wg2.setmaxnreg.overlap"
    with pytest.raises(IllegalShapeError):
        parse_case_id(refused)
    frame = pd.DataFrame({"family": ["attention", "attention"], "metric": ["cycles_per_kblock"] * 2,
                          "case_id": [refused, "attention.bf16.4x4096x16x128.tile128x128.s2.wg2.setmaxnreg"],
                          "sm_count": [132, 132], "sm_clock_mhz": [1500.0, 1500.0]})
    refused_value, kept = model_predictions(frame, "NVIDIA H100 80GB HBM3")
    assert np.isnan(refused_value) and kept > 0


def test_a_persistent_case_names_itself_walks_the_sms_and_checks_two_ctas_over_many_tiles():
    from harness.families.attention.problem import check_grid, grid

    case = parse_case_id("attention.bf16.4x4096x16x128.tile128x128.s3.wg2.setmaxnreg.persistent.turns.overlap")
    assert case.persistent and case.case_id.endswith(".setmaxnreg.persistent.turns.overlap")
    assert (grid(case, 132), grid(case, 114)) == (132, 114) and case.tiles == 2048  # 4 x 16 heads x 32 query tiles
    twin = parse_case_id(case.case_id.replace(".persistent", ""))
    assert grid(twin, 132) == 2048
    assert check_grid(case) == 2 < check_case(case).tiles  # each CTA reuses Q's buffer tile after tile
    for bad in (case.case_id.replace(".overlap", ".paired"), case.case_id.replace(".turns.overlap", ""),
                case.case_id.replace(".persistent", ".persistent.cluster2")):
        with pytest.raises(IllegalShapeError, match="persistent"):
            parse_case_id(bad)
    ids = {c.case_id for c in FAMILY.suites()["attention-persistent"].make()}
    assert case.case_id in ids and twin.case_id in ids
