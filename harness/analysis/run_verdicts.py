"""A run against another run: the same case, metric and launch in both, "faster" or "slower" (power and
energy: "more energy" or "less energy") only beyond the noise of both sides (harness/analysis/noise.py)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.analysis.run_rows import measured
from harness.analysis.noise import basis_of, noise_floor, whole_cycle_keys
from harness.db.store import Store
from harness.verdicts import FASTER, LESS_ENERGY, MORE_ENERGY, SAME, SLOWER


# `basis` of a run-against-run row: a time-based metric per cycle (each side divided by the SM clock measured in its
# kernel), or per second where a side has no such clock. A library call (harness/anchors) is timed by CUDA events
# around a call of the library's: no kernel of ours runs, so no clock64 is read in it. NVML's sampled SM clock is no
# stand-in: on our own GEMM rows of the runs of record it reads a median 4.4 % and at the 90th percentile 13 % above
# the clock measured in the kernel (tests/test_readme_findings.py), past the 2 % the per-cycle comparison allows
# (noise.CLOCK_DRIFT); and the kernel that alternates with the call measures its own clock, not the library's. So a
# library row is compared per second, which across GPU models is the boards' difference, clocks included.
PER_CYCLE, PER_SECOND = "per cycle", "per second"


def against_run(store: Store, run_id: int, other: int, include_flagged: bool = False,
                tolerance: float = 0.0) -> pd.DataFrame:
    """Same case, metric and launch in two runs, nvbench-style: "faster" or "slower" only when the relative
    difference exceeds the noise of both sides (their spreads), the metric's floor, and `tolerance`.
    A power or energy metric (basis "energy") says "more energy" or "less energy" instead: power is
    not speed (harness/verdicts.py).

    Floors: a cycle metric whose samples are whole cycles on both sides moves in steps of
    CYCLE_QUANTUM, and each side may sit one step off, so two steps are noise; other cycle metrics
    RUN_NOISE_FLOOR.
    Time-based metrics are compared per cycle (divided by each side's in-kernel SM clock), with the
    floor CLOCK_DRIFT; so are ratios of them (peak_fraction, already per the clock). A time-based row with no
    in-kernel clock (a library call's) is compared per second; `basis` names each row's (PER_CYCLE, PER_SECOND, or
    the metric's own: cycles, ratio, energy)."""
    a, b = measured(store, run_id, include_flagged), measured(store, other, include_flagged)
    keys = ["case_id", "metric", "launch"]
    frame = a.merge(b[keys + ["value", "spread", "sm_clock_mhz"]], on=keys, suffixes=("", "_other"))
    frame = frame.rename(columns={"value_other": "other", "spread_other": "other_spread"})
    frame["ratio"] = frame.value / frame.other
    basis = basis_of(frame.metric)
    timed = (basis == "seconds").to_numpy()
    per_clock = (frame.value / frame.sm_clock_mhz) / (frame.other / frame.sm_clock_mhz_other)
    clocked = timed & per_clock.notna().to_numpy()
    compared = np.where(clocked, per_clock, frame.ratio)
    # the basis of `compared`, named on every row: a time-based row without an in-kernel clock on either side (a
    # library call's: cuBLAS, cuBLASLt, cuDNN record none) compares per second (PER_SECOND, above)
    frame["basis"] = np.where(clocked, PER_CYCLE, np.where(timed, PER_SECOND, basis))
    whole = whole_cycle_keys(store, run_id) & whole_cycle_keys(store, other)
    stepped = np.array([key in whole for key in zip(frame.case_id, frame.metric, frame.launch)], dtype=bool)
    floor = noise_floor(basis, stepped, frame.value.to_numpy(), frame.other.to_numpy())
    noise = np.maximum.reduce([frame.spread.fillna(0).to_numpy(), frame.other_spread.fillna(0).to_numpy(),
                               np.asarray(floor, dtype=float), np.full(len(frame), float(tolerance))])
    frame["compared"] = compared
    frame["change_pct"] = np.round((compared - 1) * 100, 1)  # beside the ratio, in the basis compared (issue 46)
    frame["noise"] = noise
    better = np.where(frame.metric.map(registry.lower_is_better).astype(bool), compared < 1, compared > 1)
    # the 1e-9 keeps an exact one-cycle step (quantum == difference) on the "same" side of the line
    energy = (basis == "energy").to_numpy()  # power is not speed: its own words
    frame["verdict"] = np.where(np.abs(compared - 1) <= noise + 1e-9, SAME,
                                np.where(energy, np.where(better, LESS_ENERGY, MORE_ENERGY),
                                         np.where(better, FASTER, SLOWER)))
    order = frame.case_id.map(natural_key)
    frame = frame.assign(_order=order).sort_values(["_order", "metric", "launch"], kind="stable").drop(columns="_order")
    return frame[["case_id", "metric", "launch", "unit", "value", "spread", "other", "other_spread",
                  "ratio", "change_pct", "compared", "basis", "noise", "verdict"]].reset_index(drop=True)


def natural_key(text: str) -> tuple:
    """'m64n8' before 'm64n104': numbers compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))
