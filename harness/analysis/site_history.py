"""The results site's history: the measurements taken in the most runs, followed across runs and commits, with
the noise band `bench compare` allows about each point and a ring on each change beyond it."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from harness.analysis.noise import basis_of, noise_floor
from harness.db.frames import results
from harness.db.store import Store
from harness.plotting import history_range, mark_coinciding


HISTORY_SERIES = 6  # headline measurements followed across commits


def history(store: Store, figures: Path) -> list:
    """The measurements taken in the most runs (one per family where it can), followed across runs
    and commits, one line per GPU model."""
    frame = results(store, valid=True)
    if frame.empty:
        return []
    frame = frame[~frame.flagged.fillna(False)]
    counts = (frame.groupby(["family", "case_id", "metric", "launch_key"]).agg(runs=("run_id", "nunique"),
                                                                            commits=("git_commit", "nunique"))
              .reset_index())
    counts = counts[(counts.runs >= 3) & (counts.commits >= 2)].sort_values(["runs", "commits"], ascending=False)
    if counts.empty:
        return []
    picked = counts.groupby("family").head(2).head(HISTORY_SERIES)
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(picked), 1, figsize=(10, 2.6 * len(picked)), squeeze=False)
    rows, said = [], []
    for ax, key in zip(axes[:, 0], picked.itertuples(index=False)):
        series = frame[(frame.case_id == key.case_id) & (frame.metric == key.metric)
                       & (frame.launch_key == key.launch_key)].sort_values("run_id")
        changes = _history_changes(store, series)
        said += _draw_series(ax, key, series, changes)
        spread = series.value.max() / series.value.min() - 1 if series.value.min() > 0 else float("nan")
        rows.append({"case_id": key.case_id, "metric": key.metric, "launch": _launch_text(key.launch_key),
                     "runs": int(key.runs), "commits": int(key.commits), "unit": series.unit.iloc[0],
                     "lowest": series.value.min(), "highest": series.value.max(), "max / min - 1": spread,
                     "changes beyond the noise": int((changes.verdict != "same").sum())})
    axes[-1, 0].set_xlabel("run")
    fig.tight_layout()
    path = figures / "history.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return [("History across commits", [
        "The measurements taken in the most runs and by at least two harness commits, one line per GPU model "
        "(x: run number, in the order runs were stored). The shaded band about each point is the noise "
        "`bench compare` allows between two runs (the spreads of both, and the metric's floor); a red ring "
        "marks a run that differs from that GPU's previous one beyond it, as `bench compare --run N --against M` "
        "would say (slower, faster), and nothing else is a change. A step between commits is a change of the "
        "harness or of the probe, not of the GPU: the runs' commits are in the table below.", *said], path),
        ("History in numbers", [], pd.DataFrame(rows).round(4))]


def _draw_series(ax, key, series: pd.DataFrame, changes: pd.DataFrame) -> list[str]:
    """One measurement's history on `ax`: a line per GPU, the noise band about each point, a red ring on each
    change; returns what mark_coinciding says of lines drawn over each other."""
    bands = []
    for gpu, part in series.groupby("gpu_name"):
        line, = ax.plot(part.run_id, part.value, "o-", label=gpu, markersize=4)
        band = changes[changes.gpu_name == gpu]
        # the noise band compare uses about each run's value: a step inside it is noise
        noise, values = band.noise_here.to_numpy(), part.value.to_numpy()
        ax.fill_between(part.run_id.to_numpy(), values * (1 - noise), values * (1 + noise),
                        color=line.get_color(), alpha=0.15, lw=0)
        bands += list(band.noise_here)
        moved = band[band.verdict != "same"]
        ax.plot(moved.run_id, moved.value, "o", ms=10, mfc="none", mec="red", mew=1.5,
                label="_changed")
        for change in moved.itertuples(index=False):
            ax.annotate(change.verdict, (change.run_id, change.value), textcoords="offset points",
                        xytext=(0, 8), ha="center", fontsize=7, color="red")
    said = [f"{key.case_id} {key.metric}: {s}" for s in mark_coinciding(ax)]
    low, high = history_range(series.value.to_numpy(), max(bands) if bands else 0.0)
    ax.set_ylim(low, high)
    ax.ticklabel_format(axis="y", useOffset=False, style="plain")  # values as they are, no +1.28e2
    ax.set_title(f"{key.case_id}  {key.metric}  {_launch_text(key.launch_key)}", fontsize=9)
    ax.set_ylabel(series.unit.iloc[0], fontsize=8)
    ax.tick_params(labelsize=8)
    ax.legend(fontsize=7, loc="best")
    return said


def _history_changes(store: Store, series: pd.DataFrame) -> pd.DataFrame:
    """Each run of a measurement's history beside the same GPU's previous run, judged as
    run_verdicts.against_run judges two runs: the noise is the larger spread of the two, the metric's
    floor (two whole cycles where both sides' samples are whole cycles) and, for time-based metrics,
    the clock's drift; beyond it "slower" or "faster" (or less/more energy). Columns: gpu_name,
    run_id, value, noise_here (the band drawn about the point), verdict."""
    import numpy as np

    from harness import metrics as registry
    from harness.verdicts import FASTER, LESS_ENERGY, MORE_ENERGY, SAME, SLOWER

    arrays = store.samples_of(series.measurement_id) if len(series) else {}
    whole = {i: bool(len(a)) and np.array_equal(a, np.round(a)) for i, a in arrays.items()}
    metric = series.metric.iloc[0]
    basis = basis_of(pd.Series([metric])).iloc[0]
    lower = bool(registry.lower_is_better(metric))
    out = []
    for gpu, part in series.groupby("gpu_name"):
        previous = None
        for row in part.itertuples(index=False):
            spread = float(row.spread) if row.spread == row.spread and row.spread is not None else 0.0
            own = float(noise_floor(basis, whole.get(row.measurement_id, False), row.value, row.value))
            verdict, noise = SAME, max(spread, own)
            if previous is not None:
                stepped = whole.get(row.measurement_id, False) and whole.get(previous.measurement_id, False)
                floor = float(noise_floor(basis, stepped, row.value, previous.value))
                prev_spread = (float(previous.spread) if previous.spread == previous.spread
                               and previous.spread is not None else 0.0)
                limit = max(spread, prev_spread, floor)
                compared = row.value / previous.value if previous.value else float("nan")
                clocks = getattr(row, "sm_clock_mhz", None), getattr(previous, "sm_clock_mhz", None)
                if basis == "seconds" and all(c and c == c for c in clocks):
                    compared = (row.value / clocks[0]) / (previous.value / clocks[1])
                if compared == compared and abs(compared - 1) > limit + 1e-9:
                    better = compared < 1 if lower else compared > 1
                    verdict = ((LESS_ENERGY if better else MORE_ENERGY) if basis == "energy"
                               else FASTER if better else SLOWER)
            out.append({"gpu_name": gpu, "run_id": row.run_id, "value": row.value, "noise_here": noise,
                        "verdict": verdict})
            previous = row
    return pd.DataFrame(out, columns=["gpu_name", "run_id", "value", "noise_here", "verdict"])


def _launch_text(key: str) -> str:
    return re.sub(r'[{}"]', "", key or "").replace(":", "=").replace(",", " ")
