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
from harness.analysis import figure_gpus
from harness.datasheets import pin_rate_gbps
from harness.db.store import Store
from harness.errors import SpecError, StoreError
from harness.registry import FAMILIES
from harness.measure.measurement import launch_key
from harness.paper import (DEFAULT_TOLERANCE, PAPER_CLOCK_MHZ, PAPER_CLOCK_STEP_MHZ,  # noqa: F401  (quoted as
                           PAPER_GPU, PAPER_POWER_LIMIT_W, PAPER_SMS)  # comparing.X by report and site)
from harness.registry import parse_case_id
from harness.verdicts import (AGREES, CLOCK_NOT_PRINTED, DIFFERING, DISAGREES, EXPLAINED, FAILING, FAILING_ENERGY,
                              FASTER, FOR_CONTEXT, LESS_ENERGY, MORE_ENERGY, NO_MODEL, NO_PAPER_FIGURE,
                              PAPER_CLOCK_DOUBTFUL, SAME, SLOWER)

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
        SELECT run_id, measurement_id, gpu_name, sm_count, family, case_id, instruction, n, dtype_a, dtype_b, dtype_acc,
               operands, sparse, metric, launch, value, spread, n_samples, sm_clock_mhz, nvml_sm_clock_mhz, unit,
               emulated, executes
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


def _paper(store: Store, gpus: tuple[str, ...] = (PAPER_GPU,)) -> pd.DataFrame:
    """Every figure of the paper's GPU and of the run's own (figure_gpus.reference_gpus), one row per (case,
    metric, input condition, table, launch), with the clock the same table printed for the same case and
    inputs (2501.12084 Table 13, the seed chapter's spec box), if any."""
    wanted = ", ".join(f"'{g}'" for g in gpus)
    refs = store.query(f"""SELECT case_id, metric, value, unit, condition, launch, source, source_table,
                                  gpu_name AS paper_gpu, notes AS paper_notes FROM reference_values
                          WHERE gpu_name IN ({wanted}) ORDER BY reference_id""")
    refs["launch"] = refs.launch.fillna("")
    refs["condition"] = refs.condition.fillna("")
    keys = ["case_id", "condition", "source", "source_table"]
    clocks = refs[refs.metric == CLOCK_FIGURE].drop_duplicates(subset=keys).set_index(keys).value
    refs = refs[refs.metric != CLOCK_FIGURE]
    refs["paper_clock_mhz"] = [clocks.get(key, np.nan) for key in zip(*(refs[k] for k in keys))]
    refs = refs.drop_duplicates(subset=["case_id", "metric", "condition", "source_table", "launch"]).drop(columns="source")
    return refs.rename(columns={"value": "paper", "unit": "paper_unit", "condition": "paper_inputs",
                                "source_table": "paper_table", "launch": "paper_launch"})


def _launch_matches(launch: str, wanted: str) -> bool:
    """Does a stored launch (JSON) hold every key and value of the figure's launch (JSON)?"""
    import json

    held = json.loads(launch) if launch else {}
    return all(held.get(key) == value for key, value in json.loads(wanted).items())


def read_roofline(frame: pd.DataFrame, family: str) -> pd.DataFrame:
    """Per GPU of `frame` (measurements of one run), the read roofline of `family`: the best bandwidth_gbps
    of its plain HBM readers (Family.roofline_cases) over their launches. Columns: gpu_name, roofline_gbps,
    roofline_case, roofline_launch, roofline_measurement (its measurement id, where known), pin_rate_gbps
    (the datasheet's, beside it)."""
    columns = ["gpu_name", "roofline_gbps", "roofline_case", "roofline_launch", "roofline_measurement",
               "pin_rate_gbps"]
    cases = FAMILIES[family].roofline_cases if family in FAMILIES else ()
    rows = frame[frame.case_id.isin(cases) & (frame.metric == "bandwidth_gbps")]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    best = rows.loc[rows.groupby("gpu_name").value.idxmax()]
    mids = best.measurement_id if "measurement_id" in best else pd.Series(np.nan, index=best.index)
    return pd.DataFrame({"gpu_name": best.gpu_name.to_numpy(), "roofline_gbps": best.value.to_numpy(),
                         "roofline_case": best.case_id.to_numpy(), "roofline_launch": best.launch.to_numpy(),
                         "roofline_measurement": mids.to_numpy(),
                         "pin_rate_gbps": [pin_rate_gbps(g) for g in best.gpu_name]}, columns=columns)


def with_derived(frame: pd.DataFrame) -> pd.DataFrame:
    """The measurements plus what compare derives from them: each bandwidth of a family that names plain
    HBM readers (Family.roofline_cases) as a fraction of the best of them in the same run on the same GPU
    (roofline_fraction; read_roofline: the roofline and the datasheet's pin rate ride along)."""
    parts = [frame]
    for name, family in FAMILIES.items():
        rows = frame[(frame.family == name) & (frame.metric == "bandwidth_gbps")]
        if not family.roofline_cases or rows.empty:
            continue
        roofline = read_roofline(frame, name)
        derived = rows.merge(roofline, on="gpu_name")
        if derived.empty:
            continue
        derived["value"] = derived.value / derived.roofline_gbps
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
    parts = [heads[heads.metric.isin(always)].assign(paper=np.nan, paper_unit=None, paper_inputs="", paper_table=None,
                                                     paper_clock_mhz=np.nan, paper_gpu=None, paper_notes=None)]
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
        parts.append(row.assign(paper=ref.paper, paper_unit=ref.paper_unit, paper_inputs=ref.paper_inputs,
                                paper_table=ref.paper_table, paper_clock_mhz=ref.paper_clock_mhz,
                                paper_gpu=ref.paper_gpu, paper_notes=ref.paper_notes))
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


# A figure in ns (published.py: the authors' wall time x their clock) compares as time; the rest in cycles.
NS = "ns"
# Where a measurement's samples are missing, the uncertainty of its median from its IQR/median and n: 1.96 x
# 1.253 sigma / sqrt(n), sigma = IQR / 1.349 (a normal's) -- an estimate, never the IQR itself.
IQR_TO_MEDIAN_CI = 1.96 * 1.2533 / 1.349


def statistic_of(samples, statistic: tuple[str, int] | None = None) -> dict:
    """The statistic compared and how well it is known, from a measurement's stored samples:
    value, uncertainty (relative half-width of a 95 % interval: harness.stats.median_interval), n (what
    the statistic is over), statistic (its name) and distribution (text). `statistic` ("minimum", k): the
    samples are k units (placements of a cluster on the SMs, say) repeated launch after launch
    (Family.paper_statistic; a third element names the units, a fourth how many consecutive units
    make one placement): the value is the minimum over the k units' medians, its uncertainty the
    interval of the median of each launch's minimum, and n = k; the distribution also gives each
    placement's fastest unit where a placement holds several."""
    from harness.stats import median_interval, relative_uncertainty

    x = np.asarray(samples, dtype=np.float64)
    x = x[np.isfinite(x)]
    if statistic is not None and x.size and x.size % statistic[1] == 0:
        k, minimum = statistic[1], statistic[0] == "minimum"
        launches = x.reshape(-1, k)
        placements = np.median(launches, axis=0)
        value = float(placements.min() if minimum else np.median(placements))
        # the minimum: how it moves launch to launch; the median over placements: its interval over the k
        lo, hi = median_interval(launches.min(axis=1)) if minimum else median_interval(placements)
        what = statistic[2] if len(statistic) > 2 else "placements"  # what the k units are
        distribution = (f"{k} {what} x {launches.shape[0]} launches: per unit {placements.min():.1f}-"
                        f"{placements.max():.1f}, median {np.median(placements):.1f}")
        group = statistic[3] if len(statistic) > 3 else 1  # units of one placement (consecutive)
        if group > 1 and k % group == 0:
            fastest = placements.reshape(-1, group).min(axis=1)
            distribution += (f"; each placement's fastest of its {group}: {fastest.min():.1f}-{fastest.max():.1f}, "
                             f"median {np.median(fastest):.1f}")
        return {"value": value, "uncertainty": max(value - lo, hi - value, 0.0) / abs(value), "n": k,
                "statistic": f"{statistic[0]} over {k} {what}", "distribution": distribution}
    if x.size == 0:
        return {"value": np.nan, "uncertainty": np.nan, "n": 0, "statistic": "median", "distribution": ""}
    median = float(np.median(x))
    return {"value": median, "uncertainty": relative_uncertainty(x, median), "n": int(x.size), "statistic": "median",
            "distribution": f"{x.size} samples {x.min():.4g}-{x.max():.4g}"}


def _statistics(store: Store, frame: pd.DataFrame) -> pd.DataFrame:
    """Each row with a figure: the statistic like the paper's and its uncertainty (statistic_of), from the
    stored samples of its measurement (a roofline fraction: of its bandwidth and of the roofline, in
    quadrature). A row without samples keeps its value, its uncertainty estimated from IQR/median and n."""
    out = pd.DataFrame({"uncertainty": np.nan, "n_compared": np.nan, "statistic": "median", "distribution": ""},
                       index=frame.index)
    out["value"] = frame.value
    wanted = frame.paper.notna()
    ids = set(frame.loc[wanted, "measurement_id"].dropna().astype(int))
    if "roofline_measurement" in frame:
        ids |= set(frame.loc[wanted, "roofline_measurement"].dropna().astype(int))
    arrays = store.samples_of(pd.Series(sorted(ids), dtype="int64")) if ids else {}

    def known(mid) -> dict | None:
        return statistic_of(arrays[int(mid)]) if mid == mid and mid is not None and int(mid) in arrays else None

    for i in frame.index[wanted]:
        row = frame.loc[i]
        family = FAMILIES.get(row.family)
        mid = row.get("measurement_id")
        if row.metric == "roofline_fraction":
            parts = [known(mid), known(row.get("roofline_measurement"))]
            if all(parts):
                out.loc[i, ["uncertainty", "n_compared"]] = (float(np.hypot(parts[0]["uncertainty"], parts[1]["uncertainty"])),
                                                             parts[0]["n"])
                out.loc[i, "distribution"] = f"bandwidth {parts[0]['distribution']}; roofline {parts[1]['distribution']}"
                continue
        elif mid == mid and mid is not None and int(mid) in arrays:
            launch = json.loads(row.launch) if isinstance(row.get("launch"), str) and row.launch else {}
            wanted_statistic = family.paper_statistic(row.case_id, row.metric, launch) if family is not None else None
            found = statistic_of(arrays[int(mid)], wanted_statistic)
            if wanted_statistic is None or wanted_statistic[0] == "median":
                found["value"] = row.value  # the stored value (the median, or a launch's best) stays ours
                found["uncertainty"] = (relative_uncertainty_about(arrays[int(mid)], row.value)
                                        if row.value == row.value else found["uncertainty"])
            out.loc[i, ["value", "uncertainty", "n_compared", "statistic", "distribution"]] = (
                found["value"], found["uncertainty"], found["n"], found["statistic"], found["distribution"])
            continue
        n = row.get("n_samples")
        spread = row.get("spread")
        out.loc[i, "uncertainty"] = (IQR_TO_MEDIAN_CI * spread / np.sqrt(n) if n == n and n and spread == spread
                                     else 0.0)
        out.loc[i, "n_compared"] = n
    return out


def relative_uncertainty_about(samples, centre: float) -> float:
    from harness.stats import relative_uncertainty

    return relative_uncertainty(np.asarray(samples, dtype=np.float64), centre)


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
    everything = with_derived(measured(store, run_id, include_flagged))
    timed = set(registry.names("seconds")) - {"bandwidth_gbps"}  # bandwidth compares as roofline_fraction
    frame = _paper_rows(everything, _paper(store, figure_gpus.reference_gpus(store.run_info(run_id).gpu_name))).copy()
    for column in ("roofline_gbps", "roofline_case", "pin_rate_gbps"):
        if column not in frame:
            frame[column] = np.nan
    stats = _statistics(store, frame)
    frame["value"] = stats.value
    frame["uncertainty"], frame["n_compared"] = stats.uncertainty, stats.n_compared
    frame["statistic"], frame["distribution"] = stats.statistic, stats.distribution
    is_timed = frame.metric.isin(timed)
    # the clock our kernels ran at: in the kernel, else (a library call writes no record) NVML's during the rounds
    frame["clock_mhz"], frame["clock_source"] = _clocks(store, run_id, frame)
    per_cycle = frame.value * 1e6 / (frame.sm_count * frame.clock_mhz)  # work per cycle per SM (TFLOPS -> 1e12)
    frame["paper_sms"], top = figure_gpus.terms(frame.paper_gpu)  # the figure's GPU: its SMs, its highest clock
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
    # a model of work per cycle, scaled by a launch's median clock: the clock's movement within it is noise
    model_ok = (frame.model_ratio - 1).abs() <= allowed + np.where(is_timed, CLOCK_DRIFT, 0)
    frame["model_verdict"] = np.select([frame.model.isna(), model_ok], [NO_MODEL, AGREES], DISAGREES)
    frame["emulated"] = frame.emulated.fillna(False).astype(bool)
    frame = frame.sort_values(["family", "metric", "operands", "n", "case_id", "paper_table", "paper_inputs"],
                              kind="stable", na_position="first")
    return frame[["family", "case_id", "n", "operands", "metric", "unit", "launch", "value", "spread", "uncertainty",
                  "n_compared", "statistic", "distribution", "basis", "clock_mhz", "clock_source", "value_ns",
                  "comparable", "paper", "paper_unit", "paper_ns", "paper_cycles", "paper_ratio", "cycles_ratio",
                  "paper_clock_mhz", "paper_implied_mhz", "nvml_ratio", "roofline_gbps", "roofline_case",
                  "pin_rate_gbps", "model", "model_ratio", "verdict", "note", "model_verdict", "paper_inputs",
                  "paper_table", "paper_gpu", "emulated"]].reset_index(drop=True)


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
    A power or energy metric (basis "energy") says "more energy" or "less energy" instead: power is
    not speed (harness/verdicts.py).

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
    energy = (basis == "energy").to_numpy()  # power is not speed: its own words
    frame["verdict"] = np.where(np.abs(compared - 1) <= noise + 1e-9, SAME,
                                np.where(energy, np.where(better, LESS_ENERGY, MORE_ENERGY),
                                         np.where(better, FASTER, SLOWER)))
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
               tolerance: float = DEFAULT_TOLERANCE, gate_energy: bool = False) -> Comparison:
    """compare(), then the rows of one `metric` (BadArgument if the comparison has none of it) and, with
    `disagreements`, only the rows that differ beyond the noise with no reason given
    (harness/verdicts.py DIFFERING). `gate_energy`: a power or energy difference (more energy) fails the
    comparison too. Two runs that share no case, metric and launch are a StoreError."""
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
    return Comparison(run_id, against, frame.reset_index(drop=True), failing, no_model, energy_differences)
