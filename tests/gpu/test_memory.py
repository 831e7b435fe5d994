"""The memory family on the GPU: every case validates, the levels order as a hierarchy must
(shared < L1 < L2 < HBM), and the L2's per-access samples are not on a coarse grid."""

from __future__ import annotations

import numpy as np
import pytest

from harness.build.compile import compile_probe
from harness.registry import probe_source
from harness.registry import FAMILIES
from harness.measure.device import open_device
from harness.orchestration.runner import RunSettings, measure_case
from harness.stats import coarse_grid

pytestmark = pytest.mark.gpu
MEMORY = FAMILIES["memory"]


@pytest.fixture(scope="module")
def measured():
    device = open_device(0)
    results = {}
    for case in MEMORY.cases():
        if case.footprint_bytes:  # the footprint sweeps: their two ends, below
            continue
        result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
        assert result.valid, (case.case_id, result.error)
        results[case.case_id] = result
    return results


def _latency(result, timed="chain") -> np.ndarray:
    return next(m.samples for m in result.metrics if m.name == "latency_cycles" and m.launch == {"timed": timed})


def test_latency_orders_as_a_hierarchy(measured):
    levels = ["ld.shared.u32.pchase", "ld.global.ca.u32.pchase.l1", "ld.global.cg.u32.pchase.l2",
              "ld.global.cg.u32.pchase.hbm"]
    medians = [float(np.median(_latency(measured[c]))) for c in levels]
    assert medians == sorted(medians) and medians[0] > 10 and medians[-1] > 2 * medians[2], medians


def test_each_access_matches_the_chain_and_sits_on_no_grid(measured):
    for case_id in ("ld.global.cg.u32.pchase.l2", "ld.global.cg.u32.pchase.hbm"):
        each, chain = _latency(measured[case_id], "each access"), _latency(measured[case_id])
        assert abs(np.mean(each) - np.median(chain)) < 0.15 * np.median(chain), (case_id, np.mean(each), chain)
        assert coarse_grid(each) is None, case_id


def test_shared_stream_reaches_most_of_its_banks(measured):
    rate = max(float(np.median(m.samples)) for m in measured["ld.shared.v4.u32.stream"].metrics)
    assert 0.8 * 128 <= rate <= 128 * 1.001, rate


def test_the_footprint_sweeps_ends_validate_and_the_largest_leaves_the_l2():
    """The sweep's smallest ring (8 MiB) and largest (128 MiB, past every Hopper's L2) validate after their warm
    pass, and the largest chase is slower by more than the capacity estimate's threshold (capacity.RISE)."""
    from harness.families.memory.cases import SWEEP_MIB
    from harness.families.memory.capacity import RISE

    device = open_device(0)
    medians = []
    for mib in (SWEEP_MIB[0], SWEEP_MIB[-1]):
        case = MEMORY.parse(f"ld.global.cg.u32.pchase.l2.footprint{mib}m")
        result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
        assert result.valid, (case.case_id, result.error)
        medians.append(float(np.median(_latency(result))))
    assert medians[1] > (1 + RISE) * medians[0], medians


def test_the_l1_footprint_sweeps_ends_validate_and_the_largest_leaves_the_l1():
    """The L1 sweep's smallest ring (16 KiB) and largest (512 KiB, twice the SM's L1 and shared memory together)
    validate after their warm pass at carve-out preference 0, and the largest chase is slower by more than the
    capacity estimate's threshold (capacity.RISE)."""
    from harness.families.memory.cases import SWEEP_KIB
    from harness.families.memory.capacity import RISE

    device = open_device(0)
    medians = []
    for kib in (SWEEP_KIB[0], SWEEP_KIB[-1]):
        case = MEMORY.parse(f"ld.global.ca.u32.pchase.l1.footprint{kib}k")
        result = measure_case(case, compile_probe(probe_source(case)), device, RunSettings())
        assert result.valid, (case.case_id, result.error)
        medians.append(float(np.median(_latency(result))))
    assert medians[1] > (1 + RISE) * medians[0], medians
