"""Fit the model (harness/perfmodel.py) to a stored run: per GPU, per input/accumulator dtype."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from harness import perfmodel
from harness.errors import SpecError
from harness.spec import parse_case_id
from harness.store import Store


@dataclass(frozen=True)
class FitReport:
    run_id: int
    gpu: str
    fits: dict[str, perfmodel.Fit]  # by "dtype_a/dtype_acc"
    prior: perfmodel.Params

    @property
    def parameters(self) -> pd.DataFrame:
        rows = []
        for key, fit in self.fits.items():
            p = fit.params
            rows.append({"gpu": self.gpu, "types": key, "B_smem": round(p.b_smem, 3), "F_tc": round(p.f_tc, 2),
                         "L_min": round(p.l_min, 3), "points": len(fit.residuals), "rms_cycles": fit.rms,
                         "crossover_N_SS": perfmodel.crossover_n(key.split("/")[0], "SS", p),
                         "crossover_N_RS": perfmodel.crossover_n(key.split("/")[0], "RS", p)})
        return pd.DataFrame(rows)

    @property
    def residuals(self) -> pd.DataFrame:
        rows = [{"case_id": c.case_id, "types": key, "n": c.n, "operands": c.operands, "measured": measured,
                 "fitted": fitted, "residual": measured - fitted, "bound": bound}
                for key, fit in self.fits.items() for c, measured, fitted, bound in fit.residuals]
        return pd.DataFrame(rows)

    def params_for(self, dtype_a: str) -> perfmodel.Params:
        for key, fit in self.fits.items():
            if key.startswith(dtype_a + "/"):
                return fit.params
        raise SpecError(f"run {self.run_id} has no {dtype_a} issue intervals to fit")


def fit_run(store: Store, run_id: int, include_flagged: bool = False) -> FitReport:
    info = store.run_info(run_id)
    flagged = "" if include_flagged else "AND NOT flagged"
    frame = store.query(f"""SELECT case_id, dtype_a, dtype_acc, value FROM results WHERE run_id = {int(run_id)}
                           AND metric = 'issue_interval_cycles' AND valid {flagged} AND value IS NOT NULL""")
    if frame.empty:
        raise SpecError(f"run {run_id} has no valid issue intervals to fit the model to")
    prior = replace(perfmodel.datasheet(info.gpu_name), gpu=info.gpu_name)
    fits = {}
    for (a, acc), group in frame.groupby(["dtype_a", "dtype_acc"]):
        points = [(parse_case_id(c), float(v)) for c, v in zip(group.case_id, group.value)]
        fits[f"{a}/{acc}"] = perfmodel.fit(points, prior, f"fitted to run {run_id}")
    return FitReport(run_id, info.gpu_name, fits, prior)
