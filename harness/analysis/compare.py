"""A run against the paper, the model, or another run: one row per case and metric, as DataFrames.

Metrics are treated by what the registry (harness/metrics.py) says of them, and cases by
what their family says: which launch stands for a case where a metric has several
(Family.headline; None: the best of them), and what its model predicts (Family.model).

Cycle metrics compare directly across GPUs. Time-based metrics compare per cycle per SM: ours by the
SM clock measured in the kernel, the paper's by the clock it printed beside the figure (2501.12084
Table 13), and where it printed none, by the clock its figure implies, which must be possible (at most
the H800 PCIe's 1755 MHz); against_paper says how each verdict is reached. Figures taken on zero or
random inputs are set beside our measurement on the same distribution where the case has one.
A difference is flagged when it exceeds the measurement's own spread plus a tolerance. Measurements
flagged as throttled or shared are left out unless asked for.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.db.store import Store
from harness.errors import SpecError, StoreError
from harness.registry import FAMILIES
from harness.measure.measurement import launch_key
from harness.paper import (DEFAULT_TOLERANCE, PAPER_CLOCK_MHZ, PAPER_CLOCK_STEP_MHZ,  # noqa: F401  (quoted as
                           PAPER_GPU, PAPER_POWER_LIMIT_W, PAPER_SMS)  # comparing.X by report and site)
from harness.registry import parse_case_id
from harness.verdicts import (AGREES, CLOCK_NOT_PRINTED, DIFFERING, DISAGREES, EXPLAINED, FAILING, FASTER,
                              FOR_CONTEXT, NO_MODEL, NO_PAPER_FIGURE, PAPER_CLOCK_DOUBTFUL, SAME, SLOWER)

CLOCK_FIGURE = "sm_clock_mhz"  # a reference "metric": the clock a table printed beside a throughput
OUR_INPUTS = {"zero": "zeros", "random": "uniform11"}  # the paper's inputs -> our distribution of its fill
# Run against run (against_run): a difference counts only beyond the noise of both sides and a floor.
RUN_NOISE_FLOOR = 0.005  # cycle metrics with sub-cycle resolution (a chain's slope): 0.5 %
CYCLE_QUANTUM = 1.0  # a metric whose samples are whole cycles (clock64 differences) moves in steps of 1
# Time-based metrics are first divided by the SM clock measured in the kernel; what stays is the clock's
# movement within a launch, which the per-launch median does not see: up to 1.9 % between two runs of
# one H100 and one commit (runs 1 and 2 of the shipped results.db, 738 pairs; 95 % within 0.7 %).
CLOCK_DRIFT = 0.02


def default_run(store: Store) -> int:
    """The newest complete run of a measuring suite (not the fault self-test)."""
    frame = store.query("SELECT id FROM runs WHERE status = 'complete' AND suite != 'faults' ORDER BY id DESC LIMIT 1")
    if frame.empty:
        raise SpecError(f"no complete run in {store.url} to compare (see `bench runs`)")
    return int(frame.id[0])


def measured(store: Store, run_id: int, include_flagged: bool = False) -> pd.DataFrame:
    store.run_info(run_id)  # StoreError naming the valid runs if there is no such run
    flagged = "" if include_flagged else "AND NOT flagged"
    return store.query(f"""
        SELECT run_id, gpu_name, sm_count, family, case_id, instruction, n, dtype_a, dtype_b, dtype_acc, operands, sparse,
               metric, launch, value, spread, sm_clock_mhz, nvml_sm_clock_mhz, unit, emulated, executes
        FROM results WHERE run_id = {int(run_id)} AND valid {flagged} AND value IS NOT NULL
        ORDER BY family, case_id, metric, launch""")


def headline(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per case and metric: the family's headline launch, else the best value over launches."""
    if frame.empty:
        return frame
    keys = [launch_key(FAMILIES[f].headline(m)) if f in FAMILIES and FAMILIES[f].headline(m) is not None else None
            for f, m in zip(frame.family, frame.metric)]
    frame = frame.assign(_headline=keys)
    chosen = frame[frame._headline == frame.launch]
    rest = frame[frame._headline.isna()]
    if len(rest):
        ascending = rest.metric.map(registry.lower_is_better)
        rest = rest.assign(_rank=np.where(ascending, rest.value, -rest.value)).sort_values("_rank", kind="stable")
        rest = rest.groupby(["case_id", "metric"], as_index=False, sort=False).first().drop(columns="_rank")
    return pd.concat([chosen, rest], ignore_index=True).drop(columns="_headline")


def _paper(store: Store) -> pd.DataFrame:
    """Every figure of the paper's GPU, one row per (case, metric, input condition, table, launch), with
    the clock the same table printed for the same case and inputs (2501.12084 Table 13), if any."""
    refs = store.query(f"""SELECT case_id, metric, value, condition, launch, source, source_table FROM reference_values
                          WHERE gpu_name = '{PAPER_GPU}' ORDER BY reference_id""")
    refs["launch"] = refs.launch.fillna("")
    refs["condition"] = refs.condition.fillna("")
    keys = ["case_id", "condition", "source", "source_table"]
    clocks = refs[refs.metric == CLOCK_FIGURE].drop_duplicates(subset=keys).set_index(keys).value
    refs = refs[refs.metric != CLOCK_FIGURE]
    refs["paper_clock_mhz"] = [clocks.get(key, np.nan) for key in zip(*(refs[k] for k in keys))]
    refs = refs.drop_duplicates(subset=["case_id", "metric", "condition", "source_table", "launch"]).drop(columns="source")
    return refs.rename(columns={"value": "paper", "condition": "paper_inputs", "source_table": "paper_table",
                                "launch": "paper_launch"})


def _launch_matches(launch: str, wanted: str) -> bool:
    """Does a stored launch (JSON) hold every key and value of the figure's launch (JSON)?"""
    import json

    held = json.loads(launch) if launch else {}
    return all(held.get(key) == value for key, value in json.loads(wanted).items())


def with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """The measurements plus what compare derives from them: each bandwidth of a family that names a
    roofline case (Family.roofline_case: every thread streaming 16-byte loads from HBM) as a fraction of
    that case's best bandwidth in the same run on the same GPU (roofline_fraction)."""
    parts = [frame]
    for name, family in FAMILIES.items():
        roofline_case = family.roofline_case
        rows = frame[(frame.family == name) & (frame.metric == "bandwidth_gbps")]
        if roofline_case is None or rows.empty:
            continue
        roofline = rows[rows.case_id == roofline_case].groupby("gpu_name").value.max()
        derived = rows[rows.gpu_name.isin(roofline.index)].copy()
        derived["value"] = derived.value / derived.gpu_name.map(roofline)
        derived["metric"], derived["unit"] = "roofline_fraction", "ratio"
        parts.append(derived)
    return pd.concat(parts, ignore_index=True)


def _with_inputs(launch: str, inputs: str) -> str:
    """A launch key (JSON) with `inputs` added: the same point measured on another input distribution."""
    return launch_key({**(json.loads(launch) if launch else {}), "inputs": inputs})


def _paper_rows(everything: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
    """Measured rows beside their figures: the headline launch for a figure of the whole case (on the
    paper's input distribution where we measured the case on it too: OUR_INPUTS), the best matching
    launch for a figure of one launch; metrics compared only where a figure exists (work per cycle per
    SM, roofline fractions, energy) are dropped without one."""
    timed = set(registry.names("seconds")) - {"bandwidth_gbps"}
    always = set(registry.names("cycles")) - {"sm_throughput"} | timed
    heads = headline(everything)
    parts = [heads[heads.metric.isin(always)].assign(paper=np.nan, paper_inputs="", paper_table=None,
                                                     paper_clock_mhz=np.nan)]
    indexed = everything.set_index(["case_id", "metric", "launch"])
    heads = heads.set_index(["case_id", "metric"])
    for ref in refs.itertuples():
        if ref.paper_launch:
            rows = everything[(everything.case_id == ref.case_id) & (everything.metric == ref.metric)]
            rows = rows[[_launch_matches(launch, ref.paper_launch) for launch in rows.launch]]
            if rows.empty:
                continue
            best = rows.value.idxmin() if registry.lower_is_better(ref.metric) else rows.value.idxmax()
            row = rows.loc[[best]]
        else:
            if (ref.case_id, ref.metric) not in heads.index:
                continue
            row = heads.loc[[(ref.case_id, ref.metric)]].reset_index()
            ours = OUR_INPUTS.get(ref.paper_inputs)
            key = (ref.case_id, ref.metric, _with_inputs(row.launch.iloc[0], ours)) if ours else None
            if key in indexed.index:
                row = indexed.loc[[key]].reset_index()
        parts.append(row.assign(paper=ref.paper, paper_inputs=ref.paper_inputs, paper_table=ref.paper_table,
                                paper_clock_mhz=ref.paper_clock_mhz))
    frame = pd.concat(parts, ignore_index=True)
    # a headline row without a figure goes where the same measurement has one
    compared = frame[frame.paper.notna()]
    seen = set(zip(compared.case_id, compared.metric, compared.launch))
    alone = frame.paper.isna() & np.array([key in seen for key in zip(frame.case_id, frame.metric, frame.launch)],
                                          dtype=bool)
    return frame[~alone].reset_index(drop=True)


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
        case = parse_case_id(row.case_id)
        predicted = model.predict(case, row.metric, priors[row.family])
        if predicted is None and row.metric in PER_CYCLE_OF:
            per_cycle = model.predict(case, PER_CYCLE_OF[row.metric], priors[row.family])
            predicted = None if per_cycle is None else per_cycle * row.sm_count * row.sm_clock_mhz / 1e6
        values.append(np.nan if predicted is None else predicted)
    return values


def against_paper(store: Store, run_id: int, include_flagged: bool = False,
                  tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    """Our run beside the paper's figures (docs/architecture.md, "Comparing with the paper").

    Cycle metrics compare as they are. A throughput compares per cycle: ours is divided by our SMs and
    the SM clock measured in the kernel; the paper's by its 114 SMs and the clock the paper printed for
    that figure (paper_clock_mhz). `comparable` is ours at the paper's clock on 114 SMs (the printed
    clock, else the H800 PCIe's maximum, 1755 MHz), and paper_implied_mhz the clock at which the paper's
    figure is exactly our work per cycle per SM. Verdicts of a throughput:
        agrees                 per cycle within the tolerance (printed clock)
        paper clock doubtful   the paper's figure is below ours per cycle: at the printed clock it would
                               mean its tensor cores did less per cycle than they do; it implies a lower
                               clock (paper_implied_mhz), which is the likelier reading (the note says so)
        clock not printed      no printed clock, and the figure is possible at a clock up to 1755 MHz
        DISAGREES              more per cycle than ours at the printed clock, or than ours at 1755 MHz
    Energy metrics depend on the GPU's power limit and the board: "for context", never a verdict.
    """
    everything = with_derived(measured(store, run_id, include_flagged))
    timed = set(registry.names("seconds")) - {"bandwidth_gbps"}  # bandwidth compares as roofline_fraction
    frame = _paper_rows(everything, _paper(store)).copy()
    is_timed = frame.metric.isin(timed)
    per_cycle = frame.value * 1e6 / (frame.sm_count * frame.sm_clock_mhz)  # work per cycle per SM (TFLOPS -> 1e12)
    clock = frame.paper_clock_mhz.fillna(PAPER_CLOCK_MHZ)
    frame["comparable"] = np.where(is_timed, per_cycle * PAPER_SMS * clock / 1e6, frame.value)
    gpu = store.run_info(run_id).gpu_name or ""
    frame["model"] = model_predictions(frame, gpu)
    frame["paper_ratio"] = frame.comparable / frame.paper
    frame["paper_implied_mhz"] = np.where(is_timed, frame.paper * 1e6 / (PAPER_SMS * per_cycle), np.nan)
    frame["model_ratio"] = frame.value / frame.model
    allowed = frame.spread.fillna(0) + tolerance
    printed = frame.paper_clock_mhz.notna()
    within = (frame.paper_ratio - 1).abs() <= allowed + np.where(printed, PAPER_CLOCK_STEP_MHZ / frame.paper_clock_mhz, 0)
    energy = basis_of(frame.metric) == "energy"
    explained = pd.Series([_explanation(r) for r in frame.itertuples()], index=frame.index, dtype=object)
    frame["verdict"] = np.select(
        [frame.paper.isna(), energy, within & (printed | ~is_timed),
         is_timed & printed & (frame.paper_ratio > 1), is_timed & ~printed & (frame.paper_ratio >= 1 - allowed),
         explained.notna()],
        [NO_PAPER_FIGURE, FOR_CONTEXT, AGREES, PAPER_CLOCK_DOUBTFUL, CLOCK_NOT_PRINTED, EXPLAINED],
        DISAGREES)
    frame["note"] = np.select(
        [frame.verdict == PAPER_CLOCK_DOUBTFUL, frame.verdict == CLOCK_NOT_PRINTED, frame.verdict == EXPLAINED],
        [[_doubtful(r) for r in frame.itertuples()], [f"implies {m:.0f} MHz" for m in frame.paper_implied_mhz],
         explained.fillna("")], "")
    # a model of work per cycle, scaled by a launch's median clock: the clock's movement within it is noise
    model_ok = (frame.model_ratio - 1).abs() <= allowed + np.where(is_timed, CLOCK_DRIFT, 0)
    frame["model_verdict"] = np.select([frame.model.isna(), model_ok], [NO_MODEL, AGREES], DISAGREES)
    frame["emulated"] = frame.emulated.fillna(False).astype(bool)
    frame = frame.sort_values(["family", "metric", "operands", "n", "case_id", "paper_table", "paper_inputs"],
                              kind="stable", na_position="first")
    return frame[["family", "case_id", "n", "operands", "metric", "unit", "launch", "value", "spread", "comparable",
                  "paper", "paper_ratio", "paper_clock_mhz", "paper_implied_mhz", "model", "model_ratio", "verdict",
                  "note", "model_verdict", "paper_inputs", "paper_table", "emulated"]].reset_index(drop=True)


def _explanation(row) -> str | None:
    """Why the row's measurement and figure differ, where its family knows (Family.explain)."""
    family = FAMILIES.get(row.family)
    if family is None or row.paper != row.paper:  # a family this version no longer has, or no figure (NaN)
        return None
    return family.explain(row.case_id, row.metric, row.value, row.paper)


def _doubtful(row) -> str:
    return (f"at the printed {row.paper_clock_mhz:.0f} MHz the paper's figure is {1 / row.paper_ratio:.3f} of the work "
            f"per cycle per SM measured here (clock64, every SM); it implies {row.paper_implied_mhz:.0f} MHz")


def against_model(store: Store, run_id: int, include_flagged: bool = False,
                  tolerance: float = DEFAULT_TOLERANCE) -> pd.DataFrame:
    frame = against_paper(store, run_id, include_flagged, tolerance)
    frame = frame[frame.model.notna()]
    return frame[["case_id", "metric", "unit", "value", "spread", "model", "model_ratio", "model_verdict"]]


def basis_of(metrics: pd.Series) -> pd.Series:
    """Each metric's basis (metrics registry); unknown names count as cycles."""
    return metrics.map(lambda m: registry.METRICS[m].basis if m in registry.METRICS else "cycles")


def noise_floor(basis, whole_cycles, a, b):
    """The relative difference of a and b that is noise whatever the spreads say (arrays or scalars):
    two cycle steps where both are counted in whole cycles, RUN_NOISE_FLOOR for other cycle metrics,
    CLOCK_DRIFT for time-based ones compared per cycle and their ratios."""
    steps = 2 * CYCLE_QUANTUM / np.maximum(np.minimum(np.abs(a), np.abs(b)), 1e-12)
    return np.where(whole_cycles, steps, np.where(np.asarray(basis) == "cycles", RUN_NOISE_FLOOR, CLOCK_DRIFT))


def _whole_cycles(store: Store, run_id: int) -> set[tuple[str, str, str]]:
    """(case_id, metric, launch) of the run's cycle measurements whose samples are all whole numbers."""
    frame = store.query(f"""SELECT measurement_id, case_id, metric, launch FROM results
                            WHERE run_id = {int(run_id)} AND unit = 'cycles'""")
    arrays = store.samples_of(frame.measurement_id)
    return {(case, metric, launch) for i, case, metric, launch in frame.itertuples(index=False)
            if i in arrays and np.array_equal(arrays[i], np.round(arrays[i]))}


def against_run(store: Store, run_id: int, other: int, include_flagged: bool = False,
                tolerance: float = 0.0) -> pd.DataFrame:
    """Same case, metric and launch in two runs, nvbench-style: "faster" or "slower" only when the relative
    difference exceeds the noise of both sides (their spreads), the metric's floor, and `tolerance`.

    Floors: a cycle metric whose samples are whole cycles on both sides moves in steps of
    CYCLE_QUANTUM, and each side may sit one step off, so two steps are noise; other cycle metrics
    RUN_NOISE_FLOOR.
    Time-based metrics are compared per cycle (divided by each side's in-kernel SM clock), with the
    floor CLOCK_DRIFT; so are ratios of them (peak_fraction, already per the clock)."""
    a, b = measured(store, run_id, include_flagged), measured(store, other, include_flagged)
    keys = ["case_id", "metric", "launch"]
    frame = a.merge(b[keys + ["value", "spread", "sm_clock_mhz"]], on=keys, suffixes=("", "_other"))
    frame = frame.rename(columns={"value_other": "other", "spread_other": "other_spread"})
    frame["ratio"] = frame.value / frame.other
    basis = basis_of(frame.metric)
    timed = (basis == "seconds").to_numpy()
    per_clock = (frame.value / frame.sm_clock_mhz) / (frame.other / frame.sm_clock_mhz_other)
    compared = np.where(timed & per_clock.notna().to_numpy(), per_clock, frame.ratio)
    whole = _whole_cycles(store, run_id) & _whole_cycles(store, other)
    stepped = np.array([key in whole for key in zip(frame.case_id, frame.metric, frame.launch)], dtype=bool)
    floor = noise_floor(basis, stepped, frame.value.to_numpy(), frame.other.to_numpy())
    noise = np.maximum.reduce([frame.spread.fillna(0).to_numpy(), frame.other_spread.fillna(0).to_numpy(),
                               np.asarray(floor, dtype=float), np.full(len(frame), float(tolerance))])
    frame["compared"] = compared
    frame["noise"] = noise
    better = np.where(frame.metric.map(registry.lower_is_better).astype(bool), compared < 1, compared > 1)
    # the 1e-9 keeps an exact one-cycle step (quantum == difference) on the "same" side of the line
    frame["verdict"] = np.where(np.abs(compared - 1) <= noise + 1e-9, SAME, np.where(better, FASTER, SLOWER))
    order = frame.case_id.map(natural_key)
    frame = frame.assign(_order=order).sort_values(["_order", "metric", "launch"], kind="stable").drop(columns="_order")
    return frame[["case_id", "metric", "launch", "unit", "value", "spread", "other", "other_spread",
                  "ratio", "compared", "noise", "verdict"]].reset_index(drop=True)


def natural_key(text: str) -> tuple:
    """'m64n8' before 'm64n104': numbers compare as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


RUN_ID_MAX = 2**63 - 1  # the largest run id (SQLite's integer)


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
    counted after the metric filter and before `disagreements` kept only the differing rows."""

    run_id: int
    against: str | int  # "paper", "model" or the other run's id
    frame: pd.DataFrame
    failing: int
    no_model: bool  # against the paper or the model, no row has a model prediction

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
               tolerance: float = DEFAULT_TOLERANCE) -> Comparison:
    """compare(), then the rows of one `metric` (BadArgument if the comparison has none of it) and, with
    `disagreements`, only the rows that differ beyond the noise with no reason given
    (harness/verdicts.py DIFFERING). Two runs that share no case, metric and launch are a StoreError."""
    against = parse_against(against)
    run_id = default_run(store) if run_id is None else run_id
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
    failing = int(frame[column].isin(FAILING).sum())
    if disagreements:
        frame = frame[frame[column].isin(DIFFERING)]
    return Comparison(run_id, against, frame.reset_index(drop=True), failing, no_model)
