"""TMA on the GPU: the swizzle model is what the hardware does (a wrong model fails), every CTA of a
multicast receives every box, and a quick suite measures end to end."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from harness.families import FAMILIES
from harness.families.base import Check
from harness.measure.device import open_device
from harness.measure.runner import RunSettings, measure_case, validate
from harness.spec import parse_case_id
from gpu.test_probes import loaded

pytestmark = pytest.mark.gpu
TMA = FAMILIES["tma"]
SW128 = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128"


def test_the_128_byte_swizzle_is_not_the_identity():
    """The same box checked as if it landed unswizzled must fail: the model's XOR is what happened."""
    case = parse_case_id(SW128)
    probe, inputs = loaded(case)
    assert validate(case, probe, inputs).ok
    plain = TMA.checks(replace(case, swizzle=0), inputs)[0]
    launch = probe.run(plain.kernel, plain.grid, plain.threads, plain.iters, plain.timing_words)
    assert not np.array_equal(TMA.decode(case, launch.out), plain.expected)


@pytest.mark.parametrize("case_id", [f"{SW128}.multicast{c}" for c in (2, 4, 8)]
                         + [SW128.replace("box64x64", "box64x32") + ".multicast16"])  # 16: a run-time cluster size
def test_multicast_reaches_every_cta(case_id):
    case = parse_case_id(case_id)
    cluster = case.cluster
    probe, inputs = loaded(case)
    check: Check = TMA.checks(case, inputs)[0]
    launch = probe.run(check.kernel, check.grid, check.threads, check.iters, check.timing_words)
    out = TMA.decode(case, launch.out)
    per_cta = case.box_bytes * cluster // 4
    for rank in range(cluster):
        assert np.array_equal(out[rank * per_cta:(rank + 1) * per_cta], check.expected[:per_cta]), rank


@pytest.mark.parametrize("case_id", ["cp.async.bulk.tensor.2d.shared::cluster.global.tile.b16.box64x64.sw128",
                                     "ld.global.v4.u32", "mbarrier.arrive.expect_tx.then.try_wait"])
def test_measured_end_to_end(case_id):
    from harness.build.compile import compile_probe
    from harness.build.render import render

    case = parse_case_id(case_id)
    result = measure_case(case, compile_probe(render(case)), open_device(0), RunSettings())
    assert result.valid, result.error
    for metric in result.metrics:
        assert metric.samples is not None and np.all(np.isfinite(metric.samples)) and np.all(metric.samples > 0), \
            metric.name
