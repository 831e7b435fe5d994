"""The wgmma family on the CPU: decoding against the PTX ISA's fragment figures, inputs, checks, legality."""

import numpy as np
import pytest

from harness.errors import IllegalShapeError, SpecError
from harness.families.wgmma import FAMILY as wgmma
from harness.families.base import Work
from harness.families.wgmma import descriptors
from harness.families.wgmma.checks import reference
from harness.measure import methods
from harness.measure.validate import compare
from harness.registry import parse_case_id

# PTX ISA, "Register Fragments" for wgmma .m64nNk16, accumulator D (f32): (thread, register) -> (row, col),
# read off the figure: warp w = t // 32 owns rows 16w..16w+15; lane l: g = l // 4, q = l % 4.
FIGURE_D_F32_N16 = [((0, 0), (0, 0)), ((0, 1), (0, 1)), ((0, 2), (8, 0)), ((0, 3), (8, 1)), ((0, 4), (0, 8)),
                    ((5, 3), (9, 3)), ((37, 6), (25, 10)), ((127, 7), (63, 15))]
# f16 accumulators pack two elements per register, the lower column in the low half: register r of a
# thread holds elements 2r and 2r + 1 of the f32 order above.
FIGURE_D_F16_N16 = [((0, 0), [(0, 0), (0, 1)]), ((0, 1), [(8, 0), (8, 1)]), ((37, 3), [(25, 10), (25, 11)])]


def test_decode_places_each_register_where_the_ptx_figure_says():
    case = parse_case_id("wgmma.mma_async.m64n16k16.f32.f16.f16.SS")
    words = np.zeros((128, 8), dtype=np.float32)
    for n, ((thread, reg), _) in enumerate(FIGURE_D_F32_N16):
        words[thread, reg] = n + 1
    d = wgmma.decode(case, words.view(np.uint32).ravel())
    for n, (_, (row, col)) in enumerate(FIGURE_D_F32_N16):
        assert d[row, col] == n + 1
    assert np.count_nonzero(d) == len(FIGURE_D_F32_N16)


def test_f16_accumulators_decode_two_elements_per_register():
    case = parse_case_id("wgmma.mma_async.m64n16k16.f16.f16.f16.SS")
    words = np.zeros((128, 4), dtype=np.uint32)
    for n, ((thread, reg), _) in enumerate(FIGURE_D_F16_N16):
        low, high = np.array([2 * n + 1, 2 * n + 2], dtype=np.float16).view(np.uint16)
        words[thread, reg] = int(low) | int(high) << 16
    d = wgmma.decode(case, words.ravel())
    for n, (_, places) in enumerate(FIGURE_D_F16_N16):
        assert [d[r, c] for r, c in places] == [2 * n + 1, 2 * n + 2]


def test_unwritten_output_never_validates():
    case = parse_case_id("wgmma.mma_async.m64n16k16.f32.f16.f16.SS")
    inputs = wgmma.inputs(case, np.random.default_rng(0))
    poison = np.full(wgmma.output_words(case), 0xFFFFFFFF, dtype=np.uint32)
    huge = np.full((64, 16), np.inf)
    assert not compare(wgmma.decode(case, poison), reference(case, inputs), huge).ok


def test_checks_scale_the_reference_by_the_chain_length():
    case = parse_case_id("wgmma.mma_async.m64n32k16.f32.bf16.bf16.RS")
    inputs = wgmma.inputs(case, np.random.default_rng(0))
    single, chain = wgmma.checks(case, inputs)
    product = inputs.values["a"] @ inputs.values["b"].T  # B is stored N x K
    assert np.array_equal(single.expected, product) and np.array_equal(chain.expected, chain.iters * product)
    assert single.kernel == "probe_latency" and chain.kernel == "probe_chain" and chain.iters == 16


def test_input_buffer_holds_the_layouts_and_fragments():
    ss = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.SS")
    rs = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.RS")
    rng = np.random.default_rng(0)
    assert wgmma.inputs(ss, rng).buffer.size == 2048 + 64 * 32
    assert wgmma.inputs(rs, rng).buffer.size == 64 * 32 + 128 * 4 * 4
    inputs = wgmma.inputs(ss, rng)
    assert inputs.values["a"].std() > 0.5 and not (inputs.values["b"] == 0).all()  # never time on zeros


def test_descriptors_point_past_a_in_ss_mode():
    desc_a, desc_b = descriptors(parse_case_id("wgmma.mma_async.m64n32k16.f32.f16.f16.SS"))
    assert desc_a.start_address == 0 and desc_b.start_address == 2048
    desc_a, desc_b = descriptors(parse_case_id("wgmma.mma_async.m64n32k16.f32.f16.f16.RS"))
    assert desc_a is None and desc_b.start_address == 0


@pytest.mark.parametrize("case_id,error", [
    ("wgmma.mma_async.m64n12k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n264k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m32n64k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n64k32.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n64k16.f32.s8.s8.SS", SpecError),
    ("wgmma.mma_async.sp.m64n64k512.s32.b1.b1.and.popc.SS", IllegalShapeError),  # no sparse b1
    ("wgmma.mma_async.sp.m64n64k16.f32.f16.f16.SS", IllegalShapeError),  # sparse f16 is k32
    ("wgmma.mma_async.sp.m64n64k32.f32.f16.f16.SS.K-SW128", SpecError),  # sparse: default layout only
    ("wgmma.mma_async.m64n64k8.f32.tf32.tf32.SS.MN", IllegalShapeError),  # only f16/bf16 transpose
    ("wgmma.mma_async.m64n64k16.f32.f16.f16.SS.K-SW16", SpecError),
])
def test_illegal_or_unimplemented_cases_are_refused(case_id, error):
    with pytest.raises(error):
        wgmma.check(parse_case_id(case_id))


def test_work_and_sass_names():
    case = parse_case_id("wgmma.mma_async.m64n128k16.f32.bf16.bf16.RS")
    assert wgmma.work(case).amount == 2 * 64 * 128 * 16 and wgmma.work(case).unit == "FLOP"
    assert wgmma.sass_expectation(case).executes == "HGMMA.64x128x16.F32.BF16"
    f16 = wgmma.sass_expectation(parse_case_id("wgmma.mma_async.m64n8k16.f16.f16.f16.SS"))
    assert f16.executes == "HGMMA.64x8x16.F16" and not f16.emulated


def test_sparse_inputs_are_2_of_4_with_each_warps_metadata():
    """PTX ISA, sparse wgmma: at most two non-zeros in every chunk of four of A (one of two for tf32),
    A held compressed; warp w's metadata covers rows 16w..16w+15 (selector 0, and 1 where allowed)."""
    from harness import sparsity
    from harness.families.wgmma.placement import latency_selector, warpgroup_metadata

    for case_id, group in (("wgmma.mma_async.sp.m64n64k32.f32.f16.f16.SS", 4), ("wgmma.mma_async.sp.m64n64k16.f32.tf32.tf32.RS", 2),
                           ("wgmma.mma_async.sp.m64n64k64.s32.s8.u8.SS", 4)):
        case = parse_case_id(case_id)
        inputs = wgmma.inputs(case, np.random.default_rng(3))
        a = inputs.values["a"]
        nonzero = (a != 0).reshape(64, -1, group).sum(axis=2)
        assert nonzero.max() <= group // 2 and a.shape == (64, case.k)
        assert latency_selector(case) == (0 if case.dtype_a == "s8" else 1)
        rng = np.random.default_rng(3)
        pattern = sparsity.draw(case.dtype_a, 64, case.k, rng)
        words = warpgroup_metadata(case, pattern)
        for warp in range(4):
            expected = sparsity.metadata(case.dtype_a, pattern[16 * warp:16 * warp + 16], 0)
            assert np.array_equal(words[32 * warp:32 * warp + 32, 0], expected)


@pytest.mark.parametrize("pattern,low,high", [("zeros", 0, 0), ("small-int", -2, 2), ("uniform01", 0, 1)])
def test_input_distributions(pattern, low, high):
    for case_id in ("wgmma.mma_async.m64n256k16.f32.f16.f16.SS", "wgmma.mma_async.m64n256k32.f32.e4m3.e5m2.RS",
                    "wgmma.mma_async.m64n256k32.s32.u8.s8.SS"):
        case = parse_case_id(case_id)
        values = wgmma.inputs(case, np.random.default_rng(0), pattern).values
        for v in values.values():
            assert v.min() >= low and v.max() <= high
            assert pattern == "zeros" or len(np.unique(v)) > 1


def test_the_paper_programs_fill():
    """uniform11 is HPMLL's `random`: uniform(-1, 1) for float types, every value of an integer type."""
    rng = np.random.default_rng(0)
    f16 = wgmma.inputs(parse_case_id("wgmma.mma_async.m64n256k16.f32.f16.f16.SS"), rng, "uniform11").values["a"]
    assert -1 <= f16.min() < -0.9 and 0.9 < f16.max() < 1
    s8 = wgmma.inputs(parse_case_id("wgmma.mma_async.m64n256k32.s32.s8.s8.SS"), rng, "uniform11").values["b"]
    assert s8.min() == -128 and s8.max() == 127


def test_throughput_at_n256_is_measured_on_every_distribution():
    plan = wgmma.plan(parse_case_id("wgmma.mma_async.m64n256k16.f32.f16.f16.SS"))
    sustained = [s for s in plan if getattr(s, "inputs", None) and not s.idle_ms]
    assert sorted(s.inputs for s in sustained) == ["small-int", "uniform01", "uniform11", "zeros"]
    # and as bursts on the paper program's two fills, each with its own launch key (dense only)
    bursts = [s for s in plan if getattr(s, "idle_ms", 0)]
    assert sorted(s.inputs for s in bursts) == ["uniform11", "zeros"]
    assert all(s.points[0].launch["idle_ms"] == s.idle_ms > 0 for s in bursts)
    sparse = wgmma.plan(parse_case_id("wgmma.mma_async.sp.m64n256k32.f32.f16.f16.SS"))
    assert not [s for s in sparse if getattr(s, "idle_ms", 0)]
    assert not [s for s in wgmma.plan(parse_case_id("wgmma.mma_async.m64n128k16.f32.f16.f16.SS")) if getattr(s, "inputs", None)]


@pytest.mark.parametrize("case_id, whole_gpu", [
    ("wgmma.mma_async.m64n8k16.f32.f16.f16.SS", True),  # the paper's N: 8, 16, 32, 64, 128, 256 (Luo et al.)
    ("wgmma.mma_async.m64n128k32.s32.s8.s8.RS", True),
    ("wgmma.mma_async.sp.m64n64k64.f32.e4m3.e4m3.SS", True),
    ("wgmma.mma_async.m64n24k16.f32.bf16.bf16.SS", False),
    ("wgmma.mma_async.m64n144k256.s32.b1.b1.and.popc.SS", False),
    ("wgmma.mma_async.sp.m64n248k16.f32.tf32.tf32.RS", False),
    ("wgmma.mma_async.m64n64k16.f32.f16.f16.SS.MN-SW128", False)])  # the paper used one layout
def test_the_whole_gpu_rate_is_timed_with_one_warpgroup_at_the_papers_points_only(case_id, whole_gpu):
    case = parse_case_id(case_id)
    names = {(name, w) for spec in wgmma.plan(case) if isinstance(spec, methods.OccupancySweep)
             for point in spec.points for w in [point.launch["warpgroups"]] for name, _ in spec.declares(Work(1, "FLOP"))}
    assert ("sm_throughput", 1) in names and ("sm_throughput", 4) in names
    assert (("throughput_tflops", 1) in names) == whole_gpu
    assert ("throughput_tflops", 4) not in names


def test_the_main_job_leaves_the_energy_points_to_wgmma_energy_and_loses_nothing():
    """Issue 34 item 16: `wgmma` without the N = 256 input, energy and burst points (some 50 of its 78 s on
    an H100), `wgmma-energy` with them; the two together declare every metric at every launch that
    `wgmma` declared before, and the other suites keep them."""
    from harness.registry import parse_case_id
    from harness.suites import suite_cases

    def declared(case):
        work = wgmma.work(case)
        return {(case.case_id, name, tuple(sorted(spec_launch.items())))
                for spec in wgmma.plan(case) for name, _ in spec.declares(work)
                for spec_launch in ([p.launch for p in spec.points] if hasattr(spec, "points") else [spec.launch])}

    main, energy = suite_cases("wgmma"), suite_cases("wgmma-energy")
    assert len(main) == 192 and len(energy) == 6 and {c.case_id for c in energy} <= {c.case_id for c in main}
    before = set().union(*(declared(parse_case_id(c.case_id)) for c in main))  # a parsed id: every point
    now = set().union(*(declared(c) for c in main + energy))
    assert now == before
    for case in main:
        assert not [s for s in wgmma.plan(case) if getattr(s, "inputs", None) or getattr(s, "idle_ms", 0)
                    or getattr(s, "energy", False)]
    assert all(any(getattr(s, "energy", False) for s in wgmma.plan(c)) == (c.dtype_a == "f16") for c in energy)
    assert all(c.energy for c in suite_cases("wgmma-all")) and not any(c.energy for c in suite_cases("wgmma-quick"))
    assert "energy" not in main[0].params() and main[0].params() == parse_case_id(main[0].case_id).params()
