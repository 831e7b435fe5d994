"""The bank model as the banks family's `model` (harness/families/base.py: prior, predict, fit), for `bench
model` and `bench compare`.

A warp access takes W wavefronts (harness/smembanks.py `wavefronts`: per phase of 128 bytes, the most distinct
4-byte words one bank holds), and the banks serve B = 32 x 4 bytes a wavefront, one wavefront a cycle per SM
(the CUDA C++ Programming Guide, "Shared Memory": 32 banks, each 32 bits wide a clock). So with enough warps

    sm_throughput = work / W  x  B / 128        bytes moved per cycle per SM,

work being the bytes the instruction moves (32 lanes x their width; 128 B a matrix). The fit takes B from
a run: the median over its cases of the best rate x W / work x 128.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from harness.families.banks.cases import parse
from harness.families.base import FamilyModel, residual_frame
from harness.smembanks import WAVEFRONT_BYTES


def predicted(case, bytes_per_wavefront: float = WAVEFRONT_BYTES) -> float:
    work = case.lanes * case.access_bytes
    return work / case.wavefronts() * bytes_per_wavefront / WAVEFRONT_BYTES


@dataclass(frozen=True)
class BankFitReport:
    gpu: str
    bytes_per_wavefront: float
    rows: list

    @property
    def parameters(self) -> pd.DataFrame:
        return pd.DataFrame([{"gpu": self.gpu, "bytes_per_wavefront": round(self.bytes_per_wavefront, 2),
                              "datasheet": WAVEFRONT_BYTES, "cases": len(self.rows)}])

    @property
    def residuals(self) -> pd.DataFrame:
        return residual_frame(self.rows)


class BankModel(FamilyModel):
    """Bytes per cycle per SM = work / wavefronts x B / 128 (module docstring)."""

    def prior(self, gpu: str) -> float:
        return float(WAVEFRONT_BYTES)  # every Hopper: 32 banks x 4 B

    def predict(self, case, metric: str, bytes_per_wavefront: float | None) -> float | None:
        """The saturated rate (the headline: the best of the warp sweep)."""
        if metric != "sm_throughput" or not bytes_per_wavefront:
            return None
        return predicted(case, bytes_per_wavefront)

    def fit(self, frame: pd.DataFrame, gpu: str, source: str) -> BankFitReport | None:
        rows = frame[frame.metric == "sm_throughput"]
        if rows.empty:
            return None
        best = rows.groupby("case_id").value.max()
        cases = {case_id: parse(case_id) for case_id in best.index}
        scale = float(np.median([best[c] / predicted(cases[c]) for c in best.index])) * WAVEFRONT_BYTES
        fitted = [{"case_id": c, "metric": "sm_throughput", "wavefronts": cases[c].wavefronts(),
                   "measured": float(best[c]), "fitted": predicted(cases[c], scale)} for c in best.index]
        return BankFitReport(gpu, scale, fitted)
