"""A run against the paper's figures and the model's predictions: each row in the paper's terms, and its verdict.

Cycle metrics compare directly across GPUs. Time-based metrics compare per cycle per SM: ours by the
SM clock measured in the kernel, the paper's by the clock it printed beside the figure (2501.12084
Table 13), and where it printed none, by the clock its figure implies, which must be possible (at most
the H800 PCIe's 1755 MHz); against_paper says how each verdict is reached. Figures taken on zero or
random inputs are set beside our measurement on the same distribution where the case has one.
A difference is flagged when it exceeds the measurement's own spread plus a tolerance. Measurements
flagged as throttled or shared are left out unless asked for."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.analysis import figure_gpus
from harness.analysis.run_rows import measured, with_derived
from harness.analysis.noise import CLOCK_DRIFT, basis_of
from harness.analysis.pairing import paper_figures, paper_rows
from harness.analysis.uncertainty import compared_statistics
from harness.db.store import Store
from harness.errors import IllegalShapeError, SpecError
from harness.paper import DEFAULT_TOLERANCE, PAPER_CLOCK_STEP_MHZ
from harness.registry import FAMILIES, parse_case_id
from harness.verdicts import (AGREES, CLOCK_NOT_PRINTED, DISAGREES, EXPLAINED, FOR_CONTEXT, NO_MODEL,
                              NO_PAPER_FIGURE, PAPER_CLOCK_DOUBTFUL)


# A figure in ns (published.py: the authors' wall time x their clock) compares as time; the rest in cycles.
NS = "ns"


# A whole-GPU rate is its work per cycle per SM at the clock measured with it, on every SM: a model
# that predicts the one predicts the other (TFLOPS = per cycle per SM x SMs x MHz / 1e6).
PER_CYCLE_OF = {"throughput_tflops": "sm_throughput"}


def model_predictions(frame: pd.DataFrame, gpu: str) -> list[float]:
    """What each row's family model predicts with the GPU's datasheet parameters (NaN: no model,
    no datasheet for this GPU, or no prediction for the metric)."""
    priors = {}
    values = []
    for row in frame.itertuples():
        family = FAMILIES.get(row.family)  # None: a family this version no longer has
        model = family.model if family is not None else None
        if model is None:
            values.append(np.nan)
            continue
        if row.family not in priors:
            priors[row.family] = model.prior(gpu)
        try:
            case = parse_case_id(row.case_id)
        except (SpecError, IllegalShapeError):  # an older run's id that this version refuses: no prediction
            values.append(np.nan)
            continue
        predicted = model.predict(case, row.metric, priors[row.family])
        if predicted is None and row.metric in PER_CYCLE_OF:
            per_cycle = model.predict(case, PER_CYCLE_OF[row.metric], priors[row.family])
            predicted = None if per_cycle is None else per_cycle * row.sm_count * row.sm_clock_mhz / 1e6
        values.append(np.nan if predicted is None else predicted)
    return values


def _clocks(store: Store, run_id: int, frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The SM clock each row's kernels ran at and where it comes from: measured in the kernel with the
    measurement (sm_clock_mhz), else NVML's reading during it, else the median in-kernel clock of the run."""
    run_clock = store.query(f"SELECT AVG(sm_clock_mhz) AS c FROM results WHERE run_id = {int(run_id)} "
                            "AND sm_clock_mhz IS NOT NULL").c.iloc[0]
    kernel, nvml = frame.sm_clock_mhz.to_numpy(float), frame.nvml_sm_clock_mhz.to_numpy(float)
    clock = np.where(np.isfinite(kernel), kernel, np.where(np.isfinite(nvml), nvml, run_clock if run_clock else np.nan))
    source = np.where(np.isfinite(kernel), "in-kernel", np.where(np.isfinite(nvml), "NVML (no in-kernel clock)",
                                                                  "in-kernel, run mean"))
    return clock.astype(float), source


def against_paper(store: Store, run_id: int, include_flagged: bool = False,
                  tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """Our run beside the paper's figures (docs/architecture.md, "Comparing with the paper").

    The statistic compared is the paper's: the median of our samples, or where the family says the
    paper reports its fastest placement (Family.paper_statistic), our minimum over placements, with n
    the placements. A difference counts beyond the tolerance plus the uncertainty of that statistic
    (`uncertainty`: a 95 % order-statistic interval of the median from the stored samples), never the
    samples' width (`spread`, shown).

    Latencies compare in the basis the paper measured in (`basis`): cycles, or ns where the figure is
    wall time x a clock (published.py: unit ns), ours divided by the clock our kernels ran at
    (`clock_mhz`, `clock_source`); value_ns and paper_ns show both bases. A throughput compares per
    cycle: ours is divided by our SMs and the SM clock its kernels ran at (clock_mhz: measured in the kernel, else
    NVML's reading during the measurement, a library call's; clock_source says which); the paper's by its 114
    SMs and the clock the paper printed for that figure (paper_clock_mhz). `comparable` is ours in the
    paper's terms (ns; at the paper's clock on 114 SMs: the printed clock, else 1755 MHz), and
    paper_implied_mhz the clock at which the paper's figure is exactly our work per cycle per SM.
    Verdicts of a throughput:
        agrees                 per cycle within the tolerance (printed clock)
        paper clock doubtful   the paper's figure is below ours per cycle at the printed clock, by no more
                               than our own NVML clock reading overstates the in-kernel clock under the same
                               inputs (nvml_ratio): the evidence that a printed NVML clock can be that high
        clock not printed      no printed clock, and the figure is possible at a clock up to 1755 MHz
        DISAGREES              more per cycle than ours at the printed clock, or than ours at 1755 MHz, or
                               below ours by more than our NVML-vs-kernel clock ratio allows (or none measured)
    Energy metrics depend on the GPU's power limit and the board: "for context", never a verdict.
    """
    frame = _paper_rows_with_statistics(store, run_id, include_flagged)
    frame, is_timed, wall = _in_paper_terms(store, run_id, frame)
    _judge(frame, is_timed, wall, tolerance)
    gpu = store.run_info(run_id).gpu_name
    frame["note"] = ["; ".join(part for part in (figure_gpus.same_sm_note(g, gpu, basis), note) if part)
                     for g, basis, note in zip(frame.paper_gpu, frame.basis, frame.note)]  # a figure of another board
    frame["emulated"] = frame.emulated.fillna(False).astype(bool)
    frame = frame.sort_values(["family", "metric", "operands", "n", "case_id", "paper_table", "paper_inputs"],
                              kind="stable", na_position="first")
    return frame[["family", "case_id", "n", "operands", "metric", "unit", "launch", "value", "spread", "uncertainty",
                  "n_compared", "statistic", "distribution", "basis", "clock_mhz", "clock_source", "value_ns",
                  "comparable", "paper", "paper_unit", "paper_ns", "paper_cycles", "paper_ratio", "cycles_ratio",
                  "paper_clock_mhz", "paper_implied_mhz", "nvml_ratio", "roofline_gbps", "roofline_case",
                  "pin_rate_gbps", "model", "model_ratio", "verdict", "note", "model_verdict", "paper_inputs",
                  "paper_table", "paper_gpu", "emulated"]].reset_index(drop=True)


def _paper_rows_with_statistics(store: Store, run_id: int, include_flagged: bool) -> pd.DataFrame:
    """The run's rows beside the figures of the paper's GPU and its own (pairing.py), each with the statistic
    compared and its uncertainty (uncertainty.py)."""
    everything = with_derived(measured(store, run_id, include_flagged))
    gpu = store.run_info(run_id).gpu_name
    figures = figure_gpus.across_boards(paper_figures(store, figure_gpus.reference_gpus(gpu)), gpu)
    frame = paper_rows(everything, figures).copy()
    for column in ("roofline_gbps", "roofline_case", "pin_rate_gbps"):
        if column not in frame:
            frame[column] = np.nan
    stats = compared_statistics(store, frame)
    frame["value"] = stats.value
    frame["uncertainty"], frame["n_compared"] = stats.uncertainty, stats.n_compared
    frame["statistic"], frame["distribution"] = stats.statistic, stats.distribution
    return frame


def _in_paper_terms(store: Store, run_id: int, frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    """Each row in the paper's terms (basis, comparable, paper_ns, paper_cycles, the ratios, the implied clock)
    and the model's prediction; with which rows are time-based and which compare a wall time."""
    timed = set(registry.names("seconds")) - {"bandwidth_gbps"}  # bandwidth compares as roofline_fraction
    is_timed = frame.metric.isin(timed)
    # the clock our kernels ran at: in the kernel, else (a library call writes no record) NVML's during the rounds
    frame["clock_mhz"], frame["clock_source"] = _clocks(store, run_id, frame)
    per_cycle = frame.value * 1e6 / (frame.sm_count * frame.clock_mhz)  # work per cycle per SM (TFLOPS -> 1e12)
    frame["paper_sms"], top = figure_gpus.terms(frame.paper_gpu)  # the figure's GPU: its SMs, its highest clock
    frame["paper_top_mhz"] = top
    clock = frame.paper_clock_mhz.fillna(pd.Series(top, index=frame.index))
    wall = figure_gpus.wall_time(frame)
    latency = frame.metric.map(lambda m: m in registry.METRICS and registry.METRICS[m].unit == "cycles"
                               and m.startswith("latency")).astype(bool)
    in_ns = (frame.paper_unit == NS).to_numpy()
    frame["basis"] = np.where(in_ns, "ns", np.where(is_timed, "per cycle per SM",
                                                    np.where(wall, figure_gpus.WALL_BASIS, "cycles")))
    frame["value_ns"] = np.where(latency, frame.value * 1e3 / frame.clock_mhz, np.nan)
    frame["comparable"] = np.where(is_timed, per_cycle * frame.paper_sms * clock / 1e6,
                                   np.where(in_ns, frame.value_ns,
                                            np.where(wall, frame.value * frame.paper_sms / frame.sm_count, frame.value)))
    frame["paper"] = figure_gpus.nearer_end(frame.comparable, frame.paper, frame.paper_notes)
    frame["paper_ns"] = np.where(in_ns, frame.paper, np.where(latency, frame.paper * 1e3 / top, np.nan))
    frame["paper_cycles"] = np.where(in_ns, frame.paper * top / 1e3, np.where(latency, frame.paper, np.nan))
    gpu = store.run_info(run_id).gpu_name or ""
    frame["model"] = model_predictions(frame, gpu)
    frame["paper_ratio"] = frame.comparable / frame.paper
    frame["cycles_ratio"] = np.where(latency, frame.value / frame.paper_cycles, np.nan)
    frame["paper_implied_mhz"] = np.where(is_timed, frame.paper * 1e6 / (frame.paper_sms * per_cycle), np.nan)
    frame["nvml_ratio"] = frame.nvml_sm_clock_mhz / frame.sm_clock_mhz
    frame["model_ratio"] = frame.value / frame.model
    return frame, is_timed, wall


def _judge(frame: pd.DataFrame, is_timed: pd.Series, wall: np.ndarray, tolerance: float) -> None:
    """Each row's verdict against the paper (against_paper lists them) and the model, in place, and its note."""
    allowed = frame.uncertainty.fillna(0) + tolerance
    printed = frame.paper_clock_mhz.notna()
    step = np.where(printed, PAPER_CLOCK_STEP_MHZ / frame.paper_clock_mhz, 0)
    within = (frame.paper_ratio - 1).abs() <= allowed + step
    energy = basis_of(frame.metric) == "energy"
    reasons = [_reason(r) for r in frame.itertuples()]
    explained = pd.Series([r.text if r and r.accounts else None for r in reasons], index=frame.index, dtype=object)
    causes = pd.Series([r.text if r and not r.accounts else None for r in reasons], index=frame.index, dtype=object)
    # the paper's NVML clock would have to overstate its SM clock by paper_ratio; ours does by nvml_ratio
    with np.errstate(invalid="ignore"):  # NaN ratios (no paper figure, no NVML clock) compare False, quietly
        supported = frame.nvml_ratio.notna() & (frame.paper_ratio <= frame.nvml_ratio * (1 + allowed) + step)
    below = is_timed & printed & (frame.paper_ratio > 1)
    frame["verdict"] = np.select(
        [frame.paper.isna(), energy, within & (printed | ~is_timed), below & supported,
         is_timed & ~printed & (frame.paper_ratio >= 1 - allowed), explained.notna()],
        [NO_PAPER_FIGURE, FOR_CONTEXT, AGREES, PAPER_CLOCK_DOUBTFUL, CLOCK_NOT_PRINTED, EXPLAINED],
        DISAGREES)
    unsupported = below & ~supported & (frame.verdict == DISAGREES)
    _note(frame, unsupported, explained, causes, wall, tolerance)
    # a model of work per cycle, scaled by a launch's median clock: the clock's movement within it is noise
    model_ok = (frame.model_ratio - 1).abs() <= allowed + np.where(is_timed, CLOCK_DRIFT, 0)
    frame["model_verdict"] = np.select([frame.model.isna(), model_ok], [NO_MODEL, AGREES], DISAGREES)


def _note(frame: pd.DataFrame, unsupported: pd.Series, explained: pd.Series, causes: pd.Series, wall: np.ndarray,
          tolerance: float) -> None:
    """Each row's note, in place: why a doubtful clock, an unsupported one, an implied clock, the family's reason;
    what a DISAGREES row disagrees on; the clock beside a wall-time verdict and the range compared."""
    frame["note"] = np.select(
        [frame.verdict == PAPER_CLOCK_DOUBTFUL, unsupported, frame.verdict == CLOCK_NOT_PRINTED,
         frame.verdict == EXPLAINED],
        [[_doubtful(r) for r in frame.itertuples()], [_not_doubtful(r) for r in frame.itertuples()],
         [f"implies {m:.0f} MHz" for m in frame.paper_implied_mhz], explained.fillna("")], "")
    # every DISAGREES names what disagrees, in the run's numbers, where its family gives no reason
    unexplained = (frame.verdict == DISAGREES) & (frame.note == "")
    frame.loc[unexplained, "note"] = [_disagreement(r, tolerance, causes[r.Index])
                                      for r in frame[unexplained].itertuples()]
    besides = [(figure_gpus.wall_note(r) if w else "", figure_gpus.range_note(r.paper_notes)) for r, w in
               zip(frame.itertuples(), wall)]  # the clock beside a wall-time verdict; the range compared
    frame["note"] = ["; ".join(part for part in (note, *extra) if part) for note, extra in zip(frame.note, besides)]


def _reason(row):
    """Why the row's measurement and figure differ, where its family knows (Family.explain: a Reason)."""
    family = FAMILIES.get(row.family)
    if family is None or row.paper != row.paper:  # a family this version no longer has, or no figure (NaN)
        return None
    launch = json.loads(row.launch) if isinstance(row.launch, str) and row.launch else {}
    return family.explain(row.case_id, row.metric, row.value, row.paper, launch)


def _disagreement(row, tolerance: float, cause: str | None = None) -> str:
    """A DISAGREES row's note: the measured value against the figure, what was allowed (the
    measurement's spread plus the tolerance), and the cause its family knows (which does not close the
    gap by itself), else "no reason known"."""
    # `comparable` is in the paper's unit (a latency in cycles compared in ns: issue 46, item 3)
    paper_unit = getattr(row, "paper_unit", None)
    named = paper_unit if isinstance(paper_unit, str) and paper_unit else row.unit
    unit = f" {named}" if isinstance(named, str) and named not in ("", "ratio") else ""
    spread = row.spread if row.spread == row.spread else 0.0
    return (f"ours {row.comparable:.4g}{unit}, the paper's {row.paper:.4g} ({row.paper_table}): "
            f"{row.paper_ratio:.3f} x, beyond spread {spread:.1%} + tolerance {tolerance:.0%}; "
            + (f"known cause: {cause}" if cause else "no reason known"))


def _doubtful(row) -> str:
    return (f"at the printed {row.paper_clock_mhz:.0f} MHz the paper's figure is {1 / row.paper_ratio:.3f} of the work "
            f"per cycle per SM measured here (clock64, every SM); it implies {row.paper_implied_mhz:.0f} MHz, an NVML "
            f"clock {row.paper_ratio:.3f} x the SM's; ours read {row.nvml_ratio:.3f} x under the same inputs")


def _not_doubtful(row) -> str:
    if row.nvml_ratio != row.nvml_ratio:
        return (f"below ours per cycle at the printed {row.paper_clock_mhz:.0f} MHz (implies "
                f"{row.paper_implied_mhz:.0f} MHz); no NVML clock of ours to test a misread clock against")
    return (f"below ours per cycle at the printed {row.paper_clock_mhz:.0f} MHz: it needs an NVML clock "
            f"{row.paper_ratio:.3f} x the SM's, ours read {row.nvml_ratio:.3f} x under the same inputs")


def against_model(store: Store, run_id: int, include_flagged: bool = False,
                  tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    frame = against_paper(store, run_id, include_flagged, tolerance)
    frame = frame[frame.model.notna()]
    return frame[["case_id", "metric", "unit", "value", "spread", "model", "model_ratio", "model_verdict"]]
