"""The analytical model of ldmatrix/stmatrix, as the family's `model` (harness/families/base.py:
prior, predict, fit), for `bench model` and `bench compare`.

ldmatrix/stmatrix move 128 B per 8x8 matrix through the shared-memory banks, 32 banks of
4 B per cycle per SM (B_bank = 128, the CUDA C++ Programming Guide), so

    sm_throughput(warps) = min(B_bank, warps * r1)

with r1 a case's bytes per cycle from one warp (fitted per case: it is the instruction's own issue
rate, which no datasheet gives).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.families.base import FamilyModel, residual_frame

# Shared memory moves 32 banks x 4 B per cycle per SM (the CUDA C++ Programming Guide, "Shared
# Memory", compute capability 9.0: 32 banks of 32 bits, one access per bank per clock).
B_BANK = 128


@dataclass(frozen=True)
class LoaderFitReport:
    gpu: str
    b_bank: float
    one_warp: dict  # case id -> bytes per cycle from one warp
    rows: list

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "case_id": case_id, "B_bank": round(self.b_bank, 2),
                              "r1_bytes_per_cycle": round(r1, 3), "saturates_at_warps": round(self.b_bank / r1, 2)}
                             for case_id, r1 in sorted(self.one_warp.items())])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.rows)


class LoaderModel(FamilyModel):
    """ldmatrix/stmatrix: min(B_bank, warps x r1) bytes per cycle per SM (module docstring)."""

    def prior(self, gpu: str) -> float:
        return B_BANK  # every Hopper: 32 banks x 4 B

    def predict(self, case, metric: str, b_bank: float | None) -> float | None:
        """The saturated rate (the headline: the best of the warp sweep); a warp count needs the fit."""
        return b_bank if metric == "sm_throughput" and b_bank else None

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> LoaderFitReport | None:
        """r1 per case through the origin on its unsaturated points, B_bank the mean of the saturated ones,
        re-assigned until stable."""
        rows = frame[frame.metric == "sm_throughput"]
        if rows.empty:
            return None
        points = [(case_id, json.loads(launch).get("warps", 1), float(value))
                  for case_id, launch, value in zip(rows.case_id, rows.launch, rows.value)]
        b_bank = B_BANK
        one_warp = {c: v / w for c, w, v in points if w == 1}
        saturated = None
        for _ in range(20):
            now = [w * one_warp.get(c, np.inf) >= b_bank for c, w, _ in points]
            if now == saturated:
                break
            saturated = now
            for case_id in one_warp:
                mine = [(w, v) for (c, w, v), sat in zip(points, now) if c == case_id and not sat]
                if mine:
                    x, y = np.array(mine, dtype=float).T
                    one_warp[case_id] = float(x @ y / (x @ x))
            high = [v for (_, _, v), sat in zip(points, now) if sat]
            if high:
                b_bank = float(np.mean(high))
        fitted = [{"case_id": c, "metric": "sm_throughput", "warps": w, "measured": v,
                   "fitted": min(b_bank, w * one_warp[c])} for c, w, v in points if c in one_warp]
        return LoaderFitReport(gpu, b_bank, one_warp, fitted)

