"""The DSMEM hop, fitted to a run (`bench model --run`), with its residuals:

    DSMEM hop       latency = a + b log2(cluster) over rank 0's pointer chases in one run: the median over
                    placements of the chase to rank 1 in runs before 82, over placements and every
                    partner from run 82 (the launch's `partners`); runs are fitted one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.families.dsmem.cases import parse
from harness.stats import residual_frame


@dataclass(frozen=True)
class FitReport:
    gpu: str
    hop: tuple[float, float]  # a, b
    residual_rows: list[dict]

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "model": "DSMEM hop: a + b log2(cluster)",
                              "base_cycles": round(self.hop[0], 1), "b_cycles": round(self.hop[1], 1),
                              "points": len(self.residual_rows)}])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.residual_rows)


class DsmemModel:
    """Fitted only (no datasheet prior: the papers print no parameters of the SM-to-SM network)."""

    def prior(self, gpu: str):
        return None

    def predict(self, case, metric: str, params) -> float | None:
        return None

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> FitReport | None:
        cases = {c: parse(c) for c in frame.case_id.unique()}
        # .astype(bool): a mask mapped over no rows is of dtype object, which pandas takes as columns
        chains = frame[(frame.metric == "latency_cycles")
                       & frame.case_id.map(lambda c: cases[c].op == "dsmem" and not cases[c].spread).astype(bool)]
        if len(chains) < 3:
            return None
        x = np.log2(chains.case_id.map(lambda c: cases[c].cluster).to_numpy(dtype=float))
        b, a = np.polyfit(x, chains.value.to_numpy(dtype=float), 1)
        rows = [{"model": "DSMEM hop", "case_id": c, "launch": f"cluster={cases[c].cluster}", "measured": round(v, 1),
                 "fitted": round(a + b * xi, 1), "residual": round(v - a - b * xi, 1)}
                for c, v, xi in zip(chains.case_id, chains.value, x)]
        return FitReport(gpu, (float(a), float(b)), rows)
