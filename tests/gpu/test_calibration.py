"""The timer itself: a kernel of known cycle cost, and clock64 against %globaltimer and NVML."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.measure.device import open_device, sm_clock_now_mhz
from harness.measure.launch import LoadedProbe
from harness.build.render import render_calibration
from harness.measure.timing import Records

pytestmark = pytest.mark.gpu

FFMA_DEPENDENT_LATENCY = 4  # cycles: dependent fma.rn.f32 issue latency on Volta through Hopper


@pytest.fixture(scope="module")
def probe():
    device = open_device(0)
    inputs = np.frombuffer(np.array([1.0000001, 0.9999999, 1e-7], dtype=np.float32).tobytes(), dtype=np.uint8)
    return device, LoadedProbe(compile_probe(render_calibration()), inputs, 32)


def _cycles(probe, iters, count=768):
    launch = probe.run(f"calibrate_ffma_{count}", 1, 32, iters, 5)
    return Records.from_words(launch.timing)


def test_ffma_chain_costs_its_known_cycles(probe):
    """Same loop, 768 vs 256 FMAs per body: the loop overhead cancels, 4 cycles per FMA remain."""
    _, loaded = probe
    iters = 2000
    _cycles(loaded, iters, 256), _cycles(loaded, iters, 768)  # warm-up
    slopes = [(_cycles(loaded, iters, 768).cycles[0] - _cycles(loaded, iters, 256).cycles[0]) / (512 * iters)
              for _ in range(5)]
    assert np.median(slopes) == pytest.approx(FFMA_DEPENDENT_LATENCY, rel=0.01), slopes


def test_clock64_rate_matches_the_sm_clock(probe):
    device, loaded = probe
    records = _cycles(loaded, 10_000)  # a few ms: long enough for %globaltimer's resolution
    measured = records.sm_clock_mhz()
    reported = sm_clock_now_mhz(device.uuid)
    assert 500 < measured <= (device.max_sm_clock_mhz or 3000) * 1.02
    if reported:
        assert measured == pytest.approx(reported, rel=0.05)
