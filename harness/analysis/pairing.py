"""Which measurement stands beside which published figure: the figures of the paper's GPU and of the run's own
(a row per figure of a case, metric, inputs, table and launch, with the clock the table printed), and the measured
row each is set against (the headline launch, the figure's own launch, or the same inputs as the paper's)."""

from __future__ import annotations

import functools
import json

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.analysis.run_rows import headline
from harness.db.store import Store
from harness.measure.measurement import launch_key
from harness.paper import DEFAULT_TOLERANCE, PAPER_GPU


CLOCK_FIGURE = "sm_clock_mhz"  # a reference "metric": the clock a table printed beside a throughput


OUR_INPUTS = {"zero": "zeros", "random": "uniform11"}  # the paper's inputs -> our distribution of its fill


def paper_figures(store: Store, gpus: tuple[str, ...] = (PAPER_GPU,)) -> pd.DataFrame:
    """Every figure of the paper's GPU and of the run's own (figure_gpus.reference_gpus), a row per distinct figure
    of a (case, metric, input condition, table, launch) (_distinct), with the clock the same table printed for the
    same case and inputs (2501.12084 Table 13, the seed chapter's spec box), if any."""
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
    refs = _distinct(refs, ["case_id", "metric", "condition", "source_table", "launch"]).drop(columns="source")
    return refs.rename(columns={"value": "paper", "unit": "paper_unit", "condition": "paper_inputs",
                                "source_table": "paper_table", "launch": "paper_launch"})


def _distinct(refs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """One row per figure: of the rows that share `keys` (a case, metric, inputs, table and launch), the first, and
    each later one whose value is apart from every row kept by more than the comparison's tolerance. A figure
    repeated (2501.12084's v1 and v2, a log's runs of one point) is one figure; two figures of one table for one case
    (Table 3's L2 latency printed as a range over the two L2 partitions, the worklog's steps 6b and 7 on the same
    tile, the chapter's 3.3 TB/s per SM beside the 128 B/cycle of the same line) are each compared."""
    kept = []
    for _, group in refs.groupby(keys, sort=False, dropna=False):
        values: list[float] = []
        for index, value in zip(group.index, group.value):
            if all(abs(value - v) > DEFAULT_TOLERANCE * max(abs(value), abs(v)) for v in values):
                values.append(value)
                kept.append(index)
    return refs.loc[sorted(kept)]


def _launch_matches(launch: str, wanted: str) -> bool:
    """Does a stored launch (JSON) hold every key and value of the figure's launch (JSON)?"""
    held = _parsed(launch)
    return all(held.get(key) == value for key, value in _parsed(wanted).items())


@functools.lru_cache(maxsize=4096)
def _parsed(launch: str) -> dict:
    """A launch key (JSON) as a dict, parsed once (a few hundred distinct keys are matched thousands of times);
    read only, never changed."""
    return json.loads(launch) if launch else {}


def _with_inputs(launch: str, inputs: str) -> str:
    """A launch key (JSON) with `inputs` added: the same point measured on another input distribution."""
    return launch_key({**(json.loads(launch) if launch else {}), "inputs": inputs})


def paper_rows(everything: pd.DataFrame, refs: pd.DataFrame) -> pd.DataFrame:
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
    # the rows of each (case, metric), in their order: looked up once, not by a scan of every row per figure
    positions = everything.groupby(["case_id", "metric"], sort=False).indices if len(everything) else {}
    for ref in refs.itertuples():
        if ref.paper_launch:
            rows = everything.iloc[positions.get((ref.case_id, ref.metric), [])]
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
