import itertools

import numpy as np
import pytest

from harness.errors import HarnessError
from harness.stats import summarize
from harness.timing import Records, TimingPolicy, collect


def test_summary_is_robust_to_an_outlier():
    s = summarize([10, 10, 10, 10, 1000])
    assert s.median == 10 and s.spread == 0 and s.maximum == 1000 and s.n == 5


def test_collect_stops_once_the_spread_is_small():
    calls = itertools.count()
    samples = collect(lambda: 100.0 + next(calls) % 2 * 0.01, TimingPolicy(warmup=2, min_samples=5))
    assert len(samples) == 5


def test_collect_discards_warmup_and_stops_at_the_maximum():
    values = iter([1e9, 1e9] + list(np.linspace(1, 100, 50)))
    samples = collect(lambda: next(values), TimingPolicy(warmup=2, min_samples=3, max_samples=10))
    assert len(samples) == 10 and samples.max() < 1e9


def test_records_measure_the_clock():
    words = np.array([[0, 1_800_000, 0, 1_000_000, 7], [5, 1_900_005, 0, 1_000_000, 9]])
    records = Records.from_words(words.ravel())
    assert records.sm_clock_mhz() == pytest.approx(1850)
    assert list(records.cycles) == [1_800_000, 1_900_000]


def test_unwritten_records_are_an_error():
    with pytest.raises(HarnessError, match="1 of 2 timing records"):
        Records.from_words(np.array([0, 1, 0, 1, 3, -1, -1, -1, -1, -1]))
