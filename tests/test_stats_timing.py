import itertools

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.stats import summarize
from harness.measure.timing import Records, TimingPolicy, collect, stop_reason


def test_summary_is_robust_to_an_outlier():
    s = summarize([10, 10, 10, 10, 1000])
    assert s.median == 10 and s.spread == 0 and s.maximum == 1000 and s.n == 5


def test_collect_stops_once_the_spread_is_small():
    calls = itertools.count()
    collected = collect(lambda: 100.0 + next(calls) % 2 * 0.01, TimingPolicy(warmup=2, min_samples=5, min_seconds=0))
    assert len(collected.values) == 5 and collected.stop_reason.startswith("spread 0.01% <=")


def test_collect_discards_warmup_and_stops_at_the_maximum():
    values = iter([1e9, 1e9] + list(np.linspace(1, 100, 50)))
    collected = collect(lambda: next(values), TimingPolicy(warmup=2, min_samples=3, max_samples=10, converged=0))
    assert len(collected.values) == 10 and collected.values.max() < 1e9
    assert collected.stop_reason == "sample limit (10)"


def test_a_noisy_measurement_stops_once_its_spread_stops_changing():
    rng = np.random.default_rng(1)
    collected = collect(lambda: 100 + 5 * rng.standard_normal(), TimingPolicy(warmup=0, min_samples=7, max_samples=400, min_seconds=0))
    assert 14 <= len(collected.values) < 400 and collected.stop_reason.startswith("spread converged at")


def test_the_time_limits():
    policy = TimingPolicy(min_samples=3, min_seconds=0.5, max_seconds=2.0)
    assert stop_reason([1.0, 1.0, 1.0], elapsed=0.1, policy=policy) is None  # too soon, however tight
    assert stop_reason([1.0, 1.0, 1.0], elapsed=0.6, policy=policy).startswith("spread")
    assert stop_reason([1.0, 5.0, 9.0], elapsed=2.5, policy=policy) == "time limit (2 s)"
    assert stop_reason([1.0, 5.0], elapsed=2.5, policy=policy) is None  # never fewer than min_samples


def test_records_measure_the_clock():
    words = np.array([[0, 1_800_000, 0, 1_000_000, 7], [5, 1_900_005, 0, 1_000_000, 9]])
    records = Records.from_words(words.ravel())
    assert records.sm_clock_mhz() == pytest.approx(1850)
    assert list(records.cycles) == [1_800_000, 1_900_000]


def test_unwritten_records_are_an_error():
    with pytest.raises(HarnessError, match="1 of 2 timing records"):
        Records.from_words(np.array([0, 1, 0, 1, 3, -1, -1, -1, -1, -1]))
