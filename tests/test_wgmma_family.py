import numpy as np
import pytest

from harness import dtypes
from harness.errors import IllegalShapeError, SpecError
from harness.families import wgmma
from harness.families.wgmma.fragments import accumulator_coords
from harness.spec import parse_case_id
from harness.measure.validate import compare


def _kernel_output(case, d):
    """What a correct kernel writes for D: each thread's accumulator words (the PTX layout)."""
    rows, cols = accumulator_coords(case.n, case.dtype_acc)
    bits = (dtypes.encode("f16", d) if case.dtype_acc == "f16"
            else d.astype(np.float32).view(np.uint32))[rows, cols].astype(np.uint32)
    return (bits[:, 0::2] | (bits[:, 1::2] << 16)) if case.dtype_acc == "f16" else bits


@pytest.mark.parametrize("case_id", ["wgmma.mma_async.m64n8k16.f32.f16.f16.SS",
                                     "wgmma.mma_async.m64n136k16.f16.f16.f16.RS",
                                     "wgmma.mma_async.m64n256k16.f32.bf16.bf16.RS"])
def test_a_correct_kernel_output_validates_and_a_wrong_one_does_not(case_id):
    case = parse_case_id(case_id)
    inputs = wgmma.make_inputs(case, np.random.default_rng(0))
    reference = wgmma.reference(case, inputs)
    words = _kernel_output(case, reference)
    assert compare(wgmma.decode_output(case, words.ravel()), reference, wgmma.tolerance(case, inputs)).ok
    swapped = words.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # two threads' registers exchanged: a layout bug
    result = compare(wgmma.decode_output(case, swapped.ravel()), reference, wgmma.tolerance(case, inputs))
    assert not result.ok and "elements differ" in result.message


def test_unwritten_output_never_validates():
    case = parse_case_id("wgmma.mma_async.m64n16k16.f32.f16.f16.SS")
    inputs = wgmma.make_inputs(case, np.random.default_rng(0))
    poison = np.full(wgmma.output_words(case), 0xFFFFFFFF, dtype=np.uint32)
    huge = np.full((64, 16), np.inf)
    assert not compare(wgmma.decode_output(case, poison), wgmma.reference(case, inputs), huge).ok


def test_input_buffer_holds_the_layouts_and_fragments():
    ss = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.SS")
    rs = parse_case_id("wgmma.mma_async.m64n64k16.f32.f16.f16.RS")
    rng = np.random.default_rng(0)
    assert wgmma.make_inputs(ss, rng).buffer.size == 2048 + 64 * 32
    assert wgmma.make_inputs(rs, rng).buffer.size == 64 * 32 + 128 * 4 * 4
    inputs = wgmma.make_inputs(ss, rng)
    assert inputs.a.std() > 0.5 and not (inputs.b == 0).all()  # never time on zeros


def test_descriptors_point_past_a_in_ss_mode():
    desc_a, desc_b = wgmma.descriptors(parse_case_id("wgmma.mma_async.m64n32k16.f32.f16.f16.SS"))
    assert desc_a.start_address == 0 and desc_b.start_address == 2048
    desc_a, desc_b = wgmma.descriptors(parse_case_id("wgmma.mma_async.m64n32k16.f32.f16.f16.RS"))
    assert desc_a is None and desc_b.start_address == 0


@pytest.mark.parametrize("case_id,error", [
    ("wgmma.mma_async.m64n12k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n264k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m32n64k16.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n64k32.f32.f16.f16.SS", IllegalShapeError),
    ("wgmma.mma_async.m64n64k16.f32.s8.s8.SS", SpecError),
    ("wgmma.mma_async.sp.m64n64k32.f32.f16.f16.SS", SpecError),
])
def test_illegal_or_unimplemented_cases_are_refused(case_id, error):
    with pytest.raises(error):
        wgmma.check(parse_case_id(case_id))


def test_work_and_sass_names():
    case = parse_case_id("wgmma.mma_async.m64n128k16.f32.bf16.bf16.RS")
    assert wgmma.flops(case) == 2 * 64 * 128 * 16
    assert wgmma.expected_sass(case) == "HGMMA.64x128x16.F32.BF16"
    assert wgmma.expected_sass(parse_case_id("wgmma.mma_async.m64n8k16.f16.f16.f16.SS")) == "HGMMA.64x8x16.F16"
