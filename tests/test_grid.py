"""stats.coarse_grid: finds the 150-cycle grid of the TMA latencies before the fix (samples as stored in
results.db runs 24-38), and none in continuous samples or in a narrow spread."""

import numpy as np

from harness.stats import coarse_grid


def test_the_old_tma_latency_grid_is_found():
    # latency_raw_cycles of a 128-byte box from HBM, H100 run 37: 779, 929, 1079 and a few cycles off them
    samples = [779] * 20 + [929] * 25 + [1079] * 10 + [785, 935, 1085, 781, 931]
    assert coarse_grid(samples) == 150


def test_a_grid_with_a_different_step_is_found():
    rng = np.random.default_rng(0)
    samples = 500 + 46 * rng.integers(0, 6, 60) + rng.integers(0, 3, 60)  # the test_wait spin's 46-cycle period
    assert coarse_grid(samples) == 46


def test_continuous_samples_have_no_grid():
    rng = np.random.default_rng(1)
    assert coarse_grid(rng.normal(900, 100, 200).round()) is None  # an HBM latency after the fix: IQR ~200


def test_a_narrow_spread_says_nothing():
    assert coarse_grid([436, 437, 436, 440, 436, 438, 436, 436, 439, 436]) is None  # spans less than two steps
    assert coarse_grid([1, 2, 3]) is None  # too few samples


def test_separate_clusters_that_fit_a_step_by_chance_are_not_a_grid():
    # prefetched TMA latency of a 64x4 box, H100 run 60: the L2's near and far halves (~320 and ~515 cycles),
    # each with a second mode ~32 cycles up; a 33-cycle step fits 90 % of them, but they fill 4 of its 8 points
    samples = [318, 319, 320, 320, 320, 320, 320, 321, 321, 322, 323, 323, 324, 324, 325, 345, 347, 348, 348, 351,
               353, 353, 355, 356, 356, 356, 356, 357, 357, 358, 359, 509, 511, 511, 513, 516, 518, 519, 520, 520,
               522, 532, 543, 544, 545, 545, 547, 547, 548, 549, 549, 550, 550, 553, 554, 554, 556, 557, 559, 561]
    assert coarse_grid(samples) is None
