"""What counts as noise when two measurements are compared: each metric's basis, and the relative difference
that is noise whatever the spreads say (whole-cycle steps, a floor for other cycle metrics, the clock's drift)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.db.store import Store


# Run against run (against_run): a difference counts only beyond the noise of both sides and a floor.
RUN_NOISE_FLOOR = 0.005  # cycle metrics with sub-cycle resolution (a chain's slope): 0.5 %


CYCLE_QUANTUM = 1.0  # a metric whose samples are whole cycles (clock64 differences) moves in steps of 1


# Time-based metrics are first divided by the SM clock measured in the kernel; what stays is the clock's
# movement within a launch, which the per-launch median does not see: up to 1.9 % between two runs of
# one H100 and one commit (runs 1 and 2 of the shipped results.db, 738 pairs; 95 % within 0.7 %).
CLOCK_DRIFT = 0.02


def basis_of(metrics: pd.Series) -> pd.Series:
    """Each metric's basis (metrics registry); unknown names count as cycles."""
    return metrics.map(lambda m: registry.METRICS[m].basis if m in registry.METRICS else "cycles")


def noise_floor(basis, whole_cycles, a, b):
    """The relative difference of a and b that is noise whatever the spreads say (arrays or scalars):
    two cycle steps where both are counted in whole cycles, RUN_NOISE_FLOOR for other cycle metrics,
    CLOCK_DRIFT for time-based ones compared per cycle and their ratios."""
    steps = 2 * CYCLE_QUANTUM / np.maximum(np.minimum(np.abs(a), np.abs(b)), 1e-12)
    return np.where(whole_cycles, steps, np.where(np.asarray(basis) == "cycles", RUN_NOISE_FLOOR, CLOCK_DRIFT))


def whole_cycle_keys(store: Store, run_id: int) -> set[tuple[str, str, str]]:
    """(case_id, metric, launch) of the run's cycle measurements whose samples are all whole numbers."""
    frame = store.query(f"""SELECT measurement_id, case_id, metric, launch FROM results
                            WHERE run_id = {int(run_id)} AND unit = 'cycles'""")
    arrays = store.samples_of(frame.measurement_id)
    return {(case, metric, launch) for i, case, metric, launch in frame.itertuples(index=False)
            if i in arrays and np.array_equal(arrays[i], np.round(arrays[i]))}
