"""The host link on the GPU (harness/families/hostlink): small copies each way validate, a copy whose destination was
corrupted after the call fails its check, and the case measured end to end gives a plausible positive bandwidth."""

from __future__ import annotations

import numpy as np
import pytest

from harness.measure.device import open_device
from harness.orchestration.runner import loaded, measure_case, validate
from harness.registry import FAMILIES, parse_case_id

pytestmark = pytest.mark.gpu
FAMILY = FAMILIES["hostlink"]
SMALL = ["memcpy.h2d.pinned.4MiB", "memcpy.d2h.pinned.4MiB", "memcpy.bidir.pinned.4MiB", "memcpy.h2d.pageable.4MiB"]


def _probe(case):
    inputs = FAMILY.inputs(case, np.random.default_rng(0))
    return loaded(case, None, inputs, open_device(0)), inputs


@pytest.mark.parametrize("case_id", SMALL)
def test_a_small_copy_validates(case_id):
    case = parse_case_id(case_id)
    probe, inputs = _probe(case)
    result = validate(case, probe, inputs)
    assert result.ok, result.message


def test_a_corrupted_copy_fails(monkeypatch):
    """The call's copy lands, then a chunk of its destination is overwritten before the check reads it."""
    case = parse_case_id("memcpy.h2d.pinned.4MiB")
    probe, inputs = _probe(case)
    (link,) = probe.attached.resources
    copy = link._copy

    def corrupting(direction, stream):
        copy(direction, stream)
        link.landed[1024:2048] = link.landed[0:1024]  # a 4 KiB chunk repeated in place of the next

    monkeypatch.setattr(link, "_copy", corrupting)
    result = validate(case, probe, inputs)
    assert not result.ok and result.message


def test_the_case_measures_a_plausible_bandwidth():
    case = parse_case_id("memcpy.h2d.pinned.16MiB")
    result = measure_case(case, None, open_device(0))
    assert result.valid, result.error
    (metric,) = result.metrics
    assert metric.name == "bandwidth_gbps" and 1.0 < metric.value < 200.0, metric.value
