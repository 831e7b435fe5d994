"""Verdicts of the data-movement comparison that say no more than the measurement supports (issue 34,
items 1-6): one bandwidth unit, the uncertainty of the statistic compared (never a distribution's width),
the clock basis the paper measured in, the paper's own statistic, a clock verdict that evidence can
contradict, and the roofline as the best plain reader of the run. Each test fails on the old behaviour."""

import pytest

from harness import published as references

H800 = "H800 PCIe"


def _mapped(case_id, metric, gpu=H800):
    return [r for r in references.mapped() if r.gpu == gpu and r.case_id == case_id and r.metric == metric]


# -- 1. units -------------------------------------------------------------------------------------------

def test_every_published_bandwidth_is_decimal_gbps():
    assert references.to_gbps(1.0, "GiB/s") == pytest.approx(1.073741824)
    assert references.to_gbps(3.27, "TB/s") == pytest.approx(3270.0)
    with pytest.raises(ValueError):
        references.to_gbps(1.0, "cycles")
    bandwidths = [r for r in references.load() if r.unit in references.GBPS_PER_UNIT]
    assert bandwidths and {r.unit for r in bandwidths} == {"GB/s"}  # none left in GiB/s or TB/s
    tma = [r for r in bandwidths if "TMA/Throughput" in r.table]
    assert tma and all("GiB/s" in r.notes for r in tma)  # the printed unit stays in the row


def test_tma_fractions_of_the_paper_roofline_convert_the_logs_gib_to_gb():
    (bulk,) = _mapped("cp.async.bulk.shared::cluster.global.8192B", "roofline_fraction")
    # the log's 1802.97 is GiB/s; Table V's 1861.5 decimal GB/s: mixed, the fraction was 7.4 % low
    assert bulk.value == pytest.approx(1802.971191 * 2**30 / 1e9 / 1861.5)
    assert bulk.value > 1.0 > 1802.971191 / 1861.5
    assert bulk.unit == "ratio" and "GiB/s" in bulk.notes and "1861.5 GB/s" in bulk.notes
