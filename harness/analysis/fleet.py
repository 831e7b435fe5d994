"""`bench fleet`: the same case side by side on every GPU in the database, and the GPUs that stand apart.

Each GPU (by UUID) contributes its newest valid, unflagged measurement of each case, metric and
launch. Cycle metrics compare as they are; time-based metrics are divided by the SM clock measured in
the kernel first (work per cycle), so a GPU that is merely clocked lower is not called slow on them;
the clock itself is a row of its own (the median SM clock of the GPU's time-based measurements),
so a GPU whose clock sags is named for that. A library call's rows (an anchor: cuBLAS, cuBLASLt, cuDNN) have no
clock measured in a kernel of ours, so they compare per second, the clocks included (run_verdicts.PER_SECOND says
why NVML's clock is no stand-in). Each row's `basis` and `compared_unit` say what `compared` is.

An outlier is a GPU whose value differs from the median of its siblings (the other GPUs of the same
model, measured by the same harness commit: a change of the harness is no difference between GPUs)
by more than their noise: the largest spread among them, the floors of run-against-run
comparison (harness/analysis/noise.py: two whole cycles, 0.5 % for other cycle metrics, the
clock's drift for time-based ones), and `tolerance`. A GPU needs at least MIN_SIBLINGS siblings
for "stands apart" to mean anything.
"""

from __future__ import annotations

import fnmatch

import numpy as np
import pandas as pd

from harness.analysis.noise import basis_of, noise_floor
from harness.analysis.run_verdicts import PER_CYCLE, PER_SECOND
from harness.db.store import Store, gpu_label
from harness.errors import SpecError

MIN_SIBLINGS = 2  # other GPUs of the same model needed to call one an outlier
CLOCK_ROW = "sm_clock_mhz"  # the per-GPU clock row's metric name
CLOCK = "clock"  # the clock row's basis: the clock itself, in MHz


def _devices_of_model(store: Store, model: str) -> list[int] | None:
    """The devices whose rows decide the table's rows of GPUs labelled `model` ("<model> <uuid's end>", or a name
    that starts with "<model> "): every device of each GPU name such a label has, since siblings are of one name.
    None: every device (a nameless one among them, whose rows group as no name does)."""
    devices = store.query("SELECT id, name, uuid FROM devices")
    names = {name for name, uuid in zip(devices.name, devices.uuid) if gpu_label(name, uuid).startswith(model + " ")}
    if any(not isinstance(name, str) or not name for name in names):
        return None
    return [int(i) for i, name in zip(devices.id, devices.name) if name in names]


def _latest(store: Store, devices: list[int] | None = None) -> pd.DataFrame:
    """Every GPU's newest valid, unflagged measurement per case, metric and launch (of `devices` alone: their ids)."""
    only = f" AND d.id IN ({', '.join(str(int(i)) for i in devices) or 'NULL'})" if devices is not None else ""
    frame = store.query("""
        SELECT d.uuid, d.name AS gpu_name, r.id AS run_id, r.git_commit, c.case_id, m.metric, m.launch, m.unit, m.value,
               m.spread, m.sm_clock_mhz
        FROM measurements m JOIN runs r ON r.id = m.run_id JOIN devices d ON d.id = r.device_id
             JOIN cases c ON c.id = m.case_pk
        WHERE m.valid AND m.value IS NOT NULL
              AND NOT (COALESCE(m.throttled, FALSE) OR COALESCE(m.other_processes, 0) > 0)""" + only)
    if frame.empty:
        return frame
    frame = frame.sort_values("run_id").groupby(["uuid", "case_id", "metric", "launch"], as_index=False).last()
    return frame


def compared_note(rows: pd.DataFrame) -> str:
    """One line on what `table`'s rows compare (its `basis` column): how many per cycle, how many per second (a
    library call's) and how many as measured."""
    counts = rows.basis.value_counts()
    per_cycle, per_second = int(counts.get(PER_CYCLE, 0)), int(counts.get(PER_SECOND, 0))
    other = len(rows) - per_cycle - per_second - int(counts.get(CLOCK, 0))
    parts = [f"{per_cycle} time-based rows per cycle (over the SM clock measured in the kernel: e.g. TFLOPS/MHz)"
             ] if per_cycle else []
    parts += [f"{per_second} rows of library calls per second (cuBLAS, cuBLASLt, cuDNN measure no clock of their "
              "own: the GPUs' clocks are in the difference)"] if per_second else []
    parts += [f"{other} rows as measured (cycles, ratios, energy)"] if other else []
    parts += ["each GPU's SM clock in MHz"] if counts.get(CLOCK, 0) else []
    return "compared: " + "; ".join(parts) + " (column basis)"


def table(store: Store, case_glob: str | None = None, metric: str | None = None,
          tolerance: float = 0.0, model: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(rows: one per GPU, case, metric and launch with the compared value and its verdict;
    outliers: one per GPU that stands apart, with how often and where most). With `model`, the rows and outliers of
    the GPUs whose label starts with "<model> " (a report's GPU model), as the whole table has them, read from
    their GPU names' devices alone."""
    frame = _latest(store, _devices_of_model(store, model) if model is not None else None)
    if frame.empty:
        raise SpecError(f"no valid measurements in {store.url} (see `bench runs`)")
    if metric is not None:
        known = sorted(set(frame.metric) | {CLOCK_ROW})
        if metric not in known:
            raise SpecError(f"no metric {metric!r} in the database: metrics are {', '.join(known)}")
    basis = basis_of(frame.metric)
    timed = basis == "seconds"
    frame["git_commit"] = frame.git_commit.fillna("").str[:10]
    clocks = (frame[timed & frame.sm_clock_mhz.notna()].groupby(["uuid", "gpu_name", "git_commit"], as_index=False)
              .sm_clock_mhz.median().assign(case_id="(every time-based measurement)", metric=CLOCK_ROW,
                                            launch="{}", unit="MHz", spread=0.0))
    clocks["value"] = clocks.sm_clock_mhz
    clocked = timed & frame.sm_clock_mhz.notna()
    frame = frame.assign(compared=np.where(clocked, frame.value / frame.sm_clock_mhz, frame.value), basis=basis,
                         # what `compared` is: per cycle (over the in-kernel clock), per second (a library call's
                         # rate: no clock of its own), else the metric's own basis (cycles, ratio, energy)
                         compared_basis=np.where(clocked, PER_CYCLE, np.where(timed, PER_SECOND, basis)),
                         compared_unit=np.where(clocked, frame.unit.fillna("").astype(str) + "/MHz", frame.unit))
    clocks = clocks.assign(compared=clocks.value, basis="seconds", compared_basis=CLOCK, compared_unit="MHz")
    rows = pd.concat([frame, clocks], ignore_index=True)
    if case_glob:
        rows = rows[rows.case_id.map(lambda c: any(fnmatch.fnmatchcase(c, g.strip()) for g in case_glob.split(",")))
                    | (rows.metric == CLOCK_ROW)]
        if not (rows.metric != CLOCK_ROW).any():
            raise SpecError(f"--case {case_glob!r} matches no measured case")
        measured = set(rows[rows.metric != CLOCK_ROW].uuid)
        rows = rows[(rows.metric != CLOCK_ROW) | rows.uuid.isin(measured)]  # the clock of GPUs that ran them
    if metric is not None:
        rows = rows[rows.metric == metric]
    rows = rows.reset_index(drop=True)
    group = rows.groupby(["gpu_name", "git_commit", "case_id", "metric", "launch"], sort=False).ngroup().to_numpy()
    size = np.bincount(group)
    compared = rows.compared.to_numpy(float)
    median = np.full(len(rows), np.nan)
    order = np.argsort(group, kind="stable")
    starts = np.concatenate(([0], np.cumsum(size)))
    for g in np.flatnonzero(size >= MIN_SIBLINGS + 1):  # numpy per group: pandas per row took minutes
        members = order[starts[g]:starts[g + 1]]
        values = compared[members]
        for j, index in enumerate(members):
            median[index] = np.median(np.delete(values, j))
    whole = rows.unit.eq("cycles") & rows.value.eq(rows.value.round())
    all_whole = whole.groupby(group).transform("all").to_numpy()
    widest = rows.spread.fillna(0).groupby(group).transform("max").to_numpy(float)
    basis = np.where(rows.metric == CLOCK_ROW, "seconds", rows.basis)
    with np.errstate(divide="ignore", invalid="ignore"):
        floor = noise_floor(basis, all_whole, compared, median)
        difference = np.where(median != 0, compared / median - 1, np.nan)
    judged = ~np.isnan(median)
    rows["siblings"] = size[group] - 1
    rows["median_of_siblings"] = median
    rows["difference"] = np.where(judged, difference, np.nan)
    rows["noise"] = np.where(judged, np.maximum.reduce([widest, floor, np.full(len(rows), tolerance)]), np.nan)
    rows["outlier"] = rows.difference.abs() > rows.noise + 1e-9
    gpus = list(zip(rows.gpu_name.tolist(), rows.uuid.tolist()))
    labels = {gpu: gpu_label(*gpu) for gpu in set(gpus)}  # a few GPUs label tens of thousands of rows
    rows["gpu"] = [labels[gpu] for gpu in gpus]
    shown = rows[["gpu", "git_commit", "case_id", "metric", "launch", "unit", "value", "compared", "compared_basis",
                  "compared_unit", "siblings", "median_of_siblings", "difference", "noise", "outlier"]]
    shown = shown.rename(columns={"compared_basis": "basis"})
    columns = ["gpu", "rows_apart", "of_rows", "worst_case", "worst_metric", "worst_difference", "worst_basis"]
    flagged = rows[rows.outlier]
    if flagged.empty:
        return shown, pd.DataFrame(columns=columns)
    summary = []
    for gpu, group in flagged.groupby("gpu"):
        worst = group.loc[group.difference.abs().idxmax()]
        summary.append((gpu, len(group), int((rows.gpu == gpu).sum()), worst.case_id, worst.metric,
                        round(float(worst.difference), 4), worst.compared_basis))
    outliers = pd.DataFrame(summary, columns=columns)
    return shown, outliers.sort_values("rows_apart", ascending=False).reset_index(drop=True)
