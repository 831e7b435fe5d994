"""The gemm family on the CPU: ids, what it refuses and why, the check problem's exact values, the worklog's
mapping and verdicts, and the planner's arithmetic."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest

from harness.errors import SpecError
from harness.families.base import PaperFigure
from harness.families.gemm import FAMILY
from harness.families.gemm import cases as C
from harness.families.gemm import configs, suite_cases
from harness.families.gemm.cases import LibraryCase
from harness.families.gemm.ids import parse
from harness.families.gemm.worklog import worklog_verdict
from harness.families.gemm.model import (
    feed_cycles,
    issue_stall,
    kblock_cycles,
    mean_value,
    predict_case,
    wgmma_per_kblock,
)
from harness.families.gemm.params import PRIOR, Params
from harness.families.gemm.traffic import miss_cycles, miss_fraction
from harness.families.gemm.problem import check_problem, to_bits
from harness.families.pipeline import GROUP
from harness.verdicts import AGREES, CLOCK_NOT_PRINTED, DISAGREES


def test_every_id_round_trips():
    for case in FAMILY.cases():
        assert FAMILY.parse(case.case_id) == case


@pytest.mark.parametrize("case_id, why", [
    # 256 f32 accumulators per thread: ptxas serializes the wgmma (the worklog's step 5a, 123 TFLOPS)
    ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg1.cluster1.grid-row.regs", "C7511"),
    # 4 x 48 KiB of stages + the 64 KiB output tile + 1 KiB alignment > 227 KiB a block may have
    ("gemm.f16.8192x8192x8192.tile128x256x64.s4.wg2.setmaxnreg.cluster1.grid-row.tmastore", "shared memory"),
    ("gemm.f16.8192x8192x8100.tile128x256x64.s3.wg2.cluster1.grid-row.regs", "whole number"),
    ("gemm.f16.128x8192x8192.tile128x256x64.s3.wg2.cluster2.grid-row.regs", "whole number"),  # a pair along M
    ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg1.setmaxnreg.cluster1.grid-row.regs", "setmaxnreg"),
    ("cublas.f32.8192x8192x8192", "dtype"),
    # a cluster shares B among 1, 2 or 4 CTAs; 4 needs M in whole multiples of 4 tiles
    ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster8.persistent-grouped.tmastore", "cluster 8"),
    ("gemm.f16.1664x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster4.persistent-grouped.tmastore", "whole number"),
    # a pipelined promotion drains its tensor cores every 2 or 4 k-blocks (8 spills); groups are its alone, and fp8's
    ("gemm.e4m3.4096x4096x4096.tile128x128x128.s6.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pipelined-g8",
     "group of 8"),
    ("gemm.e4m3.4096x4096x4096.tile128x128x128.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.overlap-g2",
     "group of 2"),
    ("gemm.f16.4096x4096x4096.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pipelined",
     "fp8's"),
])
def test_a_configuration_that_cannot_be_built_is_refused_with_its_reason(case_id, why):
    with pytest.raises(SpecError, match=why):
        FAMILY.parse(case_id)


def test_shared_memory_of_the_best_configuration():
    case = FAMILY.parse("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore")
    assert case.smem_bytes() == 3 * (128 + 256) * 64 * 2 + 128 * 256 * 2 + 1024 <= 227 * 1024


def test_bf16_rounds_to_nearest_even_as_cvt_rn_does():
    values = np.array([1.0, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2.5, 65504.0], dtype=np.float32)
    assert to_bits(values, "bf16").tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x4780]
    assert (to_bits(values, "f16") == values.astype(np.float16).view(np.uint16)).all()


def test_the_check_problem_is_exact_and_wraps_the_ring():
    case = FAMILY.parse("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore")
    m, n, k = check_problem(case)
    assert k // case.bk == 2 * case.stages + 3 and m // case.bm // case.cluster > GROUP
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    check = FAMILY.checks(case, inputs)[0]
    # every sum of products (|a|, |b| <= 2) is an integer exact in f32, rounded once to f16 as the kernel does
    assert 4 * k < 2 ** 24
    c = check.expected.astype(np.uint32).view(np.uint16).view(np.float16).reshape(m, n)
    assert (c == (inputs.values["A"] @ inputs.values["B"].T).astype(np.float16)).all()


def test_worklog_steps_map_to_our_configurations():
    figure = PaperFigure("hgemm worklog step 10", 4096, 4096, 4096, "f16", "f32", None, False, "throughput_tflops")
    assert FAMILY.paper_case(figure) == (
        "gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore", "throughput_tflops")
    step7 = FAMILY.paper_case(PaperFigure("hgemm worklog step 7", 4096, 4096, 4096, "f16", "f32", None, False,
                                          "throughput_tflops"))
    assert step7[0] == configs.pipeline("f16", (4096,) * 3, **configs.LADDER["6b"]).case_id
    assert "C7511" in FAMILY.paper_case(PaperFigure("hgemm worklog step 5a", 4096, 4096, 4096, "f16", "f32", None,
                                                    False, "throughput_tflops"))
    # its size is stated (the seed's section 2.11): at any other, a reason, not a case
    assert "4096^3" in FAMILY.paper_case(PaperFigure("hgemm worklog step 10", 8192, 8192, 8192, "f16", "f32", None,
                                                     False, "throughput_tflops"))
    assert FAMILY.paper_case(PaperFigure("hgemm worklog cublas", 4096, 4096, 4096, "f16", "f32", None, False,
                                         "throughput_tflops")) == ("cublas.f16.4096x4096x4096", "throughput_tflops")
    assert FAMILY.paper_case(PaperFigure("wgmma.mma_async", 64, 64, 16, "f16", "f32", "SS", False, "throughput")) is None


def test_worklog_verdicts():
    # 677 TFLOPS at 1349 MHz on 132 SMs: the worklog's 758 needs 1510 MHz at that work per cycle, possible
    verdict, why = worklog_verdict(677.0, 758.0, 1349.0, 132, 1980.0)
    assert verdict == CLOCK_NOT_PRINTED and "1510 MHz" in why
    assert worklog_verdict(677.0, 758.0, 1349.0, 132, 1500.0)[0] == DISAGREES  # a GPU whose maximum is below it
    assert worklog_verdict(750.0, 758.0, 1349.0, 132, 1980.0)[0] == AGREES
    assert worklog_verdict(152.0, 317.0, 1445.0, 132, 1980.0)[0] == DISAGREES  # would need 3014 MHz
    assert worklog_verdict(546.0, 400.0, 1258.0, 132, 1980.0)[0] == DISAGREES  # ours above it


def _params() -> Params:
    return Params("test", 132, 4096.0, **PRIOR, hbm_gbps=3000.0, launch_cycles=0.0, clock_mhz=1500.0)


def test_more_stages_never_predict_less_and_a_deep_ring_reaches_the_tensor_cores():
    rates = [predict_case(configs.pipeline("f16", (8192,) * 3, **dict(configs.BEST, stages=s, epilogue="regs")),
                          _params()) for s in (1, 2, 3, 4)]
    assert all(a.flops_per_cycle_sm <= b.flops_per_cycle_sm for a, b in zip(rates, rates[1:]))
    assert rates[0].bound == "latency"
    deep = rates[-1]
    assert deep.t_kblock == pytest.approx(2 * 128 * 256 * 64 / 4096 + PRIOR["consumer_overhead_2"], rel=0.02)


def test_a_skinny_problem_is_bound_by_the_memory():
    # 128 x 8192 x 8192 in 64x128 tiles (128 of them): B (128 MiB) is read once for 17 GFLOP, 45 us at 3000 GB/s,
    # more than the tiles' copies take; the k-blocks' misses then queue at the memory (a third more than the k-block
    # takes without the queue), and the memory's queue holds them a little under its bandwidth
    config = dict(configs.BEST, bm=64, bn=128, stages=5, consumers=1, rebalance=False, cluster=1)
    case = configs.pipeline("f16", (128, 8192, 8192), **config)
    prediction = predict_case(case, _params())
    unqueued = predict_case(case, Params(**{**_params().__dict__, "memory_queue_cycles": 0.0}))
    assert prediction.t_kblock > 1.3 * unqueued.t_kblock
    seconds = 2 * 128 * 8192 * 8192 / (prediction.flops_per_cycle_sm * 132 * 1500e6)
    memory = (128 * 8192 + 8192 * 8192 + 128 * 8192) * 2 / 3000e9
    assert memory <= seconds < 1.25 * memory
    flat = Params(**{**_params().__dict__, "memory_queue_cycles": 0.0})  # no queue: the bytes' time exactly
    seconds = 2 * 128 * 8192 * 8192 / (predict_case(configs.pipeline("f16", (128, 8192, 8192), **config), flat)
                                       .flops_per_cycle_sm * 132 * 1500e6)
    assert seconds == pytest.approx(memory, rel=1e-6)


def test_wave_quantization():
    # 2048 tiles of 128x256 on 132 SMs: 16 waves where 15.5 would do
    prediction = predict_case(configs.pipeline("f16", (8192,) * 3, **configs.BEST), _params())
    assert prediction.waves == 16


def test_the_mean_value_queue_has_littles_law_and_the_bottleneck_as_its_limits():
    # one copy in flight: the round trip plus its service, nothing overlaps
    assert mean_value(1, 800.0, (400.0,)) == pytest.approx(1200.0)
    # few copies: no better than Little's law (N copies per round trip), never better than the feed
    for n in (2, 3, 5):
        period = mean_value(n, 800.0, (400.0,))
        assert period >= max((800.0 + 400.0) / n, 400.0) - 1e-9
    # many copies: the feed alone sets the period (the bottleneck), and adding copies never slows it
    periods = [mean_value(n, 800.0, (400.0,)) for n in range(1, 40)]
    assert all(a >= b for a, b in pairwise(periods))
    assert periods[-1] == pytest.approx(400.0, rel=1e-3)


def test_the_feed_binds_a_small_tile_with_a_deep_ring_and_counts_what_multicast_lands():
    # 64x128 with 7 stages: 24 KiB land per k-block (A 8, all of B 16 with or without multicast), more than the
    # 256 cycles of wgmma take at the prior's feed; the k-block then takes the feed's time, not the tensor cores'
    config = dict(configs.BEST, bm=64, bn=128, stages=7, consumers=1, rebalance=False, epilogue="regs")
    t, bound = kblock_cycles(configs.pipeline("f16", (8192,) * 3, **config), _params())
    assert bound == "L2 feed"
    # (the memory's queue adds a few percent: A's panels are read from both sides of the L2)
    assert 24 * 1024 / PRIOR["feed_bytes_per_cycle"] <= t <= 1.05 * 24 * 1024 / PRIOR["feed_bytes_per_cycle"]
    alone = configs.pipeline("f16", (8192,) * 3, **dict(config, cluster=1))
    assert feed_cycles(alone, _params()) == feed_cycles(configs.pipeline("f16", (8192,) * 3, **config), _params())


def test_the_issue_stall_grows_with_the_wgmma_a_consumer_issues():
    # 256x128 over two consumers: 8 m64n128 wgmma each per k-block; 128x256: 4 m64n256; the same tensor
    # time, so the one with more (smaller) wgmma stalls longer before it gives the previous slot back
    tall = configs.pipeline("f16", (8192,) * 3, **dict(configs.BEST, bm=256, bn=128, stages=2))
    wide = configs.pipeline("f16", (8192,) * 3, **dict(configs.BEST, bm=128, bn=256, stages=2))
    assert (wgmma_per_kblock(tall), wgmma_per_kblock(wide)) == (8, 4)
    assert issue_stall(tall, _params()) > issue_stall(wide, _params()) >= 0.0
    # a tensor pipe that takes every wgmma stalls nothing
    deep = Params(**{**_params().__dict__, "wgmma_queue": 8.0})
    assert issue_stall(tall, deep) == 0.0
    assert kblock_cycles(tall, _params())[0] > kblock_cycles(wide, _params())[0]


def test_the_share_of_a_wave_that_misses_the_l2_is_the_rows_and_columns_it_spans():
    # M = 128, N = 8192 in 128x128 tiles: one wave of 64 tiles shares one A panel and reads 64 B panels,
    # each once: (128 + 64 x 128) rows of a k-block fresh of the 64 x (128 + 128) the CTAs read, the A panel
    # fetched into both sides of the L2 (read by 16 groups of 4 CTAs, each on either side: 2 - 2^-15 sides expected)
    skinny = configs.pipeline("f16", (128, 8192, 8192), **dict(configs.BEST, bn=128, cluster=1))
    assert miss_fraction(skinny, 132) == pytest.approx((128 * (2 - 2.0 ** -15) + 64 * 128) / (64 * 256))
    # 16384^3 in 128x256 tiles, clusters of 2 in row order: 66 pairs in flight span 2 rows of pairs (512 A
    # rows) and all 64 columns (16384 B rows) of the 66 x 512 rows they read, each at least once
    row = configs.pipeline("f16", (16384,) * 3, **dict(configs.BEST, order="row"))
    assert (512 + 16384) / (66 * 512) < miss_fraction(row, 132) < 2 * (512 + 16384) / (66 * 512)
    # the grouped order (8 rows of pairs at a time) spans fewer columns: under half of that (a third counted once
    # per panel; its few panels are each read from both sides of the L2, the row order's B panels mostly from one)
    grouped = configs.pipeline("f16", (16384,) * 3, **configs.BEST)
    assert miss_fraction(grouped, 132) < miss_fraction(row, 132) / 2


def test_the_misses_wait_on_the_memory_only_as_it_fills():
    # a copy's miss waits f L_q rho / (1 - rho), rho the bandwidth the wave's misses take over the memory's
    row = configs.pipeline("f16", (16384,) * 3, **dict(configs.BEST, order="row"))
    p = _params()
    f, read = miss_fraction(row, 132), (128 + 256 / 2) * 64 * 2
    period, clock = 1200.0, 1500.0
    rho = f * read * 132 / period / (p.hbm_gbps * 1e9 / (clock * 1e6))
    assert miss_cycles(row, p, period, clock) == pytest.approx(f * p.memory_queue_cycles * rho / (1 - rho))
    idle = Params(**{**p.__dict__, "hbm_gbps": 1e9})
    assert miss_cycles(row, idle, period, clock) == pytest.approx(0.0, abs=1e-3)
    # the row order's k-block waits on the memory, the grouped order's much less; with no queue they tie
    grouped = configs.pipeline("f16", (16384,) * 3, **configs.BEST)
    assert kblock_cycles(row, p)[0] > kblock_cycles(grouped, p)[0]
    flat = Params(**{**p.__dict__, "memory_queue_cycles": 0.0})
    assert kblock_cycles(row, flat)[0] == pytest.approx(kblock_cycles(grouped, flat)[0])


@pytest.mark.parametrize("gpu, gbps, clock, row_over_grouped, skinny_clock, skinny_kblock", [
    # measured cycles a k-block, runs of record 65 (H100) and 66 (H200): 16384^3 128x256 s3 cluster 2 TMA
    # store in row order 1258.6 and grouped 1044.3 (H100), 1074.0 and 1043.2 (H200); M = 128 128x128 s3,
    # 1019.3-1046.1 at 1740-1796 MHz (H100), 905.7-909.1 at 1455-1483 MHz (H200)
    ("H100", 3084.0, 1306.0, 1258.6 / 1044.3, 1770.0, 1032.7),
    ("H200", 4416.0, 1243.0, 1074.0 / 1043.2, 1470.0, 907.4),
])
def test_the_prior_with_each_gpus_memory_waits_as_measured(gpu, gbps, clock, row_over_grouped, skinny_clock,
                                                             skinny_kblock):
    # the prior is the H100's fit (to run 65: the H100 row is in-sample, a check of the fit; the H200 row is a
    # prediction of run 66); only the memory's bandwidth (the datasheet's x 0.92) differs by GPU
    p = Params(gpu, 132, 4096.0, **PRIOR, hbm_gbps=gbps, launch_cycles=0.0, clock_mhz=clock)
    row = configs.pipeline("f16", (16384,) * 3, **dict(configs.BEST, order="row"))
    grouped = configs.pipeline("f16", (16384,) * 3, **configs.BEST)
    ratio = kblock_cycles(row, p, clock)[0] / kblock_cycles(grouped, p, clock)[0]
    assert ratio == pytest.approx(row_over_grouped, rel=0.1)
    skinny = configs.pipeline("f16", (128, 8192, 8192), **dict(configs.BEST, bn=128, cluster=1))
    # (within 5 % before the misses were counted per side of the L2; since, 9 % fast on the H100, 7 % on the H200)
    assert kblock_cycles(skinny, p, skinny_clock)[0] == pytest.approx(skinny_kblock, rel=0.10)


def test_a_persistent_grid_on_fewer_sms_has_its_own_id_grid_and_prediction():
    from harness.families.gemm.configs import BEST, pipeline
    from harness.families.gemm.suite_cases import full
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.params import PRIOR, Params
    from harness.families.gemm.problem import grid

    case = FAMILY.parse("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.sms128")
    assert case.grid_sms == 128 and case == pipeline("f16", (8192, 8192, 8192), **dict(BEST, grid_sms=128))
    assert grid(case, 132) == 128 and grid(replace(case, grid_sms=0), 132) == 132  # 64 clusters of 2, or 66
    with pytest.raises(SpecError, match="a grid of 128 SMs on a GPU of 114"):
        grid(case, 114)
    for bad, why in (("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.cluster1.grid-row.regs.sms128", "only a persistent"),
                     ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.cluster2.persistent-row.regs.sms127", "multiple of"),
                     ("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.cluster1.persistent-row.regs.sms0", "not canonical")):
        with pytest.raises(SpecError, match=why):
            FAMILY.parse(bad)
    assert case in full() and replace(case, grid_sms=0) in full()
    # 2048 tiles: 16 waves on 128 SMs as on 132 (15.5 rounded up), so the planner rates the two alike: the same
    # cycles per tile, the same waves; only the L2 misses of a narrower wave differ
    p = Params("H100", 132, 4096.0, **PRIOR, hbm_gbps=3084.0, launch_cycles=4000.0, clock_mhz=1350.0)
    all_sms, fewer = predict_case(replace(case, grid_sms=0), p), predict_case(case, p)
    assert fewer.waves == all_sms.waves == 16
    assert fewer.flops_per_cycle_sm == pytest.approx(all_sms.flops_per_cycle_sm, rel=0.03)


def test_fp8_cases_take_a_k_block_of_128_the_qgmma_and_cublaslt_as_their_library(monkeypatch):
    """e4m3 (PTX ISA: wgmma .e4m3 is m64nNk32, K-major only, 2 x the dense rate of f16): a k-block of 128
    elements is one 128-byte swizzle span, four k32 steps; C is f16; each k-block is promoted into f32
    registers (two sets of accumulators: 128x256 over two consumers would need 256 a thread); the library is
    cuBLASLt's fp8 matmul (cublasGemmEx takes no fp8), without or with fast accumulation."""
    from harness.families.gemm.configs import FP8_SERIAL, pipeline
    from harness.families.gemm.suite_cases import fp8, full
    from harness.families.gemm.model import predict_case, tensor_cycles, wgmma_per_kblock
    from harness.families.gemm.params import PRIOR, Params

    case = FAMILY.parse("gemm.e4m3.4096x4096x4096.tile128x128x128.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore")
    assert case == pipeline("e4m3", (4096, 4096, 4096), **FP8_SERIAL) and case in full() and set(fp8()) <= set(full())
    assert (case.in_bytes, case.out_dtype, case.wgmma_k, case.kblocks, case.promote) == (1, "f16", 32, 32, True)
    assert case.smem_bytes() == 3 * 256 * 128 + 128 * 128 * 2 + 1024  # the same ring bytes as f16's
    expectation = FAMILY.sass_expectation(case)
    assert ("probe_gemm", "QGMMA.64x128x32.F32.E4M3.E4M3", 4) in [(k, e.mnemonic, e.count) for k, e in expectation.kernels]
    params = FAMILY.template_params(case)
    assert params["instruction"].endswith("m64n128k32.f32.e4m3.e4m3") and params["immediates"] == "1, 1"
    assert params["promote"] == "true" and FAMILY.template_params(replace(case, dtype="f16", bk=64))["promote"] == "false"
    assert FAMILY.peak(case) == 2 * FAMILY.peak(replace(case, dtype="f16", bk=64))
    for bad, why in (("gemm.e4m3.8192x8192x8192.tile128x128x64.s3.wg2.cluster1.grid-row.regs", "k-block of e4m3 is 128"),
                     ("gemm.e4m3.8192x8192x8192.tile128x256x128.s3.wg2.cluster1.grid-row.regs", "256 f32 accumulators"),
                     ("cublas.e4m3.8192x8192x8192", "not canonical: 'cublaslt.e4m3"),
                     ("cublas.f16.8192x8192x8192.fastaccum", "cuBLASLt's fp8 option"),
                     ("cublaslt.e4m3.8192x8192x8200", "multiples of 16")):
        with pytest.raises(SpecError, match=why):
            FAMILY.parse(bad)
    anchor = FAMILY.parse("cublaslt.e4m3.4096x4096x4096.fastaccum")
    assert isinstance(anchor, LibraryCase) and anchor.fast_accum and anchor.columns()["instruction"] == "cublasLtMatmul"
    assert "fast accumulation on" in FAMILY.describe(anchor)[1]
    from harness.anchors import Anchor

    monkeypatch.setattr(Anchor, "available", lambda self: True)
    plan = FAMILY.plan(case)[0]
    assert plan.anchor == "library" and "no fast accumulation" in plan.notes  # the pipeline's anchor in its rounds
    monkeypatch.setattr(Anchor, "available", lambda self: self.requires is None)  # no nvmath: timed, no anchor, says so
    plan = FAMILY.plan(case)[0]
    assert plan.anchor is None and "hopper-bench[fp8]" in plan.notes
    # the planner: a k-block of the same tile takes the tensor cores as long as f16's (twice the FLOP at twice
    # the rate) and lands the same bytes; the problem has half the k-blocks
    f16 = pipeline("f16", (4096, 4096, 4096), **FP8_SERIAL)
    p = Params("H100", 132, 4096.0, **PRIOR, hbm_gbps=3084.0, launch_cycles=4000.0, clock_mhz=1350.0)
    assert tensor_cycles(case, p) == tensor_cycles(f16, p) and wgmma_per_kblock(case) == wgmma_per_kblock(f16)
    # ... and the promotion costs it: the consumer waits for each k-block's wgmma (serial: and adds them) before
    # it gives the slot back; overlapped, the additions hide; pipelined, a group's last k-block drains and is added
    # with nothing in flight (pipeline.cuh consume_group_step: its `finish`), once a group of 4. On a deep
    # ring the consumer sets the period (with a drain that keeps the overlapped consumer above the feed), so serial
    # and overlapped differ by the additions
    deep = dict(stages=7, epilogue="regs")
    p = replace(p, drain_cycles=200.0)
    serial, overlap, pipelined = (predict_case(replace(case, **deep, promotion=kind), p)
                                    for kind in ("serial", "overlap", "pipelined"))
    assert serial.t_kblock > overlap.t_kblock > pipelined.t_kblock >= tensor_cycles(case, p)
    assert serial.t_kblock - overlap.t_kblock == pytest.approx(p.promotion_cycles, rel=0.1)
    assert serial.bound == overlap.bound == "promotion"
    plain = predict_case(replace(f16, **deep), p)
    assert pipelined.t_kblock == pytest.approx(max(plain.t_kblock, tensor_cycles(case, p)
                                                   + (p.drain_cycles + p.promotion_cycles) / 4))
    # without a drain and additions the promoted walk is the circuit of its S slots through the copy's round trip
    # (less the issue stall, which the consumer's service holds), the feed and the consumer's wgmma, or the longest
    # of those services (a service the same every k-block: no exponential queue's gradual approach)
    from harness.families.gemm.model import feed_cycles, issue_stall, round_trip

    free = replace(p, drain_cycles=0.0, promotion_cycles=0.0, memory_queue_cycles=0.0)
    t_tc, s = tensor_cycles(case, free), feed_cycles(case, free)
    circuit = round_trip(case, free) - issue_stall(case, free) + t_tc
    assert predict_case(case, free).t_kblock == pytest.approx(max(t_tc, s, circuit / case.stages))


def test_fp8_check_inputs_are_exact_e4m3_codes():
    from harness.dtypes import decode
    from harness.families.gemm.problem import check_problem

    case = FAMILY.parse("gemm.e4m3.8192x8192x8192.tile128x128x128.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore")
    inputs = FAMILY.inputs(case, np.random.default_rng(1))
    m, n, k = check_problem(case)
    assert inputs.buffer.size == (m + n) * k  # one byte an element
    assert np.array_equal(decode("e4m3", inputs.buffer[:m * k]).reshape(m, k), inputs.values["A"])
    # e4m3's codes (OCP FP8: sign, 4 exponent bits of bias 7, 3 mantissa bits): 1.0 = 0x38, 2.0 = 0x40
    codes = {-2.0: 0xC0, -1.0: 0xB8, 0.0: 0x00, 1.0: 0x38, 2.0: 0x40}
    a = inputs.values["A"].ravel()
    assert {float(v): int(c) for v, c in zip(a, inputs.buffer[:m * k])} == {v: codes[v] for v in set(a.tolist())}


def _tensor_core_fp8(a: np.ndarray, b: np.ndarray, bits: int, step: int = 32, kblock: int = 128,
                     scales=None) -> np.ndarray:
    """An fp8 GEMM as the bound assumes the hardware does it: each k32 step's exact products added into a running
    k-block sum truncated to `bits` fraction bits, each k-block added into f32, C rounded to f16. Block scales
    (A's [K / 128][M], B's [N / 128][K / 128]): each k-block's sum times scale_a x scale_b (their product rounded
    to f32, then the multiply, then the addition: ptx/gemm.cu.in load_scales and promote)."""
    m, k = a.shape
    out = np.zeros((m, b.shape[0]), dtype=np.float32)
    for k0 in range(0, k, kblock):
        running = np.zeros_like(out, dtype=np.float64)
        for s0 in range(k0, k0 + kblock, step):
            running += a[:, s0:s0 + step] @ b[:, s0:s0 + step].T  # products of 4-bit significands: exact
            exponent = np.floor(np.log2(np.maximum(np.abs(running), 1e-300)))
            quantum = 2.0 ** (exponent - bits)
            running = np.trunc(running / quantum) * quantum  # toward zero: the worse of the two roundings
        kblock_sum = running.astype(np.float32)
        if scales is not None:
            scale_a, scale_b = scales
            both = (scale_a[k0 // kblock][:, None].astype(np.float32)
                    * np.repeat(scale_b[:, k0 // kblock], kblock)[None, :b.shape[0]].astype(np.float32))
            kblock_sum = (kblock_sum * both).astype(np.float32)
        out = (out + kblock_sum).astype(np.float32)
    return out.astype(np.float16).astype(np.float64)


@pytest.mark.parametrize("b_dtype", ["e4m3", "e5m2"])
@pytest.mark.parametrize("m, n, k", [(64, 48, 1024), (16, 16, 16384)])
def test_the_fp8_bound_holds_for_the_arithmetic_and_fails_a_dropped_kblock_or_a_wrong_scale(m, n, k, b_dtype):
    """problem.fp8_bound against a GEMM done as the bound describes it (13 fraction bits a step, truncated), the
    reference exact (f64), as gpu.verify takes it: every element within; a dropped k-block or A scaled by 2 leaves
    most elements beyond it, at K = 1024 and at 16384 (where the bound is widest); B in e4m3 or e5m2 (its 2-bit
    significand's products are as exact)."""
    from harness.dtypes import round_to
    from harness.families.gemm.problem import FP8_SUM_BITS, fp8_bound

    rng = np.random.default_rng(7)
    a = round_to("e4m3", rng.standard_normal((m, k)))
    b = round_to(b_dtype, rng.standard_normal((n, k)))
    exact = a @ b.T  # products of 4-bit (and 3-bit) significands, sums far inside f64's 53 bits: exact
    abs_sum = np.abs(a) @ np.abs(b).T
    bound = fp8_bound(np, exact, abs_sum, k, 128 // 32, 128)
    ours = _tensor_core_fp8(a, b, FP8_SUM_BITS)
    assert np.all(np.abs(ours - exact) <= bound)
    assert np.abs(ours - exact).max() > 0  # the simulated hardware does round: the bound is not vacuous
    dropped = _tensor_core_fp8(np.concatenate([a[:, :128] * 0, a[:, 128:]], axis=1), b, FP8_SUM_BITS)
    assert np.mean(np.abs(dropped - exact) > bound) > 0.5
    scaled = _tensor_core_fp8(2 * a, b, FP8_SUM_BITS)
    assert np.mean(np.abs(scaled - exact) > bound) > 0.9
    # and the bound is tight enough to notice fewer bits than it assumes, somewhere
    coarse = _tensor_core_fp8(a, b, 6)
    assert np.any(np.abs(coarse - exact) > bound)


@pytest.mark.parametrize("m, n, k", [(64, 256, 1024), (16, 128, 16384)])
def test_the_block_scaled_bound_holds_for_the_arithmetic_and_fails_a_misplaced_or_dropped_scale(m, n, k):
    """DeepSeek-V3's block scales (1x128 for A, 128x128 for B, f32 in [0.5, 2) as gpu.block_scales draws them):
    problem.fp8_bound with three f32 roundings a k-block, around the exact product of the scaled operands computed
    here k-block by k-block in f64, holds for the simulated kernel; A's scales read a k-block late, B's read from
    the neighbouring column block, or one k-block's scales dropped leave elements beyond it."""
    from harness.dtypes import round_to
    from harness.families.gemm.problem import FP8_SUM_BITS, block_scaled_product, fp8_bound

    rng = np.random.default_rng(11)
    a = round_to("e4m3", rng.standard_normal((m, k)))
    b = round_to("e4m3", rng.standard_normal((n, k)))
    blocks = k // 128
    scale_a = (0.5 + 1.5 * rng.random((blocks, m))).astype(np.float32)
    scale_b = (0.5 + 1.5 * rng.random((n // 128, blocks))).astype(np.float32)
    exact = np.zeros((m, n))
    abs_sum = np.zeros((m, n))
    for kb in range(blocks):  # the definition, block by block, independent of block_scaled_product
        span = slice(kb * 128, kb * 128 + 128)
        both = scale_a[kb][:, None].astype(np.float64) * np.repeat(scale_b[:, kb], 128)[None, :].astype(np.float64)
        exact += (a[:, span] @ b[:, span].T) * both
        abs_sum += (np.abs(a[:, span]) @ np.abs(b[:, span]).T) * both
    assert np.allclose(block_scaled_product(np, a, b, scale_a, scale_b, 128), exact, rtol=1e-12, atol=1e-9)
    bound = fp8_bound(np, exact, abs_sum, k, 128 // 32, 128, f32_roundings=3)
    ours = _tensor_core_fp8(a, b, FP8_SUM_BITS, scales=(scale_a, scale_b))
    assert np.all(np.abs(ours - exact) <= bound)
    assert np.abs(ours - exact).max() > 0
    late = _tensor_core_fp8(a, b, FP8_SUM_BITS, scales=(np.roll(scale_a, 1, axis=0), scale_b))
    assert np.mean(np.abs(late - exact) > bound) > 0.5
    if n > 128:
        neighbour = _tensor_core_fp8(a, b, FP8_SUM_BITS, scales=(scale_a, np.roll(scale_b, 1, axis=0)))
        assert np.mean(np.abs(neighbour - exact) > bound) > 0.5
    dropped = scale_a.copy()
    dropped[blocks // 2] = 0
    assert np.mean(np.abs(_tensor_core_fp8(a, b, FP8_SUM_BITS, scales=(dropped, scale_b)) - exact) > bound) > 0.5


def test_a_block_scaled_check_problem_is_the_scaled_sum_of_its_kblocks_bit_for_bit():
    """The check problem of a block-scaled case: integer inputs and power-of-two scales after them in its buffer
    (problem.scale_offsets, 16-byte aligned), C the sum over k-blocks of each block's product times its two scales,
    computed here from the buffer's own bytes, exact in f32 and rounded once to f16."""
    from harness.families.gemm.problem import check_problem, scale_offsets, to_bits

    for case_id in ("gemm.e4m3.4096x4096x4096.tile128x128x128.s6.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore"
                    ".pipelined.blockscale", "cublaslt.e4m3.4096x4096x4096.blockscale"):
        case = FAMILY.parse(case_id)
        inputs = FAMILY.inputs(case, np.random.default_rng(3))
        m, n, k = check_problem(case)
        _, at_a, at_b = scale_offsets(case)
        assert at_a % 16 == 0 and k % 128 == 0
        scale_a = inputs.buffer[at_a:at_b].view(np.float32).reshape(k // 128, m)
        scale_b = inputs.buffer[at_b:].view(np.float32).reshape(n // 128, k // 128)
        assert set(np.unique(scale_a)) <= {0.5, 1.0, 2.0} and len(np.unique(scale_b)) > 1
        a, b = inputs.values["A"], inputs.values["B"]
        c = sum((a[:, kb * 128:(kb + 1) * 128] @ b[:, kb * 128:(kb + 1) * 128].T)
                * scale_a[kb][:, None] * np.repeat(scale_b[:, kb], 128)[None, :] for kb in range(k // 128))
        assert np.abs(c).max() < 2 ** 16  # inside f16's range
        expected = to_bits(c, "f16").ravel().view(np.uint32).astype(np.float64)
        assert np.array_equal(FAMILY.checks(case, inputs)[0].expected, expected)


@pytest.mark.parametrize("case_id, why", [
    ("gemm.bf16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.blockscale",
     "block scaling is fp8's"),
    ("gemm.e4m3.4096x4096x4096.tile128x128x128.s4.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.overlap.blockscale",
     "C7517"),
    ("gemm.e4m3.4096x4032x4096.tile128x64x128.s6.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.pipelined.blockscale",
     "multiples of its 128-wide blocks"),
    ("cublaslt.e4m3.4096x4096x4096.fastaccum.blockscale", "no fast accumulation"),
])
def test_a_block_scaled_case_the_kernel_cannot_run_is_refused_in_one_line(case_id, why):
    with pytest.raises(SpecError, match=why):
        FAMILY.parse(case_id)


def test_every_gemm_suite_names_each_case_once():
    """A suite that lists a case twice stores two rows of one measurement: the run fails on the database's key."""
    for name, suite in FAMILY.suites().items():
        ids = [case.case_id for case in suite.make()]
        assert len(ids) == len(set(ids)), name


def test_a_pipelined_promotion_is_a_group_of_kblocks_in_straight_line_code_that_ptxas_must_not_serialize():
    """The SASS a pipelined case must hold: each of a group's k-blocks and the one walked alone has its own copy of
    the k-block's 4 QGMMA (pipeline.cuh consume_kblock_groups), and a C7514 (ptxas serializing every wgmma, which
    a wgmma in flight across the loop's back edge caused) invalidates the case, as do the waits ptxas injects."""
    for group in C.PIPELINE_GROUPS:
        case = configs.pipeline("e4m3", (4096, 4096, 4096), **dict(configs.BEST_FP8, group=group))
        assert case.case_id.endswith(".pipelined" if group == C.PIPELINE_GROUP else f".pipelined-g{group}")
        assert FAMILY.parse(case.case_id) == case
        expectation = FAMILY.sass_expectation(case)
        (qgmma,) = [k for name, k in expectation.kernels if name == "probe_gemm" and k.mnemonic.startswith("QGMMA")]
        assert qgmma.count == 4 * (group + 1)
        assert {"C7514", "C7517", "C7518"} <= set(expectation.invalidating_notes)
        assert case.accumulators == 3 * 64  # two k-block sets and the tile's
    # the default group leaves the params of the cases stored before groups were a field as they were
    assert "group" not in configs.pipeline("e4m3", (4096, 4096, 4096), **configs.BEST_FP8).params()
    assert configs.pipeline("e4m3", (4096, 4096, 4096), **dict(configs.BEST_FP8, group=2)).params()["group"] == 2


def test_a_cluster_of_4_loads_a_quarter_of_b_and_multicasts_it():
    case = FAMILY.parse("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster4.persistent-grouped."
                        "tmastore.sms120")
    assert case.cluster == 4 and case.grid_sms == 120
    from harness.families.gemm.problem import grid

    assert grid(case, 132) == 120  # 30 clusters of 4: what the H100 runs at once
    from harness.registry import probe_source

    text = probe_source(case).text
    assert "__cluster_dims__(4, 1, 1)" in text and "constexpr int CLUSTER = 4;" in text


def test_the_planner_predicts_fp8_out_of_sample_as_docs_gemm_says():
    """docs/gemm.md's table of the fp8 promotion's misses: fitted on run 111 (serial and overlapped), scored on
    runs 124, 126 (H100) and 110 (H200), each case at the clock it measured."""
    from pathlib import Path

    import harness
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.planner import GemmModel

    db = Path(__file__).resolve().parents[1] / "results.db"
    if not db.exists():
        pytest.skip("no shipped results.db in this checkout")
    frame = harness.results(str(db), run_id=111, family="gemm")
    params = GemmModel().fit(frame, frame.gpu_name.iloc[0], "run 111").params
    doc = (Path(__file__).resolve().parents[1] / "docs" / "gemm.md").read_text()
    for run, gpu in ((124, "H100"), (126, "H100"), (110, "H200")):
        rows = harness.results(str(db), run_id=run, family="gemm")
        rows = rows[(rows.metric == "throughput_tflops") & rows.case_id.str.startswith("gemm.")]
        misses = []
        for row in rows.itertuples():
            case = parse(row.case_id)
            if case.promote and not case.pingpong:
                predicted = predict_case(case, params, row.sm_clock_mhz).tflops(row.sm_count, row.sm_clock_mhz)
                misses.append(abs(row.value / predicted - 1))
        line = f"{len(misses)} | {100 * np.median(misses):.1f} % | {100 * max(misses):.1f} % |"
        assert f"| run 111 (H100) | run {run} ({gpu}" in doc and line in doc, line


def test_the_planners_other_out_of_sample_figures_in_docs_gemm():
    """docs/gemm.md: fitted on run 108 (H100), the misses on run 107 (H200), f16 and fp8 apart; and fitted on run
    125, the best fp8 configuration at 4096^3 predicted at the clock run 126 measured for it."""
    from pathlib import Path

    import harness
    from harness.families.gemm.model import predict_case
    from harness.families.gemm.planner import GemmModel

    root = Path(__file__).resolve().parents[1]
    db = root / "results.db"
    if not db.exists():
        pytest.skip("no shipped results.db in this checkout")
    doc = " ".join((root / "docs" / "gemm.md").read_text().split())

    def fitted(run):
        frame = harness.results(str(db), run_id=run, family="gemm")
        return GemmModel().fit(frame, frame.gpu_name.iloc[0], f"run {run}").params

    p108 = fitted(108)
    rows = harness.results(str(db), run_id=107, family="gemm", metric="throughput_tflops")
    misses = {False: [], True: []}
    for row in rows[rows.case_id.str.startswith("gemm.")].itertuples():
        case = parse(row.case_id)
        if not case.pingpong:
            predicted = predict_case(case, p108, row.sm_clock_mhz).tflops(row.sm_count, row.sm_clock_mhz)
            misses[case.promote].append(abs(row.value / predicted - 1))
    f16, fp8 = (f"{100 * np.median(m):.1f} % at the median and {100 * max(m):.1f} % at worst" for m in
                (misses[False], misses[True]))
    assert f"the f16 cases miss by {f16}" in doc
    assert f"the fp8 ones by {fp8.replace(' at the median and', ' and').replace(' at worst', '')}" in doc
    best = configs.pipeline("e4m3", (4096, 4096, 4096), **configs.BEST_FP8)
    (row,) = harness.results(str(db), run_id=126, case_id=best.case_id, metric="throughput_tflops").itertuples()
    predicted = predict_case(best, fitted(125), row.sm_clock_mhz).tflops(row.sm_count, row.sm_clock_mhz)
    assert (f"({row.sm_clock_mhz:.0f} MHz) it predicts {predicted:.0f} TFLOPS against run 126's {row.value:.0f} "
            f"({100 * abs(predicted / row.value - 1):.1f} % out of sample)") in doc


# -- split-K and a partial last tile (skinny and decode shapes) ----------------------------------------------------

SPLIT = "gemm.f16.64x8192x8192.tile64x128x64.s6.wg1.cluster1.persistent-row.tmastore"


@pytest.mark.parametrize("case_id, why", [
    (SPLIT + ".splitk5", "expected one of"),  # not a split the skeleton offers
    ("gemm.f16.64x8192x8192.tile64x128x64.s6.wg1.cluster2.persistent-row.tmastore.splitk2", "no cluster"),
    ("gemm.f16.256x8192x8192.tile128x128x64.s4.wg2.setmaxnreg.cluster1.persistent-row.tmastore.pingpong.splitk2",
     "no cluster"),
    ("gemm.f16.64x8192x960.tile64x128x64.s6.wg1.cluster1.persistent-row.tmastore.splitk4", "runs of"),  # 15 k-blocks
    ("gemm.f16.16x8192x8192.tile64x128x64.s6.wg1.cluster1.persistent-row.regs", "TMA-store epilogue"),
    ("gemm.f16.24x8192x8192.tile64x128x64.s6.wg1.cluster1.persistent-row.tmastore", "multiple of 16"),
    ("gemm.e4m3.64x8192x8192.tile64x128x128.s5.wg1.cluster1.persistent-row.tmastore.splitk2.pipelined.blockscale",
     "split-K with block scales"),
])
def test_split_k_and_partial_tiles_refuse_what_the_kernel_cannot_do(case_id, why):
    with pytest.raises(SpecError, match=why):
        FAMILY.parse(case_id)


def test_a_split_case_walks_runs_of_k_blocks_as_work_items():
    case = FAMILY.parse(SPLIT + ".splitk4")
    assert case.splits == 4 and case.tiles == 64  # 8192 / 128 columns, one 64-row tile
    assert case.items == 256 and case.kblocks == 8192 // 64 // 4
    assert "splits" not in FAMILY.parse(SPLIT).params()  # the cases stored before split-K keep their params
    assert case.params()["splits"] == 4


def test_the_check_problem_of_a_split_case_walks_at_least_a_tiles_k_blocks():
    """A split check problem has the unsplit one's 2 x stages + 3 k-blocks or more, in whole runs; a run shorter than
    the ring wraps it only across a persistent CTA's work items (problem.check_problem), and the measured problem
    (128 k-blocks a tile at K = 8192) wraps it in every run."""
    for splits in (2, 4, 8):
        case = FAMILY.parse(f"{SPLIT}.splitk{splits}")
        m, n, k = check_problem(case)
        runs = k // case.bk // splits
        assert k % (case.bk * splits) == 0 and runs * splits >= 2 * case.stages + 3
        assert runs >= -(-(2 * case.stages + 3) // splits)
        assert case.kblocks > case.stages  # the measured problem's runs wrap the ring


def test_a_partial_last_tile_is_checked_on_a_problem_with_one_too():
    case = FAMILY.parse("gemm.f16.16x8192x8192.tile64x128x64.s6.wg1.cluster1.persistent-row.tmastore")
    m, _, _ = check_problem(case)
    assert case.walk_m == 64 and m % 64 == 16  # the check's last tile is as partial as the measured one's
    assert FAMILY.parse("gemm.f16.16x8192x8192.tile64x128x64.s6.wg1.cluster1.persistent-row.tmastore.splitk2")


WIDE = "gemm.e4m3.8192x8192x8192.tile128x192x128.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore"


def test_a_partial_last_column_of_tiles_walks_whole_tiles_and_is_checked_on_one_too():
    """8192 columns are 42 tiles of 192 and 128 columns: the walk takes 43 whole tiles (B's rows past N load as
    zeros, the TMA store clips C's columns), and the check problem's last column of tiles is as partial."""
    case = FAMILY.parse(WIDE)
    assert case.walk_n == 43 * 192 and case.tiles == 64 * 43
    m, n, k = check_problem(case)
    assert n == 192 + 8192 % 192 and n % 192 == 128
    assert "N = 8192 walked as 8256" in " ".join(FAMILY.describe(case))
    assert FAMILY.parse(WIDE.replace("cluster1", "cluster2"))  # the cluster shares B: its zeros too


@pytest.mark.parametrize("case_id, why", [
    (WIDE + ".pipelined", "288 f32 accumulators"),  # three sets of 96
    ("gemm.e4m3.8192x8192x8192.tile128x192x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore",
     "shared memory"),  # 5 x 40 KiB of ring beside C's 48 KiB
    (WIDE.replace("8192x8192x8192", "8192x8184x8192"), "multiple of 16"),
    (WIDE.replace("8192x8192x8192", "8192x7680x8192") + ".blockscale", "128-column blocks"),
    ("gemm.f16.8192x8192x8192.tile128x192x64.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore", "is fp8's"),
])
def test_a_wide_fp8_tile_refuses_what_the_kernel_cannot_do(case_id, why):
    with pytest.raises(SpecError, match=why):
        FAMILY.parse(case_id)


WIDE144 = "gemm.e4m3.8192x8192x8192.tile128x144x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore.pipelined"


def test_a_144_column_fp8_tile_keeps_three_sets_and_stores_c_in_16_column_boxes(shared_cache):
    """cuBLASLt's 8192^3 fp8 tile, pipelined: three sets of 144 / 2 = 72 f32 (216 a thread) beside the addresses without
    a spill; 8192 columns are 56 tiles of 144 and 128, so the walk takes 57; C's TMA store writes one unswizzled box of
    144 columns a warpgroup (a 64-column box would write into the next tile's columns; 16-column ones were 9 stores);
    5 stages of 34 KiB beside C's 36 KiB, not 6."""
    case = FAMILY.parse(WIDE144)
    assert case.accumulators == 216 and case.walk_n == 57 * 144 and (case.c_box_cols, case.c_swizzle) == (144, None)
    sass = _kernel_sass(WIDE144)  # (no spill: _kernel_sass)
    square = _kernel_sass(WIDE144.replace("128x144x128", "128x128x128"))  # the same walk at 128 columns
    assert sum(x.startswith("QGMMA.64x144x32.F32.E4M3.E4M3") for x in sass) == \
        sum(x.startswith("QGMMA.64x128x32.F32.E4M3.E4M3") for x in square) > 0
    assert sum(x.startswith("UTMASTG.2D") for x in sass) == 1
    with pytest.raises(SpecError, match="shared memory"):
        FAMILY.parse(WIDE144.replace(".s5.", ".s6."))
    with pytest.raises(SpecError, match="is fp8's"):
        FAMILY.parse("gemm.f16.8192x8192x8192.tile128x144x64.s4.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore")
    with pytest.raises(SpecError, match="spills"):
        FAMILY.parse(WIDE144.replace("pipelined", "offset"))


def test_an_offset_walk_gives_warpgroup_1_a_first_group_of_half_the_kblocks(shared_cache):
    """`.offset`: the pipelined walk's k-block issue sites (a group of 4 in straight-line code and the k-blocks left
    over) plus warpgroup 1's first group of 2: 7 sites of 4 QGMMA (a k-block's k32 steps), where `.pipelined` has 5."""
    offset = WIDE144.replace("128x144x128", "128x128x128").replace("pipelined", "offset")
    count = lambda case_id: sum(x.startswith("QGMMA.64x128x32") for x in _kernel_sass(case_id))
    assert count(offset) == 7 * 4 and count(offset.replace("offset", "pipelined")) == 5 * 4


def test_a_partial_last_tile_from_registers_strides_rows_by_cs_columns_and_stores_none_past_them():
    """The register epilogue of a partial last column of tiles: C's rows are N apart (the problem's c_cols), not the
    walk's N rounded up to whole tiles, and no column at or past N is stored; a case of whole tiles keeps P.n."""
    from harness.registry import probe_source

    partial = probe_source(FAMILY.parse(WIDE144.replace(".s5.", ".s6.").replace("tmastore", "regs"))).text
    whole = probe_source(FAMILY.parse(WIDE144.replace("8192x8192x8192", "8192x8064x8192").replace("tmastore",
                                                                                                  "regs"))).text
    assert "constexpr bool PARTIAL_N = true;" in partial and "constexpr bool PARTIAL_N = false;" in whole
    assert "col < P.c_cols" in partial and "PARTIAL_N ? P.c_cols : P.n" in partial


def test_a_staggered_promotion_is_two_cooperative_warpgroups_taking_turns():
    case = FAMILY.parse(WIDE + ".staggered")
    assert case.accumulators == 192  # the serial promotion's two sets
    assert ("probe_gemm", "BAR.ARV", 1) in [(k, e.mnemonic, e.count) for k, e in FAMILY.sass_expectation(case).kernels]
    assert "BAR.ARV" not in str(FAMILY.sass_expectation(FAMILY.parse(WIDE)))
    # the planner prices it as the serial promotion: runs 149-150 measured the same k-block or worse
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior("H100 SXM5")
    assert predict_case(case, params, 1300.0) == predict_case(FAMILY.parse(WIDE), params, 1300.0)
    for bad in ("gemm.e4m3.4096x4096x4096.tile64x128x128.s5.wg1.cluster1.persistent-row.tmastore.staggered",
                "gemm.e4m3.4096x4096x4096.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-row.tmastore"
                ".pingpong.staggered"):
        with pytest.raises(SpecError, match="staggered promotion"):
            FAMILY.parse(bad)
    with pytest.raises(SpecError, match="promotion"):  # fp8's only
        FAMILY.parse("gemm.f16.4096x4096x4096.tile128x128x64.s5.wg2.setmaxnreg.cluster1.persistent-row.tmastore"
                     ".staggered")


def test_split_k_sass_counts_one_arrival_per_run():
    expectation = FAMILY.sass_expectation(FAMILY.parse(SPLIT + ".splitk2"))
    assert ("probe_gemm", "ATOMG.E.ADD.S32.STRONG.GPU", 1) in [(k, e.mnemonic, e.count) for k, e in expectation.kernels]
    assert "ATOMG" not in str(FAMILY.sass_expectation(FAMILY.parse(SPLIT)))


# -- stream-K (the last partial wave's tiles split along K) ----------------------------------------------------------

STREAMK = "gemm.e4m3.8192x8192x8192.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore"


@pytest.mark.parametrize("case_id, why", [
    (STREAMK + ".streamk3.pipelined", "expected one of 2, 4, 8"),
    (STREAMK.replace("cluster1", "cluster2") + ".streamk2.pipelined", "no cluster"),
    (STREAMK.replace("persistent", "grid") + ".streamk2.pipelined", "persistent grid"),
    ("gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore.streamk2",
     "stream-K beside 128 f32 accumulators"),  # the fix-up's limit, split-K's
    (STREAMK + ".streamk2.deferred", "deferred epilogue"),
    (STREAMK.replace("8192x8192x8192", "4096x4096x4096") + ".streamk2.pipelined.blockscale", "stream-K with block"),
])
def test_stream_k_refuses_what_the_kernel_cannot_do(case_id, why):
    with pytest.raises(SpecError, match=why):
        FAMILY.parse(case_id)


def test_a_stream_k_case_round_trips_and_is_checked_on_a_split_wave():
    """The id reads back; the check launch (5 CTAs) leaves a partial wave whose tiles are cut in 2 or 3 runs, so the
    check problem's C, bit for bit, covers the fix-up; the measured problem's workspace holds a slot for each run a
    split tile may have: 8192^3 fp8 in 128x128 tiles is 4096 tiles, 4 past the H100's 31 whole waves of 132."""
    from harness.families.gemm.problem import check_grid, split_counters, split_workspace_bytes, stream_k

    case = FAMILY.parse(STREAMK + ".streamk4.pipelined")
    assert case.case_id == STREAMK + ".streamk4.pipelined" and case.streamk == 4
    assert "streamk" not in FAMILY.parse(STREAMK + ".pipelined").params() and case.params()["streamk"] == 4
    m, n, k = check_problem(case)
    check = stream_k(case, m, n, k, check_grid(case))
    assert check_grid(case) == 5 and check.parts == 5 and 0 < check.whole < check.tiles
    assert {runs for cta in range(5) for *_, runs, _ in check.items(cta)} >= {2}
    measured = stream_k(case, case.m, case.n, case.k, 132)
    assert (measured.tiles, measured.whole, measured.parts) == (4096, 4092, 16)  # 4 tiles in 4 runs of 16 k-blocks
    assert measured.stride == 5  # a tile of 64 k-blocks touches at most 63 // 16 + 2 ranges of 16
    assert split_workspace_bytes(case, case.m, case.n, case.k, 132) == 4 * measured.stride * 128 * 128 * 4
    assert split_counters(case, case.m, case.n, case.k, 132) == 4 * measured.stride * 2
    assert split_workspace_bytes(replace(case, streamk=0), case.m, case.n, case.k, 132) == 0


def test_stream_k_sass_counts_one_arrival_per_run():
    expectation = FAMILY.sass_expectation(FAMILY.parse(STREAMK + ".streamk2.pipelined"))
    assert ("probe_gemm", "ATOMG.E.ADD.S32.STRONG.GPU", 1) in [(k, e.mnemonic, e.count) for k, e in expectation.kernels]


def test_the_planner_sees_split_k_fill_the_idle_sms():
    """M = 64 at N = K = 8192 with 64x128 tiles: 64 tiles on 132 SMs. Two runs each make 128 work items, still one
    wave, each item half the k-blocks; twice the CTAs read at once (the memory's queue can only grow), and the tile is
    done when its last run is: that run's epilogue pays its own f32 sums' way out and both runs' way in, at the L2's
    rate R_s (the prior's: fitted to run 134's split-K counters), two round trips to the L2 (the release, the reads)
    and C's store. The counters' mean over the runs counts the reads and C's store once in two. The configurations the
    planner enumerates offer splits 2 and 4 here, and none where the tiles fill the GPU."""
    from harness.families.gemm.model import epilogue_cycles
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior("H100 SXM5")
    one, two = FAMILY.parse(SPLIT), FAMILY.parse(SPLIT + ".splitk2")
    p1, p2 = predict_case(one, params, 1500.0), predict_case(two, params, 1500.0)
    assert p1.waves == p2.waves == 1 and two.kblocks * 2 == one.kblocks
    assert p2.tile_cycles == pytest.approx(two.kblocks * p2.t_kblock + p2.epilogue)
    assert p2.t_kblock >= p1.t_kblock
    assert params.splitk_bytes_per_cycle == 30.0  # the prior: the fit to run 134, rounded
    sums, r, l0 = 64 * 128 * 4, params.splitk_bytes_per_cycle, params.latency_cycles
    assert p2.epilogue == pytest.approx(p1.epilogue + 3 * sums / r + 2 * l0)
    assert epilogue_cycles(two, params, mean=True) == pytest.approx(p1.epilogue / 2 + 2 * sums / r + 1.5 * l0)
    assert p2.epilogue < p1.epilogue + 3 * sums / params.epilogue_regs  # not the f16 stores' rate
    offered = {c.splits for c in configs.configurations("f16", 64, 8192, 8192) if (c.bm, c.bn) == (64, 128)}
    assert {1, 2, 4} <= offered
    assert {c.splits for c in configs.configurations("f16", 8192, 8192, 8192)} == {1}  # 2048 tiles: nothing idles


def test_the_library_case_is_an_anchor_with_no_probe_and_its_stored_rows_still_read():
    """The library (cuBLAS, cuBLASLt) is an anchor (harness/anchors): no probe source, no build in a run's compile
    stage, its checks and plan launch the call alone; and every library row of the runs of record (stored when it
    was a GemmCase flag, with a stub kernel) parses to a LibraryCase whose params are those stored."""
    import json
    from pathlib import Path

    from harness.anchors import KERNEL, has_probe
    from harness.db.store import Store
    from harness.orchestration.run import compiled
    from harness.registry import probe_source

    library, pipe = configs.library("f16", (2048, 2048, 2048)), suite_cases.quick()[0]
    assert not has_probe(library) and has_probe(pipe) and library in suite_cases.quick()
    with pytest.raises(SpecError, match="library call"):
        probe_source(library)
    builds = compiled([library, pipe])
    try:
        (first, none), (second, build) = list(builds)
    finally:
        builds.close()
    assert (first, none, second) == (library, None, pipe) and build.cubin_path.exists()
    inputs = FAMILY.inputs(library, np.random.default_rng(0))
    assert [c.kernel for c in FAMILY.checks(library, inputs)] == [KERNEL]
    (spec,) = FAMILY.plan(library, None)
    assert (spec.kernel, spec.grid, spec.anchor, spec.records) == (KERNEL, 1, None, False)
    assert FAMILY.plan(pipe, None)[0].anchor == KERNEL  # ... and a pipeline's rounds alternate with the same call
    assert library.params() == {"dtype": "f16", "m": 2048, "n": 2048, "k": 2048, "library": True}
    db = Path(__file__).resolve().parent.parent / "results.db"
    if not db.exists():
        pytest.skip("no results.db beside the tests")
    with Store.open(str(db), read_only=True) as store:
        stored = store.query("SELECT DISTINCT case_id, params FROM results WHERE family = 'gemm' AND "
                             "(case_id LIKE 'cublas.%' OR case_id LIKE 'cublaslt.%')")
    assert len(stored) > 20 and stored.case_id.str.startswith("cublaslt.").any()
    for case_id, params in zip(stored.case_id, stored.params):
        case = FAMILY.parse(case_id)
        assert isinstance(case, LibraryCase) and case.params() == json.loads(params), case_id


CARRY = "gemm.e4m3.4096x4096x4096.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore"


def _kernel_sass(case_id: str) -> list[str]:
    from harness.build.compile import compile_probe
    from harness.build.sass import disassemble
    from harness.registry import probe_source

    build = compile_probe(probe_source(FAMILY.parse(case_id)))
    assert build.spill_bytes() == 0
    return disassemble(build.cubin_path)["probe_gemm"]


def _loops(instructions: list[str]) -> list[list[str]]:
    """The bodies of the kernel's backward branches (a branch to an earlier address: a loop, or a barrier's retry placed
    after the kernel's end, back into it), as instructions. The
    kernel's first instruction's address is what its closing self-branch (BRA to itself) says, less 16 a place."""
    import re

    last = max(i for i, x in enumerate(instructions) if re.fullmatch(r"BRA 0x[0-9a-f]+", x))
    start = int(instructions[last].split()[1], 16) - 16 * last
    bodies = []
    for i, x in enumerate(instructions):
        m = re.search(r"\bBRA(?:\.U)?(?:\.ANY)? 0x([0-9a-f]+)$", x)
        if m and i != last:
            target = (int(m[1], 16) - start) // 16
            if 0 <= target < i:
                bodies.append(instructions[target:i + 1])
    return bodies


def test_a_carried_promotion_never_drains_the_tensor_cores_inside_its_kblock_loop(shared_cache):
    """The hypothesis of `.carried` (pipeline.cuh consume_kblocks_carried): the pipelined walk's drain once a group of 4
    (a wait for every wgmma, `WARPGROUP.DEPBAR.LE gsb0, 0x0`, inside its loop) is gone: its innermost loop holds two
    k-blocks (8 QGMMA) and waits only down to one group in flight, and ptxas kept it whole (no spill, no C7514:
    sass_check). Every loop of the pipelined case's, compiled the same way, has the drain."""
    for promotion in C.CARRIED:
        case = FAMILY.parse(f"{CARRY}.{promotion}")
        assert case.accumulators == 3 * 64 and case.promotion == promotion
        body = min((body for body in _loops(_kernel_sass(case.case_id)) if any("QGMMA" in x for x in body)), key=len)
        assert sum("QGMMA" in x for x in body) == 8
        waits = [x for x in body if x.startswith("WARPGROUP.DEPBAR")]
        assert waits == ["WARPGROUP.DEPBAR.LE gsb0, 0x1"] * 2, (promotion, waits)
    pipelined = [body for body in _loops(_kernel_sass(f"{CARRY}.pipelined")) if any("QGMMA" in x for x in body)]
    assert pipelined and all("WARPGROUP.DEPBAR.LE gsb0, 0x0" in body for body in pipelined)


def test_a_deferred_epilogue_stores_a_tile_while_the_next_tiles_first_kblock_runs(shared_cache):
    """`.deferred`: between the first k-block's last QGMMA and the first wait for wgmma after it, the kernel stores the
    tile before (its shared-memory stores and TMA stores), so the tensor cores run while it does; the carried case
    stores only after a wait for every wgmma (the tile's drain)."""
    def first_kblock_gap(instructions):
        first = next(i for i, x in enumerate(instructions) if "QGMMA" in x and "gsb0" in x)
        wait = next(i for i in range(first, len(instructions)) if instructions[i].startswith("WARPGROUP.DEPBAR"))
        return instructions[first:wait]

    deferred = first_kblock_gap(_kernel_sass(f"{CARRY}.deferred"))
    assert sum(x.startswith("UTMASTG.2D") for x in deferred) == 2 and sum(x.startswith("STS") for x in deferred) == 32
    carried = _kernel_sass(f"{CARRY}.carried")
    assert not any(x.startswith("UTMASTG") for x in first_kblock_gap(carried))
    assert ("probe_gemm", "UTMASTG.2D", 4) in [(k, e.mnemonic, e.count)
                                              for k, e in FAMILY.sass_expectation(FAMILY.parse(f"{CARRY}.deferred")).kernels]


def test_carried_and_deferred_refuse_what_they_cannot_do_and_are_priced_as_the_pipelined_walk():
    for bad, why in (("gemm.f16.4096x4096x4096.tile128x128x64.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore"
                      ".carried", "promotion"),
                     ("gemm.e4m3.64x8192x8192.tile64x128x128.s5.wg1.cluster1.persistent-row.tmastore.splitk2.deferred",
                      "deferred epilogue"),
                     ("gemm.e4m3.4096x4096x4096.tile64x128x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore"
                      ".pingpong.deferred", "deferred epilogue"),
                     (f"{CARRY}.carried-g2", "group")):
        with pytest.raises(SpecError, match=why):
            FAMILY.parse(bad)
    from harness.families.gemm.model import tensor_cycles
    from harness.families.gemm.planner import GemmModel

    params = GemmModel().prior("H100 SXM5")
    pipelined, carried = (predict_case(FAMILY.parse(f"{CARRY}.{p}"), params, 1300.0) for p in ("pipelined", "carried"))
    case = FAMILY.parse(f"{CARRY}.carried")
    # drained once a tile, but run 151 measured its k-block no shorter than the pipelined one's: priced alike
    assert carried == pipelined
    assert carried.t_kblock >= tensor_cycles(case, params) + params.drain_cycles / case.group


# -- fp8 with B in e5m2 ---------------------------------------------------------------------------------------------

PAIR = "gemm.e4m3-e5m2.4096x4096x4096.tile128x128x128.s5.wg2.setmaxnreg.cluster1.persistent-grouped.tmastore.pipelined"


def test_an_e5m2_b_case_names_both_types_in_its_instruction_sass_inputs_and_columns():
    """The pair `e4m3-e5m2`: A e4m3, B e5m2 in the wgmma (PTX's .f32.e4m3.e5m2), in the SASS expected (QGMMA's
    E4M3.E5M2), in the check problem's B (e5m2 codes of its integers), in the stored columns and in the library case
    beside it (cuBLASLt's e4m3 x e5m2)."""
    from harness.dtypes import fp8_values
    from harness.families.gemm.checks import inputs
    from harness.families.gemm.template import template_params

    case = FAMILY.parse(PAIR)
    assert (case.a_dtype, case.b_dtype, case.in_bytes, case.wgmma_k) == ("e4m3", "e5m2", 1, 32)
    assert template_params(case)["instruction"].endswith("m64n128k32.f32.e4m3.e5m2")
    assert "QGMMA.64x128x32.F32.E4M3.E5M2" in [e.mnemonic for _, e in FAMILY.sass_expectation(case).kernels]
    checked = inputs(case, np.random.default_rng(1))
    m, n, k = check_problem(case)
    b_codes = checked.buffer[m * k:m * k + n * k]
    assert np.array_equal(fp8_values("e5m2")[b_codes].reshape(n, k), checked.values["B"])
    assert (case.columns()["dtype_a"], case.columns()["dtype_b"]) == ("e4m3", "e5m2")
    library = FAMILY.parse("cublaslt.e4m3-e5m2.4096x4096x4096")
    assert library.case_id == "cublaslt.e4m3-e5m2.4096x4096x4096" and library.b_dtype == "e5m2"
    with pytest.raises(SpecError, match="e5m2"):
        FAMILY.parse(PAIR + ".blockscale")


def test_the_planner_prices_stream_k_by_its_split_wave_and_fix_up():
    """Stream-K's price: tiles that fill whole waves cost what whole tiles cost (nothing is split: 264 tiles of 128x128
    on 132 SMs); at fp8 4096^3 (1024 tiles, 100 past 7 waves) the split wave's fix-ups cost more than the eighth wave
    they replace, as run 180 measured (0.846 of cuBLASLt against 0.935 for whole tiles, H100), and at 8192^3 (4 tiles
    past 31 waves) it costs less than the partial wave it replaces."""
    fp8 = dict(configs.BEST_FP8, stages=5, cluster=1)
    whole = configs.pipeline("e4m3", (12 * 128, 22 * 128, 1024), **fp8)  # 264 tiles: two whole waves
    assert whole.tiles % 132 == 0
    plain, split = (predict_case(replace(whole, streamk=r), _params()) for r in (0, 2))
    assert split.flops_per_cycle_sm == pytest.approx(plain.flops_per_cycle_sm)
    for size, wins in ((4096, False), (8192, True)):
        case = configs.pipeline("e4m3", (size,) * 3, **fp8)
        plain, split = (predict_case(replace(case, streamk=r), _params()) for r in (0, 2))
        assert (split.flops_per_cycle_sm > plain.flops_per_cycle_sm) == wins, size


# -- the Hilbert tile order (the worklog's step 11) ------------------------------------------------------------------

HILBERT = "gemm.f16.4096x4096x4096.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-hilbert.tmastore"


def test_the_worklogs_step_11_is_step_10_walked_along_a_hilbert_curve():
    case = FAMILY.parse(HILBERT)
    assert case.order == "hilbert" and replace(case, order="grouped") == configs.pipeline("f16", (4096,) * 3,
                                                                                        **configs.BEST)
    figure = PaperFigure("hgemm worklog step 11", 4096, 4096, 4096, "f16", "f32", None, False, "throughput_tflops")
    assert FAMILY.paper_case(figure) == (HILBERT, "throughput_tflops") and "11" not in configs.WORKLOG_UNEXPRESSED
    assert "4096^3" in FAMILY.paper_case(replace(figure, m=8192, n=8192, k=8192))  # compared at its size only
    # the suites that hold the ladder measure it: at 8192^3 (gemm) and at the worklog's 4096^3 (gemm-full)
    suites = FAMILY.suites()
    assert HILBERT in {c.case_id for c in suites["gemm-full"].make()}
    assert HILBERT.replace("4096x4096x4096", "8192x8192x8192") in {c.case_id for c in suites["gemm"].make()}


def test_a_hilbert_case_is_checked_on_a_grid_of_work_items_with_an_odd_side():
    case = FAMILY.parse(HILBERT)
    m, n, k = check_problem(case)
    assert (m // (case.bm * case.cluster), n // case.bn) == (4, 5) and k // case.bk == 2 * case.stages + 3
    # the order only permutes the tiles: split-K's runs, stream-K's ranges, ping-pong's turns and a grid of one CTA
    # per tile walk them as they walk the other orders', so every such case is built
    for suffix in (".splitk2", ".streamk2"):
        assert FAMILY.parse(f"{SPLIT_HILBERT}{suffix}").order == "hilbert"
    assert FAMILY.parse(HILBERT.replace("persistent-", "grid-")).order == "hilbert"
    assert FAMILY.parse(PINGPONG_HILBERT).pingpong


SPLIT_HILBERT = "gemm.f16.4096x4096x4096.tile128x128x64.s4.wg2.setmaxnreg.cluster1.persistent-hilbert.tmastore"
PINGPONG_HILBERT = "gemm.f16.4096x4096x4096.tile128x128x64.s4.wg2.setmaxnreg.cluster2.persistent-hilbert.tmastore.pingpong"


def test_an_order_the_kernel_has_not_is_refused_in_one_line():
    with pytest.raises(SpecError, match="order 'zorder'.*hilbert") as refused:
        FAMILY.parse(HILBERT.replace("hilbert", "zorder"))
    assert "\n" not in str(refused.value)


def test_a_hilbert_case_renders_compiles_and_meets_its_sass_expectation(shared_cache):
    """Rendered with ORDER_HILBERT, compiled for sm_90a with no spill, and its SASS the family's expectation (the
    conformance sweep checks every case so; this one alone, by name)."""
    from harness.build.compile import compile_probe
    from harness.orchestration.runner import sass_check
    from harness.registry import probe_source

    case = FAMILY.parse(HILBERT)
    source = probe_source(case)
    assert "constexpr int ORDER = 2;" in source.text and FAMILY.template_params(case)["order"] == 2
    build = compile_probe(source)
    check = sass_check(case, build)
    assert build.spill_bytes() == 0 and check.ok, check.note
