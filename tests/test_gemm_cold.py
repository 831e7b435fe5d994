"""A cold placement of a GEMM's inputs (issue 44: decode shapes read their weights once, from memory), on the CPU: the
case dimension and its ids, how many copies of A, B and C the launches take in turn, the Attachment's rotation, the
whole-kernel method's blocks in whole turns, the planner's L2 term, the memory a case needs, and `bench gemm --cold`
end to end on the simulated GPU. tests/gpu/test_gemm_cold.py checks the rotation on the GPU."""

import time
from types import SimpleNamespace

import numpy as np
import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.db.store import Store
from harness.errors import SpecError
from harness.families.base import Work
from harness.families.gemm import configs, shapes
from harness.families.gemm.gpu import in_turn
from harness.families.gemm.ids import parse
from harness.families.gemm.model import predict_case
from harness.families.gemm.planner import GemmModel
from harness.families.gemm.problem import footprint_bytes, placement_copies
from harness.families.gemm.refusals import check
from harness.families.gemm.traffic import l2_resident
from harness.measure import methods
from harness.measure.launch import Attachment, Launch, LoadedProbe
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy

DECODE = "gemm.f16.64x4096x4096.tile64x128x64.s6.wg1.cluster1.persistent-grouped.tmastore"
MIB = 1 << 20


def test_cold_is_a_suffix_of_pipeline_and_library_ids_and_warm_adds_nothing():
    cold = parse(DECODE + ".cold")
    assert cold.placement == "cold" and cold.case_id == DECODE + ".cold" and cold.params()["placement"] == "cold"
    warm = parse(DECODE)
    assert warm.placement == "warm" and "placement" not in warm.params()  # the cases stored before the field
    library = parse("cublas.f16.64x4096x4096.inputs-int.cold")
    assert (library.placement, library.inputs) == ("cold", "int")
    assert library.params() == {"dtype": "f16", "m": 64, "n": 4096, "k": 4096, "library": True, "inputs": "int",
                                "placement": "cold"}
    assert parse("cublaslt.e4m3.4096x4096x4096.cold").case_id == "cublaslt.e4m3.4096x4096x4096.cold"
    with pytest.raises(SpecError, match="placement 'lukewarm'"):
        check(configs.pipeline("f16", (64, 4096, 4096), bm=64, bn=128, stages=6, consumers=1, persistent=True,
                               order="grouped", epilogue="tmastore", placement="lukewarm"))
    with pytest.raises(SpecError):
        parse(DECODE + ".warm")  # the default has no suffix


def test_copies_pass_twice_the_l2_between_two_launches_on_one():
    # by hand: A 64 x 4096 and B 4096 x 4096 f16, 34,078,720 B, and C 64 x 4096 f16, 524,288 B
    decode = parse(DECODE + ".cold")
    assert footprint_bytes(decode) == (64 + 4096) * 4096 * 2 + 64 * 4096 * 2 == 34_603_008
    # 2 x 50 MiB = 104,857,600 B over 34,603,008 a copy: 3.03, so 4 other copies, 5 in all
    assert placement_copies(decode, 50 * MIB) == 5
    assert placement_copies(decode, 60 * MIB) == 5  # 125,829,120 / 34,603,008 = 3.64
    big = parse("gemm.f16.8192x8192x8192.tile128x256x64.s3.wg2.setmaxnreg.cluster2.persistent-grouped.tmastore.cold")
    assert placement_copies(big, 50 * MIB) == 2  # 384 MiB a copy: one other copy is already 7.7 L2s
    assert placement_copies(parse(DECODE), 50 * MIB) == 1  # warm: the problem itself
    # the memory a case needs grows by the other copies (bench gemm refuses what does not fit)
    assert shapes.memory_bytes(decode, 50 * MIB) - shapes.memory_bytes(parse(DECODE), 50 * MIB) == 4 * 34_603_008


def test_a_rotation_is_one_set_of_arguments_a_turn_the_first_the_extra_args():
    check, first, second = np.zeros(1), np.zeros(1), np.zeros(1)
    extra = (check, first)
    rotating = Attachment(extra_args=extra, period=2, rotation=(extra, (check, second)))
    assert rotating.period == 2
    assert Attachment().period == 1 and Attachment(period=3).rotation == ()  # host kernels rotate their own
    with pytest.raises(ValueError, match="first arguments"):
        Attachment(extra_args=extra, period=2, rotation=((check, second), extra))
    with pytest.raises(ValueError, match="one set of arguments a turn"):
        Attachment(extra_args=extra, period=3, rotation=(extra, (check, second)))
    with pytest.raises(ValueError, match="at least 1"):
        Attachment(period=0)


def test_a_block_ends_on_the_first_set_and_a_single_launch_takes_it():
    """A block of whole turns takes the sets 1, 2, ..., 0, so the block after a single launch (a verification, the
    counting build's launch after a round: the first set) begins on the copy read longest ago; the library's host
    call takes the same order."""
    sets = [(object(),) for _ in range(3)]
    launched = []
    probe = object.__new__(LoadedProbe)  # no GPU: the launch loop alone, on a recording kernel
    probe.module = SimpleNamespace(get_function=lambda name: lambda grid, block, args, shared_mem=0:
                                   launched.append(args[-1]))
    probe.attached = Attachment(extra_args=sets[0], period=3, rotation=tuple(sets))
    probe.inputs = probe.out = None
    probe.enqueue("probe", 1, 1, 1, None, repeat=6)
    assert launched == [sets[i][0] for i in (1, 2, 0, 1, 2, 0)]
    launched.clear()
    probe.enqueue("probe", 1, 1, 1, None)
    assert launched == [sets[0][0]]
    made = []
    library = in_turn([lambda i=i: made.append(i) for i in range(3)])
    for _ in range(6):
        library()
    assert made == [1, 2, 0, 1, 2, 0]


def test_a_cold_placement_is_timed_in_sustained_rounds_only():
    with pytest.raises(SpecError, match="sustained rounds"):
        parse(DECODE + ".burst.cold")
    with pytest.raises(SpecError, match="sustained rounds"):
        parse("cublas.f16.64x4096x4096.burst.cold")


class Blocks:
    """A launcher with a rotation of `period` turns: records each block's launches."""

    def __init__(self, period):
        self.period, self.blocks = period, []

    def run(self, kernel, grid, block, iters, timing_words, repeat=1, graph=False):
        self.blocks.append((kernel, repeat))
        timing = np.zeros(timing_words, dtype=np.int64)  # records=False: nothing reads them
        time.sleep(1e-4)
        return Launch(np.zeros(4, dtype=np.uint32), timing, 0.7 * repeat, 1e-6)


def test_every_block_of_launches_is_a_whole_number_of_turns(monkeypatch):
    monkeypatch.setattr(methods.whole_kernel, "WHOLE_KERNEL_WARMUP_S", 0.0)
    probe = Blocks(5)
    spec = methods.WholeKernel("gemm", 1, 128, anchor="library", records=False)
    policy = TimingPolicy(warmup=1, min_samples=3, max_samples=5, min_seconds=0.0)
    methods.run(spec, methods.Context(probe, 1, policy, NullSampler(), Work(1e9, "FLOP"), None))
    repeats = [repeat for _, repeat in probe.blocks]
    assert repeats[0] == 5 and all(r % 5 == 0 for r in repeats), repeats  # 25 ms / 0.7 ms = 35 launches: 7 turns
    assert {r for k, r in probe.blocks[4:]} == {35}


def test_the_planner_reads_a_cold_problem_from_memory():
    params = GemmModel().prior("H100 SXM5")
    warm, cold = parse(DECODE), parse(DECODE + ".cold")
    assert l2_resident(warm, params.l2_bytes) and not l2_resident(cold, params.l2_bytes)
    fast, slow = predict_case(warm, params, 1500.0), predict_case(cold, params, 1500.0)
    assert slow.flops_per_cycle_sm < fast.flops_per_cycle_sm
    # read from memory, a call takes at least A's, B's and C's bytes over the memory's rate (the prior's hbm_gbps)
    seconds = cold.flops / (slow.tflops(params.sm_count, 1500.0) * 1e12)
    assert seconds >= footprint_bytes(cold) / (params.hbm_gbps * 1e9) * 0.999


def test_bench_gemm_cold_measures_the_planners_picks_and_the_library_cold(tmp_path, monkeypatch, shared_cache):
    monkeypatch.setenv("HOPPER_BENCH_BACKEND", "fake")
    db = str(tmp_path / "r.db")
    result = CliRunner().invoke(cli, ["gemm", "--shape", "64,4096,4096", "--top", "2", "--cold", "--db", db],
                                env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    store = Store.open(db)
    try:
        ids = list(store.query("SELECT DISTINCT case_id FROM results").case_id)
    finally:
        store.close()
    assert len(ids) == 3 and all(i.endswith(".cold") for i in ids) and "cublas.f16.64x4096x4096.cold" in ids
    assert "Cold (`.cold`)" in result.output and "GB/s" in result.output
    warm = CliRunner().invoke(cli, ["gemm", "--shape", "64,4096,4096", "--top", "1", "--db", str(tmp_path / "w.db")],
                              env={"COLUMNS": "200"})
    assert warm.exit_code == 0 and "Cold" not in warm.output
