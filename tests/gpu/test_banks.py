"""The banks family on the GPU: every case validates, and each layout's best shared-memory bytes per cycle per SM
follows the bank model's wavefronts (bytes / wavefronts x 128 B a bank cycle) within 15 % on the cases that
decide the model: LDS.32 from conflict-free to 32-way, LDS.64/LDS.128 phases, a column of 128-byte rows plain
and swizzled, and ldmatrix under the seed chapter's f16-element Swizzle<3,4,3> against the 128B mode."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_many, compile_probe
from harness.families.banks import FAMILY, parse
from harness.families.banks.model import predicted
from harness.measure import methods
from harness.measure.device import open_device
from harness.measure.launch import LoadedProbe
from harness.measure.telemetry import NullSampler
from harness.measure.timing import TimingPolicy
from harness.orchestration.runner import validate
from harness.registry import probe_source

pytestmark = pytest.mark.gpu

DECIDING = ["banks.ld.b32.linear", "banks.ld.b32.way2", "banks.ld.b32.way4", "banks.ld.b32.way8", "banks.ld.b32.way16",
            "banks.ld.b32.way32", "banks.ld.b64.linear", "banks.ld.b64.way4", "banks.ld.b128.linear",
            "banks.ld.b128.col128", "banks.ld.b128.sw128", "banks.st.b32.way8", "banks.st.b128.sw64",
            "banks.ldmatrix.x4.sw128", "banks.ldmatrix.x4.sw128.f16elem", "banks.ldmatrix.x1.col128",
            "banks.stmatrix.x4.trans.sw128.f16elem", "banks.ld.b16.sw128.f16elem", "banks.st.b32.epi",
            "banks.st.b32.epi.sw128", "banks.st.b64.epi.sw128"]


@pytest.fixture(scope="module")
def device():
    return open_device(0)


@pytest.fixture(scope="module", autouse=True)
def compiled():
    compile_many([probe_source(case) for case in FAMILY.cases()])


def _loaded(case):
    inputs = FAMILY.inputs(case, np.random.default_rng(3))
    return LoadedProbe(compile_probe(probe_source(case)), inputs.buffer, FAMILY.output_words(case)), inputs


@pytest.mark.parametrize("case", FAMILY.cases(), ids=str)
def test_every_case_validates(case):
    probe, inputs = _loaded(case)
    result = validate(case, probe, inputs)
    assert result.ok, result.message


@pytest.mark.parametrize("case_id", DECIDING)
def test_the_best_rate_follows_the_bank_model(case_id, device):
    case = parse(case_id)
    probe, inputs = _loaded(case)
    assert validate(case, probe, inputs).ok
    (spec,) = FAMILY.plan(case, device)
    ctx = methods.Context(probe, device.sm_count, TimingPolicy(), NullSampler(), FAMILY.work(case), FAMILY.peak(case))
    best = max(m.value for m in methods.run(spec, ctx) if m.name == "sm_throughput")
    assert best == pytest.approx(predicted(case), rel=0.15), (case_id, case.wavefronts(), best, predicted(case))
