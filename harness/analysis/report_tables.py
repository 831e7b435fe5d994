"""A report's shared tables after the families' sections: the paper's figures beside ours, energy, tensor-core
rates by family, this GPU's siblings, the cycle measurements that spread, the disagreements."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from harness.db.store import Store
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU, PAPER_POWER_LIMIT_W
from harness.verdicts import DISAGREES, FOR_CONTEXT


TENSOR_UNITS = ("FLOP/cycle/SM", "OP/cycle/SM")


def paper_table(against: pd.DataFrame) -> pd.DataFrame:
    """Every measurement with a published figure, energy apart (energy_table): a throughput as ours at the
    paper's clock on its 114 SMs (per cycle per SM, bench compare), beside the paper's, with the clock
    the paper printed or the one its figure implies, and the verdict with its reason."""
    rows = against[against.paper.notna() & (against.verdict != FOR_CONTEXT)].copy()
    timed = rows.metric == "throughput_tflops"
    rows["measured"] = rows.value.round(2)
    rows["at the paper's clock"] = np.where(timed, rows.comparable.round(1), np.nan)
    rows["ratio"] = rows.paper_ratio.round(3)
    rows["paper clock MHz"] = rows.paper_clock_mhz
    rows["implied MHz"] = rows.paper_implied_mhz.round(0)
    rows["inputs"] = rows.paper_inputs.fillna("")
    rows["table"] = rows.paper_table.str.split(" ").str[:2].str.join(" ")
    rows["emulated"] = np.where(rows.emulated, "emulated", "")
    return rows[["case_id", "metric", "inputs", "table", "measured", "at the paper's clock", "paper", "paper clock MHz",
                 "ratio", "implied MHz", "verdict", "note", "emulated"]].dropna(axis=1, how="all")


def energy_table(store: Store, run_id: int, against: pd.DataFrame) -> pd.DataFrame:
    """Power, TFLOPS per watt and energy per operation of every energy point of the run, by input
    distribution, beside the papers' power and efficiency figures for the same case and inputs."""
    frame = store.query(f"""SELECT case_id, launch, metric, value, unit FROM results WHERE run_id = {int(run_id)}
                            AND valid AND metric IN ('power_mean_w', 'energy_efficiency', 'energy_pj_per_op',
                            'throughput_tflops', 'sm_clock_mhz')""")
    energy = frame[frame.metric == "power_mean_w"][["case_id", "launch"]]
    if energy.empty:
        return pd.DataFrame()
    wide = frame.pivot_table(index=["case_id", "launch"], columns="metric", values="value", aggfunc="first")
    wide = energy.merge(wide.reset_index(), on=["case_id", "launch"])
    clocks = store.query(f"""SELECT case_id, launch, sm_clock_mhz FROM results WHERE run_id = {int(run_id)}
                             AND metric = 'power_mean_w'""")
    wide = wide.merge(clocks, on=["case_id", "launch"], how="left")
    wide["inputs"] = [json.loads(launch).get("inputs", "random") for launch in wide.launch]
    paper = against[against.verdict == FOR_CONTEXT]
    figures = {(r.case_id, r.metric, r.launch): r.paper for r in paper.itertuples()}
    wide["paper TFLOPS/W"] = [figures.get((c, "energy_efficiency", launch), np.nan)
                              for c, launch in zip(wide.case_id, wide.launch)]
    wide["paper W"] = [figures.get((c, "power_mean_w", launch), np.nan) for c, launch in zip(wide.case_id, wide.launch)]
    out = pd.DataFrame({"case_id": wide.case_id, "inputs": wide.inputs, "SM MHz": wide.sm_clock_mhz.round(0),
                        "TFLOPS": wide.get("throughput_tflops", np.nan).round(1),
                        "W": wide.power_mean_w.round(1), "TFLOPS/W": wide.energy_efficiency.round(3),
                        "pJ/op": wide.energy_pj_per_op.round(3), "paper TFLOPS/W": wide["paper TFLOPS/W"],
                        "paper W": wide["paper W"]})
    return out.sort_values(["case_id", "inputs"]).dropna(axis=1, how="all").reset_index(drop=True)


def rates_by_family(store: Store, gpu: str, include_flagged: bool = False) -> pd.DataFrame:
    """Per input type, dense and sparse apart, the best tensor work per cycle per SM of each family on this
    GPU, anywhere in the database (any run): how much of the tensor core each instruction family reaches."""
    flagged = "" if include_flagged else "AND NOT flagged"
    frame = store.query(f"""SELECT family, dtype_a, sparse, case_id, value, unit, emulated FROM results
                           WHERE gpu_name = '{gpu.replace("'", "''")}' AND metric = 'sm_throughput' AND valid {flagged}
                           AND value IS NOT NULL AND unit IN {TENSOR_UNITS}""")
    if frame.empty:
        return frame
    frame["sparse"] = frame["sparse"].fillna(False).astype(bool)
    keys = ["dtype_a", "sparse", "family"]
    best = frame.sort_values("value", ascending=False, kind="stable").groupby(keys, as_index=False).first()
    best["of the best family"] = (best.value / best.groupby(["dtype_a", "sparse"]).value.transform("max")).round(3)
    best["emulated"] = best.emulated.fillna(False).astype(bool)
    best["value"] = best.value.round(1)
    return best.rename(columns={"value": "best per SM per cycle"})[
        ["dtype_a", "sparse", "family", "best per SM per cycle", "unit", "of the best family", "emulated", "case_id"]]


SPREAD_LIMIT = 0.01  # repeated cycle measurements that spread more than this are listed


def spread_section(store: Store, run_id: int) -> list:
    """The cycle measurements of the run (metrics counted by clock64) whose samples spread by more than
    SPREAD_LIMIT (interquartile range over the median): where a number is less settled than the rest."""
    from harness import metrics

    cycle_metrics = ", ".join(f"'{name}'" for name in metrics.names("cycles"))
    rows = store.query(f"""SELECT case_id, metric, launch, value, spread, n_samples FROM results
                          WHERE run_id = {int(run_id)} AND valid AND metric IN ({cycle_metrics})
                          AND spread > {SPREAD_LIMIT} ORDER BY spread DESC""")
    total = store.query(f"""SELECT COUNT(*) AS n FROM results WHERE run_id = {int(run_id)} AND valid
                           AND metric IN ({cycle_metrics}) AND spread IS NOT NULL""").n[0]
    text = [f"{len(rows)} of {int(total)} cycle measurements (clock64, independent of the clock) spread by more "
            f"than {SPREAD_LIMIT:.0%} (interquartile range over the median of their samples)"
            + (": the rows below, widest first. Their medians are what the tables use." if len(rows) else ".")]
    return [("Repeatability: cycle measurements that spread more than 1 %", text,
             rows.assign(spread=rows.spread.round(4), value=rows.value.round(3)) if len(rows) else None)]


def fleet_section(store: Store, facts: dict) -> list:
    """Where the database holds this GPU's model at least MIN_SIBLINGS + 1 times: which of those GPUs
    stand apart from their siblings (harness/analysis/fleet.py)."""
    from harness.analysis import fleet

    model = facts.get("gpu") or ""
    try:
        rows, outliers = fleet.table(store, model=model)  # the rows of this model's GPUs: all it shows
    except Exception:  # no valid measurement anywhere: nothing to say
        return []
    mine = rows[rows.gpu.str.startswith(model + " ")]
    gpus = mine.gpu.nunique()
    if gpus < fleet.MIN_SIBLINGS + 1:
        return []
    apart = outliers[outliers.gpu.str.startswith(model + " ")]
    text = [f"{gpus} GPUs of this model ({model}) in the database, each with its newest measurement of every "
            "case; a GPU stands apart where it differs from the median of the others by more than their noise "
            "(cycle metrics as they are, time-based ones per cycle, a library call's per second as it measures no "
            "clock of its own, the SM clock on its own; `bench fleet`). "
            + ("None does." if apart.empty else f"{len(apart)} do{'es' if len(apart) == 1 else ''}:")]
    return [("Fleet: this GPU's siblings", text, apart if len(apart) else None)]


def paper_section(against: pd.DataFrame) -> list:
    """The paper's figures beside ours (paper_table), where the run has any."""
    paper = paper_table(against)
    return [(f"Against the paper ({PAPER_GPU}, arXiv 2402.13499 and 2501.12084)", [], paper)] if len(paper) else []


def energy_section(store: Store, run_id: int, against: pd.DataFrame, facts: dict) -> list:
    """The run's energy points beside the papers' power and efficiency figures (energy_table), for context."""
    energy = energy_table(store, run_id, against)
    energy_text = [
        "Mean board power over about 2 s of back-to-back whole-GPU launches, from NVML's energy counter (it steps "
        "every 100 ms; the mean is taken between its first and last step in the window), and from it TFLOPS per "
        "watt and picojoules per operation (dense-equivalent). The input distribution changes the power, and "
        "through the power cap the clock: zeros draw far less than random data. The papers' figures (2402.13499 "
        f"Table XI, 2501.12084 Tables 12 and 13) are of an {PAPER_GPU} with a {PAPER_POWER_LIMIT_W} W "
        "limit; this GPU's limit is "
        f"{facts['power_limit_w']} W, so they are shown for context, not judged."]
    return [("Energy against the papers' tables", energy_text, energy)] if len(energy) else []


def rates_section(store: Store, facts: dict, include_flagged: bool, tensor_run: bool) -> list:
    """The best tensor work per cycle per SM of each family on this GPU (rates_by_family), for a tensor run."""
    rates = rates_by_family(store, facts["gpu"] or "", include_flagged) if tensor_run else pd.DataFrame()
    rates_text = ["The best work per cycle per SM of each instruction family for each input type, dense and sparse "
                  "apart (sparse counts the dense-equivalent work, as NVIDIA's datasheets do), over every run of "
                  "this GPU in the database. An emulated instruction's rate is what its replacement instructions "
                  "deliver, not a tensor-core rate."]
    return [("Tensor-core rates by family", rates_text, rates)] if len(rates) else []


def disagreements_section(against: pd.DataFrame) -> tuple:
    """The rows where the measurement and the paper or the model differ beyond the spread plus the tolerance."""
    disagree = against[(against.verdict == DISAGREES) | (against.model_verdict == DISAGREES)]
    disagree_table = disagree[["case_id", "metric", "value", "comparable", "paper", "paper_ratio", "model",
                               "model_ratio", "verdict", "model_verdict"]].round(3).dropna(axis=1, how="all")
    return ("Disagreements", ["Rows where the measurement and the paper or the datasheet model differ by more than "
                              f"the measurement's spread plus {DEFAULT_TOLERANCE * 100:g} %." if len(disagree)
                              else "None."],
            disagree_table if len(disagree) else None)
