"""A run's measurements as a comparison reads them: the run to compare by default, its valid rows, the headline
launch of each case and metric, and what is derived from them (a bandwidth's fraction of the read roofline)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from harness import metrics as registry
from harness.datasheets import pin_rate_gbps
from harness.db.store import Store
from harness.errors import SpecError
from harness.measure.measurement import launch_key
from harness.registry import FAMILIES


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
    (roofline_fraction; read_roofline: the roofline and the datasheet's pin rate ride along), and each family's
    figures across its cases (Family.derived: the memory family's L2 capacity from its footprint sweep)."""
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
    for name, family in FAMILIES.items():  # figures across a family's cases (Family.derived: a sweep's knee)
        rows = frame[frame.family == name]
        if len(rows):
            parts += [part for part in family.derived(rows) if len(part)]
    return pd.concat(parts, ignore_index=True)
