"""Energy metrics two methods share (OccupancySweep.energy, WholeKernel.energy): the board's mean power over a
telemetry window, and from it the work per joule."""

from __future__ import annotations

import numpy as np

from harness.measure.measurement import Metric, Work
from harness.measure.methods.base import Row, throughput_unit

# A point measured for energy keeps launching, back to back, until its window has lasted this long: NVML's energy
# counter steps every 100 ms, and the mean power is taken between its first and last step in the window, each
# timed to the sampler's 10 ms (about 1 % of 2 s). Read at call time (energy.ENERGY_SECONDS): a test may shorten it.
ENERGY_SECONDS = 2.0


def energy_metrics(work: Work) -> list[tuple[str, str]]:
    return [("power_mean_w", "W"), ("energy_efficiency", f"{throughput_unit(work)}/W"),
            ("energy_pj_per_op", f"pJ/{work.unit}")]


def window_energy_metrics(state, rate: float, work: Work, common: dict,
                          rate_is: str = "the median launch of the window") -> list[Metric]:
    """Mean power over a window (the energy counter's steps, else the mean power reading), and the work per
    joule of the launches in it at `rate` (their median): one value each, for the window as a whole."""
    if state is None or not state.samples:
        return []
    if state.mean_power_w is not None:
        watts = state.mean_power_w
        readings = "" if state.mean_reading_w is None else f" (mean power reading {state.mean_reading_w:.0f} W)"
        how = f"NVML energy counter: {state.energy_steps} steps over {state.energy_seconds:.2f} s{readings}"
    elif state.mean_reading_w is not None:
        watts = state.mean_reading_w
        how = "no energy counter: the mean of the window's own power readings"
    else:
        return []  # neither: the window was shorter than the counter's steps and the readings' average
    note = f"{how}; {rate:.1f} {throughput_unit(work)}, {rate_is}"
    (power, w), (efficiency, e), (per_op, j) = energy_metrics(work)
    return [Metric(power, w, np.array([watts]), notes=note, **common),
            Metric(efficiency, e, np.array([rate / watts]), notes=note, **common),
            Metric(per_op, j, np.array([watts / rate]), notes=note, **common)]


def simulated_energy(work: Work, rate: float, watts: float, launch: dict) -> list[Row]:
    """The simulated GPU's energy rows: a board at `watts` doing `rate` (its throughput unit)."""
    (power, w), (efficiency, e), (per_op, j) = energy_metrics(work)
    return [(power, w, watts, launch), (efficiency, e, rate / watts, launch), (per_op, j, watts / rate, launch)]
