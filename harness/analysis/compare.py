"""A run against the paper, the model, or another run: one row per case and metric, as DataFrames.

Metrics are treated by what the registry (harness/metrics.py) says of them, and cases by
what their family says: which launch stands for a case where a metric has several
(Family.headline; None: the best of them), and what its model predicts (Family.model).

This module is the comparison's front: which comparison an argument names (parse_against), compare() and
comparison() (`bench compare`, harness.compare). The work is below it: run_rows.py (a run's rows),
pairing.py (which figure beside which row), uncertainty.py (the statistic and its interval),
paper_verdicts.py (against the paper and the model), noise.py and run_verdicts.py (against another run)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.analysis.run_rows import default_run
from harness.analysis.paper_verdicts import against_model, against_paper
from harness.analysis.run_verdicts import against_run
from harness.db.store import Store
from harness.errors import SpecError, StoreError
from harness.paper import DEFAULT_TOLERANCE
from harness.verdicts import DIFFERING, FAILING, FAILING_ENERGY, NO_PAPER_FIGURE


RUN_ID_MAX = 2**63 - 1  # the largest run id (SQLite's integer)
SORTS = ("case", "change")  # a comparison's order: by case and metric, or the largest relative change first
RATIO_OF = {"paper": "paper_ratio", "model": "model_ratio"}  # the ratio a row's change is read from (a run: compared)


class BadArgument(SpecError):
    """An argument of a comparison that names nothing it can compare: `parameter` says which
    (against, metric), so that the CLI can name its option."""

    def __init__(self, parameter: str, message: str):
        super().__init__(message)
        self.parameter = parameter


def parse_against(against: str | int) -> str | int:
    """What a run is compared with: "paper", "model", or another run's id (1 to RUN_ID_MAX; as a number
    or its digits) -> "paper", "model" or the id as an int."""
    if isinstance(against, int) and not isinstance(against, bool) and 1 <= against <= RUN_ID_MAX:
        return against
    if against in ("paper", "model"):
        return against
    if isinstance(against, str) and against.isdigit() and 1 <= int(against) <= RUN_ID_MAX:
        return int(against)
    raise BadArgument("against", f"{against!r}: expected paper, model or a run id from 1 to {RUN_ID_MAX}")


def verdict_column(against: str | int) -> str:
    """The column that holds a comparison's verdicts: model_verdict against the model, else verdict."""
    return "model_verdict" if against == "model" else "verdict"


def run_label(store: Store, run_id: int) -> str:
    """A run as a line names it: its GPU, suite and commit."""
    info = store.run_info(run_id)
    commit = (info.git_commit or "no commit")[:8]
    return f"{info.gpu_name or 'unknown GPU'}, suite {info.suite}, commit {commit}"


def compare(store: Store, run_id: int | None, against: str | int = "paper", include_flagged: bool = False,
            tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """Every row of a run against the paper, the model or another run (parse_against), unfiltered."""
    run_id = default_run(store) if run_id is None else run_id
    against = parse_against(against)
    if against == "paper":
        return against_paper(store, run_id, include_flagged, tolerance)
    if against == "model":
        return against_model(store, run_id, include_flagged, tolerance)
    store.run_info(against)
    return against_run(store, run_id, against, include_flagged, tolerance)


@dataclass(frozen=True)
class Comparison:
    """A run against the paper, the model or another run, as `bench compare` gives it (and
    harness.compare). `failing` counts the rows whose verdict fails the comparison
    (harness/verdicts.py FAILING: DISAGREES against the paper or the model, slower against a run),
    counted after the metric filter and before `disagreements` kept only the differing rows; power and
    energy differences (more energy) count only when `gate_energy` was asked for. `energy_differences`
    counts the rows of "more energy" either way."""

    run_id: int
    against: str | int  # "paper", "model" or the other run's id
    frame: pd.DataFrame
    failing: int
    no_model: bool  # against the paper or the model, no row has a model prediction
    energy_differences: int = 0

    @property
    def column(self) -> str:
        return verdict_column(self.against)

    @property
    def failed(self) -> bool:
        """Does a row fail the comparison (the CLI's exit status 3)?"""
        return self.failing > 0

    def counts(self) -> pd.Series:
        """How many rows have each verdict, most first."""
        return self.frame[self.column].value_counts()


def comparison(store: Store, run_id: int | None = None, against: str | int = "paper", metric: str | None = None,
               disagreements: bool = False, include_flagged: bool = False,
               tolerance: float = DEFAULT_TOLERANCE, gate_energy: bool = False, sort: str = "case") -> Comparison:
    """compare(), then the rows of one `metric` (BadArgument if the comparison has none of it) and, with
    `disagreements`, only the rows that differ beyond the noise with no reason given
    (harness/verdicts.py DIFFERING). `gate_energy`: a power or energy difference (more energy) fails the
    comparison too. Two runs that share no case, metric and launch are a StoreError. `sort` "change": the rows
    with the largest relative change first (|log ratio|, asv's --sort ratio; rows without a ratio last)."""
    against = parse_against(against)
    run_id = default_run(store) if run_id is None else run_id
    for run in (run_id,) + ((against,) if isinstance(against, int) else ()):
        store.run_info(run)  # StoreError naming the runs there are
        if not store.measured_case_ids(run):  # (a gate that passed on nothing would pass on anything)
            raise StoreError(f"run {run} has no measurements to compare (interrupted before its first case? "
                             "see `bench runs`)")
    frame = compare(store, run_id, against, include_flagged, tolerance)
    if against not in ("paper", "model") and frame.empty:
        raise StoreError(f"runs {run_id} and {against} have no case, metric and launch in common "
                         f"({run_label(store, run_id)}; {run_label(store, against)})")
    no_model = bool(against in ("paper", "model") and "model" in frame and len(frame) and frame.model.isna().all())
    if metric is not None:
        if metric not in set(frame.metric):
            raise BadArgument("metric", f"{metric!r} is not among this comparison's metrics: "
                                        f"{', '.join(sorted(set(frame.metric)))}")
        frame = frame[frame.metric == metric]
    column = verdict_column(against)
    failing = int(frame[column].isin(FAILING + (FAILING_ENERGY if gate_energy else ())).sum())
    energy_differences = int(frame[column].isin(FAILING_ENERGY).sum())
    if disagreements:
        frame = frame[frame[column].isin(DIFFERING)]
    if sort not in SORTS:
        raise BadArgument("sort", f"unknown order {sort!r}: expected one of {', '.join(SORTS)}")
    if sort == "change":
        ratio = frame[RATIO_OF.get(against, "compared")].astype(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            size = np.abs(np.log(ratio.where(ratio > 0)))
        frame = frame.assign(_size=size).sort_values("_size", ascending=False, kind="stable",
                                                     na_position="last").drop(columns="_size")
    return Comparison(run_id, against, frame.reset_index(drop=True), failing, no_model, energy_differences)


def newest_run_with_figures(store, run_id: int, tries: int = 8) -> int | None:
    """The newest run but `run_id` that a comparison with the paper gives a verdict on: a measurement with a figure
    of the paper's GPU, of the run's own GPU model or of one with its SM (figure_gpus), confirmed by comparing (at most
    `tries` runs, 0.3-1.5 s each: a run whose cases have figures may still get no verdict, the figure being of another
    protocol or board, as runs 203, 205 and 211 of the shipped database)."""
    from harness.analysis import figure_gpus

    pairs = store.query("SELECT DISTINCT r.run_id, r.gpu_name, v.gpu_name AS figure_gpu FROM results r "
                        "JOIN reference_values v ON v.case_id = r.case_id AND v.metric = r.metric "
                        f"WHERE r.run_id <> {int(run_id)} ORDER BY r.run_id DESC")
    candidates = list(dict.fromkeys(int(p.run_id) for p in pairs.itertuples()
                                    if p.figure_gpu in figure_gpus.reference_gpus(p.gpu_name)))
    for run in candidates[:tries]:
        if (against_paper(store, run).verdict != NO_PAPER_FIGURE).any():
            return run
    return None
